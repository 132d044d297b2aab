"""Every typical wrong answer of tests/wrong_answers/ fails its visible test with a message that names its mistake
(issue #34), so a student learns what is wrong before grading, and the grade's feedback says the same: a failing
visible part stops the cell before its hidden part, so the grader reports that message. About 6 s.

`python -m tests.wrong_answers` also runs each hidden check on its own and prints the shares."""
import pytest

from autograder.course import assignments
from tests.exercise_cells import cells
from tests.wrong_answers import Wrong, corpus, feedback, graded, names_mistake, visible_feedback

ASSIGNMENTS = assignments()


def napkin_tasks(assignment: str) -> set[str]:
    """The answer cells of the napkin questions: those whose test cell checks its number with check_napkin_answer."""
    found, answer = set(), None
    for kind, grade_id, code in cells(assignment):
        if kind == "answer":
            answer = grade_id
        elif kind == "test" and "check_napkin_answer(" in code:
            found.add(answer)
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_task_has_at_least_two_wrong_answers(assignment):
    tasks = [grade_id for kind, grade_id, _ in cells(assignment) if kind == "answer"]
    written = [wrong.task for wrong in corpus(assignment)]
    assert set(written) <= set(tasks), f"no such task: {sorted(set(written) - set(tasks))}"
    assert {task: written.count(task) for task in tasks if written.count(task) < 2} == {}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_wrong_answer_fails_visibly_with_its_mistake_named(assignment):
    """A napkin answer's visible test knows no expected value (utils/napkin.py), so a wrong number that is a number
    passes it: there the grade's feedback, from the hidden check, must name the mistake."""
    misses = []
    napkin = napkin_tasks(assignment)
    for wrong in corpus(assignment):
        message = visible_feedback(assignment, wrong)
        if wrong.task in napkin and message is None:
            message = feedback(assignment, wrong)[1]
        if not names_mistake(message, wrong):
            misses.append(f"{wrong.task}: {wrong.mistake}\n    wants /{wrong.names}/, got: "
                          f"{'the visible test passes' if message is None else message[:400]}")
    assert not misses, "\n".join(misses)


def test_naming_takes_a_check_and_the_mistake():
    wrong = Wrong("storage_index", "forgets the storage offset", r"offset", "")
    assert names_mistake("storage_index((3,), (4,), 1): expected 13, got 12\nHint: add the storage offset.", wrong)
    assert not names_mistake("storage_index((3,), (4,), 1): expected 13, got 12", wrong)           # says nothing
    assert not names_mistake("RuntimeError: storage offset out of bounds", wrong)                    # a raw error
    assert not names_mistake(None, wrong)                                                            # passes
    assert graded(None, "hidden: offset") == "hidden: offset" and graded("visible", "hidden") == "visible"
