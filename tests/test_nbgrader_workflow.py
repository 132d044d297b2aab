"""One assignment through nbgrader's own commands on a local exchange, graded by ours, with the gradebook as record.

Instructor: `nbgrader db student import`, `generate_assignment`, `release_assignment`, a due date with
`nbgrader db assignment add --duedate`, an extension with `python -m autograder.deadlines extend`. Five students
(each with a folder and a cache of their own) `fetch_assignment`; alice and bob `submit` on time, carol late, dave
late but within his extension, erin never; frank's work comes from a Canvas download (`python -m
autograder.lms_import`), so it has no submission time and cannot go back through the exchange. Then `nbgrader
collect`, our `python -m autograder.grade`, a score for
carol's written answer set through nbgrader's Gradebook API, a re-grade (which keeps it and updates her late
penalty), `generate_feedback`, `release_feedback`, carol's `fetch_feedback`, and `nbgrader export`.
The assignment is tests/tiny_course.py's: 2 points graded automatically, 12 by hand, 14 in all.
"""
from __future__ import annotations

import csv
import datetime
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from tests import tiny_course, warm

A = tiny_course.ASSIGNMENT
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]
EXCHANGE_STUDENTS = STUDENTS[:5]
COURSE_ID = "cs336-primitives"
BIN = Path(sys.executable).parent


def run(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = warm.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def run_all(commands: list[tuple[list[str], Path]], env: dict) -> None:
    """Independent commands (one per student) side by side; each must succeed."""
    running = [(args, subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)) for args, cwd in commands]
    for args, process in running:
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"{' '.join(args)} failed:\n{output}"


def nbgrader(*args: str) -> list[str]:
    return [str(BIN / "nbgrader"), *args]


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("workflow")
    course, exchange = tmp / "course", tmp / "exchange"
    exchange.mkdir()
    tiny_course.make_course(course, exchange=exchange)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"), "JUPYTER_DATA_DIR": str(tmp / "jupyter-data")}
    homes = {}
    for student in EXCHANGE_STUDENTS:
        home = homes[student] = tmp / "students" / student
        home.mkdir(parents=True)
        (home / "nbgrader_config.py").write_text(
            f"c = get_config()\nc.CourseDirectory.course_id = {COURSE_ID!r}\nc.Exchange.root = {str(exchange)!r}\n"
            f"c.Exchange.path_includes_course = True\nc.Exchange.timezone = 'UTC'\n"
            f"c.Exchange.cache = {str(home / 'cache')!r}\n")
    (course / "students.csv").write_text("id,first_name,last_name,email\n" + "".join(
        f"{s},{s.title()},Example,{s}@example.org\n" for s in STUDENTS))

    started = time.monotonic()
    run(nbgrader("db", "student", "import", "students.csv"), course, env)
    run(nbgrader("generate_assignment", A), course, env)
    run(nbgrader("release_assignment", A), course, env)
    run_all([(nbgrader("fetch_assignment", A), homes[s]) for s in EXCHANGE_STUDENTS], env)

    release = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    work = {"alice": tiny_course.answers(),
            "bob": tiny_course.answers(double="return x + 2", explain="YOUR ANSWER HERE"),
            "carol": tiny_course.answers(),
            "dave": tiny_course.answers()}
    for student, filled in work.items():
        fetched = homes[student] / COURSE_ID / A / f"{A}.ipynb"  # Exchange.path_includes_course
        nbformat.write(tiny_course.submission(nbformat.read(fetched, as_version=4), filled), fetched)
    run_all([(nbgrader("submit", A, f"--student={s}"), homes[s]) for s in ("alice", "bob")], env)
    due = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    time.sleep(1.5)
    run_all([(nbgrader("submit", A, f"--student={s}"), homes[s]) for s in ("carol", "dave")], env)
    run(nbgrader("db", "assignment", "add", A, f"--duedate={due.isoformat(' ')} UTC"), course, env)
    run([sys.executable, "-m", "autograder.deadlines", "extend", A, "dave", "--days", "1"], course, env)
    run(nbgrader("collect", A), course, env)
    canvas = tmp / "canvas"
    canvas.mkdir()
    nbformat.write(tiny_course.submission(release, tiny_course.answers(double="return 3 * x")),
                   canvas / f"examplefrank_1001_2002_{A}.ipynb")
    imported = run([sys.executable, "-m", "autograder.lms_import", str(canvas), "--assignment", A], course, env)

    grade = [sys.executable, "-m", "autograder.grade", "--limit", "cell_seconds=20"]
    first = run(grade, course, env)  # in the course folder: its nbgrader_config.py is found as nbgrader finds it
    from nbgrader.api import Gradebook
    db_url = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(db_url, COURSE_ID) as gb:
        before = {s: gb.find_submission(A, s).late_submission_penalty for s in ("carol", "dave")}
        grade_cell = gb.find_grade("explain", A, A, "carol")
        grade_cell.manual_score = 4.0
        grade_cell.needs_manual_grade = False
        gb.db.commit()
    second = run(grade, course, env)  # a re-grade: keeps the manual score, updates the late penalty with it

    run(nbgrader("generate_feedback", A), course, env)
    released = run(nbgrader("release_feedback", A), course, env)
    fetched_feedback = run(nbgrader("fetch_feedback", A, "--student=carol"), homes["carol"], env)
    run(nbgrader("export", "--to", "export.csv"), course, env)
    seconds = time.monotonic() - started
    with open(course / "export.csv") as f:
        exported = {row["student_id"]: row for row in csv.DictReader(f)}
    with open(course / "graded" / "grades.csv") as f:
        ours = list(csv.DictReader(f))
    return dict(course=course, homes=homes, first=first, second=second, exported=exported, ours=ours, before=before,
                imported=imported, released=released, exchange=exchange,
                db_url=db_url, fetched_feedback=fetched_feedback, release=release, seconds=seconds)


