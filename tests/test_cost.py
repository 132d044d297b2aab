"""Cost budgets measured by the kernel from outside the notebook process (issue #52), attacked from the student's
side: each submission below is graded by the real grader (`python -m autograder.grade`), in its sandbox.

- correct work passes its budgets (exercise 3's sliding_windows: a view; exercise 8's get_batch on a real memmap);
- a copy where a view is wanted fails its memory budget, even when the copy is thrown away before the call returns,
  and even when a signal handler frees it (the kernel's high-water mark does not go down);
- a full read fails the pages budget, whether through `data`, a descriptor of its own or a mapping of its own that
  it drops before returning (the page faults are counted);
- a child process that does the reading is refused, and the notebook flagged for a person;
- exercise 9's MLP forward pass raises the peak memory by what the student's mlp_activation_bytes predicts, within
  10%; a prediction that forgets an activation is about half the measured peak (measured in a sandboxed notebook
  process, as the grader does: such an answer fails its visible test before the grader's measurement).
The same correct work passes under torch's generic CPU kernels (ATEN_CPU_CAPABILITY=default) and on a loaded machine.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests import submissions

REPO = Path(__file__).resolve().parent.parent
TASKS = {"03_strides_views": "test_sliding_windows", "08_training_loop": "test_get_batch",
         "09_mixed_precision": "test_mlp_activation_bytes"}


def grade(root: Path, makers: dict, environment: dict | None = None, while_notebooks_run=None) -> dict:
    """Grade {(student, assignment): notebooks}; {(student, assignment): the budgeted test cell's result}.
    `while_notebooks_run()`, a context manager, is entered when the grader says that it starts the notebooks (its
    first "grading: 0/N notebooks" line, printed just before the first notebook starts) and left when it ends."""
    course = submissions.new_course(root)
    for (student, assignment), notebooks in makers.items():
        submissions.write_submission(course / "submitted", student, assignment, notebooks)
    command = [sys.executable, "-m", "autograder.grade", str(course / "submitted"), "--course", str(course),
               "--out", str(course / "graded")]
    env = {**os.environ, **(environment or {})}
    if while_notebooks_run is None:
        run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
        said = run.stdout + run.stderr
    else:
        with tempfile.TemporaryFile("w+") as out, contextlib.ExitStack() as during:
            grader = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.PIPE, text=True, env=env)
            watchdog = threading.Timer(900, grader.kill)
            watchdog.start()
            lines: list[str] = []
            try:
                for line in grader.stderr:
                    if line.startswith("grading: ") and not any(seen.startswith("grading: ") for seen in lines):
                        during.enter_context(while_notebooks_run())
                    lines.append(line)
                grader.wait()
            finally:
                watchdog.cancel()
                grader.kill()
                grader.wait()
            out.seek(0)
            run, said = grader, out.read() + "".join(lines)
    assert run.returncode == 0, said
    found = {}
    for (student, assignment) in makers:
        result = json.loads((course / "graded" / "results" / student / f"{assignment}.json").read_text())
        notebook = next(iter(result["notebooks"].values()))
        cell = next(c for c in notebook["cells"] if c["grade_id"] == TASKS[assignment])
        found[(student, assignment)] = {**cell, "flags": notebook["flags"]}
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    makers = {("solved", a): submissions.solved(a) for a in TASKS}
    makers.update({(student(trick), a): submissions.cost_trick(a, trick) for a, trick in submissions.COST_TRICKS})
    return grade(tmp_path_factory.mktemp("cost"), makers)


def student(trick: str) -> str:
    """The student id a trick's submission is graded under: "new mapping" -> "new-mapping"."""
    return re.sub(r"[^a-z0-9]+", "-", trick.lower()).strip("-")


def cost(cell: dict) -> dict:
    assert len(cell.get("costs", [])) == 1, cell
    return cell["costs"][0]


def test_correct_work_passes_its_budgets_and_sees_them(graded):
    windows, batch = graded[("solved", "03_strides_views")], graded[("solved", "08_training_loop")]
    assert windows["ok"] and batch["ok"], (windows["error"], batch["error"])
    assert cost(windows)["peak_bytes"] < cost(windows)["budget"]["peak_bytes"] // 4
    assert cost(batch)["file_bytes"] < cost(batch)["budget"]["file_bytes"] // 2
    assert cost(batch)["faults"] < cost(batch)["budget"]["faults"] // 4
    assert "(budget 16.0 MiB)" in windows["output"] and "(budget 2.0 MiB)" in batch["output"]
    assert not windows["flags"] and not batch["flags"]
    mlp = graded[("solved", "09_mixed_precision")]
    assert mlp["ok"], mlp["error"]
    assert abs(cost(mlp)["peak_bytes"] - cost(mlp)["predicted_bytes"]) <= 0.1 * cost(mlp)["predicted_bytes"], cost(mlp)
    assert "your prediction 64.5 MiB" in mlp["output"]


def test_a_wrong_prediction_of_peak_memory_fails_against_the_machine(graded):
    from autograder.course import REPO_ROOT
    from autograder.grader import cost as grader_cost
    from autograder.grader.notebooks import Zygote
    from bench.cost_budgets import measure
    assert not graded[(student("forgets GELU's input"), "09_mixed_precision")]["ok"]   # its visible test says so first
    zygote = Zygote(walled=[REPO_ROOT / "reference", REPO_ROOT / "source"])
    try:
        [(budget, found)] = measure("09_mixed_precision", submissions.cost_trick("09_mixed_precision",
                                                                                 "forgets GELU's input"), 1, zygote)
    finally:
        zygote.close()
    assert found[0].predicted_bytes == 8 * 256 * (64 + 4096) * 4   # 32.5 MiB
    assert "from your prediction of 32.5 MiB" in grader_cost.verdict(budget, found[0])


@pytest.mark.parametrize("student", ["copy", "signal"])
def test_a_copy_where_a_view_is_wanted_fails_its_memory_budget(graded, student):
    cell = graded[(student, "03_strides_views")]
    assert not cell["ok"]
    assert cost(cell)["peak_bytes"] >= 256 * 2**20, cost(cell)
    assert "over the budget of 16.0 MiB" in cell["error"] and "Hint:" in cell["error"]


@pytest.mark.parametrize("student", ["full-read", "new-fd", "new-mapping"])
def test_a_full_read_fails_the_pages_budget_however_it_reads(graded, student):
    """A read through `data` itself is caught already by the visible test, which measures the same in the notebook;
    the others only by the grader, from outside."""
    cell = graded[(student, "08_training_loop")]
    assert not cell["ok"]
    if student == "full-read":
        assert "read 32.00 MiB of the file; the budget is 2.0 MiB" in cell["error"], cell["error"]
        return
    measured = cost(cell)
    assert measured["file_bytes"] >= 32 * 2**20 or measured["faults"] >= 512, measured
    assert "over the budget" in cell["error"], cell["error"]


def test_work_done_in_a_child_process_is_refused_and_flagged(graded):
    cell = graded[("fork", "08_training_loop")]
    assert not cell["ok"]
    assert cost(cell)["elsewhere"], cost(cell)
    assert "did work outside the notebook process" in cell["error"]
    assert any(flag.startswith("cost: get_batch") for flag in cell["flags"]), cell["flags"]


def test_correct_work_passes_under_generic_cpu_kernels_and_under_load(tmp_path):
    """ATEN_CPU_CAPABILITY=default (no AVX kernels) while two busy processes load both cores. The load starts when the
    grader starts the notebooks (where every budget is measured) and lasts until the run ends: its start-up and
    self-check before that are not what is tested, and two burners through them cost the suite CPU for nothing."""
    burners: list[subprocess.Popen] = []
    burned: list[float] = []  # each burner's CPU seconds: the load was there

    @contextlib.contextmanager
    def load():
        burners.extend(subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2))
        try:
            yield
        finally:
            for burner in burners:
                stat = Path(f"/proc/{burner.pid}/stat").read_text().rsplit(")", 1)[1].split()
                burned.append((int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK"))
                burner.kill()
                burner.wait()
    found = grade(tmp_path, {("solved", a): submissions.solved(a) for a in TASKS},
                  {"ATEN_CPU_CAPABILITY": "default"}, while_notebooks_run=load)
    assert len(burners) == 2, "the grader never said that it started the notebooks: nothing ran under load"
    assert min(burned) > 0.2, burned
    for cell in found.values():
        assert cell["ok"], cell["error"]
        assert cost(cell)["ok"]
