"""The gradebook as the grader writes and reads it (autograder/gradebook.py) and the Canvas export read from it
(autograder/canvas.py), on the tiny course without grading a notebook: a run's results written as
`gradebook.Graded`, people's scores given through nbgrader's API. Cheap (one generated assignment, no grader run),
so that a wrong score, a late penalty or a held-back grade is caught in seconds (issue #63's mutation runs:
bench/mutants.py). Grading a class end to end is tests/test_gradebook.py and tests/test_class_report.py."""
from __future__ import annotations

import csv
import datetime
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import canvas, gradebook
from autograder.gradebook import TOTAL, Graded, RunNotes
from autograder.outcome import Autograded, Status
from tests import tiny_course
from tests.test_grading_faults import make_class

# nbgrader's own add_submission warns that SQLAlchemy's autoflush met its new rows; the rows are written all the same
pytestmark = pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")
A = tiny_course.ASSIGNMENT
DUE = datetime.datetime(2026, 1, 5, 12, 0)
STUDENTS = ["ada", "bob", "cy", "dee", "eve"]     # dee hands nothing in; eve's record holds only an extension
AUTO = {"ada": 2.0, "bob": 2.0, "cy": 0.0}
TIMES = {"ada": DUE - datetime.timedelta(hours=1),
         "bob": DUE + datetime.timedelta(days=1, minutes=2),     # two started days late: 20%
         "cy": DUE}                                              # at the due date itself: on time
BY_HAND = {"ada": {"explain": 3.25, "plot": 3.0, "style": 5.0}, "bob": {"explain": 4.0, "plot": 3.0, "style": 5.0}}
CANVAS = {"ada": "1001", "bob": "1002", "cy": "1003", "dee": "1004", "eve": "1005"}


def run_results(auto=AUTO) -> list[Graded]:
    return [Graded(s, A, TIMES[s], {A: Autograded({}, {"test_double": score}, {"test_double": None})},
                   {A: "calls subprocess"} if s == "cy" else {}) for s, score in auto.items()]


