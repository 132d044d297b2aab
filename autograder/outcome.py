"""Runs in the grader and in the instructor's tools: one graded submission, typed, from the worker to the report.

    worker --SubmissionOutcome--> results/<student>/<assignment>.json --> record, write, report
    run    --Event-->             summary.txt and summary.json --> merge

A worker grades a submission into a `SubmissionOutcome` (its notebooks, each a `NotebookOutcome` of `CellOutcome`s);
`to_json` writes it to the results file and `from_json` reads it back strictly: exactly the declared fields, each of
its declared type, and OutcomeError otherwise (the file is then graded again, never half trusted).

Why something failed is a `Failure`, set where the failure happens (notebooks.py, workers.py, rules.py, cost.py);
whether a submission was graded is a `Status` (gradebook.Row, grades.csv's status column); what a line of a run's
summary is about is an `EventKind`. None of them is ever read back from the English shown to people.

A budgeted task's costs are `CostRecord`s (what grader/cost.py measured, `Measured`, against the limits of its budget,
`CostLimits`). Every field is read by the one strict reader of the project's borders (autograder/strict.py).

Results files of earlier formats still read, through the fenced readers at the end of this module, which turn their
cells into today's shape before the strict read: format 1 (2026-11-28, no "format" field): `from_json` gives their
cells the `Failure` their error text meant when they were written (`_legacy_cell_failure`, the only reader of that
text, for those files only); formats 1 and 2 (to 2026-11-29): each failed cell the `ename` its error text named, and
each cost, a flat dict then, its `CostRecord` (`_older_cell`).
"""
from __future__ import annotations

import dataclasses
import enum
import json
import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from autograder.protocol import CellKind, CostBudget  # the sandbox's border and the results file hold the same kinds
from autograder.strict import fields_of

FORMAT = 3  # the "format" of a results file written with these types (2: no `ename`, flat costs; 1: no "format")
OLDER = (1, 2)  # the earlier formats this grader still reads (the fenced readers at the end of the module)


class OutcomeError(ValueError):
    """A results file that is not a graded submission: wrong fields, wrong types, not JSON. The message says where."""


class Failure(enum.Enum):
    """Why a cell, a notebook or a whole submission lost its points or was not graded. The value is what the results
    file holds."""
    TIMEOUT = "timeout"                      # a cell, or the notebook, ran past its time limit
    CRASH = "crash"                          # the notebook process died, flooded or broke the grader's channel
    NOT_RUN = "not run"                      # never run: restarts or time used up, or no notebook to run
    SYNTAX = "syntax"                        # the cell is not valid Python
    ERROR = "error"                          # an exception, or a failed visible or hidden check
    TAMPERED = "tampered"                    # the tests' tools were changed while they ran
    RULE = "rule"                            # the task broke its rule (utils/rules.py), judged on its code
    MISSING_NOTEBOOK = "missing notebook"    # a notebook of the assignment is not in the submission
    NOT_A_NOTEBOOK = "not a notebook"        # the file is there but is not a notebook the grader can read
    GRADER = "grader"                        # NOT GRADED: the grader's own fault, never the student's


class Status(enum.Enum):
    """What happened to one student's assignment in a run: a gradebook row's and grades.csv's `status`."""
    GRADED = "graded"                        # graded (some parts may have scored 0: see the notes)
    NOT_GRADED = "not graded"                # the grader failed on it: the gradebook keeps what it had
    NO_SUBMISSION = "no submission"          # nothing handed in: 0 points
    UNKNOWN_ASSIGNMENT = "unknown assignment"  # a folder named after no assignment of the course


