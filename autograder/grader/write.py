"""Runs in the grader: what a run writes for people to read: grades.csv, the summary, and quick feedback pages."""
from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.errors import GraderError
from autograder.gradebook import TOTAL, Row
from autograder.grader import autograded, feedback
from autograder.outcome import CellKind, Event, NotebookOutcome, Status, SubmissionOutcome, summary_json
from autograder.source import Role

CSV_COLUMNS = ("student", "assignment", "task", "title", "score", "max_score", "late_penalty", "status", "note")


class OldGradesFile(GraderError, ValueError):
    """A grades.csv without the status column (written by a grader before 2026-11-28): its statuses are only in
    English notes, which are never read back; the message says to grade again."""


def task_notes(notebook: NotebookOutcome) -> dict[str, str]:
    """Why each test cell of a graded notebook lost its points, where the reason is more than a failed check:
    the test or an answer cell before it timed out, crashed, was not run, or had a syntax error."""
    notes, pending = {}, []
    for cell in notebook.cells:
        if cell.kind in (CellKind.ANSWER, CellKind.ADDED) and not cell.ok:
            note = autograded.failure_note(cell.error, cell.failure, cell.ename)
            if note:
                name = f"answer cell {cell.grade_id!r}" if cell.kind is CellKind.ANSWER else "a cell you added"
                pending.append(f"{name}: {note}")
        if cell.kind is CellKind.TEST:
            if not cell.ok:
                own = autograded.failure_note(cell.error, cell.failure, cell.ename)
                if cell.tampered:
                    own = "the tests' tools were changed while they ran: " + ", ".join(cell.tampered[:5])
                if own or pending:
                    notes[cell.grade_id] = "; ".join(([f"the test {own}"] if own else []) + pending)
            pending = []
    return notes


def review_lines(result: SubmissionOutcome, name: str | None = None) -> list[str]:
    """What a person should look at in one result (of notebook `name`, or of all): flags and changed test tools."""
    lines = []
    for each, notebook in result.notebooks.items():
        if name not in (None, each):
            continue
        if notebook.flags:
            lines.append(f"flagged for review: {each} uses {', '.join(notebook.flags)}")
        tampered = sorted({t for c in notebook.cells for t in c.tampered})
        if tampered:
            lines.append(f"tests failed because the test tools were changed while they ran: {', '.join(tampered[:5])}")
    return lines


def submission_notes(result: SubmissionOutcome) -> tuple[list[str], dict[str, str]]:
    """(notes on the whole submission, notes per graded cell) of one result."""
    overall = list(result.problems)
    per_cell = {}
    for name, notebook in result.notebooks.items():
        overall += notebook.notes
        overall += review_lines(result, name)
        per_cell.update(task_notes(notebook))
    return overall, per_cell


def write_feedback(result: SubmissionOutcome, out: Path, titles: dict, sources: dict | None = None) -> None:
    """Our quick HTML feedback for one graded submission (nbgrader's own is `nbgrader generate_feedback`);
    `sources`: the assignment's source notebooks by name, for the cells a person grades (their rows: waiting, or no
    response)."""
    student, assignment = result.student, result.assignment
    folder = out / "feedback" / student / assignment
    shutil.rmtree(folder, ignore_errors=True)
    overall, per_cell = submission_notes(result)
    for name, notebook in result.notebooks.items():
        if notebook.ran:
            own_titles = {gid: title for (a, gid), title in titles.items() if a == assignment}
            hand = [(c.title, c.points, notebook.autograded.grades.get(c.grade_id)) for c in sources[name].graded
                    if c.role is not Role.TEST] if sources and name in sources else []
            feedback.write(folder / f"{name}.html", feedback.render(
                student, assignment, name, notebook.cells, overall, own_titles, per_cell, hand))
    if result.problems:
        feedback.write(folder / "problems.html", feedback.render_problems(student, assignment, list(result.problems)))


def pending_events(rows: list[Row]) -> list[Event]:
    """One event per assignment with cells waiting for a person (manual grading in formgrader)."""
    events = []
    for assignment in sorted({r.assignment for r in rows}):
        waiting = [r for r in rows if r.assignment == assignment and r.task != TOTAL and r.score is None]
        if waiting:
            events.append(Event.pending(assignment, len(waiting), len({r.student for r in waiting}),
                                        [r.task for r in waiting]))
    return events


def write_summary(out: Path, events: list[Event]) -> None:
    """OUT/summary.txt (a line per event, for people) and OUT/summary.json (the same events, typed: merge.py), in
    the order given."""
    write_atomically(out / "summary.json", summary_json(events))
    write_atomically(out / "summary.txt", "".join(f"{e.text}\n" for e in events))


def csv_text(rows: Iterable[Sequence[str]]) -> str:
    """Rows as CSV text (the csv module's dialect: its quoting, \\r\\n line ends)."""
    buffer = io.StringIO(newline="")
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def write_csv(rows: list[Row], path: Path) -> None:
    """grades.csv, written through a temporary file and a rename."""
    def number(value: float | None) -> str:
        return "" if value is None else f"{value:g}"
    write_atomically(path, csv_text([CSV_COLUMNS] + [
        (r.student, r.assignment, r.task, r.title, number(r.score), number(r.max_score), number(r.late_penalty),
         r.status.value, r.note) for r in rows]))


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a run's grades.csv, each with every column; OldGradesFile for one without a status column."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if "status" not in (reader.fieldnames or []):
            raise OldGradesFile(f"{path} has no status column: it was written by a grader from before 2026-11-28. "
                                "Grade again (`make grade`): it rewrites grades.csv from the gradebook")
        return [{c: row.get(c) or "" for c in CSV_COLUMNS} for row in reader]


def read_totals(path: Path) -> dict[tuple[str, str], tuple[Status, str]]:
    """{(student, assignment): (status, note)} of the TOTAL rows of a run's grades.csv; {} when there is none.
    OldGradesFile for one without a status column; ValueError naming the file for a status this grader does not know."""
    if not path.is_file():
        return {}
    try:
        return {(r["student"], r["assignment"]): (Status(r["status"]), r["note"]) for r in read_csv(path)
                if r["task"] == TOTAL}
    except OldGradesFile:
        raise
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def not_graded(out: Path) -> dict[tuple[str, str], str]:
    """{(student, assignment): the note} for the TOTAL rows of OUT/grades.csv whose status is NOT GRADED (the grader
    failed on those submissions; the gradebook does not know it). Empty when there is no grades.csv; OldGradesFile
    for one written before the status column."""
    return {key: note for key, (status, note) in read_totals(out / "grades.csv").items() if status is Status.NOT_GRADED}
