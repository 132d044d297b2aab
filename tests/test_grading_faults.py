"""Faults injected into grading runs (issue #31), on the tiny course (tests/tiny_course.py): each ends in the truth (a
plain re-run equals a clean run's grades.csv) or in a refusal that says what happened and what to do, never in a silent
difference.

Two runs at once, a run killed mid-way, a gradebook emptied or moved away, a result file cut in half, a result that
cannot be written, a full output disk, a connection lost during the commit, and a change of the worker count.
"""
from __future__ import annotations

import csv
import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from tests import seccomp_fault, tiny_course, warm

A = tiny_course.ASSIGNMENT
REPO = Path(__file__).resolve().parent.parent
SLEEPY = "import time; time.sleep(600); return 3 * x"  # a notebook that is still running when the grader is stopped


def make_class(root: Path, students: dict[str, str]) -> Course:
    """The tiny course with one submission per student (student -> the body of their `double`)."""
    tiny_course.make_course(root)
    course = Course.load(root)
    assert course.api().generate_assignment(A, force=True, create=True)["success"]
    release = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
    for student, body in students.items():
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True)
        nbformat.write(tiny_course.submission(release, tiny_course.answers(double=body)), folder / f"{A}.ipynb")
        (folder / "timestamp.txt").write_text("2026-01-05 12:00:00.000000 UTC")
    return course


def grade(root: Path, *args: str, out: Path | None = None, wait: bool = True, **kwargs):
    command = [sys.executable, "-m", "autograder.grade", "--course", str(root), "--out", str(out or root / "graded"),
               "--limit", "cell_seconds=20", *args]
    if not wait:
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    return warm.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, **kwargs)


def here(root: Path, *limits: str, out: Path | None = None, **options) -> list:
    """A run in this process, with `grade`'s limits and then `limits` (NAME=VALUE, as `grade`'s `--limit`s), so that
    a result graded by the CLI is reused: the rows it wrote. A refusal raises; a submission NOT GRADED fails the test,
    as the command line exits 3 for it (and 0 only when every submission is graded). Where the command line adds
    nothing, this spares an interpreter and its imports (about 2-3 CPU-s a run)."""
    from autograder.gradebook import TOTAL
    from autograder.grader.pipeline import grade as run
    from autograder.limits import load_limits
    from autograder.outcome import Status
    rows = run(None, out or root / "graded", course=Course.load(root),
               limits=load_limits(overrides=["cell_seconds=20", *limits]), **options)
    failed = [r for r in rows if r.task == TOTAL and r.status is Status.NOT_GRADED]
    assert not failed, failed
    return rows


def refused_here(root: Path, **options) -> str:
    """The message of a run refused (GradebookError) before it wrote anything, in this process."""
    from autograder.database import GradebookError
    with pytest.raises(GradebookError) as caught:
        here(root, **options)
    return str(caught.value)


def stopped_here(root: Path, **options):
    """The error (a GraderError) that stopped a run in this process: its `explain()` is what the command line
    prints after 'error: ', its `exit_code` what it exits with."""
    from autograder.errors import GraderError
    with pytest.raises(GraderError) as caught:
        here(root, **options)
    return caught.value


def totals(out: Path) -> dict[str, str]:
    with open(out / "grades.csv") as f:
        return {r["student"]: f"{r['score']} {r['note']}" for r in csv.DictReader(f) if r["task"] == "TOTAL"}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """The class of ada, bob and cy (due the day after they submitted), graded by a clean run on one worker: the
    truth every fault must end in, and the starting point of the faults that strike a class already graded (each on
    a copy: `copy_of`). One run for all of them: a grading run has a fixed cost whatever the class (the zygote's
    preload; docs/benchmarks.md)."""
    root = tmp_path_factory.mktemp("clean")
    course = make_class(root, {"ada": "return 2 * x", "bob": "return 3 * x", "cy": "return x + x"})
    from nbgrader.api import Gradebook
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_assignment(A, duedate="2026-01-06 12:00:00 UTC")
    here(root, "workers=1")  # as `grade(root, "--workers", "1")`, in this process
    return root


@pytest.fixture(scope="module")
def clean(graded_class):
    """A clean run's grades.csv."""
    return (graded_class / "graded" / "grades.csv").read_text()


def copy_of(graded: Path, root: Path) -> Path:
    """The graded class copied into `root`: its submissions, gradebook, autograded/ and graded/, with its
    nbgrader_config.py pointing at the copy's own gradebook."""
    shutil.copytree(graded, root, symlinks=True, dirs_exist_ok=True)
    return tiny_course.write_config(root)


def descendants(pid: int) -> dict[int, bool]:
    """The processes below `pid`, each with whether it runs in a PID namespace of its own (a notebook process)."""
    parents, nested = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            except OSError:
                continue
            parents[int(entry.name)] = int(status["PPid"])
            nested[int(entry.name)] = len(status.get("NSpid", "").split()) > 1
    below, changed = {pid}, True
    while changed:
        more = {child for child, parent in parents.items() if parent in below} - below
        below |= more
        changed = bool(more)
    return {p: nested[p] for p in below - {pid}}


def alive(pids) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in (Path(f"/proc/{p}/stat").read_text().split()[2:3] or ["Z"])]


