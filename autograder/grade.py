"""Grade every submission under a folder laid out as nbgrader's `submitted/<student>/<assignment>/`.

    python -m autograder.grade SUBMITTED_DIR [--out DIR] [--assignment NAME ...]

Writes, under DIR (default `graded/`):
  grades.csv                                   student, assignment, task, score, max_score, note
  feedback/<student>/<assignment>/*.html       the graded notebook a student may see (no hidden test code)
  course/                                      nbgrader's working folder (gradebook.db, autograded/, ...)

Submitted files are only read, never changed: each one is copied into the working folder first. A submission
that cannot be graded (unknown assignment, a file that is not a notebook, a missing notebook) scores 0 for the
affected tasks, and the reason goes into the CSV note and that student's feedback; the others are graded as usual.
"""
from __future__ import annotations

import argparse
import csv
import html
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from autograder.course import assignments, make_course

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
CSV_COLUMNS = ("student", "assignment", "task", "score", "max_score", "note")


@dataclass
class GradeRow:
    student: str
    assignment: str
    task: str
    score: float
    max_score: float
    note: str = ""


def find_submissions(submitted: Path) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """(student, assignment, folder) for each submission, and a line for each folder that is not one."""
    found, skipped = [], []
    for student_dir in sorted(p for p in submitted.iterdir() if not p.name.startswith(".")):
        if not student_dir.is_dir() or student_dir.is_symlink() or not SAFE_NAME.match(student_dir.name):
            skipped.append(f"{student_dir.name!r}: not a student folder (letters, digits and _.@+- only)")
            continue
        for assignment_dir in sorted(p for p in student_dir.iterdir() if not p.name.startswith(".")):
            if assignment_dir.is_dir() and not assignment_dir.is_symlink():
                found.append((student_dir.name, assignment_dir.name, assignment_dir))
            else:
                skipped.append(f"{student_dir.name}/{assignment_dir.name}: not an assignment folder")
    return found, skipped


def copy_submission(folder: Path, target: Path, expected: list[str]) -> list[str]:
    """Copy the readable notebooks of a submission into `target`; return the problems found, one line each."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    problems = []
    for name in expected:
        path = folder / f"{name}.ipynb"
        if not path.is_file() or path.is_symlink():
            present = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
            problems.append(f"missing notebook {name}.ipynb (the folder holds: {present})")
            continue
        try:
            notebook = nbformat.read(path, as_version=4)
            nbformat.validate(notebook)
        except Exception as error:  # any unreadable file is reported, not raised
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            problems.append(f"{name}.ipynb is not a valid notebook ({type(error).__name__}: {first_line})")
            continue
        shutil.copyfile(path, target / path.name)
    timestamp = folder / "timestamp.txt"
    if timestamp.is_file() and not timestamp.is_symlink():
        shutil.copyfile(timestamp, target / "timestamp.txt")
    return problems


def task_scores(gradebook: Gradebook, student: str, assignment: str, note: str, graded: bool) -> list[GradeRow]:
    """One row per graded task of a submission; one that nbgrader could not grade gets 0 for every task."""
    rows = []
    for notebook in gradebook.find_assignment(assignment).notebooks:
        scores = {}
        if graded:
            submitted = gradebook.find_submission_notebook(notebook.name, assignment, student)
            scores = {grade.name: float(grade.score) for grade in submitted.grades}
        for cell in sorted(notebook.grade_cells, key=lambda c: c.name):
            rows.append(GradeRow(student, assignment, cell.name, scores.get(cell.name, 0.0), float(cell.max_score), note))
    return rows


def write_problem_feedback(path: Path, student: str, assignment: str, problems: list[str]) -> None:
    """A small HTML page telling the student why (part of) their submission could not be graded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    path.write_text(f"<html><body><h1>{html.escape(assignment)}: grading problems for {html.escape(student)}</h1>"
                    f"<p>These parts scored 0:</p><ul>{items}</ul></body></html>")


def grade(submitted: Path, out: Path, names: list[str] | None = None) -> list[GradeRow]:
    """Grade every submission under `submitted` into `out`; return the rows written to `out/grades.csv`."""
    names = names or assignments()
    course = out / "course"
    api = make_course(course, names)
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        notebooks_of = {name: [nb.name for nb in gradebook.find_assignment(name).notebooks] for name in names}
    submissions, skipped = find_submissions(submitted)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    rows: list[GradeRow] = []
    for student, assignment, folder in submissions:
        feedback_dir = out / "feedback" / student / assignment
        if feedback_dir.exists():
            shutil.rmtree(feedback_dir)
        if assignment not in notebooks_of:
            problem = f"unknown assignment {assignment!r} (known: {', '.join(names)})"
            write_problem_feedback(feedback_dir / "problems.html", student, assignment, [problem])
            rows.append(GradeRow(student, assignment, "-", 0.0, 0.0, problem))
            continue
        target = course / "submitted" / student / assignment
        problems = copy_submission(folder, target, notebooks_of[assignment])
        graded_ok = False
        if any(target.glob("*.ipynb")):  # nbgrader gives missing notebooks 0, but refuses a submission with none
            result = api.autograde(assignment, student, force=True, create=True)
            graded_ok = result["success"]
            if not graded_ok:
                problems.append("the grader could not run this submission; an instructor will look at it")
                print(f"autograde failed for {student}/{assignment}:\n{result['log']}\n{result['error']}", file=sys.stderr)
        if graded_ok:
            api.generate_feedback(assignment, student, force=True)
            produced = course / "feedback" / student / assignment
            if produced.exists():
                shutil.copytree(produced, feedback_dir, dirs_exist_ok=True)
        if problems:
            write_problem_feedback(feedback_dir / "problems.html", student, assignment, problems)
        with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
            rows += task_scores(gradebook, student, assignment, "; ".join(problems), graded_ok)
    write_csv(rows, out / "grades.csv")
    return rows


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            writer.writerow((r.student, r.assignment, r.task, f"{r.score:g}", f"{r.max_score:g}", r.note))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submitted", type=Path, help="folder of <student>/<assignment>/ submissions")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="where grades and feedback go")
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    args = parser.parse_args()
    if not args.submitted.is_dir():
        parser.error(f"{args.submitted} is not a folder")
    rows = grade(args.submitted.resolve(), args.out.resolve(), args.assignment)
    totals: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        total = totals.setdefault((r.student, r.assignment), [0.0, 0.0])
        total[0] += r.score
        total[1] += r.max_score
    for (student, assignment), (score, max_score) in sorted(totals.items()):
        print(f"{student:20s} {assignment:20s} {score:g} / {max_score:g}")
    print(f"Wrote {args.out / 'grades.csv'} and feedback under {args.out / 'feedback'}")


if __name__ == "__main__":
    main()