def score_by_hand(course, scores: dict[str, dict[str, float]]) -> None:
    with Gradebook(course.db_url, course.course_id) as book:
        for student, cells in scores.items():
            for notebook in book.find_submission(A, student).notebooks:
                for grade in notebook.grades:
                    if grade.name in cells:   # as Formgrader does when a person saves a score
                        grade.manual_score, grade.needs_manual_grade = cells[grade.name], False
        book.db.commit()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny course (14 points: 2 automatic, 12 by hand) with ada on time, bob a day and 2 minutes late, cy flagged
    with 0 points, dee on the roster only, eve with an extension and nothing handed in; ada's and bob's hand scores given, then the run's results written again
    (a re-grade: the penalties follow the final scores)."""
    root = tmp_path_factory.mktemp("tiny")
    course = make_class(root, {})
    with Gradebook(course.db_url, course.course_id) as book:
        book.update_or_create_assignment(A, duedate=f"{DUE:%Y-%m-%d %H:%M:%S} UTC")
        for student in STUDENTS:
            book.update_or_create_student(student, lms_user_id=CANVAS[student])
        book.add_submission(A, "eve")              # nbgrader keeps an extension on a submission record without work
        book.grant_extension(A, "eve", days=2)
    first = gradebook.write(course, run_results())
    score_by_hand(course, BY_HAND)
    again = gradebook.write(course, run_results())
    return {"course": course, "root": root, "first": first, "again": again}


def totals(rows) -> dict[str, tuple]:
    return {r.student: (r.score, r.late_penalty, r.status, r.note) for r in rows if r.task == TOTAL}


def test_a_late_submission_is_told_how_late_and_what_it_cost(tiny):
    assert tiny["first"] == ([f"bob {A}: 24.0 h after the due date -> late penalty 0.4 points"], set())
    # written again with bob's hand scores: 20% of 14 points; nobody resubmitted
    assert tiny["again"] == ([f"bob {A}: 24.0 h after the due date -> late penalty 2.8 points"], set())


def test_rows_give_each_cell_and_a_total_less_the_penalty(tiny):
    rows = gradebook.rows(tiny["course"], STUDENTS, [A])
    assert totals(rows) == {"ada": (13.25, 0.0, Status.GRADED, ""), "bob": (pytest.approx(11.2), 2.8, Status.GRADED, ""),
                            "cy": (0.0, 0.0, Status.GRADED, ""),
                            "dee": (0.0, 0.0, Status.NO_SUBMISSION, "no submission"),
                            "eve": (0.0, 0.0, Status.NO_SUBMISSION, "no submission")}
    cy = {r.task: (r.score, r.note) for r in rows if r.student == "cy" and r.task != TOTAL}
    assert cy == {"test_double": (0.0, ""), "explain": (None, "waits for manual grading (formgrader)"),
                  "plot": (None, "waits for manual grading (formgrader)"),
                  "style": (None, "waits for manual grading (formgrader)")}
    ada = {r.task: (r.score, r.max_score, r.note) for r in rows if r.student == "ada" and r.task != TOTAL}
    assert ada == {"test_double": (2.0, 2.0, ""), "explain": (3.25, 4.0, "scored by hand"),
                   "plot": (3.0, 3.0, "scored by hand"), "style": (5.0, 5.0, "scored by hand")}
    assert [r.title for r in rows if r.student == "ada"][0] == "Task 1: double a number (2 points)"


def test_a_tasks_note_is_kept_beside_what_a_person_must_do(tiny):
    notes = {("ada", A, "test_double"): "ran 3 s", ("cy", A, "explain"): "flagged", ("bob", A, TOTAL): "late"}
    rows = {(r.student, r.task): r.note for r in gradebook.rows(tiny["course"], STUDENTS, [A], RunNotes(notes=notes))}
    assert rows["ada", "test_double"] == "ran 3 s" and rows["bob", TOTAL] == "late"
    assert rows["cy", "explain"] == "waits for manual grading (formgrader); flagged"
    assert rows["ada", "explain"] == "scored by hand"


def test_a_submission_the_grader_failed_on_is_not_graded_never_no_submission(tiny):
    failed = {("dee", A): "NOT GRADED: the notebook process died", ("ada", A): "NOT GRADED: the disk was full"}
    found = totals(gradebook.rows(tiny["course"], STUDENTS, [A], RunNotes(not_graded=failed)))
    assert found["dee"] == (None, None, Status.NOT_GRADED, "NOT GRADED: the notebook process died")
    assert found["ada"] == (13.25, 0.0, Status.NOT_GRADED,
                            "NOT GRADED: the disk was full (the scores are an earlier run's)")
    assert found["bob"][2] is Status.GRADED


def test_what_the_gradebook_holds_is_what_was_written(tiny):
    course = tiny["course"]
    assert gradebook.holds(course, run_results())
    assert not gradebook.holds(course, run_results({**AUTO, "cy": 2.0}))               # another score
    moved = run_results()
    moved[0].timestamp = DUE
    assert not gradebook.holds(course, moved)                                       # another time
    assert not gradebook.holds(course, [Graded("dee", A, DUE, {})])                # no submission
    held = gradebook.recorded(course)
    assert held.submissions == {(s, A) for s in [*AUTO, "eve"]} and held.due == {A} and set(held.assignments) == {A}
    assert gradebook.roster(course) == STUDENTS


def test_the_graders_flag_reaches_formgrader_and_no_one_else_is_flagged(tiny):
    course = tiny["course"]
    with Gradebook(course.db_url, course.course_id) as book:
        flagged = {s: [nb.flagged for nb in book.find_submission(A, s).notebooks] for s in AUTO}
    assert flagged == {"ada": [False], "bob": [False], "cy": [True]}
    assert gradebook.flagged_for_a_person(course, [A]) == {}


def roster(tiny, ids=CANVAS):
    path = tiny["root"] / "students.csv"
    path.write_text("id,first_name,last_name,lms_user_id\n"
                    + "".join(f"{s},{s.title()},Student,{ids.get(s, '')}\n" for s in STUDENTS))
    return path


def exported(tiny, out) -> list[list[str]]:
    held = canvas.export(tiny["course"], roster(tiny), [f"{A}=4021"], out, tiny["root"] / "graded")
    assert held == [f"cy/{A}: answers wait for manual grading in Formgrader"]
    with open(out, newline="") as f:
        return list(csv.reader(f))


def test_canvas_gets_the_final_scores_and_a_blank_where_a_person_is_still_needed(tiny, tmp_path):
    assert exported(tiny, tmp_path / "canvas.csv") == [
        canvas.HEADER + [f"{A} (4021)"],
        ["Points Possible", "", "", "", "", "14"],
        ["Student, Ada", "1001", "", "", "", "13.25"],
        ["Student, Bob", "1002", "", "", "", "11.2"],
        ["Student, Cy", "1003", "", "", "", ""],       # held back: Canvas keeps what it has
        ["Student, Dee", "1004", "", "", "", "0"],     # no submission
        ["Student, Eve", "1005", "", "", "", "0"],     # an extension, and nothing handed in
    ]


def test_a_student_canvas_cannot_find_stops_the_export(tiny, tmp_path):
    with pytest.raises(canvas.ExportError, match="no Canvas id for dee"):
        canvas.export(tiny["course"], roster(tiny, {**CANVAS, "dee": ""}), [f"{A}=4021"], tmp_path / "out.csv",
                      tiny["root"] / "graded")
    assert not (tmp_path / "out.csv").exists()


def test_the_export_command_lists_what_it_held_back_and_sets_aside_a_refused_export(tiny, tmp_path, monkeypatch, capsys):
    out = tmp_path / "canvas-grades.csv"
    args = ["--roster", str(roster(tiny)), "--out", str(out), "--graded", str(tiny["root"] / "graded"),
            "--course", str(tiny["root"])]
    monkeypatch.setattr("sys.argv", ["canvas", *args, "--assignment", f"{A}=4021"])
    canvas.main()
    said = capsys.readouterr()
    assert said.err == f"held back (blank in the CSV, Canvas keeps what it has): cy/{A}: answers wait for manual " \
                       "grading in Formgrader\n"
    assert said.out == f"wrote {out} for Canvas's gradebook import (Grades > Import); 1 score(s) held back, listed above\n"
    monkeypatch.setattr("sys.argv", ["canvas", *args, "--assignment", f"{A}=x"])
    with pytest.raises(SystemExit) as refused:
        canvas.main()
    said = capsys.readouterr()
    assert refused.value.code == 2 and said.err.startswith("error: --assignment")
    assert "Nothing was written." in said.err and f"was renamed canvas-grades.csv{canvas.STALE}" in said.err
    assert not out.exists() and (tmp_path / f"canvas-grades.csv{canvas.STALE}").exists()


def test_a_run_with_a_score_the_gradebook_cannot_hold_writes_nothing(tiny):
    """All or nothing: dee's good result is not written either, and the error says the gradebook is as before."""
    bad = Graded("ada", A, TIMES["ada"], {A: Autograded({}, {"test_double": "x"}, {})})
    good = Graded("dee", A, DUE, {A: Autograded({}, {"test_double": 2.0}, {})})
    with pytest.raises(gradebook.GradebookError, match="Nothing was written; the grades in it are as before"):
        gradebook.write(tiny["course"], [good, bad])
    assert gradebook.recorded(tiny["course"]).submissions == {(s, A) for s in [*AUTO, "eve"]}
    assert gradebook.holds(tiny["course"], run_results())


