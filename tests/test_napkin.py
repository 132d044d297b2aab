"""Napkin-math answers (issue #52; utils/napkin.py): the checks themselves, and every napkin question of the course,
whose visible test knows no answer, whose text states its inputs, unit and tolerance, and whose hidden check says by
how much and which way a wrong number is off without saying the answer. About 2 s."""
import json
import math
import re

import pytest

import utils.napkin as napkin
from autograder.course import assignments
from reference import hidden
from tests.exercise_cells import REPO, cells
from utils.grading import task_errors
from utils.napkin import (
    BITS_FOR_BYTES,
    GB_FOR_GIB,
    MIB_FOR_GIB,
    check_napkin,
    check_napkin_answer,
    napkin_feedback,
    off_by,
    within_factor,
    within_percent,
)

CALL = re.compile(r'check_napkin_answer\((\w+), "(\w+)", "([^"]+)"\)')
KEY = re.compile(r'hand_in\("(\w+\.\w+)"')


def questions() -> list[tuple[str, str, str, str, str]]:
    """(assignment, variable, unit its visible test names, hidden test key, the visible part) of every napkin test."""
    found = []
    for assignment in assignments():
        for kind, _grade_id, code in cells(assignment):
            call = CALL.search(code) if kind == "test" else None
            if call:
                visible = code.partition("### BEGIN HIDDEN TESTS")[0]
                found.append((assignment, call.group(1), call.group(3), KEY.search(code).group(1), visible))
    return found


QUESTIONS = questions()


def question_text(assignment: str, variable: str) -> str:
    """The markdown of the task whose answer cell assigns `variable`."""
    notebook = json.loads(next((REPO / "source" / assignment).glob("*.ipynb")).read_text())
    text = ""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
        elif cell["metadata"].get("nbgrader", {}).get("grade_id") == variable:
            return text
    raise KeyError(variable)


def stated(value: float) -> set[str]:
    """The ways a question may write `value`: 4096, 524,288, 0.6, 7 x 10^9, 2.8 x 10^12."""
    forms = {str(value), f"{value:,}"}
    for exponent in range(3, 16):
        mantissa = value / 10**exponent
        if 1 <= mantissa < 1000 and round(mantissa, 3) == mantissa:
            forms.add(f"{mantissa:g} x 10^{exponent}")
    return forms



def test_within_percent_is_that_many_hundredths_either_way():
    assert within_percent(10).allows(1.09) and within_percent(10).allows(0.91) and within_percent(10).allows(1.1)
    assert not within_percent(10).allows(1.11) and not within_percent(10).allows(0.89)
    assert str(within_percent(5)) == "within 5%"

def test_every_exercise_has_one_to_three_napkin_questions():
    per_exercise = {a: sum(q[0] == a for q in QUESTIONS) for a in assignments()}
    assert all(1 <= n <= 3 for n in per_exercise.values()), per_exercise


