"""The instructor's solutions and the variant solutions (tests/variants/) earn every point on another CPU.

One grading run of both, for every assignment, under a second CPU dispatch: torch's generic elementwise kernels
(ATEN_CPU_CAPABILITY=default) and no native bf16 matmul (ONEDNN_MAX_CPU_ISA=AVX2). These change the low bits of
float results, so a hidden test whose tolerance is tighter than the rounding of its case fails here.
(tests/test_autograde.py grades the same variants under this machine's own dispatch.)
"""
import csv
import json
import os
import sys
from pathlib import Path

import pytest

from autograder.course import assignments
from tests import submissions, warm

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENTS = assignments()
SECOND_DISPATCH = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "AVX2"}
STUDENTS = {"variant": submissions.variant}  # the instructor's solutions: the grader's own self-check grades them
PROBE = ("import os, torch\n"
         "print('dispatch:', torch.backends.cpu.get_cpu_capability(), os.environ.get('ONEDNN_MAX_CPU_ISA'))\n")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """grades.csv rows and the results folder of one run over `solved` and `variant` of every assignment. The
    solved notebook of the first assignment also prints the dispatch its sandboxed process runs under."""
    root = submissions.new_course(tmp_path_factory.mktemp("variants"))
    submitted, out = root / "submitted", root / "graded"
    for assignment in ASSIGNMENTS:
        for student, maker in STUDENTS.items():
            submissions.write_submission(submitted, student, assignment, maker(assignment))
    notebooks = submissions.solved(ASSIGNMENTS[0])
    first_answer = next(cell for nb in notebooks.values() for cell in nb.cells
                        if cell.metadata.get("nbgrader", {}).get("solution"))
    first_answer.source = PROBE + first_answer.source
    submissions.write_submission(submitted, "solved", ASSIGNMENTS[0], notebooks)
    cache = tmp_path_factory.mktemp("cache")  # a self-check passed before must not count: it runs here, now
    run = warm.run([sys.executable, "-m", "autograder.grade", str(submitted), "--course", str(root), "--out", str(out)],
                         cwd=REPO, env={**os.environ, **SECOND_DISPATCH, "XDG_CACHE_HOME": str(cache)},
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"self-check passed (solutions full marks, empty notebooks 0): {', '.join(ASSIGNMENTS)}" in run.stderr, \
        run.stderr[-3000:]
    with open(out / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    return dict(rows=rows, out=out)


def test_the_sandboxed_notebooks_run_under_the_second_dispatch(graded):
    result = json.loads((graded["out"] / "results" / "solved" / f"{ASSIGNMENTS[0]}.json").read_text())
    outputs = "".join(cell["output"] for nb in result["notebooks"].values() for cell in nb["cells"])
    assert "dispatch: DEFAULT AVX2" in outputs, outputs[:2000]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solved_and_variant_earn_every_point(graded, assignment):
    expected = sum(submissions.task_points(assignment))
    misses = []
    for student in STUDENTS:
        rows = [r for r in graded["rows"] if (r["student"], r["assignment"]) == (student, assignment)
                and r["task"] != "TOTAL"]
        if sum(float(r["score"]) for r in rows) != expected:
            misses += [f"{student} {r['task']}: {r['score']}/{r['max_score']} {r['note']}".strip() for r in rows
                       if r["score"] != r["max_score"]] or [f"{student}: {len(rows)} rows, {expected} points expected"]
            result = graded["out"] / "results" / student / f"{assignment}.json"
            if result.exists():
                misses += [f"  {student} failed cell: {cell.get('error_full', cell['error'])[-600:]}"
                           for nb in json.loads(result.read_text())["notebooks"].values()
                           for cell in nb["cells"] if not cell["ok"]]
    assert not misses, "\n".join(misses)
