"""Runs in the grader: what a run writes for people to read: grades.csv, the summary, and quick feedback pages."""
from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

from autograder import autograded, feedback
from autograder.gradebook import TOTAL, Row

CSV_COLUMNS = ("student", "assignment", "task", "title", "score", "max_score", "late_penalty", "note")


def task_notes(notebook: dict) -> dict[str, str]:
    """Why each test cell of a graded notebook lost its points, where the reason is more than a failed check:
    the test or an answer cell before it timed out, crashed, was not run, or had a syntax error."""
    notes, pending = {}, []
    for cell in notebook["cells"]:
        if cell["kind"] in ("answer", "added") and not cell["ok"]:
            note = autograded.failure_note(cell["error"])
            if note:
                name = f"answer cell {cell['grade_id']!r}" if cell["kind"] == "answer" else "a cell you added"
                pending.append(f"{name}: {note}")
        if cell["kind"] == "test":
            if not cell["ok"]:
                own = autograded.failure_note(cell["error"])
                if cell["tampered"]:
                    own = "the tests' tools were changed while they ran: " + ", ".join(cell["tampered"][:5])
                if own or pending:
                    notes[cell["grade_id"]] = "; ".join(([f"the test {own}"] if own else []) + pending)
            pending = []
    return notes


def submission_notes(result: dict) -> tuple[list[str], dict[str, str]]:
    """(notes on the whole submission, notes per graded cell) of one result."""
    overall = list(result["problems"])
    per_cell = {}
    for name, notebook in result["notebooks"].items():
        overall += notebook.get("notes", [])
        if notebook["flags"]:
            overall.append(f"flagged for review: {name} uses {', '.join(notebook['flags'])}")
        tampered = sorted({t for c in notebook["cells"] for t in c["tampered"]})
        if tampered:
            overall.append(f"tests failed because the test tools were changed while they ran: {', '.join(tampered[:5])}")
        per_cell.update(task_notes(notebook))
    return overall, per_cell


def write_feedback(result: dict, out: Path, titles: dict) -> None:
    """Our quick HTML feedback for one graded submission (nbgrader's own is `nbgrader generate_feedback`)."""
    student, assignment = result["student"], result["assignment"]
    folder = out / "feedback" / student / assignment
    shutil.rmtree(folder, ignore_errors=True)
    overall, per_cell = submission_notes(result)
    for name, notebook in result["notebooks"].items():
        if notebook["ran"]:
            own_titles = {gid: title for (a, gid), title in titles.items() if a == assignment}
            feedback.write(folder / f"{name}.html", feedback.render(
                student, assignment, name, notebook["cells"], overall, own_titles, per_cell))
    if result["problems"]:
        feedback.write(folder / "problems.html", feedback.render_problems(student, assignment, result["problems"]))


def pending_lines(rows: list[Row]) -> list[str]:
    """A line per assignment with cells waiting for a person (manual grading in formgrader)."""
    lines = []
    for assignment in sorted({r.assignment for r in rows}):
        waiting = [r for r in rows if r.assignment == assignment and r.task != TOTAL and r.score is None]
        if waiting:
            cells = sorted({r.task for r in waiting})
            lines.append(f"needs manual grading (formgrader): {assignment}: {len(waiting)} answer(s) in "
                         f"{len({r.student for r in waiting})} submission(s), cells {', '.join(cells)}")
    return lines


def write_csv(rows: list[Row], path: Path) -> None:
    """grades.csv, written through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:g}"

    with open(temporary, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            writer.writerow((r.student, r.assignment, r.task, r.title, number(r.score), number(r.max_score),
                             number(r.late_penalty), r.note))
    os.replace(temporary, path)
