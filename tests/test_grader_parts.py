"""The grader's parts, without running notebooks: limits, plans, the sandbox probe, merging shards."""
import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.course import REPO_ROOT, Course
from autograder.grader.plan import NotANotebook, make_plan, read_notebook
from autograder.grades_csv import CSV_COLUMNS
from autograder.limits import load_limits
from autograder.merge import MergeError, merge
from autograder.sandboxed.walls import readable_paths
from autograder.source import classify

SOURCE = {"cells": [
    {"cell_type": "code", "source": "import math", "metadata": {"nbgrader": {"grade_id": "setup", "locked": True}}},
    {"cell_type": "code", "source": "def f():\n    return 1", "metadata": {"nbgrader": {"grade_id": "f", "solution": True}}},
    {"cell_type": "code", "source": "assert f() == 1\n### BEGIN HIDDEN TESTS\nassert f() + 1 == 2\n### END HIDDEN TESTS\n",
     "metadata": {"nbgrader": {"grade_id": "test_f", "grade": True, "points": 2}}},
]}


def submitted(*cells):
    return {"cells": [{"cell_type": "code", "source": code, "metadata": {"nbgrader": meta} if meta else {}} for code, meta in cells]}


def test_limits_file_loads_and_overrides_are_typed():
    limits = load_limits(overrides=["cell_seconds=5", "network=true", "workers=3"])
    assert limits.cell_seconds == 5 and limits.network is True and limits.workers == 3 and type(limits.workers) is int
    with pytest.raises(ValueError, match="unknown limit"):
        load_limits(overrides=["nonsense=1"])


def test_the_limits_are_written_once_in_limits_toml(tmp_path):
    """limits.toml holds every limit's value (issue #63: the dataclass held them a second time): a file that leaves
    one out, or gives one of the wrong type, is refused, naming it; the class declares no value of its own."""
    import dataclasses

    from autograder.limits import LIMITS_FILE, Limits
    assert [f.name for f in dataclasses.fields(Limits) if f.default is not dataclasses.MISSING] == ["overridden"]
    text = LIMITS_FILE.read_text()
    short = tmp_path / "limits.toml"
    short.write_text("\n".join(line for line in text.splitlines() if not line.startswith("max_restarts")))
    with pytest.raises(ValueError, match="missing max_restarts"):
        load_limits(short)
    short.write_text(text.replace("max_restarts = 3", "max_restarts = true"))
    with pytest.raises(ValueError, match="limits.max_restarts: expected int, got bool"):
        load_limits(short)


def test_one_strict_reader_for_every_typed_border():
    """protocol.py's messages, outcome.py's results and limits.py's limits are read by autograder/strict.py alone: the
    same value of the wrong type (a bool where a number goes, a string where a list of strings goes) is refused at
    each, with the border's own error naming the field."""
    import json

    from autograder.limits import Limits
    from autograder.outcome import CellOutcome, OutcomeError
    from autograder.protocol import CellResult, ProtocolError
    limits = load_limits().as_dict()
    reply = json.loads(CellResult("ab", False, "", "x", [], [], 3, {}).to_line())
    cell = CellOutcome("test", "t", 1.0, "", False, "", "x", (), (), 3).to_dict()
    for wrong in (True, "3", [3], 3.5):
        with pytest.raises(ValueError, match="limits.max_restarts"):
            Limits.from_dict({**limits, "max_restarts": wrong})
        with pytest.raises(ProtocolError, match="CellResult.line"):
            CellResult.parse(json.dumps({**reply, "line": wrong}))
        with pytest.raises(OutcomeError, match="cell.line"):
            CellOutcome.from_dict({**cell, "line": wrong}, "cell")
    for wrong in ("a", ["a", 1], {"a": "b"}):
        with pytest.raises(ProtocolError, match="CellResult.restored"):
            CellResult.parse(json.dumps({**reply, "restored": wrong}))
        with pytest.raises(OutcomeError, match="cell.restored"):
            CellOutcome.from_dict({**cell, "restored": wrong}, "cell")
    assert CellResult.parse(json.dumps(reply)) == CellResult("ab", False, "", "x", [], [], 3, {})
    assert Limits.from_dict(limits) == load_limits() and CellOutcome.from_dict(cell, "cell").line == 3


def test_an_explicit_cell_limit_wins_over_the_course_timeout_even_at_the_default_value(tmp_path):
    """Issue #51: `--limit cell_seconds=60` (limits.toml's own value) used to lose to the course's c.Execute.timeout,
    because "equal to the default" was taken for "not given"."""
    from autograder.course import Course
    from autograder.grader.pipeline import course_limits
    from tests import tiny_course
    tiny_course.make_course(tmp_path)
    with open(tmp_path / "nbgrader_config.py", "a") as f:
        f.write("c.Execute.timeout = 7\n")
    course = Course.load(tmp_path)
    default = load_limits().cell_seconds
    assert course_limits(course, load_limits()).cell_seconds == 7  # not given: the course's time-out
    assert course_limits(course, load_limits(overrides=[f"cell_seconds={default:g}"])).cell_seconds == default
    assert course_limits(course, load_limits(overrides=["cell_seconds=3"])).cell_seconds == 3
    assert "overridden" not in load_limits(overrides=["cell_seconds=3"]).as_dict()  # never sent to the sandbox


