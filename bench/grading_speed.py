"""How long our grader takes on complete work: every task of every notebook solved (the instructor's solutions).

    .venv/bin/python -m bench.grading_speed [STUDENTS] [ASSIGNMENT ...]

Builds a class of STUDENTS students (default 6) x the named assignments (default: all in source/), each notebook
solved (tests/submissions.py), in a scratch course, and times one fresh `python -m autograder.grade` on it, as
`make grade` runs it (default workers, sandboxed). Prints the run's wall time and seconds per notebook (recording the
assignments in the gradebook included), and per assignment the median time a notebook's cells ran on one worker.
Complete notebooks are the slow case: a blank or half-done notebook stops running tests early.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.course import assignments
from tests import submissions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("students", type=int, nargs="?", default=6)
    parser.add_argument("assignments", nargs="*", help="default: all in source/")
    args = parser.parse_args()
    names = args.assignments or assignments()
    with tempfile.TemporaryDirectory(prefix="grading-speed-") as scratch:
        course = submissions.new_course(Path(scratch) / "course")
        for name in names:
            notebooks = submissions.solved(name)
            for i in range(args.students):
                submissions.write_submission(course / "submitted", f"student{i:03d}", name, notebooks)
        out = Path(scratch) / "graded"
        start = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "autograder.grade", str(course / "submitted"), "--course",
                              str(course), "--out", str(out)], capture_output=True, text=True)
        wall = time.monotonic() - start
        if run.returncode != 0:
            sys.exit(f"the grader failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
        cells: dict[str, list[float]] = {}
        for path in (out / "results").glob("*/*.json"):
            result = json.loads(path.read_text())
            cells.setdefault(result["assignment"], []).append(
                sum(c.get("seconds") or 0 for nb in result["notebooks"].values() for c in nb["cells"]))
    count = args.students * len(names)
    print(next((line for line in run.stderr.splitlines() + run.stdout.splitlines() if line.startswith("graded ")), ""))
    print(f"{count} complete notebooks ({args.students} students x {len(names)} assignments): {wall:.1f} s, "
          f"{wall / count:.2f} s per notebook")
    for name in sorted(cells):
        print(f"  {name:30s} cells ran {statistics.median(cells[name]):.2f} s per notebook on one worker (median)")


if __name__ == "__main__":
    main()
