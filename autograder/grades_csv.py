"""Runs as the instructor (the grader and every tool): the two tables a grading run leaves for people and tools to read:
OUT/grades.csv and OUT/summary.txt with OUT/summary.json.

The grader writes them (grader/pipeline.py); merge.py reads and joins the shards' tables; canvas.py and report.py read
grades.csv's TOTAL rows for the submissions the grader could not grade (NOT GRADED: the gradebook does not know them);
grader/ledger.py reads them to tell an earlier run's output. One module for the format, so that the tools need none of
the grader's package to read it.

grades.csv: one row per graded cell and one TOTAL row per student and assignment, in CSV_COLUMNS; `status` is the
submission's (outcome.Status, by value), `note` is for people and never read back.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.errors import GraderError
from autograder.gradebook import TOTAL, Row
from autograder.outcome import Event, Status, summary_json

CSV_COLUMNS = ("student", "assignment", "task", "title", "score", "max_score", "late_penalty", "status", "note")


class OldGradesFile(GraderError, ValueError):
    """A grades.csv without the status column (written by a grader before 2026-11-28): its statuses are only in
    English notes, which are never read back; the message says to grade again."""


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


def write_summary(out: Path, events: list[Event]) -> None:
    """OUT/summary.txt (a line per event, for people) and OUT/summary.json (the same events, typed: merge.py), in
    the order given."""
    write_atomically(out / "summary.json", summary_json(events))
    write_atomically(out / "summary.txt", "".join(f"{e.text}\n" for e in events))
