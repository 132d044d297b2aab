"""Every figure in a notebook has a title and labelled axes, checked on the code that draws it.

A figure is found from the stored outputs (a code cell with an image/png output), and its code is the cell plus
the functions it calls that are defined in an earlier cell of the notebook or in utils/ (plot helpers). An axis
counts as labelled by a label (`set_xlabel`, `xlabel`, `supxlabel`) or by named ticks (`set_xticks(..., labels)`,
`set_xticklabels`; the categories of `bar` on x and `barh` on y); `set_yticks([])` says the axis carries no values.
"""
import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(REPO.glob("notebooks/*.ipynb")) + sorted(REPO.glob("source/*/*.ipynb"))
TITLE = re.compile(r"\.set_title\(|\bplt\.title\(|\.suptitle\(")
X_LABEL = re.compile(r"\.set_xlabel\(|\bplt\.xlabel\(|\.supxlabel\(|\.set_xticklabels\(|\.set_xticks\([^)]*,|\.bar\(")
Y_LABEL = re.compile(r"\.set_ylabel\(|\bplt\.ylabel\(|\.supylabel\(|\.set_yticklabels\(|\.set_yticks\(|\.barh\(")


def functions(code: str) -> dict[str, str]:
    """name -> source of each function defined at the top level of `code` (cells with IPython magics are skipped)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    return {node.name: ast.get_source_segment(code, node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


UTILS = {name: body for path in sorted((REPO / "utils").glob("*.py")) for name, body in functions(path.read_text()).items()}


def figure_cells(path: Path) -> list[tuple[int, str]]:
    """(cell number, the code that draws it) for each cell of `path` that shows a figure."""
    known = dict(UTILS)
    found = []
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        code = "".join(cell["source"])
        known.update(functions(code))
        if not any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        drawn, seen = code, set()
        for _ in range(3):  # helpers that call helpers
            for name in set(re.findall(r"\b(\w+)\(", drawn)) - seen:
                if name in known:
                    seen.add(name)
                    drawn += "\n" + known[name]
        found.append((index, drawn))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_figure_has_a_title_and_labelled_axes(path):
    missing = []
    for index, code in figure_cells(path):
        lacks = [what for what, pattern in (("a title", TITLE), ("an x label", X_LABEL), ("a y label", Y_LABEL))
                 if not pattern.search(code)]
        if lacks:
            missing.append(f"cell {index}: no {', no '.join(lacks)}")
    assert not missing, "\n".join(missing)


def test_the_check_sees_the_figures():
    """Every lecture has figures, and the check finds as many as the stored outputs show."""
    for path in sorted(REPO.glob("notebooks/*.ipynb")):
        images = sum("image/png" in o.get("data", {}) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "code" for o in c.get("outputs", []))
        assert len(figure_cells(path)) >= 1 and images >= len(figure_cells(path)), path.name
    bare = "fig, ax = plt.subplots()\nax.plot([1, 2])\n"
    assert not TITLE.search(bare) and not X_LABEL.search(bare) and not Y_LABEL.search(bare)
