"""Grade every submission under a folder laid out as nbgrader's `submitted/<student>/<assignment>/`.

    python -m autograder.grade SUBMITTED_DIR [--out DIR] [--assignment NAME ...] [--workers N]
                                              [--limit NAME=VALUE ...] [--fresh] [--shard K/N]

Writes, under DIR (default `graded/`):
  grades.csv                                 student, assignment, task, score, max_score, note
  feedback/<student>/<assignment>/*.html     what the student may see: their cells, visible tests, results
  results/<student>/<assignment>.json        one file per graded submission (how a stopped run resumes)

Each notebook runs in its own sandboxed process (see sandbox.py and limits.toml) with the instructor's locked
cells taken from `source/` (see plan.py). Submitted files are only read. A submission that cannot be graded
scores 0 with the reason in the CSV note and its feedback, and grading of the others goes on. Re-running skips
submissions whose files, source and grader are unchanged (use --fresh to grade everything again).
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from autograder import feedback, sandbox
from autograder.course import REPO_ROOT, SOURCE_DIR, assignments
from autograder.plan import NotANotebook, make_plan, read_notebook
from autograder.runner import readable_paths, run_plan

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
CSV_COLUMNS = ("student", "assignment", "task", "score", "max_score", "note")
# Imported before any notebook runs. Some imports rebind attributes of modules the tests rely on (loading
# torch._dynamo, as FlopCounterMode does on first use, replaces torch.manual_seed); doing them here, before the
# guard's record is taken, keeps a correct solution from looking like tampering.
PRELOAD = ("torch", "torch._dynamo", "torch.func", "torch.amp", "torch.utils.flop_counter", "torch.testing",
           "numpy", "numpy.testing", "einops", "jaxtyping", "beartype", "matplotlib", "matplotlib.pyplot", "tqdm",
           "IPython.core.interactiveshell", "traitlets.config")


@dataclass
class GradeRow:
    student: str
    assignment: str
    task: str
    score: float
    max_score: float
    note: str = ""


@dataclass
class Job:
    student: str
    assignment: str
    folder: Path
    key: str


def preload() -> None:
    """Import once, in the grader, what every notebook needs; each notebook process is a fork and starts warm."""
    import importlib
    os.environ.setdefault("MPLBACKEND", "Agg")
    for name in PRELOAD:
        importlib.import_module(name)
    import io
    import torch
    torch.save(torch.nn.Parameter(torch.zeros(1)), io.BytesIO())  # first pickling adds caches to torch's classes
    for path in sorted((REPO_ROOT / "utils").glob("*.py")):
        importlib.import_module(f"utils.{path.stem}" if path.stem != "__init__" else "utils")


def find_submissions(submitted: Path) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """(student, assignment, folder) for each submission, and a line for each folder that is not one."""
    found, skipped = [], []
    for student_dir in sorted(p for p in submitted.iterdir() if not p.name.startswith(".")):
        if not student_dir.is_dir() or student_dir.is_symlink() or not SAFE_NAME.match(student_dir.name):
            skipped.append(f"{student_dir.name!r}: not a student folder (letters, digits and _.@+- only)")
            continue
        for assignment_dir in sorted(p for p in student_dir.iterdir() if not p.name.startswith(".")):
            if assignment_dir.is_dir() and not assignment_dir.is_symlink() and SAFE_NAME.match(assignment_dir.name):
                found.append((student_dir.name, assignment_dir.name, assignment_dir))
            else:
                skipped.append(f"{student_dir.name}/{assignment_dir.name}: not an assignment folder")
    return found, skipped


def notebook_names(assignment: str) -> list[str]:
    return sorted(p.stem for p in (SOURCE_DIR / assignment).glob("*.ipynb"))


def _digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.is_file() and not path.is_symlink() else b"<missing>")
    return h.hexdigest()


def grader_digest(limits: sandbox.Limits) -> str:
    """Changes whenever the grader, the course's utils or the limits change: results made before are stale."""
    code = sorted((REPO_ROOT / "autograder").glob("*.py")) + sorted((REPO_ROOT / "utils").glob("*.py"))
    return _digest(code, repr(limits))


