"""Runs on both sides of the sandbox: the messages that cross it, typed, one JSON line each.

    grader  --Init, Spawn-->              zygote      (the clean parent of every notebook process)
    builder --Started, Exited-->          grader      (the walls' builder: the notebook's pid, then how it ended)
    grader  --Files, CellRequest-->       notebook    (the student's process)
    notebook --Ready | StartupFailed, CellResult-->  grader
    checker --Verdict-->                  grader      (the trusted side of the hidden tests)
    checker --CostBudget-->               grader      (a task's cost budget, reference/, once per run)

Whatever comes from a notebook process is hostile until parsed: `parse` accepts exactly the fields of the message,
each of its exact type, and raises ProtocolError otherwise (the grader then trusts nothing of that reply).
"""
from __future__ import annotations

import enum
import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import ClassVar

from autograder.strict import fields_of

# The hidden tests of a test cell, markers included: the grader shows the cell without them, the notebook process
# keeps no readable copy of them (autograder/sandboxed/executor.py), and no student output may hold them.
HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[\s\S]*?^[ \t]*### END HIDDEN TESTS[ \t]*$\n?", re.MULTILINE)
# What a notebook process keeps of the grader's environment (the zygote drops the rest before a notebook starts, and
# the grader hands the same variables to the zygote and to its workers): the locale, and the variables that pick
# torch's and oneDNN's CPU kernels (a grading run can reproduce another CPU: tests/test_variants.py grades under
# ATEN_CPU_CAPABILITY=default).
KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


class ProtocolError(ValueError):
    """A message that is not what its type says: wrong fields, wrong types, not JSON."""


class CellKind(enum.StrEnum):
    """What a cell of the plan (grader/plan.py) is: the instructor's code, the student's answer in its place, a cell
    the student added, or a graded test. It crosses the sandbox in a CellRequest and is kept in the results file
    (autograder/outcome.py); the value is the string both hold."""
    SETUP = "setup"    # the instructor's code with no points (it runs as the source has it)
    ANSWER = "answer"  # the student's code in a solution cell of the source
    ADDED = "added"    # a code cell the student added
    TEST = "test"      # an autograded test cell (its points and code from the source)


@dataclass(frozen=True)
class Message:
    """A message: `to_line()` writes it, `parse()` reads one back strictly."""
    tag: ClassVar[str] = ""

    def to_line(self) -> bytes:
        return (json.dumps({"type": self.tag, **asdict(self)}) + "\n").encode()

    @classmethod
    def parse(cls, data: bytes | str | dict) -> "Message":
        """The message in `data` (one of MESSAGES, or of `cls` when called on a subclass); ProtocolError if not."""
        try:
            obj = data if isinstance(data, dict) else json.loads(data)
        except (ValueError, RecursionError) as error:
            raise ProtocolError(f"not JSON: {error.__class__.__name__}") from None
        if type(obj) is not dict or type(obj.get("type")) is not str or obj["type"] not in MESSAGES:
            raise ProtocolError("not a message")
        kind = MESSAGES[obj.pop("type")]
        if cls is not Message and kind is not cls:
            raise ProtocolError(f"expected {cls.__name__}, got {kind.__name__}")
        wanted = {f.name for f in fields(kind)}
        if set(obj) != wanted:  # every field, defaults included: both sides write them all
            raise ProtocolError(f"{kind.__name__}: fields {sorted(map(str, obj))}, expected {sorted(wanted)}")
        return kind(**fields_of(kind, obj, kind.__name__, ProtocolError))


@dataclass(frozen=True)
class Init(Message):
    """grader -> zygote, once: paths no notebook may read (the course, the grader's folders), and the modules the
    course's notebooks import (source.SourceNotebook.imports), which the zygote imports before any fork."""
    tag: ClassVar[str] = "init"
    walled: list[str]
    preload: list[str]


@dataclass(frozen=True)
class Spawn(Message):
    """grader -> zygote, with three descriptors (requests, replies, status): start one notebook process.
    `slot` is the worker's number (its own unprivileged uid when the grader runs as root); `files`: a folder on a
    disk the notebook may read ("": none), where the grader lends it a cost budget's file during a measured part
    (autograder/grader/budget_files.py)."""
    tag: ClassVar[str] = "spawn"
    slot: int
    limits: dict
    files: str = ""


@dataclass(frozen=True)
class StartChecker(Message):
    """grader -> zygote, with two descriptors (the checker's end of its control socket, the write end of the pipe its
    first answer comes back on): fork the run's trusted checker (autograder/trusted/checker.py) from the zygote's
    preload. The zygote answers on that control socket with Started and a pidfd. The run's hidden tests then go to the
    checker itself on that socket, never through the zygote: a notebook forked later holds nothing of them, not even
    their names (tests/test_grader_boundary.py's snooper looks for another exercise's)."""
    tag: ClassVar[str] = "start-checker"