# ---- writing -------------------------------------------------------------------------------------------------------
def _plain(value: object) -> object:
    """`value` as JSON: enums by their value, tuples as lists, dataclasses as objects of their fields."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ---- what a budgeted task cost -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Measured:
    """What one measured part cost (grader/cost.py): `peak_bytes` (new memory, the larger of `high_water_bytes`, the
    rise of the resident high-water mark above the part's start, and `new_page_bytes`, the pages faulted in),
    `file_bytes` (bytes read from storage), all in bytes; page faults, CPU seconds; `elsewhere`: why the part's cost
    cannot be measured (empty when it can); `predicted_bytes`: the student's own prediction of peak_bytes, where the
    budget asks one."""
    peak_bytes: int
    high_water_bytes: int
    new_page_bytes: int
    file_bytes: int
    faults: int
    cpu_seconds: float
    elsewhere: tuple[str, ...] = ()
    predicted_bytes: int | None = None


@dataclass(frozen=True)
class CostLimits:
    """The limits of the cost budget a part was held to (protocol.CostBudget's, which says what each means): bytes,
    CPU seconds, and the tolerance of a prediction (a fraction)."""
    peak_bytes: int | None
    file: str
    file_bytes: int | None
    cpu_seconds: float | None
    tolerance: float

    @classmethod
    def of(cls, budget: CostBudget) -> CostLimits:
        return cls(budget.peak_bytes, budget.file, budget.file_bytes, budget.cpu_seconds, budget.tolerance)


@dataclass(frozen=True)
class CostRecord:
    """One cost budget of a budgeted test cell, as the grader measured it (grader/cost.py): `what` is measured (the
    budget's words); `ok`: within the budget, or not measured (then a person checks it); `measured`: what the measured
    part cost, with `budget` the limits it was held to; or `unmeasured`: why the grader could not measure it here
    (`measured` and `budget` None)."""
    what: str
    ok: bool
    measured: Measured | None = None
    unmeasured: str = ""
    budget: CostLimits | None = None


# ---- the outcome ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellOutcome:
    """One cell of the plan (plan.py) as it ran. `line`: the line of the visible
    code a failure is shown at (None: none, or a hidden test's); `seconds`: wall time (None: never ran);
    `error_full`: the whole error where students see only a hint (instructors only); `costs`: a budgeted task's
    measured costs (grader/cost.py); `failure`: why it failed (None when it passed); `ename`: the class name of what
    the cell raised, AssertionError for a failed check of the grader's, "" when nothing was (plan.CellRun.ename)."""
    kind: CellKind
    grade_id: str
    points: float
    visible_code: str
    ok: bool
    output: str
    error: str
    restored: tuple[str, ...]
    tampered: tuple[str, ...]
    line: int | None
    seconds: float | None = None
    error_full: str | None = None
    costs: tuple[CostRecord, ...] | None = None
    failure: Failure | None = None
    ename: str = ""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"seconds", "error_full", "costs"})  # absent: None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CellKind(self.kind))  # its value given as text is the same kind; others raise

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if not (f.name in self.OMITTED_WHEN_NONE and getattr(self, f.name) is None)}

    @classmethod
    def from_dict(cls, obj: object, where: str, format: int = FORMAT) -> CellOutcome:
        """The cell in `obj`, read strictly (OutcomeError naming `where`); one of an `OLDER` format, in today's shape
        first."""
        if format in OLDER and type(obj) is dict:
            obj = _older_cell(obj, format)
        return cls(**fields_of(cls, obj, where, OutcomeError, cls.OMITTED_WHEN_NONE))


@dataclass(frozen=True)
class Autograded:
    """What nbgrader keeps of one graded notebook (grader/autograded.py makes it; the gradebook and autograded/ take
    it): the autograded notebook (nbformat 4, as JSON), each graded cell's automatic score in points by grade_id
    (None: it waits for a person), and each answer or task cell's comment by grade_id (None: no comment)."""
    notebook: dict[str, Any]
    grades: dict[str, float | None]
    comments: dict[str, str | None]

    @classmethod
    def from_dict(cls, obj: object, where: str) -> Autograded:
        """The record in `obj` (the three keys of a results file's notebook), read strictly; OutcomeError naming
        `where` and the key otherwise."""
        values = fields_of(cls, obj, where, OutcomeError)
        values["grades"] = {k: None if v is None else float(v) for k, v in values["grades"].items()}
        return cls(**values)


_AUTOGRADED = frozenset(f.name for f in fields(Autograded))  # a results file holds them beside the notebook's own


@dataclass(frozen=True)
class NotebookOutcome:
    """One notebook of a submission: its cells, nbgrader's flags for a person, notes on the whole notebook, whether
    it ran, why it could not be used (`problem`, with its `failure`), and what nbgrader keeps of it (`autograded`)."""
    cells: tuple[CellOutcome, ...]
    flags: tuple[str, ...]
    notes: tuple[str, ...]
    ran: bool
    problem: str
    autograded: Autograded
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"cells": [c.to_dict() for c in self.cells], "flags": list(self.flags), "notes": list(self.notes),
                "ran": self.ran, "problem": self.problem, "notebook": self.autograded.notebook,
                "grades": self.autograded.grades, "comments": self.autograded.comments, "failure": _plain(self.failure)}

    @classmethod
    def from_dict(cls, obj: object, where: str, format: int = FORMAT) -> NotebookOutcome:
        if type(obj) is not dict:
            raise OutcomeError(f"{where}: expected an object, got {type(obj).__name__}")
        if format == 1:
            obj = {**obj, "failure": _legacy_problem_failure(obj.get("problem"))}
        cells = obj.get("cells")  # absent: refused here, never a KeyError past the readers' `except OutcomeError`
        if type(cells) is not list:
            raise OutcomeError(f"{where}.cells: expected a list")
        own = {k: v for k, v in obj.items() if k not in _AUTOGRADED}
        if "autograded" in own:  # the file holds the record's three fields, never a key of that name
            raise OutcomeError(f"{where}: unexpected ['autograded']")
        autograded = Autograded.from_dict({k: v for k, v in obj.items() if k in _AUTOGRADED}, where)
        # The notebook's own fields, read with the record's place held by an empty one (read above, by its keys' names)
        raw = fields_of(cls, {**own, "cells": [], "autograded": {name: {} for name in _AUTOGRADED}}, where, OutcomeError)
        raw["cells"] = tuple(CellOutcome.from_dict(c, f"{where}.cells[{i}]", format) for i, c in enumerate(cells))
        raw["autograded"] = autograded
        return cls(**raw)


