"""A lecture's stored outputs say which run, and which machine, each came from (issue #25 B5; issue #34).

Checked on the stored files, without running anything:
- the execution counts strictly increase through all the code cells that have one, from top to bottom: an output
  pasted from another run (an earlier one, or the GPU run) breaks the order;
- the outputs print at most one device line (`utils.device.describe_device`) and at most one torch version.

Cells tagged `gpu-figure` hold the figures measured on a GPU, which scripts/execute_notebooks.py keeps when a lecture
is re-run on a machine without one (with this run's execution count). They are checked apart by the device and torch
rules, and only where the notebook names their machine (its `gpu_figures` metadata: device and torch, which its
note repeats). Until a GPU run of the whole notebook replaces everything (`gpu_figures["whole_run"]`, set by
scripts/gpu_lectures.py), each GPU figure but the device line (cell 1, which the note under it explains) is labelled:
the markdown cell right above it is tagged `gpu-figure-label` and names the GPU and the date. A GPU figure without
its label, a label above anything else (a figure that lost its tag), a GPU figure that prints another machine's
device line or torch, or one in a notebook that does not say where it came from, is an unlabelled splice and fails.
(An untagged cell may name the GPU: after a run end to end on one, every cell does.)
"""
import copy
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(REPO.glob("notebooks/*.ipynb")) + [REPO / "index.ipynb"] + sorted(REPO.glob("source/*/*.ipynb"))
GPU_FIGURE, LABEL_TAG = "gpu-figure", "gpu-figure-label"
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


def is_label(cell: dict) -> bool:
    return cell["cell_type"] == "markdown" and LABEL_TAG in cell.get("metadata", {}).get("tags", [])


def count_problems(cells: list[tuple[int, dict]]) -> list[str]:
    """Execution counts that do not strictly increase from top to bottom: outputs from another run."""
    counted = [(index, cell["execution_count"]) for index, cell in cells if cell.get("execution_count") is not None]
    return [f"cell {after} has execution count {count_after} after cell {before}'s {count_before}: its output comes "
            f"from another run" for (before, count_before), (after, count_after) in zip(counted, counted[1:])
            if count_after <= count_before]


def run_problems(label: str, cells: list[tuple[int, dict]]) -> list[str]:
    """What shows that the outputs of `cells` (index, cell) came from more than one machine or torch."""
    problems = []
    devices = [(index, line) for index, cell in cells for line in DEVICE_LINE.findall(output_text(cell))]
    if len(devices) > 1:
        problems.append(f"{label}: {len(devices)} device lines (cells {', '.join(str(i) for i, _ in devices)})")
    versions = {version for _, cell in cells for version in TORCH_VERSION.findall(output_text(cell))}
    if len(versions) > 1:
        problems.append(f"{label}: outputs print {len(versions)} torch versions: {', '.join(sorted(versions))}")
    return problems


def label_problems(cells: list[dict], meta: dict) -> list[str]:
    """Each GPU figure after the device line has a label right above it naming the GPU and the date, and each label
    sits right above a GPU figure; after a whole run on the GPU there are no labels."""
    problems = []
    for index, cell in enumerate(cells):
        above = cells[index - 1] if index > 0 else None
        if is_label(cell):
            text = "".join(cell["source"])
            if meta.get("whole_run"):
                problems.append(f"cell {index} labels an output as the GPU run's, but the whole notebook ran on the GPU")
            elif index + 1 >= len(cells) or cells[index + 1]["cell_type"] != "code" or not is_gpu_figure(cells[index + 1]):
                problems.append(f"cell {index} is a GPU figure's label, but the cell under it is not a GPU figure")
            elif meta.get("device", "?") not in text or meta.get("date", "?") not in text:
                problems.append(f"cell {index}, a GPU figure's label, does not name {meta.get('device')} and "
                                f"{meta.get('date')}")
        elif (cell["cell_type"] == "code" and is_gpu_figure(cell) and index > 1 and not meta.get("whole_run")
              and not (above is not None and is_label(above))):
            problems.append(f"cell {index} is a GPU figure in a notebook whose other outputs come from another run, "
                            f"but no label above it says so")
    return problems


