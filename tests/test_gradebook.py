"""The gradebook as the grader's record, on the tiny course (tests/tiny_course.py): manual grading, timestamps and
late penalties, readable notes, a locked or corrupt database, LMS imports and extensions."""
from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.grade import grade
from autograder.grader.feedback import render
from autograder.limits import load_limits
from autograder.outcome import CellKind, CellOutcome, Failure
from tests import tiny_course, warm

A = tiny_course.ASSIGNMENT
REPO = Path(__file__).resolve().parent.parent
ON_TIME = "2026-01-05 12:00:00.000000 UTC"
DUE = "2026-01-06 12:00:00 UTC"
LIMITS = load_limits(overrides=["cell_seconds=3", "notebook_seconds=60", "memory_mib=1024"])
RED = "\x1b[31mred text\x1b[0m"
WORK = {  # student -> (answers, timestamp.txt or None for none)
    "ok": (tiny_course.answers(double=f"print({RED!r}); return 2 * x"), ON_TIME),
    "syntax": (tiny_course.answers(double="return (2 * x"), ON_TIME),
    "slow": (tiny_course.answers(double="while True: pass"), ON_TIME),
    "crash": (tiny_course.answers(double="import os; os._exit(3)"), ON_TIME),
    "blank": ({}, ON_TIME),
    "nots": (tiny_course.answers(), None),
    "badts": (tiny_course.answers(), "the day before yesterday"),
    "late": (tiny_course.answers(), "2026-01-08 09:00:00.000000 UTC"),  # 1.9 days late: 2 started days, 20%
}


def write_class(course: Path, release: nbformat.NotebookNode, work: dict) -> None:
    for student, (filled, timestamp) in work.items():
        folder = course / "submitted" / student / A
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(tiny_course.submission(release, filled), folder / f"{A}.ipynb")
        if timestamp is not None:
            (folder / "timestamp.txt").write_text(timestamp)


