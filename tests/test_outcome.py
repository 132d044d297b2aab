"""The typed outcome of a graded submission (autograder/outcome.py, issue #51): results files written before the types
(tests/fixtures/results_2026-11-28/, the tiny course graded by the grader of that day: a pass, a wrong answer, a
time-out, a crash, a syntax error, an exception, a flagged notebook, a missing notebook, a file that is not a
notebook, and a submission the grader could not grade) read with the failure each one meant, round-trip exactly, and
anything else in a results file is refused with where it is. A run of today's grader on the same kinds of submission
writes each failure where it happened, a status column in grades.csv and summary.json beside summary.txt."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from autograder.outcome import (
    FORMAT,
    CellKind,
    CellOutcome,
    EventKind,
    Failure,
    OutcomeError,
    Status,
    SubmissionOutcome,
    not_graded,
    read_summary_json,
)
from tests import warm

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
            assert {k: v for k, v in after.items() if k not in ("failure", "ename")} == before  # both read from its text
        assert {k: v for k, v in plain["notebooks"][name].items() if k not in ("cells", "failure")} == \
            {k: v for k, v in notebook.items() if k != "cells"}
    assert {k: v for k, v in plain.items() if k not in ("notebooks", "format")} == \
        {k: v for k, v in written.items() if k != "notebooks"}


def test_a_new_outcome_round_trips_with_its_format_and_failures():
    outcome = not_graded("k", "jo", NOTEBOOK, "the zygote is gone")
    assert outcome.to_dict()["format"] == FORMAT and SubmissionOutcome.from_json(outcome.to_json()) == outcome
    cell = CellOutcome(CellKind.TEST, "t", 2.0, "assert f()", False, "", "the cell ran longer than 4 s", (), (), None,
                       seconds=4.1, failure=Failure.TIMEOUT)
    assert CellOutcome.from_dict(cell.to_dict(), "cell") == cell
    assert "error_full" not in cell.to_dict() and cell.to_dict()["failure"] == "timeout"


MEASURED_2 = {"peak_bytes": 4096, "high_water_bytes": 0, "new_page_bytes": 4096, "file_bytes": 8192, "faults": 1,
              "cpu_seconds": 0.01, "elsewhere": ["a child process ran and was waited for during the calls"],
              "predicted_bytes": None}
LIMITS_2 = {"peak_bytes": None, "file": "tokens.bin", "file_bytes": 2097152, "cpu_seconds": None, "tolerance": 0.0}


def _format_2(student: str, error: str, costs: list) -> dict:
    """A format-1 fixture's results as the grader of 2026-11-29 wrote them (format 2): failures set, no `ename`; its
    test cell failed with `error` and holding `costs` as grader/cost.py wrote them then (flat dicts)."""
    obj = json.loads((OLD / f"{student}.json").read_text())
    obj = SubmissionOutcome.from_dict(obj).to_dict()
    obj["format"] = 2
    for cell in obj["notebooks"][NOTEBOOK]["cells"]:
        del cell["ename"]
        if cell["kind"] == "test":
            cell.update(ok=False, error=error, failure="error", costs=costs)
    return obj


def test_a_format_2_file_reads_with_the_ename_its_text_named_and_typed_costs():
    """Results files of 2026-11-29 (format 2: no `ename`, costs as flat dicts) read through the fenced reader: each
    failed cell gets the exception its text named by that day's rule, each cost its CostRecord; written again they
    keep their format and read back the same."""
    from autograder.outcome import CostLimits, CostRecord, Measured
    costs = [{"what": "get_batch's reads", **MEASURED_2, "ok": False, "budget": LIMITS_2},
             {"what": "its memory", "unmeasured": "the notebook process's id is unknown", "ok": True}]
    outcome = SubmissionOutcome.from_dict(_format_2("bob", "  (line 2: next(it))\nStopIteration", costs))
    test = next(c for c in outcome.notebooks[NOTEBOOK].cells if c.kind is CellKind.TEST)
    assert outcome.format == 2 and test.ename == "StopIteration" and test.failure is Failure.ERROR
    assert test.costs == (
        CostRecord("get_batch's reads", False, Measured(**{**MEASURED_2, "elsewhere": tuple(MEASURED_2["elsewhere"])}),
                   budget=CostLimits(**LIMITS_2)),
        CostRecord("its memory", True, unmeasured="the notebook process's id is unknown"))
    assert SubmissionOutcome.from_json(outcome.to_json()) == outcome
    for text, ename in (("torch.OutOfMemoryError: CUDA out of memory", "OutOfMemoryError"), ("KeyboardInterrupt", "KeyboardInterrupt"),
                        ("AssertionError: f(3): expected 6\nHint: double it", "AssertionError"), ("a check broke", "")):
        again = SubmissionOutcome.from_dict(_format_2("bob", text, []))
        assert [c.ename for c in again.notebooks[NOTEBOOK].cells if c.kind is CellKind.TEST] == [ename], text
    today = SubmissionOutcome.from_dict(_format_2("bob", "StopIteration", costs)).to_dict()
    today["format"] = FORMAT  # format 3 states both: a cost in the old shape, or a cell without ename, is refused
    with pytest.raises(OutcomeError, match="ename"):
        SubmissionOutcome.from_dict({**today, "notebooks": {NOTEBOOK: {**today["notebooks"][NOTEBOOK], "cells": [
            {k: v for k, v in c.items() if k != "ename"} for c in today["notebooks"][NOTEBOOK]["cells"]]}}})
    for cell in today["notebooks"][NOTEBOOK]["cells"]:
        cell["costs"] = costs if cell["kind"] == "test" else None
    with pytest.raises(OutcomeError, match="costs"):
        SubmissionOutcome.from_dict(today)


def _changed(student: str, change) -> str:
    obj = json.loads((OLD / f"{student}.json").read_text())
    change(obj)
    return json.dumps(obj)


@pytest.mark.parametrize("change, where", [
    (lambda o: o.update(extra=1), "unexpected ['extra']"),
    (lambda o: o.pop("key"), "missing ['key']"),
    (lambda o: o.update(problems="one"), "result.problems"),
    (lambda o: o.update(format=4), "result.format: 4"),
    (lambda o: o["notebooks"][NOTEBOOK].update(ran="yes"), "result.notebooks['00_tiny'].ran"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(ok=1), "cells[0].ok"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(points=True), "cells[0].points"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(line="3"), "cells[0].line"),
    (lambda o: o["notebooks"][NOTEBOOK]["cells"][0].update(tampered=[1]), "cells[0].tampered"),
    (lambda o: o["notebooks"][NOTEBOOK]["grades"].update(x="full"), "grades"),
    (lambda o: o.update(format=2) or o["notebooks"][NOTEBOOK]["cells"][0].update(failure="melted"), "failure"),
    (lambda o: o.update(format=2), "failure"),  # a format-2 file carries its failures; none is guessed
    # issue #63: a missing list or object is refused too (it was a KeyError, past every reader's `except OutcomeError`)
    (lambda o: o.pop("notebooks"), "result.notebooks: expected an object"),
    (lambda o: o["notebooks"][NOTEBOOK].pop("cells"), "result.notebooks['00_tiny'].cells: expected a list"),
    (lambda o: o["notebooks"][NOTEBOOK].pop("comments"), "missing ['comments']"),  # the autograded record's three
    (lambda o: o["notebooks"][NOTEBOOK].update(notebook=[]), "result.notebooks['00_tiny'].notebook"),
    (lambda o: o["notebooks"][NOTEBOOK].update(autograded={}), "unexpected ['autograded']"),  # a field, not a key
])
def test_anything_else_in_a_results_file_is_refused_with_where_it_is(change, where):
    with pytest.raises(OutcomeError, match=None) as refused:
        SubmissionOutcome.from_json(_changed("bob", change))
    assert where in str(refused.value), str(refused.value)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", '"a"'])
def test_what_is_not_a_results_object_is_refused(text):
    with pytest.raises(OutcomeError):
        SubmissionOutcome.from_json(text)


# ---- a run of today's grader: the failures set where they happen ---------------------------------------------------
STUDENTS = {"ada": "return 2 * x", "bob": "return 3 * x", "cy": "import time; time.sleep(30); return 2 * x",
            "dee": "import os; os._exit(3)", "eve": "return 2 *", "gus": "import subprocess; return 2 * x"}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The tiny course graded by this grader: the students above, hal with no notebook, ivy with a broken one."""
    from tests.test_grading_faults import make_class
    root = tmp_path_factory.mktemp("graded")
    make_class(root, STUDENTS)
    for student, text in (("hal", None), ("ivy", "{not json")):
        folder = root / "submitted" / student / NOTEBOOK
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text("2026-01-05 12:00:00.000000 UTC")
        if text is not None:
            (folder / f"{NOTEBOOK}.ipynb").write_text(text)
    run = warm.run([sys.executable, "-m", "autograder.grade", "--course", str(root), "--out", str(root / "out"),
                          "--limit", "cell_seconds=4"], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return root / "out"


def test_a_run_writes_typed_results_with_the_failure_set_where_it_happened(graded):
    def read(student: str) -> SubmissionOutcome:
        return SubmissionOutcome.from_json((graded / "results" / student / f"{NOTEBOOK}.json").read_text())
    assert all(read(s).format == FORMAT for s in [*STUDENTS, "hal", "ivy"])
    assert failures(read("ada"))["test:test_double"] is None
    enames = {s: {f"{c.kind}:{c.grade_id}": c.ename for c in read(s).notebooks[NOTEBOOK].cells if not c.ok}
              for s in ("bob", "cy", "eve")}  # what the notebook process said each raised; nothing for a time-out
    assert enames["bob"]["test:test_double"] == "AssertionError" and enames["cy"]["test:test_double"] == ""
    assert enames["eve"]["answer:double"] == "SyntaxError", enames
    assert failures(read("bob"))["test:test_double"] is Failure.ERROR
    assert failures(read("cy"))["test:test_double"] is Failure.TIMEOUT
    assert failures(read("dee"))["test:test_double"] is Failure.CRASH
    assert failures(read("eve"))["answer:double"] is Failure.SYNTAX
    assert failures(read("hal"))["test:test_double"] is Failure.NOT_RUN
    assert read("hal").notebooks[NOTEBOOK].failure is Failure.MISSING_NOTEBOOK
    assert read("ivy").notebooks[NOTEBOOK].failure is Failure.NOT_A_NOTEBOOK
    assert list(read("gus").flagged) == [NOTEBOOK]


def test_grades_csv_has_a_status_and_the_summary_its_typed_events(graded):
    with open(graded / "grades.csv", newline="") as f:
        totals = {r["student"]: r for r in csv.DictReader(f) if r["task"] == "TOTAL"}
    assert {r["status"] for r in totals.values()} == {Status.GRADED.value}
    events = read_summary_json((graded / "summary.json").read_text(), "summary.json")
    assert [e.text for e in events] == (graded / "summary.txt").read_text().splitlines()
    assert [e.kind for e in events[:2]] == [EventKind.GRADED, EventKind.RECORDED]
    pending = [e for e in events if e.kind is EventKind.PENDING]
    assert len(pending) == 1 and pending[0].assignment == NOTEBOOK and pending[0].cells == ("explain", "plot", "style")
    newcomers = [e for e in events if e.kind is EventKind.NEW_STUDENTS]
    assert newcomers[0].students == tuple(sorted([*STUDENTS, "hal", "ivy"]))


@pytest.mark.parametrize("error, failure", [
    ("the notebook ran past its 10 s limit", Failure.TIMEOUT),          # the notebook's time-out, not the cell's
    ("the cell ran longer than 4 s and was stopped", Failure.TIMEOUT),
    ("\x1b[31mthe cell ran longer than 4 s and was stopped\x1b[0m", Failure.TIMEOUT),
    ("not run: an earlier cell stopped the notebook", Failure.NOT_RUN),
    ("the notebook wrote more than 1 MiB", Failure.CRASH),
    ("  (line 1: assert double(2) == 4)\nAssertionError", Failure.ERROR),
    ('File "<cell>", line 2\nIndentationError: unexpected indent', Failure.SYNTAX),
])
def test_a_format_1_cell_error_is_read_as_the_failure_it_meant(error, failure):
    """Each sentence the grader of 2026-11-28 wrote for a failed cell, in cy's results file (a time-out there)."""
    written = json.loads((OLD / "cy.json").read_text())
    test = next(c for c in written["notebooks"][NOTEBOOK]["cells"] if c["grade_id"] == "test_double")
    test["error"] = error
    assert failures(SubmissionOutcome.from_dict(written))["test:test_double"] is failure


def test_a_format_1_tampered_cell_is_read_as_tampered_whatever_its_error():
    written = json.loads((OLD / "cy.json").read_text())
    test = next(c for c in written["notebooks"][NOTEBOOK]["cells"] if c["grade_id"] == "test_double")
    test["tampered"] = ["the test cell was edited"]
    assert failures(SubmissionOutcome.from_dict(written))["test:test_double"] is Failure.TAMPERED


@pytest.mark.parametrize("failure, problem", [(Failure.TIMEOUT, "the notebook ran past its 10 s limit"),
                                              (Failure.CRASH, ""), (Failure.NOT_A_NOTEBOOK, "not JSON"), (None, "")])
def test_a_notebooks_own_failure_round_trips_and_is_never_guessed_from_its_problem(failure, problem):
    """Only a format-1 file's notebook failure is read from its problem's words; today's carries its own."""
    import dataclasses
    outcome = old("cy")
    notebook = dataclasses.replace(outcome.notebooks[NOTEBOOK], failure=failure, problem=problem)
    outcome = dataclasses.replace(outcome, format=FORMAT, notebooks={NOTEBOOK: notebook})
    assert SubmissionOutcome.from_json(outcome.to_json()).notebooks[NOTEBOOK].failure is failure
