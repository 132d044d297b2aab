"""How far along am I? Run the visible tests of every exercise notebook and say, per task, where it stands.

    python -m utils.progress_check [--root release] [--timeout 60] [--workers N] [--strict] [ASSIGNMENT ...]
    make progress

For each task (a graded test cell of an exercise notebook in `release/<assignment>/`) it prints one of
  passed          the visible tests ran without an error;
  FAILED          a test or the cells before it raised: the check's message and its hint are shown;
  not attempted   the task's solution cell still contains `raise NotImplementedError`.
with the task's points (from the notebook's nbgrader metadata). Graded runs add hidden tests, so "passed" here
means "passes what you can see", not full marks. A written answer (a markdown cell a person grades, with a rubric)
has no test: it is listed as written or not written yet, with its points, and counted apart from the tests'.

Your notebooks are never changed: each one is read, copied in memory and run in a scratch folder, with one
kernel per notebook (the course kernel, as in JupyterLab) and a time limit per cell. A notebook whose tasks
are all untouched is not run at all. A notebook that crashes, hangs or cannot be read only affects its own rows.
"""
from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

COURSE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding utils/, release/ and notebooks/
DEFAULT_ROOT = COURSE_ROOT / "release"
KERNEL = "cs336-primitives"
STUB = re.compile(r"^[ \t]*raise[ \t]+NotImplementedError\b", re.MULTILINE)
TASK_HEADING = re.compile(r"^#+\s*Task\s+(\d+)\s*[:.]\s*(.*?)\s*(\(\s*[\d.]+\s+points?\s*\))?\s*$", re.MULTILINE)
TITLE_WIDTH = 68  # the progress table's task column (written answers' titles are long): a longer title is cut, "..."

PASSED, FAILED, NOT_ATTEMPTED, NOT_RUN = "passed", "FAILED", "not attempted", "not run"
WRITTEN, NOT_WRITTEN = "written: a person grades it", "not written yet: a person grades it"


@dataclass
class Task:
    number: int
    title: str
    grade_id: str         # the test cell's
    points: float
    answer_cells: list[int] = field(default_factory=list)  # indices of its solution cells in the notebook
    test_cell: int = -1
    status: str = NOT_RUN
    message: str = ""     # why it failed: the check's first line and its hint


@dataclass
class Written:
    """A written answer: a markdown cell a person grades (nbgrader's "manually graded answer"). No test runs on it;
    this check only says whether something is written there."""
    number: int           # its task's number, from the heading above it
    title: str
    grade_id: str
    points: float
    written: bool         # changed from the released "YOUR ANSWER HERE"


@dataclass
class NotebookReport:
    assignment: str
    notebook: str         # file name
    tasks: list[Task]
    error: str = ""       # a problem with the whole notebook (unreadable, kernel would not start)
    seconds: float = 0.0
    ran: bool = False
    written: list[Written] = field(default_factory=list)

    @property
    def points(self) -> float:
        return sum(t.points for t in self.tasks)

    @property
    def passed_points(self) -> float:
        return sum(t.points for t in self.tasks if t.status == PASSED)


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _nbgrader(cell) -> dict:
    info = cell.get("metadata", {}).get("nbgrader", {})
    return info if isinstance(info, dict) else {}


def find_tasks(nb) -> list[Task]:
    """The graded test cells in order, each with the solution cells since the previous test (its answer)."""
    tasks: list[Task] = []
    answers: list[int] = []
    title = ""
    for index, cell in enumerate(nb.cells):
        info = _nbgrader(cell)
        if cell.cell_type == "markdown":
            match = TASK_HEADING.search(_source(cell))
            if match:
                title = match.group(2).strip()
            continue
        if cell.cell_type != "code":
            continue
        if info.get("solution"):
            answers.append(index)
        elif info.get("grade"):
            task = Task(len(tasks) + 1, title or info.get("grade_id", f"cell {index}"), info.get("grade_id", ""),
                        float(info.get("points", 0) or 0),
                        answers or (tasks[-1].answer_cells if tasks else []), index)
            tasks.append(task)
            answers, title = [], ""
    return tasks