def test_a_connection_lost_during_the_commit_is_checked_not_guessed(tiny, monkeypatch):
    def lost(_):
        raise gradebook.CommitUncertain("the server closed the connection.")
    monkeypatch.setattr(gradebook, "refresh_statistics", lost)   # fails right after the commit, as a lost server
    lines, _ = gradebook.write(tiny["course"], run_results())
    assert lines[-1] == ("the connection to the gradebook was lost during the commit; checked afterwards: the "
                         "gradebook holds this run's 3 submission(s)")
    monkeypatch.setattr(gradebook, "holds", lambda course, graded: False)
    with pytest.raises(gradebook.GradebookError, match="does not hold this run's grades: nothing was written"):
        gradebook.write(tiny["course"], run_results())


def test_an_assignment_nbgrader_will_not_record_is_refused_with_its_last_word(tiny, monkeypatch):
    from nbgrader.apps import NbGraderAPI
    monkeypatch.setattr(NbGraderAPI, "generate_assignment", lambda self, name, **kw: {
        "success": False, "error": "Traceback (most recent call last):\n  ...\nValueError: a graded cell was removed"})
    with pytest.raises(gradebook.GradebookError, match=f"nbgrader could not record assignment {A} in the gradebook: "
                                                       "ValueError: a graded cell was removed. If source/"):
        gradebook._generate(tiny["course"], A)


