"""Runs in the grader: what gets run for one submitted notebook, the instructor's cells with only the student's
answers swapped in.

The order and code of every locked cell (set-up, tests with their hidden part) and every cell's points come
from `source/`, never from the submission, so editing, deleting or duplicating test cells, or changing their
`points` or `grade_id` metadata, changes nothing. The student's solution cells (matched by `grade_id`) and any
cells they added are kept in their place. An answer cell the student turned into markdown or raw text is graded as
code, as nbgrader does (its OverwriteCells puts the cell type back), with a note saying so.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder.grader.find import MAX_NOTEBOOK_BYTES, Missing, Unreadable, read_capped
from autograder.outcome import CellKind, CostRecord, Failure
from autograder.protocol import HIDDEN_TESTS
from autograder.source import Role, SourceNotebook

HIDDEN = HIDDEN_TESTS
HIDDEN_PLACEHOLDER = "# (hidden tests ran here)"  # what feedback shows where the hidden tests were
# Inside the hidden tests of a budgeted test cell: the part whose cost the grader measures (grader/cost.py).
MEASURED = re.compile(r"^[ \t]*### BEGIN MEASURED[ \t]*$[\s\S]*?^[ \t]*### END MEASURED[ \t]*$", re.MULTILINE)
# A hidden test names its key literally: hidden_cases("models_optimizers.largest_model") (utils/handin.py).
HIDDEN_KEY = re.compile(r"""\b(?:hidden_cases|hand_in)\(\s*["']([a-z][a-z0-9_]*\.[A-Za-z_]\w*)["']""")

# Constructs with no business in an exercise answer that could reach into the grader's own process.
SUSPICIOUS = {
    "ctypes": r"\bctypes\b", "gc": r"\bgc\s*\.\s*get_(referents|referrers|objects)", "frames": r"_getframe|currentframe|f_back|f_globals",
    "tracing": r"settrace|setprofile|addaudithook", "sys.modules": r"sys\s*\.\s*modules", "builtins": r"\bbuiltins\b|__builtins__",
    "os.write": r"\bos\s*\.\s*(write|dup2?|fdopen|kill|killpg)\b", "ipython hooks": r"get_ipython\s*\(\s*\)\s*\.\s*(events|set_custom_exc|run_cell)",
    "signals": r"\bsignal\s*\.\s*(signal|alarm|setitimer)", "subprocess": r"\bsubprocess\b|os\s*\.\s*(system|popen|exec)",
    # an import or a path: a variable of the student's named `reference` is not the instructor's package (issue #59)
    "the instructor's references": r"\b(from|import)\s+reference\b|[/\\]reference[/\\]",
    "imports by a computed name": r"\bimport_module\b|__import__|\bfind_spec\b|\bmeta_path\b|\bspec_from_file_location\b",
    "the grader's channel": r"\bCHANNEL\b|\bhidden_cases\b|\bhand_in\b|utils\s*\.\s*handin",
}


@dataclass(frozen=True)
class Part:
    """Whole lines of a cell's code, run as one request; `first_line`: the cell's line number (1-based) of the first."""
    code: str
    first_line: int


@dataclass
class Cell:
    """One cell to run (a test's `points` are the source's)."""
    kind: CellKind
    grade_id: str
    code: str
    points: float = 0.0

    @property
    def hidden_lines(self) -> range:
        """The line numbers (1-based) of the hidden tests, markers included; empty for a cell without them."""
        match = HIDDEN.search(self.code)
        if not match:
            return range(0)
        return range(self.code.count("\n", 0, match.start()) + 1, self.code.count("\n", 0, match.end()) + 1)

    def failed_in_hidden_tests(self, result: CellRun) -> bool:
        """True when this test cell failed on a line of its hidden tests."""
        return self.kind is CellKind.TEST and not result.ok and result.line in self.hidden_lines

    @property
    def hidden_keys(self) -> list[str]:
        """The keys of the hidden tests this cell hands results in for (utils/handin.py), in order, once each."""
        match = HIDDEN.search(self.code) if self.kind is CellKind.TEST else None
        return list(dict.fromkeys(HIDDEN_KEY.findall(match.group(0)))) if match else []

    def parts(self) -> tuple[Part, Part, Part] | None:
        """A budgeted test cell as three parts: everything before its hidden tests' measured part (`### BEGIN
        MEASURED` to `### END MEASURED`, markers included), that part, and everything after; None when the cell's
        hidden tests hold none."""
        hidden = HIDDEN.search(self.code)
        measured = MEASURED.search(self.code, hidden.start(), hidden.end()) if hidden else None
        if measured is None:
            return None
        lines = self.code.splitlines(keepends=True)
        start, end = self.code.count("\n", 0, measured.start()), self.code.count("\n", 0, measured.end()) + 1
        return (Part("".join(lines[:start]), 1), Part("".join(lines[start:end]), start + 1),
                Part("".join(lines[end:]), end + 1))

    @property
    def visible_code(self) -> str:
        """The code a student may see in feedback: hidden tests replaced by one comment line."""
        return HIDDEN.sub(HIDDEN_PLACEHOLDER + "\n", self.code)


@dataclass(frozen=True)
class CellRun:
    """What one cell of the plan did, as the grader's stages refine it (the output budget, the hidden tests' verdicts,
    the task's rule and cost budget, what students may see) before workers.cell_outcome records it as a CellOutcome.
    `line`: the line of the visible code a failure is shown at (None: none, or a hidden test's); `handed`: what its
    hidden tests handed in, encoded (never recorded); `seconds`: wall time (None: never ran); `error_full`: the whole
    error where students see only a hint; `costs`: a budgeted task's measured costs (cost.py); `failure`: why it
    failed (None: it passed); `ename`: the class name of what failed it: the exception the cell raised (the notebook
    process says which, CellResult.ename), AssertionError where a check of the grader's failed it (a hidden test's
    verdict, a rule, a cost budget), "" where nothing was raised (a time-out, a crash, a check that broke)."""
    ok: bool
    output: str = ""
    error: str = ""
    restored: tuple[str, ...] = ()
    tampered: tuple[str, ...] = ()
    line: int | None = None
    handed: Mapping[str, str] = field(default_factory=dict)
    failure: Failure | None = None
    seconds: float | None = None
    error_full: str | None = None
    costs: tuple[CostRecord, ...] | None = None
    ran: tuple[str, ...] = ()
    ename: str = ""

    def failing(self, error: str, failure: Failure, line: int | None = None, ename: str = "") -> CellRun:
        """This run, failed with `error` (shown at `line`) for `failure`, having raised `ename`; what it printed is
        kept."""
        return replace(self, ok=False, error=error, line=line, failure=failure, ename=ename)


@dataclass
class Plan:
    notebook: str
    cells: list[Cell]
    flags: list[str] = field(default_factory=list)  # suspicious constructs found in the student's code
    notes: list[str] = field(default_factory=list)  # what the grader changed back, as nbgrader would


class NotANotebook(Exception):
    """A submitted file that cannot be read as a Jupyter notebook; the message says why, in one line."""


class MissingNotebook(NotANotebook):
    """The submission has no file of the notebook's name."""


def read_notebook(path: Path) -> dict:
    """The notebook JSON of a submitted file, or NotANotebook with a readable reason."""
    try:
        data = read_capped(path, MAX_NOTEBOOK_BYTES)
    except Missing:
        raise MissingNotebook("the file is missing") from None
    except Unreadable as why:
        raise NotANotebook(f"the file is {why}") from None
    if not data:
        raise NotANotebook("the file is empty")
    try:
        notebook = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise NotANotebook(f"not valid JSON ({error.__class__.__name__}: {str(error)[:120]})") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotANotebook("valid JSON, but not a notebook (no list of cells)")
    return notebook


def text_of(source: object) -> str:
    """A cell's source as one string (nbformat stores it as a string or a list of lines; anything else is empty)."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def nbgrader_meta(cell: dict) -> dict:
    """A cell's nbgrader metadata, or {} when the cell, its metadata or that entry is not a dict."""
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    info = meta.get("nbgrader") if isinstance(meta, dict) else None
    return info if isinstance(info, dict) else {}


def source_cells(source: SourceNotebook) -> list[Cell]:
    """The instructor's code cells in order, as the plan runs them, with points from the source."""
    kinds = {Role.ANSWER: CellKind.ANSWER, Role.MANUAL_CODE: CellKind.ANSWER, Role.TEST: CellKind.TEST}
    cells = []
    for cell in source.cells:
        if cell.cell_type != "code":
            continue
        kind = kinds.get(cell.role, CellKind.SETUP)
        cells.append(Cell(kind, cell.grade_id, "" if kind is CellKind.ANSWER else cell.text,
                          cell.points if kind is CellKind.TEST else 0.0))
    return cells


def make_plan(name: str, source: SourceNotebook, submitted: dict) -> Plan:
    """Merge a submitted notebook into the source's cells (see the module docstring)."""
    template = source_cells(source)
    known = {c.grade_id for c in template}
    answer_ids = {c.grade_id for c in template if c.kind is CellKind.ANSWER}
    answers: dict[str, str] = {}
    added_after: dict[str, list[str]] = {}  # grade_id of the source cell they follow ('' = the top)
    anchor = ""
    notes = []
    for cell in submitted["cells"]:
        if not isinstance(cell, dict):
            continue
        grade_id = nbgrader_meta(cell).get("grade_id")
        code = text_of(cell.get("source"))
        if cell.get("cell_type") != "code":
            if isinstance(grade_id, str) and grade_id in answer_ids and grade_id not in answers:
                answers[grade_id] = code
                anchor = grade_id
                notes.append(f"answer cell {grade_id!r} was submitted as a {str(cell.get('cell_type'))[:20]} cell; "
                             "graded as code, as nbgrader does")
            continue
        if isinstance(grade_id, str) and grade_id in answer_ids and grade_id not in answers:
            answers[grade_id] = code
            anchor = grade_id
        elif isinstance(grade_id, str) and grade_id in known and grade_id not in answer_ids:
            anchor = grade_id  # a locked cell: the source's copy runs in its place, once
        elif isinstance(grade_id, str) and grade_id in answer_ids:
            added_after.setdefault(anchor, []).append(code)  # a duplicated answer cell runs as the student's code
        elif code.strip():
            added_after.setdefault(anchor, []).append(code)
    cells = [Cell(CellKind.ADDED, "", code) for code in added_after.get("", [])]
    for cell in template:
        if cell.kind is CellKind.ANSWER:
            cell = Cell(CellKind.ANSWER, cell.grade_id, answers.get(cell.grade_id, ""))
        cells.append(cell)
        cells += [Cell(CellKind.ADDED, "", code) for code in added_after.get(cell.grade_id, [])]
    student_code = "\n".join(c.code for c in cells if c.kind in (CellKind.ANSWER, CellKind.ADDED))
    flags = [label for label, pattern in SUSPICIOUS.items() if re.search(pattern, student_code)]
    return Plan(name, cells, flags, notes)