def cli(course: Path, *args: str) -> subprocess.CompletedProcess:
    return warm.run([sys.executable, "-m", "autograder.grade", "--course", str(course), "--limit",
                           "cell_seconds=3", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def grades_in(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return sorted(con.execute("select notebook_id, cell_id, auto_score, manual_score, needs_manual_grade from grade"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tiny_course.make_course(tmp_path_factory.mktemp("tiny"), db_url=None)
    config = root / "nbgrader_config.py"  # a short busy timeout keeps the locked-database test quick
    config.write_text(config.read_text().replace("gradebook.db'", "gradebook.db?timeout=1'"))
    course = Course.load(root)
    assert course.api().generate_assignment(A, force=True, create=True)["success"]
    release = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
    from nbgrader.api import Gradebook
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_assignment(A, duedate=DUE)
        gb.add_student("absent")
    write_class(root, release, WORK)
    before = digest(root / "submitted")
    rows = grade(None, root / "graded", limits=LIMITS, course=course)
    shutil.copytree(root / "graded" / "results", root / "results-as-graded")  # for runs that need no notebook run
    return dict(root=root, course=course, release=release, rows=rows, before=before,
                summary=(root / "graded" / "summary.txt").read_text(),
                csv=(root / "graded" / "grades.csv").read_text())


def row(tiny, student, task="TOTAL"):
    return next(r for r in tiny["rows"] if r.student == student and r.task == task)


def test_manual_cells_keep_their_points_and_wait_for_a_person(tiny):
    assert row(tiny, "ok").max_score == tiny_course.MAX_SCORE  # 2 automatic + 4 + 3 + 5 by hand
    assert row(tiny, "ok").score == tiny_course.AUTO_POINTS
    for cell in ("explain", "plot", "style"):
        assert row(tiny, "ok", cell).score is None and "manual grading" in row(tiny, "ok", cell).note
    assert row(tiny, "blank", "explain").score == 0 and row(tiny, "blank", "style").score is None
    assert "needs manual grading (formgrader): 00_tiny:" in tiny["summary"]
    assert "cells explain, plot, style" in tiny["summary"]
    # issue #62: the quick feedback page lists what a person grades, and says the grade waits for it
    ok = (tiny["root"] / "graded" / "feedback" / "ok" / A / f"{A}.html").read_text()
    assert "Task 2: explain (4 points)</td><td>– / 4</td><td>waits for a person" in ok, ok
    assert "which waits for a person's score of 12 points" in ok  # explain 4, plot 3, style 5
    blank = (tiny["root"] / "graded" / "feedback" / "blank" / A / f"{A}.html").read_text()
    assert "Task 2: explain (4 points)</td><td>0 / 4</td><td>no response" in blank, blank


def test_roster_students_without_a_submission_score_zero(tiny):
    absent = row(tiny, "absent")
    assert (absent.score, absent.max_score, absent.note) == (0, tiny_course.MAX_SCORE, "no submission")
    assert "no submission: 00_tiny: absent" in tiny["summary"]


def test_timestamps_give_late_penalties_and_missing_ones_are_reported(tiny):
    late = row(tiny, "late")
    assert late.late_penalty == pytest.approx(0.4) and late.score == pytest.approx(1.6)  # 20% of 2 points
    assert row(tiny, "ok").late_penalty == 0
    assert "no submission time for nots/00_tiny (no timestamp.txt): lateness not checked" in tiny["summary"]
    assert "badts/00_tiny (timestamp.txt is unreadable ('the day before yesterday'))" in tiny["summary"]
    assert "lateness not checked" in row(tiny, "badts").note and row(tiny, "badts").late_penalty == 0


def test_failures_are_explained_per_task(tiny):
    note = row(tiny, "syntax", "test_double").note
    assert note.startswith("answer cell 'double': syntax error: SyntaxError: ") and note.endswith("(line 2)"), note
    assert row(tiny, "slow", "test_double").note.startswith("the test timed out: the cell ran longer than 3 s")
    assert "crashed: the notebook process exited with code 3" in row(tiny, "crash", "test_double").note
    assert row(tiny, "ok", "test_double").note == ""


def test_autograded_notebooks_have_outputs_metadata_and_no_ansi(tiny):
    path = tiny["root"] / "autograded" / "ok" / A / f"{A}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    assert by_id["double"].source.startswith("def double(x):\n    print(")
    assert by_id["test_double"].outputs[0]["text"].strip().endswith("Task 1: visible tests passed.")
    assert "### BEGIN HIDDEN TESTS" in by_id["test_double"].source  # as nbgrader's autograded/ (feedback hides it)
    assert by_id["explain"].source == tiny_course.answers()["explain"]
    assert by_id["test_double"].metadata.nbgrader["points"] == 2
    assert "red text" in by_id["test_double"].outputs[0]["text"] and "\x1b" not in path.read_text()
    assert (tiny["root"] / "autograded" / "ok" / A / "timestamp.txt").read_text() == ON_TIME
    crash = nbformat.read(tiny["root"] / "autograded" / "crash" / A / f"{A}.ipynb", as_version=4)
    error = next(o for c in crash.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error")
    assert error.ename == "NotebookCrashed"
    page = (tiny["root"] / "graded" / "feedback" / "ok" / A / f"{A}.html").read_text()
    assert "Task 1: double a number (2 points)" in page and "\x1b" not in page and "red text" in page


def test_the_planner_statistics_are_fresh_after_a_run(tiny):
    """SQLite keeps ANALYZE's statistics in sqlite_stat1 (gradebook.refresh_statistics; PostgreSQL: test_postgres)."""
    with sqlite3.connect(tiny["root"] / "gradebook.db") as con:
        tables = {row[0] for row in con.execute("SELECT tbl FROM sqlite_stat1")}
    assert {"grade", "submitted_notebook", "submitted_assignment"} <= tables, tables


def test_submissions_are_only_read(tiny):
    assert digest(tiny["root"] / "submitted") == tiny["before"]


def test_feedback_page_names_tasks_and_explains_failures():
    cells = (CellOutcome(CellKind.ANSWER, "f", 0, "x", False, RED, "the cell ran longer than 5 s and was stopped", (), (), None,
                         failure=Failure.TIMEOUT),
             CellOutcome(CellKind.TEST, "test_f", 2, "assert f()", False, "", "not run: the notebook ran past its 300 s limit",
                         (), (), None, failure=Failure.NOT_RUN))
    page = render("s", "a", "nb", cells, [], {"test_f": "Task 1: f (2 points)"},
                  {"test_f": "answer cell 'f': timed out: the cell ran longer than 5 s and was stopped"})
    assert "Task 1: f (2 points)" in page and "timed out" in page and "\x1b" not in page and "red text" in page


def test_a_regrade_keeps_manual_scores_and_flags_changed_work(tiny, tmp_path):
    """A manual score survives a re-grade; when the submission itself changes it is kept but flagged for review."""
    from nbgrader.api import Gradebook
    course = tiny["course"]
    with Gradebook(course.db_url, course.course_id) as gb:
        for student in ("ok", "late"):
            g = gb.find_grade("explain", A, A, student)
            g.manual_score, g.needs_manual_grade = 3.0, False
            g = gb.find_grade("test_double", A, A, student)
            g.extra_credit = 1.0
        gb.db.commit()
    folder = tiny["root"] / "submitted" / "late" / A
    (folder / "timestamp.txt").write_text("2026-01-06 11:00:00.000000 UTC")  # a new, on-time submission
    rows = grade(None, tmp_path / "graded", limits=LIMITS, fresh=True, course=course)
    summary = (tmp_path / "graded" / "summary.txt").read_text()
    assert f"late {A}: resubmitted after a hand grade" in summary and f"ok {A}: resubmitted" not in summary
    totals = {r.student: r.note for r in rows if r.task == "TOTAL"}
    assert "resubmitted after a hand grade" in totals["late"] and "resubmitted" not in totals["ok"]
    with Gradebook(course.db_url, course.course_id) as gb:
        assert gb.find_submission_notebook(A, A, "late").flagged  # formgrader shows nbgrader's flag
        assert not gb.find_submission_notebook(A, A, "ok").flagged
        ok = gb.find_grade("explain", A, A, "ok")
        assert (ok.manual_score, ok.needs_manual_grade) == (3.0, False)
        assert gb.find_grade("test_double", A, A, "ok").extra_credit == 1.0
        late = gb.find_grade("explain", A, A, "late")
        assert (late.manual_score, late.needs_manual_grade) == (3.0, True)  # the work changed: look again
        assert gb.find_submission(A, "late").late_submission_penalty == 0
    (folder / "timestamp.txt").write_text(WORK["late"][1])


def test_a_locked_gradebook_is_a_clear_error_and_nothing_changes(tiny):
    root = tiny["root"]
    before = grades_in(root / "gradebook.db"), digest(root / "autograded"), (root / "graded" / "grades.csv").read_bytes()
    holder = sqlite3.connect(root / "gradebook.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer: reads still work, writes wait and give up
    try:
        run = cli(root, "--fresh", "--out", str(root / "graded"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.returncode == 2, run.stdout + run.stderr
    assert "is locked by another process" in run.stderr and "Nothing was written" in run.stderr
    after = grades_in(root / "gradebook.db"), digest(root / "autograded"), (root / "graded" / "grades.csv").read_bytes()
    assert after == before


def test_a_corrupt_gradebook_is_a_clear_error_and_is_left_as_it_was(tmp_path):
    root = tiny_course.make_course(tmp_path / "course")
    (root / "gradebook.db").write_bytes(b"this is not a database " * 100)
    (root / "submitted" / "ann" / A).mkdir(parents=True)
    run = cli(root, "--out", str(root / "graded"))
    assert run.returncode == 2
    assert "is not a readable database" in run.stderr and "was not changed" in run.stderr
    assert (root / "gradebook.db").read_bytes() == b"this is not a database " * 100
    assert not (root / "autograded").exists() and not (root / "graded" / "grades.csv").exists()


def test_lms_download_is_imported_by_roster_and_never_overwrites(tiny, tmp_path):
    from nbgrader.api import Gradebook

    from autograder.lms_import import import_download
    course = tiny["course"]
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_student("jsmith", first_name="Jane", last_name="Smith", email="jane.smith@example.org")
    notebook = nbformat.writes(tiny_course.submission(tiny["release"], tiny_course.answers()))
    download = tmp_path / "download"
    download.mkdir()
    files = {"smithjane_LATE_12345_67890_00_tiny-1.ipynb": notebook,   # Canvas's sortable name, a re-upload
             "ok_222_333_00_tiny.ipynb": notebook,                       # the id; ok already has another file
             "mallory_1_2_00_tiny.ipynb": notebook,                      # on no roster
             "absent_1_2_notes.txt": "hello",                            # not a notebook of the assignment
             "00_tiny.ipynb": notebook}                                  # not a Canvas name
    for name, text in files.items():
        (download / name).write_text(text)
    submitted = tmp_path / "submitted"
    shutil.copytree(tiny["root"] / "submitted" / "ok", submitted / "ok")
    ok_before = (submitted / "ok" / A / f"{A}.ipynb").read_bytes()
    report = import_download(course, download, submitted)
    lines = "\n".join(report.lines())
    assert report.imported == [f"jsmith/{A}/{A}.ipynb <- smithjane_LATE_12345_67890_00_tiny-1.ipynb"]
    assert (submitted / "jsmith" / A / f"{A}.ipynb").read_text() == notebook
    assert not (submitted / "jsmith" / A / "timestamp.txt").exists()
    assert (submitted / "ok" / A / f"{A}.ipynb").read_bytes() == ok_before and report.kept
    assert "'mallory' matches no student on the roster" in lines and "absent_1_2_notes.txt" in lines
    assert "00_tiny.ipynb: not a Canvas file name" in lines and "LATE" in lines and "jsmith/00_tiny" in lines
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:  # the same as a .zip: all there already
        for name, text in files.items():
            archive.writestr(f"sub/{name}", text)
    again = import_download(course, tmp_path / "download.zip", submitted)
    assert again.imported == [] and again.unchanged == [f"jsmith/{A}/{A}.ipynb <- smithjane_LATE_12345_67890_00_tiny-1.ipynb"]


def test_lms_import_finds_students_by_canvas_user_id_before_names(tiny, tmp_path):
    """Issue #49 item 8: the Canvas user id in the file name decides (a middle name in Canvas, two students of one
    name); a name that fits two students without Canvas ids, and a Canvas id on two roster rows, are refused."""
    from nbgrader.api import Gradebook

    from autograder.lms_import import import_download
    course = tiny["course"]
    with Gradebook(course.db_url, course.course_id) as gb:
        for student, first, last, canvas_id in (("lee1", "Ann", "Lee", "7001"), ("lee2", "Ann", "Lee", "7002"),
                                                ("mayr", "Otto", "Mayr", "7003"), ("kim1", "Jo", "Kim", None),
                                                ("kim2", "Jo", "Kim", None), ("twin1", "Al", "Twin", "7009"),
                                                ("twin2", "Bo", "Twin", "7009")):
            gb.update_or_create_student(student, first_name=first, last_name=last, lms_user_id=canvas_id)
    notebook = nbformat.writes(tiny_course.submission(tiny["release"], tiny_course.answers()))
    download = tmp_path / "download"
    download.mkdir()
    files = ["leeann_7002_1_00_tiny.ipynb",            # one of two Ann Lees: the id says which
             "leeann_7001_2_00_tiny.ipynb",            # and the other
             "mayrottomaria_7003_3_00_tiny.ipynb",     # Canvas has a middle name the roster lacks
             "leeann_7999_4_00_tiny.ipynb",            # the name of two students, an id of neither
             "kimjo_7100_5_00_tiny.ipynb",             # two Jo Kims without Canvas ids: ambiguous
             "twinal_7009_6_00_tiny.ipynb"]            # a Canvas id two roster rows share
    for name in files:
        (download / name).write_text(notebook)
    submitted = tmp_path / "submitted"
    report = import_download(course, download, submitted)
    assert sorted(report.imported) == sorted([f"lee2/{A}/{A}.ipynb <- leeann_7002_1_00_tiny.ipynb",
                                              f"lee1/{A}/{A}.ipynb <- leeann_7001_2_00_tiny.ipynb",
                                              f"mayr/{A}/{A}.ipynb <- mayrottomaria_7003_3_00_tiny.ipynb"])
    skipped = {line.split(":")[0]: line for line in report.unmatched}
    assert set(skipped) == {"leeann_7999_4_00_tiny.ipynb", "kimjo_7100_5_00_tiny.ipynb", "twinal_7009_6_00_tiny.ipynb"}
    assert "whose Canvas user id on the roster is 7001, 7002, not 7999" in skipped["leeann_7999_4_00_tiny.ipynb"]
    assert "matches kim1, kim2" in skipped["kimjo_7100_5_00_tiny.ipynb"]
    assert "ambiguous" in skipped["kimjo_7100_5_00_tiny.ipynb"] and "lms_user_id" in skipped["kimjo_7100_5_00_tiny.ipynb"]
    assert "Canvas user id 7009 is given to 2 students on the roster (twin1, twin2)" in skipped["twinal_7009_6_00_tiny.ipynb"]
    assert not report.complete
    assert sorted(p.name for p in submitted.iterdir()) == ["lee1", "lee2", "mayr"]  # nothing for the refused ones


def test_a_due_date_already_past_for_everyone_is_warned_at_release_and_at_grading(tmp_path):
    """Issue #49 item 7: the manual's example date pasted after it passed scored every submission as late, silently.
    `nbgrader release_assignment` (our exchange's release) warns when the due date, extensions included, has passed
    for every student, and a grading run warns when every submission with a time was late; a date to come is quiet."""
    import datetime

    from nbgrader.api import Gradebook

    from autograder.due_dates import passed_for_everyone
    root = tiny_course.make_course(tmp_path / "course", exchange=tmp_path / "exchange")
    course = Course.load(root)
    assert course.api().generate_assignment(A, force=True, create=True)["success"]
    with Gradebook(course.db_url, course.course_id) as gb:
        gb.update_or_create_assignment(A, duedate="2026-02-01 17:00:00 UTC")  # the manual's example, once
        gb.add_student("ada")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    released = warm.run([str(Path(sys.executable).parent / "nbgrader"), "release_assignment", A], cwd=root,
                              env=env, capture_output=True, text=True, timeout=120)
    assert released.returncode == 0, released.stderr
    assert f"WARNING: the due date of {A}, 2026-02-01 17:00:00 UTC, passed" in released.stderr, released.stderr
    assert "for every student: every submission will be charged as late" in released.stderr
    release = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    write_class(root, release, {"ada": (tiny_course.answers(), f"{now.isoformat(' ')} UTC")})
    grade(None, root / "graded", limits=LIMITS, course=course)
    summary = (root / "graded" / "summary.txt").read_text()
    assert f"WARNING: all 1 submission(s) of {A} with a time are late" in summary, summary
    with Gradebook(course.db_url, course.course_id) as gb:
        assignment = gb.find_assignment(A)
        assert passed_for_everyone(assignment, now) is not None
        gb.grant_extension(A, "ada", days=400)  # one student's extension reaches past now: not everyone's
        assert passed_for_everyone(gb.find_assignment(A), now) is None
        gb.update_or_create_assignment(A, duedate=now + datetime.timedelta(days=14))
        assert passed_for_everyone(gb.find_assignment(A), now) is None


def test_extensions_live_in_the_gradebook(tiny):
    from autograder.deadlines import extend, show
    from autograder.gradebook import GradebookError
    course = tiny["course"]
    line = extend(course, A, "absent", days=2)
    assert "due 2026-01-08 12:00:00 UTC" in line
    assert any("absent: extension 2 days" in text for text in show(course, A))
    out = tiny["root"] / "graded-after-extension"  # the fixture's results: no notebook is run again
    shutil.copytree(tiny["root"] / "results-as-graded", out / "results")
    rows = grade(None, out, limits=LIMITS, course=course)
    assert next(r for r in rows if r.student == "absent" and r.task == "TOTAL").note == "no submission"
    with pytest.raises(GradebookError, match="not on the roster"):
        extend(course, A, "nobody", days=1)


def test_a_new_gradebook_gets_the_schema_version_nbgrader_would_stamp():
    """autograder.database reads nbgrader's migration head in-process (for the grader's gradebook and every gradebook
    nbgrader's API creates through Course.api); nbgrader's own way runs the `alembic` command. Both must name the same
    revision, or a gradebook we create would be migrated wrongly by a later nbgrader."""
    from autograder.database import alembic_head
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    theirs = subprocess.run([sys.executable, "-c", "from nbgrader.api import get_alembic_version as v; print(v())"],
                            env=environment, capture_output=True, text=True, check=True).stdout.strip()
    assert theirs and alembic_head() == theirs


def test_a_not_graded_note_is_written_once_and_read_back_as_it_is(tiny):
    """The pipeline makes a NOT GRADED row's note once (`not_graded_note`); report and canvas hand `rows` the whole note
    of an earlier grades.csv, which it shows as it is: the status is the row's Status, never found in the text."""
    from autograder.gradebook import RunNotes, not_graded_note, rows
    from autograder.outcome import Status
    note = not_graded_note("the notebook process died")
    assert note == "NOT GRADED: the notebook process died"
    run = RunNotes(not_graded={("absent", A): note})
    [total] = [r for r in rows(tiny["course"], ["absent"], [A], run) if r.task == "TOTAL"]
    assert (total.status, total.note, total.score) == (Status.NOT_GRADED, note, None)


def test_a_submission_without_scores_counts_as_handed_in_only_in_the_run_given_it(tiny):
    """RunNotes (issue #63): a gradebook submission with no score at all (here an extension's record; also work whose
    every cell waits for a person) is 'no submission' where no run was given it (the report, Canvas), and is graded,
    with the run's note on its total, in the run that was given it."""
    from autograder.deadlines import extend
    from autograder.gradebook import TOTAL, RunNotes, rows
    from autograder.outcome import Status
    extend(tiny["course"], A, "absent", days=2)

    def total(run: RunNotes):
        return next(r for r in rows(tiny["course"], ["absent"], [A], run) if r.task == TOTAL)
    assert (total(RunNotes()).status, total(RunNotes()).note) == (Status.NO_SUBMISSION, "no submission")
    given = total(RunNotes(submitted=frozenset({("absent", A)}), notes={("absent", A, TOTAL): "a note"}))
    assert (given.status, given.score, given.note) == (Status.GRADED, 0.0, "a note")