def test_export_has_one_row_per_student_with_totals_and_late_penalty(workflow):
    print(f"\nnbgrader workflow: {workflow['seconds']:.1f} s (shown, not asserted: timings live in bench/)")
    rows = workflow["exported"]
    assert sorted(rows) == STUDENTS
    assert all(float(r["max_score"]) == tiny_course.MAX_SCORE for r in rows.values())
    expect = {  # raw score (automatic + manual), late penalty: 10% per started day late of the notebook's score
        "alice": (2.0, 0.0),   # tests pass; the manual answers wait for a person
        "bob": (0.0, 0.0),     # wrong answer; his untouched written answer scored 0 ("No response.")
        "carol": (6.0, 0.6),   # 2 automatic + 4 by hand, one day late: 10% of 6
        "dave": (2.0, 0.0),    # as late as carol, but within his extension
        "erin": (0.0, 0.0),    # never submitted
        "frank": (0.0, 0.0),   # from the LMS: wrong answer, no submission time
    }
    for student, (raw, penalty) in expect.items():
        row = rows[student]
        assert float(row["raw_score"]) == pytest.approx(raw), (student, row)
        assert float(row["late_submission_penalty"] or 0) == pytest.approx(penalty), (student, row)
        assert float(row["score"]) == pytest.approx(raw - penalty), (student, row)
    assert rows["erin"]["timestamp"] == "" and rows["frank"]["timestamp"] == "" and rows["carol"]["timestamp"]


def test_the_late_penalty_followed_the_manual_score(workflow):
    """Graded before the manual score, carol's penalty was 10% of 2; the re-grade made it 10% of 6."""
    assert workflow["before"]["carol"] == pytest.approx(0.2)
    assert not workflow["before"]["dave"]
    assert "carol 00_tiny" in workflow["second"].stderr and "late penalty 0.6" in workflow["second"].stderr


def test_regrade_keeps_the_manual_score(workflow):
    from nbgrader.api import Gradebook
    with Gradebook(workflow["db_url"], COURSE_ID) as gb:
        grade = gb.find_grade("explain", A, A, "carol")
        assert grade.manual_score == 4.0 and grade.needs_manual_grade is False
        assert gb.find_grade("test_double", A, A, "carol").auto_score == 2.0
        assert gb.find_grade("explain", A, A, "alice").needs_manual_grade  # still waiting for a person
        assert gb.find_grade("explain", A, A, "bob").auto_score == 0.0
        assert gb.find_comment("explain", A, A, "bob").auto_comment == "No response."


