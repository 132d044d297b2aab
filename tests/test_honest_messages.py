"""Messages that point the right way (issue #49, item 10), each from the fault itself, on the tiny course
(tests/tiny_course.py) or on a real PostgreSQL server (tests/postgres_server.py):
- two runs of one shard writing the same submissions blame the doubled shard, not the database;
- a full temporary folder names that folder and its room, and says nothing was graded when nothing was;
- a server out of connection slots after the notebooks ran says the results are kept and a re-run only writes them;
- a server that stops just after the run's commit: the message says the grades are in (and they are);
- a late submission's time and penalty read as they are ("2 min", "0.2 points", "1 point");
- a Ctrl-C stops the run promptly, says it was interrupted, charges nothing to the grader, exits 130; no forked
  child of the grader takes it.
A run into another shard's output folder is tests/test_shards.py; where fetched feedback lands,
tests/test_readme_commands.py.
"""
from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import database, gradebook
from autograder.course import Course
from autograder.late import how_late, points
from autograder.outcome import Autograded
from tests import postgres_server, tiny_course, warm
from tests.test_grading_faults import grade as grade_command
from tests.test_grading_faults import make_class, totals

A = tiny_course.ASSIGNMENT
REPO = Path(__file__).resolve().parent.parent
GRADED = {A: Autograded({}, {"test_double": 2.0}, {})}


# ---- two runs of one shard --------------------------------------------------------------------------------------

def test_two_runs_of_one_shard_at_once_blame_the_doubled_shard(tmp_path, monkeypatch):
    """The other run commits ada's submission between this run's look-up and its insert, as a second grader of the
    same shard does: the database refuses the insert, and the message says why it happened and that nothing of
    this run was written."""
    from nbgrader.api import Gradebook
    course = make_class(tmp_path, {"ada": "return 2 * x"})
    with Gradebook(course.db_url, course.course_id) as book:
        book.update_or_create_student("ada")  # on the roster, as every shard's students are
    real_open = gradebook.open_gradebook

    def opened(course):
        book = real_open(course)
        real_add = book.add_submission

        def add_submission(*args, **kwargs):
            with Gradebook(course.db_url, course.course_id) as other:  # the doubled shard, a step ahead
                other.add_submission(A, "ada")
            return real_add(*args, **kwargs)
        book.add_submission = add_submission
        return book
    monkeypatch.setattr(gradebook, "open_gradebook", opened)
    with pytest.raises(gradebook.GradebookError) as refused:
        gradebook.write(course, [gradebook.Graded("ada", A, None, GRADED)])
    message = str(refused.value)
    assert "another grading run wrote the same submissions into it at the same time" in message, message
    assert "two graders given the same shard" in message and "Nothing was written by this run" in message
    assert "UNIQUE constraint failed" in message  # the database's own words stay, in their place


def test_postgresqls_duplicate_key_reads_the_same():
    import psycopg
    error = psycopg.errors.UniqueViolation('duplicate key value violates unique constraint "uq_submitted_assignment"')
    assert "two graders given the same shard" in database.explain(error, "postgresql+psycopg://g:secret@db/cs336")


# ---- a late submission, in words -----------------------------------------------------------------------------------

@pytest.mark.parametrize("seconds, shown", [(0.3, "under 1 s"), (45, "45 s"), (120, "2 min"), (3569, "59 min"),
                                            (3571, "1.0 h"), (45 * 3600, "45.0 h"), (3 * 86400, "3.0 days")])
def test_how_late_never_rounds_a_late_submission_to_nothing(seconds, shown):
    assert how_late(seconds) == shown


def test_points_are_singular_for_one():
    assert [points(v) for v in (0, 0.2, 1, 1.0, 2, 0.1 + 0.2)] == ["0 points", "0.2 points", "1 point", "1 point",
                                                                  "2 points", "0.3 points"]


def test_the_late_line_of_a_run_says_minutes_and_points(tmp_path):
    from nbgrader.api import Gradebook
    course = make_class(tmp_path, {"ada": "return 2 * x"})
    with Gradebook(course.db_url, course.course_id) as book:
        book.update_or_create_assignment(A, duedate="2026-01-05 11:58:00 UTC")  # ada handed in at 12:00:00
    stamp = datetime.datetime(2026, 1, 5, 12, 0, 0)
    lines, _ = gradebook.write(course, [gradebook.Graded("ada", A, stamp, GRADED)])
    assert lines == [f"ada {A}: 2 min after the due date -> late penalty 0.2 points"], lines