def job_key(assignment: str, folder: Path, grader: str) -> str:
    names = notebook_names(assignment)
    source = [SOURCE_DIR / assignment / f"{n}.ipynb" for n in names]
    submitted = [folder / f"{n}.ipynb" for n in names]
    return _digest(source + submitted, grader)


def grade_submission(job: Job, limits: sandbox.Limits, readable: list[Path], work_root: Path) -> dict:
    """Run every notebook of one submission; the result that goes to results/<student>/<assignment>.json."""
    notebooks, problems = {}, []
    for name in notebook_names(job.assignment):
        path = job.folder / f"{name}.ipynb"
        source = json.loads((SOURCE_DIR / job.assignment / f"{name}.ipynb").read_text())
        if not path.exists():
            present = ", ".join(sorted(p.name for p in job.folder.iterdir())) or "nothing"
            problems.append(f"missing notebook {name}.ipynb (the folder holds: {present})")
            submitted = {"cells": []}
        else:
            try:
                submitted = read_notebook(path)
            except NotANotebook as error:
                problems.append(f"{name}.ipynb is not a valid notebook: {error}")
                submitted = {"cells": []}
        plan = make_plan(name, source, submitted)
        runnable = path.exists() and submitted["cells"]
        workdir = work_root / job.student / job.assignment / name
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        if runnable:
            results = run_plan(plan, limits, workdir, readable)
        else:
            results = [{"ok": False, "output": "", "error": "not run", "restored": [], "tampered": []} for _ in plan.cells]
        shutil.rmtree(workdir, ignore_errors=True)
        cells = [dict(kind=c.kind, grade_id=c.grade_id, points=c.points, visible_code=c.visible_code, **r)
                 for c, r in zip(plan.cells, results)]
        notebooks[name] = {"cells": cells, "flags": plan.flags, "ran": bool(runnable)}
    return {"key": job.key, "student": job.student, "assignment": job.assignment, "problems": problems,
            "notebooks": notebooks}


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def run_jobs(jobs: list[Job], limits: sandbox.Limits, readable: list[Path], out: Path) -> None:
    """Grade `jobs` with up to `limits.workers` at once, each in a forked grader process of its own."""
    workers = limits.workers or os.cpu_count() or 1
    running: dict[int, Job] = {}

    def finish_one() -> None:
        pid, status = os.wait()
        job = running.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0 and not result_path(out, job).exists():
            error = {"key": job.key, "student": job.student, "assignment": job.assignment, "notebooks": {},
                     "problems": ["the grader failed on this submission; an instructor will look at it"]}
            _write_atomically(result_path(out, job), json.dumps(error))

    for job in jobs:
        while len(running) >= workers:
            finish_one()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                result = grade_submission(job, limits, readable, out / "work")
                _write_atomically(result_path(out, job), json.dumps(result))
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        running[pid] = job
    while running:
        finish_one()


def result_path(out: Path, job: Job) -> Path:
    return out / "results" / job.student / f"{job.assignment}.json"


def rows_and_feedback(result: dict, out: Path) -> list[GradeRow]:
    """The CSV rows of one graded submission; writes its feedback pages too."""
    student, assignment = result["student"], result["assignment"]
    folder = out / "feedback" / student / assignment
    shutil.rmtree(folder, ignore_errors=True)
    problems = list(result["problems"])
    rows = []
    for name, notebook in result["notebooks"].items():
        notes = []
        if notebook["flags"]:
            notes.append(f"flagged for review: {name} uses {', '.join(notebook['flags'])}")
        tampered = sorted({t for c in notebook["cells"] for t in c["tampered"]})
        if tampered:
            notes.append(f"tests failed because the test tools were changed while they ran: {', '.join(tampered[:5])}")
        if notebook["ran"]:
            feedback.write(folder / f"{name}.html", feedback.render(student, assignment, name, notebook["cells"], notes))
        note = "; ".join(problems + notes)
        for cell in notebook["cells"]:
            if cell["kind"] == "test":
                rows.append(GradeRow(student, assignment, cell["grade_id"], cell["points"] if cell["ok"] else 0.0,
                                     cell["points"], note))
    if problems:
        feedback.write(folder / "problems.html", feedback.render_problems(student, assignment, problems))
    if not result["notebooks"]:
        rows.append(GradeRow(student, assignment, "-", 0.0, 0.0, "; ".join(problems)))
    return rows


