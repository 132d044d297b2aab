"""Runs in the grader: writes a run's results into the gradebook (one transaction) and then autograded/ (each
submission's folder staged and put in place only once the gradebook holds it)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from autograder import gradebook
from autograder.gradebook import TOTAL, not_graded_note
from autograder.grader.find import kept_files, read_timestamp
from autograder.grader.run import Run, owned_name
from autograder.grader.workers import Job
from autograder.grader.write import review_lines, submission_notes
from autograder.outcome import Event, EventKind, SubmissionOutcome


def record(run: Run, jobs: list[Job], results: list[SubmissionOutcome], create: bool) -> tuple[dict, dict]:
    """Write the run into the gradebook and autograded/; return the CSV notes {(student, assignment, grade_id or
    TOTAL): text} and the submissions not graded {(student, assignment): why}. On GradebookError nothing is written
    anywhere."""
    autograded_root = run.course.folder("autograded")
    staging = autograded_root / owned_name(".staging")
    graded, notes, staged, not_graded = [], {}, [], {}
    try:
        for job, result in zip(jobs, results):
            if result.grader_errors:  # never the student's fault, never scored: the gradebook keeps what it had
                run.summary += [Event(EventKind.SUBMISSION, "NOT GRADED, the grader's fault (not the student's): "
                                      f"{job.student}/{job.assignment}: {e}") for e in result.grader_errors]
                not_graded[(job.student, job.assignment)] = not_graded_note("; ".join(result.grader_errors)[:300])
                continue
            timestamp, missing = read_timestamp(job.folder)
            overall, per_cell = submission_notes(result)
            if missing:
                run.summary.append(Event(EventKind.SUBMISSION, f"no submission time for {job.student}/{job.assignment} "
                                         f"({missing}): lateness not checked"))
                overall.append(f"{missing}: lateness not checked")
            notes.update({(job.student, job.assignment, gid): text for gid, text in per_cell.items()})
            notes[(job.student, job.assignment, TOTAL)] = "; ".join(overall)
            run.summary += [Event(EventKind.SUBMISSION, f"could not grade part of {job.student}/{job.assignment}: {p}")
                            for p in result.problems]
            run.summary += [Event(EventKind.SUBMISSION, f"{job.student}/{job.assignment}: {line}")
                            for line in review_lines(result)]
            graded.append(gradebook.Graded(job.student, job.assignment, timestamp,
                                           {n: {"grades": nb.grades, "comments": nb.comments}
                                            for n, nb in result.notebooks.items()},
                                           {n: ", ".join(flags) for n, flags in result.flagged.items()}))
            _stage(result, job.folder, staging / job.student / job.assignment)
            staged.append(job)
        lines, resubmitted = gradebook.write(run.course, graded, create)
        run.summary += [Event(EventKind.SUBMISSION, line) for line in lines]
        for student, assignment in resubmitted:
            total = (student, assignment, TOTAL)
            notes[total] = "; ".join(filter(None, [gradebook.REGRADED_AFTER_HAND_GRADE, notes.get(total, "")]))
        for job in staged:
            _install(staging / job.student / job.assignment, run.course.folder("autograded", job.student, job.assignment))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return notes, not_graded


def _stage(result: SubmissionOutcome, folder: Path, staging: Path) -> None:
    """Write one submission's autograded notebooks (and its timestamp and secret) under `staging`."""
    import nbformat
    staging.mkdir(parents=True)
    for name, notebook in result.notebooks.items():
        if notebook.notebook:
            node = nbformat.from_dict(notebook.notebook)
            (staging / f"{name}.ipynb").write_text(nbformat.writes(node, version=4))
    for name, data in kept_files(folder).items():
        (staging / name).write_bytes(data)


def _install(staged: Path, target: Path) -> None:
    """Put a staged autograded folder in place of the old one (each step a rename on the same file system)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(owned_name(f".{target.name}.old"))
    if target.exists():
        os.replace(target, old)
    os.replace(staged, target)
    shutil.rmtree(old, ignore_errors=True)
