"""What the cost meter tells a student from its measurements (autograder/grader/cost.py), without a notebook
process: each budget's verdict at its edge, the student's own prediction read from what the hidden test handed in,
the bars and lines shown, a cell's parts merged, and the flags for a person. The measuring itself, on real
notebooks: tests/test_cost.py."""
from __future__ import annotations

import dataclasses

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
    assert verdict(GUESS, measured(peak=1100, predicted=1000)) == ""        # exactly 10% off: within
    assert verdict(GUESS, measured(peak=1101, predicted=1000)) != ""
    assert verdict(GUESS, measured(peak=120 * MIB, predicted=100 * MIB)) == (
        "your prediction: they took 120.0 MiB of new memory, +20% from your prediction of 100.0 MiB (within 10% was "
        "asked).\nHint: count the bytes.")
    assert "could not be read (it is no int)" in verdict(GUESS, measured(peak=100, predicted=None))


def test_work_the_meter_cannot_see_fails_every_budget_and_says_a_person_will_look():
    said = verdict(MEMORY, measured(elsewhere=("a child process ran",)))
    assert said.startswith("your view: the cost of its calls cannot be measured (a child process ran)")
    assert "your instructor will look" in said


@pytest.mark.parametrize("handed, case, read", [("[3, 41, 5]", 1, 41), ("[7, 41]", 0, 7), ("[3, 41, 5]", 3, None), ("[3, 41]", -1, None),
                                                ("[3, 41.0]", 1, None), ("[3, true]", 1, None), ("{}", 0, None),
                                                ("not json", 0, None), (None, 0, None)])
def test_the_prediction_is_the_plain_int_the_student_returned_for_its_case(handed, case, read):
    assert prediction(handed, case) == read


def test_a_bar_marks_the_value_and_its_limits():
    assert bar(5, 10, width=10) == "    [#####....|]"
    assert bar(20, 10, width=10) == "    [#####|####]"          # the scale is the value: the budget halfway
    assert bar(5, 6, 4, width=10) == "    [######|#.|]"          # the low limit too
    assert bar(1.5, 4, width=4) == "    [##.|]"                     # a cell is '#' when the value reaches its middle


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
    for _ in range(10):   # the resident size in pages (statm), the same count as VmRSS's KiB, when nothing moved
        pages = int(open("/proc/self/statm").read().split()[1])
        resident = read_counters(os.getpid()).rss_bytes
        if pages == int(open("/proc/self/statm").read().split()[1]):
            break
    assert resident == pages * os.sysconf("SC_PAGE_SIZE")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    assert counters.hwm_bytes == pytest.approx(usage.ru_maxrss * 1024, rel=0.05) and counters.rss_bytes <= counters.hwm_bytes
    assert counters.faults <= usage.ru_minflt + usage.ru_majflt


TOUCH = """
import mmap, os, sys
def touch(path, pages):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)   # its pages out of the page cache, as budget_files.py lends it
    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
        m.madvise(mmap.MADV_RANDOM)                      # no read-ahead: a major fault per page
        assert sum(m[i * mmap.PAGESIZE] for i in range(pages)) == pages
    os.close(fd)
"""


