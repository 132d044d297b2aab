"""Plain `nbgrader autograde` against our grader, on the same generated class, side by side in one run.

    .venv/bin/python -m bench.grading_throughput [STUDENTS] [--assignment NAME ...] [--complete] [--ours-only]

The class: STUDENTS students (default 40) x the assignments in source/, each student's notebook solved, half
done or blank in turn (a mixed class), or with --complete every notebook solved (the hardest case for our grader:
every hidden test runs). Both graders grade every notebook into a gradebook of their own (each run's time includes recording the
assignments and writing the grades); the script checks that they give every student the same score per task,
then prints wall time, notebooks per minute, seconds per notebook and the ratio.
Where the time goes in ours is printed too: starting a sandboxed notebook process vs running the cells.
`--ours-only` grades with ours alone and prints its time (to compare two checkouts of ours side by side, run under
`farm-bench --vs`, which alternates them).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from autograder.course import REPO_ROOT, SOURCE_DIR, Course, assignments, make_course
from autograder.grade import grade
from autograder.gradebook import TOTAL
from autograder.grader.notebooks import NotebookProcess, Zygote
from autograder.grader.pipeline import probe
from autograder.limits import Limits, load_limits
from autograder.outcome import CellKind
from tests import submissions

KINDS = (("solved", submissions.solved), ("half", submissions.half_done), ("blank", submissions.release_notebooks))


def make_class(submitted: Path, students: int, names: list[str], complete: bool = False) -> None:
    kinds = KINDS[:1] if complete else KINDS
    for a in names:
        notebooks = {kind: maker(a) for kind, maker in kinds}
        for i in range(students):
            kind = kinds[i % len(kinds)][0]
            submissions.write_submission(submitted, f"student{i:03d}_{kind}", a, notebooks[kind])


def grade_with_nbgrader(submitted: Path, course: Path, names: list[str]) -> dict[tuple[str, str, str], float]:
    """What an instructor gets from nbgrader alone: `autograde` on each submission, one after another."""
    from nbgrader.api import Gradebook
    api = make_course(course, names)
    for student_dir in sorted(submitted.iterdir()):
        for assignment_dir in sorted(student_dir.iterdir()):
            shutil.copytree(assignment_dir, course / "submitted" / student_dir.name / assignment_dir.name)
    scores = {}
    for student_dir in sorted(submitted.iterdir()):
        for a in sorted(p.name for p in student_dir.iterdir()):
            result = api.autograde(a, student_dir.name, force=True, create=True)
            assert result["success"], result["log"]
    with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
        for a in names:
            for nb in gradebook.find_assignment(a).notebooks:
                for sub in nb.submissions:
                    for g in sub.grades:
                        scores[(sub.student.id, a, g.name)] = float(g.score)
    return scores


def process_start_seconds(limits: Limits, repeats: int = 10) -> tuple[float, float]:
    """(seconds for the zygote's own start, once per run: an interpreter importing torch, IPython and utils, to its
    first notebook's Ready; median seconds to fork, wall in and stop one more notebook process, no cells run)."""
    start = time.perf_counter()
    zygote = Zygote([REPO_ROOT], Course.load(REPO_ROOT).imports())
    times = []
    try:
        NotebookProcess(zygote, 0, limits).kill()
        first = time.perf_counter() - start
        for _ in range(repeats):
            start = time.perf_counter()
            process = NotebookProcess(zygote, 0, limits)
            process.run(CellKind.SETUP, "pass", 30)
            process.kill()
            times.append(time.perf_counter() - start)
    finally:
        zygote.close()
    return first, sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("students", type=int, nargs="?", default=40)
    parser.add_argument("--assignment", action="append", help="only these assignments (default: all)")
    parser.add_argument("--complete", action="store_true", help="every notebook solved (default: solved, half done "
                        "and blank in turn)")
    parser.add_argument("--ours-only", action="store_true", help="grade with ours alone (no nbgrader, no comparison)")
    args = parser.parse_args()
    names = args.assignment or assignments()
    limits = load_limits()
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as scratch:
        submitted = Path(scratch) / "submitted"
        make_class(submitted, args.students, names, args.complete)
        notebooks = sum(1 for _ in submitted.rglob("*.ipynb"))
        print(f"class: {args.students} {'complete ' if args.complete else 'mixed (solved, half, blank) '}students x "
              f"{len(names)} assignment(s) = {notebooks} notebooks; {os.cpu_count()} CPU cores; "
              f"sandbox: {', '.join(probe(limits))}")

        start = time.perf_counter()
        theirs = {} if args.ours_only else grade_with_nbgrader(submitted, Path(scratch) / "nbgrader-course", names)
        nbgrader_seconds = time.perf_counter() - start

        start = time.perf_counter()  # our course: its own gradebook, which the run fills as nbgrader's does
        ours_course = Path(scratch) / "our-course"
        for a in names:
            shutil.copytree(SOURCE_DIR / a, ours_course / "source" / a)
        rows = grade(submitted, Path(scratch) / "ours", names=names, limits=limits, course=Course.load(ours_course))
        our_seconds = time.perf_counter() - start
    ours = {(r.student, r.assignment, r.task): r.score for r in rows if r.task != TOTAL}
    if args.ours_only:
        print(f"ours ({limits.workers or os.cpu_count()} workers, sandboxed): {our_seconds:.1f} s, "
              f"{our_seconds / notebooks:.2f} s per notebook")
        return
    same = ours == theirs
    print(f"{'grader':28s} {'seconds':>8s} {'notebooks/min':>14s} {'s/notebook':>11s}")
    for label, seconds in (("nbgrader autograde (serial)", nbgrader_seconds),
                           (f"ours ({limits.workers or os.cpu_count()} workers, sandboxed)", our_seconds)):
        print(f"{label:28s} {seconds:8.1f} {60 * notebooks / seconds:14.1f} {seconds / notebooks:11.2f}")
    print(f"throughput ratio (ours / nbgrader): {nbgrader_seconds / our_seconds:.1f}x")
    print(f"identical scores on all {len(ours)} task grades: {same}")
    zygote_seconds, process_seconds = process_start_seconds(limits)
    print(f"the sandbox's costs: the zygote's start, once per run: {zygote_seconds:.1f} s; then each notebook process "
          f"(fork of the zygote, uid, namespaces, /proc, tmpfs, limits, Landlock, IPython): "
          f"{process_seconds * 1000:.0f} ms (median of 10)")
    if not same:
        differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        print("differences (first 10):", [(k, theirs.get(k), ours.get(k)) for k in differ[:10]])
        raise SystemExit(1)


if __name__ == "__main__":
    main()
