"""Runs as the instructor (a command line): due dates and extensions, kept in nbgrader's gradebook.

    python -m autograder.deadlines extend ASSIGNMENT STUDENT [--days D] [--hours H] [--minutes M] [--course DIR]
    python -m autograder.deadlines show [ASSIGNMENT] [--course DIR]

An extension is a time of zero or more (D, H and M add up; fractions are fine); a negative one is refused.

Set an assignment's due date with nbgrader itself: `nbgrader db assignment add 01_floats --duedate="YYYY-MM-DD
17:00:00 UTC"` (a date already past for every student is warned at `nbgrader release_assignment` and at grading). nbgrader keeps a student's extension on their submission record (`Gradebook.grant_extension`) and
has no command for it, and a student may need one before submitting; `extend` records the assignment (as
`source/` has it) and the student's submission record first when they are missing, then grants the extension.
Extensions replace each other (they do not add up); `extend` with no time removes one. Grading then charges a
submission as late only past the due date plus the extension (nbgrader's `SubmittedAssignment.duedate`).
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from autograder import gradebook
from autograder.course import Course
from autograder.due_dates import due
from autograder.gradebook import GradebookError


def extend(course: Course, assignment: str, student: str, days: float = 0, hours: float = 0,
           minutes: float = 0) -> str:
    """Grant (or, with no time, remove) an extension; return a line saying what the due date now is."""
    from nbgrader.api import MissingEntry
    for unit, value in (("days", days), ("hours", hours), ("minutes", minutes)):
        if not (math.isfinite(value) and value >= 0):
            raise GradebookError(f"an extension of {value} {unit}: it must be zero or more "
                                 "(to shorten one, grant the shorter one; with no time, the extension is removed)")
    if assignment not in course.assignments():
        raise GradebookError(f"no assignment {assignment!r} in {course.source}")
    gradebook.sync(course, [assignment])
    with gradebook.session(course) as book:
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
            when = due(submission)
            return (f"{student} {assignment}: extension {submission.extension or 'none'}; "
                    f"due {when.isoformat(' ') + ' UTC' if when else 'date not set (nbgrader db assignment add)'}")


def show(course: Course, assignment: str | None = None) -> list[str]:
    """A line per assignment (its due date) and per extension granted."""
    with gradebook.session(course) as book:
        lines = []
        for a in book.assignments:
            if assignment and a.name != assignment:
                continue
            lines.append(f"{a.name}: due {a.duedate.isoformat(' ') + ' UTC' if a.duedate else '(no due date)'}")
            lines += [f"  {s.student.id}: extension {s.extension}, due "
                      f"{when.isoformat(' ') + ' UTC' if when else '(no due date yet)'}"
                      for s in a.submissions if s.extension for when in [due(s)]]
        return lines


def non_negative(text: str) -> float:
    """An amount of time for argparse: a finite number, zero or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} is not zero or more: an extension cannot be negative")
    return value


def parser() -> argparse.ArgumentParser:
    """The command line, as the module docstring's usage lines show it (tests/test_readme_commands.py checks)."""
    main_parser = argparse.ArgumentParser(prog="python -m autograder.deadlines", description=__doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter)
    course = argparse.ArgumentParser(add_help=False)
    course.add_argument("--course", type=Path, default=None, metavar="DIR",
                        help="the course folder (default: the current folder when it holds nbgrader_config.py, "
                             "else this repository)")
    commands = main_parser.add_subparsers(dest="command", required=True, metavar="{extend,show}")
    grant = commands.add_parser("extend", parents=[course], help="grant a student an extension on an assignment "
                                "(replacing any earlier one; with no time, remove it)")
    grant.add_argument("assignment", metavar="ASSIGNMENT")
    grant.add_argument("student", metavar="STUDENT")
    for unit, letter in (("days", "D"), ("hours", "H"), ("minutes", "M")):
        grant.add_argument(f"--{unit}", type=non_negative, default=0, metavar=letter)
    listing = commands.add_parser("show", parents=[course], help="due dates and extensions")
    listing.add_argument("assignment", nargs="?", metavar="ASSIGNMENT")
    return main_parser


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    from autograder.course import default_course
    course = Course.load(args.course or default_course())
    try:
        if args.command == "extend":
            print(extend(course, args.assignment, args.student, args.days, args.hours, args.minutes))
        else:
            print("\n".join(show(course, args.assignment)))
    except GradebookError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