def test_every_error_that_stops_a_run_is_a_grader_error_with_its_exit_code_and_what_it_meant():
    """grade.main has one handler (issue #51): what used to need four is a GraderError, said with its context."""
    from autograder.canvas import ExportError
    from autograder.database import GradebookError
    from autograder.errors import GraderError, Refused
    from autograder.grader.notebooks import GraderFault, MachineShort
    from autograder.grader.pipeline import WeakSandbox
    from autograder.grader.run import RunLocked
    from autograder.grades_csv import OldGradesFile
    from autograder.limits import MemoryTooSmall
    from autograder.merge import MergeError
    from autograder.shards import ShardError
    from autograder.trusted.checker import CourseError
    for kind in (GradebookError, RunLocked, WeakSandbox, CourseError, GraderFault, MachineShort, ShardError,
                 MemoryTooSmall, MergeError, ExportError, OldGradesFile, Refused):
        assert issubclass(kind, GraderError) and kind("x").exit_code == 2, kind
    assert CourseError("reference.floats fails").explain() == \
        "the self-check stopped the run; nobody was graded.\nreference.floats fails"
    assert GraderFault("no word").explain().startswith("the sandbox could not start a notebook process")
    assert RunLocked("the course is being graded").explain() == "the course is being graded"
    assert issubclass(ShardError, ValueError) and issubclass(Refused, ValueError)  # callers that catch ValueError


def sqlite_error(tmp_path, make: str) -> Exception:
    """A real error of SQLite's driver: a database another connection locked, a unique key written twice, a table
    that is not there."""
    import sqlite3
    path = tmp_path / f"{make}.db"
    first = sqlite3.connect(path, timeout=0, isolation_level=None)
    first.execute("CREATE TABLE grade (id TEXT PRIMARY KEY)")
    second = sqlite3.connect(path, timeout=0, isolation_level=None)
    statement = {"locked": "INSERT INTO grade VALUES ('b')", "unique": "INSERT INTO grade VALUES ('a')",
                 "other": "SELECT * FROM missing"}[make]
    first.execute("BEGIN EXCLUSIVE" if make == "locked" else "INSERT INTO grade VALUES ('a')")
    try:
        second.execute(statement)
    except sqlite3.Error as error:
        return error
    finally:
        first.close()
        second.close()
    raise AssertionError(f"{statement} did not fail")


def test_whether_a_gradebook_error_says_the_results_are_kept_is_a_field_not_its_words(tmp_path):
    """pipeline.kept_for_a_rerun reads GradebookError.results_kept, never the message; and the kind of a database
    error comes from the driver's code (SQLite's result code, PostgreSQL's SQLSTATE), not its words (issue #51)."""
    import psycopg

    from autograder.database import Problem, gradebook_error, problem_of
    url = "sqlite:////tmp/gradebook.db"
    assert gradebook_error(sqlite_error(tmp_path, "locked"), url).results_kept
    assert gradebook_error(sqlite_error(tmp_path, "unique"), url).results_kept
    assert not gradebook_error(sqlite_error(tmp_path, "other"), url).results_kept
    assert problem_of(Exception("database is locked")) is Problem.OTHER  # words alone are no code
    assert problem_of(psycopg.errors.UniqueViolation("x")) is Problem.WRITTEN_BY_ANOTHER_RUN
    assert problem_of(psycopg.errors.TooManyConnections("x")) is Problem.NO_CONNECTION
    assert problem_of(psycopg.errors.LockNotAvailable("x")) is Problem.LOCKED


def test_plan_takes_locked_cells_and_points_from_the_source():
    plan = make_plan("nb", classify("nb", SOURCE), submitted(
        ("import math", {"grade_id": "setup"}),
        ("def f():\n    return 1", {"grade_id": "f", "solution": True}),
        ("print('scratch')", None),
        ("pass", {"grade_id": "test_f", "grade": True, "points": 1000}),
        ("pass", {"grade_id": "test_f", "grade": True, "points": 1000}),
    ))
    assert [c.kind for c in plan.cells] == ["setup", "answer", "added", "test"]
    assert plan.cells[3].points == 2 and "BEGIN HIDDEN TESTS" in plan.cells[3].code
    assert "hidden tests ran here" in plan.cells[3].visible_code and "f() + 1" not in plan.cells[3].visible_code


def test_deleted_tests_still_run_and_duplicated_answers_run_in_order():
    plan = make_plan("nb", classify("nb", SOURCE), submitted(("def f():\n    return 0", {"grade_id": "f", "solution": True}),
                                             ("def f():\n    return 1", {"grade_id": "f", "solution": True})))
    assert [c.kind for c in plan.cells] == ["setup", "answer", "added", "test"]
    assert plan.cells[2].code.endswith("return 1")