@dataclass(frozen=True)
class SubmissionOutcome:
    """One student's assignment as graded: `key` is what the grade depended on (pipeline.job_key); `problems`: parts
    that could not be graded (scored 0); `grader_errors`: the grader's own faults (the submission is NOT GRADED)."""
    key: str
    student: str
    assignment: str
    notebooks: dict[str, NotebookOutcome]
    problems: tuple[str, ...] = ()
    grader_errors: tuple[str, ...] = ()
    format: int = FORMAT

    @property
    def status(self) -> Status:
        return Status.NOT_GRADED if self.grader_errors else Status.GRADED

    @property
    def flagged(self) -> dict[str, tuple[str, ...]]:
        """{notebook: its flags} of the notebooks flagged for a person."""
        return {name: nb.flags for name, nb in self.notebooks.items() if nb.flags}

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "key": self.key, "student": self.student, "assignment": self.assignment,
                "notebooks": {name: nb.to_dict() for name, nb in self.notebooks.items()},
                "problems": list(self.problems), "grader_errors": list(self.grader_errors)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, obj: object) -> SubmissionOutcome:
        if type(obj) is dict and "format" not in obj:
            obj = {**obj, "format": 1}
        raw = fields_of(cls, {**obj, "notebooks": {}} if type(obj) is dict else obj, "result", OutcomeError)
        if raw["format"] not in (*OLDER, FORMAT):
            raise OutcomeError(f"result.format: {raw['format']} is not one this grader reads "
                               f"({', '.join(map(str, (*OLDER, FORMAT)))})")
        notebooks = obj.get("notebooks") if type(obj) is dict else None  # absent: refused, never a KeyError
        if type(notebooks) is not dict:
            raise OutcomeError("result.notebooks: expected an object")
        raw["notebooks"] = {name: NotebookOutcome.from_dict(nb, f"result.notebooks[{name!r}]", raw["format"])
                            for name, nb in notebooks.items()}
        return cls(**raw)

    @classmethod
    def from_json(cls, text: str | bytes) -> SubmissionOutcome:
        """The outcome in `text` (a results file, either format); OutcomeError if it is not one."""
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise OutcomeError(f"not JSON: {error.__class__.__name__}") from None
        return cls.from_dict(obj)