def grade(submitted: Path, out: Path, names: list[str] | None = None, limits: sandbox.Limits | None = None,
          fresh: bool = False, shard: tuple[int, int] = (1, 1)) -> list[GradeRow]:
    """Grade every submission under `submitted` into `out`; return the rows written to `out/grades.csv`."""
    submitted, out = submitted.resolve(), out.resolve()
    if out.is_relative_to(submitted) or submitted.is_relative_to(out):
        raise ValueError("the output folder and the submissions folder must not contain one another")
    limits = limits or sandbox.load_limits()
    names = names or assignments()
    preload()
    grader = grader_digest(limits)
    found, skipped = find_submissions(submitted)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    index, count = shard
    found = [f for i, f in enumerate(found) if i % count == index - 1]
    rows, jobs, todo = [], [], []
    for student, assignment, folder in found:
        if assignment not in names:
            problem = f"unknown assignment {assignment!r} (known: {', '.join(names)})"
            feedback.write(out / "feedback" / student / assignment / "problems.html",
                           feedback.render_problems(student, assignment, [problem]))
            rows.append(GradeRow(student, assignment, "-", 0.0, 0.0, problem))
            continue
        job = Job(student, assignment, folder, job_key(assignment, folder, grader))
        jobs.append(job)
        path = result_path(out, job)
        if fresh or not path.exists() or json.loads(path.read_text()).get("key") != job.key:
            path.unlink(missing_ok=True)
            todo.append(job)
    started = time.monotonic()
    run_jobs(todo, limits, readable_paths(REPO_ROOT, [submitted, out]), out)
    print(f"graded {len(todo)} submission(s) in {time.monotonic() - started:.1f} s "
          f"({len(jobs) - len(todo)} unchanged, reused)", file=sys.stderr)
    for job in jobs:
        rows += rows_and_feedback(json.loads(result_path(out, job).read_text()), out)
    shutil.rmtree(out / "work", ignore_errors=True)
    write_csv(rows, out / "grades.csv")
    return rows


def write_csv(rows: list[GradeRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            writer.writerow((r.student, r.assignment, r.task, f"{r.score:g}", f"{r.max_score:g}", r.note))
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submitted", type=Path, help="folder of <student>/<assignment>/ submissions")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="where grades and feedback go")
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    parser.add_argument("--workers", type=int, help="submissions graded at once (default: limits.toml, 0 = all cores)")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="override a limit of limits.toml")
    parser.add_argument("--fresh", action="store_true", help="grade everything again, ignoring earlier results")
    parser.add_argument("--shard", default="1/1", metavar="K/N", help="grade only the K-th of N equal slices of the class")
    args = parser.parse_args()
    if not args.submitted.is_dir():
        parser.error(f"{args.submitted} is not a folder")
    overrides = args.limit + ([f"workers={args.workers}"] if args.workers is not None else [])
    try:
        limits = sandbox.load_limits(overrides=overrides)
        index, count = (int(x) for x in args.shard.split("/"))
        assert 1 <= index <= count
    except (ValueError, AssertionError) as error:
        parser.error(str(error) or f"bad --shard {args.shard!r}: use K/N with 1 <= K <= N")
    print(f"sandbox on this machine: {', '.join(sandbox.probe(limits))}", file=sys.stderr)
    rows = grade(args.submitted, args.out, args.assignment, limits, args.fresh, (index, count))
    totals: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        total = totals.setdefault((r.student, r.assignment), [0.0, 0.0])
        total[0] += r.score
        total[1] += r.max_score
    for (student, assignment), (score, max_score) in sorted(totals.items()):
        print(f"{student:20s} {assignment:24s} {score:g} / {max_score:g}")
    print(f"Wrote {args.out / 'grades.csv'} and feedback under {args.out / 'feedback'}")


if __name__ == "__main__":
    main()
