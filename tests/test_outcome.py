"""The typed outcome of a graded submission (autograder/outcome.py, issue #51): results files written before the types
(tests/fixtures/results_2026-11-28/, the tiny course graded by the grader of that day: a pass, a wrong answer, a
time-out, a crash, a syntax error, an exception, a flagged notebook, a missing notebook, a file that is not a
notebook, and a submission the grader could not grade) read with the failure each one meant, round-trip exactly, and
anything else in a results file is refused with where it is."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.outcome import (FORMAT, CellOutcome, Failure, OutcomeError, Status, SubmissionOutcome, not_graded)

OLD = Path(__file__).resolve().parent / "fixtures" / "results_2026-11-28"
NOTEBOOK = "00_tiny"


def old(student: str) -> SubmissionOutcome:
    return SubmissionOutcome.from_json((OLD / f"{student}.json").read_text())


def failures(outcome: SubmissionOutcome) -> dict[str, Failure | None]:
    """{kind:grade_id: failure} of the tiny notebook's cells."""
    return {f"{c.kind}:{c.grade_id}": c.failure for c in outcome.notebooks[NOTEBOOK].cells}


def test_every_results_file_of_the_day_before_reads():
    students = sorted(p.stem for p in OLD.glob("*.json"))
    assert students == ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jo"]
    for student in students:
        outcome = old(student)
        assert outcome.student == student and outcome.assignment == NOTEBOOK and outcome.format == 1


@pytest.mark.parametrize("student, cell, failure", [
    ("ada", "test:test_double", None),
    ("bob", "test:test_double", Failure.ERROR),
    ("cy", "test:test_double", Failure.TIMEOUT),
    ("dee", "test:test_double", Failure.CRASH),
    ("eve", "answer:double", Failure.SYNTAX),
    ("eve", "test:test_double", Failure.ERROR),
    ("fay", "test:test_double", Failure.ERROR),
    ("hal", "test:test_double", Failure.NOT_RUN),
])
def test_an_old_cell_gets_the_failure_its_text_meant_when_it_was_written(student, cell, failure):
    assert failures(old(student))[cell] is failure


def test_old_notebook_problems_and_statuses_are_typed():
    assert old("hal").notebooks[NOTEBOOK].failure is Failure.MISSING_NOTEBOOK
    assert old("ivy").notebooks[NOTEBOOK].failure is Failure.NOT_A_NOTEBOOK
    assert old("ada").notebooks[NOTEBOOK].failure is None
    assert old("jo").status is Status.NOT_GRADED and old("jo").notebooks == {}
    assert old("ada").status is Status.GRADED and not old("ada").flagged
    assert list(old("gus").flagged) == [NOTEBOOK] and "subprocess" in old("gus").flagged[NOTEBOOK][0]


@pytest.mark.parametrize("student", ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal", "ivy", "jo"])
def test_an_old_file_round_trips_and_keeps_every_field_it_had(student):
    written = json.loads((OLD / f"{student}.json").read_text())
    outcome = old(student)
    again = SubmissionOutcome.from_json(outcome.to_json())
    assert again == outcome and again.format == 1
    plain = outcome.to_dict()
    assert plain["format"] == 1
    for name, notebook in written["notebooks"].items():
        for before, after in zip(notebook["cells"], plain["notebooks"][name]["cells"]):
            before.pop("handed", None)  # format 1 kept an empty one on cells that never ran
            assert {k: v for k, v in after.items() if k != "failure"} == before
        assert {k: v for k, v in plain["notebooks"][name].items() if k not in ("cells", "failure")} == \
            {k: v for k, v in notebook.items() if k != "cells"}
    assert {k: v for k, v in plain.items() if k not in ("notebooks", "format")} == \
        {k: v for k, v in written.items() if k != "notebooks"}


def test_a_new_outcome_round_trips_with_its_format_and_failures():
    outcome = not_graded("k", "jo", NOTEBOOK, "the zygote is gone")
    assert outcome.to_dict()["format"] == FORMAT and SubmissionOutcome.from_json(outcome.to_json()) == outcome
    cell = CellOutcome("test", "t", 2.0, "assert f()", False, "", "the cell ran longer than 4 s", (), (), None,
                       seconds=4.1, failure=Failure.TIMEOUT)
    assert CellOutcome.from_dict(cell.to_dict(), "cell", legacy=False) == cell
    assert "error_full" not in cell.to_dict() and cell.to_dict()["failure"] == "timeout"


def _changed(student: str, change) -> str:
    obj = json.loads((OLD / f"{student}.json").read_text())
    change(obj)
    return json.dumps(obj)


@pytest.mark.parametrize("change, where", [
    (lambda o: o.update(extra=1), "unexpected ['extra']"),
    (lambda o: o.pop("key"), "missing ['key']"),
    (lambda o: o.update(problems="one"), "result.problems"),
    (lambda o: o.update(format=3), "result.format: 3"),
    (lambda o: o["notebooks"][NOTEBOOK].update(ran="yes"), "result.notebooks['00_tiny'].ran"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(ok=1), "cells[0].ok"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(points=True), "cells[0].points"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(line="3"), "cells[0].line"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(tampered=[1]), "cells[0].tampered"),
    (lambda o: o["notebooks"][NOTEBOOK]["grades"].update(x="full"), "grades"),
    (lambda o: o.update(format=2) or o["notebooks"][NOTEBOOK]["cells"][0].update(failure="melted"), "failure"),
    (lambda o: o.update(format=2), "failure"),  # a format-2 file carries its failures; none is guessed
])
def test_anything_else_in_a_results_file_is_refused_with_where_it_is(change, where):
    with pytest.raises(OutcomeError, match=None) as refused:
        SubmissionOutcome.from_json(_changed("bob", change))
    assert where in str(refused.value), str(refused.value)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"a"'])
def test_what_is_not_a_results_object_is_refused(text):
    with pytest.raises(OutcomeError):
        SubmissionOutcome.from_json(text)