def test_major_faults_are_the_process_s_own_and_a_waited_for_child_s_apart(tmp_path):
    """Pages read from storage through a mapping (major faults) count among a process's faults, and once a child that
    made them is waited for, among its children's: read_counters agrees with getrusage and os.times exactly for the
    children, and within the faults of its own reading for the process (a child touching 96 pages, this process 24)."""
    import mmap
    import os
    import resource
    import subprocess
    import sys

    from autograder.grader.cost import TICKS, read_counters
    path = tmp_path / "pages.bin"
    with open(path, "wb") as f:
        f.write(b"\1" * (128 * mmap.PAGESIZE))
        f.flush()
        os.fsync(f.fileno())                              # clean pages, which POSIX_FADV_DONTNEED drops
    subprocess.run([sys.executable, "-c", TOUCH + "touch(sys.argv[1], 96)", str(path)], check=True)
    children, times = resource.getrusage(resource.RUSAGE_CHILDREN), os.times()
    counters = read_counters(os.getpid())
    assert children.ru_majflt >= 96
    assert counters.child_faults_and_ticks == children.ru_minflt + children.ru_majflt + \
        round((times.children_user + times.children_system) * TICKS)
    namespace: dict = {}
    exec(TOUCH, namespace)
    before = resource.getrusage(resource.RUSAGE_SELF)
    namespace["touch"](str(path), 24)
    first = resource.getrusage(resource.RUSAGE_SELF)
    counters = read_counters(os.getpid())
    last = resource.getrusage(resource.RUSAGE_SELF)
    assert first.ru_majflt - before.ru_majflt >= 24
    assert first.ru_minflt + first.ru_majflt <= counters.faults <= last.ru_minflt + last.ru_majflt


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
    spaced = tmp_path / "a file with spaces.bin"                            # found by its path alone, spaces and all
    spaced.write_bytes(b"\0" * 8192)
    with open(spaced, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert mapped[0] == 0 and maps_file(os.getpid(), Lent(spaced, info.st_dev, 0))


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

    def __init__(self, answers, busy_after_measured=False, lent=None):
        import os
        import subprocess
        import sys
        self.answers, self.ran, self.given_back, self.busy = list(answers), [], 0.0, busy_after_measured
        self.lent, self.seconds, self.gives_back = lent, [], 0.0
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

    def lend(self, name, tokens):   # the file lent for the measured part, or why none could be (self.lent: a reason)
        self.ran.append(f"lend {name}")
        return (None, self.lent) if isinstance(self.lent, str) else (self.lent, "")

    def take_back(self, lent):
        self.ran.append(f"take back {lent.link.name}")

    def run(self, kind, code, seconds, cases, watch=None):
        import os
        self.ran.append(code)
        self.seconds.append(seconds)
        self.given_back += self.gives_back
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


def test_a_prediction_of_nothing_is_told_its_miss_and_the_bars_mark_the_tolerance():
    """A student who predicts 0 bytes is told the miss (no division by zero in the grader); the prediction's bar marks
    both ends of the tolerance: 100 bytes measured against a prediction of 100, within 10%, on a scale of 110."""
    said = verdict(GUESS, measured(peak=MIB, predicted=0))
    assert said.startswith("your prediction: they took 1.0 MiB of new memory, +") and "prediction of 0.0 MiB" in said
    assert verdict(GUESS, measured(peak=0, predicted=0)) == ""
    assert len(describe(GUESS, measured(peak=MIB, predicted=None)).splitlines()) == 1   # nothing to draw it against
    lines = describe(GUESS, measured(peak=100, predicted=100)).splitlines()
    assert lines[2] == "    [" + "#" * 32 + "|" + "#" * 3 + "." * 3 + "|]", lines


def test_the_budgets_of_a_cell_are_those_of_the_hidden_tests_it_hands_in_for():
    from autograder.grader.cost import budgets_of
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    budgets = {MEMORY.key: [MEMORY], CPU.key: [CPU]}
    assert budgets_of(Cell(CellKind.TEST, "test_view", CELL, 2.0), budgets) == [MEMORY]
    assert budgets_of(Cell(CellKind.TEST, "test_other", "check(f(1))", 2.0), budgets) == []
    assert budgets_of(Cell(CellKind.ANSWER, "f", CELL, 0.0), budgets) == []


# ---- the meter on a process that does each thing it must see, one part at a time ------------------------------------

STAND_IN = """
import ctypes, mmap, os, signal, subprocess, sys
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)          # PR_SET_THP_DISABLE, as the grader's notebooks set it
x = b"1" * 100_000_000
del x                                            # an earlier cell's peak: not a part's
kept = []
while True:
    op = os.read(0, 1)
    if op == b"m":                               # 32 MiB written and freed
        x = b"1" * (32 << 20)
        del x
    elif op == b"w":                             # a child run and waited for
        subprocess.run(["true"])
    elif op == b"i":
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    elif op == b"h":                             # transparent huge pages back on
        ctypes.CDLL(None).prctl(41, 0, 0, 0, 0)
    elif op == b"c":                             # a child left running, and its own child
        kept.append(subprocess.Popen(["sh", "-c", "sleep 30 & echo; wait"], stdout=subprocess.PIPE,
                                     start_new_session=True))
        kept[-1].stdout.readline()
    elif op == b"f":
        kept.append(mmap.mmap(os.open(sys.argv[1], os.O_RDONLY), 0, access=mmap.ACCESS_READ))
    else:
        break
    os.write(1, b"k")
for k in kept:
    if isinstance(k, subprocess.Popen):
        os.killpg(k.pid, signal.SIGKILL)
"""


def test_the_meter_measures_a_parts_new_memory_and_sees_what_it_cannot_measure(tmp_path):
    """Meter on a stand-in notebook process (an idle loop that does one thing per request): a part that writes 32 MiB
    is measured at 32 MiB by both figures (not the 100 MB peak of before the part), reads nothing from storage; a
    child waited for, SIGCHLD ignored, huge pages turned on, a child left running, the lent file not mapped: each is
    said, in the order the meter looks."""
    import os
    import subprocess
    import sys

    from autograder.grader.budget_files import Lent
    from autograder.grader.cost import Meter, waiting_for_request
    data = tmp_path / "tokens.bin"
    data.write_bytes(b"\0" * 8192)
    lent = Lent(data, os.stat(data).st_dev, os.stat(data).st_ino)

    class Process:   # what waiting_for_request reads of a NotebookProcess: the grader's end of the request pipe
        request_w = 0

    read_end, Process.request_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", STAND_IN, str(data)], stdin=read_end, stdout=subprocess.PIPE)
    os.close(read_end)
    assert child.stdout is not None

    def part(op: bytes, lent: Lent | None = None):
        assert waiting_for_request(Process(), child.pid)
        meter = Meter(child.pid)
        meter.start()
        os.write(Process.request_w, op)
        assert child.stdout.read(1) == b"k"
        assert waiting_for_request(Process(), child.pid)
        return meter.stop(lent)
    try:
        written = part(b"m")
        assert 32 * MIB <= written.new_page_bytes <= 40 * MIB and written.faults > 0
        assert 31 * MIB <= written.high_water_bytes <= 40 * MIB, written     # less what the part itself freed
        assert written.peak_bytes == max(written.high_water_bytes, written.new_page_bytes)
        assert written.file_bytes == 0 and 0 <= written.cpu_seconds < 2 and written.elsewhere == ()
        assert part(b"w").elsewhere == ("a child process ran and was waited for during the calls",)
        assert part(b"i").elsewhere == ("SIGCHLD is ignored (children would vanish unaccounted)",)
        assert part(b"h").elsewhere[1:] == (
            "transparent huge pages were turned back on (a page fault is no longer one 4 KiB page)",)
        unmapped = part(b"c", lent).elsewhere
        assert unmapped[0] == "2 child process(es) still there after the calls", unmapped
        assert unmapped[-1] == "the hidden test's data was not the file the grader lent it (its path was changed)"
        assert "the hidden test's data" not in " ".join(part(b"f", lent).elsewhere)
    finally:
        os.write(Process.request_w, b"q")
        os.close(Process.request_w)
        child.wait(timeout=30)


def _three_parts_ok():
    return [CellRun(ok=True), CellRun(ok=True, handed={"m.test_view": "[1]"}), CellRun(ok=True)]


@pytest.mark.parametrize("broken, why", [
    ("pid_of", "the notebook process's id is unknown"),
    ("reset_peak", "[Errno 13] Permission denied: '/proc/1/clear_refs'"),
    ("waiting_for_request", "[Errno 2] No such file or directory: '/proc/1/syscall'"),
])
def test_a_meter_the_grader_cannot_use_leaves_the_budget_to_a_person(monkeypatch, broken, why):
    """The notebook's process id unknown, or its /proc closed to the grader (an OSError at the start): the cell runs
    its three parts and passes, and the budget is flagged for a person with why, never failed or crashed."""
    from autograder.grader import cost
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind

    def refuse(*args):
        raise PermissionError(13, "Permission denied", "/proc/1/clear_refs")

    def gone(*args):
        raise FileNotFoundError(2, "No such file or directory", "/proc/1/syscall")
    notebook = Notebook(_three_parts_ok())
    if broken == "pid_of":
        monkeypatch.setattr(cost.cgroups, "pid_of", lambda pidfd: None)
    else:
        monkeypatch.setattr(cost, broken, refuse if broken == "reset_peak" else gone)
    try:
        result = cost.run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [MEMORY], 30.0, {})
    finally:
        notebook.close()
    assert result.ok and len(notebook.ran) == 3 and "(the grader could not measure your view here)" in result.output
    assert flags([result]) == [f"cost: the grader could not measure your view ({why}): a person checks its budget"]


