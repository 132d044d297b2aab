"""A mistake in an earlier task costs its points once (issue #24, item 9): where a later task's function calls an
earlier task's, every check of the later task, visible and hidden, runs it with correct earlier answers.

Each case is a submission with the instructor's solution in every answer cell but one or more earlier ones, which hold
a plausible mistake; the real grader (`python -m autograder.grade`, one run for every case) must take the points of the
tasks named in `lost` and give every other task of the exercise its full points. One case is one entry of CASES: add
yours there (an exercise's cases sit together, under its number).
"""
from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import submissions, warm

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Cascade:
    assignment: str
    wrong: dict[str, str]  # grade_id of an answer cell -> the (wrong) code the submission has there instead
    lost: frozenset[str]   # grade_ids of the test cells that must score 0; every other test cell scores its points


# a right can_view that calls is_contiguous (exercise 3)
CAN_VIEW_CALLING_IS_CONTIGUOUS = """
def can_view(shape: tuple[int, ...], strides: tuple[int, ...], new_shape: tuple[int, ...]) -> bool:
    if 0 in shape or is_contiguous(shape, strides):   # one chunk: any shape of the same numel
        return True
    chunks, numel, inner_stride = [], 1, None
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 1:
            continue
        if inner_stride is not None and stride != inner_stride * numel:
            chunks.append(numel)
            numel, inner_stride = 1, None
        if inner_stride is None:
            inner_stride = stride
        numel *= size
    chunks.append(numel)
    sizes, position = [size for size in reversed(new_shape) if size != 1], 0
    for chunk in chunks:
        product = 1
        while product < chunk and position < len(sizes):
            product *= sizes[position]
            position += 1
        if product != chunk:
            return False
    return position == len(sizes)
"""

# student name (letters, digits, _ only) -> case
CASES: dict[str, Cascade] = {
    # 1: after_cast calls limits (the intro invites it)
    "ex01_limits_bias_off_by_one": Cascade("01_floats", {"limits": '''
def limits(exponent_bits: int, mantissa_bits: int, ieee_specials: bool = True) -> tuple[float, float, float, float]:
    bias = 2 ** (exponent_bits - 1)   # one too many: every limit comes out half what it should be
    top = 2**exponent_bits - 1 if ieee_specials else 2**exponent_bits
    return ((2 - 2.0**-mantissa_bits) * 2.0 ** (top - 1 - bias), 2.0 ** (1 - bias),
            2.0 ** (1 - bias - mantissa_bits), 2.0**-mantissa_bits)
'''}, frozenset({"test_limits"})),
    # 3: is_contiguous may call row_major_strides, can_view is_contiguous (and row_major_strides); here they do
    "ex03_column_major_strides": Cascade("03_strides_views", {"row_major_strides": '''
def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in shape:               # column-major: the first dimension gets stride 1
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)
''', "is_contiguous": '''
def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    fresh = row_major_strides(shape)
    return 0 in shape or all(stride == want for size, stride, want in zip(shape, strides, fresh) if size != 1)
''', "can_view": CAN_VIEW_CALLING_IS_CONTIGUOUS}, frozenset({"test_row_major_strides"})),
    "ex03_strides_merely_decreasing": Cascade("03_strides_views", {"is_contiguous": '''
def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    return list(strides) == sorted(strides, reverse=True)   # decreasing is not enough: x[:, :2] leaves gaps
''', "can_view": CAN_VIEW_CALLING_IS_CONTIGUOUS}, frozenset({"test_is_contiguous"})),
    # 10: memory_per_gpu calls param_count, training_days calls training_flops_per_token
    "ex10_no_position_embedding": Cascade("10_accounting_a_training_run", {"param_count": '''
def param_count(shape: GPT2Shape) -> int:
    d, f = shape.d_model, shape.d_ff
    per_block = (d * 3 * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    return shape.vocab_size * d + shape.num_layers * per_block + 2 * d   # forgot the position embedding
'''}, frozenset({"test_param_count"})),
    "ex10_flops_as_6x_params": Cascade("10_accounting_a_training_run", {"training_flops_per_token": '''
def training_flops_per_token(shape: GPT2Shape) -> int:
    return 6 * param_count(shape)   # the rule of thumb, not FlopCounterMode's count
'''}, frozenset({"test_training_flops_per_token"})),
}


def submission(case: Cascade):
    return submissions._fill(case.assignment, lambda i, grade_id, solution:
                             case.wrong[grade_id].strip("\n") + "\n" if grade_id in case.wrong else solution)


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> dict[tuple[str, str], float]:
    """(student, test cell's grade_id) -> score, from one grader run over every case."""
    root = submissions.new_course(tmp_path_factory.mktemp("cascading"))
    for student, case in CASES.items():
        submissions.write_submission(root / "submitted", student, case.assignment, submission(case))
    run = warm.run([sys.executable, "-m", "autograder.grade", str(root / "submitted"), "--course", str(root),
                          "--out", str(root / "graded"), "--limit", "cell_seconds=30"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(root / "graded" / "grades.csv") as f:
        return {(row["student"], row["task"]): float(row["score"]) for row in csv.DictReader(f)
                if row["student"] in CASES and row["assignment"] == CASES[row["student"]].assignment}


@pytest.mark.parametrize("student", CASES)
def test_a_wrong_earlier_task_costs_its_own_points_only(scores, student):
    case = CASES[student]
    points = dict(zip([cell.metadata.nbgrader["grade_id"]
                       for nb in submissions._notebooks(REPO / "source" / case.assignment).values()
                       for cell in nb.cells if cell.metadata.get("nbgrader", {}).get("grade")],
                      submissions.task_points(case.assignment)))
    assert case.lost <= set(points), f"no such test cells: {sorted(case.lost - set(points))}"
    got = {grade_id: scores.get((student, grade_id)) for grade_id in points}
    want = {grade_id: 0.0 if grade_id in case.lost else full for grade_id, full in points.items()}
    assert got == want