def provenance_problems(notebook: dict) -> list[str]:
    """Everything that says the stored outputs of `notebook` were spliced from more than one run, unlabelled."""
    code = [(index, cell) for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"]
    main = [(index, cell) for index, cell in code if not is_gpu_figure(cell)]
    gpu = [(index, cell) for index, cell in code if is_gpu_figure(cell)]
    problems = count_problems(code) + run_problems("the notebook's run", main)
    meta = notebook.get("metadata", {}).get("gpu_figures")
    if not gpu:
        labels = [index for index, cell in enumerate(notebook["cells"]) if is_label(cell)]
        return problems + [f"cell {index} is a GPU figure's label, but the notebook has no GPU figures" for index in labels]
    if not meta or not meta.get("device") or not meta.get("torch"):
        return problems + [f"cells {', '.join(str(i) for i, _ in gpu)} are GPU figures, but the notebook's "
                           "gpu_figures metadata does not name their machine and torch"]
    problems += run_problems(f"the GPU figures' run ({meta['device']})", gpu)
    problems += label_problems(notebook["cells"], meta)
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


def as_two_runs(notebook: dict) -> dict:
    """A lecture whose whole run was on the GPU, as a CPU re-run leaves it (`make notebooks` keeps its GPU figures and
    drops `whole_run`) once the instructor has put each figure's label above it: the two-run state the check knows."""
    sys.path.insert(0, str(REPO / "scripts"))
    from gpu_lectures import LABEL
    meta = notebook["metadata"]["gpu_figures"]
    meta.pop("whole_run", None)
    figures = code_indices(notebook, gpu=True)[1:]  # the device line is explained by the note, not labelled
    for index in reversed(figures):
        label = {"cell_type": "markdown", "id": f"label-{index}", "metadata": {"tags": [LABEL_TAG]},
                 "source": LABEL.format(**meta)}
        notebook["cells"].insert(index, label)
    return notebook


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


def test_a_gpu_figure_from_another_run_between_untagged_cells_fails(tmp_path):
    notebook = load("09_mixed_precision.ipynb")
    assert provenance_problems(notebook) == []
    gpu = code_indices(notebook, gpu=True)[-1]
    earlier = max(i for i in code_indices(notebook, gpu=False) if i < gpu)
    notebook["cells"][gpu]["execution_count"] = notebook["cells"][earlier]["execution_count"]  # as the GPU run numbered it
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any(f"cell {gpu} has execution count" in p for p in problems), problems


def test_a_gpu_figure_that_loses_its_tag_fails(tmp_path):
    notebook = as_two_runs(load("09_mixed_precision.ipynb"))
    assert provenance_problems(splice_and_reload(tmp_path, notebook)) == []
    index = code_indices(notebook, gpu=True)[-1]
    notebook["cells"][index]["metadata"]["tags"].remove(GPU_FIGURE)     # its label now sits above an untagged cell
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("the cell under it is not a GPU figure" in p for p in problems), problems


def test_a_gpu_figure_without_its_label_fails(tmp_path):
    notebook = as_two_runs(load("05_flops_mfu.ipynb"))
    index = code_indices(notebook, gpu=True)[-1]
    assert is_label(notebook["cells"][index - 1])
    del notebook["cells"][index - 1]
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("no label above it" in p for p in problems), problems


def test_labels_after_a_whole_run_on_the_gpu_fail(tmp_path):
    notebook = as_two_runs(load("08_training_loop.ipynb"))
    notebook["metadata"]["gpu_figures"]["whole_run"] = True
    problems = provenance_problems(splice_and_reload(tmp_path, notebook))
    assert any("the whole notebook ran on the GPU" in p for p in problems), problems
    notebook["cells"] = [cell for cell in notebook["cells"] if not is_label(cell)]
    assert provenance_problems(splice_and_reload(tmp_path, notebook)) == []


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
