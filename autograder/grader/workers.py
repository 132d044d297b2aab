"""Runs in the grader: grades submissions, several at once, each in a worker (a forked child of the grader, trusted)
that drives the submission's notebook processes through the zygote and asks the trusted checker for verdicts.

A worker answers with the submission's result; the grader writes it to `results/<student>/<assignment>.json`, so a
stopped run resumes. Anything that goes wrong on the grader's side (a notebook process that cannot start, a worker
that dies, a result that cannot be written) leaves that submission NOT GRADED with the reason, never charged to the
student and never reused; every other submission is graded.
"""
from __future__ import annotations

import os
import select
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder import cgroups, heap, outcome
from autograder.atomic import write_atomically
from autograder.forked import Child, ChildFailed
from autograder.grader import autograded, cost, feedback, rules
from autograder.grader.find import Unreadable, assignment_files, read_capped
from autograder.grader.notebooks import GraderFault, Zygote, failed, run_plan
from autograder.grader.plan import Cell, CellRun, MissingNotebook, NotANotebook, Plan, make_plan, read_notebook
from autograder.limits import Limits
from autograder.outcome import CellOutcome, Failure, NotebookOutcome, OutcomeError, SubmissionOutcome
from autograder.progress import Progress
from autograder.source import SourceNotebook
from autograder.trusted.checker import Checker, CourseError


@dataclass
class Job:
    student: str
    assignment: str
    folder: Path
    key: str


@dataclass
class Setting:
    """What every worker of a run shares: the course's notebooks and files, the limits, the hidden tests' cases."""
    source: Path                     # the course's source/ folder
    sources: dict[str, dict[str, SourceNotebook]]  # assignment -> its source notebooks by name (read once a run)
    limits: Limits
    zygote: Zygote | None            # None when the run grades nothing
    stubs: dict                      # (assignment, notebook, grade_id) -> the released text of an answer cell
    checker: Checker | None          # the run's trusted checker (its cases: hidden test key -> encoded cases)
    ignore: list[str] = field(default_factory=list)
    keep_student: dict[str, list[str]] = field(default_factory=dict)
    file_limit: int = 100 * 2**20


def result_path(out: Path, job: Job) -> Path:
    return out / "results" / job.student / f"{job.assignment}.json"


def not_graded(job: Job, why: str) -> SubmissionOutcome:
    """The outcome of a submission the grader could not grade (its own fault, never the student's)."""
    return outcome.not_graded(job.key, job.student, job.assignment, why)


def read_result(path: Path) -> SubmissionOutcome | None:
    """An earlier result (either format of outcome.py), or None when there is none or it cannot be read (it is then
    graded again, alone)."""
    try:
        return SubmissionOutcome.from_json(read_capped(path, 1 << 30))
    except (Unreadable, OutcomeError):
        return None


def reusable(result: SubmissionOutcome | None, key: str) -> bool:
    """An earlier result counts again only when everything it depended on is unchanged and the grader did not fail."""
    return result is not None and result.key == key and not result.grader_errors


def check_hidden(plan: Plan, results: list[CellRun], checker: Checker | None) -> tuple[list[CellRun], list[str]]:
    """The results with every hidden test's verdict applied (a test cell that ran cleanly fails when the results its
    hidden tests handed in are wrong), and the grader's own faults, if any (checker.py: never the student's)."""
    pending = [(index, key) for index, cell in enumerate(plan.cells) for key in cell.hidden_keys
               if results[index].ok]
    handed = [(key, results[index].handed.get(key)) for index, key in pending]
    faults = []
    results = [replace(r, handed={}) for r in results]  # what the hidden tests handed in is the checker's alone
    verdicts = []
    if handed:
        assert checker is not None, "hidden tests ran, but the run has no checker"  # prepare() starts one for them
        verdicts = checker.verdicts(handed)
    for (index, _key), verdict in zip(pending, verdicts):
        if verdict.ok or not results[index].ok:
            continue
        cell = plan.cells[index]
        # A wrong result fails on the hidden tests' first line (feedback shows it as a hidden failure, with its hint);
        # the grader's own fault is shown as what it is.
        line = None if verdict.fault else cell.hidden_lines.start
        results[index] = results[index].failing(verdict.error, Failure.ERROR, line,
                                                "" if verdict.fault else "AssertionError")
        if verdict.fault:
            faults.append(f"{plan.notebook}, {cell.grade_id}: {verdict.error}")
    return results, faults


def _problem(job: Job, name: str, error: NotANotebook) -> tuple[str, Failure]:
    """Why a submitted notebook cannot be used, for people, and its kind."""
    if isinstance(error, MissingNotebook):
        present = ", ".join(sorted(p.name for p in job.folder.iterdir())) or "nothing"
        return f"missing notebook {name}.ipynb (the folder holds: {present})", Failure.MISSING_NOTEBOOK
    return f"{name}.ipynb is not a valid notebook: {error}", Failure.NOT_A_NOTEBOOK


def cell_outcome(cell: Cell, result: CellRun) -> CellOutcome:
    """One cell of the plan and its run, as the results file records it. Every step that fails a cell names its
    Failure; a failed run without one (a step added later that forgot to) counts as an ERROR rather than as passed."""
    failure = result.failure or (None if result.ok else Failure.ERROR)
    # ANSI colour codes (an IPython or library error's colours) never reach the results file: every reader of it,
    # people included, gets plain text.
    return CellOutcome(cell.kind, cell.grade_id, float(cell.points), cell.visible_code, result.ok,
                       autograded.strip_ansi(result.output), autograded.strip_ansi(result.error), result.restored, result.tampered,
                       result.line, seconds=result.seconds, error_full=autograded.strip_ansi(result.error_full or "") or None,
                       costs=result.costs, failure=failure, ename=result.ename)


