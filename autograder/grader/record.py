"""Runs in the grader: writes a run's results into the gradebook (one transaction) and then autograded/ (each
submission's folder staged and put in place only once the gradebook holds it)."""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from autograder import gradebook
from autograder.database import GradebookError
from autograder.gradebook import TOTAL, RunNotes, not_graded_note
from autograder.grader.find import kept_files, read_timestamp
from autograder.grader.run import Run, owned_name
from autograder.grader.workers import Job
from autograder.grader.write import review_lines, submission_notes
from autograder.outcome import Event, EventKind, SubmissionOutcome


@dataclass
class Recorded:
    """What a run's commit put in the gradebook, and what is still to do with it: the run's notes for grades.csv
    (`notes`: its submissions, a note per cell and total, and those left out as NOT GRADED: the grader failed on them,
    so the gradebook keeps what it had), and the autograded/ folders staged for `install` (`installed` counts those
    in place)."""
    notes: RunNotes
    staged: list[Job]
    staging: Path
    installed: int = 0

    @property
    def count(self) -> int:
        """Submissions the commit wrote."""
        return len(self.staged)


def record(run: Run, jobs: list[Job], results: list[SubmissionOutcome], create: bool) -> Recorded:
    """Write the run into the gradebook (one transaction) and stage its autograded/ folders for `install`. On
    GradebookError, or any other error before the commit, nothing is written anywhere."""
    staging = run.course.folder("autograded") / owned_name(".staging")
    graded: list[gradebook.Graded] = []
    staged: list[Job] = []
    notes: dict[tuple[str, str, str], str] = {}
    not_graded: dict[tuple[str, str], str] = {}
    try:
        for job, result in zip(jobs, results):
            if result.grader_errors:  # never the student's fault, never scored: the gradebook keeps what it had
                run.summary += [Event(EventKind.SUBMISSION, "NOT GRADED, the grader's fault (not the student's): "
                                      f"{job.student}/{job.assignment}: {e}") for e in result.grader_errors]
                not_graded[(job.student, job.assignment)] = not_graded_note("; ".join(result.grader_errors)[:300])
                continue
            graded.append(_graded(run, job, result, notes))
            _stage(result, job.folder, staging / job.student / job.assignment)
            staged.append(job)
        lines, resubmitted = gradebook.write(run.course, graded, create)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    run.summary += [Event(EventKind.SUBMISSION, line) for line in lines]
    for student, assignment in resubmitted:
        total = (student, assignment, TOTAL)
        notes[total] = "; ".join(filter(None, [gradebook.REGRADED_AFTER_HAND_GRADE, notes.get(total, "")]))
    return Recorded(RunNotes(frozenset((j.student, j.assignment) for j in jobs), notes, not_graded), staged, staging)


def _graded(run: Run, job: Job, result: SubmissionOutcome, notes: dict[tuple[str, str, str], str]) -> gradebook.Graded:
    """One graded submission for the gradebook; its notes for grades.csv go into `notes` and what people should know
    of it into the run's summary."""
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
    return gradebook.Graded(job.student, job.assignment, timestamp,
                            {n: nb.autograded for n, nb in result.notebooks.items()},
                            {n: ", ".join(flags) for n, flags in result.flagged.items()})


def install(run: Run, recorded: Recorded) -> None:
    """Put the staged autograded/ folders of a committed run in place (`recorded.installed` counts them); the
    staging folder goes, whatever happens."""
    try:
        for job in recorded.staged:
            _install(recorded.staging / job.student / job.assignment,
                     run.course.folder("autograded", job.student, job.assignment))
            recorded.installed += 1
    finally:
        shutil.rmtree(recorded.staging, ignore_errors=True)


# What a run writes after its commit, in order (StoppedAfterCommit names the one that failed and those not written).
AFTER_COMMIT = ("the autograded/ folders", "the gradebook's ledger", "grades.csv, the feedback pages and the summary",
                "the shard's record (shard.json)")


class StoppedAfterCommit(GradebookError):
    """The run's commit went through, then the run stopped: the message says what the gradebook holds of the run,
    what was written after the commit and what was not, and what to do (issue #62: never 'nothing was written').
    `cause`: the error that stopped it."""

    def __init__(self, message: str, cause: BaseException):
        super().__init__(message, results_kept=True)
        self.cause = cause


def stopped_after_commit(run: Run, recorded: Recorded, given: int, step: int, error: BaseException) -> StoppedAfterCommit:
    """The error for a run that stopped at AFTER_COMMIT[step] with `error`, `given` submissions in the run."""
    from autograder.database import reason, safe_url
    from autograder.grader.ledger import ledger_path
    if isinstance(error, OSError):
        cause = str(error) if error.errno is None else \
            f"{error.strerror}{f': {error.filename}' if error.filename else ''}"
    else:
        cause = reason(error.__context__) if error.__context__ is not None else str(error)
    left_out = ""
    if recorded.notes.not_graded:
        named = sorted(f"{s}/{a} ({why.removeprefix('NOT GRADED: ')[:120]})"
                       for (s, a), why in recorded.notes.not_graded.items())
        left_out = (f"; {len(named)} NOT GRADED, not in it (the gradebook keeps what it had for them, and the next "
                    f"run grades them again): {'; '.join(named[:5])}{' ...' if len(named) > 5 else ''}")
    failed = AFTER_COMMIT[step]
    if step == 0:
        failed += f" ({recorded.installed} of {recorded.count} put in place)"
    not_written = AFTER_COMMIT[step + 1:]
    ledger = (f" Until a run writes the ledger ({ledger_path(run.course)}), it describes the gradebook before this "
              "run, so a later run could not tell whether the gradebook lost this run's grades." if step <= 1 else "")
    message = (f"this run's grades are in the gradebook ({safe_url(run.course.db_url)}): its commit of {recorded.count} "
               f"submission(s) went through, of the {given} this run was given{left_out}. Then writing {failed} "
               f"failed ({cause})" + (f", so {', '.join(not_written)} {'were' if len(not_written) > 1 else 'was'} not "
                                      "written" if not_written else "") + f".{ledger} Run the same command again once "
               "the cause is fixed: it reuses every result, writes the same grades again, and then the rest.")
    return StoppedAfterCommit(message, error)


def _stage(result: SubmissionOutcome, folder: Path, staging: Path) -> None:
    """Write one submission's autograded notebooks (and its timestamp and secret) under `staging`."""
    import nbformat
    staging.mkdir(parents=True)
    for name, notebook in result.notebooks.items():
        if notebook.autograded.notebook:
            node = nbformat.from_dict(notebook.autograded.notebook)
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
