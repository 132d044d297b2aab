"""No raw error reaches a student without a hint that fits the task (issue #50): every exercise's test cell runs its
visible part, and its hidden part, inside `utils.grading.task_errors`, so an error that the student's code raises
becomes a message that names the task and adds the task's hint (utils.grading.RAISED_HINTS) and what that kind of
error usually means. About 10 s."""
import re

import pytest

from autograder.course import assignments
from tests.exercise_cells import cells
from tests.wrong_answers import HIDDEN, Wrong, feedback
from utils.grading import RAISED_HINTS, raised_hint, task_errors

TESTS = [(assignment, grade_id) for assignment in assignments()
         for kind, grade_id, _ in cells(assignment) if kind == "test"]


def _answer_that_raises(code: str, error: str) -> str:
    """The answer cell `code` with its solution replaced by `raise <error>`; a solution that is a whole definition
    (exercise 4's decorated functions) becomes a function that raises."""
    before, _, rest = code.partition("### BEGIN SOLUTION")
    _, _, after = rest.partition("### END SOLUTION")
    margin = before[before.rfind("\n") + 1:]
    if margin.strip() or not margin:
        name = re.search(r"def (\w+)\(", rest).group(1)
        return f"{before}\ndef {name}(*args, **kwargs):\n    raise {error}\n{after}"
    return f"{before}raise {error}\n{margin}{after}"


def _task_before(assignment: str, test: str) -> str:
    previous = None
    for kind, grade_id, _ in cells(assignment):
        if kind == "test" and grade_id == test:
            return previous
        previous = grade_id if kind == "answer" else previous
    raise KeyError(test)


def test_every_test_has_a_hint_for_errors():
    assert set(RAISED_HINTS) == set(TESTS)


@pytest.mark.parametrize("assignment, test", TESTS)
def test_both_parts_run_inside_task_errors(assignment, test):
    code = next(code for kind, grade_id, code in cells(assignment) if kind == "test" and grade_id == test)
    visible, _, hidden = code.partition(HIDDEN)
    wrapper = f'with task_errors("{assignment}", "{test}")'   # alone (":") or first of the with's managers (", ")
    assert wrapper + ":" in visible or wrapper + ", " in visible, test
    assert wrapper + ":" in hidden or wrapper + ", " in hidden, test
    for part in (visible, hidden):  # everything after the wrapper is inside it (or inside another one: a budgeted
        after = part.split(wrapper, 1)[1].split("\n", 1)[1]  # cell's hidden tests are three parts, each run alone)
        outside = [line for line in after.splitlines() if line.strip() and not line.startswith((" ", "#"))
                   and "END HIDDEN TESTS" not in line and not line.startswith(wrapper)]
        assert outside == [], f"{test}: lines outside task_errors: {outside[:3]}"


@pytest.mark.parametrize("assignment", assignments())
def test_an_answer_that_raises_gets_the_tasks_hint(assignment):
    """A solution replaced by `raise TypeError(...)`: the visible test says which task raised and gives its hint; the
    hidden part gives a hint too (the task's, or its own check's where it records what the code raised)."""
    answers = {grade_id: code for kind, grade_id, code in cells(assignment) if kind == "answer"}
    for kind, test, test_code in cells(assignment):
        if kind != "test" or "check_napkin_answer(" in test_code:
            continue  # a napkin answer is a number: no code of the student's runs in its test (tests/test_napkin.py)
        task = _task_before(assignment, test)
        code = _answer_that_raises(answers[task], "TypeError(\"unsupported operand type(s) for +: 'int' and 'str'\")")
        visible, hidden = feedback(assignment, Wrong(task, "raises", "", code))
        assert visible is not None and visible.startswith(f"{test.removeprefix('test_')}: your code raised TypeError"), \
            (test, visible)
        assert RAISED_HINTS[assignment, test] in visible and "wrong kind" in visible, (test, visible)
        # the hidden part: the task's hint too, unless its check records the error itself and names it
        assert hidden is not None and not re.match(r"^\w+(Error|Exception): ", hidden) and "\nHint: " in hidden, \
            (test, hidden)


def test_task_errors_passes_checks_and_names_the_rest():
    with pytest.raises(AssertionError, match="^x: expected 1"):
        with task_errors("01_floats", "test_decode"):
            raise AssertionError("x: expected 1")
    with pytest.raises(AssertionError, match=r"^decode: your code raised AttributeError: 'NoneType'") as caught:
        with task_errors("01_floats", "test_decode"):
            None.clone()
    assert "lecture 1, section 1" in str(caught.value) and isinstance(caught.value.__cause__, AttributeError)
    assert "NotImplementedError" in raised_hint("01_floats", "test_decode", NotImplementedError())
    assert "traceback" in raised_hint("01_floats", "test_decode", OSError())


def test_an_answer_not_started_is_told_so_without_the_tasks_hint():
    """A blank answer cell raises NotImplementedError: the hint says to write the answer, not how the task goes."""
    hint = raised_hint("01_floats", "test_decode", NotImplementedError())
    assert "NotImplementedError" in hint and RAISED_HINTS["01_floats", "test_decode"] not in hint