def test_suspicious_code_is_flagged():
    plan = make_plan("nb", classify("nb", SOURCE), submitted(("import ctypes\nimport sys\nsys.modules['x'] = 1", {"grade_id": "f", "solution": True})))
    assert {"ctypes", "sys.modules"} <= set(plan.flags)
    assert make_plan("nb", classify("nb", SOURCE), submitted(("def f():\n    return 1", {"grade_id": "f", "solution": True}))).flags == []


@pytest.mark.parametrize("content, reason", [(b"", "empty"), (b"{not json", "not valid JSON"), (b"[1, 2]", "not a notebook"),
                                             (b"\xff\xfe", "not valid JSON")])
def test_unreadable_files_say_why(tmp_path, content, reason):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(content)
    with pytest.raises(NotANotebook, match=reason):
        read_notebook(path)


def test_the_source_tree_is_never_readable_by_a_notebook(tmp_path):
    paths = readable_paths([REPO_ROOT, tmp_path], REPO_ROOT / "utils")
    assert REPO_ROOT / "utils" in paths
    for path in paths:
        assert not (REPO_ROOT / "source").is_relative_to(path), path
        assert not tmp_path.is_relative_to(path), path


def test_a_cells_kind_crosses_the_sandbox_as_its_enum_and_nothing_else():
    """The kind in a CellRequest is parsed back to a CellKind member (the executor compares members, never words);
    a kind that is not one, or not a string, is refused like any other malformed message."""
    import json

    from autograder.protocol import CellKind, CellRequest, ProtocolError
    for kind in CellKind:
        request = CellRequest.parse(CellRequest("ab", kind, "x = 1", {}).to_line())
        assert request.kind is kind and request == CellRequest("ab", kind, "x = 1", {})
    line = json.loads(CellRequest("ab", CellKind.TEST, "x = 1", {}).to_line())
    deep: list = []
    for _ in range(900):
        deep = [deep]
    for wrong in ("Test", "tests", "", 1, None, ["test"], deep, "test" * 10**6):
        with pytest.raises(ProtocolError, match="CellRequest.kind") as refused:
            CellRequest.parse(json.dumps({**line, "kind": wrong}))
        assert len(str(refused.value)) < 200   # what came instead is named, never echoed whole


def test_probe_reports_the_walls():
    from autograder.grader.pipeline import probe
    walls = probe(load_limits())
    assert "rlimits" in walls  # the rest depends on the platform; docs/security.md lists what each gets


def test_merging_shards(tmp_path):
    for shard, student in (("a", "ann"), ("b", "bob")):
        (tmp_path / shard / "feedback" / student).mkdir(parents=True)
        with open(tmp_path / shard / "grades.csv", "w", newline="") as f:
            csv.writer(f).writerows([list(CSV_COLUMNS),
                                     [student, "01_floats", "test_decode", "decode", "3", "3", "", "graded", ""]])
    assert merge([tmp_path / "b", tmp_path / "a"], tmp_path / "all") == 2
    lines = (tmp_path / "all" / "grades.csv").read_text().splitlines()
    assert lines[1].startswith("ann") and lines[2].startswith("bob")
    assert (tmp_path / "all" / "feedback" / "bob").is_dir()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "grades.csv").write_text((tmp_path / "a" / "grades.csv").read_text())
    with pytest.raises(MergeError, match="both"):
        merge([tmp_path / "a", tmp_path / "c"], tmp_path / "twice")


HIDDEN_SOURCE = {"cells": [
    {"cell_type": "code", "source": "def check(ok, what, hint):\n    assert ok, f'{what}\\nHint: {hint}'",
     "metadata": {"nbgrader": {"grade_id": "setup", "locked": True}}},
    {"cell_type": "code", "source": "def f(x):\n    return 2 * x", "metadata": {"nbgrader": {"grade_id": "f", "solution": True}}},
    {"cell_type": "code", "source": "check(f(1) == 2, 'f(1): expected 2', 'double it')\n### BEGIN HIDDEN TESTS\n"
                                    "check(f(-7) == -14, 'f(-7): expected -14, got ' + repr(f(-7)), 'negative numbers too')\n"
                                    "### END HIDDEN TESTS\n",
     "metadata": {"nbgrader": {"grade_id": "test_f", "grade": True, "points": 2}}},
]}


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    """One zygote for the feedback cases: each case's notebook process is a fork of it, as in a grading run (a zygote's
    start, its preload of torch and the rest, is the costly part)."""
    from autograder.grader.notebooks import Zygote
    started = Zygote([REPO_ROOT, tmp_path_factory.mktemp("walled")], Course.load(REPO_ROOT).imports())
    yield started
    started.close()


