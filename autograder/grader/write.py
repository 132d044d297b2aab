"""Runs in the grader: what a run writes for people to read besides the tables (grades.csv and the summary, whose
format is autograder/grades_csv.py): the notes on each submission, the summary's events, and quick feedback pages."""
from __future__ import annotations

import shutil
from pathlib import Path

from autograder.gradebook import TOTAL, Row
from autograder.grader import autograded, feedback
from autograder.outcome import CellKind, Event, NotebookOutcome, SubmissionOutcome
from autograder.source import Role


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
            lines.append(f"flagged for review ({each}): {'; '.join(notebook.flags)}")
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
