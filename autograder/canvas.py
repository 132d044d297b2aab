"""Runs as the instructor (a command line): the final scores as a CSV for Canvas's gradebook import (Grades >
Import), one column per assignment.

    python -m autograder.canvas --roster students.csv --assignment 01_floats=4021 [--assignment NAME=ID ...]
                                [--out canvas-grades.csv] [--graded graded] [--course DIR]

Canvas reads (its GradebookImporter, instructure/canvas-lms app/models/gradebook_importer.rb): a header row
`Student, ID, SIS User ID, SIS Login ID, Section, <assignment> (<Canvas assignment id>) ...`; an optional
`Points Possible` row; then a row per student, found by its Canvas user ID (`ID`), else its SIS User ID, else its
SIS Login ID (else by name, which this file never relies on). An assignment column whose id is a Canvas assignment's
updates that assignment; a blank cell changes nothing.

The mapping from the course's students to Canvas is explicit, in the roster that `nbgrader db student import` reads
(it keeps `lms_user_id` in the gradebook and ignores the other columns): `id` (the course's student id), `first_name`,
`last_name`, and for Canvas `lms_user_id` (Canvas's user ID), `sis_user_id`, `sis_login_id` and `section`. A student
of the gradebook with none of the three Canvas ids stops the export, with the list. Each assignment's Canvas id is
given with --assignment NAME=ID (the number in the assignment's Canvas address, .../assignments/4021).

Scores are the gradebook's final ones, as `nbgrader export` and grades.csv have them: automatic and manual scores,
extra credit, less the late penalty, and 0 for no submission. Held back (blank, so Canvas keeps what it has, and listed
on stderr): a submission with answers still waiting for a person in Formgrader, that is any cell nbgrader flags for
manual grading (`needs_manual_grade`: one nobody scored, and a hand-scored one whose submission changed since, as a
resubmission after a hand grade), and one the grader could not grade ("NOT GRADED" in the run's grades.csv). The export stops when a late penalty is stale, that is was computed before the
last manual score (run `make grade` again: it recomputes penalties from the final scores, running nothing).
Exit status: 0 written (held-back cells listed), 2 refused (nothing written; the message says why; an earlier file at
--out is renamed <out>.stale, so that a stale export is not uploaded by mistake).
"""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder import gradebook
from autograder.atomic import write_atomically
from autograder.course import Course
from autograder.errors import GraderError
from autograder.gradebook import TOTAL
from autograder.grades_csv import csv_text, not_graded
from autograder.outcome import Status

HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER_COLUMNS = ("lms_user_id", "sis_user_id", "sis_login_id", "section")


class ExportError(GraderError, ValueError):
    """The export cannot be written as asked; the message says what to fix. Nothing was written."""


@dataclass
class Person:
    """One student as Canvas knows them (ids as text; an empty one is unknown)."""
    student: str
    name: str
    canvas_id: str
    sis_user_id: str
    sis_login_id: str
    section: str


def read_roster(path: Path) -> dict[str, Person]:
    """{course student id: Person} from the roster CSV (columns above; the Canvas ones may be missing or empty)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
    except OSError as error:
        raise ExportError(f"cannot read the roster {path}: {error.strerror}") from None
    if not rows or "id" not in rows[0]:
        raise ExportError(f"the roster {path} has no `id` column (the course's student ids, as `nbgrader db student "
                          f"import` reads them), so nobody can be matched with Canvas")
    people = {}
    for row in rows:
        value = {k: (row.get(k) or "").strip() for k in ("id", "first_name", "last_name", *ROSTER_COLUMNS)}
        name = ", ".join(p for p in (value["last_name"], value["first_name"]) if p) or value["id"]
        people[value["id"]] = Person(value["id"], name, value["lms_user_id"], value["sis_user_id"],
                                     value["sis_login_id"], value["section"])
    return people


def parse_assignments(specs: list[str], known: list[str]) -> dict[str, str]:
    """{assignment: Canvas assignment id} from NAME=ID options."""
    mapping = {}
    for spec in specs:
        name, _, canvas_id = spec.partition("=")
        if not canvas_id.strip().isdigit():
            raise ExportError(f"--assignment {spec!r}: give NAME=ID with Canvas's numeric assignment id (the number "
                              "in the assignment's address, .../assignments/4021)")
        if name not in known:
            raise ExportError(f"--assignment {spec!r}: the gradebook has no assignment {name!r} "
                              f"(it has {', '.join(known) or 'none'})")
        mapping[name] = canvas_id.strip()
    if not mapping:
        raise ExportError("name at least one assignment: --assignment NAME=CANVAS_ID")
    return mapping


def stale_penalties(course: Course, names: list[str]) -> list[str]:
    """'student/assignment' for each late submission whose stored penalty differs from the one the course's plugin
    gives for its score now (a manual score given after the last grading run)."""
    plugin = course.late_plugin()
    stale = []
    with gradebook.session(course) as book:
        for name in names:
            for submission in book.find_assignment(name).submissions:
                seconds = submission.total_seconds_late or 0
                if seconds <= 0:
                    continue
                for notebook in submission.notebooks:
                    wanted = plugin.late_submission_penalty(submission.student.id, notebook.score, seconds)
                    wanted = min(max(wanted or 0.0, 0.0), notebook.score)
                    if abs(wanted - (notebook.late_submission_penalty or 0.0)) > 1e-9:
                        stale.append(f"{submission.student.id}/{name}")
                        break
    return stale


def scores(course: Course, names: list[str], graded: Path) -> tuple[dict, dict, list[str]]:
    """({(student, assignment): final score or None when held back}, {assignment: points possible}, held-back lines)."""
    students = gradebook.roster(course)
    rows = gradebook.rows(course, students, names, gradebook.RunNotes(not_graded=not_graded(graded)))
    waiting = {(r.student, r.assignment) for r in rows if r.task != TOTAL and r.score is None}
    flagged = gradebook.flagged_for_a_person(course, names)  # a stale hand score counts, not only a missing one
    final: dict[tuple[str, str], float | None] = {}
    points: dict[str, float] = {}
    held: list[str] = []
    for r in rows:
        if r.task != TOTAL:
            continue
        points[r.assignment] = r.max_score
        key = (r.student, r.assignment)
        if r.status is Status.NOT_GRADED:
            final[key] = None
            held.append(f"{r.student}/{r.assignment}: {r.note}")
        elif key in waiting:
            final[key] = None
            held.append(f"{r.student}/{r.assignment}: answers wait for manual grading in Formgrader")
        elif key in flagged:
            final[key] = None
            held.append(f"{r.student}/{r.assignment}: nbgrader flags {', '.join(flagged[key])} for manual grading "
                        "(a hand score older than the submission or its automatic score): review them in Formgrader")
        else:
            final[key] = r.score
    return final, points, held


def number(value: float | None) -> str:
    """A score as Canvas's export writes it: at most two decimals, no trailing zeros; blank for None."""
    return "" if value is None else f"{round(value, 2):g}"