def not_graded(key: str, student: str, assignment: str, why: str) -> SubmissionOutcome:
    """A submission the grader could not grade (its own fault, never the student's): NOT GRADED with the reason."""
    return SubmissionOutcome(key, student, assignment, {}, (), (why,))


# ---- results files of earlier formats (1 and 2): read here only -----------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # autograded.ANSI
_SYNTAX_NAMES = re.compile(r"^(?:[\w.]+\.)?(SyntaxError|IndentationError|TabError)\b")
# The line of a traceback that names its exception, by the rule of format 2's grader (autograded.EXCEPTION_LINE then).
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?([A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Warning|Iteration))(?::|$)")
_NOTHING_RAISED = (Failure.TIMEOUT.value, Failure.CRASH.value, Failure.NOT_RUN.value, Failure.TAMPERED.value)


def _older_cell(cell: dict[str, Any], format: int) -> dict[str, Any]:
    """A cell of a format-1 or -2 results file in today's shape: format 1's `handed` dropped and its `failure` given;
    the `ename` its error text named (the last line naming an exception, by the rule of the grader of that day: '' when
    nothing was raised or none is named); each cost, a flat dict then, as a CostRecord's fields. Anything else is left
    for the strict read to refuse."""
    cell = {k: v for k, v in cell.items() if not (format == 1 and k == "handed")}  # format 1 kept it on cells never run
    if format == 1:
        cell.setdefault("failure", None if cell.get("ok") else _legacy_cell_failure(cell))
    if "ename" not in cell:
        lines = _ANSI.sub("", str(cell.get("error", ""))).strip().splitlines()
        named = [m.group(1) for m in map(_EXCEPTION_LINE.match, lines) if m]
        cell["ename"] = "" if cell.get("ok") or cell.get("failure") in _NOTHING_RAISED or not named else named[-1]
    if type(cell.get("costs")) is list:
        cell["costs"] = [_older_cost(cost) for cost in cell["costs"]]
    return cell


def _older_cost(cost: object) -> object:
    """A cost as grader/cost.py wrote it before CostRecord: {what, unmeasured, ok}, or {what, ok, budget: {its limits},
    and Measured's fields}; as CostRecord's fields (a cost already in that shape, or anything else, as it is)."""
    if type(cost) is not dict or "measured" in cost:
        return cost
    if "unmeasured" in cost:
        return {"what": cost.get("what"), "ok": cost.get("ok"), "measured": None, "unmeasured": cost["unmeasured"],
                "budget": None}
    measured = {f.name for f in fields(Measured)}
    return {"what": cost.get("what"), "ok": cost.get("ok"), "unmeasured": "", "budget": cost.get("budget"),
            "measured": {k: v for k, v in cost.items() if k in measured}}


def _legacy_cell_failure(cell: dict[str, Any]) -> str:
    """The Failure a format-1 cell's error text meant when it was written (autograded.failure's rule of that day)."""
    if cell.get("tampered"):
        return Failure.TAMPERED.value
    error = _ANSI.sub("", str(cell.get("error", ""))).strip()
    if "ran longer than" in error or "ran past its" in error:
        return Failure.TIMEOUT.value
    if error.startswith("not run"):
        return Failure.NOT_RUN.value
    if error.startswith(("the notebook process", "the notebook wrote")):
        return Failure.CRASH.value
    last = error.splitlines()[-1] if error else ""
    return Failure.SYNTAX.value if _SYNTAX_NAMES.match(last) else Failure.ERROR.value


def _legacy_problem_failure(problem: object) -> str | None:
    """The Failure of a format-1 notebook's problem (workers.py wrote one of two sentences)."""
    if not problem:
        return None
    return Failure.MISSING_NOTEBOOK.value if str(problem).startswith("missing notebook") else Failure.NOT_A_NOTEBOOK.value


