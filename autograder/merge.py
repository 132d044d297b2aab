"""Runs as the instructor (a command line): merge the outputs of several grading runs (one `--shard K/N` per
machine or array task) into one.

    python -m autograder.merge SHARD_OUT [SHARD_OUT ...] --out DIR

Writes DIR/grades.csv (one header, rows sorted by student and assignment), DIR/summary.txt and DIR/summary.json (one
summary for the class, merged by the kind of each event in the shards' summary.json: each shard's events about its
run marked with its shard, the students' events kept, and those that list or count students for the whole class,
such as "no submission" and answers waiting for a person, joined into one per assignment), and copies the feedback
and results folders. Refused, with nothing written: a shard missing from the count its outputs give (each finished
run writes `shard.json` last, saying which shard of how many it holds), outputs given different counts, a shard
given twice, a student/assignment graded in two outputs, and a grades.csv without its status column (from a grader
before 2026-11-28: grade that shard again). Outputs without shard.json (from before it) merge unchecked; a summary
without summary.json (from before it) keeps each of its lines once, as they are.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from autograder import shards
from autograder.atomic import write_atomically
from autograder.errors import GraderError
from autograder.grades_csv import CSV_COLUMNS, OldGradesFile, csv_text, read_csv, write_summary
from autograder.outcome import Event, EventKind, OutcomeError, read_summary_json


class MergeError(GraderError, ValueError):
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


def merge_summaries(parts: list[tuple[str, list[Event]]]) -> list[Event]:
    """One summary from each shard's (label, events), by kind: events about a run marked with their label, the
    students' events kept once each, then answers waiting for a person and students who handed in nothing, one per
    assignment, and students new to the roster, all joined across shards."""
    runs: list[Event] = []
    students: list[Event] = []
    pending: dict[str, tuple[int, int, set[str]]] = {}
    missing: dict[str, set[str]] = {}
    newcomers: set[str] = set()
    for label, events in parts:
        for event in events:
            if event.kind.about_the_run:
                runs.append(replace(event, text=f"{label}: {event.text}") if label else event)
            elif event.kind is EventKind.PENDING:
                answers, submissions, cells = pending.get(event.assignment, (0, 0, set()))
                pending[event.assignment] = (answers + event.answers, submissions + event.submissions,
                                             cells | set(event.cells))
            elif event.kind is EventKind.NO_SUBMISSION:
                missing.setdefault(event.assignment, set()).update(event.students)
            elif event.kind is EventKind.NEW_STUDENTS:
                newcomers.update(event.students)
            elif event not in students:
                students.append(event)
    return (runs + students + [Event.pending(a, n, s, sorted(c)) for a, (n, s, c) in sorted(pending.items())]
            + [Event.no_submission(a, sorted(names)) for a, names in sorted(missing.items())]
            + ([Event.new_students(sorted(newcomers))] if newcomers else []))


def shard_summary(shard: Path) -> list[Event]:
    """A shard's summary events: its summary.json, or for an output from before summary.json, each line of its
    summary.txt as it is (kept once, never read for its meaning). MergeError if summary.json is not one."""
    typed, text = shard / "summary.json", shard / "summary.txt"
    if typed.is_file():
        try:
            return read_summary_json(typed.read_bytes(), str(typed))
        except OutcomeError as error:
            raise MergeError(f"{error}; nothing was merged") from None
    lines = text.read_text().splitlines() if text.is_file() else []
    return [Event(EventKind.SUBMISSION, line) for line in lines if line.strip()]


def merge(outputs: list[Path], out: Path) -> int:
    """Write out/grades.csv, out/summary.txt, out/feedback/, out/results/ from the outputs; return the number of
    rows. MergeError (nothing written) when they are not one whole class."""
    records = check_complete(outputs)
    rows: list[dict[str, str]] = []
    owner: dict[tuple[str, str], Path] = {}
    for shard in outputs:
        try:
            found = read_csv(shard / "grades.csv")
        except OldGradesFile as error:
            raise MergeError(f"{error}; nothing was merged") from None
        for row in found:
            key = (row["student"], row["assignment"])
            if owner.setdefault(key, shard) != shard:
                raise MergeError(f"{key[0]}/{key[1]} was graded in both {owner[key]} and {shard}")
            rows.append(row)
    rows.sort(key=lambda r: (r["student"], r["assignment"]))
    parts = []
    for shard in sorted(outputs, key=lambda o: records.get(o, (0, 0))):
        k, n = records.get(shard, (0, 0))
        parts.append((f"shard {k}/{n}" if n > 1 else "", shard_summary(shard)))
    out.mkdir(parents=True, exist_ok=True)
    for shard in outputs:
        for folder in ("feedback", "results"):
            if (shard / folder).is_dir():
                shutil.copytree(shard / folder, out / folder, dirs_exist_ok=True)
    write_atomically(out / "grades.csv", csv_text([list(CSV_COLUMNS)] + [[r[c] for c in CSV_COLUMNS] for r in rows]))
    write_summary(out, merge_summaries(parts))
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    try:
        rows = merge(args.shards, args.out)
    except GraderError as error:
        print(f"error: {error.explain()}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    print(f"merged {rows} rows into {args.out / 'grades.csv'} and one summary, {args.out / 'summary.txt'}")


if __name__ == "__main__":
    main()
