"""Typical wrong answers, as students write them, and the feedback each one gets (issue #34).

One module per exercise, `tests/wrong_answers/<assignment>.py` (and more in `tests/wrong_answers/more/`), holds
`WRONG`: a list of `Wrong(task, mistake, names, code)`, at least two per task. `task` is the grade_id of the
answer cell that `code` replaces; `mistake` says in words what is wrong; `names` is a regular expression
(case-insensitive) that feedback naming this mistake contains, written from the mistake, not copied from a message.
(Forbidden shortcuts, such as asking torch for strides, are left out: the rule checker that names them is other
work.)

`feedback(assignment, wrong)` runs the exercise in this process, as tests/exercise_cells.py does, and returns two
messages: what the visible test says (None when it passes) and what the hidden test's trusted check says (run on
its own, after the visible part ran with the instructor's solution, so that its helpers exist; None when it
passes). What a student is graded with is the first of the two that is not None: a failing visible part stops the
cell before the hidden part runs. A message names the mistake when it comes from an AssertionError (a raw torch
error does not count, however telling) and matches `names`.

`tests/wrong_answers/blind/<assignment>.py` holds a second set in the same format (issue #61), written from the
student edition alone, before its feedback was seen: `blind(assignment)` gives it. The hints were not tuned to it entry
by entry; it measures how well feedback names mistakes nobody planned for.

    .venv/bin/python -m tests.wrong_answers [assignment ...] [--set tuned|blind|all] [--show]
        prints each entry's verdicts and the shares, in all and per exercise (tuned: this folder and more/, the default)
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from dataclasses import dataclass

from tests.exercise_cells import cells

HIDDEN = "### BEGIN HIDDEN TESTS"


@dataclass(frozen=True)
class Wrong:
    task: str      # grade_id of the answer cell
    mistake: str   # what is wrong, in words
    names: str     # regex (case-insensitive) that feedback naming the mistake contains
    code: str      # the answer cell as a student wrote it


def corpus(assignment: str) -> list[Wrong]:
    """The exercise's wrong answers: tests/wrong_answers/<assignment>.py, then tests/wrong_answers/more/<assignment>.py
    (where it exists)."""
    wrong = list(importlib.import_module(f"tests.wrong_answers.{assignment}").WRONG)
    try:
        more = importlib.import_module(f"tests.wrong_answers.more.{assignment}")
    except ModuleNotFoundError as error:
        if error.name != f"tests.wrong_answers.more.{assignment}":
            raise
        return wrong
    return wrong + list(more.WRONG)


def blind(assignment: str) -> list[Wrong]:
    """The exercise's wrong answers written from the student edition alone: tests/wrong_answers/blind/<assignment>.py."""
    return list(importlib.import_module(f"tests.wrong_answers.blind.{assignment}").WRONG)


def _test_of(assignment: str, task: str) -> str:
    """The grade_id of the test cell right after the answer cell `task`."""
    following = False
    for kind, grade_id, _ in cells(assignment):
        if following and kind == "test":
            return grade_id
        following = following or (kind == "answer" and grade_id == task)
    raise KeyError(f"{assignment}: no answer cell {task!r} followed by a test cell")


def _run(code: str, namespace: dict, label: str) -> str | None:
    """None if `code` runs; else the message a student sees: "ExceptionType: message" ("" type for AssertionError)."""
    try:
        exec(compile(code, label, "exec"), namespace)
    except AssertionError as error:
        return str(error)
    except Exception as error:  # a raw error is what the student would see
        return f"{type(error).__name__}: {error}"
    return None


def _namespace(assignment: str, answers: dict[str, str], until: str) -> dict:
    """Set-up, answer and other code cells in notebook order, up to the test cell `until` (not run)."""
    namespace: dict = {"__name__": "__main__"}
    for kind, grade_id, code in cells(assignment):
        if kind == "test" and grade_id == until:
            break
        if kind in ("setup", "answer", ""):
            error = _run(answers.get(grade_id, code), namespace, f"<{assignment}:{grade_id}>")
            if error is not None and grade_id not in answers:
                raise RuntimeError(f"{assignment}:{grade_id} failed with the instructor's code: {error}")
    return namespace


def _parts(assignment: str, wrong: Wrong) -> tuple[str, str, str, str]:
    """(test grade_id, visible code, hidden code, the wrong answer's code) for `wrong`."""
    test = _test_of(assignment, wrong.task)
    test_code = next(code for kind, grade_id, code in cells(assignment) if kind == "test" and grade_id == test)
    visible_code, _, hidden_code = test_code.partition(HIDDEN)
    return test, visible_code, hidden_code, wrong.code.strip("\n") + "\n"


def visible_feedback(assignment: str, wrong: Wrong) -> str | None:
    """What the visible test says to `wrong` (None when it passes)."""
    test, visible_code, _, code = _parts(assignment, wrong)
    return _run(visible_code, _namespace(assignment, {wrong.task: code}, test), f"<{assignment}:{test}>")