# ---- a full temporary folder -----------------------------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs as the temporary folder needs root")
def test_a_full_temporary_folder_is_named_and_nothing_is_said_to_be_kept(tmp_path):
    """TMPDIR is a 4 KiB tmpfs: enough for Python to take it as the temporary folder, too small for the self-check's
    notebooks (an empty XDG_CACHE_HOME: no self-check remembered). Nothing was graded, and the message says so."""
    root = tmp_path / "course"
    make_class(root, {"ada": "return 2 * x", "bob": "return 3 * x"})
    small = tmp_path / "small-tmp"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(small)], check=True)
    command = [sys.executable, "-m", "autograder.grade", "--course", str(root), "--out", str(root / "graded")]
    try:
        run = warm.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "TMPDIR": str(small), "XDG_CACHE_HOME": str(tmp_path / "c1")})
    finally:
        subprocess.run(["umount", "-l", str(small)], check=True)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "No space left on device" in run.stderr and f"the temporary folder {small} (TMPDIR): " in run.stderr
    assert "free now, of 4.0 KiB" in run.stderr, run.stderr
    assert "No submission had been graded yet" in run.stderr and "what was graded is kept" not in run.stderr
    assert "Traceback" not in run.stderr
    again = warm.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c2")})
    assert again.returncode == 0, again.stderr
    graded = totals(root / "graded")
    assert graded["ada"].startswith("2 ") and graded["bob"].startswith("0 "), graded


# ---- a PostgreSQL gradebook that stops answering after the notebooks ran ----------------------------------------

@pytest.fixture(scope="module")
def server():
    try:
        pg = postgres_server.start()
    except postgres_server.PostgresUnavailable as error:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no PostgreSQL server here: {error}")
    yield pg
    pg.stop()


def class_on(server, root: Path, name: str) -> Course:
    make_class(root, {"ada": "return 2 * x", "bob": "return 3 * x"})
    tiny_course.write_config(root, db_url=server.create_database(name))
    database.forget()
    return Course.load(root)


def test_no_connection_slot_after_the_notebooks_ran_says_the_results_are_kept(server, tmp_path, monkeypatch):
    import psycopg

    from autograder.grader import pipeline
    course = class_on(server, tmp_path, "slots")
    held: list = []
    real_run = pipeline.run_notebooks

    def run_then_fill(*args, **kwargs):  # the notebooks run; then other clients take every connection slot
        unwritten = real_run(*args, **kwargs)
        while True:
            try:
                held.append(psycopg.connect(host=str(server.folder), port=server.port, user="postgres",
                                            dbname="postgres"))
            except psycopg.OperationalError:
                return unwritten
    monkeypatch.setattr(pipeline, "run_notebooks", run_then_fill)
    try:
        with pytest.raises(gradebook.GradebookError) as refused:
            pipeline.grade(None, tmp_path / "graded", course=course)
    finally:
        for connection in held:
            connection.close()
    message = str(refused.value)
    assert len(held) >= 40 and "has no connection left for this run" in message, message
    assert "max_connections" in message
    assert f"The 2 submission(s) this run graded are kept in {tmp_path / 'graded' / 'results'}: a re-run only writes " \
           "them into the gradebook, and no notebook runs again." in message
    monkeypatch.setattr(pipeline, "run_notebooks", real_run)
    rows = pipeline.grade(None, tmp_path / "graded", course=course)
    summary = (tmp_path / "graded" / "summary.txt").read_text()
    assert "graded 0 submission(s)" in summary and "(2 unchanged, reused)" in summary, summary
    assert {r.student: r.score for r in rows if r.task == gradebook.TOTAL} == {"ada": 2.0, "bob": 0.0}


