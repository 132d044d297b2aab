"""What the cost meter tells a student from its measurements (autograder/grader/cost.py), without a notebook
process: each budget's verdict at its edge, the student's own prediction read from what the hidden test handed in,
the bars and lines shown, a cell's parts merged, and the flags for a person. The measuring itself, on real
notebooks: tests/test_cost.py."""
from __future__ import annotations

import pytest

from autograder.grader.cost import Measured, apply_budgets, bar, describe, flags, merge, prediction, verdict
from autograder.grader.plan import CellRun, Part
from autograder.outcome import Failure
from autograder.protocol import CostBudget

MIB = 2**20
MEMORY = CostBudget("m.test_view", "your view", "make a view, not a copy.", peak_bytes=8 * MIB)
READS = CostBudget("m.test_batch", "get_batch", "read only the windows.", file="tokens.bin", file_tokens=1000,
                   file_bytes=MIB)
CPU = CostBudget("m.test_fast", "fast", "no loops.", cpu_seconds=2.0)
GUESS = CostBudget("m.test_guess", "your prediction", "count the bytes.", predicted_case=1, tolerance=0.1)


def measured(peak=0, file=0, cpu=0.0, elsewhere=(), predicted=None) -> Measured:
    return Measured(peak, peak, 0, file, 0, cpu, elsewhere, predicted)


@pytest.mark.parametrize("budget, within, over, said", [
    (MEMORY, measured(peak=8 * MIB), measured(peak=8 * MIB + 1),
     "your view: they took 8.0 MiB of new memory, over the budget of 8.0 MiB.\nHint: make a view, not a copy."),
    (READS, measured(file=MIB), measured(file=3 * MIB),
     "get_batch: they read 3.0 MiB of tokens.bin, over the budget of 1.0 MiB.\nHint: read only the windows."),
    (CPU, measured(cpu=2.0), measured(cpu=2.5),
     "fast: they used 2.50 s of CPU, over the budget of 2 s.\nHint: no loops."),
])
def test_a_budget_is_met_up_to_its_limit_and_failed_past_it_with_its_hint(budget, within, over, said):
    assert verdict(budget, within) == ""
    assert verdict(budget, over) == said


def test_a_prediction_must_match_within_its_tolerance():
    assert verdict(GUESS, measured(peak=110, predicted=100)) == ""
    assert verdict(GUESS, measured(peak=90, predicted=100)) == ""
    assert verdict(GUESS, measured(peak=120 * MIB, predicted=100 * MIB)) == (
        "your prediction: they took 120.0 MiB of new memory, +20% from your prediction of 100.0 MiB (within 10% was "
        "asked).\nHint: count the bytes.")
    assert "could not be read (it is no int)" in verdict(GUESS, measured(peak=100, predicted=None))


def test_work_the_meter_cannot_see_fails_every_budget_and_says_a_person_will_look():
    said = verdict(MEMORY, measured(elsewhere=("a child process ran",)))
    assert said.startswith("your view: the cost of its calls cannot be measured (a child process ran)")
    assert "your instructor will look" in said


@pytest.mark.parametrize("handed, case, read", [("[3, 41, 5]", 1, 41), ("[3, 41, 5]", 3, None), ("[3, 41]", -1, None),
                                                ("[3, 41.0]", 1, None), ("[3, true]", 1, None), ("{}", 0, None),
                                                ("not json", 0, None), (None, 0, None)])
def test_the_prediction_is_the_plain_int_the_student_returned_for_its_case(handed, case, read):
    assert prediction(handed, case) == read


def test_a_bar_marks_the_value_and_its_limits():
    assert bar(5, 10, width=10) == "    [#####....|]"
    assert bar(20, 10, width=10) == "    [#####|####]"          # the scale is the value: the budget halfway
    assert bar(5, 6, 4, width=10) == "    [######|#.|]"          # the low limit too