def test_two_runs_at_once_one_waits_for_nobody_and_the_second_says_who(tmp_path, graded_class, clean):
    root = copy_of(graded_class, tmp_path)  # bob's notebook now sleeps: the first run grades him again, slowly
    path = root / "submitted" / "bob" / A / f"{A}.ipynb"
    path.write_text(path.read_text().replace("return 3 * x", "import time; time.sleep(8); return 3 * x"))
    lock = root / ".grading.lock"
    lock.unlink()  # the clean run's, which names that run: wait for the first run's own
    first = grade(root, wait=False)
    deadline = time.monotonic() + 120
    while not (lock.exists() and lock.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    second = stopped_here(root)  # in this process: what the command line prints after 'error: ', and exits with
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert "graded 1 submission(s)" in err, err  # bob's sleepy notebook: it held the lock while the second came
    said = second.explain()
    assert second.exit_code == 2, said
    assert "is being graded now by" in said and f"pid {first.pid}" in said and "since" in said, said
    assert (root / "graded" / "grades.csv").read_text() == clean  # the first run is not disturbed
    here(root)
    assert (root / "graded" / "grades.csv").read_text() == clean


def test_a_killed_run_leaves_nothing_running_and_the_next_run_cleans_up(tmp_path, clean):
    root = tmp_path
    make_class(root, {"ada": "return 2 * x", "bob": SLEEPY, "cy": "while True: pass"})
    run = grade(root, "--workers", "2", "--limit", "cell_seconds=600", "--limit", "notebook_seconds=600",
                "--limit", "cpu_seconds=600", wait=False, start_new_session=True)  # two at once, on any machine
    # Ada's notebook ends at once; once her result is written, the two notebooks running are Bob's and Cy's, which
    # never end by themselves. (Counting notebooks before that could count Ada's, gone a moment later.)
    ada_done = root / "graded" / "results" / "ada" / f"{A}.json"
    deadline = time.monotonic() + 300  # a loaded machine takes its time to start the zygote and the notebooks
    below = {}
    while time.monotonic() < deadline:
        below = descendants(run.pid)
        if ada_done.exists() and sum(below.values()) >= 2:
            break
        time.sleep(0.5)
    assert ada_done.exists() and sum(below.values()) >= 2, f"bob's and cy's notebooks are not both running: {below}"
    (root / "graded" / "results" / "bob").mkdir(parents=True, exist_ok=True)
    (root / "graded" / "results" / "bob" / f".{A}.json.12345.tmp").write_text('{"half": ')  # a write cut short
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 60
    while alive(below) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not alive(below), f"processes outlived the grader: {alive(below)}"
    # Bob's and Cy's notebooks now finish (the course's cells are fixed, not the students'); the next run is clean.
    for student in ("bob", "cy"):
        path = root / "submitted" / student / A / f"{A}.ipynb"
        path.write_text(path.read_text().replace("import time; time.sleep(600); ", "").replace("while True: pass",
                                                                                               "return x + x"))
    here(root)
    assert "removed what a stopped run had left" in (root / "graded" / "summary.txt").read_text()
    assert not list((root / "graded").rglob(".*.tmp"))
    assert (root / "graded" / "grades.csv").read_text() == clean


@pytest.mark.parametrize("loss", ["emptied", "moved away", "due date dropped"])
def test_a_gradebook_that_lost_what_was_recorded_is_refused(tmp_path, graded_class, loss):
    root = copy_of(graded_class, tmp_path)  # graded, with a due date
    before = (root / "graded" / "grades.csv").read_text()
    db = root / "gradebook.db"
    if loss == "emptied":
        db.write_bytes(b"")
    elif loss == "moved away":
        db.rename(root / "gradebook-backup.db")
    else:
        import sqlite3
        with sqlite3.connect(db) as con:
            con.execute("UPDATE assignment SET duedate = NULL")
    said = refused_here(root)  # in this process: the refusal comes before anything runs
    assert "has lost what earlier runs recorded" in said and "--start-over" in said
    assert (root / "graded" / "grades.csv").read_text() == before
    if loss != "due date dropped":
        assert not db.exists() or db.stat().st_size == 0  # nothing was written into it
    here(root, start_over=True)  # as `grade(root, "--start-over")`


@pytest.mark.parametrize("how", ["make clean", "a fresh --out", "the ledger cut in half", "the ledger edited"])
def test_the_guard_of_an_emptied_gradebook_lives_with_the_gradebook(tmp_path, graded_class, how):
    """Issue #49 item 2: the ledger is kept in the course folder with the gradebook, not in the output, so an
    emptied gradebook (every late penalty and due date gone) is refused after `make clean` (the output, autograded/
    and feedback/ removed) and with a fresh --out; a ledger cut short or edited (its digest no longer matches) is
    refused as damaged, never taken as "nothing recorded". Nothing is written; --start-over takes it on purpose."""
    root = copy_of(graded_class, tmp_path)
    ledger = root / ".gradebook-ledger.json"
    assert ledger.is_file() and not (root / "graded" / "gradebook-ledger.json").exists()
    db, out = root / "gradebook.db", root / "graded"
    db.write_bytes(b"")
    if how == "make clean":
        for folder in ("graded", "autograded", "feedback"):
            shutil.rmtree(root / folder, ignore_errors=True)
    elif how == "a fresh --out":
        out = root / "graded-elsewhere"
    elif how == "the ledger cut in half":
        text = ledger.read_text()
        ledger.write_text(text[:len(text) // 2])
    else:  # valid JSON, but what it holds was changed: as if it had never recorded anything
        import json
        edited = json.loads(ledger.read_text())
        edited["submissions"], edited["due"] = [], []
        ledger.write_text(json.dumps(edited))
    kept = ledger.read_bytes()
    said = refused_here(root, out=out)  # in this process: the refusal comes before anything runs
    wanted = "is damaged" if how.startswith("the ledger") else "has lost what earlier runs recorded"
    assert wanted in said and "--start-over" in said and "Nothing was written" in said, said
    if not how.startswith("the ledger"):
        assert "the due dates of 00_tiny are gone" in said or "gradebook file" in said, said
    assert db.stat().st_size == 0 and ledger.read_bytes() == kept  # nothing written, the guard not rewritten
    assert not (out / "grades.csv").exists() or how == "the ledger cut in half" or how == "the ledger edited"
    here(root, out=out, start_over=True)  # as `grade(root, "--start-over", out=out)`
    assert ledger.read_bytes() != kept
    here(root, out=out)  # a new, whole ledger


def another_class(root: Path) -> Path:
    """The ledger of another class of the tiny course (its own clone and gradebook: the same course id, the
    assignment made afresh, so with another id), as its grader writes it."""
    from autograder.grader import ledger
    course = make_class(root, {})
    ledger.write(course, root / "graded")
    return root / ".gradebook-ledger.json"


@pytest.mark.parametrize("fault", ["ledger deleted, gradebook emptied", "another class's ledger, gradebook emptied",
                                   "another class's ledger, gradebook intact", "another course's ledger"])
def test_a_ledger_is_bound_to_its_gradebook_and_graded_work_to_the_gradebook(tmp_path, graded_class, fault):
    """Issue #62 item 1: the two silent ways of issue #62's first list (exit 0, late penalties lost) and the silent
    replacement. With its ledger gone (or another class's in its place) an emptied gradebook is refused all the
    same, because autograded/ and graded/grades.csv show three submissions recorded in it; another class's ledger
    beside an intact gradebook is refused (its assignment has another id there), as is one written for another
    course, instead of being replaced. Nothing is written, the ledger stays, and the message names the way back;
    --start-over then takes the gradebook on purpose. (The command line's exit status 2: the intact case.)"""
    root = copy_of(graded_class, tmp_path / "class")
    ledger, db = root / ".gradebook-ledger.json", root / "gradebook.db"
    if fault.startswith("ledger deleted"):
        ledger.unlink()
    else:
        other = another_class(tmp_path / "other")
        if fault == "another course's ledger":  # its own course id; a digest that matches, as its grader wrote it
            import hashlib
            import json
            body = {k: v for k, v in json.loads(other.read_text()).items() if k != "sha256"}
            body["course"] = "another-course"
            other.write_text(json.dumps({**body, "sha256": hashlib.sha256(
                json.dumps(body, sort_keys=True).encode()).hexdigest()}))
        shutil.copy(other, ledger)
    if fault.endswith("emptied"):
        db.write_bytes(b"")
    kept, before = ledger.read_bytes() if ledger.exists() else None, (root / "graded" / "grades.csv").read_text()
    if fault.endswith("intact"):
        run = grade(root)
        assert run.returncode == 2, run.stdout + run.stderr
        said = run.stderr
    else:
        said = refused_here(root)
    if fault.endswith("intact") or fault == "another course's ledger":
        assert "is not this gradebook's" in said and "--start-over" in said, said
        assert ("have other ids in this gradebook" if fault.endswith("intact") else "another-course") in said
    else:
        assert "has lost what earlier runs recorded: 3 submission(s)" in said, said
        assert "autograded" in said and "Restore the gradebook and its ledger together" in said
        assert "--start-over" in said and "dropped for good" in said
        assert db.stat().st_size == 0  # nothing was written into it
    assert "Nothing was written" in said
    assert (ledger.read_bytes() if ledger.exists() else None) == kept
    assert (root / "graded" / "grades.csv").read_text() == before
    here(root, start_over=True)  # on purpose: the gradebook as it is, a new ledger of its own
    here(root)


def test_a_moved_gradebook_keeps_its_ledger_and_says_so(tmp_path, graded_class, clean):
    """The same gradebook under another address (the course folder copied elsewhere, its db_url with it): its
    assignments keep their ids, so the ledger is its own, and the summary says the address changed."""
    root = copy_of(graded_class, tmp_path)
    here(root)
    assert "the gradebook's address changed since the last run" in (root / "graded" / "summary.txt").read_text()
    assert (root / "graded" / "grades.csv").read_text() == clean
    import json
    assert json.loads((root / ".gradebook-ledger.json").read_text())["gradebook"] == f"sqlite:///{root / 'gradebook.db'}"


def test_one_lost_submission_is_recorded_again_keeping_the_rest_of_the_gradebook(tmp_path, graded_class, clean):
    """Issue #62 item 2: one submission removed from the gradebook is refused, naming it and `--re-record`; that
    records it again from submitted/, and keeps everything else: bob's hand score, cy's extension, the due date.
    A submission let go on purpose (removed from the gradebook and from submitted/) is asked about once."""
    from nbgrader.api import Gradebook

    from autograder import deadlines
    root = copy_of(graded_class, tmp_path)
    course = Course.load(root)
    deadlines.extend(course, A, "cy", days=2)
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.find_grade("explain", A, A, "bob").manual_score = 3.0
        gb.db.commit()
        gb.remove_submission(A, "ada")
    said = refused_here(root)
    assert "1 of the 3 submissions earlier runs recorded are gone (ada/00_tiny)" in said, said
    assert "--re-record ada/00_tiny" in said and "manual scores, extensions and due dates included" in said
    again = grade(root, "--re-record", "ada/00_tiny")  # as the message prints it
    assert again.returncode == 0, again.stdout + again.stderr
    assert "recorded again, as --re-record asked: ada/00_tiny" in (root / "graded" / "summary.txt").read_text()
    with Gradebook(course.db_url, course.course_id) as gb:
        assert gb.find_submission(A, "ada").score == 2.0  # recorded again, from its graded result
        assert gb.find_grade("explain", A, A, "bob").manual_score == 3.0
        assert gb.find_submission(A, "cy").extension is not None
        assert gb.find_assignment(A).duedate is not None
    here(root)  # the new ledger holds ada again
    with Gradebook(course.db_url, course.course_id) as gb:  # cy leaves the course: her records and her submission go
        gb.remove_submission(A, "cy")
    shutil.rmtree(root / "submitted" / "cy")
    assert "cy/00_tiny" in refused_here(root)  # autograded/cy still shows it recorded
    here(root, re_record=("cy/*",))
    here(root)  # let go once: the ledger remembers


def test_a_killed_runs_temporary_ledger_is_removed_and_ignored_by_git(tmp_path, graded_class):
    """A run killed while writing its ledger leaves `..gradebook-ledger.json-<pid>-<host>.tmp` (student ids): the
    next run removes it and says so; git ignores it meanwhile."""
    import socket
    root = copy_of(graded_class, tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that was a run's, gone now
    left = root / f"..gradebook-ledger.json-{dead.pid}-{socket.gethostname()}.tmp"
    left.write_text('{"submissions": [["ada", ')
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", left.name], cwd=REPO)
    assert ignored.returncode == 0, f"{left.name} is not git-ignored"
    here(root)
    summary = (root / "graded" / "summary.txt").read_text()
    assert not left.exists() and "removed what a stopped run had left" in summary and left.name in summary, summary


def test_a_truncated_result_is_graded_again_alone(tmp_path, graded_class, clean):
    root = copy_of(graded_class, tmp_path)
    result = root / "graded" / "results" / "bob" / f"{A}.json"
    result.write_text(result.read_text()[: len(result.read_text()) // 2])
    here(root)
    summary = (root / "graded" / "summary.txt").read_text()
    assert f"an earlier result could not be read and is graded again: {result}" in summary, summary
    assert "graded 1 submission(s)" in summary and "2 unchanged, reused" in summary, summary
    assert (root / "graded" / "grades.csv").read_text() == clean


def test_a_result_that_cannot_be_written_costs_that_submission_only(tmp_path, clean):
    root = tmp_path
    make_class(root, {"ada": "return 2 * x", "bob": "return 3 * x", "cy": "return x + x"})
    (root / "graded" / "results").mkdir(parents=True)
    (root / "graded" / "results" / "bob").write_text("in the way")  # a file where bob's folder of results goes
    run = grade(root)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "the grader failed on 1 submission(s)" in run.stderr
    rows = totals(root / "graded")
    assert rows["bob"].startswith(" NOT GRADED: could not write") and "results/bob" in rows["bob"], rows["bob"]
    assert rows["ada"] == "2 " and rows["cy"] == "2 "
    (root / "graded" / "results" / "bob").unlink()
    here(root)
    assert (root / "graded" / "grades.csv").read_text() == clean


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for the output folder needs root")
def test_a_full_output_disk_names_the_file_and_a_rerun_finishes(tmp_path, clean):
    root = tmp_path / "course"
    make_class(root, {"ada": "return 2 * x", "bob": "return 3 * x", "cy": "return x + x"})
    out = tmp_path / "full"
    out.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24k", "tmpfs", str(out)], check=True)
    try:
        run = grade(root, out=out)
        assert run.returncode in (2, 3), run.stdout + run.stderr
        assert "No space left on device" in run.stderr and str(out) in run.stderr, run.stderr
        assert "hidden tests are broken" not in run.stderr and "Traceback" not in run.stderr
        # Issue #62: the results that fit were committed before grades.csv found the disk full; the message says
        # how many went into the gradebook, which ones did not, and that the rest of the output was not written
        import re
        said = re.search(r"its commit of (\d) submission\(s\) went through, of the 3 this run was given", run.stderr)
        assert said and "not written" in run.stderr and "was not written past" not in run.stderr, run.stderr
        from nbgrader.api import Gradebook
        course = Course.load(root)
        with Gradebook(course.db_url, course.course_id) as gb:
            assert len(gb.find_assignment(A).submissions) == int(said[1])  # the number it says is the gradebook's
        assert int(said[1]) == 3 or f"{3 - int(said[1])} NOT GRADED, not in it" in run.stderr
        # room made where the run writes: a re-run into the same folder finishes from what the full one left there
        subprocess.run(["mount", "-o", "remount,size=16m", str(out)], check=True)
        here(root, out=out)
        assert (out / "grades.csv").read_text() == clean
    finally:
        subprocess.run(["umount", "-l", str(out)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="a bind mount on the ledger needs root")
def test_a_ledger_that_cannot_be_written_after_the_commit_says_the_grade_is_in(tmp_path, graded_class):
    """Issue #62: the ledger's rename fails after the commit (the ledger is a mount point: EBUSY, a real error of
    the kernel's). The message says that the commit went through and what was not written, never that nothing
    was; the gradebook holds bob's new grade; a re-run writes the ledger."""
    root = copy_of(graded_class, tmp_path)
    ledger = root / ".gradebook-ledger.json"
    path = root / "submitted" / "bob" / A / f"{A}.ipynb"
    path.write_text(path.read_text().replace("return 3 * x", "return 2 * x"))  # bob fixes his answer: 2 points
    kept = ledger.read_bytes()
    subprocess.run(["mount", "--bind", str(ledger), str(ledger)], check=True)
    try:
        stopped = stopped_here(root)  # in this process: what the command line prints after 'error: ' (for an error
    finally:  # other than a full disk), and exits with
        subprocess.run(["umount", str(ledger)], check=True)
    said = stopped.explain()
    assert stopped.exit_code == 2, said
    assert "its commit of 3 submission(s) went through" in said, said
    assert "Then writing the gradebook's ledger failed" in said and "Device or resource busy" in said
    assert "grades.csv, the feedback pages and the summary, the shard's record (shard.json) were not written" in \
        said and "Nothing was written" not in said
    from nbgrader.api import Gradebook
    course = Course.load(root)
    with Gradebook(course.db_url, course.course_id) as gb:
        assert gb.find_submission(A, "bob").score == 2.0
    assert ledger.read_bytes() == kept and not list(root.glob("..gradebook-ledger.json-*.tmp"))
    here(root)  # the ledger written now, nothing graded again
    assert "graded 0 submission(s)" in (root / "graded" / "summary.txt").read_text()
    assert ledger.read_bytes() != kept


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs for TMPDIR needs root")
def test_a_full_temporary_folder_is_named_so(tmp_path):
    """Issue #62: TMPDIR with room for Python's probe but not for nbgrader's scratch copy of the assignment, which
    the run makes to record it in the gradebook: said as a full temporary folder, with its room, never as nbgrader
    refusing changed graded cells."""
    root = tmp_path / "course"
    make_class(root, {"ada": "return 2 * x"})
    (root / "gradebook.db").unlink()  # a new gradebook: the run records the assignment first
    full = tmp_path / "tmp"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], check=True)
    try:
        (full / "filler").write_bytes(b"x" * 56 * 1024)  # 8 KiB left: Python's probe of TMPDIR fits, a copy does not
        run = grade(root, env={**os.environ, "TMPDIR": str(full)})
    finally:
        subprocess.run(["umount", "-l", str(full)], check=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"the temporary folder {full} (TMPDIR) is full" in run.stderr and "KiB free of 64 KiB" in run.stderr, run.stderr
    assert "graded cells" not in run.stderr and "Changing a graded assignment" not in run.stderr


def test_the_worker_count_is_not_part_of_a_results_key(tmp_path, graded_class, clean):
    root = copy_of(graded_class, tmp_path)  # graded on one worker
    here(root, "workers=2")  # as `grade(root, "--workers", "2")`
    summary = (root / "graded" / "summary.txt").read_text()
    assert "graded 0 submission(s)" in summary and "3 unchanged, reused" in summary, summary
    assert (root / "graded" / "grades.csv").read_text() == clean


@pytest.mark.parametrize("committed", [True, False])
def test_a_connection_lost_during_the_commit_is_checked_not_guessed(tmp_path, monkeypatch, committed):
    """The gradebook is read afresh after a commit that failed: it says 'written' only when the grades are there."""
    from sqlalchemy.exc import OperationalError

    from autograder import gradebook
    from autograder.outcome import Autograded
    course = make_class(tmp_path, {"ada": "return 2 * x"})
    graded = [gradebook.Graded("ada", A, None, {A: Autograded({}, {"test_double": 2.0}, {})})]
    real_open = gradebook.open_gradebook

    def opened(course):  # the run's own session: its final commit is cut off, after or before it reached the server
        opened_gradebook = real_open(course)
        real_commit = opened_gradebook.db.commit

        def lost():
            if committed:
                real_commit()
            raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))
        opened_gradebook.db.commit = lost
        return opened_gradebook
    monkeypatch.setattr(gradebook, "open_gradebook", opened)
    if committed:
        lines, _ = gradebook.write(course, graded)
        assert any("checked afterwards: the gradebook holds this run's 1 submission(s)" in line for line in lines)
    else:
        with pytest.raises(gradebook.GradebookError, match="does not hold this run's grades: nothing was written"):
            gradebook.write(course, graded)
    monkeypatch.setattr(gradebook, "open_gradebook", real_open)
    assert gradebook.holds(course, graded) is committed


def test_nothing_a_class_uses_turns_off_the_databases_durability():
    """The test server runs with fsync=off (fast, and it may lose a commit in a crash): only tests and benchmarks may."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    shipped = [REPO / p for p in tracked if Path(p).suffix in (".py", ".sh", ".yaml", ".sbatch", ".toml", ".md")
               and not p.startswith(("tests/", "bench/"))]
    assert shipped
    for path in shipped:
        text = path.read_text(errors="replace")
        assert "fsync=off" not in text and "synchronous_commit=off" not in text, path


LANDLOCK_CALLS = ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")


@pytest.mark.skipif(not seccomp_fault.supported(), reason="the seccomp fault injection knows x86-64's call numbers only")
def test_without_user_namespaces_the_grader_refuses_and_grades_nobody(tmp_path):
    """A kernel where user namespaces are turned off (unshare fails with EPERM, as under
    kernel.unprivileged_userns_clone=0 or user.max_user_namespaces=0): a notebook would share the machine's /proc and
    disk, so the run stops before anyone is graded, saying why, and writes no grade."""
    make_class(tmp_path, {"ada": "return 2 * x"})
    run = warm.run([sys.executable, "-m", "autograder.grade", "--course", str(tmp_path), "--out",
                          str(tmp_path / "graded")], cwd=REPO, capture_output=True, text=True, timeout=300,
                         preexec_fn=seccomp_fault.denying({"unshare": errno.EPERM}))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "nobody was graded" in run.stderr and "namespace" in run.stderr, run.stderr  # which call failed, and why
    assert not (tmp_path / "graded" / "grades.csv").exists()
    assert not (tmp_path / "autograded").exists() or not any((tmp_path / "autograded").rglob("*.ipynb"))


@pytest.mark.skipif(not seccomp_fault.supported(), reason="the seccomp fault injection knows x86-64's call numbers only")
def test_without_landlock_the_grader_refuses_unless_told_and_then_says_so(tmp_path):
    """A kernel older than Landlock (its calls fail with ENOSYS): a notebook could read every file its uid can, so the
    run refuses, naming the kernel and the way out; told `require_landlock=false` it grades, and its summary says
    NO LANDLOCK."""
    make_class(tmp_path, {"ada": "return 2 * x"})
    old_kernel = seccomp_fault.denying({name: errno.ENOSYS for name in LANDLOCK_CALLS})
    command = [sys.executable, "-m", "autograder.grade", "--course", str(tmp_path), "--out", str(tmp_path / "graded")]
    refused = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=old_kernel)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "has no Landlock" in refused.stderr and "require_landlock=false" in refused.stderr, refused.stderr
    assert not (tmp_path / "graded" / "grades.csv").exists()
    told = warm.run(command + ["--limit", "require_landlock=false"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, preexec_fn=old_kernel)
    assert told.returncode == 0, told.stdout + told.stderr
    assert "NO LANDLOCK" in (tmp_path / "graded" / "summary.txt").read_text()
    with open(tmp_path / "graded" / "grades.csv") as f:
        double = next(r for r in csv.DictReader(f) if (r["student"], r["task"]) == ("ada", "test_double"))
    assert float(double["score"]) == float(double["max_score"]) > 0, double  # graded as ever, only less walled


# ---- a machine short of memory or CPU (issue #49 item 1) ------------------------------------------------------------
SHORT_CELL_SECONDS = 5  # the cell limit of the runs short of memory and CPU


def cpu_work(seconds: float) -> str:
    """The body of a `double` that spends about `seconds` of CPU on this machine now, timed here on a few million
    additions: one fixed count was 0.6 s on one box and 1.5 s on another, too close to a 2 s limit on a busy CI."""
    count = 4_000_000
    started = time.process_time()
    sum(range(count))
    took = max(time.process_time() - started, 1e-3)
    return f"return 2 * x\n_work = sum(range({int(count * seconds / took)}))"


# 1,500 MiB touched: inside its own memory limit, not beside the 700 MiB of the job's other process (the zygote of a
# course that imports only `math` holds no torch: the job's memory is the grader's, the neighbour's and this)
BIG = "return 2 * x\n_big = b'x' * (1500 * 2**20)"


class Cgroups:
    """Real cgroups made for one test (v1: a memory cgroup under this process's own, a CPU cgroup with a quota; v2:
    one child of this process's own cgroup with both); `enter` is a command prefix that runs a command inside."""

    def __init__(self, name: str, memory_mib: int, cpus: float):
        from autograder import cgroups
        self.made: list[Path] = []
        memory, cpu = cgroups.own_hierarchy("memory"), cgroups.own_hierarchy("cpu")
        if memory is None or cpu is None:
            pytest.skip("no memory or cpu cgroup controller is reachable from this process (/proc/self/cgroup)")
        try:
            if memory.version == 1 and cpu.version == 1:
                memory_folder, cpu_folder = self._make(memory.own / name), self._make(cpu.own / name)
                (memory_folder / "memory.limit_in_bytes").write_text(str(memory_mib * 2**20))
                (cpu_folder / "cpu.cfs_period_us").write_text("100000")
                (cpu_folder / "cpu.cfs_quota_us").write_text(str(int(cpus * 100000)))
                self.procs = [memory_folder / "cgroup.procs", cpu_folder / "cgroup.procs"]
            else:  # v2: the controllers must be enabled for children (the parent must hold no process of its own)
                folder = self._make(memory.own / name)
                (folder / "memory.max").write_text(str(memory_mib * 2**20))
                (folder / "cpu.max").write_text(f"{int(cpus * 100000)} 100000")
                self.procs = [folder / "cgroup.procs"]
        except OSError as error:
            self.remove()
            pytest.skip(f"cannot make a cgroup here ({error}): the test needs root and a writable cgroup file system")
        self.memory_procs = self.procs[0]

    def _make(self, folder: Path) -> Path:
        folder.mkdir()
        self.made.append(folder)
        return folder

    def enter(self, procs: list[Path] | None = None) -> list[str]:
        moves = " && ".join(f"echo $$ > {p}" for p in (procs or self.procs))
        return ["sh", "-c", f'{moves} && exec "$@"', "sh"]

    def remove(self) -> None:
        for folder in reversed(self.made):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def scores(out: Path) -> dict[str, str]:
    with open(out / "grades.csv") as f:
        return {r["student"]: r["score"] if not r["note"].startswith("NOT GRADED") else "NOT GRADED"
                for r in csv.DictReader(f) if r["task"] == "TOTAL"}


def double_cell(out: Path, student: str) -> dict:
    """The result of the graded cell `double` of one student's notebook in a run's results/ (seconds, error)."""
    import json
    cells = json.loads((out / "results" / student / f"{A}.json").read_text())["notebooks"][A]["cells"]
    return next(c for c in cells if c["grade_id"] == "double")


def test_the_grader_reads_its_own_cgroup_not_the_hierarchys_root(tmp_path):
    """autograder.cgroups on the files the kernel would show: a v2 machine (the unified hierarchy at /sys/fs/cgroup,
    the job at /job/step, a tighter CPU quota on the job than on the step, a memory limit on the step), a container
    whose cgroup namespace shows its own cgroup as the mount's root, and a v1 machine (separate memory and cpu,cpuacct
    hierarchies). The hierarchy's root files say "no limit" in each, as they do on a real machine."""
    from autograder import cgroups

    def tree(files: dict[str, str]) -> Path:
        for name, text in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_text(text)
        return tmp_path

    root = tree({"v2/memory.max": "max\n", "v2/cpu.max": "max 100000\n", "v2/cgroup.controllers": "cpu memory\n",
                 "v2/job/memory.max": "max\n", "v2/job/cpu.max": "150000 100000\n",
                 "v2/job/cgroup.controllers": "cpu memory\n", "v2/job/step/memory.max": str(3 * 2**30) + "\n",
                 "v2/job/step/cpu.max": "max 100000\n", "v2/job/step/cgroup.controllers": "cpu memory\n",
                 "v2/job/step/memory.events": "low 0\nhigh 0\nmax 7\noom 1\noom_kill 2\n",
                 "v1mem/memory.limit_in_bytes": "9223372036854771712\n",
                 "v1mem/slurm/memory.limit_in_bytes": str(2 * 2**30) + "\n",
                 "v1mem/slurm/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
                 "v1mem/slurm/memory.failcnt": "11\n", "v1cpu/slurm/cpu.cfs_quota_us": "50000\n",
                 "v1cpu/slurm/cpu.cfs_period_us": "100000\n", "v1cpu/cpu.cfs_quota_us": "-1\n",
                 "v1cpu/cpu.cfs_period_us": "100000\n"})
    v2 = f"35 24 0:30 / {root}/v2 rw,nosuid - cgroup2 cgroup2 rw\n"
    memory = cgroups.own_hierarchy("memory", "0::/job/step\n", v2)
    assert memory == cgroups.Hierarchy(2, (root / "v2/job/step", root / "v2/job", root / "v2"))
    assert cgroups.memory_limit_bytes(memory) == 3 * 2**30
    assert cgroups.cpu_quota(cgroups.own_hierarchy("cpu", "0::/job/step\n", v2)) == 1.5  # the job's, an ancestor's
    machine = cgroups.memory_events(memory).machine_oom_kills  # /proc/vmstat's, the real machine's
    assert cgroups.memory_events(memory) == cgroups.MemoryEvents(2, 7, f"the cgroup {root / 'v2/job/step'}", machine)
    # a container without a cgroup namespace: the mount at ct/ shows the job's cgroup /job as its root
    tree({"ct/memory.max": str(2**30) + "\n", "ct/step/memory.max": "max\n", "ct/step/cgroup.controllers": "memory\n"})
    container = cgroups.own_hierarchy("memory", "0::/job/step\n", f"35 24 0:30 /job {root}/ct rw - cgroup2 cgroup2 rw\n")
    assert container == cgroups.Hierarchy(2, (root / "ct/step", root / "ct"))
    assert cgroups.memory_limit_bytes(container) == 2**30
    v1 = (f"40 24 0:40 / {root}/v1mem rw - cgroup cgroup rw,memory\n"
          f"41 24 0:41 / {root}/v1cpu rw - cgroup cgroup rw,cpu,cpuacct\n")
    procs = "12:memory:/slurm\n11:cpu,cpuacct:/slurm\n0::/\n"
    memory = cgroups.own_hierarchy("memory", procs, v1)
    assert memory == cgroups.Hierarchy(1, (root / "v1mem/slurm", root / "v1mem"))
    assert cgroups.memory_limit_bytes(memory) == 2 * 2**30  # not the root's "no limit"
    assert cgroups.cpu_quota(cgroups.own_hierarchy("cpu", procs, v1)) == 0.5
    assert cgroups.memory_events(memory) == cgroups.MemoryEvents(3, 11, f"the cgroup {root / 'v1mem/slurm'}",
                                                                 cgroups.memory_events(memory).machine_oom_kills)


@pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")
def test_a_part_the_kernel_kills_for_want_of_memory_is_named_so():
    """A process killed by the OOM killer of its cgroup (a real one of 64 MiB) is counted by the kernel, and the note
    the grader adds to a dead worker's or zygote's message names memory and the limit; nothing is said without one."""
    from autograder import cgroups
    groups = Cgroups(f"cs336-oom-{os.getpid()}", memory_mib=64, cpus=1)
    try:
        hierarchy = cgroups.Hierarchy(cgroups.own_hierarchy("memory").version, (groups.memory_procs.parent,))
        before = cgroups.memory_events(hierarchy)
        assert cgroups.out_of_memory_note(before, hierarchy) == ""
        died = subprocess.run(groups.enter([groups.memory_procs]) + [sys.executable, "-c", "b'x' * (256 * 2**20)"],
                              capture_output=True, timeout=60)
        assert died.returncode == -signal.SIGKILL, died
        note = cgroups.out_of_memory_note(before, hierarchy)
        assert "out of memory: the kernel's OOM killer killed 1 process(es)" in note and "64 MiB" in note, note
    finally:
        groups.remove()


@pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")
def test_the_trusted_checker_killed_for_want_of_memory_is_named_so():
    """Issue #62: the run's trusted checker, moved into a real cgroup of 16 MiB, is killed by the kernel's OOM killer
    when a large hand-in arrives (its per-request child, or itself: the killer picks). Each request after that names
    memory and the kill, not only "Broken pipe"; a worker turns the message into that submission's NOT GRADED
    reason (workers._work), so no student is charged. On cgroup v1 the kill is counted in the small cgroup only,
    not in the grader's: the machine's count (/proc/vmstat) names it."""
    from autograder.trusted.checker import Checker, CourseError
    checker = Checker(["floats.decode"])
    groups = Cgroups(f"cs336-checker-{os.getpid()}", memory_mib=16, cpus=1)
    try:
        assert checker.verdicts([("floats.decode", None)])[0].ok is False  # it answers: nothing handed in
        groups.memory_procs.write_text(str(checker.process.pid))
        said = []
        for _ in range(2):
            with pytest.raises(CourseError) as died:
                checker.verdicts([("floats.decode", "x" * (64 * 2**20))])  # 64 MiB handed in
            said.append(str(died.value))
    finally:
        checker.close()
        groups.remove()
    for message in said:  # a pipe broken by the child's death, or the checker's own: memory named either way
        assert "out of memory: the kernel's OOM killer killed" in message and "trusted side" in message, said


@pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")
def test_a_machine_short_of_memory_and_cpu_never_costs_a_student_a_point(tmp_path):
    """The grader in a real cgroup of 2,200 MiB (700 of it held by another, smaller process of the job) and a quarter
    of a CPU: it sizes itself from its own cgroup (1 worker, the cgroup's limit named); the notebook that needs about
    0.35 of a 5 s cell limit in CPU (1.4 times the limit in wall time at a quarter of a CPU) gets back the time it
    waited for the CPU and earns what it earns unlimited; the one the kernel's OOM killer stops for want of the job's memory is NOT GRADED, naming
    memory, the run exits 3, and a later run grades it (nothing of it was kept). A student who sleeps past the limit
    is charged in both runs alike: only time spent waiting for a CPU is given back."""
    # The CPU-bound notebook needs 0.35 of the cell limit on this machine: at a quarter of a CPU it takes 1.4 times the
    # limit in wall time. The big one touches its 1,500 MiB in 1.4 s here (4 KiB pages), a third of the limit.
    short_of = {"ok": "return 2 * x", "cpu": cpu_work(0.35 * SHORT_CELL_SECONDS), "big": BIG,
                "sleepy": "return 2 * x\nimport time; time.sleep(30)"}
    make_class(tmp_path, short_of)
    short = (f"cell_seconds={SHORT_CELL_SECONDS}", "max_restarts=1")
    started = time.monotonic()
    here(tmp_path, *short, out=tmp_path / "unlimited")  # as `grade(tmp_path, "--limit", ..., out=...)`: every one graded
    expected = scores(tmp_path / "unlimited")
    assert expected["cpu"] == expected["ok"] == expected["big"] != expected["sleepy"], (expected, {
        student: double_cell(tmp_path / "unlimited", student) for student in short_of})
    groups = Cgroups(f"cs336-test-{os.getpid()}", memory_mib=2200, cpus=0.25)
    neighbour = subprocess.Popen(groups.enter([groups.memory_procs]) + [
        sys.executable, "-c", "import time; "
        "held = b'x' * (700 * 2**20); print('holding', flush=True); time.sleep(300)"], stdout=subprocess.PIPE, text=True)
    try:
        assert neighbour.stdout.readline().strip() == "holding"
        limited = subprocess.run(groups.enter() + [sys.executable, "-m", "autograder.grade", "--course", str(tmp_path),
                                                    "--out", str(tmp_path / "limited"), "--limit", short[0],
                                                    "--limit", short[1]],
                                 cwd=REPO, capture_output=True, text=True, timeout=300)
    finally:
        neighbour.kill()
        neighbour.wait()
        groups.remove()
    said = limited.stdout + limited.stderr
    assert (tmp_path / "limited" / "grades.csv").is_file(), said
    got = scores(tmp_path / "limited")
    print(f"\nunlimited {expected}, limited {got}, {time.monotonic() - started:.1f} s")
    assert all(got[s] in (expected[s], "NOT GRADED") for s in short_of), (got, expected, said)  # never lower
    assert got["cpu"] == expected["cpu"] and got["sleepy"] == expected["sleepy"], said
    waited = double_cell(tmp_path / "limited", "cpu")
    # it ran past the limit in wall time: the time it waited for a CPU was given back
    assert waited["seconds"] > SHORT_CELL_SECONDS, waited
    summary = (tmp_path / "limited" / "summary.txt").read_text()
    assert "on this machine: 1 worker(s) (1 usable CPU(s)); 2200 MiB for the job" in summary, summary
    assert got["big"] == "NOT GRADED" and limited.returncode == 3, said
    assert "ran out of memory" in summary and "OOM killer" in summary, summary
    assert "out of memory during this run: the kernel's OOM killer killed" in summary, summary  # not only "no limit"
    here(tmp_path, *short, out=tmp_path / "limited")  # unlimited now: the NOT GRADED one is graded
    assert scores(tmp_path / "limited") == expected