def test_an_assignment_not_yet_in_the_gradebook_has_no_rows(tiny):
    """An assignment written in source/ after the last run (nbgrader has not recorded it): no row, no error."""
    import shutil
    later = tiny["course"].source / "00_later"
    later.mkdir()
    shutil.copy(tiny["course"].source / A / f"{A}.ipynb", later / "00_later.ipynb")
    try:
        rows = gradebook.rows(tiny["course"], STUDENTS, [A, "00_later"])
    finally:
        shutil.rmtree(later)
    assert {r.assignment for r in rows} == {A} and len([r for r in rows if r.task == TOTAL]) == len(STUDENTS)


def test_the_gradebook_knows_the_assignment_as_source_has_it_and_its_released_stubs(tiny):
    course = tiny["course"]
    assert gradebook.stale(course, [A]) == [] and gradebook.scheduled(course) == {A}
    assert gradebook.recorded_assignments(course) == {A}
    stubs = gradebook.stubs(course, [A])
    assert "def double(x):" in stubs[A, A, "double"] and "return 2 * x" not in stubs[A, A, "double"]
    assert stubs[A, A, "explain"] != "" and set(stubs) == {(a, nb, cell) for a, nb, cell in stubs if a == A}
    import shutil
    later = course.source / "00_later"
    later.mkdir()
    shutil.copy(course.source / A / f"{A}.ipynb", later / "00_later.ipynb")
    try:
        assert gradebook.stale(course, [A, "00_later"]) == ["00_later"]
    finally:
        shutil.rmtree(later)


def test_every_read_and_write_closes_its_connection_to_the_gradebook(tiny):
    """A class of a thousand is read and written by one process: no connection may be left open behind a call."""
    import os
    course = tiny["course"]
    database = Path(course.db_url.removeprefix("sqlite:///")).resolve()

    def open_on_it() -> int:
        return sum(1 for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == str(database))
    assert open_on_it() == 0
    for call in (lambda: gradebook.roster(course), lambda: gradebook.holds(course, run_results()),
                 lambda: gradebook.rows(course, STUDENTS, [A]), lambda: gradebook.write(course, run_results())):
        call()
        assert open_on_it() == 0


def test_the_run_refreshes_the_planners_statistics(tiny):
    import sqlite3
    with sqlite3.connect(tiny["course"].db_url.removeprefix("sqlite:///")) as db:
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone() == (1,)