RAISED_IN_HIDDEN = {  # what an answer raises on the hidden case only (x = -7), named by the notebook process (#63)
    "ValueError": "def f(x):\n    return 2 * x if x > 0 else int('no')",
    "StopIteration": "def f(x):\n    return 2 * x if x > 0 else next(iter([]))",
    "KeyboardInterrupt": "def f(x):\n    if x < 0:\n        raise KeyboardInterrupt\n    return 2 * x",
    "RuntimeWarning": ("import warnings\ndef f(x):\n    with warnings.catch_warnings():\n"
                       "        warnings.simplefilter('error')\n        if x < 0:\n"
                       "            warnings.warn('overflow in doubling', RuntimeWarning)\n    return 2 * x"),
}


@pytest.mark.parametrize("answer, failed_where", [("def f(x):\n    return 2 * abs(x)", "hidden"),
                                                   ("def f(x):\n    return 3 * x", "visible"),
                                                   *((code, name) for name, code in RAISED_IN_HIDDEN.items())])
def test_feedback_gives_a_failed_hidden_check_only_its_hint(zygote, answer, failed_where):
    """With feedback = "hints" (the default), a student reads that a hidden check failed and its hint, never the
    hidden case's input or expected value; a failed visible check shows everything; "full" shows everything. Where
    the student's code raised in a hidden test (StopIteration, KeyboardInterrupt and a RuntimeWarning turned into an
    error included), they read what it raised, never "a hidden test failed" (issue #63: a regex over the text took
    only names ending in Error or Exception for exceptions)."""
    from autograder.grader.feedback import for_students
    from autograder.grader.notebooks import run_plan
    plan = make_plan("nb", classify("nb", HIDDEN_SOURCE), submitted(
        ("", {"grade_id": "setup"}), (answer, {"grade_id": "f", "solution": True}), ("", {"grade_id": "test_f"})))
    results = run_plan(plan, load_limits(), zygote, 0)
    test, result = plan.cells[-1], results[-1]
    assert not result.ok
    shown = for_students(test, result, "hints")
    if failed_where == "visible":
        assert shown == result and "f(1): expected 2" in shown.error and result.ename == "AssertionError"
        return
    assert "-7" not in shown.error and "-14" not in shown.error and "'no'" not in shown.error
    assert "hidden test" in shown.error and shown.error_full == result.error
    if "abs" in answer:
        assert shown.error.endswith("Hint: negative numbers too") and "-14" in result.error
        assert shown.error.startswith("AssertionError: a hidden test failed") and result.ename == "AssertionError"
    else:
        assert result.ename == failed_where, (result.ename, result.error)
        assert shown.error.startswith(f"{failed_where}: your code raised {failed_where} in a hidden test"), shown.error
        assert "a hidden test failed" not in shown.error
    assert for_students(test, result, "full") == result


def test_feedback_detail_is_a_limit():
    assert load_limits().feedback == "hints"
    assert load_limits(overrides=["feedback=full"]).feedback == "full"
    with pytest.raises(ValueError, match="hints"):
        load_limits(overrides=["feedback=everything"])


def test_the_graders_hand_in_limit_is_the_students():
    """The grader reads at most what a hidden test may hand in (it keeps its own copy of the limit, so that a run with
    nothing to grade does not import torch for it)."""
    from autograder.grader.notebooks import HANDIN_LIMIT_BYTES as graders
    from utils.handin import HANDIN_LIMIT_BYTES as students
    assert graders == students


def test_workers_and_each_notebooks_memory_follow_the_job(monkeypatch):
    """limits.fit_to_machine: one worker per usable CPU (Slurm's SLURM_CPUS_PER_TASK caps it where tasks are not
    bound to their CPUs), each notebook at most its share of the job's or pod's memory after 1 GiB for the grader,
    fewer workers where a share would be under 1 GiB, and a clear error where not even one fits."""
    from autograder.limits import MemoryTooSmall, fit_to_machine, usable_cpus
    monkeypatch.setattr("autograder.limits._cgroup_memory_mib", lambda: None)
    base = load_limits()
    cpus = usable_cpus({})
    fitted, how = fit_to_machine(base, {})
    assert (fitted.workers, fitted.memory_mib) == (cpus, base.memory_mib) and "no memory limit" in how
    fitted, how = fit_to_machine(base, {"SLURM_CPUS_PER_TASK": "1", "SLURM_MEM_PER_CPU": "4096"})
    assert (fitted.workers, fitted.memory_mib) == (1, 3072), how
    assert how == ("1 worker(s) (1 usable CPU(s)); 4096 MiB for the job (SLURM_MEM_PER_CPU=4096 x 1 CPU(s)), "
                   "1024 MiB kept for the grader: 3072 MiB per notebook")
    fitted, how = fit_to_machine(load_limits(overrides=["workers=8", "memory_mib=1024"]), {"GRADER_MEMORY_MIB": "4096"})
    assert (fitted.workers, fitted.memory_mib) == (3, 1024), how  # 3 GiB for notebooks: 3 of the 8 wanted
    assert how.startswith("3 worker(s) (memory for 3 of the 8 wanted)")
    fitted, how = fit_to_machine(base, {"GRADER_MEMORY_MIB": "2200"})  # issue #49: a notebook's own limit stays
    assert (fitted.workers, fitted.memory_mib) == (1, base.memory_mib) and "NOT GRADED, never charged" in how, how
    fitted, _ = fit_to_machine(base, {"SLURM_MEM_PER_NODE": "65536", "GRADER_MEMORY_MIB": "99999"})
    assert fitted.memory_mib == base.memory_mib  # plenty: the notebook's own limit stays
    with pytest.raises(MemoryTooSmall, match="ask for at least 2048 MiB"):
        fit_to_machine(base, {"GRADER_MEMORY_MIB": "1536"})


