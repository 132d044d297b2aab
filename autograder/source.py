"""Runs as the instructor (the grader and its tools): an assignment's source notebooks, read once and classified once.

Every stage that needs the instructor's notebooks takes them from here (`Course.sources`, read once per Course, that is
once per run or command): the gradebook's check that it knows each assignment as `source/` has it, the order of the
rows in grades.csv, the plan each submission runs (grader/plan.py), the autograded copy nbgrader's tools read
(autograded.py), the self-check's solution and empty notebooks, the hidden tests' keys, and the titles in feedback
and the report.

What a cell is (`Role`) is decided in one place, `role_of`, from nbgrader's own tests of its metadata
(`nbgrader.utils.is_grade`, `is_solution`, `is_task`, `is_locked`), so this module and the gradebook nbgrader fills
cannot disagree about a cell. Source notebooks are the instructor's: they are read with nbformat, which validates
them. A submitted notebook is the student's and never comes here (grader/plan.py reads it defensively).
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

HEADING = re.compile(r"^\s*#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")  # colour codes (CSI) and terminal titles (OSC)


def strip_ansi(text: str) -> str:
    """`text` without ANSI colour codes: what a notebook's output or traceback reads as in a file or a web page (the
    grader's feedback and autograded notebooks, the instructor's report)."""
    return ANSI.sub("", text)


class Role(StrEnum):
    """What a source cell is to the grader."""
    SETUP = "setup"              # code with no points that is not an answer: runs as the instructor wrote it
    ANSWER = "answer"            # a code solution cell with no points: the student's code runs in its place
    TEST = "test"                # an autograded test: a code cell with points that is not a solution
    MANUAL_CODE = "manual-code"  # a code solution cell with points: the student's code runs, a person grades it
    MANUAL_TEXT = "manual-text"  # a markdown cell with points: a written answer a person grades
    TASK = "task"                # a task cell: points a person gives, no answer cell of its own (code in one runs)
    TEXT = "text"                # markdown or raw text with no points

    @property
    def graded(self) -> bool:
        """A cell with points of its own (a row in grades.csv, a grade in nbgrader's gradebook)."""
        return self in (Role.TEST, Role.MANUAL_CODE, Role.MANUAL_TEXT, Role.TASK)


@dataclass(frozen=True)
class SourceCell:
    """One cell of a source notebook. `text`: its source; `title`: the heading it falls under (its `grade_id` when none
    comes before it); `points`: nbgrader's `points` (0 for a cell without); the flags are nbgrader's, as it reads them."""
    role: Role
    cell_type: str
    grade_id: str  # '' for a cell nbgrader does not track
    text: str
    points: float
    title: str
    solution: bool
    grade: bool
    task: bool
    locked: bool

    @property
    def tracked(self) -> bool:
        """A cell nbgrader keeps in the gradebook's source cells (it has an id and one of nbgrader's roles)."""
        return bool(self.grade_id) and (self.grade or self.solution or self.locked or self.task)


@dataclass(frozen=True)
class SourceNotebook:
    """One source notebook: its cells classified, in order (`cells[i]` is `node.cells[i]`), and the notebook as nbformat
    read it (for what the autograded copy keeps of it: cell ids, metadata). Treat `node` as read-only; `copy` gives a
    notebook to change."""
    name: str
    cells: tuple[SourceCell, ...]
    node: dict

    @property
    def graded(self) -> list[SourceCell]:
        """The cells with points, in order."""
        return [c for c in self.cells if c.role.graded]

    def copy(self) -> dict:
        """A deep copy of the notebook, to change."""
        return copy.deepcopy(self.node)

    @property
    def imports(self) -> set[str]:
        """The modules this notebook's code imports: every code cell's, hidden tests and solutions included (the
        zygote preloads them; `imported_modules`)."""
        return set().union(*(imported_modules(c.text) for c in self.cells if c.cell_type == "code"))


def imported_modules(code: str) -> set[str]:
    """The absolute module names `code` imports (`import a.b` gives a.b; `from a import b` gives a and a.b, which
    may be a submodule), read with `ast` after IPython's own clean-up of magics and shell lines; none for a cell that
    does not parse (the grader reports that where the cell runs)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:   # a magic or a shell line: IPython's clean-up first (slower, so only then)
        from IPython.core.inputtransformer2 import TransformerManager
        try:
            tree = ast.parse(TransformerManager().transform_cell(code))
        except (SyntaxError, ValueError):
            return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def role_of(cell) -> Role:
    """A source cell's role, from its nbgrader metadata (see the module's docstring)."""
    from nbgrader.utils import is_grade, is_solution, is_task
    code = cell.cell_type == "code"
    if is_task(cell):
        return Role.TASK
    if is_solution(cell):
        if code:
            return Role.MANUAL_CODE if is_grade(cell) else Role.ANSWER
        return Role.MANUAL_TEXT if is_grade(cell) else Role.TEXT
    if is_grade(cell):
        return Role.TEST if code else Role.MANUAL_TEXT
    return Role.SETUP if code else Role.TEXT


def read_notebook(path: Path) -> SourceNotebook:
    """A source notebook, read with nbformat (validated) and classified."""
    import nbformat
    return classify(path.stem, nbformat.read(path, as_version=4))


def classify(name: str, notebook: dict) -> SourceNotebook:
    """A notebook (nbformat's node, or the same as plain JSON) classified."""
    import nbformat
    from nbgrader.utils import is_locked
    node = nbformat.from_dict(notebook)
    cells, title = [], ""
    for cell in node.cells:
        info = cell.metadata.get("nbgrader", {})
        role = role_of(cell)
        if cell.cell_type == "markdown" and not info.get("solution"):
            headings = HEADING.findall(cell.source)
            title = headings[0] if headings else title
        grade_id = str(info.get("grade_id", ""))
        cells.append(SourceCell(role, cell.cell_type, grade_id, cell.source, float(info.get("points", 0) or 0),
                                title or grade_id, bool(info.get("solution")), bool(info.get("grade")),
                                bool(info.get("task")), bool(is_locked(cell))))
    return SourceNotebook(name, tuple(cells), node)


def read_assignment(folder: Path) -> dict[str, SourceNotebook]:
    """The notebooks of one assignment's source folder, by name (without .ipynb), in name order."""
    return {p.stem: read_notebook(p) for p in sorted(folder.glob("*.ipynb"))}