def test_a_gradebook_nbgrader_cannot_open_is_told_as_a_gradebook_error(tiny, monkeypatch):
    from sqlalchemy.exc import OperationalError

    def cannot(*args, **kwargs):
        raise OperationalError("SELECT", {}, Exception("database is locked"))
    monkeypatch.setattr("nbgrader.api.Gradebook", cannot)
    with pytest.raises(gradebook.GradebookError, match="database is locked"):
        gradebook.open_gradebook(tiny["course"])


def test_a_gradebook_of_another_nbgrader_version_is_refused_before_nbgrader_touches_it(tmp_path):
    import sqlite3
    from types import SimpleNamespace
    path = tmp_path / "other-version.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version VALUES ('0000deadbeef')")
    db.close()
    with pytest.raises(gradebook.GradebookError, match="0000deadbeef"):
        gradebook.open_gradebook(SimpleNamespace(db_url=f"sqlite:///{path}", course_id="cs336"))
    with sqlite3.connect(path) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == [
            "alembic_version"]
    db.close()


def test_a_database_error_inside_a_session_is_told_as_a_gradebook_error(tiny):
    from sqlalchemy import text
    with pytest.raises(gradebook.GradebookError):
        with gradebook.session(tiny["course"]) as book:
            book.db.execute(text("SELECT * FROM no_such_table"))


@pytest.mark.parametrize("failure", [KeyboardInterrupt, gradebook.GradebookError])
def test_a_run_that_fails_leaves_nothing_even_when_its_gradebook_is_used_again(tiny, failure):
    """one_transaction: any exception rolls the run back and is raised (a database's as GradebookError); a later
    commit on the same gradebook (nbgrader's own methods commit) does not write the failed run's rows."""
    import warnings

    from sqlalchemy import text
    book = gradebook.open_gradebook(tiny["course"])
    try:
        with pytest.raises(failure):
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                with gradebook.one_transaction(book):
                    book.add_student("zed")
                    book.add_submission(A, "zed", timestamp=DUE)   # nbgrader's own warning is kept quiet here
                    if failure is KeyboardInterrupt:
                        raise KeyboardInterrupt
                    book.db.execute(text("INSERT INTO no_such_table VALUES (1)"))
        assert [w for w in warned if "SAWarning" in type(w.message).__name__] == []
        book.update_or_create_student("ann")   # commits
        assert "zed" not in {s.id for s in book.students}
        book.remove_student("ann")
    finally:
        book.close()
    assert "zed" not in gradebook.roster(tiny["course"])


def test_a_failed_commit_is_uncertain_not_a_plain_error(tiny):
    from sqlalchemy.exc import OperationalError
    book = gradebook.open_gradebook(tiny["course"])

    def lost():
        raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))
    try:
        book.db.commit = lost
        with pytest.raises(gradebook.CommitUncertain, match="server closed the connection"):
            with gradebook.one_transaction(book):
                pass
    finally:
        del book.db.commit
        book.close()


def test_a_new_student_is_added_only_when_asked(tiny):
    course = tiny["course"]
    zed = Graded("zed", A, DUE, {A: Autograded({}, {"test_double": 2.0}, {})})
    assert gradebook.write(course, [zed], create_students=False) == ([], set())
    assert "zed" not in gradebook.roster(course)
    try:
        gradebook.write(course, [zed])
        assert "zed" in gradebook.roster(course) and gradebook.holds(course, [zed])
    finally:
        with Gradebook(course.db_url, course.course_id) as book:
            book.remove_submission(A, "zed")
            book.remove_student("zed")


def test_recording_waits_for_the_lock_and_records_what_is_still_stale(tiny, monkeypatch):
    import fcntl
    course = tiny["course"]
    done = []

    def generate(course_, assignment):
        with open(course.root / ".gradebook-sync.lock") as other:   # another shard's open: must wait
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done.append(assignment)
    monkeypatch.setattr(gradebook, "_generate", generate)
    monkeypatch.setattr(gradebook, "stale", lambda course_, names: [n for n in names if n == A])
    assert gradebook._record(course, [A]) == [A] and done == [A]
    assert gradebook.sync(course, [A]) == ([A], gradebook.stubs(course, [A])) and done == [A, A]
    finish = gradebook.start_sync(course, [A])                # in a forked child, while the caller goes on
    assert finish() == ([A], gradebook.stubs(course, [A]))


