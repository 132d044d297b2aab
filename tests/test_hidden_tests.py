"""Every hidden test in source/ is written the trusted way (issue #24; docs/security.md): it calls the
student's code on `hidden_cases(KEY)` and hands the results in with `hand_in(KEY, ...)`, and never touches the
instructor's references, whose `HIDDEN_TESTS[KEY]` computes the expected results and checks them elsewhere."""
import json
import re
from pathlib import Path

import pytest

from autograder.grader.plan import HIDDEN, source_cells
from autograder.source import read_notebook
from reference import hidden
from utils.handin import decode, encode

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted((REPO / "source").glob("*/*.ipynb"))
TEST_CELLS = [(path, cell) for path in SOURCES for cell in source_cells(read_notebook(path))
              if cell.kind == "test" and HIDDEN.search(cell.code)]


@pytest.mark.parametrize("path, cell", TEST_CELLS, ids=[f"{p.parent.name}-{c.grade_id}" for p, c in TEST_CELLS])
def test_hidden_sections_hand_results_in_and_never_name_the_references(path, cell):
    section = HIDDEN.search(cell.code).group(0)
    assert cell.hidden_keys, f"{cell.grade_id}: its hidden section calls hidden_cases/hand_in with no literal key"
    assert not re.search(r"\breference\b", section), f"{cell.grade_id}: the hidden section names `reference`"
    for key in cell.hidden_keys:
        assert f'hidden_cases("{key}")' in section and f'hand_in("{key}"' in section, key
        hidden.hidden_test(key)  # registered in reference/<module>.py


def test_every_registered_hidden_test_is_used_exactly_once():
    import importlib
    used = [key for _, cell in TEST_CELLS for key in cell.hidden_keys]
    assert len(used) == len(set(used)), "a hidden test key is used by two cells"
    registered = {f"{path.stem}.{name}" for path in sorted((REPO / "reference").glob("*.py"))
                  for name in getattr(importlib.import_module(f"reference.{path.stem}"), "HIDDEN_TESTS", {})}
    assert registered == set(used), (sorted(registered - set(used)), sorted(set(used) - registered))


def test_values_cross_the_boundary_with_their_exact_types():
    import math

    import numpy
    import torch
    values = [None, True, 3, 2.5, -0.0, math.inf, math.nan, "s", (1, (2.0,)), [1, [2]], {"a": (1,)}, torch.bfloat16,
              torch.arange(6, dtype=torch.float16).reshape(2, 3), torch.empty(0, 3), torch.nn.Parameter(torch.ones(2))]
    back = decode(encode(values))
    for value, got in zip(values, back):
        assert type(got) is type(value), (value, got)
        if isinstance(value, torch.Tensor):
            assert got.dtype == value.dtype and got.shape == value.shape and torch.equal(got, value)
        elif isinstance(value, float) and math.isnan(value):
            assert math.isnan(got)
        elif isinstance(value, float):
            assert math.copysign(1, got) == math.copysign(1, value) and got == value
        else:
            assert got == value
    impostors = decode(encode([numpy.float64(1.0), 1 + 0j, object()]))
    assert [repr(v) for v in impostors] == ["<a numpy.float64>", "<a complex>", "<a object>"]
    for bad in ('{"float": 3}', '{"tensor": {"dtype": "float32", "shape": [2], "data": ""}}', '{"x": 1}',
                '{"dtype": "Tensor"}', "[" * 100_000 + "]" * 100_000):
        with pytest.raises((ValueError, RecursionError)):
            decode(bad)


KEYS = [key for _, cell in TEST_CELLS for key in cell.hidden_keys]


@pytest.mark.parametrize("key", KEYS)
def test_every_hidden_check_fails_garbage_with_an_assertion_error(key):
    """Wrong results of any shape are the student's failure (AssertionError), never the grader's (anything else)."""
    from tests.exercise_cells import garbage_for
    for garbage in garbage_for(hidden.cases(key), hidden.expected(key)):
        with pytest.raises(AssertionError):
            hidden.check(key, garbage)


def test_a_stand_in_answers_none_of_its_own_tasks_hidden_cases():
    """Issue #48: exercise 1's task 4 runs the student's after_cast with a stand-in limits that answers right for the
    formats it knows, in the student's process; none of those formats is a hidden case of test_limits, so printing
    what the stand-in returns hands over no expected value of that test."""
    from reference import floats
    known = {key for key, _ in floats.HIDDEN_TESTS["after_cast"].cases()["limits"]}
    assert known and not known & set(floats.HIDDEN_TESTS["limits"].cases())


@pytest.mark.parametrize("module", ["floats", "flops_mfu", "strides_views", "einops_jaxtyping", "accounting",
                                    "gradients", "training_loop", "mixed_precision", "models_optimizers",
                                    "tensors_on_gpu"])
