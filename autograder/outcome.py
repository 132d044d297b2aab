"""Runs in the grader and in the instructor's tools: one graded submission, typed, from the worker to the report.

    worker --SubmissionOutcome--> results/<student>/<assignment>.json --> record, write, report
    run    --Event-->             summary.txt and summary.json --> merge

A worker grades a submission into a `SubmissionOutcome` (its notebooks, each a `NotebookOutcome` of `CellOutcome`s);
`to_json` writes it to the results file and `from_json` reads it back strictly: exactly the declared fields, each of
its declared type, and OutcomeError otherwise (the file is then graded again, never half trusted).

Why something failed is a `Failure`, set where the failure happens (notebooks.py, workers.py, rules.py, cost.py);
whether a submission was graded is a `Status` (gradebook.Row, grades.csv's status column); what a line of a run's
summary is about is an `EventKind`. None of them is ever read back from the English shown to people.

Results files written before these types (2026-11-28, no "format" field) still read: `from_json` gives their cells the
`Failure` their error text meant when they were written (`_legacy_cell_failure`, the only reader of that text, for
those files only).
"""
from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, fields
from types import NoneType, UnionType
from typing import Any, ClassVar, Union, get_args, get_origin, get_type_hints

from autograder.protocol import CellKind  # the sandbox's border and the results file hold the same kinds

FORMAT = 2  # the "format" of a results file written with these types; files without one are format 1


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


# ---- strict reading ------------------------------------------------------------------------------------------------
def _matches(value: object, kind: Any) -> bool:
    """Whether `value` (parsed JSON) is of the annotation `kind`; bool is never taken for a number."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return True
    if kind is NoneType:
        return value is None
    if origin in (Union, UnionType):
        return any(_matches(value, a) for a in args)
    if kind is float:
        return type(value) in (int, float)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return any(value == member.value for member in kind)
    if origin is tuple:
        return type(value) is list and all(_matches(v, args[0]) for v in value)
    if origin is dict:
        return type(value) is dict and all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items())
    if origin is list:
        return type(value) is list and all(_matches(v, args[0]) for v in value)
    return type(value) is kind


def _field_values(cls: type, obj: object, where: str, optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields of dataclass `cls` from the JSON object `obj`, each checked against its annotation: every field
    without a default is required, `optional` ones may be missing, no other key is allowed."""
    if type(obj) is not dict:
        raise OutcomeError(f"{where}: expected an object, got {type(obj).__name__}")
    hints = get_type_hints(cls)
    declared = {f.name for f in fields(cls)}
    missing = declared - set(obj) - optional
    extra = set(obj) - declared
    if missing or extra:
        raise OutcomeError(f"{where}: missing {sorted(missing)}, unexpected {sorted(extra)}")
    values = {}
    for name, value in obj.items():
        if not _matches(value, hints[name]):
            raise OutcomeError(f"{where}.{name}: expected {hints[name]}, got {type(value).__name__}")
        values[name] = value
    return values


def _plain(value: object) -> object:
    """`value` as JSON: enums by their value, tuples as lists."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# ---- the outcome ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellOutcome:
    """One cell of the plan (plan.py) as it ran. `line`: the line of the visible
    code a failure is shown at (None: none, or a hidden test's); `seconds`: wall time (None: never ran);
    `error_full`: the whole error where students see only a hint (instructors only); `costs`: a budgeted task's
    measured costs (grader/cost.py); `failure`: why it failed (None when it passed)."""
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
    costs: tuple[dict[str, Any], ...] | None = None
    failure: Failure | None = None

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"seconds", "error_full", "costs"})  # absent: None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CellKind(self.kind))  # its value given as text is the same kind; others raise

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if not (f.name in self.OMITTED_WHEN_NONE and getattr(self, f.name) is None)}

    @classmethod
    def from_dict(cls, obj: object, where: str, legacy: bool) -> CellOutcome:
        if legacy and type(obj) is dict:
            obj = {k: v for k, v in obj.items() if k != "handed"}  # format 1 kept it on cells that never ran
            obj.setdefault("failure", None if obj.get("ok") else _legacy_cell_failure(obj))
        values = _field_values(cls, obj, where, cls.OMITTED_WHEN_NONE)
        values["restored"], values["tampered"] = tuple(values["restored"]), tuple(values["tampered"])
        if values.get("costs") is not None:
            values["costs"] = tuple(values["costs"])
        if values["failure"] is not None:
            values["failure"] = Failure(values["failure"])
        return cls(**values)


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
        values = _field_values(cls, obj, where)
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
    def from_dict(cls, obj: object, where: str, legacy: bool) -> NotebookOutcome:
        if type(obj) is not dict:
            raise OutcomeError(f"{where}: expected an object, got {type(obj).__name__}")
        if legacy:
            obj = {**obj, "failure": _legacy_problem_failure(obj.get("problem"))}
        cells = obj.get("cells")  # absent: refused here, never a KeyError past the readers' `except OutcomeError`
        if type(cells) is not list:
            raise OutcomeError(f"{where}.cells: expected a list")
        autograded = Autograded.from_dict({k: v for k, v in obj.items() if k in _AUTOGRADED}, where)
        own = {k: v for k, v in obj.items() if k not in _AUTOGRADED}
        if "autograded" in own:  # the file holds the record's three fields, never a key of that name
            raise OutcomeError(f"{where}: unexpected ['autograded']")
        raw = _field_values(cls, {**own, "cells": [], "autograded": autograded}, where)
        raw["cells"] = tuple(CellOutcome.from_dict(c, f"{where}.cells[{i}]", legacy) for i, c in enumerate(cells))
        raw["flags"], raw["notes"] = tuple(raw["flags"]), tuple(raw["notes"])
        raw["failure"] = None if raw["failure"] is None else Failure(raw["failure"])
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
        legacy = type(obj) is dict and "format" not in obj
        if legacy:
            obj = {**obj, "format": 1}  # type: ignore[dict-item]
        raw = _field_values(cls, {**obj, "notebooks": {}} if type(obj) is dict else obj, "result")
        if raw["format"] not in (1, FORMAT):
            raise OutcomeError(f"result.format: {raw['format']} is not one this grader reads (1 or {FORMAT})")
        notebooks = obj.get("notebooks") if type(obj) is dict else None  # absent: refused, never a KeyError
        if type(notebooks) is not dict:
            raise OutcomeError("result.notebooks: expected an object")
        raw["notebooks"] = {name: NotebookOutcome.from_dict(nb, f"result.notebooks[{name!r}]", legacy)
                            for name, nb in notebooks.items()}
        raw["problems"], raw["grader_errors"] = tuple(raw["problems"]), tuple(raw["grader_errors"])
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


# ---- results files written before these types (format 1) ---------------------------------------------------------
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # autograded.ANSI
_SYNTAX_NAMES = re.compile(r"^(?:[\w.]+\.)?(SyntaxError|IndentationError|TabError)\b")


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
        values = _field_values(cls, obj, where)
        values["kind"] = EventKind(values["kind"])
        values["students"], values["cells"] = tuple(values["students"]), tuple(values["cells"])
        return cls(**values)


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
