"""What each cost budget measures for a correct answer and for typical wrong ones, over repeated runs (issues #52, #60).

    .venv/bin/python -m bench.cost_budgets [--runs 10] [--load N] [--assignment NAME ...]

For each budgeted task (reference/*.py, COST_BUDGETS) and each answer (the instructor's solution, the second,
independently written solution of tests/variants/, the honest variants and the tricks of tests/submissions.py,
COST_HONEST and COST_TRICKS), one sandboxed notebook process (the grader's own, autograder/grader/notebooks.py) runs
the set-up cell and the answer, then the budgeted test cell `--runs` times as the grader runs it (its hidden tests'
measured part measured from outside, autograder/grader/cost.py; a trick that counts its calls, measured once). Prints, per answer, min / median / max of new memory
(MiB), bytes read from storage (MiB), page faults and CPU seconds of the measured part, and whether the verdict passed;
the machine and the date come first. `--load N` keeps N busy processes running meanwhile; ATEN_CPU_CAPABILITY=default
in the environment picks torch's generic CPU kernels.
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

from autograder.course import REPO_ROOT, Course
from autograder.grader import cost
from autograder.grader.notebooks import NotebookProcess, Zygote
from autograder.grader.plan import make_plan
from autograder.limits import load_limits
from autograder.outcome import CellKind
from autograder.source import read_notebook
from reference import hidden
from tests import submissions
from utils.handin import encode

TASKS = submissions.COST_TASKS


def measure(assignment: str, notebooks: dict, runs: int, zygote: Zygote) -> list:
    """[(budget, [what was measured, as the results file records it] * runs)] for the budgeted task of `assignment`,
    answered as in `notebooks`: its test cell run `runs` times in one notebook process, as the grader runs it.
    RuntimeError naming the failure when the measured part did not run (the visible tests failed first)."""
    source = read_notebook(REPO_ROOT / "source" / assignment / f"{assignment}.ipynb")
    plan = make_plan(assignment, source, json.loads(json.dumps(next(iter(notebooks.values())))))
    process = NotebookProcess(zygote, 0, load_limits())
    try:
        for cell in plan.cells:
            if cell.kind is CellKind.SETUP or (cell.kind is CellKind.ANSWER and cell.grade_id == TASKS[assignment]):
                process.run(cell.kind, cell.code, 60)
        test = next(c for c in plan.cells if c.kind is CellKind.TEST and c.grade_id == f"test_{TASKS[assignment]}")
        budgets = cost.budgets_of(test, {key: hidden.budgets(key) for key in test.hidden_keys})
        cases = {key: encode(hidden.cases(key)) for key in test.hidden_keys}
        found: list[list] = [[] for _ in budgets]
        for run in range(runs):
            result = cost.run_measured(process, test, budgets, 120, cases)
            measured = [c for c in result.costs or () if "peak_bytes" in c]
            if len(measured) != len(budgets):  # a trick that counts its calls fails its visible test from the second
                if run:
                    break
                raise RuntimeError(f"{assignment}: not measured: {result.costs} {result.error[-300:]}")
            for i, entry in enumerate(measured):
                found[i].append(entry)
        return [(budget, entries) for budget, entries in zip(budgets, found)]
    finally:
        process.kill()


def spread(values: list[float]) -> str:
    return f"{min(values):9.2f} {statistics.median(values):9.2f} {max(values):9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    parser.add_argument("--assignment", action="append", choices=list(TASKS), help="only these (default: all three)")
    args = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        report(args.runs, args.load, args.assignment or list(TASKS))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def report(runs: int, load: int, assignments: list[str]) -> None:
    print(f"{datetime.date.today()}  {platform.node()}  {platform.machine()}  {os.cpu_count()} CPUs  Linux "
          f"{platform.release()}  ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(auto)')}  "
          f"{load} busy processes  {runs} runs each")
    zygote = Zygote(walled=[REPO_ROOT / "reference", REPO_ROOT / "source"], preload=Course.load(REPO_ROOT).imports())
    try:
        for assignment in assignments:
            answers = {"solution": submissions.solved(assignment), "variant": submissions.variant(assignment)}
            answers.update({f"honest {name}": submissions.cost_honest(assignment, name)
                            for a, name in submissions.COST_HONEST if a == assignment})
            answers.update({trick: submissions.cost_trick(assignment, trick)
                            for a, trick in submissions.COST_TRICKS if a == assignment})
            for name, notebooks in answers.items():
                try:
                    measured = measure(assignment, notebooks, runs, zygote)
                except RuntimeError as error:
                    print(f"{assignment:37s} {name[:18]:18s} not measured: {str(error).splitlines()[-2][-120:]}")
                    continue
                for budget, found in measured:
                    verdicts = {"pass" if entry["ok"] else "FAIL" for entry in found}
                    predicted = found[0].get("predicted_bytes")
                    print(f"{budget.key:37s} {name[:18]:18s} {'/'.join(sorted(verdicts)):9s} {len(found):2d} runs "
                          + (f"predicted MiB {predicted / 2**20:.2f} | " if predicted is not None else "") +
                          f"new MiB {spread([e['peak_bytes'] / 2**20 for e in found])} | "
                          f"high-water MiB {spread([e['high_water_bytes'] / 2**20 for e in found])} | "
                          f"read MiB {spread([e['file_bytes'] / 2**20 for e in found])} | "
                          f"faults {spread([e['faults'] for e in found])} | "
                          f"CPU s {spread([e['cpu_seconds'] for e in found])}"
                          + (f" | {sorted({w for e in found for w in e['elsewhere']})}" if any(e['elsewhere'] for e in found) else ""))
    finally:
        zygote.close()


if __name__ == "__main__":
    main()