def test_the_lent_file_is_taken_back_and_a_part_that_did_not_map_it_fails_its_budget(tmp_path):
    """A budget with a file: the grader lends it for the measured part only and takes it back; the stand-in never
    maps it (its hidden test read another file), so the part's reads cannot be counted: the budget fails, flagged. A
    file that could not be lent leaves the budget to a person, the cell passing."""
    import os

    from autograder.grader.budget_files import Lent
    from autograder.grader.cost import run_measured
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    data = tmp_path / "tokens.bin"
    data.write_bytes(b"\0" * 8192)
    budget = dataclasses.replace(READS, key="m.test_view")   # the budget of the cell's hidden test
    notebook = Notebook(_three_parts_ok(), lent=Lent(data, os.stat(data).st_dev, os.stat(data).st_ino))
    try:
        result = run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [budget], 30.0, {})
    finally:
        notebook.close()
    assert notebook.ran[1] == "lend tokens.bin" and notebook.ran[2].startswith("### BEGIN MEASURED")
    assert notebook.ran[3] == "take back tokens.bin" and len(notebook.ran) == 5, notebook.ran
    assert not result.ok and "the hidden test's data was not the file the grader lent it" in result.error
    notebook = Notebook(_three_parts_ok(), lent="no disk to lend here")
    try:
        result = run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [budget], 30.0, {})
    finally:
        notebook.close()
    assert result.ok and flags([result]) == [
        "cost: the grader could not measure get_batch (no disk to lend here): a person checks its budget"]


