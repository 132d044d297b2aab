"""What every lecture and exercise notebook promises (docs/course.md, "How every notebook is written"), checked on
the stored files."""
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(REPO.glob("notebooks/*.ipynb")) + sorted(REPO.glob("source/*/*.ipynb"))
LOCAL_PATH = re.compile(r"/(tmp|root|work|home)/[A-Za-z0-9_.-]+")


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_uses_the_course_kernel(path):
    assert json.loads(path.read_text())["metadata"]["kernelspec"]["name"] == "cs336-primitives"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_opens_with_goals_then_the_device_line(path):
    first, second = cells(path)[:2]
    assert first["cell_type"] == "markdown"
    assert second["cell_type"] == "code" and "describe_device()" in "".join(second["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_stored_outputs_are_clean(path):
    for index, cell in enumerate(cells(path)):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("execution_count") is not None, f"cell {index} was never run: execute and store outputs"
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"cell {index} stores an error"
            assert not (output["output_type"] == "stream" and output["name"] == "stderr"), f"cell {index} wrote stderr"
            assert not LOCAL_PATH.search(json.dumps(output)), f"cell {index} output mentions a local path"


@pytest.mark.parametrize("path", sorted(REPO.glob("notebooks/*.ipynb")), ids=lambda p: p.name)
def test_lecture_has_a_plot_and_points_to_its_exercise(path):
    outputs = [o for c in cells(path) if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    topic = path.stem
    assert f"release/{topic}" in "".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")


GPU_LECTURES = [p for p in sorted(REPO.glob("notebooks/*.ipynb")) if "gpu_figures" in json.loads(p.read_text())["metadata"]]


def test_the_gpu_lectures_store_gpu_figures():
    assert {p.stem for p in GPU_LECTURES} >= {"02_tensors_on_gpu", "05_flops_mfu", "07_models_optimizers",
                                              "09_mixed_precision"}


@pytest.mark.parametrize("path", GPU_LECTURES, ids=lambda p: p.name)
def test_gpu_figures_come_from_the_gpu_the_notebook_names(path):
    """A lecture whose stored figures were measured on a GPU says which and when, and no CPU re-run replaced them
    (scripts/execute_notebooks.py keeps them; plain nbconvert would not)."""
    notebook = json.loads(path.read_text())
    meta = notebook["metadata"]["gpu_figures"]
    note = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert meta["device"] in note and meta["date"] in note and meta["torch"] in note
    figures = [c for c in notebook["cells"] if "gpu-figure" in c.get("metadata", {}).get("tags", [])]
    assert figures and figures[0] is notebook["cells"][1], "the device line is the first GPU figure"
    for cell in figures:
        text = json.dumps(cell.get("outputs", []))
        assert "Skipped" not in text and "CPU only" not in text, f"cell {cell.get('id')} holds a CPU run's output"
        assert "nbval-ignore-output" in cell["metadata"]["tags"], "a GPU figure cannot be compared on a CPU"
    assert meta["device"] in json.dumps(figures[0]["outputs"])
