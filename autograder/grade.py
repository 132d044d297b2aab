"""Runs as the instructor (`make grade`'s command line): grade every submission of an nbgrader course into its
gradebook, nbgrader's way, with our fast sandboxed runner.

    python -m autograder.grade [SUBMITTED_DIR] [--course DIR] [--out DIR] [--assignment NAME ...] [--workers N]
                               [--limit NAME=VALUE ...] [--fresh] [--shard K/N]

The course (default: the current folder when it holds an nbgrader_config.py, else this repository) is an nbgrader
course; SUBMITTED_DIR (default: the course's `submitted/`) is laid out as `<student>/<assignment>/`, as
`nbgrader collect` or `python -m autograder.lms_import` leave it. A run writes
  the gradebook (nbgrader's, the course's `db_url`)  students, submissions with their times, every graded cell's
                                                     automatic score and comment, late penalties; in one transaction
  autograded/<student>/<assignment>/                 nbgrader's layout: notebooks with outputs and metadata (what
                                                     formgrader shows and `nbgrader generate_feedback` renders)
  OUT/grades.csv (default graded/)                   per student and assignment: one row per graded cell and a
                                                     TOTAL row (late penalty taken off), each with its status
                                                     (graded, not graded, no submission); 0 for "no submission"
  OUT/summary.txt, OUT/summary.json                  what the run could not grade or decide, also printed; typed
  OUT/feedback/<student>/<assignment>/*.html         quick feedback pages (nbgrader's own: generate_feedback)
  OUT/results/<student>/<assignment>.json            one file per graded submission (how a stopped run resumes)
  <course>/.gradebook-ledger.json                    what the gradebook held after this run, kept with the gradebook
                                                     (not in OUT): the next run refuses a gradebook that has lost it,
                                                     or a ledger cut short, unless --start-over
  OUT/shard.json                                     which shard of how many OUT holds, and its students; written
                                                     last (autograder.merge refuses a shard without it)

Each notebook runs in its own sandboxed process (autograder/sandboxed/, limits.toml) with the instructor's locked
cells taken from `source/` (grader/plan.py). Submitted files are only read. A submission the student broke scores 0
with the reason in the CSV note and its feedback; one the grader could not grade is "NOT GRADED" with the reason
(never scored, never reused), and grading of the others goes on. Re-running skips submissions whose files, source
and grader are unchanged (use --fresh to grade everything again); manual scores given in formgrader are kept either
way. One run per course (or shard) at a time: a second one stops at once, saying who runs the first.

While the notebooks run, stderr shows how far it is (progress.py): a bar on a terminal, a plain line every 10 s in
a log, with notebooks done of the total, the rate, the time elapsed and left, and the grader's own failures.

Exit status: 0 when every submission was graded; 2 when the run could not start or stopped (before its commit:
nothing written to the gradebook; after it, as when the disk fills while writing grades.csv: the message says that
the commit went through, what the gradebook holds of the run and what was not written); 3 when the grader failed on
some submissions (the others are graded; summary.txt lists each); 130 when it was interrupted (Ctrl-C: the grader alone handles it, autograder/forked.py, and says what is
kept). What a run costs is measured in bench/ (the figures: docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys
import tempfile
from pathlib import Path

from autograder import database, shards
from autograder.course import Course, default_course
from autograder.errors import GraderError
from autograder.gradebook import TOTAL
from autograder.grader.pipeline import grade  # the grader's command line: it runs the grader
from autograder.grader.record import StoppedAfterCommit  # the grader's stop after its commit, which it reports
from autograder.limits import load_limits
from autograder.outcome import Status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submitted", type=Path, nargs="?", help="folder of <student>/<assignment>/ submissions "
                        "(default: the course's submitted/)")
    parser.add_argument("--course", type=Path, help="the nbgrader course folder (default: the current folder if it "
                        "holds nbgrader_config.py, else this repository)")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="where grades.csv, the summary and feedback go")
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    parser.add_argument("--workers", type=int, help="submissions graded at once (default: limits.toml; 0 = one per CPU "
                        "this process may use, fewer where the job's memory is short: limits.fit_to_machine)")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="override a limit of limits.toml")
    parser.add_argument("--fresh", action="store_true", help="run every notebook again, ignoring earlier results")
    parser.add_argument("--start-over", action="store_true", help="write into a gradebook that has lost what earlier "
                        "runs recorded (a new, empty one on purpose); without it such a run stops and says what is gone")
    parser.add_argument("--re-record", action="append", default=[], metavar="STUDENT/ASSIGNMENT",
                        help="record again submissions the gradebook lost (patterns allowed: '*/01_floats'), keeping "
                        "the rest of the gradebook as it is (manual scores, extensions, due dates); repeatable")
    parser.add_argument("--shard", default="1/1", metavar="K/N", help="grade only the K-th of N equal slices of the "
                        "class; 'auto': from a Slurm array's or a Kubernetes Indexed Job's environment (shards.py)")
    parser.add_argument("--shard-count", type=int, metavar="N", help="with --shard auto under Kubernetes: how many "
                        "shards (default: the GRADER_SHARDS variable)")
    args = parser.parse_args()
    course_root = args.course or default_course()
    if not (course_root / "source").is_dir():
        parser.error(f"{course_root} is not a course folder (it has no source/)")
    try:
        course = Course.load(course_root)
    except SystemExit as error:  # the course's nbgrader_config.py stopped (say GRADEBOOK_URL is not set): exit 2
        print(error, file=sys.stderr)
        raise SystemExit(2) from None
    submitted = args.submitted or course.folder("submitted")
    if not submitted.is_dir():
        parser.error(f"{submitted} is not a folder")
    overrides = args.limit + ([f"workers={args.workers}"] if args.workers is not None else [])
    try:
        limits = load_limits(overrides=overrides)
        index, count, shard_from = shards.resolve(args.shard, args.shard_count, os.environ)
    except ValueError as error:  # shards.ShardError says what was read and what to do
        parser.error(str(error))
    if not sys.platform.startswith("linux"):
        raise SystemExit("error: the grader's sandbox needs Linux (namespaces, Landlock); on this machine a "
                         "student's code could reach the course's files and the grader. Grade on Linux.")
    if (index, count) != (1, 1) or args.shard != "1/1":
        print(f"shard {index} of {count}, from {shard_from}", file=sys.stderr)
    try:
        rows = grade(submitted, args.out, names=args.assignment, limits=limits, fresh=args.fresh,
                     shard=(index, count), course=course, start_over=args.start_over, re_record=tuple(args.re_record))
    except GraderError as error:  # the gradebook, a run lock, the self-check, the sandbox, a refused argument...
        cause = error.cause if isinstance(error, StoppedAfterCommit) else None
        full = full_folders(cause, run_folders(course, args.out)) if isinstance(cause, OSError) else ""
        print(f"error: {error.explain()}{full}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    except OSError as error:  # before the commit: the gradebook was not written
        said = f"{error.strerror}: {error.filename}" if error.filename else (error.strerror or str(error))
        print(f"error: {said}.{full_folders(error, run_folders(course, args.out))} {kept(args.out)}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print(f"error: interrupted (Ctrl-C); the run stopped. The gradebook is written in one transaction, at the end: "
              f"it holds all of this run's grades or none of them. {kept(args.out)}", file=sys.stderr)
        raise SystemExit(130) from None
    for r in rows:
        if r.task in (TOTAL, "-"):
            score = "-" if r.score is None else f"{r.score:g}"
            print(f"{r.student:20s} {r.assignment:24s} {score} / {r.max_score:g}"
                  f"{f'  (late penalty {r.late_penalty:g})' if r.late_penalty else ''}{f'  {r.note}' if r.note else ''}")
    print(f"Wrote the gradebook ({database.safe_url(course.db_url)}), {course.folder('autograded')}/, {args.out / 'grades.csv'} "
          f"and {args.out / 'summary.txt'}")
    failed = [r for r in rows if r.task == TOTAL and r.status is Status.NOT_GRADED]
    if failed:
        print(f"error: the grader failed on {len(failed)} submission(s), which were not graded (summary.txt says why; "
              "a re-run grades them again)", file=sys.stderr)
        raise SystemExit(3)


def run_folders(course: Course, out: Path) -> dict[str, Path]:
    """Where a run writes, by what each is to the run (for `full_folders`)."""
    return {"the temporary folder": Path(tempfile.gettempdir()), "the output folder": out,
            "autograded/": course.folder("autograded"), "the course folder": course.root}


def kept(out: Path) -> str:
    """What a stopped run leaves for the next one: the graded results in OUT/results (this run's and earlier ones')."""
    count = sum(1 for _ in (out / "results").glob("*/*.json")) if (out / "results").is_dir() else 0
    if count == 0:
        return (f"No submission had been graded yet ({out / 'results'} holds no result), and nothing was written to "
                "the gradebook; run again once the cause is fixed.")
    return (f"Nothing was written to the gradebook (the run stopped before its commit); the {count} graded result(s) "
            f"in {out / 'results'} are kept, and a re-run reuses them (it runs only what is missing).")


def full_folders(error: OSError, folders: dict[str, Path]) -> str:
    """For a full disk (ENOSPC, EDQUOT): the folders of the run the error may come from (the one it names, else all of
    `folders`), each with the room on its file system now that the run has stopped; '' for any other error."""
    if error.errno not in (errno.ENOSPC, errno.EDQUOT):
        return ""
    if isinstance(error.filename, str):  # atomic.write_atomically names the file it could not write
        named = Path(error.filename)
        holding = {what: path.resolve() for what, path in folders.items() if named.is_relative_to(path.resolve())}
        deepest = max((len(path.parts) for path in holding.values()), default=0)  # autograded/ rather than the course
        folders = {what: path for what, path in holding.items() if len(path.parts) == deepest} or \
            {"the folder": named.parent}
    shown = []
    for what, path in folders.items():
        room = _room(path)
        tmpdir = " (TMPDIR)" if what == "the temporary folder" else ""
        size = f"{_size(room[0])} free now, of {_size(room[1])}" if room else "its room cannot be measured"
        shown.append(f"{what} {path}{tmpdir}: {size}")
    return (f" The disk is full where the run writes: {'; '.join(shown)}. Make room there, or point TMPDIR or --out "
            "at a folder with room.")


def _room(path: Path) -> tuple[int, int] | None:
    """(free bytes, size) of the file system holding `path` (or its nearest existing parent)."""
    path = path.resolve()
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return None
    return usage.free, usage.total


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


if __name__ == "__main__":
    main()