def test_the_runs_helpers_end_at_once_when_it_is_done():
    """The zygote and the trusted checker stop as soon as the run closes them, even though the checker was forked
    while the zygote's socket was open in the grader (the checker once kept it, and every run waited 10 s), and
    neither is left running."""
    import os
    import time

    from autograder.grader.notebooks import NotebookProcess, Zygote
    from autograder.trusted.checker import Checker
    zygote = Zygote(walled=[REPO_ROOT], preload=[])
    checker = Checker(["floats.decode"])
    try:
        NotebookProcess(zygote, 0, load_limits()).kill()  # the zygote is up and has made a notebook
        assert checker.cases["floats.decode"]
    finally:
        started = time.monotonic()
        checker.close()
        zygote.close()
        seconds = time.monotonic() - started
    assert seconds < 3, f"closing the run's helpers took {seconds:.1f} s"
    assert zygote.process.poll() is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(checker.process.pid, os.WNOHANG)  # reaped: gone


def test_the_checker_forks_from_the_zygotes_preload_and_no_notebook_holds_it(zygote):
    """trusted/checker.py's Forker: in a run the checker is a child of the zygote, forked once its preload is done
    (torch and the course's modules imported once a run, not twice); it imports `reference` after that fork, so the
    zygote, and every notebook process forked from it later, hold nothing of it; closing the checker stops it."""
    import time

    from autograder.trusted.checker import Checker
    checker = Checker(["floats.decode"], forker=zygote)
    proc = Path(f"/proc/{checker.process.pid}")
    try:
        assert int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == zygote.process.pid   # its parent
        assert checker.cases["floats.decode"]
        assert checker.verdicts([("floats.decode", None)])[0].ok is False   # it answers: nothing handed in
        held = "import sys\nprint('held', sorted(m for m in sys.modules if m.startswith(('reference', " \
               "'autograder.trusted'))))\ndef f(x):\n    return 2 * x"
        setup, done, test = run_loaded(zygote, held)
        assert done.ok and done.output.strip() == "held []", done.output
    finally:
        checker.close()
    deadline = time.monotonic() + 10
    while proc.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not proc.exists(), "the checker outlived its close"   # stopped, and reaped by the zygote


def test_a_runs_checker_is_handed_the_runs_zygote(tmp_path, monkeypatch):
    """pipeline.prepare forks the checker from the run's zygote (its Forker), so a run imports torch once: the run is
    stopped at the checker's start, having started nothing else."""
    from autograder.grader import pipeline
    from autograder.grader.notebooks import Zygote
    from tests import submissions

    class Stop(Exception):
        pass
    handed = []

    def checker(keys, forker=None):
        handed.append((keys, forker))
        raise Stop
    monkeypatch.setattr(pipeline, "Checker", checker)
    root = submissions.new_course(tmp_path)
    assignment = "01_floats"
    submissions.write_submission(root / "submitted", "ada", assignment, submissions.release_notebooks(assignment))
    with pytest.raises(Stop):
        pipeline.grade(root / "submitted", root / "graded", course=Course.load(root))
    assert len(handed) == 1 and handed[0][0] and isinstance(handed[0][1], Zygote), handed


def test_a_checker_the_zygote_cannot_start_is_the_graders_fault():
    from autograder.grader.notebooks import GraderFault, Zygote
    from autograder.trusted.checker import Checker
    zygote = Zygote(walled=[REPO_ROOT], preload=[])
    zygote.close()
    with pytest.raises(GraderFault, match="did not start the checker"):
        Checker(["floats.decode"], forker=zygote)