def test_describe_shows_each_budgeted_quantity_beside_its_budget():
    lines = describe(MEMORY, measured(peak=4 * MIB)).splitlines()
    assert lines[1] == "  new memory: 4.0 MiB (budget 8.0 MiB)" and lines[2].count("|") == 1 and len(lines) == 3
    lines = describe(READS, measured(file=MIB // 2)).splitlines()
    assert lines[1] == "  bytes read from storage (the file tokens.bin): 0.5 MiB (budget 1.0 MiB)"
    assert describe(CPU, measured(cpu=1.5)).splitlines()[1:] == ["  CPU time: 1.50 s (budget 2 s)"]
    lines = describe(GUESS, measured(peak=MIB, predicted=MIB)).splitlines()
    assert lines[1] == "  new memory: 1.0 MiB (your prediction 1.0 MiB, which it must match within 10%)"


def test_a_cell_over_its_budget_fails_with_the_verdict_and_shows_what_was_measured():
    ok = CellRun(ok=True, output="passed\n")
    within = apply_budgets(ok, [MEMORY], measured(peak=MIB), "")
    assert within.ok and within.output.startswith("passed\nMeasured by the grader") and len(within.costs) == 1
    over = apply_budgets(ok, [MEMORY, CPU], measured(peak=9 * MIB, cpu=3.0), "")
    assert not over.ok and over.failure is Failure.ERROR
    assert over.error.startswith("AssertionError: your view: they took 9.0 MiB")   # the first budget's verdict
    assert [cost.ok for cost in over.costs] == [False, False]
    failed = CellRun(ok=False, error="AssertionError: wrong", failure=Failure.ERROR)
    kept = apply_budgets(failed, [MEMORY], measured(peak=9 * MIB), "")
    assert kept.error == "AssertionError: wrong" and kept.output == ""            # a wrong answer is told only that
    handed = CellRun(ok=True, handed={GUESS.key: "[1, 100]"})
    assert apply_budgets(handed, [GUESS], measured(peak=100), "").ok
    assert not apply_budgets(handed, [GUESS], measured(peak=200), "").ok


def test_what_could_not_be_measured_is_flagged_for_a_person():
    ok = CellRun(ok=True)
    unmeasured = apply_budgets(ok, [READS, MEMORY], measured(peak=MIB), "the disk could not be lent")
    assert unmeasured.ok and "(the grader could not measure get_batch here)" in unmeasured.output
    elsewhere = apply_budgets(ok, [MEMORY], measured(elsewhere=("a child process ran",)), "")
    assert not elsewhere.ok
    not_run = apply_budgets(ok, [CPU], None, "")
    assert not_run.ok
    assert flags([unmeasured, elsewhere, not_run, CellRun(ok=True)]) == [
        "cost: your view could not be measured (a child process ran)",
        "cost: the grader could not measure get_batch (the disk could not be lent): a person checks its budget",
        "cost: the grader could not measure fast (the measured part did not run): a person checks its budget"]


def test_a_cells_parts_merge_into_the_cell_with_the_failure_at_its_own_line():
    parts = [(CellRun(ok=True, output="a\n", handed={"k1": "1"}, restored=("torch.allclose",)), Part("x", 1)),
             (CellRun(ok=False, output="b\n", error="AssertionError", line=2, failure=Failure.ERROR,
                      handed={"k2": "2"}, restored=("torch.allclose",)), Part("y", 5)),
             (CellRun(ok=False, output="c\n", error="later", line=1, failure=Failure.CRASH), Part("z", 9))]
    merged = merge(parts)
    assert (merged.ok, merged.output, merged.error, merged.line, merged.failure) == \
        (False, "a\nb\nc\n", "AssertionError", 6, Failure.ERROR)
    assert merged.handed == {"k1": "1", "k2": "2"} and merged.restored == ("torch.allclose",)
    assert merge(parts[:1]).ok and merge(parts[:1]).line is None


# ---- the kernel's counters, read from /proc as the meter reads them (this process and small children) -------------

def test_the_counters_agree_with_the_kernels_other_accounts():
    """read_counters against os.times and getrusage (independent interfaces to the same kernel accounts): own CPU
    ticks and memory, and what a child that burns 0.4 s of CPU adds to its children's faults and
    ticks once waited for."""
    import os
    import resource
    import subprocess
    import sys

    from autograder.grader.cost import TICKS, read_counters

    def children() -> float:   # children's faults and clock ticks, from the other interfaces
        usage, times = resource.getrusage(resource.RUSAGE_CHILDREN), os.times()
        return usage.ru_minflt + usage.ru_majflt + (times.children_user + times.children_system) * TICKS

    first, expected_first = read_counters(os.getpid()), children()
    subprocess.run([sys.executable, "-c", "x = b'1' * 50_000_000\nimport time\nt = time.process_time()\n"
                                          "while time.process_time() - t < 0.4: pass"], check=True)
    before, counters, after = os.times(), read_counters(os.getpid()), os.times()
    added = counters.child_faults_and_ticks - first.child_faults_and_ticks
    assert added == pytest.approx(children() - expected_first, abs=3) and added > 0.35 * TICKS   # its ticks alone
    assert (before.user + before.system) * TICKS - 2 <= counters.ticks <= (after.user + after.system) * TICKS + 2
    usage = resource.getrusage(resource.RUSAGE_SELF)
    assert counters.hwm_bytes == pytest.approx(usage.ru_maxrss * 1024, rel=0.05) and counters.rss_bytes <= counters.hwm_bytes
    assert counters.faults <= usage.ru_minflt + usage.ru_majflt


def test_a_process_that_ignores_sigchld_is_seen_to():
    import signal
    import subprocess
    import sys

    from autograder.grader.cost import read_counters
    for code, ignored in (("", False), ("import signal; signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n", True)):
        child = subprocess.Popen([sys.executable, "-c", code + "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
        try:
            import time
            deadline = time.monotonic() + 10
            while read_counters(child.pid).sigchld_ignored != ignored and time.monotonic() < deadline:
                time.sleep(0.02)
            assert read_counters(child.pid).sigchld_ignored is ignored
        finally:
            child.communicate(b"")
    assert signal.getsignal(signal.SIGCHLD) is not signal.SIG_IGN


def test_a_mapping_of_the_lent_file_is_found_by_its_path_or_its_identity(tmp_path):
    import mmap
    import os

    from autograder.grader.budget_files import Lent
    from autograder.grader.cost import maps_file
    path = tmp_path / "tokens.bin"
    path.write_bytes(b"\0" * 8192)
    info = os.stat(path)
    lent, elsewhere = Lent(path, info.st_dev, info.st_ino), Lent(tmp_path / "other.bin", info.st_dev, info.st_ino + 1)
    assert not maps_file(os.getpid(), lent)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert mapped[0] == 0 and maps_file(os.getpid(), lent) and not maps_file(os.getpid(), elsewhere)
        renamed = Lent(tmp_path / "link-to-it", info.st_dev, info.st_ino)   # another name, the same file
        assert maps_file(os.getpid(), renamed)
    assert not maps_file(os.getpid(), lent)


def test_a_notebook_waiting_for_its_next_request_is_told_from_a_busy_one():
    """waiting_for_request: True for a process blocked reading the request pipe, False for one still computing."""
    import os
    import subprocess
    import sys

    from autograder.grader.cost import READ_SYSCALL, waiting_for_request
    if READ_SYSCALL is None:
        pytest.skip("read(2)'s number is not known on this machine")

    class Process:   # what waiting_for_request reads of a NotebookProcess: the grader's end of the request pipe
        request_w = 0

    for code, waiting in (("import sys; sys.stdin.buffer.read(1)", True),
                          ("import time\nt = time.time()\nwhile time.time() - t < 5: pass", False)):
        read_end, Process.request_w = os.pipe()
        child = subprocess.Popen([sys.executable, "-c", code], stdin=read_end)
        os.close(read_end)
        try:
            assert waiting_for_request(Process(), child.pid, seconds=1.0 if waiting else 0.3) is waiting
        finally:
            os.write(Process.request_w, b"x")
            os.close(Process.request_w)
            child.kill()
            child.wait()


# ---- a budgeted cell run as its three parts, with a stand-in for the notebook process -------------------------------

CELL = ("check(f(1))\n### BEGIN HIDDEN TESTS\nprepare()\n### BEGIN MEASURED\nr = [f(c) for c in cases]\n"
        "### END MEASURED\nhand_in('m.test_view', r)\n### END HIDDEN TESTS\nprint('done')")


class Notebook:
    """What run_measured asks of a NotebookProcess: run a part (here: answered from `answers`, in order), its pidfd
    (a child blocked reading the request pipe, as a notebook is between requests) and the pipe's grader end."""

    def __init__(self, answers, busy_after_measured=False):
        import os
        import subprocess
        import sys
        self.answers, self.ran, self.given_back, self.busy = list(answers), [], 0.0, busy_after_measured
        read_end, self.request_w = os.pipe()
        self.child = subprocess.Popen([sys.executable, "-c", "import ctypes, sys, time\n"
                                       "ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)\n"
                                       "x = b'1' * 100_000_000\ndel x\n"   # an earlier cell's peak: not this part's
                                       "sys.stdin.buffer.read(1)\n"
                                       "t = time.time()\nwhile time.time() - t < 30: pass"],
                                      stdin=read_end)                                # 41: PR_SET_THP_DISABLE, as the
        os.close(read_end)                                                           # grader's notebooks set it
        self.pidfd = os.pidfd_open(self.child.pid)
        from autograder.grader.cost import waiting_for_request
        assert waiting_for_request(self, self.child.pid)   # started and idle, as a notebook between requests

    def run(self, kind, code, seconds, cases, watch=None):
        import os
        self.ran.append(code)
        if self.busy and code.startswith("### BEGIN MEASURED"):   # answers, then keeps computing: a forged reply
            os.write(self.request_w, b"x")
        return self.answers.pop(0)

    def close(self):
        import os
        self.child.kill()
        self.child.wait()
        os.close(self.request_w)
        os.close(self.pidfd)


@pytest.mark.parametrize("answers, ok, parts_run", [
    ([CellRun(ok=True, output="1\n"), CellRun(ok=True, handed={"m.test_view": "[1]"}), CellRun(ok=True, output="done\n")],
     True, 3),
    ([CellRun(ok=False, error="AssertionError: f(1)", line=1, failure=Failure.ERROR)], False, 1),   # visible part fails
    ([CellRun(ok=True), CellRun(ok=False, error="ValueError", line=1, failure=Failure.ERROR)], False, 2),
])
def test_a_budgeted_cell_runs_as_three_parts_measured_in_the_middle(answers, ok, parts_run):
    from autograder.grader.cost import run_measured
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    notebook = Notebook(answers)
    try:
        result = run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [MEMORY], 30.0, {})
    finally:
        notebook.close()
    assert result.ok is ok and len(notebook.ran) == parts_run
    assert notebook.ran[0].endswith("prepare()\n") and (parts_run < 2 or notebook.ran[1].startswith("### BEGIN MEASURED"))
    if ok:   # measured on the idle child: no new memory, the bar shown after what the cell printed
        assert result.output.startswith("1\ndone\nMeasured by the grader") and result.costs[0].ok
        assert result.costs[0].measured.peak_bytes < MIB and not result.costs[0].measured.elsewhere
    elif parts_run == 2:   # the measured part's own failure, at its line in the whole cell
        assert (result.error, result.line) == ("ValueError", 4)
    else:
        assert result.error == "AssertionError: f(1)" and not result.costs


def test_a_budgeted_cell_without_a_measured_part_is_run_whole_and_left_to_a_person():
    from autograder.grader.cost import run_measured
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    notebook = Notebook([CellRun(ok=True, output="done\n")])
    try:
        result = run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL.replace("MEASURED", "MEASURE"), 2.0),
                              [MEMORY], 30.0, {})
    finally:
        notebook.close()
    assert notebook.ran == [CELL.replace("MEASURED", "MEASURE")] and result.ok
    assert flags([result]) == ["cost: the grader could not measure your view (its test cell has no measured part): a "
                               "person checks its budget"]


def test_a_reply_written_while_the_notebook_still_computes_is_not_measured(monkeypatch):
    """A notebook that answers the measured part and computes on (a reply forged from another thread): its cost cannot
    be measured, and the budget fails for a person to look (waiting 3 s here instead of the grader's 10 s: 0.5 s was
    too short for a loaded machine to see the idle parts idle, a fresh clone's one failure)."""
    from autograder.grader import cost
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    waiting = cost.waiting_for_request
    monkeypatch.setattr(cost, "waiting_for_request", lambda process, pid: waiting(process, pid, seconds=3))
    notebook = Notebook([CellRun(ok=True), CellRun(ok=True), CellRun(ok=True)], busy_after_measured=True)
    try:
        result = cost.run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [MEMORY], 30.0, {})
    finally:
        notebook.close()
    assert not result.ok and "the notebook answered before the measured calls had ended" in result.error
    assert flags([result]) == ["cost: your view could not be measured (the notebook answered before the measured "
                               "calls had ended (its main thread was still busy))"]