def grade_submission(job: Job, setting: Setting, slot: int) -> SubmissionOutcome:
    """Run every notebook of one submission (in a worker); what goes to results/<student>/<assignment>.json."""
    notebooks: dict[str, NotebookOutcome] = {}
    problems: list[str] = []
    faults: list[str] = []
    files, left_out = assignment_files(setting.source / job.assignment, job.folder, setting.ignore,
                                       setting.keep_student.get(job.assignment, []), setting.file_limit,
                                       setting.limits.disk_mib * 2**20 // 2)
    problems += [f"not given to the notebook: {line}" for line in left_out]
    for name, source in setting.sources[job.assignment].items():
        problem, unusable = "", None
        submitted: dict = {"cells": []}
        try:
            submitted = read_notebook(job.folder / f"{name}.ipynb")
        except NotANotebook as error:
            problem, unusable = _problem(job, name, error)
        if problem:
            problems.append(problem)
        plan = make_plan(name, source, submitted)
        judged = rules.bounded_verdicts(job.assignment, plan)
        runnable = not problem and submitted["cells"]
        if runnable:
            assert setting.zygote is not None, "a run with submissions to grade starts a zygote"
            cases = setting.checker.cases if setting.checker else {}
            budgets = setting.checker.budgets if setting.checker else {}  # issue #52: measured after their test cells
            results = run_plan(plan, setting.limits, setting.zygote, slot, files, cases, budgets,
                               rules.watches(job.assignment, plan))
            results, own_faults = check_hidden(plan, results, setting.checker)
            faults += own_faults
            results = [rules.apply(cell, result, judged) for cell, result in zip(plan.cells, results)]
            hidden = feedback.hidden_code(plan.cells)
            results = [feedback.without_hidden_code(feedback.for_students(cell, result, setting.limits.feedback), hidden)
                       for cell, result in zip(plan.cells, results)]
        else:
            results = [failed("not run", Failure.NOT_RUN) for _ in plan.cells]
        cells = tuple(cell_outcome(c, r) for c, r in zip(plan.cells, results))
        own_stubs = {gid: text for (a, nb, gid), text in setting.stubs.items() if a == job.assignment and nb == name}
        kept = autograded.record(source, submitted, plan, results, own_stubs, problem)
        flags = plan.flags + rules.flags(judged, plan.cells, results if runnable else None) + \
            (cost.flags(results) if runnable else [])
        notebooks[name] = NotebookOutcome(cells, tuple(flags), tuple(plan.notes), bool(runnable), problem, kept,
                                          unusable)
    return SubmissionOutcome(job.key, job.student, job.assignment, notebooks, tuple(problems), tuple(faults))


def _work(job: Job, setting: Setting, slot: int) -> Callable[[], dict]:
    def work() -> dict:
        try:
            return grade_submission(job, setting, slot).to_dict()
        except (GraderFault, CourseError) as fault:
            return not_graded(job, str(fault)).to_dict()
    return work


def run_jobs(jobs: list[Job], setting: Setting, out: Path,
             progress: Progress | None = None) -> dict[tuple[str, str], SubmissionOutcome]:
    """Grade `jobs`, up to `limits.workers` at once (each in a worker of its own); write each result to its file.
    Returns the results that could not be written ({(student, assignment): result}), which the run records from
    memory."""
    workers = setting.limits.workers or os.cpu_count() or 1
    running: dict[Child, tuple[Job, int]] = {}
    memory = cgroups.memory_events()  # a worker the kernel kills for want of memory is named so (issue #49)
    unwritten: dict[tuple[str, str], SubmissionOutcome] = {}
    queue = list(jobs)

    def finish(child: Child) -> None:
        job, _ = running.pop(child)
        try:
            result = SubmissionOutcome.from_dict(child.answer())
        except ChildFailed as error:
            result = not_graded(job, f"the grader's worker failed on this submission: {str(error).splitlines()[-1][:300]}"
                                     f"{cgroups.out_of_memory_note(memory)}")
        except OutcomeError as error:
            result = not_graded(job, f"the grader's worker answered something that is not an outcome: {error}")
        failed_here = bool(result.grader_errors)
        try:
            write_atomically(result_path(out, job), result.to_json())
        except OSError as error:
            result = not_graded(job, f"could not write {error.filename}: {error.strerror}") if not failed_here else result
            unwritten[(job.student, job.assignment)] = result
            failed_here = True
        if progress is not None:
            progress.advance(len(setting.sources[job.assignment]), failed_here)

    with heap.frozen_while():   # each worker, and the judge's child of each, forks from this heap
        while queue or running:
            while queue and len(running) < workers:
                slot = min(set(range(workers)) - {s for _, s in running.values()})
                job = queue.pop(0)
                running[Child(_work(job, setting, slot))] = (job, slot)
            ready, _, _ = select.select(list(running), [], [], 0.2)
            for child in ready:
                child.pump()
                if child.done:
                    finish(child)
            if progress is not None:
                progress.tick()
    return unwritten

