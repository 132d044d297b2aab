"""Grades an instructor can trust (issue #24): the grader checks itself before grading anyone, results are re-used
only when nothing they depended on changed, and only work handed out is counted.

Each test grades exercise 7 in a scratch copy of the grader (autograder/, utils/, reference/, source/07) whose
`reference/` it may break, with its own cache of passed self-checks. The first run of such a copy, with exercises 1
and 5 beside it (`graded_checkout`), is graded once and shared: a run pays for its self-check and notebooks (about
15 CPU-s), so the tests that start from it read it, or grade again in a copy of it.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import submissions, warm

REPO = Path(__file__).resolve().parent.parent
A = "07_models_optimizers"


def checkout(root: Path) -> Path:
    """A copy of what the grader needs, as another checkout of the course would be, with one solved submission."""
    for folder in ("autograder", "utils", "reference"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "source" / A, root / "source" / A, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copy(REPO / "nbgrader_config.py", root)
    submissions.write_submission(root / "submitted", "ada", A, submissions.solved(A))
    return root


def grade(root: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_CACHE_HOME": str(root / "cache")}
    return warm.run([sys.executable, "-m", "autograder.grade", "--course", str(root), "--out", str(root / "graded"),
                           "--limit", "cell_seconds=30", *extra], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def graded_checkout(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A checkout with exercises 1 and 5 in source/ too, exercise 5 given a due date in the gradebook (neither
    released nor submitted), graded once: the folder and its first run (cache empty: the self-check runs)."""
    root = checkout(tmp_path_factory.mktemp("graded"))
    shutil.copytree(REPO / "source" / "01_floats", root / "source" / "01_floats")
    shutil.copytree(REPO / "source" / "05_flops_mfu", root / "source" / "05_flops_mfu")
    env = {**os.environ, "PYTHONPATH": str(root)}
    added = warm.run([sys.executable, "-m", "nbgrader", "db", "assignment", "add", "05_flops_mfu",
                            "--duedate=2026-02-01 17:00:00 UTC"], cwd=root, env={**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"},
                           capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stdout + added.stderr
    return root, grade(root)


def nothing_graded(root: Path) -> bool:
    return not (root / "graded" / "grades.csv").exists() and not (root / "autograded").exists()


def test_a_wrong_reference_stops_the_run_before_anyone_is_graded(tmp_path):
    root = checkout(tmp_path)
    module = root / "reference" / "models_optimizers.py"
    module.write_text(module.read_text().replace("return num_gpus * free_per_gpu // per_param",
                                                 "return num_gpus * free_per_gpu // per_param + 1"))
    run = grade(root)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "the instructor's solution fails test_largest_model" in run.stderr and "nobody was graded" in run.stderr
    assert nothing_graded(root)
    assert not [p for p in (root / "cache" / "cs336-primitives").rglob("*") if p.is_file()]  # no pass remembered


def test_a_missing_reference_module_stops_the_run(tmp_path):
    root = checkout(tmp_path)
    (root / "reference" / "models_optimizers.py").unlink()
    run = grade(root)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "hidden test models_optimizers." in run.stderr and "could not be made" in run.stderr
    assert nothing_graded(root)


def test_references_from_another_checkout_are_refused(tmp_path):
    """With this copy's reference/ gone, `import reference` finds the repository's own (its editable install):
    answers that are not the graded course's. The grader says so instead of grading with them."""
    root = checkout(tmp_path)
    shutil.rmtree(root / "reference")
    run = grade(root)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "not from this checkout" in run.stderr or "No module named 'reference'" in run.stderr
    assert nothing_graded(root)


def test_a_changed_reference_is_not_reused_and_a_passed_self_check_is(tmp_path, graded_checkout):
    """The first run (`graded_checkout`'s) checks the grader and grades ada; a second, in a copy of that checkout with
    its cache, re-uses both; a third, after a change to reference/, does both again."""
    graded, first = graded_checkout
    assert first.returncode == 0, first.stdout + first.stderr
    root = shutil.copytree(graded, tmp_path / "copy", symlinks=True)  # this test changes reference/
    full = sum(c["metadata"].get("nbgrader", {}).get("points", 0)
               for nb in (REPO / "source" / A).glob("*.ipynb") for c in json.loads(nb.read_text())["cells"])
    earned = sum(submissions.task_points(A))  # every test's points; the written answer, left as released, scores 0
    assert "self-check passed" in first.stderr and "ada " in first.stdout and f"{earned:g} / {full:g}" in first.stdout
    again = grade(root)  # nothing changed: the result and the self-check are both re-used
    assert "(1 unchanged, reused)" in again.stderr and "self-check passed" not in again.stderr, again.stderr
    module = root / "reference" / "models_optimizers.py"
    module.write_text(module.read_text() + "\n# a changed reference\n")
    changed = grade(root)
    assert "graded 1 submission(s)" in changed.stderr and "(0 unchanged, reused)" in changed.stderr, changed.stderr
    assert "self-check passed" in changed.stderr


def test_only_assignments_handed_out_are_counted(graded_checkout):
    """Grading exercise 7 posts no 'no submission' zeros for exercises never released nor given a due date
    (`graded_checkout`: exercise 1 neither, exercise 5 given one)."""
    root, run = graded_checkout
    assert run.returncode == 0, run.stdout + run.stderr
    with open(root / "graded" / "grades.csv") as f:
        totals = {(r["student"], r["assignment"]): r["note"] for r in csv.DictReader(f) if r["task"] == "TOTAL"}
    assert totals == {("ada", A): "", ("ada", "05_flops_mfu"): "no submission"}, totals
