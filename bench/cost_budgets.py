"""What each cost budget measures for a correct answer and for typical wrong ones, over repeated runs (issue #52).

    .venv/bin/python -m bench.cost_budgets [--runs 10] [--load N]

For each budgeted task (reference/*.py, COST_BUDGETS) and each answer (the instructor's solution, and the tricks of
tests/submissions.py, COST_TRICKS), one sandboxed notebook process (the grader's own, autograder/grader/notebooks.py)
runs the set-up cell and the answer (also the second, independently written solution of tests/variants/), then the
budget's prepare and call `--runs` times, each measured from outside by
autograder/grader/cost.py. Prints, per answer, min / median / max of peak memory (MiB), bytes read from the file (MiB),
page faults and CPU seconds, and whether the verdict passed; the machine and the date come first. `--load N` keeps N
busy processes running meanwhile; ATEN_CPU_CAPABILITY=default in the environment picks torch's generic CPU kernels.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

from autograder.course import REPO_ROOT
from autograder.grader import cost
from autograder.grader.notebooks import NotebookProcess, Zygote
from autograder.grader.plan import make_plan
from autograder.limits import load_limits
from autograder.outcome import CellKind
from autograder.source import read_notebook
from reference import hidden
from tests import submissions

TASKS = submissions.COST_TASKS


def measure(assignment: str, notebooks: dict, runs: int, zygote: Zygote) -> list:
    """(budget, [Measured] * runs) for the budgeted task of `assignment`, answered as in `notebooks`."""
    source = read_notebook(REPO_ROOT / "source" / assignment / f"{assignment}.ipynb")
    plan = make_plan(assignment, source, json.loads(json.dumps(next(iter(notebooks.values())))))
    process = NotebookProcess(zygote, 0, load_limits())
    try:
        for cell in plan.cells:
            if cell.kind is CellKind.SETUP or (cell.kind is CellKind.ANSWER and cell.grade_id == TASKS[assignment]):
                process.run(cell.kind, cell.code, 60)
        test = next(c for c in plan.cells if c.kind is CellKind.TEST and c.grade_id == f"test_{TASKS[assignment]}")
        out = []
        for budget in cost.budgets_of(test, {key: hidden.budgets(key) for key in test.hidden_keys}):
            found = []
            for _ in range(runs):  # each run on fresh inputs (a fresh file: pages mapped before would not count)
                measured, failure = cost.measure_call(process, budget)
                if measured is None:
                    raise RuntimeError(failure)
                if failure:
                    print(f"  {budget.key}: {failure[-300:]}")
                found.append(measured)
                if budget.file:
                    process.run(CellKind.TEST, "os.remove(_cost_path); del _cost_data", budget.seconds)
            out.append((budget, found))
        return out
    finally:
        process.kill()


def spread(values: list[float]) -> str:
    return f"{min(values):9.2f} {statistics.median(values):9.2f} {max(values):9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    args = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        report(args.runs, args.load)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def report(runs: int, load: int) -> None:
    print(f"{datetime.date.today()}  {platform.node()}  {platform.machine()}  {os.cpu_count()} CPUs  Linux "
          f"{platform.release()}  ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(auto)')}  "
          f"{load} busy processes  {runs} runs each")
    zygote = Zygote(walled=[REPO_ROOT / "reference", REPO_ROOT / "source"])
    try:
        for assignment in TASKS:
            answers = {"solution": submissions.solved(assignment), "variant": submissions.variant(assignment)}
            answers.update({trick: submissions.cost_trick(assignment, trick)
                            for a, trick in submissions.COST_TRICKS if a == assignment})
            for name, notebooks in answers.items():
                for budget, found in measure(assignment, notebooks, runs, zygote):
                    verdicts = {"pass" if not cost.verdict(budget, m) else "FAIL" for m in found}
                    predicted = found[0].predicted_bytes
                    print(f"{budget.key:37s} {name[:12]:12s} {'/'.join(sorted(verdicts)):9s} "
                          + (f"predicted MiB {predicted / 2**20:.2f} | " if predicted is not None else "") +
                          f"peak MiB {spread([m.peak_bytes / 2**20 for m in found])} | "
                          f"file MiB {spread([m.file_bytes / 2**20 for m in found])} | "
                          f"faults {spread([m.faults for m in found])} | "
                          f"CPU s {spread([m.cpu_seconds for m in found])}")
    finally:
        zygote.close()


if __name__ == "__main__":
    main()