TEXT_STUB = "YOUR ANSWER HERE"  # what the release puts in a written answer (nbgrader_config.py's text_stub)


def find_written(nb) -> list[Written]:
    """The written answers in order, each under the task heading above it."""
    found: list[Written] = []
    number, title = 0, ""
    for cell in nb.cells:
        info = _nbgrader(cell)
        if cell.cell_type != "markdown":
            continue
        match = TASK_HEADING.search(_source(cell))
        if match:
            number, title = int(match.group(1)), match.group(2).strip()
        if info.get("grade") and info.get("solution"):
            text = _source(cell).strip()
            found.append(Written(number, title or info.get("grade_id", ""), info.get("grade_id", ""),
                                 float(info.get("points", 0) or 0), bool(text) and text != TEXT_STUB))
    return found


def untouched(nb, task: Task) -> bool:
    """True while every solution cell of the task still raises NotImplementedError (the released stub)."""
    return bool(task.answer_cells) and all(STUB.search(_source(nb.cells[i])) for i in task.answer_cells)


def failure_message(outputs: list) -> str:
    """The first error in a cell's outputs, as 'what: detail' plus the 'Hint: ...' line our checks add."""
    for output in outputs:
        if output.get("output_type") != "error":
            continue
        name, value = output.get("ename", "Error"), str(output.get("evalue", ""))
        lines = [line for line in value.splitlines() if line.strip()]
        hints = [line.strip() for line in lines[1:] if line.strip().startswith("Hint:")]
        first = lines[0].strip() if lines else ""
        if name != "AssertionError" or not first:
            first = f"{name}: {first}" if first else name
        return "\n".join([_shorten(first)] + [_shorten(h) for h in hints[:2]])
    return ""


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_name(outputs: list) -> str:
    return next((o.get("ename", "") for o in outputs if o.get("output_type") == "error"), "")


async def _run_notebook(path: Path, assignment: str, timeout: float, semaphore: asyncio.Semaphore) -> NotebookReport:
    import nbformat
    report = NotebookReport(assignment, path.name, [])
    try:
        nb = nbformat.read(path, as_version=4)
        report.tasks = find_tasks(nb)
        report.written = find_written(nb)
    except Exception as error:  # not JSON, not a notebook: say so and go on with the others
        report.error = f"could not read the notebook ({type(error).__name__}: {_shorten(str(error), 120)})"
        return report
    blank = {t.number for t in report.tasks if untouched(nb, t)}
    for task in report.tasks:
        task.status = NOT_ATTEMPTED if task.number in blank else NOT_RUN
    if len(blank) == len(report.tasks):
        return report  # nothing to run: every task is still the stub
    async with semaphore:
        started = time.monotonic()
        try:
            await _execute(nb, path, report, blank, timeout)
        except Exception as error:
            report.error = f"{type(error).__name__}: {_shorten(str(error), 160)}"
        report.seconds = time.monotonic() - started
        report.ran = True
    return report


