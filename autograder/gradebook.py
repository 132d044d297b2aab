"""Runs as the instructor (the grader and every tool): nbgrader's gradebook as the record of every grading run: one
writer, one transaction per run.

The grading run's parent process is the only writer; its forked workers only run notebooks. It
- checks that the gradebook can be opened (`open_gradebook`) and knows each assignment exactly as `source/` has it
  (`sync`, which runs nbgrader's own `generate_assignment` when it does not);
- writes all the run's submissions in one transaction (`write`): students, submissions with their timestamps,
  each graded cell's `auto_score`, comments, and late penalties from nbgrader's configured late-submission plugin.
  A manual score, extra credit or manual comment is never written here, so a re-grade keeps them;
- reads the record back for grades.csv (`rows`), so that hand-given scores and penalties appear there too.

A locked or unreadable database raises GradebookError with a readable reason; nothing is written then, and the
grades already in the gradebook stay as they were.
"""
from __future__ import annotations

import datetime
import fcntl
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder import database
from autograder.course import Course, exchange_root
from autograder.database import GradebookError, explain, gradebook_error
from autograder.outcome import Autograded, Status

TOTAL = "TOTAL"


def open_gradebook(course: Course):
    """nbgrader's Gradebook for the course (created, empty, on first use), or GradebookError."""
    from nbgrader.api import Gradebook
    database.alembic_head_in_process()
    from sqlalchemy.exc import SQLAlchemyError
    database.check(course.db_url)  # reachable, credentials, schema of this nbgrader version (database.py)
    try:
        return Gradebook(course.db_url, course.course_id)
    except (SQLAlchemyError, OSError, ValueError) as error:
        raise gradebook_error(error, course.db_url) from None


@contextmanager
def session(course: Course) -> Iterator[Any]:
    """nbgrader's Gradebook for the course, open for the `with` block and closed after it, as nbgrader's own `with
    Gradebook(...)`; a database error inside the block becomes GradebookError, with what to do (database.explain)."""
    from sqlalchemy.exc import SQLAlchemyError
    gradebook = open_gradebook(course)
    try:
        yield gradebook
    except SQLAlchemyError as error:
        raise gradebook_error(error, course.db_url) from None
    finally:
        gradebook.close()


@contextmanager
def one_transaction(gradebook):
    """Everything written inside happens at once, or (on any error) not at all.

    nbgrader's Gradebook methods commit after each change they make; for a grading run to be all-or-nothing their
    commits become flushes (sent, not yet committed) until the block ends, where the one real commit happens.
    """
    import warnings

    from nbgrader.api import InvalidEntry
    from sqlalchemy.exc import SAWarning, SQLAlchemyError
    session = gradebook.db
    commit = session.commit
    session.commit = session.flush
    try:
        # nbgrader's add_submission builds its objects before adding them to the session, which SQLAlchemy 2
        # warns about when flushing instead of committing (harmless: they are added right after).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SAWarning)
            yield gradebook
    except (SQLAlchemyError, InvalidEntry) as error:
        session.rollback()
        raise gradebook_error(error, str(gradebook.engine.url)) from None
    except BaseException:
        session.rollback()
        raise
    finally:
        session.commit = commit
    try:
        commit()
    except SQLAlchemyError as error:  # the server may or may not have committed before the connection went
        raise CommitUncertain(explain(error, str(gradebook.engine.url))) from None


class CommitUncertain(GradebookError):
    """The connection failed during the commit itself: whether it happened must be checked, not guessed."""