@pytest.mark.parametrize("assignment, variable, unit, key, visible", QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_the_visible_test_knows_no_answer(assignment, variable, unit, key, visible):
    """Any positive number passes the visible part, from 1e-30 to 1e30: it cannot tell a student anything about the
    value. None, a string and 0 fail it, with a hint."""
    def run(value) -> str | None:
        namespace = {"task_errors": task_errors, "check_napkin_answer": check_napkin_answer, variable: value}
        try:
            exec(compile(visible, variable, "exec"), namespace)
        except AssertionError as error:
            return str(error)
        return None
    for value in (1e-30, 1, 3.7, 10**9, 1e30):
        assert run(value) is None, (value, run(value))
    for value in (None, "12 GiB", 0, -1.0, math.nan, True):
        assert "Hint:" in (run(value) or ""), value


@pytest.mark.parametrize("assignment, variable, unit, key, visible", QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_the_text_states_inputs_unit_and_tolerance(assignment, variable, unit, key, visible):
    test = hidden.hidden_test(key)
    assert isinstance(test, hidden.NapkinTest) and test.unit == unit
    text = question_text(assignment, variable)
    assert f"`{variable}`" in text and str(test.tolerance) in text, (str(test.tolerance), text)
    for name, value in test.cases():
        assert any(re.search(rf"(?<![\d.])(?<!\d,){re.escape(form)}(?!\d|[.,]\d)", text) for form in stated(value)), \
            f"{variable}: the input {name} = {value} is not in the question's text"


NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)(?: x 10\^(\d+))?")


def numbers(text: str) -> list[float]:
    """Every number written in `text`: 4096, 524,288, 2.8e12, 7 x 10^9."""
    return [float(m.group(1).replace(",", "")) * 10 ** int(m.group(2) or 0) for m in NUMBER.finditer(text)]


def released_cells(assignment: str, variable: str) -> str:
    """What a student receives of the question: its text, its answer cell and its test cell, as released."""
    notebook = json.loads(next((REPO / "release" / assignment).glob("*.ipynb")).read_text())
    ids = [cell["metadata"].get("nbgrader", {}).get("grade_id") for cell in notebook["cells"]]
    at = ids.index(variable)
    return "\n".join("".join(cell["source"]) for cell in notebook["cells"][at - 1:at + 2])


@pytest.mark.parametrize("assignment, variable, unit, key, visible", QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_the_answer_is_nowhere_in_what_the_student_receives(assignment, variable, unit, key, visible):
    """No number in the released question, its answer cell or its test cell lies within twice the tolerance of the
    answer (nor does the answer's own text appear there)."""
    test, expected = hidden.hidden_test(key), hidden.expected(key)
    text = released_cells(assignment, variable)
    near = [n for n in numbers(text) if n and abs(n / expected - 1) <= 2 * test.tolerance.relative]
    assert not near and repr(expected) not in text, (variable, near)


@pytest.mark.parametrize("assignment, variable, unit, key, visible", QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_the_hidden_check_passes_within_the_tolerance_and_never_says_the_answer(assignment, variable, unit, key,
                                                                               visible):
    test, expected = hidden.hidden_test(key), hidden.expected(key)
    tolerance = test.tolerance.relative
    for inside in (expected, expected * (1 + tolerance * 0.99), expected * (1 - tolerance * 0.99), int(expected) or 1):
        if abs(inside / expected - 1) <= tolerance:
            hidden.check(key, inside)
    for ratio in (1 + tolerance * 1.5, 1 - tolerance * 1.5, 3.0, 1e-3):
        with pytest.raises(AssertionError) as caught:
            hidden.check(key, expected * ratio)
        message = str(caught.value)
        assert "\nHint: " in message and ("too large" if ratio > 1 else "too small") in message
        for form in {f"{expected:.4g}", f"{expected:.3g}", repr(expected)}:
            assert form not in message.replace(repr(expected * ratio), ""), (form, message)


def test_off_by_says_a_band_whose_edges_do_not_pass():
    assert off_by(1.7) == "between 1.5x and 2x too large" and off_by(1 / 1.7) == "between 1.5x and 2x too small"
    assert off_by(8.0) == "between 5x and 10x too large" and off_by(1.2) == "less than 1.5x too large"
    assert off_by(1 / 12.0) == "between 10x and 15x too small" and off_by(64.0) == "between 50x and 100x too large"
    assert off_by(3e-6) == "between 300,000x and 500,000x too small"
    # an edge the tolerance would let the answer pass as moves out: 1,000x for 1,024x is 2.4% off
    assert off_by(1024.0, within_percent(2)) == "between 1,000x and 1,500x too large"
    assert off_by(1024.0, within_percent(5)) == "between 500x and 1,500x too large"
    assert off_by(1.52, within_percent(2)) == "less than 2x too large" and off_by(1000.0) == "between 1,000x and 1,500x too large"
    assert off_by(1000.0, within_percent(2)) == "between 500x and 1,500x too large"
    assert off_by(math.inf, within_percent(2), 320.0) == "between 5 x 10^319x and 1.5 x 10^320x too large"
    assert off_by(0.0, within_percent(2), -16.1) == "between 10^16x and 1.5 x 10^16x too small"


GRID = [10 ** (k / 200) for k in range(-1400, 1401)]  # answers from 10^-7 to 10^7 times the expected value
FACTOR = re.compile(r"(\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)x")


def factors_printed(hint: str) -> list[float]:
    return [float(found.replace(",", "")) for found in FACTOR.findall(hint)]


@pytest.mark.parametrize("tolerance", [within_percent(2), within_percent(5), within_percent(60), within_percent(89),
                                       within_factor(2), within_factor(9.9)], ids=str)
def test_no_number_the_feedback_prints_is_one_to_multiply_by_and_pass(tolerance):
    """The policy of utils/napkin.py (docs/course.md, "What napkin feedback tells you"), over a grid of wrong answers
    and tolerances up to the widest a question may state: without a slip named, no factor printed (a band's edges)
    makes the answer pass when multiplied or divided by; a near miss prints no number but the tolerance; and never
    does a hint say "about" a rounded factor."""
    for ratio in GRID:
        if tolerance.allows(ratio):
            continue
        hint = napkin_feedback(ratio, "GiB", tolerance)
        assert ("too large" if ratio > 1 else "too small") in hint, (ratio, hint)
        if hint.startswith("a near miss"):
            assert re.findall(r"\d+", hint) == re.findall(r"\d+", str(tolerance)), (ratio, hint)
            continue
        assert hint.startswith(("between", "less than")), (ratio, hint)
        for factor in factors_printed(hint):
            assert not tolerance.allows(ratio * factor) and not tolerance.allows(ratio / factor), (ratio, hint)


@pytest.mark.parametrize("assignment, variable, unit, key, visible", QUESTIONS, ids=[q[1] for q in QUESTIONS])
def test_each_question_prints_a_factor_as_it_is_only_beside_its_slip(assignment, variable, unit, key, visible):
    """Over the grid of wrong answers, each question's hidden check either names a slip, printing the answer's own
    factor to 3 significant digits (1,024x, never 1,000x), or follows the band policy above."""
    test, expected = hidden.hidden_test(key), hidden.expected(key)
    tolerance = test.tolerance
    for ratio in GRID[::4]:
        if tolerance.allows(ratio):
            continue
        with pytest.raises(AssertionError) as caught:
            hidden.check(key, expected * ratio)
        hint = str(caught.value).partition("\nHint: ")[2]
        if hint.startswith(("between", "less than", "a near miss")):
            for factor in factors_printed(hint):
                assert not tolerance.allows(ratio * factor) and not tolerance.allows(ratio / factor), (ratio, hint)
        else:
            assert abs(factors_printed(hint)[0] / max(ratio, 1 / ratio) - 1) < 0.005, (ratio, hint)


def test_tolerances():
    assert within_percent(5).allows(1.05) and not within_percent(5).allows(1.051) and within_percent(5).allows(0.95)
    assert within_factor(2).allows(0.5) and within_factor(2).allows(2.0) and not within_factor(2).allows(2.01)
    assert str(within_percent(2)) == "within 2%" and str(within_factor(3)) == "within a factor of 3"
    for too_wide in (lambda: within_factor(10), lambda: within_factor(1), lambda: within_percent(90),
                     lambda: within_percent(-1)):
        with pytest.raises(ValueError, match="napkin tolerance"):   # the feedback's bands span a decade either way
            too_wide()


def test_a_known_slip_is_named_with_its_factor_as_it_is_and_an_unknown_one_gets_a_band():
    slips = {**BITS_FOR_BYTES, **GB_FOR_GIB, **MIB_FOR_GIB}
    expected = 7e9 * 2 / 2**30
    with pytest.raises(AssertionError, match=r"Hint: 8x too large: bits where bytes were asked\?"):
        check_napkin(expected * 8, expected, "weights_gib", "GiB", within_percent(2), slips)
    with pytest.raises(AssertionError, match=r"Hint: 1.07x too large: GB \(10\^9 bytes\) where GiB"):
        check_napkin(7e9 * 2 / 1e9, expected, "weights_gib", "GiB", within_percent(2), slips)
    with pytest.raises(AssertionError, match=r"Hint: 1,024x too large: MiB where GiB"):
        check_napkin(expected * 1024, expected, "weights_gib", "GiB", within_percent(2), slips)
    with pytest.raises(AssertionError, match=r"Hint: between 500x and 1,500x too small: recheck"):
        check_napkin(expected / 1000, expected, "weights_gib", "GiB", within_percent(2), slips)
    with pytest.raises(AssertionError, match=r"Hint: a near miss, a little too small \(graded within 2%\)"):
        check_napkin(14e9 / 1.1e9, expected, "weights_gib", "GiB", within_percent(2), slips)  # U7: 2^30 as 1.1e9
    check_napkin(13, expected, "weights_gib", "GiB", within_percent(2), slips)   # an int, 0.3% off
    check_napkin(14e9 / 1.07e9, expected, "weights_gib", "GiB", within_percent(2), slips)  # three digits: passes


@pytest.mark.parametrize("value", [None, True, "13", 0, -2.5, math.inf, math.nan, 10**400, [13.0]])
def test_only_a_plain_positive_finite_number_is_an_answer(value):
    with pytest.raises(AssertionError, match="Hint: "):
        check_napkin_answer(value, "x", "GiB")
    with pytest.raises(AssertionError):
        check_napkin(value, 13.0, "x", "GiB", within_percent(2))


def test_numpy_and_torch_numbers_are_refused():
    import numpy
    import torch
    for value in (numpy.float64(13.0), torch.tensor(13.0), numpy.int64(13)):
        with pytest.raises(AssertionError, match="plain number"):
            check_napkin_answer(value, "x", "GiB")


EXTREMES = [1e308, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-300, 1.0, 3, 10**300, 2**1023]


def test_any_finite_positive_answer_is_graded_never_the_graders_fault():
    """Issue #59: an answer of 1e308 or 5e-324 made every napkin check raise OverflowError or ZeroDivisionError, and
    the notebook was NOT GRADED as the grader's fault. Every question, through the trusted checker's own verdict:
    right or wrong with a hint, never a fault; generated answers too (any finite positive float)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from autograder.trusted.checker import verdict
    from utils.handin import encode
    keys = sorted({key for *_, key, _ in QUESTIONS})
    assert len(keys) >= 10
    for key in keys:
        for value in EXTREMES:
            found = verdict(hidden, key, encode(value))
            assert not found.fault and (found.ok or found.error.startswith("AssertionError:")), (key, value, found)
            assert found.ok or re.search(r"Hint: .*too (large|small)", found.error), (key, value, found.error)

    @settings(max_examples=150, deadline=None, derandomize=True, database=None)
    @given(st.sampled_from(keys), st.floats(min_value=5e-324, allow_nan=False, allow_infinity=False))
    def graded(key, value):
        found = verdict(hidden, key, encode(value))
        assert not found.fault and (found.ok or "\nHint: " in found.error), (key, value, found)
    graded()


@pytest.mark.parametrize("slips, answer_over_expected, named", [
    (napkin.BITS_FOR_BYTES, 8, "8x too large: bits where bytes"), (napkin.GB_FOR_GIB, 1e9 * 1.073741824 / 1e9,
                                                                    "1.07x too large: GB (10^9 bytes) where GiB"),
    (napkin.GIB_FOR_GB, 1 / 1.073741824, "1.07x too small: GiB (2^30 bytes) where GB"),
    (napkin.MIB_FOR_GIB, 1024, "1,024x too large: MiB where GiB"),
    (napkin.MS_FOR_S, 1000, "1,000x too large: milliseconds where seconds"),
    (napkin.S_FOR_MS, 1e-3, "1,000x too small: seconds where milliseconds"),
    (napkin.PERCENT_FOR_FRACTION, 100, "100x too large: a percentage where a fraction"),
    (napkin.MULTIPLY_ADDS, 0.5, "2x too small: multiply-adds counted where FLOPs"),
])
def test_each_typical_slip_is_named_at_its_own_factor(slips, answer_over_expected, named):
    """Every slip table of utils/napkin.py: an answer off by exactly the slip's factor is told the slip."""
    expected = 3.5
    with pytest.raises(AssertionError, match=re.escape(f"Hint: {named}")):
        check_napkin(expected * answer_over_expected, expected, "x", "units", within_percent(2), slips)