def test_each_part_is_given_what_is_left_of_the_cells_time_and_what_the_notebook_gave_back():
    """The cell's seconds are shared by its three parts: each gets what is left, plus the time the notebook gave back
    for waiting on a CPU (5 s per part here); a cell whose time is used up gives its next part a moment, never less."""
    from autograder.grader.cost import run_measured
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    for seconds in (30.0, 0.0):
        notebook = Notebook(_three_parts_ok())
        notebook.gives_back = 5.0
        try:
            assert run_measured(notebook, Cell(CellKind.TEST, "test_view", CELL, 2.0), [MEMORY], seconds, {}).ok
        finally:
            notebook.close()
        first, second, third = notebook.seconds
        if seconds:
            assert 25 < first <= 30 and 30 < second <= 35 and 35 < third <= 40, notebook.seconds
        else:
            assert 0 < first <= 0.05 and 0 < second <= 5 and 5 < third <= 10, notebook.seconds


def test_the_meter_s_figures_from_two_readings(monkeypatch):
    """Meter.stop's arithmetic on two readings of the counters (stand-ins for /proc): new memory is the larger of the
    high-water mark's rise above the start's resident size (never below 0) and the pages faulted in; bytes read from
    storage never below 0; CPU seconds from clock ticks; hugetlbfs pages held make the part unmeasurable."""
    from autograder.grader import cost
    page = cost.PAGE

    def counters(rss=0, hwm=0, faults=0, ticks=0, read=0, hugetlb=0):
        return cost.Counters(rss, hwm, faults, 0, ticks, read, False, False, hugetlb)
    for before, after, peak, high, new, read in (
            (counters(rss=100 * page, faults=10), counters(hwm=150 * page, faults=20), 50 * page, 50 * page, 10 * page, 0),
            (counters(rss=100 * page, faults=10), counters(hwm=120 * page, faults=60), 50 * page, 20 * page, 50 * page, 0),
            (counters(rss=100 * page, read=5000), counters(hwm=90 * page, read=4096), 0, 0, 0, 0),
            (counters(read=4096), counters(read=3 * 4096, ticks=2 * cost.TICKS), 0, 0, 0, 2 * 4096)):
        readings = iter([before, after])
        monkeypatch.setattr(cost, "reset_peak", lambda pid: None)
        monkeypatch.setattr(cost, "read_counters", lambda pid, readings=readings: next(readings))
        monkeypatch.setattr(cost, "children", lambda pid: [])
        meter = cost.Meter(1)
        meter.start()
        measured = meter.stop()
        assert (measured.peak_bytes, measured.high_water_bytes, measured.new_page_bytes, measured.file_bytes) == \
            (peak, high, new, read), (before, after, measured)
        assert measured.cpu_seconds == after.ticks / cost.TICKS and measured.elsewhere == ()
    readings = iter([counters(), counters(hugetlb=2 * 2**20)])
    monkeypatch.setattr(cost, "read_counters", lambda pid: next(readings))
    meter = cost.Meter(1)
    meter.start()
    assert meter.stop().elsewhere == ("it holds 2,097,152 bytes of hugetlbfs pages (not counted as resident)",)