# ---- the run's summary ---------------------------------------------------------------------------------------------
class EventKind(enum.Enum):
    """What a line of a run's summary is about; it decides how shards' summaries merge (merge.py). The value is what
    summary.json holds."""
    GRADED = "graded"                    # how many submissions the run graded, and in how long (first line)
    RECORDED = "recorded"                # how many it recorded in the gradebook (second line)
    MACHINE = "machine"                  # the machine, its workers and memory; the sandbox it builds
    SELF_CHECK = "self-check"            # the assignments whose solutions and empty notebooks were checked
    CLEANED = "cleaned"                  # what a stopped run had left, removed
    SKIPPED = "skipped"                  # folders that are not submissions
    SYNCED = "synced"                    # assignments recorded in the gradebook from source/
    LEDGER = "ledger"                    # what the ledger check found and the instructor accepted (grader/ledger.py)
    UNREADABLE_RESULT = "unreadable result"  # an earlier result that could not be read, graded again
    SUBMISSION = "submission"            # about one submission (NOT GRADED, flagged, late, no time...)
    PENDING = "pending"                  # an assignment's answers that wait for a person
    NO_SUBMISSION = "no submission"      # an assignment's students who handed in nothing
    NEW_STUDENTS = "new students"        # students not on the roster, added to the gradebook

    @property
    def about_the_run(self) -> bool:
        """A line about one run (a shard's, marked with it when merged), not about students."""
        return self in _RUN_KINDS


_RUN_KINDS = frozenset({EventKind.GRADED, EventKind.RECORDED, EventKind.MACHINE, EventKind.SELF_CHECK,
                        EventKind.CLEANED, EventKind.SKIPPED, EventKind.SYNCED, EventKind.UNREADABLE_RESULT,
                        EventKind.LEDGER})
_FIRST = {EventKind.GRADED: 0, EventKind.RECORDED: 1}  # the summary's first lines, whenever they are known


@dataclass(frozen=True)
class Event:
    """One line of a run's summary: its kind, its text for people, and what merging needs of it: the assignment,
    students, and for PENDING the answers, submissions and cells that wait."""
    kind: EventKind
    text: str
    assignment: str = ""
    students: tuple[str, ...] = ()
    answers: int = 0
    submissions: int = 0
    cells: tuple[str, ...] = ()

    @classmethod
    def pending(cls, assignment: str, answers: int, submissions: int, cells: list[str] | tuple[str, ...]) -> Event:
        cells = tuple(sorted(set(cells)))
        return cls(EventKind.PENDING, f"needs manual grading (formgrader): {assignment}: {answers} answer(s) in "
                                      f"{submissions} submission(s), cells {', '.join(cells)}",
                   assignment, (), answers, submissions, cells)

    @classmethod
    def no_submission(cls, assignment: str, students: list[str] | tuple[str, ...]) -> Event:
        return cls(EventKind.NO_SUBMISSION, f"no submission: {assignment}: {', '.join(students)}", assignment,
                   tuple(students))

    @classmethod
    def new_students(cls, students: list[str] | tuple[str, ...]) -> Event:
        students = tuple(sorted(students))
        return cls(EventKind.NEW_STUDENTS, f"not on the roster, added to the gradebook: {', '.join(students)}",
                   students=students)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, obj: object, where: str) -> Event:
        return cls(**fields_of(cls, obj, where, OutcomeError))


def in_order(events: list[Event]) -> list[Event]:
    """The summary's events as people read them: what the run graded and recorded first, the rest as it happened."""
    return sorted(events, key=lambda e: _FIRST.get(e.kind, len(_FIRST)))


def summary_json(events: list[Event]) -> str:
    """summary.json: the events of summary.txt, in its order, typed."""
    return json.dumps({"format": FORMAT, "events": [e.to_dict() for e in events]}, indent=1) + "\n"


def read_summary_json(text: str | bytes, where: str) -> list[Event]:
    """The events of a summary.json; OutcomeError naming `where` if it is not one."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise OutcomeError(f"{where}: not JSON ({error.__class__.__name__})") from None
    if type(obj) is not dict or obj.get("format") != FORMAT or type(obj.get("events")) is not list:
        raise OutcomeError(f"{where}: not a summary of format {FORMAT}")
    return [Event.from_dict(e, f"{where}: events[{i}]") for i, e in enumerate(obj["events"])]