def export(course: Course, roster: Path, specs: list[str], out: Path, graded: Path) -> list[str]:
    """Write `out`; return the held-back lines. ExportError (nothing written) when it cannot be done right."""
    people = read_roster(roster)
    book_assignments = sorted(gradebook.recorded_assignments(course))
    mapping = parse_assignments(specs, book_assignments)
    names = list(mapping)
    stale = stale_penalties(course, names)
    if stale:
        raise ExportError(f"the late penalties of {', '.join(stale)} were computed before their last manual score: "
                          "run `make grade` again (it recomputes penalties from the final scores and runs nothing), "
                          "then export")
    final, points, held = scores(course, names, graded)
    students = sorted({s for s, _ in final})
    unmatched = [s for s in students if s not in people
                 or not (people[s].canvas_id or people[s].sis_user_id or people[s].sis_login_id)]
    if unmatched:
        raise ExportError(f"no Canvas id for {', '.join(unmatched)} in {roster}: give each student an lms_user_id "
                          "(Canvas's user ID), sis_user_id or sis_login_id column value (Canvas's own gradebook "
                          "export lists them), so that Canvas can find them")
    lines = [HEADER + [f"{name} ({mapping[name]})" for name in names],
             ["Points Possible", "", "", "", ""] + [number(points[name]) for name in names]]
    for student in sorted(students, key=lambda s: (people[s].name.lower(), s)):
        p = people[student]
        lines.append([p.name, p.canvas_id, p.sis_user_id, p.sis_login_id, p.section]
                     + [number(final.get((student, name))) for name in names])
    write_atomically(out, csv_text(lines))
    return held


STALE = ".stale"


def set_aside(out: Path) -> str:
    """After a refused export, an earlier file at `out` is renamed `<out>.stale` (replacing an older one), so that
    it is not uploaded by mistake as this gradebook's grades (it may predate hand scores or penalties since); what
    was done, in words ('' when there was no such file)."""
    if not out.is_file():
        return ""
    import datetime
    written = datetime.datetime.fromtimestamp(out.stat().st_mtime, datetime.timezone.utc)
    stale = out.with_name(out.name + STALE)
    try:
        out.replace(stale)
    except OSError as error:
        return (f" The earlier {out} (written {written:%Y-%m-%d %H:%M} UTC) could not be renamed ({error.strerror}): "
                "do not upload it, it is not this gradebook's export")
    return (f" The earlier {out} (written {written:%Y-%m-%d %H:%M} UTC) was renamed {stale.name}, so that it is not "
            "uploaded by mistake: it may miss hand scores or penalties given since. Fix the cause and export again")


def main() -> None:
    from autograder.course import default_course
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roster", type=Path, required=True, help="the roster CSV with the Canvas columns")
    parser.add_argument("--assignment", action="append", default=[], metavar="NAME=ID",
                        help="an assignment and its Canvas assignment id (repeatable)")
    parser.add_argument("--out", type=Path, default=Path("canvas-grades.csv"))
    parser.add_argument("--graded", type=Path, default=Path("graded"), help="the grading run's output (for NOT GRADED)")
    parser.add_argument("--course", type=Path, help="the nbgrader course folder (default: as autograder.grade)")
    args = parser.parse_args()
    try:
        course = Course.load(args.course or default_course())
        held = export(course, args.roster, args.assignment, args.out, args.graded)
    except GraderError as error:  # the export, the gradebook, an old grades.csv
        print(f"error: {error.explain()}. Nothing was written.{set_aside(args.out)}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    for line in held:
        print(f"held back (blank in the CSV, Canvas keeps what it has): {line}", file=sys.stderr)
    print(f"wrote {args.out} for Canvas's gradebook import (Grades > Import)"
          f"{f'; {len(held)} score(s) held back, listed above' if held else ''}")


if __name__ == "__main__":
    main()
