"""Due dates and extensions, kept in nbgrader's gradebook.

    python -m autograder.deadlines extend ASSIGNMENT STUDENT [--days D] [--hours H] [--minutes M] [--course DIR]
    python -m autograder.deadlines show [ASSIGNMENT] [--course DIR]

Set an assignment's due date with nbgrader itself: `nbgrader db assignment add 01_floats --duedate="2026-02-01
17:00:00 UTC"`. nbgrader keeps a student's extension on their submission record (`Gradebook.grant_extension`) and
has no command for it, and a student may need one before submitting; `extend` records the assignment (as
`source/` has it) and the student's submission record first when they are missing, then grants the extension.
Extensions replace each other (they do not add up); `extend` with no time removes one. Grading then charges a
submission as late only past the due date plus the extension (nbgrader's `SubmittedAssignment.duedate`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import gradebook
from autograder.course import Course
from autograder.gradebook import GradebookError


def extend(course: Course, assignment: str, student: str, days: float = 0, hours: float = 0,
           minutes: float = 0) -> str:
    """Grant (or, with no time, remove) an extension; return a line saying what the due date now is."""
    from nbgrader.api import MissingEntry
    if assignment not in course.assignments():
        raise GradebookError(f"no assignment {assignment!r} in {course.source}")
    gradebook.sync(course, [assignment])
    book = gradebook.open_gradebook(course)
    try:
        with gradebook.one_transaction(book):
            try:
                book.find_student(student)
            except MissingEntry:
                raise GradebookError(f"{student!r} is not on the roster; add the class first: "
                                     "nbgrader db student import students.csv") from None
            try:
                submission = book.find_submission(assignment, student)
            except MissingEntry:
                submission = book.add_submission(assignment, student)
            book.grant_extension(assignment, student, minutes=minutes, hours=hours, days=days)
            due = submission.duedate
            return (f"{student} {assignment}: extension {submission.extension or 'none'}; "
                    f"due {due.isoformat(' ') + ' UTC' if due else 'date not set (nbgrader db assignment add)'}")
    finally:
        book.close()


def show(course: Course, assignment: str | None = None) -> list[str]:
    """A line per assignment (its due date) and per extension granted."""
    book = gradebook.open_gradebook(course)
    try:
        lines = []
        for a in book.assignments:
            if assignment and a.name != assignment:
                continue
            lines.append(f"{a.name}: due {a.duedate.isoformat(' ') + ' UTC' if a.duedate else '(no due date)'}")
            lines += [f"  {s.student.id}: extension {s.extension}, due {s.duedate}" for s in a.submissions if s.extension]
        return lines
    finally:
        book.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--course", type=Path, default=None, help="the course folder (default: as autograder.grade)")
    commands = parser.add_subparsers(dest="command", required=True)
    grant = commands.add_parser("extend", help="grant a student an extension on an assignment")
    grant.add_argument("assignment")
    grant.add_argument("student")
    for unit in ("days", "hours", "minutes"):
        grant.add_argument(f"--{unit}", type=float, default=0)
    listing = commands.add_parser("show", help="due dates and extensions")
    listing.add_argument("assignment", nargs="?")
    args = parser.parse_args()
    from autograder.grade import default_course
    course = Course.load(args.course or default_course())
    try:
        if args.command == "extend":
            print(extend(course, args.assignment, args.student, args.days, args.hours, args.minutes))
        else:
            print("\n".join(show(course, args.assignment)))
    except GradebookError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    main()
