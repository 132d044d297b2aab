"""The GPU session's rehearsal on this CPU (issue #21): `make gpu-session DRY_RUN=1 QUICK=1` prints its plan, checks
the lectures' prepared edits and conventions, skips each CUDA step with its reason, and leaves a summary; without
--dry-run it stops after the device check. Nothing of torch is mocked: the CUDA steps are skipped because this machine
has no CUDA (on a GPU machine `make gpu-session` itself is the test). A few seconds each."""
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SESSION = [sys.executable, "scripts/gpu_session.py", "--venv", str(Path(sys.prefix))]

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA machine runs the real session instead")


def test_dry_run_rehearses_every_step_and_leaves_a_summary(tmp_path):
    result = subprocess.run(SESSION + ["--dry-run", "--quick", "--out", str(tmp_path)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.index("plan:") < out.index("device ...")  # the plan comes first
    for step in ("device", "wheels", "install", "lectures", "bench", "test-gpu"):
        assert f"] {step}:" in out, step
    assert "device: no CUDA" in out and "dry run, quick: would run make --no-print-directory test-gpu" in out
    # Every lecture's edits apply (or are done already) and its conventions hold.
    for name in ("02_tensors_on_gpu", "05_flops_mfu", "07_models_optimizers", "08_training_loop",
                 "09_mixed_precision", "10_accounting_a_training_run"):
        assert f"{name}: OK" in out, name
    summary = (tmp_path / "summary.md").read_text()
    assert "dry run" in summary and "| lectures | rehearsed |" in summary and "## Follow-up" in summary
    assert (tmp_path / "device.txt").read_text().startswith("no CUDA")
    assert not (tmp_path / "notebooks.tar.gz").exists(), "a rehearsal's notebooks are not for committing"
    with tarfile.open(tmp_path / "logs.tar.gz") as logs:
        report = json.load(logs.extractfile("logs/lectures.json"))
    assert not report["executed"] and all(not lecture["problems"] for lecture in report["lectures"].values())
    assert len(list(tmp_path.iterdir())) <= 8  # what a device call brings back from $OUT


def test_without_cuda_the_real_session_stops_after_the_plan(tmp_path):
    result = subprocess.run(SESSION + ["--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "plan:" in result.stdout and "install ..." not in result.stdout
    assert "no CUDA here" in result.stderr and "DRY_RUN=1" in result.stderr
    assert "| install | not run |" in (tmp_path / "summary.md").read_text()


def test_after_a_whole_gpu_run_the_note_says_one_machine_and_the_labels_go():
    """scripts/gpu_lectures.py's stamp after a run of the whole lecture on the GPU: the two-machine note becomes the
    one-machine note, the GPU figures' labels go, and the provenance check passes (here with the stored run's GPU)."""
    import nbformat

    from tests.test_notebook_provenance import as_two_runs, provenance_problems
    sys.path.insert(0, str(REPO / "scripts"))
    import gpu_lectures
    stored = json.loads((REPO / "notebooks" / "08_training_loop.ipynb").read_text())
    notebook = nbformat.from_dict(as_two_runs(stored))  # as a CPU re-run leaves it, labels added
    run = {key: value for key, value in notebook.metadata["gpu_figures"].items() if key != "whole_run"}
    labelled = [c for c in notebook.cells if gpu_lectures.LABEL_TAG in c.metadata.get("tags", [])]
    assert labelled and gpu_lectures.stamp(notebook, run, whole_run=True) == []
    assert not any(gpu_lectures.LABEL_TAG in c.metadata.get("tags", []) for c in notebook.cells)
    note = next(c for c in notebook.cells if c.get("id") in gpu_lectures.NOTE_IDS)
    assert note.source == gpu_lectures.NOTE.format(**run) and notebook.metadata["gpu_figures"]["whole_run"] is True
    assert provenance_problems(json.loads(nbformat.writes(notebook))) == []


def test_the_prepared_edits_apply_once_and_leave_python():
    """Each edit queued for the next GPU run (scripts/gpu_lectures.py TEXT_EDITS, issue #50) finds its text in exactly
    one cell of its kind in today's lecture, does not find it again once applied (its new text does not contain the
    old), and leaves every code cell valid Python; an edit whose text has gone is reported, not skipped."""
    import ast

    import nbformat
    sys.path.insert(0, str(REPO / "scripts"))
    import gpu_lectures
    assert gpu_lectures.TEXT_EDITS, "issue #50 queued edits for lectures 5, 7, 9 and 10"
    for lecture, cell_type, old, new in gpu_lectures.TEXT_EDITS:
        assert lecture in gpu_lectures.LECTURES and old not in new, (lecture, old)
        notebook = nbformat.read(REPO / "notebooks" / f"{lecture}.ipynb", as_version=4)
        hits = [c for c in notebook.cells if c.cell_type == cell_type and old in c.source]
        assert len(hits) == 1 and hits[0].source.count(old) == 1, (lecture, old)
    for lecture in {edit[0] for edit in gpu_lectures.TEXT_EDITS}:
        notebook = nbformat.read(REPO / "notebooks" / f"{lecture}.ipynb", as_version=4)
        done, problems = gpu_lectures.apply_edits(lecture, notebook)
        assert done and problems == [], (lecture, problems)
        for cell in notebook.cells:
            if cell.cell_type == "code":
                ast.parse(cell.source)
        assert gpu_lectures.apply_edits(lecture, notebook) == ([], [])  # applied already: nothing to do, no problem
    first = gpu_lectures.TEXT_EDITS[0]
    notebook = nbformat.read(REPO / "notebooks" / f"{first[0]}.ipynb", as_version=4)
    for cell in notebook.cells:
        cell.source = cell.source.replace(first[2], "# changed by hand")
    _, problems = gpu_lectures.apply_edits(first[0], notebook)
    assert any("no longer applies" in p for p in problems), problems