def test_our_csv_has_totals_no_submission_and_manual_scores(workflow):
    rows = {(r["student"], r["task"]): r for r in workflow["ours"]}
    assert rows[("erin", "TOTAL")]["note"] == "no submission" and float(rows[("erin", "TOTAL")]["score"]) == 0
    assert float(rows[("erin", "TOTAL")]["max_score"]) == tiny_course.MAX_SCORE
    carol = rows[("carol", "TOTAL")]
    assert float(carol["score"]) == pytest.approx(5.4) and float(carol["late_penalty"]) == pytest.approx(0.6)
    assert rows[("carol", "explain")]["score"] == "4" and "by hand" in rows[("carol", "explain")]["note"]
    assert rows[("alice", "explain")]["score"] == "" and "manual grading" in rows[("alice", "explain")]["note"]
    assert rows[("alice", "test_double")]["title"] == "Task 1: double a number (2 points)"
    summary = (workflow["course"] / "graded" / "summary.txt").read_text()
    assert "needs manual grading (formgrader): 00_tiny" in summary and "no submission: 00_tiny: erin" in summary


def test_formgrader_sees_every_submission_autograded(workflow):
    """What formgrader's pages list comes from nbgrader's API on the course: all four submissions autograded."""
    from autograder.course import Course
    api = Course.load(workflow["course"]).api()
    submissions = {s["student"]: s for s in api.get_submissions(A)}
    for student in ("alice", "bob", "carol", "dave"):
        assert submissions[student]["autograded"], submissions[student]
    assert submissions["alice"]["needs_manual_grade"]
    assert "erin" not in submissions


def test_feedback_reaches_the_student_without_hidden_tests(workflow):
    found = list((workflow["homes"]["carol"] / COURSE_ID / A / "feedback").rglob(f"{A}.html"))
    assert len(found) == 1, workflow["fetched_feedback"].stdout + workflow["fetched_feedback"].stderr
    text = found[0].read_text()
    assert "double(-3)" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "Task 1: visible tests passed." in text
    bob = (workflow["course"] / "feedback" / "bob" / A / f"{A}.html").read_text()
    assert "No response." in bob and "\x1b[" not in bob
    # issue #62: the written answer's rubric is for the person grading: in the autograded notebook Formgrader shows,
    # never in the release or the feedback
    assert tiny_course.RUBRIC in (workflow["course"] / "autograded" / "carol" / A / f"{A}.ipynb").read_text()
    assert tiny_course.RUBRIC not in (workflow["course"] / "release" / A / f"{A}.ipynb").read_text()
    assert tiny_course.RUBRIC not in text and "MARK SCHEME" not in text and tiny_course.RUBRIC not in bob


def test_lms_import_joins_the_class_and_is_reported(workflow):
    assert f"frank/{A}/{A}.ipynb <- examplefrank_1001_2002_{A}.ipynb" in workflow["imported"].stdout
    summary = (workflow["course"] / "graded" / "summary.txt").read_text()
    assert "no submission time for frank/00_tiny (no timestamp.txt): lateness not checked" in summary
    assert (workflow["course"] / "feedback" / "frank" / A / f"{A}.html").is_file()


def test_release_feedback_skips_only_what_the_exchange_cannot_deliver(workflow):
    assert "Not released" in workflow["released"].stderr and "frank" in workflow["released"].stderr
    released = list((workflow["exchange"] / COURSE_ID / "feedback").glob("*.html"))
    assert len(released) == 4  # alice, bob, carol, dave: one notebook each
    # issue #62: each page is logged under the name it has in the exchange, not nbgrader's temporary one
    logged = re.findall(r"Feedback released to: (\S+)", workflow["released"].stderr)
    assert sorted(Path(name) for name in logged) == sorted(released), logged


def test_nothing_overwrote_a_submission(workflow):
    course = workflow["course"]
    for student in ("alice", "bob", "carol", "dave"):
        submitted = nbformat.read(course / "submitted" / student / A / f"{A}.ipynb", as_version=4)
        fetched = nbformat.read(workflow["homes"][student] / COURSE_ID / A / f"{A}.ipynb", as_version=4)
        assert [c.source for c in submitted.cells] == [c.source for c in fetched.cells]
