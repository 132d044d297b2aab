"""Runs as the instructor (a command line): merge the outputs of several grading runs (for example one `--shard K/N` per
machine) into one.

    python -m autograder.merge SHARD_OUT [SHARD_OUT ...] --out DIR

Concatenates the grades.csv files (one header, rows sorted by student and assignment) and copies the feedback
and results folders. A student/assignment graded in two shards is an error, not a silent overwrite.
"""
from __future__ import annotations

import argparse
import csv
import shutil
from pathlib import Path

from autograder.grader.write import CSV_COLUMNS


def merge(shards: list[Path], out: Path) -> int:
    """Write out/grades.csv, out/feedback/, out/results/ from the shards; return the number of rows."""
    rows, owner = [], {}
    for shard in shards:
        with open(shard / "grades.csv", newline="") as f:
            for row in csv.DictReader(f):
                key = (row["student"], row["assignment"])
                if owner.setdefault(key, shard) != shard:
                    raise SystemExit(f"{key[0]}/{key[1]} was graded in both {owner[key]} and {shard}")
                rows.append(row)
        for folder in ("feedback", "results"):
            if (shard / folder).is_dir():
                shutil.copytree(shard / folder, out / folder, dirs_exist_ok=True)
    rows.sort(key=lambda r: (r["student"], r["assignment"]))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(f"merged {merge(args.shards, args.out)} rows into {args.out / 'grades.csv'}")


if __name__ == "__main__":
    main()