def feedback(assignment: str, wrong: Wrong) -> tuple[str | None, str | None]:
    """(visible message, hidden message) for `wrong`; None where that part passes."""
    test, _, hidden_code, code = _parts(assignment, wrong)
    visible = visible_feedback(assignment, wrong)
    namespace = _solved(assignment, test, _parts(assignment, wrong)[1])
    saved = dict(namespace)
    try:
        _run(code, namespace, f"<{assignment}:{wrong.task} (wrong)>")
        hidden = _run(HIDDEN + hidden_code, namespace, f"<{assignment}:{test} (hidden)>")
    finally:
        namespace.clear()
        namespace.update(saved)
    return visible, hidden


_SOLVED: dict[tuple[str, str], dict] = {}


def _solved(assignment: str, test: str, visible_code: str) -> dict:
    """The namespace after the instructor's solutions and the visible part of `test` ran (once per process)."""
    if (assignment, test) not in _SOLVED:
        namespace = _namespace(assignment, {}, test)
        error = _run(visible_code, namespace, f"<{assignment}:{test}>")
        if error is not None:
            raise RuntimeError(f"{assignment}:{test} fails with the instructor's code: {error}")
        _SOLVED[assignment, test] = namespace
    return _SOLVED[assignment, test]


def names_mistake(message: str | None, wrong: Wrong) -> bool:
    """The message comes from a check (an AssertionError, not a raw error) and names the mistake."""
    if message is None or re.match(r"^[A-Z]\w*(Error|Exception|Interrupt): ", message):
        return False
    return re.search(wrong.names, message, re.IGNORECASE) is not None


def student_view(hidden: str | None) -> str | None:
    """A failed hidden check's message as a student's graded page shows it (autograder/grader/feedback.py
    hidden_failure_lines: what the diagnosis found and the hint; the hidden case's inputs and expected value stay
    with the instructor). A raw error stays as it is: it never counts as named."""
    from autograder.grader.feedback import hidden_failure_lines
    if hidden is None or re.match(r"^[A-Z]\w*(Error|Exception|Interrupt): ", hidden):
        return hidden
    return hidden_failure_lines(hidden)


def graded(visible: str | None, hidden: str | None) -> str | None:
    """What the grader reports to the student: a failing visible part stops the cell before its hidden part; a
    failing hidden part shows its student_view."""
    return visible if visible is not None else student_view(hidden)


def main(argv: list[str] | None = None) -> int:
    from autograder.course import assignments
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignments", nargs="*", default=None)
    parser.add_argument("--show", action="store_true", help="print every message in full")
    parser.add_argument("--set", choices=("tuned", "blind", "all"), default="tuned", help="which wrong answers")
    args = parser.parse_args(argv)
    chosen_set = {"tuned": corpus, "blind": blind, "all": lambda a: corpus(a) + blind(a)}[args.set]
    chosen = args.assignments or assignments()
    totals = {"entries": 0, "visible": 0, "graded": 0, "hidden": 0, "passes visible": 0}
    per_exercise: dict[str, list[int]] = {}
    started = time.monotonic()
    for assignment in chosen:
        for wrong in chosen_set(assignment):
            visible, hidden = feedback(assignment, wrong)
            verdicts = {"visible": names_mistake(visible, wrong), "graded": names_mistake(graded(visible, hidden), wrong),
                        "hidden": names_mistake(hidden, wrong), "passes visible": visible is None}
            totals["entries"] += 1
            for key, value in verdicts.items():
                totals[key] += value
            shares = per_exercise.setdefault(assignment, [0, 0, 0])
            shares[0] += 1
            shares[1] += verdicts["visible"]
            shares[2] += verdicts["graded"]
            marks = " ".join(f"{key}={'yes' if value else 'no'}" for key, value in verdicts.items())
            print(f"{assignment} {wrong.task}: {wrong.mistake}\n    {marks}")
            if args.show or not (verdicts["visible"] and verdicts["hidden"]):
                for label, message in (("visible", visible), ("hidden", hidden)):
                    text = "passes" if message is None else message.replace("\n", "\n        ")[:700]
                    print(f"    {label}: {text}")
    n = totals["entries"]
    print("\nPer exercise, feedback that names the mistake (visible test; graded):")
    for assignment, (entries, visible, graded_) in per_exercise.items():
        print(f"  {assignment:32} {visible:3}/{entries:<3} ({visible / entries:4.0%}); {graded_:3}/{entries:<3} "
              f"({graded_ / entries:4.0%})")
    print(f"\n{n} wrong answers in {time.monotonic() - started:.0f} s. Feedback that names the mistake: "
          f"visible {totals['visible']}/{n} ({totals['visible'] / n:.0%}), graded {totals['graded']}/{n} "
          f"({totals['graded'] / n:.0%}), hidden check alone {totals['hidden']}/{n} ({totals['hidden'] / n:.0%}); "
          f"passing every visible test: {totals['passes visible']}/{n}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
