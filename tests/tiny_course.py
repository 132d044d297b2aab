"""A tiny nbgrader course for the gradebook tests: one assignment, '00_tiny', with every kind of graded cell.

    setup (locked) | answer `double` + its test (2 points) | written answer graded by hand (4 points; its question
    holds the rubric, between BEGIN and END MARK SCHEME, which the release drops and autograded/ keeps)
    | code answer graded by hand (3 points) | task graded by hand (5 points)

so its maximum is 14 points, of which 2 are graded automatically. `make_course(root)` writes it with an
nbgrader_config.py that loads the repository's and keeps the gradebook and the exchange inside root (or the
exchange where asked).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "00_tiny"
MAX_SCORE = 14.0
AUTO_POINTS = 2.0
RUBRIC = "Rubric: 2 points for the exponent bits (5 against 8), 2 for what that does to the largest value."  # the TA's


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, task=False, points=None) -> dict:
    info = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": task}
    if points is not None:
        info["points"] = points
    return {"nbgrader": info}


def source_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"display_name": "Python (cs336 primitives)", "language": "python", "name": "cs336-primitives"}
    cells = nbformat.v4
    nb.cells = [
        cells.new_markdown_cell("# A tiny exercise", metadata=_meta("intro", locked=True)),
        cells.new_code_cell("import math", metadata=_meta("setup", locked=True)),
        cells.new_markdown_cell("## Task 1: double a number (2 points)", metadata=_meta("task1", locked=True)),
        cells.new_code_cell("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
                            metadata=_meta("double", solution=True)),
        cells.new_code_cell("assert double(2) == 4\n### BEGIN HIDDEN TESTS\nassert double(-3) == -6\n"
                            "### END HIDDEN TESTS\nprint('Task 1: visible tests passed.')",
                            metadata=_meta("test_double", grade=True, locked=True, points=2)),
        cells.new_markdown_cell("## Task 2: explain (4 points)\n\nWhy is fp16's range smaller than bf16's?\n"
                                f"### BEGIN MARK SCHEME\n{RUBRIC}\n### END MARK SCHEME",
                                metadata=_meta("task2", locked=True)),
        cells.new_markdown_cell("### BEGIN SOLUTION\nFewer exponent bits.\n### END SOLUTION",
                                metadata=_meta("explain", grade=True, solution=True, points=4)),
        cells.new_markdown_cell("## Task 3: a plot, graded by hand (3 points)", metadata=_meta("task3", locked=True)),
        cells.new_code_cell("### BEGIN SOLUTION\nprint('a plot')\n### END SOLUTION",
                            metadata=_meta("plot", grade=True, solution=True, points=3)),
        cells.new_markdown_cell("## Task 4: the whole notebook reads well (5 points)",
                                metadata=_meta("style", task=True, points=5)),
    ]
    for cell in nb.cells:  # the same notebook every time (nbformat draws random ids), so that a self-check the
        cell.id = cell.metadata.nbgrader.grade_id  # grader passed on it counts for every test that grades it alike
    return nb


def make_course(root: Path, exchange: Path | None = None, db_url: str | None = None) -> Path:
    """Write the course into `root` (source/00_tiny and nbgrader_config.py); return root."""
    (root / "source" / ASSIGNMENT).mkdir(parents=True, exist_ok=True)
    nbformat.write(source_notebook(), root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    return write_config(root, exchange, db_url)


def write_config(root: Path, exchange: Path | None = None, db_url: str | None = None) -> Path:
    """Write the course's nbgrader_config.py: the repository's, with root's folder, gradebook and exchange (by
    default root/exchange); return root."""
    lines = ["c = get_config()",
             f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})",
             f"c.CourseDirectory.root = {str(root)!r}",
             f"c.CourseDirectory.db_url = {db_url or 'sqlite:///' + str(root / 'gradebook.db')!r}"]
    exchange = exchange or root / "exchange"  # never the repository's (its nbgrader_config.py's default)
    exchange.mkdir(parents=True, exist_ok=True)
    lines.append(f"c.Exchange.root = {str(exchange)!r}")  # the rest of the exchange's settings: the repository's
    (root / "nbgrader_config.py").write_text("\n".join(lines) + "\n")
    return root


def answers(double="return 2 * x", explain="Because fp16 has 5 exponent bits and bf16 has 8.",
            plot="print('my plot')") -> dict[str, str]:
    return {"double": f"def double(x):\n    {double}", "explain": explain, "plot": plot}


def submission(release_notebook: nbformat.NotebookNode, filled: dict[str, str]) -> nbformat.NotebookNode:
    """The released notebook with the answer cells named in `filled` replaced (grade_id -> text)."""
    nb = nbformat.from_dict(release_notebook)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in filled:
            cell.source = filled[grade_id]
    return nb