def refresh_statistics(gradebook) -> None:
    """Bring the database's planner statistics up to date after a large write (SQL's ANALYZE; its cost and effect:
    docs/benchmarks.md, "A class of 1,000").

    A grading run writes a whole class in one transaction. PostgreSQL plans queries from table statistics that its
    autovacuum refreshes only some time after such a write, and until then it plans nbgrader's Formgrader queries
    for tables it believes small, which at class size makes Formgrader's Manual Grading list several times slower
    (measured by bench/formgrader_pages.py: docs/benchmarks.md, "Formgrader at 1,000 students"). A
    database user not allowed to analyze a table gets a warning from the server, not an error; any other failure
    only leaves the statistics as they were, so it never fails a run that has written its grades."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError
    try:
        with gradebook.engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()
    except SQLAlchemyError:
        pass


# ---- the assignments: the gradebook must know each one as source/ has it -------------------------------------

def _source_layout(course: Course, assignment: str) -> dict:
    """{notebook: {"grade": {id: (points, type)}, "task": {id: points}, "solution": {ids}, "source": {ids}}}, as
    nbgrader's gradebook would hold the assignment's cells (_gradebook_layout)."""
    layout = {}
    for name, notebook in course.sources(assignment).items():
        cells = [c for c in notebook.cells if c.grade_id]
        layout[name] = {"grade": {c.grade_id: (c.points, c.cell_type) for c in cells if c.grade},
                        "task": {c.grade_id: c.points for c in cells if c.task},
                        "solution": {c.grade_id for c in cells if c.solution},
                        "source": {c.grade_id for c in cells if c.tracked}}
    return layout


def _gradebook_layout(gradebook, assignment: str) -> dict | None:
    from nbgrader.api import MissingEntry
    try:
        found = gradebook.find_assignment(assignment)
    except MissingEntry:
        return None
    return {nb.name: {"grade": {c.name: (float(c.max_score), c.cell_type) for c in nb.grade_cells},
                      "task": {c.name: float(c.max_score) for c in nb.task_cells},
                      "solution": {c.name for c in nb.solution_cells},
                      "source": {c.name for c in nb.source_cells}} for nb in found.notebooks}


def stale(course: Course, names: list[str]) -> list[str]:
    """The assignments the gradebook lacks or holds with other cells or points than `source/` (read only)."""
    with session(course) as gradebook:
        return [a for a in names if _gradebook_layout(gradebook, a) != _source_layout(course, a)]


def stubs(course: Course, names: list[str]) -> dict:
    """The released text of every answer cell, as the gradebook's source cells keep it:
    {(assignment, notebook, grade_id): text}."""
    with session(course) as gradebook:
        return {(a, nb.name, cell.name): cell.source or "" for a in names
                for nb in gradebook.find_assignment(a).notebooks for cell in nb.source_cells}


def sync(course: Course, names: list[str]) -> tuple[list[str], dict]:
    """Make the gradebook know each assignment as `source/` has it; return (the assignments brought up to date,
    `stubs`).

    nbgrader records an assignment's cells when it generates the release (`nbgrader generate_assignment`); where
    the gradebook lacks an assignment or holds other cells or points, the same command runs here, into a scratch
    folder (the course's `release/` is not touched). nbgrader refuses to add or remove cells of an assignment
    that already has submissions; that refusal is raised as GradebookError.
    """
    return start_sync(course, names, background=False)()


def start_sync(course: Course, names: list[str], background: bool = True):
    """`sync`, begun now and finished by calling the function returned (which returns what `sync` returns).

    With `background`, nbgrader's generate_assignment runs in a forked process while the caller goes on (it
    spends its time committing, one cell at a time, which the grader's imports can overlap). The caller writes
    nothing to the gradebook before calling the function, so there is still one writer at a time.
    """
    todo = stale(course, names)  # a locked or unreadable gradebook stops the run here, before anything runs
    if not todo or not background:
        done = _record(course, todo)
        return lambda: (done, stubs(course, names))
    from autograder.forked import Child, ChildFailed

    def record() -> dict:
        try:
            return {"recorded": _record(course, todo)}
        except GradebookError as error:
            return {"error": str(error)}
    child = Child(record)

    def finish() -> tuple[list[str], dict]:
        while not child.done:
            child.pump()
        try:
            answer = child.answer()
        except ChildFailed as error:
            answer = {"error": f"nbgrader could not record the assignments in the gradebook: "
                               f"{str(error).splitlines()[-1]}"}
        if answer.get("error"):
            raise GradebookError(answer["error"])
        return answer["recorded"], stubs(course, names)
    return finish


def _record(course: Course, todo: list[str]) -> list[str]:
    """Record `todo` in the gradebook, one recorder at a time: shards that start together wait for each other here
    (a lock file at the course root, which they share), and each records only what is still stale once it holds it.
    Returns what this process recorded (none of what another recorded while it waited)."""
    if not todo:
        return []
    with open(course.root / ".gradebook-sync.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        recorded = stale(course, todo)
        for assignment in recorded:
            _generate(course, assignment)
    return recorded


class ScratchFull(GradebookError):
    """The temporary folder has no room for nbgrader's scratch copy of an assignment; the message says where, how
    much room there is and what to do."""


def _generate(course: Course, assignment: str) -> None:
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    source = course.source / assignment
    with tempfile.TemporaryDirectory(prefix="gradebook-sync-") as scratch:
        try:
            shutil.copytree(source, Path(scratch) / "source" / assignment,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        except OSError as error:
            raise ScratchFull(_no_room(scratch, assignment, _size_of(source), error.strerror or str(error))) from None
        config = Config(course.config)
        config.CourseDirectory.root = scratch
        config.CourseDirectory.db_url = course.db_url
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        result = api.generate_assignment(assignment, force=True, create=True)
        # nbgrader reports a failure as text (its traceback); the room left is measured instead, while its scratch
        # copy is still there: a release needs about the room of the source again
        if not result["success"] and shutil.disk_usage(scratch).free < 2 * _size_of(source):
            raise ScratchFull(_no_room(scratch, assignment, _size_of(source), "nbgrader's generate_assignment failed"))
    if not result["success"]:
        reason = (result.get("error") or result.get("log") or "").strip().splitlines()
        raise GradebookError(f"nbgrader could not record assignment {assignment} in the gradebook: "
                             f"{reason[-1] if reason else 'no reason given'}. If source/{assignment} gained or lost "
                             "graded cells after submissions were graded, nbgrader will not change it; "
                             "see docs/instructors.md, 'Changing a graded assignment'.")


def _size_of(folder: Path) -> int:
    """Bytes of the files under `folder`."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _no_room(scratch: str, assignment: str, needed: int, what: str) -> str:
    usage = shutil.disk_usage(scratch)
    return (f"the temporary folder {Path(scratch).parent} (TMPDIR) is full: {usage.free // 1024} KiB free of "
            f"{usage.total // 1024} KiB, and recording {assignment} in the gradebook needs a scratch copy of "
            f"source/{assignment} and of its release there (about {2 * needed // 1024 + 1} KiB; {what}). Make room "
            "there, or point TMPDIR at a folder with room, and run again. Nothing was graded; the gradebook may "
            "already hold the assignment's cells, which the next run checks against source/ again")


# ---- the roster and deadlines ------------------------------------------------------------------------------

def roster(course: Course) -> list[str]:
    """Student ids in the gradebook (`nbgrader db student import`, or added by earlier grading runs)."""
    with session(course) as gradebook:
        return sorted(s.id for s in gradebook.students)


def recorded_assignments(course: Course) -> set[str]:
    """Every assignment the gradebook holds."""
    with session(course) as gradebook:
        return {a.name for a in gradebook.assignments}


def scheduled(course: Course) -> set[str]:
    """Assignments the gradebook gives a due date (`nbgrader db assignment add NAME --duedate=...`)."""
    with session(course) as gradebook:
        return {a.name for a in gradebook.assignments if a.duedate is not None}


def released(course: Course) -> set[str]:
    """Assignments released to students through nbgrader's exchange (`nbgrader release_assignment`)."""
    outbound = exchange_root(course.config) / course.course_id / "outbound"
    try:
        return {p.name for p in outbound.iterdir() if p.is_dir()}
    except OSError:
        return set()


# ---- one run, written at once --------------------------------------------------------------------------------

@dataclass
class Graded:
    """One graded submission, ready for the gradebook: `notebooks` maps each notebook name to what nbgrader keeps of
    it (its grades and comments by grade_id); `timestamp` is naive UTC or None."""
    student: str
    assignment: str
    timestamp: datetime.datetime | None
    notebooks: dict[str, Autograded] = field(default_factory=dict)
    flagged: dict[str, str] = field(default_factory=dict)  # notebook name -> why the grader wants a person to look


NOTHING_KEPT = Autograded({}, {}, {})  # a notebook the grader kept nothing of: every automatic score None


REGRADED_AFTER_HAND_GRADE = "resubmitted after a hand grade: the manual scores stay, and wait for review in formgrader"


def write(course: Course, graded: list[Graded], create_students: bool = True) -> tuple[list[str], set[tuple[str, str]]]:
    """Write `graded` into the gradebook in one transaction; return a line for each late or flagged submission, and
    the (student, assignment) pairs resubmitted after a person graded them by hand.

    Flags reach formgrader as nbgrader's own `flagged` mark on the notebook (the flag icon in Manage Submissions):
    the grader's "flagged for review", and every notebook resubmitted under a manual score. The grader only ever
    sets the mark; a person clears it in formgrader.

    Per graded cell only `auto_score` and `needs_manual_grade` change: a cell waits for a person when it has no
    automatic score and no manual one yet, or when the automatic score or the submission's time changed under a
    manual score (a new submission, or a changed test). Late penalties: the configured plugin's, per notebook,
    clipped to [0, score] as nbgrader's AssignLatePenalties does.
    """
    plugin = course.late_plugin()
    late: list[str] = []
    resubmitted: set[tuple[str, str]] = set()
    gradebook = open_gradebook(course)
    try:
        with one_transaction(gradebook):
            for item in graded:
                late += _write_one(gradebook, item, plugin, create_students, resubmitted)
        refresh_statistics(gradebook)
    except CommitUncertain as error:
        if not holds(course, graded):
            raise GradebookError(f"{error} The connection was lost during the commit; the gradebook was checked "
                                 "afterwards and does not hold this run's grades: nothing was written.") from None
        late.append(f"the connection to the gradebook was lost during the commit; checked afterwards: the "
                    f"gradebook holds this run's {len(graded)} submission(s)")
    finally:
        gradebook.close()
    late += [f"{student} {assignment}: {REGRADED_AFTER_HAND_GRADE}" for student, assignment in sorted(resubmitted)]
    return late, resubmitted


def _write_one(gradebook, item: Graded, plugin, create_students: bool, resubmitted: set) -> list[str]:
    """Write one graded submission (inside the run's transaction); the line saying it was late, if it was."""
    from nbgrader.api import MissingEntry
    try:
        gradebook.find_student(item.student)
    except MissingEntry:
        if not create_students:
            return []
        gradebook.add_student(item.student)
    try:
        submission = gradebook.find_submission(item.assignment, item.student)
        moved = submission.timestamp != item.timestamp
        submission.timestamp = item.timestamp
    except MissingEntry:
        submission = gradebook.add_submission(item.assignment, item.student, timestamp=item.timestamp)
        moved = False
    for notebook in submission.notebooks:
        if moved and any(grade.manual_score is not None for grade in notebook.grades):
            resubmitted.add((item.student, item.assignment))
            notebook.flagged = True
        if item.flagged.get(notebook.name):
            notebook.flagged = True
        _write_scores(notebook, item.notebooks.get(notebook.name, NOTHING_KEPT), moved)
    gradebook.db.flush()
    return _write_penalties(gradebook, item, submission, plugin)


def _write_scores(notebook, kept: Autograded, moved: bool) -> None:
    """One submitted notebook's automatic scores and comments (nbgrader's Grade and Comment rows): a cell waits for a
    person when it has no score at all, or when its automatic score or the submission's time (`moved`) changed under
    a manual score."""
    for grade in notebook.grades:
        auto = kept.grades.get(grade.name)
        changed = moved or grade.auto_score != auto
        grade.auto_score = auto
        if grade.manual_score is None:
            grade.needs_manual_grade = auto is None
        else:
            grade.needs_manual_grade = bool(grade.needs_manual_grade or changed)
    for comment in notebook.comments:
        comment.auto_comment = kept.comments.get(comment.name)


def _write_penalties(gradebook, item: Graded, submission, plugin) -> list[str]:
    """Each notebook's late penalty in points (the course's plugin, clipped to [0, score]); the line saying the
    submission was late, if it was."""
    seconds_late = submission.total_seconds_late
    for notebook in submission.notebooks:
        gradebook.db.expire(notebook, ["score"])
        notebook.late_submission_penalty = None
        if seconds_late > 0:
            penalty = plugin.late_submission_penalty(item.student, notebook.score, seconds_late)
            if penalty is not None:
                notebook.late_submission_penalty = min(max(penalty, 0.0), notebook.score)
    if seconds_late <= 0:
        return []
    gradebook.db.flush()
    gradebook.db.expire(submission, ["late_submission_penalty"])
    from autograder.late import how_late, points
    return [f"{item.student} {item.assignment}: {how_late(seconds_late)} after the due date "
            f"{'(with an extension) ' if submission.extension else ''}"
            f"-> late penalty {points(submission.late_submission_penalty or 0)}"]


def holds(course: Course, graded: list[Graded]) -> bool:
    """True when the gradebook (read afresh) holds every submission of `graded` with its time and automatic scores."""
    from nbgrader.api import MissingEntry
    from sqlalchemy.exc import SQLAlchemyError
    try:
        gradebook = open_gradebook(course)
    except GradebookError:
        return False
    try:
        for item in graded:
            try:
                submission = gradebook.find_submission(item.assignment, item.student)
            except MissingEntry:
                return False
            if submission.timestamp != item.timestamp:
                return False
            for notebook in submission.notebooks:
                wanted = item.notebooks.get(notebook.name, NOTHING_KEPT).grades
                if any(grade.auto_score != wanted.get(grade.name) for grade in notebook.grades):
                    return False
        return True
    except SQLAlchemyError:
        return False
    finally:
        gradebook.close()


@dataclass(frozen=True)
class Held:
    """What the gradebook holds that a run's ledger remembers (grader/run.py): every (student, assignment) with a
    submission, the assignments with a due date, and each assignment's id in this gradebook (nbgrader's uuid, made
    when the assignment is first recorded and kept by every later update: what tells this gradebook from another
    one that holds the same names)."""
    submissions: frozenset[tuple[str, str]]
    due: frozenset[str]
    assignments: dict[str, str]


def recorded(course: Course) -> Held:
    """What the gradebook holds now (read only)."""
    with session(course) as gradebook:
        submissions = frozenset((s.student.id, a.name) for a in gradebook.assignments for s in a.submissions)
        return Held(submissions, frozenset(a.name for a in gradebook.assignments if a.duedate is not None),
                    {a.name: str(a.id) for a in gradebook.assignments})


# ---- reading it back -----------------------------------------------------------------------------------------

def flagged_for_a_person(course: Course, names: list[str]) -> dict[tuple[str, str], list[str]]:
    """{(student, assignment): the grade ids of hand-scored cells that nbgrader flags for manual grading again
    (`Grade.needs_manual_grade` with a `manual_score`)} for the named assignments: the submission or its automatic
    score changed since the hand score was given (a resubmission), so that score is stale until a person looks
    again. Cells nobody scored yet have no score at all (gradebook.rows gives them None), and a submission record
    made only for an extension has no scores. One query."""
    from nbgrader.api import Assignment, BaseCell, Grade, Student, SubmittedAssignment, SubmittedNotebook
    with session(course) as gradebook:
        query = (gradebook.db.query(Student.id, Assignment.name, BaseCell.name)
                 .select_from(Grade).join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                 .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                 .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                 .join(Student, SubmittedAssignment.student_id == Student.id)
                 .join(BaseCell, Grade.cell_id == BaseCell.id)
                 .filter(Grade.needs_manual_grade.is_(True), Grade.manual_score.isnot(None),
                         Assignment.name.in_(names)))
        found: dict[tuple[str, str], list[str]] = {}
        for student, assignment, grade_id in query:
            found.setdefault((student, assignment), []).append(grade_id)
        return {key: sorted(ids) for key, ids in found.items()}


@dataclass
class Row:
    """One line of grades.csv: a graded cell ('task' is its grade_id), or the assignment's total (task 'TOTAL')."""
    student: str
    assignment: str
    task: str
    title: str
    score: float | None  # None: waits for manual grading
    max_score: float
    late_penalty: float | None = None
    note: str = ""  # for people: never read back (`status` says what happened)
    status: Status = Status.GRADED  # the submission's: graded, NOT GRADED, no submission, unknown assignment


@dataclass(frozen=True)
class RunNotes:
    """What a grading run knows that the gradebook does not, for grades.csv (`rows`): the submissions it was given
    (`submitted`, (student, assignment): one the gradebook holds without a score counts as handed in only then), a
    note per graded cell or total (`notes`, (student, assignment, grade_id or TOTAL) -> text), and the submissions it
    could not grade (`not_graded`, (student, assignment) -> its note, `not_graded_note`). The report and the Canvas
    export, which read a finished run, know only its NOT GRADED notes (grades.csv's)."""
    submitted: frozenset[tuple[str, str]] = frozenset()
    notes: dict[tuple[str, str, str], str] = field(default_factory=dict)
    not_graded: dict[tuple[str, str], str] = field(default_factory=dict)

    def note(self, student: str, assignment: str, task: str) -> str:
        """The run's note on one graded cell (`task`: its grade_id) or total (TOTAL); "" when none."""
        return self.notes.get((student, assignment, task), "")


def rows(course: Course, students: list[str], names: list[str], run: RunNotes | None = None) -> list[Row]:
    """grades.csv from the gradebook: for each student and assignment, one row per graded cell (in the source's
    order) and a TOTAL row with the late penalty taken off; 'no submission' (0) where the gradebook holds no graded
    submission, each cell under its title (`titles`). `run`: what the grading run adds (RunNotes); a submission it
    could not grade gets its NOT GRADED note and no score (never 'no submission'), or the earlier run's scores where
    the gradebook has them.
    """
    from nbgrader.api import MissingEntry
    run = run or RunNotes()
    out = []
    titled = titles(course, names)
    with session(course) as gradebook:
        order = {name: [(nb, c.grade_id) for nb, notebook in course.sources(name).items() for c in notebook.graded]
                 for name in names}
        assignments = {a.name: a for a in gradebook.assignments if a.name in names}
        # Every student's grades point to the same notebooks and cells. SQLAlchemy's session forgets an object as
        # soon as nothing refers to it, and would then load each one again for every student (a query per object);
        # holding them here makes those look-ups free (measured: docs/benchmarks.md, "A class of 1,000").
        shared = [kept for a in assignments.values() for nb in a.notebooks for kept in [nb, *nb.grade_cells]]  # noqa: F841
        for student in students:
            for name in names:
                assignment = assignments.get(name)
                if assignment is None:
                    continue
                try:
                    submission = gradebook.find_submission(name, student)
                except MissingEntry:
                    submission = None
                out += _submission_rows(student, name, float(assignment.max_score), submission, order[name], titled,
                                        run)
    return out


def _submission_rows(student: str, name: str, max_score: float, submission, order: list[tuple[str, str]],
                     titled: dict[tuple[str, str], str], run: RunNotes) -> list[Row]:
    """grades.csv's rows of one student's assignment (`max_score` in points): NOT GRADED, no submission, or a row per
    graded cell in the source's `order` ((notebook, grade_id)) and the total."""
    grades = {(nb.name, g.name): g for nb in submission.notebooks for g in nb.grades} if submission else {}
    graded = any(g.auto_score is not None or g.manual_score is not None for g in grades.values())
    failure = run.not_graded.get((student, name))
    if failure and (submission is None or not graded):
        return [Row(student, name, TOTAL, "assignment total", None, max_score, None, failure, Status.NOT_GRADED)]
    if submission is None or not ((student, name) in run.submitted or graded):
        return [Row(student, name, TOTAL, "assignment total", 0.0, max_score, 0.0, "no submission",
                    Status.NO_SUBMISSION)]
    status = Status.NOT_GRADED if failure else Status.GRADED
    out = [_cell_row(student, name, gid, titled.get((name, gid), gid), grade, run, status)
           for gid, grade in ((gid, grades.get((nb, gid))) for nb, gid in order) if grade is not None]
    penalty = float(submission.late_submission_penalty or 0.0)
    score = max(0.0, float(submission.score) - penalty)
    note = f"{failure} (the scores are an earlier run's)" if failure else run.note(student, name, TOTAL)
    return out + [Row(student, name, TOTAL, "assignment total", score, float(submission.max_score), penalty, note,
                      status)]


def _cell_row(student: str, name: str, gid: str, title: str, grade, run: RunNotes, status: Status) -> Row:
    """grades.csv's row of one graded cell (nbgrader's Grade): its score in points, None while it waits for a person."""
    waiting = grade.auto_score is None and grade.manual_score is None
    note = run.note(student, name, gid)
    if waiting:
        note = "; ".join(filter(None, ["waits for manual grading (formgrader)", note]))
    elif grade.manual_score is not None:
        note = "; ".join(filter(None, ["scored by hand", note]))
    return Row(student, name, gid, title, None if waiting else float(grade.score), float(grade.max_score), None, note,
               status)


NOT_GRADED_PREFIX = "NOT GRADED: "


def not_graded_note(why: str) -> str:
    """The note of a NOT GRADED row, for people: 'NOT GRADED: ' and why (the status itself is the row's Status)."""
    return NOT_GRADED_PREFIX + why


def titles(course: Course, names: list[str]) -> dict[tuple[str, str], str]:
    """{(assignment, grade_id): the heading the graded cell falls under} (grades.csv, feedback, the report)."""
    return {(a, c.grade_id): c.title for a in names for notebook in course.sources(a).values() for c in notebook.graded}
