"""Runs as the instructor (a command line): merge the outputs of several grading runs (one `--shard K/N` per
machine or array task) into one.

    python -m autograder.merge SHARD_OUT [SHARD_OUT ...] --out DIR

Writes DIR/grades.csv (one header, rows sorted by student and assignment), DIR/summary.txt (one summary for the class:
each shard's own lines marked with its shard, the students' lines kept, and the lines that list students for the
whole class, such as "no submission", joined into one per assignment), and copies the feedback and results folders.
Refused, with nothing written: a shard missing from the count its outputs give (each finished run writes
`shard.json` last, saying which shard of how many it holds), outputs given different counts, a shard given twice, and
a student/assignment graded in two outputs. Outputs without shard.json (from before it) merge as before, unchecked.
"""
from __future__ import annotations

import argparse
import csv
import re
import shutil
from pathlib import Path

from autograder import shards
from autograder.grader.write import CSV_COLUMNS

# Summary lines about one run, not about students: each is kept, marked with its shard.
RUN_LINES = ("graded ", "recorded ", "on this machine:", "sandbox on this machine:", "self-check passed",
             "removed what a stopped run had left", "skipped ", "an earlier result could not be read")
LISTS = re.compile(r"^(no submission: [^:]+: |not on the roster, added to the gradebook: )(.*)$")
PENDING = re.compile(r"^needs manual grading \(formgrader\): ([^:]+): (\d+) answer\(s\) in (\d+) submission\(s\), "
                     r"cells (.*)$")


class MergeError(ValueError):
    """The outputs do not make one whole class; the message says which shard is missing or doubled."""


def check_complete(outputs: list[Path]) -> dict[Path, tuple[int, int]]:
    """{output: (K, N)} when the outputs are every shard of one count, each once; MergeError otherwise."""
    found = {out: shards.read_output_record(out) for out in outputs}
    unfinished = [out for out, record in found.items() if record is None]
    records = {out: (r["index"], r["count"]) for out, r in found.items() if r is not None}
    if not records:
        return {}
    counts = sorted({count for _, count in records.values()})
    if len(counts) > 1:
        raise MergeError("the outputs are shards of different counts: " + ", ".join(
            f"{out} is shard {k} of {n}" for out, (k, n) in sorted(records.items())) + "; nothing was merged")
    count = counts[0]
    owner: dict[int, Path] = {}
    for out, (index, _) in sorted(records.items()):
        if index in owner:
            raise MergeError(f"shard {index} of {count} is given twice ({owner[index]} and {out}); nothing was merged")
        owner[index] = out
    missing = [k for k in range(1, count + 1) if k not in owner]
    if missing:
        where = f" ({', '.join(map(str, unfinished))} did not finish: no shard.json)" if unfinished else ""
        raise MergeError(f"shard {', '.join(map(str, missing))} of {count} is missing{where}; nothing was merged. "
                         f"Run it again (Slurm: `sbatch --array={','.join(map(str, missing))} "
                         "deploy/slurm/grade.sbatch`; Kubernetes: the Job retries a failed index) and merge then.")
    if unfinished:
        raise MergeError(f"{', '.join(map(str, unfinished))} did not finish (no shard.json) beside the {count} "
                         "shards; leave it out of the merge")
    return records


def merge_summaries(parts: list[tuple[str, list[str]]]) -> list[str]:
    """One summary from each shard's (label, lines): run lines marked with their label, class-wide lists joined."""
    runs: list[str] = []
    students: list[str] = []
    lists: dict[str, set[str]] = {}
    pending: dict[str, tuple[int, int, set[str]]] = {}
    for label, lines in parts:
        for line in lines:
            listed, waiting = LISTS.match(line), PENDING.match(line)
            if line.startswith(RUN_LINES):
                runs.append(f"{label}: {line}" if label else line)
            elif listed:
                lists.setdefault(listed.group(1), set()).update(n for n in listed.group(2).split(", ") if n)
            elif waiting:
                answers, submissions, cells = pending.get(waiting.group(1), (0, 0, set()))
                pending[waiting.group(1)] = (answers + int(waiting.group(2)), submissions + int(waiting.group(3)),
                                             cells | set(waiting.group(4).split(", ")))
            elif line not in students:
                students.append(line)
    lines = runs + students
    lines += [f"needs manual grading (formgrader): {a}: {n} answer(s) in {s} submission(s), cells {', '.join(sorted(c))}"
              for a, (n, s, c) in sorted(pending.items())]
    lines += [f"{head}{', '.join(sorted(names))}" for head, names in sorted(lists.items())]
    return lines


def merge(outputs: list[Path], out: Path) -> int:
    """Write out/grades.csv, out/summary.txt, out/feedback/, out/results/ from the outputs; return the number of
    rows. MergeError (nothing written) when they are not one whole class."""
    records = check_complete(outputs)
    rows: list[dict[str, str]] = []
    owner: dict[tuple[str, str], Path] = {}
    for shard in outputs:
        with open(shard / "grades.csv", newline="") as f:
            for row in csv.DictReader(f):
                key = (row["student"], row["assignment"])
                if owner.setdefault(key, shard) != shard:
                    raise MergeError(f"{key[0]}/{key[1]} was graded in both {owner[key]} and {shard}")
                rows.append(row)
    rows.sort(key=lambda r: (r["student"], r["assignment"]))
    parts = []
    for shard in sorted(outputs, key=lambda o: records.get(o, (0, 0))):
        k, n = records.get(shard, (0, 0))
        text = (shard / "summary.txt").read_text() if (shard / "summary.txt").is_file() else ""
        parts.append((f"shard {k}/{n}" if n > 1 else "", [line for line in text.splitlines() if line.strip()]))
    out.mkdir(parents=True, exist_ok=True)
    for shard in outputs:
        for folder in ("feedback", "results"):
            if (shard / folder).is_dir():
                shutil.copytree(shard / folder, out / folder, dirs_exist_ok=True)
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    (out / "summary.txt").write_text("\n".join(merge_summaries(parts)) + "\n")
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        rows = merge(args.shards, args.out)
    except MergeError as error:
        raise SystemExit(f"error: {error}") from None
    print(f"merged {rows} rows into {args.out / 'grades.csv'} and one summary, {args.out / 'summary.txt'}")


if __name__ == "__main__":
    main()