@pytest.mark.parametrize("fails, said", [
    ("error", "no room for it"),
    ("crash", "nbgrader could not record the assignments in the gradebook: RuntimeError: its last word"),
])
def test_recording_in_the_background_raises_what_went_wrong_in_the_child(tiny, monkeypatch, fails, said):
    def generate(course_, assignment):
        if fails == "error":
            raise gradebook.GradebookError("no room for it")
        raise RuntimeError("its last word")
    monkeypatch.setattr(gradebook, "_generate", generate)
    monkeypatch.setattr(gradebook, "stale", lambda course_, names: list(names))
    finish = gradebook.start_sync(tiny["course"], [A])
    with pytest.raises(gradebook.GradebookError) as raised:
        finish()
    assert str(raised.value) == said


def test_nbgrader_records_from_a_scratch_copy_of_the_source_never_the_courses_release(tiny, monkeypatch):
    from nbgrader.apps import NbGraderAPI
    course = tiny["course"]
    seen = {}

    def generate(self, name, force, create):
        root = Path(self.coursedir.root)
        seen.update(root=root, copied=(root / "source" / name / f"{name}.ipynb").is_file(), db=self.coursedir.db_url)
        return {"success": True}
    monkeypatch.setattr(NbGraderAPI, "generate_assignment", generate)
    gradebook._generate(course, A)
    assert seen["copied"] and seen["db"] == course.db_url and seen["root"] != course.root
    assert not seen["root"].exists()


def test_an_assignment_that_fails_to_record_says_its_reason_or_none(tiny, monkeypatch):
    from nbgrader.apps import NbGraderAPI
    for result, reason in (({"success": False, "error": None, "log": "[INFO] copying\nValueError: bad cell\n"},
                            "ValueError: bad cell"), ({"success": False}, "no reason given")):
        monkeypatch.setattr(NbGraderAPI, "generate_assignment", lambda self, name, result=result, **kw: result)
        with pytest.raises(gradebook.GradebookError, match=f"in the gradebook: {reason}. If source/"):
            gradebook._generate(tiny["course"], A)


def test_a_full_temporary_folder_is_told_with_the_room_there_is_and_the_room_needed(tiny, monkeypatch):
    course = tiny["course"]
    size = 1025 * 512          # the source padded to 512.5 KiB: a scratch copy of it and its release, 1025 KiB
    pad = course.source / A / "data.bin"
    pad.write_bytes(b"")
    pad.write_bytes(b"x" * (size - sum(p.stat().st_size for p in (course.source / A).rglob("*") if p.is_file())))
    try:
        _full_temporary_folder(course, size, monkeypatch)
    finally:
        pad.unlink()


