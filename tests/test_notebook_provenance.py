"""A lecture's stored outputs come from one run (issue #25, B5: outputs spliced from two runs).

Checked on the stored files, without running anything:
- the execution counts strictly increase through the code cells that have one;
- the outputs print at most one device line (`utils.device.describe_device`) and at most one torch version.

Cells tagged `gpu-figure` are a second, labelled provenance: the figures measured on a GPU, which
scripts/execute_notebooks.py keeps when a lecture is re-run on a machine without one. They are checked apart, by the
same rules, and only where the notebook names their machine (its `gpu_figures` metadata: device and torch, which its
"Stored figures" note repeats). A GPU figure in a notebook that does not say where it came from, one that prints
another machine's device line or torch, or one that loses its tag (its execution count then breaks the run's order), is
an unlabelled splice and fails. (An untagged cell may name the GPU: after a run end to end on one, every cell does.)
"""
import copy
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(REPO.glob("notebooks/*.ipynb")) + [REPO / "index.ipynb"] + sorted(REPO.glob("source/*/*.ipynb"))
GPU_FIGURE = "gpu-figure"
DEVICE_LINE = re.compile(r"^(CUDA GPU \d+ of \d+: .*|Apple GPU via MPS on .*|CPU only: .*) \(torch [^)\s]+\)$",
                         re.MULTILINE)
TORCH_VERSION = re.compile(r"\btorch (\d+\.\d+(?:\.\d+)?(?:[+.\w]*\w)?)")


def output_text(cell: dict) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append("".join(output["text"]))
        parts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def is_gpu_figure(cell: dict) -> bool:
    return GPU_FIGURE in cell.get("metadata", {}).get("tags", [])


def run_problems(label: str, cells: list[tuple[int, dict]]) -> list[str]:
    """What shows that `cells` (index, cell) did not come from one run."""
    problems = []
    counted = [(index, cell["execution_count"]) for index, cell in cells if cell.get("execution_count") is not None]
    for (before, count_before), (after, count_after) in zip(counted, counted[1:]):
        if count_after <= count_before:
            problems.append(f"{label}: cell {after} has execution count {count_after} after cell {before}'s "
                            f"{count_before}: its output comes from another run")
    devices = [(index, line) for index, cell in cells for line in DEVICE_LINE.findall(output_text(cell))]
    if len(devices) > 1:
        problems.append(f"{label}: {len(devices)} device lines (cells {', '.join(str(i) for i, _ in devices)})")
    versions = {version for _, cell in cells for version in TORCH_VERSION.findall(output_text(cell))}
    if len(versions) > 1:
        problems.append(f"{label}: outputs print {len(versions)} torch versions: {', '.join(sorted(versions))}")
    return problems


def provenance_problems(notebook: dict) -> list[str]:
    """Everything that says the stored outputs of `notebook` were spliced from more than one run, unlabelled."""
    code = [(index, cell) for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"]
    main = [(index, cell) for index, cell in code if not is_gpu_figure(cell)]
    gpu = [(index, cell) for index, cell in code if is_gpu_figure(cell)]
    problems = run_problems("the notebook's run", main)
    if not gpu:
        return problems
    meta = notebook.get("metadata", {}).get("gpu_figures")
    if not meta or not meta.get("device") or not meta.get("torch"):
        return problems + [f"cells {', '.join(str(i) for i, _ in gpu)} are GPU figures, but the notebook's "
                           "gpu_figures metadata does not name their machine and torch"]
    problems += run_problems(f"the GPU figures' run ({meta['device']})", gpu)
    for index, cell in gpu:
        text = output_text(cell)
        for line in DEVICE_LINE.findall(text):
            if meta["device"] not in line:
                problems.append(f"GPU figure cell {index} prints a device line for another machine: {line!r}")
        for version in TORCH_VERSION.findall(text):
            if version != meta["torch"]:
                problems.append(f"GPU figure cell {index} prints torch {version}, the metadata says {meta['torch']}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_stored_outputs_come_from_one_run(path):
    assert provenance_problems(json.loads(path.read_text())) == []


# The check must be able to fail: spliced copies of today's notebooks, written to a temporary directory.
def load(name: str) -> dict:
    return json.loads((REPO / "notebooks" / name).read_text())


def splice_and_reload(tmp_path: Path, notebook: dict) -> dict:
    path = tmp_path / "spliced.ipynb"
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return json.loads(path.read_text())


def code_indices(notebook: dict, gpu: bool | None = None) -> list[int]:
    return [i for i, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"
            and (gpu is None or is_gpu_figure(c) == gpu)]


def test_a_cell_from_an_earlier_run_fails(tmp_path):
    notebook = load("03_strides_views.ipynb")
    assert provenance_problems(notebook) == []
    last = code_indices(notebook)[-1]
    notebook["cells"][last]["execution_count"] = 2            # as if pasted from a run that stopped early
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("execution count" in p for p in problems), problems


def test_a_gpu_output_in_a_cpu_lecture_fails(tmp_path):
    gpu_lecture, cpu_lecture = load("09_mixed_precision.ipynb"), load("03_strides_views.ipynb")
    gpu_cell = gpu_lecture["cells"][code_indices(gpu_lecture, gpu=True)[0]]    # the H100 device line
    target = cpu_lecture["cells"][code_indices(cpu_lecture)[-1]]
    target["outputs"] = target["outputs"] + copy.deepcopy(gpu_cell["outputs"])
    problems = provenance_problems(splice_and_reload(tmp_path, cpu_lecture))
    assert any("device lines" in p for p in problems) and any("torch versions" in p for p in problems), problems


def test_a_gpu_figure_that_loses_its_tag_fails(tmp_path):
    notebook = load("09_mixed_precision.ipynb")
    assert provenance_problems(notebook) == []
    for index in code_indices(notebook, gpu=True)[1:]:       # untag the timings, keep the device line's label
        notebook["cells"][index]["metadata"]["tags"].remove(GPU_FIGURE)
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("execution count" in p for p in problems), problems


def test_gpu_figures_without_a_named_machine_fail(tmp_path):
    notebook = load("09_mixed_precision.ipynb")
    del notebook["metadata"]["gpu_figures"]
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("does not name their machine" in p for p in problems), problems


def test_a_gpu_figure_from_a_third_machine_fails(tmp_path):
    notebook = load("02_tensors_on_gpu.ipynb")
    first = notebook["cells"][code_indices(notebook, gpu=True)[0]]
    first["outputs"] = json.loads(json.dumps(first["outputs"]).replace(notebook["metadata"]["gpu_figures"]["device"],
                                                                      "NVIDIA A100-SXM4-80GB"))
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("another machine" in p for p in problems), problems