def test_a_student_cannot_turn_utils_lazy_names_against_the_tests():
    """`utils` binds its names on first use; in a notebook process every name is bound before the fork (the zygote's
    preload), so nothing of `utils` resolves inside the sandbox. A student who deletes a name and poisons the table
    it would be resolved from, or replaces the package's `__getattr__`, is undone by the guard before a test runs."""
    script = textwrap.dedent("""
        from autograder.sandboxed import executor, zygote
        zygote.preload(["utils"])
        import utils, utils.units
        unbound = [name for name in utils.__all__ if name not in vars(utils)]
        assert not unbound, f"bound only on first use, inside the sandbox: {unbound}"
        guard = executor.Guard({})
        del utils.format_bytes                                   # the student's cell
        utils._HOME_OF["format_bytes"] = "rules"
        utils.__getattr__ = lambda name: (lambda *args, **kwargs: "full marks")
        changed = guard.differences(fix=True)                    # before the next test cell
        assert "utils.format_bytes" in changed and "utils.__getattr__" in changed, changed
        assert utils.format_bytes is utils.units.format_bytes
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


def test_a_notebook_has_one_output_budget():
    """Issue #48: cells each within the per-cell cap still add up; past the notebook's budget their output is cut,
    with a note, and the verdicts and errors stay whole."""
    from autograder.grader.notebooks import within_budget
    from autograder.grader.plan import CellRun
    results = [CellRun(True, "x" * 20_000) for _ in range(4_000)]
    results.append(CellRun(False, "y" * 10, "AssertionError: " + "z" * 5_000))
    kept = within_budget(results, 200_000)
    assert sum(len(r.output) for r in kept[:10]) == 200_000 and "used up" not in kept[9].output
    assert kept[10].output.startswith("\n[... 20,000 more characters dropped") and "used up" in kept[10].output
    assert sum(len(r.output) for r in kept) < 200_000 + 4_000 * 120   # the notes: one line a cell
    assert [r.ok for r in kept] == [r.ok for r in results] and kept[-1].error == results[-1].error
    assert within_budget(results[:3], 200_000) == results[:3]   # within it: nothing changes


def test_the_graded_page_reads_exception_then_hint_in_plain_text_and_one_points_count():
    """Issue #61's minor items: a test's error whose last line is its hint reads "AssertionError: ... Hint: ..." (not
    "Error: Hint: ... AssertionError: ..."); a task's heading says its points once, in the right number; a type check
    says "an int"; no ANSI colour code reaches the results file."""
    from autograder.grader import feedback
    from autograder.grader.autograded import error_parts
    from autograder.grader.plan import Cell, CellRun
    from autograder.grader.workers import cell_outcome
    from autograder.outcome import CellKind
    from utils.grading import check_type

    error = "AssertionError: weights_gib: 1 GiB is not within 2% of the answer\nHint: between 10x and 15x too small"
    assert error_parts(error, None, "AssertionError") == ("AssertionError", "weights_gib: 1 GiB is not within 2% of the answer\n"
                                                          "Hint: between 10x and 15x too small")
    assert error_parts("  (line 3: y = f(x))\nValueError: bad", None, "ValueError") == ("ValueError", "bad (line 3: y = f(x))")
    # The exception is what the notebook process named, not the last line that looks like one (issue #63)
    assert error_parts("AssertionError: f(0) raised\nValueError: bad\nHint: h", None, "AssertionError") == \
        ("AssertionError", "f(0) raised\nValueError: bad\nHint: h")
    assert error_parts("  (line 2: next(it))\nStopIteration", None, "StopIteration") == \
        ("StopIteration", "(line 2: next(it))")
    cell = Cell(CellKind.TEST, "test_weights_gib", "check(weights_gib)", 1.0)
    colour = "\x1b[0;31mAssertionError\x1b[0m: weights_gib: 1 GiB\nHint: \x1b[1mbetween\x1b[0m"
    outcome = cell_outcome(cell, CellRun(False, "\x1b[32mprinted\x1b[0m", colour, error_full=colour, ename="AssertionError"))
    assert "\x1b" not in outcome.output + outcome.error + (outcome.error_full or "")
    assert outcome.error == "AssertionError: weights_gib: 1 GiB\nHint: between"
    page = feedback.render("s1", "01_floats", "01_floats", (outcome,), [],
                           titles={"test_weights_gib": "Task 5: napkin math: the weights of a 7B model (1 point)"})
    assert "tests of Task 5: napkin math: the weights of a 7B model (1 point)</h3>" in page and "points)" not in page
    assert page.index("AssertionError: weights_gib") < page.index("Hint: between")
    with pytest.raises(AssertionError, match="expected an int, got float"):
        check_type(1.0, int, "n")
    with pytest.raises(AssertionError, match="expected a float, got int"):
        check_type(1, float, "x")


def test_a_failed_hidden_check_shows_what_its_diagnosis_found_but_not_the_case():
    """Issue #61: the diagnosis of a wrong value ("Found: ...", utils/diagnosis.py) reaches the student's page with the
    hint; the first line, with the hidden case's inputs and expected value, goes to error_full only."""
    from autograder.grader import feedback
    from autograder.grader.plan import Cell, CellRun
    from autograder.outcome import CellKind
    code = "check(f)\n### BEGIN HIDDEN TESTS\nhand_in('x.f', f)\n### END HIDDEN TESTS\n"
    cell = Cell(CellKind.TEST, "test_f", code, 2.0)
    error = ("AssertionError: largest_model(8, 80000000000, 'adamw'): expected 40,000,000,000, got 5,000,000,000\n"
             "Found: it counts one GPU's memory: sharding spreads the state over all of them\nHint: a hint")
    shown = feedback.for_students(cell, CellRun(False, "", error, line=3, ename="AssertionError"), "hints")
    assert shown.error == ("AssertionError: a hidden test failed; the grader does not show its inputs or expected "
                           "values\nFound: it counts one GPU's memory: sharding spreads the state over all of them"
                           "\nHint: a hint") and shown.error_full == error
    alone = feedback.for_students(cell, CellRun(False, "", error.rpartition("\n")[0], line=3, ename="AssertionError"),
                                  "hints").error
    assert alone.endswith("over all of them\n" + feedback.DEFAULT_HINT) and "40,000" not in alone


