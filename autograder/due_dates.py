"""Runs as the instructor (the grader, the exchange's release, and the deadlines tool): due dates as nbgrader's
gradebook keeps them, and the warnings of a due date that is wrong for the whole class.

A student's due date is the assignment's plus their extension (nbgrader's `SubmittedAssignment.duedate`, which fails
without a due date). A date already past for every student at release (`release_warning`: pasted from last term or the
manual), or every submission late at grading (`grading_warnings`), is said loudly: each would charge everyone as late.
Extensions are granted with `python -m autograder.deadlines`; due dates are set with nbgrader itself.
"""
from __future__ import annotations

import datetime
from typing import Any

from autograder import gradebook
from autograder.course import Course


def due(submission: Any) -> datetime.datetime | None:
    """The student's due date: the assignment's plus the extension (nbgrader's property fails without a due date)."""
    date = submission.assignment.duedate
    return date + submission.extension if date is not None and submission.extension else date


def _latest_due(assignment: Any) -> datetime.datetime | None:
    """An nbgrader Assignment's latest due date for anyone: its own plus the longest extension granted (naive UTC)."""
    if assignment.duedate is None:
        return None
    extensions = [s.extension for s in assignment.submissions if s.extension]
    return assignment.duedate + max(extensions) if extensions else assignment.duedate


def passed_for_everyone(assignment: Any, now: datetime.datetime | None = None) -> str | None:
    """A loud warning when an nbgrader Assignment's due date, extensions included, is already past `now` (naive UTC;
    default: now) for every student, as at a release with a date pasted from last term or the manual; else None."""
    now = now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    latest = _latest_due(assignment)
    if latest is None or latest > now:
        return None
    return (f"WARNING: the due date of {assignment.name}, {assignment.duedate.isoformat(' ')} UTC"
            f"{' (with the longest extension: ' + latest.isoformat(' ') + ' UTC)' if latest != assignment.duedate else ''}, "
            f"passed {_ago(now - latest)} ago for every student: every submission will be charged as late. If the "
            f"date is wrong, set the right one: nbgrader db assignment add {assignment.name} "
            "--duedate=\"YYYY-MM-DD HH:MM:SS UTC\"")


def late_for_everyone(assignment: Any) -> str | None:
    """A loud warning when every submission of an nbgrader Assignment with a time was late (at least one), as when its
    due date passed before it was released; else None."""
    timed = [s for s in assignment.submissions if s.timestamp is not None]
    if assignment.duedate is None or not timed or any((s.total_seconds_late or 0) <= 0 for s in timed):
        return None
    return (f"WARNING: all {len(timed)} submission(s) of {assignment.name} with a time are late: its due date "
            f"{assignment.duedate.isoformat(' ')} UTC passed before any of them was handed in. If the date is wrong "
            f"(pasted from last term or the manual), set the right one (nbgrader db assignment add {assignment.name} "
            "--duedate=...) and run `make grade` again: it recomputes the penalties")


def _ago(span: datetime.timedelta) -> str:
    days = span.total_seconds() / 86400
    return f"{days:.0f} day(s)" if days >= 1 else f"{span.total_seconds() / 3600:.1f} h"


def release_warning(course: Course, assignment: str) -> str | None:
    """passed_for_everyone for an assignment being released (None when the gradebook does not know it);
    GradebookError when the gradebook cannot be read (with what to do)."""
    from nbgrader.api import MissingEntry
    with gradebook.session(course) as book:
        try:
            return passed_for_everyone(book.find_assignment(assignment))
        except MissingEntry:
            return None


def grading_warnings(course: Course, names: list[str]) -> list[str]:
    """late_for_everyone for each graded assignment the gradebook knows."""
    with gradebook.session(course) as book:
        return [line for a in book.assignments if a.name in names for line in [late_for_everyone(a)] if line]