def test_no_stand_in_answers_a_hidden_case_of_its_own_task(module):
    """Issue #48, for every exercise: a later task's stand-in for an earlier task's function (the table named after
    that task in the later test's cases) knows none of the earlier task's own hidden cases."""
    import importlib
    tests = importlib.import_module(f"reference.{module}").HIDDEN_TESTS
    for name, test in tests.items():
        cases = test.cases()
        for earlier, table in (cases.items() if isinstance(cases, dict) else []):
            if earlier not in tests or earlier == name:
                continue
            own = tests[earlier].cases()
            own = own["calls"] if isinstance(own, dict) else own
            known = {repr(key) for key, _ in table}
            assert not known & {repr(case) for case in own}, (name, earlier)


def test_every_cost_budget_follows_a_hidden_test_and_its_visible_test_measures_the_same():
    """Issues #52, #60: each CostBudget (reference/*.py, COST_BUDGETS) names a hidden test some test cell uses; it
    budgets something; that cell's hidden tests hold one measured part (### BEGIN MEASURED ... ### END MEASURED) that
    calls the student's function on every hidden case and hands nothing in (the next part does), and a prediction is
    the result of one hidden case; and the cell's visible part measures the same quantity with utils.cost, so a
    student sees the budget before handing in."""
    import importlib
    cells = {key: cell for _, cell in TEST_CELLS for key in cell.hidden_keys}
    budgets = [budget for path in sorted((REPO / "reference").glob("*.py"))
               for budget in getattr(importlib.import_module(f"reference.{path.stem}"), "COST_BUDGETS", [])]
    assert len(budgets) >= 3
    for budget in budgets:
        assert budget.key in cells, budget.key
        assert hidden.budgets(budget.key) and budget in hidden.budgets(budget.key)
        assert budget.peak_bytes or budget.file_bytes or budget.cpu_seconds or budget.predicted_case is not None
        assert budget.tolerance > 0 if budget.predicted_case is not None else budget.tolerance == 0
        if budget.predicted_case is not None:
            assert type(hidden.expected(budget.key)[budget.predicted_case]) is int, budget.key
        assert bool(budget.file) == bool(budget.file_tokens) == (budget.file_bytes is not None), budget.key
        cell = cells[budget.key]
        parts = cell.parts()
        assert parts is not None, f"{budget.key}: its test cell's hidden tests have no measured part"
        before, measured, after = parts
        function = cell.grade_id.removeprefix("test_")
        assert f"{function}(" in measured.code and "hand_in(" not in measured.code, budget.key
        assert "hidden_cases(" in before.code and f'hand_in("{budget.key}"' in after.code, budget.key
        visible = cell.visible_code
        assert "utils.cost.measure(" in visible and ("utils.cost.check_cost(" in visible
                                                     or "utils.cost.check_prediction(" in visible), budget.key


def test_a_cell_splits_into_its_measured_part_and_the_rest_on_whole_lines():
    """The grader runs a budgeted test cell as three requests (grader/cost.py): the parts join back into the cell,
    and each part's first line is its line in the cell (what a failure is shown at)."""
    from autograder.grader.plan import Cell
    from autograder.outcome import CellKind
    code = "a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n    ### BEGIN MEASURED\nc = 3\nd = 4\n### END MEASURED\ne = 5\n" \
           "### END HIDDEN TESTS\nf = 6"
    before, measured, after = Cell(CellKind.TEST, "t", code).parts()
    assert before.code + measured.code + after.code == code
    assert measured.code.splitlines()[1:3] == ["c = 3", "d = 4"] and (measured.first_line, after.first_line) == (4, 8)
    assert Cell(CellKind.TEST, "t", "### BEGIN MEASURED\nx\n### END MEASURED\n").parts() is None  # not in hidden tests
    assert Cell(CellKind.TEST, "t", code.replace("### END MEASURED\n", "")).parts() is None


def test_cost_budgets_cross_from_the_checker_typed():
    """A CostBudget travels from the trusted checker to the grader as one protocol message: each round-trips exactly,
    and one with a field of the wrong type or a missing field is refused (the run then stops as the course's fault)."""
    import importlib

    from autograder.protocol import CostBudget, ProtocolError
    budgets = [budget for path in sorted((REPO / "reference").glob("*.py"))
               for budget in getattr(importlib.import_module(f"reference.{path.stem}"), "COST_BUDGETS", [])]
    for budget in budgets:
        assert CostBudget.parse(budget.to_line()) == budget
    line = json.loads(budgets[0].to_line())
    for broken in ({**line, "peak_bytes": "16 MiB"}, {**line, "predicted_case": True},
                   {k: v for k, v in line.items() if k != "hint"}):
        with pytest.raises(ProtocolError):
            CostBudget.parse(json.dumps(broken))