def test_a_full_disk_names_the_folder_of_the_file_it_could_not_write_even_with_a_space(tmp_path, monkeypatch):
    """write_atomically's OSError carries the file in `filename` (issue #63), and grade.full_folders reads it there:
    a regex over the message stopped at the first space of the path and named every folder of the run instead."""
    import errno

    from autograder import atomic
    from autograder.grade import full_folders

    def full(temporary, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(atomic, "_put", full)
    out = tmp_path / "graded by me"
    target = out / "summary.txt"
    with pytest.raises(OSError) as raised:
        atomic.write_atomically(target, "x")
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(target)
    assert raised.value.strerror == "No space left on device" and not list(out.iterdir())
    said = full_folders(raised.value, {"the output folder": out, "the course folder": tmp_path})
    assert f"the output folder {out}:" in said and "the course folder" not in said, said


def test_a_course_error_crosses_the_fork_by_class_with_its_whole_message():
    """Issue #63: the checker's CourseError reaches the grader by its class and its own message (forked.ChildFailed
    `raised`, `said`), never by a qualified name stripped off the last line of a traceback, which kept only the last
    line of a message of several and any other exception's name with it."""
    from autograder.errors import GraderError
    from autograder.forked import ChildFailed, call_in_child
    from autograder.trusted.checker import Checker, CourseError

    def broken() -> None:
        raise CourseError("reference.floats fails\non two lines")
    with pytest.raises(ChildFailed) as failed:
        call_in_child(broken, 30)
    assert failed.value.raised_a(CourseError) and failed.value.raised_a(GraderError)
    assert not failed.value.raised_a(ValueError) and failed.value.said == "reference.floats fails\non two lines"
    with pytest.raises(CourseError) as stopped:
        Checker(["no such\nmodule.test"], seconds=60)
    assert str(stopped.value).startswith("hidden test no such\nmodule.test: its cases or expected results could not "
                                         "be made: "), str(stopped.value)


LOADED_SOURCE = {"cells": [
    {"cell_type": "code", "source": "import sys\nprint('loaded:', sorted(m for m in ('torch', 'torch._dynamo', 'numpy', "
                                    "'matplotlib') if m in sys.modules))",
     "metadata": {"nbgrader": {"grade_id": "setup", "locked": True}}},
    {"cell_type": "code", "source": "def f(x):\n    return 2 * x", "metadata": {"nbgrader": {"grade_id": "f", "solution": True}}},
    {"cell_type": "code", "source": "assert f(1) == 2\nimport torch\nassert torch.manual_seed(0) is not None",
     "metadata": {"nbgrader": {"grade_id": "test_f", "grade": True, "points": 2}}},
]}
# what the student writes: torch._dynamo rebinds torch.manual_seed when it loads, and torch.compile's first call wraps
# nn.Module's __init__ and __setstate__ (the red team's correct training loop lost its points to that)
LOADS_DYNAMO = ("def f(x):\n    import torch, torch._dynamo\n"
                "    torch.compile(torch.nn.Linear(1, 1), backend='eager')(torch.zeros(1, 1))\n    return 2 * x")


def run_loaded(zygote, answer: str) -> list:
    from autograder.grader.notebooks import run_plan
    plan = make_plan("nb", classify("nb", LOADED_SOURCE), submitted(
        ("", {"grade_id": "setup"}), (answer, {"grade_id": "f", "solution": True}), ("", {"grade_id": "test_f"})))
    return run_plan(plan, load_limits(), zygote, 0)


def test_a_notebook_process_starts_with_the_zygotes_heap_frozen(zygote):
    """autograder/heap.py: the zygote's preload (torch and the course's modules) is frozen before any fork, so a full
    collection in a notebook process examines the notebook's own objects only (before: a pause of about 170 ms in
    the first test cell that reached one, and every page of the zygote's objects copied); the collector itself runs,
    as it does in JupyterLab."""
    answer = "import gc\nprint('frozen', gc.get_freeze_count(), 'enabled', gc.isenabled())\ndef f(x):\n    return 2 * x"
    setup, done, test = run_loaded(zygote, answer)
    words = done.output.split()
    assert done.ok and words[0] == "frozen" and words[2:] == ["enabled", "True"], done.output
    assert int(words[1]) > 100_000, done.output   # torch, IPython and utils/: some 340,000 objects on this machine


def test_what_a_library_imports_at_a_notebooks_first_error_is_preloaded(zygote):
    """zygote.COMPANIONS and ALWAYS: modules a library imports only when first needed (jaxtyping's printer of a refused
    call, beartype's violation messages, IPython's completer at the shell's start) are imported once in the zygote,
    not in every notebook process that reaches them (py-spy: 88 samples of 1,573 in 30 notebooks of exercise 4)."""
    lazy = ["wadler_lindig", "beartype._check.error._errmap", "einops._torch_specific",
            "torch._subclasses.schema_check_mode", "IPython.core.completer", "bdb"]
    answer = f"import sys\nprint('missing', [m for m in {lazy!r} if m not in sys.modules])\ndef f(x):\n    return 2 * x"
    setup, done, test = run_loaded(zygote, answer)
    assert done.ok and done.output.strip() == "missing []", done.output


def test_frozen_after_collects_the_blocks_garbage_then_freezes_the_rest():
    import gc
    import weakref

    from autograder import heap

    class Node:
        pass
    kept: list = []
    cycles: list = []
    frozen_before = gc.get_freeze_count()
    with heap.frozen_after():
        assert not gc.isenabled()
        for _ in range(1000):
            kept.append(Node())
            cycle = Node()
            cycle.me = cycle   # garbage only a collection frees
            cycles.append(weakref.ref(cycle))
        del cycle
    try:
        assert gc.isenabled()
        assert gc.get_freeze_count() - frozen_before >= 1000   # what the block kept
        assert not [o for o in gc.get_objects() if type(o) is Node]   # frozen objects are not the collector's
        assert all(ref() is None for ref in cycles)   # the block's garbage was collected, not frozen
    finally:
        gc.unfreeze()   # this is pytest's process: its objects go back to the collector


def test_the_graders_workers_fork_from_its_frozen_heap(tmp_path, monkeypatch):
    """autograder/heap.py: the grader freezes its heap (nbgrader, SQLAlchemy, the run's sources) while it forks a
    worker per submission, so a worker's collections, and those of the judge's child it forks, examine their own
    objects only (before: a full collection over the grader's objects in each judge, about 90 ms a submission); after
    the run the heap is the collector's again (here, pytest's)."""
    import gc

    import nbformat

    from autograder.course import Course
    from autograder.grader import workers
    from autograder.grader.pipeline import grade
    from tests import tiny_course
    frozen_at_fork: list[int] = []

    class Counted(workers.Child):
        def __init__(self, *args, **kwargs):
            frozen_at_fork.append(gc.get_freeze_count())
            super().__init__(*args, **kwargs)
    monkeypatch.setattr(workers, "Child", Counted)
    tiny_course.make_course(tmp_path)
    course = Course.load(tmp_path)
    assert course.api().generate_assignment(tiny_course.ASSIGNMENT, force=True, create=True)["success"]
    release = nbformat.read(tmp_path / "release" / tiny_course.ASSIGNMENT / f"{tiny_course.ASSIGNMENT}.ipynb", 4)
    for student in ("ada", "bob"):
        folder = tmp_path / "submitted" / student / tiny_course.ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(tiny_course.submission(release, tiny_course.answers()), folder / f"{tiny_course.ASSIGNMENT}.ipynb")
    assert gc.get_freeze_count() == 0
    grade(None, tmp_path / "graded", course=course, limits=load_limits())
    # a worker per submission (and two more where the course's self-check runs, not yet recorded as passed)
    assert len(frozen_at_fork) >= 2 and min(frozen_at_fork) > 50_000, frozen_at_fork   # pytest's and the grader's
    assert gc.get_freeze_count() == 0


def test_the_zygote_preloads_what_the_course_imports_with_its_companions(zygote, tmp_path):
    """Issue #63: a zygote imports the modules the course's notebooks import (Course.imports), not torch for a course
    that never imports it; a package it does load comes with its companions (torch with torch._dynamo), before the
    guard records, so a correct answer that loads dynamo is never taken for tampering, in either course."""
    from autograder.grader.notebooks import Zygote
    imports = sorted(classify("nb", LOADED_SOURCE).imports)
    assert imports == ["sys", "torch"]   # the test cell's import counts: the tests rely on what they import
    bare = Zygote([REPO_ROOT, tmp_path], ["sys"])   # a course whose notebooks import only sys
    try:
        setup, answer, test = run_loaded(bare, LOADS_DYNAMO)
        assert setup.output.strip() == "loaded: []", setup.output
        assert test.ok and not test.tampered and not test.restored, test
    finally:
        bare.close()
    setup, answer, test = run_loaded(zygote, LOADS_DYNAMO)   # the course's own imports: torch among them
    assert "'torch', 'torch._dynamo'" in setup.output, setup.output
    assert test.ok and not test.tampered and not test.restored, test
    setup, answer, test = run_loaded(zygote, "import torch\ntorch.manual_seed = print\ndef f(x):\n    return 2 * x")
    assert "torch.manual_seed" in test.restored, test   # torch is guarded where the course uses it