def _full_temporary_folder(course, size: int, monkeypatch) -> None:
    import collections
    import errno
    import shutil

    from nbgrader.apps import NbGraderAPI
    needs = f"about {2 * size // 1024 + 1} KiB"
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(NbGraderAPI, "generate_assignment", lambda self, name, **kw: {"success": False, "error": "x"})
    for free, full in ((2 * size - 1, True), (2 * size, False)):
        monkeypatch.setattr(shutil, "disk_usage", lambda path, free=free: usage(10 << 20, 0, free))
        with pytest.raises(gradebook.GradebookError) as raised:
            gradebook._generate(course, A)
        assert isinstance(raised.value, gradebook.ScratchFull) is full, free
        if full:
            assert f"is full: {free // 1024} KiB free of 10240 KiB, and recording {A}" in str(raised.value)
            assert f"({needs}; nbgrader's generate_assignment failed)" in str(raised.value)

    def no_room(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(shutil, "copytree", no_room)
    with pytest.raises(gradebook.ScratchFull, match=rf"\({needs}; No space left on device\)"):
        gradebook._generate(course, A)


# ---- the rows and the writes of one submission, on stand-ins for nbgrader's records (no database) ---------------

def graded_cell(name: str, auto=None, manual=None, max_score=2.0, needs=False):
    from types import SimpleNamespace
    score = manual if manual is not None else (auto or 0.0)
    return SimpleNamespace(name=name, auto_score=auto, manual_score=manual, score=score, max_score=max_score,
                           needs_manual_grade=needs)


def handed_in(*grades, penalty=None):
    from types import SimpleNamespace
    notebook = SimpleNamespace(name=A, grades=list(grades), comments=[])
    return SimpleNamespace(notebooks=[notebook], late_submission_penalty=penalty, max_score=4.0,
                           score=sum(g.score for g in grades))


ORDER = [(A, "one"), (A, "two")]


def rows_of(submission, run: RunNotes | None = None):
    run = run or RunNotes()
    return {r.task: (r.score, r.late_penalty, r.note, r.status)
            for r in gradebook._submission_rows("ada", A, 4.0, submission, ORDER, {}, run)}


def test_a_submission_handed_in_without_any_score_yet_waits_and_is_not_no_submission():
    submission = handed_in(graded_cell("one"), graded_cell("two"))
    waits = "waits for manual grading (formgrader)"
    assert rows_of(submission, RunNotes(submitted=frozenset({("ada", A)}))) == {
        "one": (None, None, waits, Status.GRADED), "two": (None, None, waits, Status.GRADED),
        TOTAL: (0.0, 0.0, "", Status.GRADED)}
    assert rows_of(submission) == {TOTAL: (0.0, 0.0, "no submission", Status.NO_SUBMISSION)}   # a record only
    assert rows_of(None, RunNotes(submitted=frozenset({("ada", A)}))) == {
        TOTAL: (0.0, 0.0, "no submission", Status.NO_SUBMISSION)}
    failed = RunNotes(not_graded={("ada", A): "NOT GRADED: died"})
    assert rows_of(submission, failed) == {TOTAL: (None, None, "NOT GRADED: died", Status.NOT_GRADED)}


def test_a_score_given_only_by_hand_counts_and_a_cell_the_submission_lacks_has_no_row():
    submission = handed_in(graded_cell("one", manual=1.5))        # no automatic score, no cell "two"
    assert rows_of(submission) == {"one": (1.5, None, "scored by hand", Status.GRADED),
                                   TOTAL: (1.5, 0.0, "", Status.GRADED)}


def test_a_penalty_larger_than_the_score_leaves_zero_never_less():
    submission = handed_in(graded_cell("one", auto=1.0), graded_cell("two", auto=0.5), penalty=2.0)
    assert rows_of(submission)[TOTAL] == (0.0, 2.0, "", Status.GRADED)


def test_a_cell_waits_for_a_person_when_its_score_or_time_changed_under_a_hand_score():
    from types import SimpleNamespace
    cells = {"none": graded_cell("none"), "auto": graded_cell("auto", needs=True),
             "kept": graded_cell("kept", auto=1.0, manual=2.0), "changed": graded_cell("changed", auto=1.0, manual=2.0),
             "still": graded_cell("still", auto=1.0, manual=2.0, needs=True)}
    comment = SimpleNamespace(name="auto", auto_comment=None)
    notebook = SimpleNamespace(grades=list(cells.values()), comments=[comment])
    kept = Autograded({}, {"none": None, "auto": 2.0, "kept": 1.0, "changed": 0.0, "still": 1.0}, {"auto": "ok"})
    gradebook._write_scores(notebook, kept, moved=False)
    assert {name: (cell.auto_score, cell.needs_manual_grade) for name, cell in cells.items()} == {
        "none": (None, True), "auto": (2.0, False), "kept": (1.0, False), "changed": (0.0, True), "still": (1.0, True)}
    assert comment.auto_comment == "ok"
    cells["kept"].needs_manual_grade = False
    gradebook._write_scores(notebook, kept, moved=True)              # resubmitted: every hand score waits again
    assert cells["kept"].needs_manual_grade is True and cells["auto"].needs_manual_grade is False


class _Db:
    def expire(self, *args):
        pass

    def flush(self):
        pass


class _Late:
    """A submission with one notebook of 3 points, as nbgrader's records show it: its penalty the notebooks' sum."""

    def __init__(self, seconds: float, extension=None):
        from types import SimpleNamespace
        self.total_seconds_late, self.extension = seconds, extension
        self.notebooks = [SimpleNamespace(score=3.0, late_submission_penalty="stale")]

    @property
    def late_submission_penalty(self):
        given = [nb.late_submission_penalty for nb in self.notebooks if nb.late_submission_penalty is not None]
        return sum(given) if given else None


@pytest.mark.parametrize("seconds, given, penalty, line", [
    (0.0, 1.0, None, None),                                  # at the due date: on time
    (0.5, 1.0, 1.0, "under 1 s after the due date -> late penalty 1 point"),
    (3600.0, -2.0, 0.0, "1.0 h after the due date -> late penalty 0 points"),    # a plugin's negative: none
    (3600.0, 9.0, 3.0, "1.0 h after the due date -> late penalty 3 points"),     # at most the score
    (3600.0, None, None, "1.0 h after the due date -> late penalty 0 points"),   # the plugin gives none
])
def test_a_late_penalty_is_the_plugins_clipped_to_the_score(seconds, given, penalty, line):
    from types import SimpleNamespace

    class Plugin:
        def late_submission_penalty(self, student, score, seconds_late):
            assert (student, score, seconds_late) == ("ada", 3.0, seconds)
            return given
    for extension in (None, datetime.timedelta(days=1)):
        submission = _Late(seconds, extension)
        lines = gradebook._write_penalties(SimpleNamespace(db=_Db()), Graded("ada", A, DUE), submission, Plugin())
        assert submission.notebooks[0].late_submission_penalty == penalty
        said = line and line.replace("due date", "due date (with an extension)" if extension else "due date")
        assert lines == ([f"ada {A}: {said}"] if line else [])


def test_a_hand_score_changed_after_the_penalty_stops_the_export_until_the_next_run(tiny, tmp_path):
    """Last in this file: it changes bob's hand score, then a re-run (the results written again) brings the
    penalty up to date; a resubmission under hand scores is flagged for a person."""
    course = tiny["course"]
    score_by_hand(course, {"bob": {"explain": 2.0}})
    assert canvas.stale_penalties(course, [A]) == [f"bob/{A}"]
    with pytest.raises(canvas.ExportError, match=f"late penalties of bob/{A} were computed before"):
        canvas.export(course, roster(tiny), [f"{A}=4021"], tmp_path / "out.csv", tiny["root"] / "graded")
    gradebook.write(course, run_results())
    assert canvas.stale_penalties(course, [A]) == []
    assert exported(tiny, tmp_path / "out.csv")[3] == ["Student, Bob", "1002", "", "", "", "9.6"]  # 12 less 20%
    resubmitted = run_results()
    resubmitted[1].timestamp = TIMES["bob"] + datetime.timedelta(hours=1)
    lines, again = gradebook.write(course, resubmitted)
    assert again == {("bob", A)} and lines[-1] == f"bob {A}: {gradebook.REGRADED_AFTER_HAND_GRADE}"
    assert gradebook.flagged_for_a_person(course, [A]) == {("bob", A): ["explain", "plot", "style"]}