async def _execute(nb, path: Path, report: NotebookReport, blank: set[int], timeout: float) -> None:
    """Run a copy of the notebook cell by cell in a scratch copy of its folder, and fill in each task's status."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = copy.deepcopy(nb)
    kernel = nb.metadata.get("kernelspec", {}).get("name", KERNEL)
    try:
        KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        kernel = "python3"  # the Python running this check, with the same packages
    by_test = {t.test_cell: t for t in report.tasks}
    # Tests of untouched tasks would only raise NotImplementedError: skip them.
    skip = {t.test_cell for t in report.tasks if t.number in blank}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(COURSE_ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory(prefix="progress-") as scratch:
        workdir = Path(scratch) / path.parent.name
        shutil.copytree(path.parent, workdir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.ipynb"))
        client = NotebookClient(
            nb, timeout=timeout, kernel_name=kernel, allow_errors=True, interrupt_on_timeout=True,
            error_on_timeout={"ename": "TimeoutError", "evalue": f"the cell ran for more than {timeout:g} s and was stopped",
                              "traceback": []},
            resources={"metadata": {"path": str(workdir)}}, record_timing=False)
        # The kernel's own log lines (stderr) are not the student's business here; its outputs come back as messages.
        async with client.async_setup_kernel(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            seen = _Failures()
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or index in skip or not _source(cell).strip():
                    continue
                try:
                    await client.async_execute_cell(cell, index)
                except DeadKernelError:
                    _kernel_died(report, index, by_test)
                    return
                seen.record(nb, report, index, cell.get("outputs", []), by_test.get(index), timeout)


def _kernel_died(report: NotebookReport, index: int, by_test: dict[int, Task]) -> None:
    """The kernel died running cell `index`: its task failed, and every task not run yet says why."""
    reason = f"the kernel died running {_where(report.tasks, index)} (a crash, os._exit or exit)"
    task = by_test.get(index) or next((t for t in report.tasks if index in t.answer_cells), None)
    if task is not None:
        task.status, task.message = FAILED, reason
    for rest in report.tasks:
        if rest.status == NOT_RUN:
            rest.message = f"{reason}; nothing after it ran"


class _Failures:
    """What the set-up and answer cells that ran so far raised, to explain a test that fails after them."""

    def __init__(self) -> None:
        self.first = ""                    # the first set-up or answer cell that raised: tests after it may fail for it
        self.by_cell: dict[int, str] = {}

    def record(self, nb, report: NotebookReport, index: int, outputs: list, task: Task | None, timeout: float) -> None:
        """Cell `index` ran with `outputs`: a test cell (`task`) sets its task's status; any other cell's error is kept."""
        name = _error_name(outputs)
        message = failure_message(outputs)
        if name in ("KeyboardInterrupt", "TimeoutError"):
            message = (f"{_where(report.tasks, index)} ran for more than {timeout:g} s and was stopped "
                       "(an endless loop? a size far too big?)")
        elif message:
            message = f"{_where(report.tasks, index)} raised {message}" if task is None else message
        if task is None:
            if message:
                self.by_cell[index] = message
                self.first = self.first or message.splitlines()[0]
            return
        own = [self.by_cell[i] for i in task.answer_cells if i in self.by_cell]
        if not message:
            task.status = PASSED
        elif name == "NotImplementedError" and untouched(nb, task):
            task.status = NOT_ATTEMPTED
        elif own:
            task.status, task.message = FAILED, own[0]
        else:
            task.status, task.message = FAILED, message
            if name == "NotImplementedError":
                task.message += "\n(it uses a function of another task that is not written yet?)"
            elif name == "NameError" and self.first:
                task.message += f"\n(earlier, {self.first})"


def _where(tasks: list[Task], index: int) -> str:
    """A cell described the way a student finds it: by the task it belongs to."""
    for task in tasks:
        if index in task.answer_cells:
            return f"the answer cell of task {task.number}"
        if index == task.test_cell:
            return f"the test cell of task {task.number}"
    before = [t for t in tasks if t.test_cell < index]
    return f"the cell after task {before[-1].number}" if before else "the set-up cell at the top"


def check(root: Path = DEFAULT_ROOT, assignments: list[str] | None = None, timeout: float = 60,
          workers: int | None = None) -> list[NotebookReport]:
    """Run the visible tests of every notebook under `root/<assignment>/` and return one report per notebook."""
    root = Path(root)
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    if assignments:
        folders = [f for f in folders if f.name in assignments]
    paths = [(folder.name, nb) for folder in folders for nb in sorted(folder.glob("*.ipynb"))]
    workers = workers or max(1, min(4, os.cpu_count() or 1))

    async def run_all() -> list[NotebookReport]:
        semaphore = asyncio.Semaphore(workers)
        return list(await asyncio.gather(*(_run_notebook(p, a, timeout, semaphore) for a, p in paths)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_all())
    # Called from a running event loop (a notebook cell): run in a thread with a loop of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run_all()).result()


def _points(value: float) -> str:
    return f"{value:g}"


def render(reports: list[NotebookReport], root: Path) -> str:
    """The reports as a table per assignment, and a total."""
    lines: list[str] = []
    total = passed = written_points = 0.0
    written: list[bool] = []
    counts = {PASSED: 0, FAILED: 0, NOT_ATTEMPTED: 0, NOT_RUN: 0}
    if not reports:
        return f"No exercise notebooks found under {root}/<assignment>/."
    for report in reports:
        header = f"{report.assignment}/{report.notebook}: {_points(report.passed_points)} of {_points(report.points)} points pass"
        by_hand = sum(w.points for w in report.written)
        if by_hand:
            header += f" (and {_points(by_hand)} points of written answers, graded by a person)"
        if report.ran:
            header += f"  ({report.seconds:.1f} s)"
        lines += ["", header]
        if report.error:
            lines.append(f"  could not check this notebook: {report.error}")
        width = min(max([len(t.title) for t in report.tasks] + [len(w.title) for w in report.written] + [4]),
                    TITLE_WIDTH)
        if report.tasks or report.written:
            lines.append(f"  {'task':<4}  {'what':<{width}}  {'points':>6}  result")
        for task in report.tasks:
            title = task.title if len(task.title) <= width else task.title[: width - 3] + "..."
            lines.append(f"  {task.number:<4}  {title:<{width}}  {_points(task.points):>6}  {task.status}")
            indent = " " * (2 + 4 + 2 + width + 2 + 6 + 2 + 2)
            for message_line in task.message.splitlines():
                lines.append(indent + message_line)
            counts[task.status] = counts.get(task.status, 0) + 1
        for answer in report.written:
            title = answer.title if len(answer.title) <= width else answer.title[: width - 3] + "..."
            status = WRITTEN if answer.written else NOT_WRITTEN
            lines.append(f"  {answer.number:<4}  {title:<{width}}  {_points(answer.points):>6}  {status}")
        total += report.points
        passed += report.passed_points
        written += [w.written for w in report.written]
        written_points += by_hand
    summary = (f"Total: {_points(passed)} of {_points(total)} points pass their visible tests "
               f"({counts[PASSED]} tasks passed, {counts[FAILED]} failed, {counts[NOT_ATTEMPTED]} not attempted"
               + (f", {counts[NOT_RUN]} not run" if counts[NOT_RUN] else "") + ").")
    lines += ["", summary]
    if written:
        lines.append(f"Written answers: {sum(written)} of {len(written)} written ({_points(written_points)} points). A "
                     "person grades them, with a rubric; no test runs on them here, and an exercise's grade waits "
                     "for their scores.")
    lines.append("Graded runs add hidden tests: write code that is right in general, not just for these.")
    return "\n".join(lines).lstrip("\n")


def show(root: Path = DEFAULT_ROOT, assignments: list[str] | None = None, timeout: float = 60) -> None:
    """Print the table (what the landing notebook's progress cell calls)."""
    print(render(check(root, assignments, timeout), Path(root)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.progress_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignments", nargs="*", help="assignments to check, e.g. 01_floats (default: all)")
    parser.add_argument("--root", "--folder", type=Path, default=DEFAULT_ROOT,
                        help="folder holding <assignment>/<notebook>.ipynb (default: the course's release/)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds one cell may run (default: 60)")
    parser.add_argument("--workers", type=int, default=None, help="notebooks run at once (default: cores, at most 4)")
    parser.add_argument("--strict", action="store_true", help="exit with 1 unless every task passed")
    args = parser.parse_args(argv)
    reports = check(args.root, args.assignments, args.timeout, args.workers)
    print(render(reports, args.root))
    sys.stdout.flush()
    if args.strict:
        all_passed = reports and all(not r.error and all(t.status == PASSED for t in r.tasks) for r in reports)
        return 0 if all_passed else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
