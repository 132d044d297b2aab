"""Run an exercise's cells in this process, as an instructor's own run does (hidden tests ask `reference` here and
check at once): the set-up cell, every answer cell (the instructor's solution unless replaced), then one test cell.

Used by the tests that a later task earns its points with a wrong earlier task (issue #24, item 9), and that the
trusted half of every hidden test fails garbage with an AssertionError, never another error.
"""
from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cells(assignment: str) -> list[tuple[str, str, str]]:
    """(kind: 'setup', 'answer', 'test' or '', grade_id, code) of each code cell of the source notebook."""
    path = next((REPO / "source" / assignment).glob("*.ipynb"))
    out = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        kind = "answer" if meta.get("solution") else "test" if meta.get("grade") else "setup" if meta else ""
        out.append((kind, meta.get("grade_id", ""), "".join(cell["source"])))
    return out


def run_test_cell(assignment: str, test_id: str, answers: dict[str, str] | None = None) -> dict:
    """Run the set-up cell and every answer cell (`answers` replaces the code of the named ones), then the test cell
    `test_id` (visible and hidden parts): raises what that test raises. Returns the notebook's namespace."""
    answers = answers or {}
    namespace: dict = {"__name__": "__main__"}
    for kind, grade_id, code in cells(assignment):
        if kind in ("setup", "answer", ""):
            code = answers.get(grade_id, code)
            exec(compile(code, f"<{assignment}:{grade_id}>", "exec"), namespace)
    test = next(code for kind, grade_id, code in cells(assignment) if kind == "test" and grade_id == test_id)
    exec(compile(test, f"<{assignment}:{test_id}>", "exec"), namespace)
    return namespace


GARBAGE = [None, 0, "x", [], [None], {"accepted": None, "rejected": None}, {"results": None, "timed": None},
           {"results": [], "timed": []}]


def garbage_for(cases: object, expected: object) -> list:
    """Results a broken or hostile solution might hand in for a test with these cases."""
    from utils.handin import Other
    count = len(expected) if isinstance(expected, list) else 1
    return GARBAGE + [[None] * count, [Other("numpy.float64")] * count, [(None, None)] * count, [{}] * count,
                      [()] * count, {"accepted": [{}] * 50, "rejected": [None] * 50},
                      {"results": [None] * 300, "timed": [(1, 2)]}]