def test_a_server_stopped_right_after_the_commit_is_not_said_to_have_written_nothing(server, tmp_path, monkeypatch):
    from autograder.grader import pipeline
    course = class_on(server, tmp_path, "stopped")
    real_write = gradebook.write

    def write_then_stop(*args, **kwargs):  # the run's commit goes through; then PostgreSQL stops
        written = real_write(*args, **kwargs)
        server.halt()
        return written
    monkeypatch.setattr(gradebook, "write", write_then_stop)
    try:
        with pytest.raises(gradebook.GradebookError) as stopped:
            pipeline.grade(None, tmp_path / "graded", course=course)
    finally:
        server.resume()
    message = str(stopped.value)
    assert "this run's grades are in the gradebook" in message and "its commit of 2 submission(s) went through" \
        in message, message
    assert "Nothing was written" not in message and "as before" not in message
    from nbgrader.api import Gradebook
    with Gradebook(course.db_url, course.course_id) as book:  # and they are
        assert sorted(s.student_id for s in book.find_assignment(A).submissions) == ["ada", "bob"]
        assert book.find_submission(A, "ada").score == 2.0
    monkeypatch.setattr(gradebook, "write", real_write)
    database.forget()
    rows = pipeline.grade(None, tmp_path / "graded", course=course)
    assert {r.student: r.score for r in rows if r.task == gradebook.TOTAL} == {"ada": 2.0, "bob": 0.0}


# ---- Ctrl-C ----------------------------------------------------------------------------------------------------

def _as_a_terminal_starts_it() -> None:
    """SIGINT at its default in the grader's process, as a shell with job control starts a command (a background job
    of a shell without it, such as `make test ... &`, starts with SIGINT ignored, and Python then keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_forked_child_of_the_grader_ignores_ctrl_c_from_its_first_instruction():
    from autograder.forked import Child, call_in_child
    before = signal.getsignal(signal.SIGINT)

    def disposition() -> bool:
        return signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert call_in_child(disposition, 30) is True

    def slow() -> str:
        time.sleep(1.0)
        return "answered"
    child = Child(slow)
    os.kill(child.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches every process of the group
    while not child.done:
        child.pump()
    assert child.answer() == "answered"
    assert signal.getsignal(signal.SIGINT) is before  # the grader's own stays


def test_the_zygote_is_out_of_the_terminals_group_and_only_its_starter_stops_it():
    from autograder.forked import call_in_child
    from autograder.grader.notebooks import Zygote
    zygote = Zygote(walled=[REPO], preload=[])
    try:
        assert os.getpgid(zygote.process.pid) != os.getpgrp()
        call_in_child(lambda: zygote.close(), 30)  # a forked copy of the grader, unwinding: the zygote lives on
        assert zygote.process.poll() is None
    finally:
        zygote.close()
    assert zygote.process.poll() is not None


def test_ctrl_c_stops_the_run_promptly_and_says_it_was_interrupted(tmp_path):
    """Ctrl-C (SIGINT to the grader's whole process group, as a terminal sends it) while two workers grade and more
    wait: the run stops within seconds, says so, grades nobody NOT GRADED, writes nothing to the gradebook, exits
    130; a re-run grades the class."""
    students = {f"s{i:02d}": "import time; time.sleep(2); return 2 * x" for i in range(8)}
    make_class(tmp_path, students)
    run = grade_command(tmp_path, "--workers", "2", wait=False, start_new_session=True,
                        preexec_fn=_as_a_terminal_starts_it)
    results = tmp_path / "graded" / "results"
    deadline = time.monotonic() + 240
    while not (results.is_dir() and any(results.glob("*/*.json"))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert run.poll() is None, run.communicate()
    os.killpg(run.pid, signal.SIGINT)
    sent = time.monotonic()
    out, err = run.communicate(timeout=120)
    stopped_in = time.monotonic() - sent
    print(f"\nCtrl-C: the run stopped {stopped_in:.2f} s after SIGINT")
    assert run.returncode == 130, out + err
    assert stopped_in < 10, stopped_in
    assert "error: interrupted (Ctrl-C); the run stopped" in err and "are kept, and a re-run reuses them" in err, err
    assert "NOT GRADED" not in out + err and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    from nbgrader.api import Gradebook
    course = Course.load(tmp_path)
    with Gradebook(course.db_url, course.course_id) as book:
        assert book.find_assignment(A).submissions == []
    again = grade_command(tmp_path, "--workers", "2")
    assert again.returncode == 0, again.stderr
    assert set(totals(tmp_path / "graded").values()) == {"2 "}
