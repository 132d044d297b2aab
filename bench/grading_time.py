"""How long does grading take? Grades N copies of the full solution of each assignment and reports seconds.

    .venv/bin/python -m bench.grading_time [N]

Prints the wall time of the whole run and per submission (nbgrader's own set-up included in the first).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from autograder.course import assignments
from autograder.grade import grade
from tests import submissions


def main() -> None:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        submitted, out = Path(scratch) / "submitted", Path(scratch) / "graded"
        for a in assignments():
            for i in range(copies):
                submissions.write_submission(submitted, f"student{i:03d}", a, submissions.solved(a))
        start = time.perf_counter()
        rows = grade(submitted, out)
        seconds = time.perf_counter() - start
    count = copies * len(assignments())
    print(f"graded {count} submissions ({len(rows)} task scores) in {seconds:.1f} s: "
          f"{seconds / count:.1f} s per submission, serial, including nbgrader set-up")


if __name__ == "__main__":
    main()