@dataclass(frozen=True)
class Started(Message):
    """builder -> grader, with a pidfd of the notebook process (zygote -> grader: of the checker, after StartChecker)."""
    tag: ClassVar[str] = "started"
    pid: int


@dataclass(frozen=True)
class Exited(Message):
    """builder -> grader: the notebook process ended with this exit code (128 + n: killed by signal n)."""
    tag: ClassVar[str] = "exited"
    code: int


@dataclass(frozen=True)
class StartupFailed(Message):
    """builder or notebook -> grader: the sandbox could not be built (the grader's fault, never the student's)."""
    tag: ClassVar[str] = "startup-failed"
    error: str


@dataclass(frozen=True)
class Ready(Message):
    """notebook -> grader: walls built, no student code run yet; `walls` lists them."""
    tag: ClassVar[str] = "ready"
    walls: list[str]


@dataclass(frozen=True)
class Files(Message):
    """grader -> notebook: files to put in its working folder (relative path -> base64), before any cell."""
    tag: ClassVar[str] = "files"
    id: str
    files: dict[str, str]


@dataclass(frozen=True)
class CellRequest(Message):
    """grader -> notebook: run one cell. A test cell carries the encoded cases of its hidden tests, and a rule-bound
    task's test cell what its rule's watch looks for."""
    tag: ClassVar[str] = "cell"
    id: str
    kind: CellKind
    code: str
    cases: dict[str, str] = field(default_factory=dict)
    watch: list[str] = field(default_factory=list)   # a rule-bound task's watch (autograder/sandboxed/watch.py)


@dataclass(frozen=True)
class CellResult(Message):
    """notebook -> grader: what one cell did. `handed`: the results its hidden tests handed in (encoded); `syntax`:
    what it raised was a SyntaxError (IndentationError, TabError), so the cell is not valid Python; `ran`: what a
    rule-bound task was seen to run (written by the student's process: a flag for a person at most). `ename`,
    `evalue`: what the cell raised, as Jupyter's error message and nbclient's CellExecutionError carry it: the
    exception's class name (`type(e).__name__`, "" when it raised nothing) and its str (cut to the cell's output
    limit); `error` is the same exception as a student reads it (where in their code, then Python's last line). Written
    by the student's process, both only name what a message says (grader/feedback.py), never what a cell scores."""
    tag: ClassVar[str] = "result"
    id: str
    ok: bool
    output: str
    error: str
    restored: list[str]
    tampered: list[str]
    line: int | None
    handed: dict[str, str]
    syntax: bool = False
    ran: list[str] = field(default_factory=list)     # what the watch saw the task run (autograder/sandboxed/watch.py)
    ename: str = ""
    evalue: str = ""


@dataclass(frozen=True)
class Verdict(Message):
    """checker -> grader: one hidden test's verdict on what was handed in. `fault`: the check itself broke."""
    tag: ClassVar[str] = "verdict"
    ok: bool
    error: str
    fault: bool


@dataclass(frozen=True)
class CostBudget(Message):
    """checker -> grader, once per run: what one task's code may cost (issues #52, #60), declared by the instructor
    beside its hidden test (reference/<module>.py, COST_BUDGETS) and measured by the grader from outside the notebook
    process (autograder/grader/cost.py) on the hidden test's own calls: the part of its test cell between
    `### BEGIN MEASURED` and `### END MEASURED`, whose results the hidden test hands in and the checker checks. Each
    limit left None is not budgeted; a budget is shown to the student, it is no expected value.

    peak_bytes: new memory during the measured part (the larger of the rise of the resident high-water mark and the
    pages newly faulted in), bytes. file, file_tokens, file_bytes: the grader lends the notebook a file named `file`
    of `file_tokens` uint16 tokens (utils.cost.token_bytes) on a disk, its pages dropped from the page cache, for the
    measured part only; the bytes the process then reads from storage may be at most `file_bytes`. cpu_seconds: CPU
    time of the measured part. predicted_case, tolerance: new memory must match, within `tolerance` of it either
    way, the int the student's function returned for hidden case number `predicted_case` (one of the results the
    hidden test hands in)."""
    tag: ClassVar[str] = "cost-budget"
    key: str            # the hidden test ("<module>.<test>") whose test cell holds the measured part
    what: str           # what is measured, in words a student recognises
    hint: str
    peak_bytes: int | None = None
    file: str = ""
    file_tokens: int = 0
    file_bytes: int | None = None
    cpu_seconds: float | None = None
    predicted_case: int | None = None
    tolerance: float = 0.0


MESSAGES: dict[str, type[Message]] = {m.tag: m for m in (Init, Spawn, StartChecker, Started, Exited, StartupFailed, Ready, Files,
                                                           CellRequest, CellResult, Verdict, CostBudget)}
