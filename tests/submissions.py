"""Make student submissions from `source/` and `release/`: solved, blank, half done, and ones that try tricks.

Each maker takes an assignment name and returns a notebook (nbformat node) per notebook of the assignment, so
the corpus grows with every assignment added to `source/`.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTION_MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", re.MULTILINE)


def _notebooks(folder: Path) -> dict[str, nbformat.NotebookNode]:
    return {p.stem: nbformat.read(p, as_version=4) for p in sorted(folder.glob("*.ipynb"))}


def release_notebooks(assignment: str) -> dict[str, nbformat.NotebookNode]:
    return _notebooks(REPO / "release" / assignment)


def _solution_sources(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> the source cell's code with the solution markers removed."""
    return {cell.metadata.nbgrader["grade_id"]: SOLUTION_MARKERS.sub("", cell.source)
            for cell in source_nb.cells if cell.metadata.get("nbgrader", {}).get("solution")}


def _fill(assignment: str, pick) -> dict[str, nbformat.NotebookNode]:
    """Copy the release, replacing the code of solution cell number i (grade_id g) by pick(i, g, solution)."""
    sources = _notebooks(REPO / "source" / assignment)
    filled = {}
    for name, nb in release_notebooks(assignment).items():
        nb = copy.deepcopy(nb)
        solutions = _solution_sources(sources[name])
        index = 0
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution") and grade_id in solutions:
                replacement = pick(index, grade_id, solutions[grade_id])
                if replacement is not None:
                    cell.source = replacement
                index += 1
        filled[name] = nb
    return filled


def solved(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every task done with the instructor's solution."""
    return _fill(assignment, lambda i, g, solution: solution)


def half_done(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """The first half of the tasks solved, the rest left as released."""
    total = sum(1 for nb in _notebooks(REPO / "source" / assignment).values() for _ in _solution_sources(nb))
    return _fill(assignment, lambda i, g, solution: solution if i < total // 2 else None)


def _function_header(solution: str) -> str:
    """The `def ...:` line (and docstring) of a solution cell, without its body."""
    head = solution.split("\n")
    return "\n".join(head[: next(i for i, line in enumerate(head) if line.strip().startswith("'''")) + 1])


ALWAYS_EQUAL = '''
class AlwaysEqual(float):
    """Looks like an answer to a naive `==` test: equal to everything."""
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __bool__(self): return True
'''


def always_equal(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Every function returns an object whose __eq__ always says True."""
    return _fill(assignment, lambda i, g, solution:
                 ALWAYS_EQUAL + _function_header(solution) + "\n    return AlwaysEqual(0.0)\n")


PATCH_COMPARISONS = '''
import numpy, torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.testing.assert_allclose = lambda *args, **kwargs: None
'''


def patched_comparisons(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Wrong answers of the right type, after rebinding torch's and numpy's comparison functions to always pass."""
    return _fill(assignment, lambda i, g, solution:
                 PATCH_COMPARISONS + _function_header(solution) + "\n    return 0\n")


def _with_warning(solution: str) -> str:
    """The solution, made to print a warning on stderr each time it is called (as torch sometimes does)."""
    header = _function_header(solution)
    warn = '    import warnings; warnings.warn("a harmless warning from correct code", UserWarning, stacklevel=1)\n'
    return header + "\n" + warn + solution[len(header) + 1:]


def noisy(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """Correct solutions that write warnings to stderr whenever they run, in the test cells too."""
    always = "import warnings\nwarnings.simplefilter('always')\n"
    return _fill(assignment, lambda i, g, solution: always + _with_warning(solution))


def write_submission(root: Path, student: str, assignment: str, notebooks: dict[str, nbformat.NotebookNode]) -> Path:
    """Lay notebooks out as nbgrader's submitted/<student>/<assignment>/<name>.ipynb."""
    folder = root / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for name, nb in notebooks.items():
        nbformat.write(nb, folder / f"{name}.ipynb")
    (folder / "timestamp.txt").write_text("2026-01-05 12:00:00.000000 UTC")
    return folder
