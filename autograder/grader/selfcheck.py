"""Runs in the grader: before grading anyone, grade the instructor's own solution and an empty notebook of each
assignment, exactly as a student's. A solution that falls short of full marks, or an empty notebook that earns a
point (a test that cannot fail), stops the run with a CourseError naming the task.

A passed check is remembered (by a digest of everything it depended on) and not run again.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from autograder.grader.workers import Job, Setting, read_result, result_path, run_jobs
from autograder.outcome import CellKind, SubmissionOutcome
from autograder.trusted.checker import CourseError


def cache_folder() -> Path:
    """Where passed self-checks are remembered."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cs336-primitives" / "self-check"


def digest(paths: list[Path], extra: str = "") -> str:
    """A digest of the files' names and contents (a missing or linked file counts as '<missing>') and `extra`."""
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.is_file() and not path.is_symlink() else b"<missing>")
    return h.hexdigest()


def self_check(setting: Setting, names: list[str], grader: str, work: Path) -> list[str]:
    """CourseError if an assignment's solution earns less than every point or its empty notebook more than none;
    the assignments checked now (not remembered from before)."""
    cache = cache_folder()
    todo = []
    for assignment in names:
        files = [setting.source / assignment / f"{n}.ipynb" for n in setting.sources[assignment]]
        files += sorted(p for p in (setting.source / assignment).rglob("*") if p.is_file() and p.suffix != ".ipynb")
        key = digest(files, f"{grader} {assignment}")
        if not (cache / key).exists():
            todo.append((assignment, key))
    jobs = []
    for assignment, key in todo:
        for who in ("solution", "blank"):
            folder = work / "submitted" / who / assignment
            folder.mkdir(parents=True, exist_ok=True)
            for name, source in setting.sources[assignment].items():
                notebook = source.copy()
                if who == "blank":
                    for cell, kept in zip(notebook["cells"], source.cells):
                        if kept.solution:
                            cell["source"] = ""
                (folder / f"{name}.ipynb").write_text(json.dumps(notebook))
            jobs.append(Job(who, assignment, folder, key))
    unwritten = run_jobs(jobs, setting, work)
    for job in jobs:
        _check(job, unwritten.get((job.student, job.assignment)) or read_result(result_path(work, job)), work)
    cache.mkdir(parents=True, exist_ok=True)
    for assignment, key in todo:
        (cache / key).write_text(f"{assignment}: the solution earns every point, an empty notebook none\n")
    return [assignment for assignment, _ in todo]


FULL_BELOW = 2**20  # bytes: a work folder with less room than this after a failure is named full


def _check(job: Job, result: SubmissionOutcome | None, work: Path) -> None:
    if result is None or result.grader_errors:
        raise CourseError(f"{job.assignment}: the self-check could not grade the instructor's {job.student} notebook "
                          f"(a problem of the grader or this machine, not of the course): "
                          f"{'; '.join(result.grader_errors if result else ['no result'])}{_full(work)}")
    for name, notebook in result.notebooks.items():
        for cell in notebook.cells:
            if cell.kind is not CellKind.TEST:
                continue
            if job.student == "solution" and not cell.ok:
                raise CourseError(f"{job.assignment}: the instructor's solution fails {cell.grade_id} in "
                                  f"{name}.ipynb: {cell.error_full or cell.error}")
            if job.student == "blank" and cell.ok:
                raise CourseError(f"{job.assignment}: an empty submission passes {cell.grade_id} in "
                                  f"{name}.ipynb: a test that cannot fail")


def _full(work: Path) -> str:
    """'. The temporary folder ... is full ...' when the run's work folder (in TMPDIR) has almost no room left (the
    failure's cause is measured, not read from its words); '' otherwise."""
    import shutil
    try:
        usage = shutil.disk_usage(work)
    except OSError:
        return ""
    if usage.free >= FULL_BELOW:
        return ""
    return (f". The temporary folder {work.parents[1]} (TMPDIR), where the run works, is full: {usage.free // 1024} KiB "
            f"free of {usage.total // 1024} KiB. Make room there, or point TMPDIR at a folder with room, and run again")
