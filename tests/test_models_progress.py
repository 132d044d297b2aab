"""The shared models: parameter counts, shapes, and the initialization that keeps activations O(1)."""
import contextlib
import io

import torch

from utils.models import DeepLinear, Linear, TinyLM, count_params
from utils.progress import progress


def test_parameter_counts():
    assert count_params(Linear(3, 5)) == 15
    assert count_params(DeepLinear(8, 2, 3)) == 2 * 64 + 24
    assert count_params(TinyLM(10, 4, 6)) == 40 + 24 + 60


def test_outputs_keep_unit_scale_with_width():
    torch.manual_seed(0)
    for width in (64, 4096):
        y = Linear(width, 256)(torch.randn(512, width))
        assert 0.9 < y.std().item() < 1.1, width


def test_tiny_lm_shapes():
    logits = TinyLM(11, 4, 6)(torch.randint(0, 11, (2, 7)))
    assert logits.shape == (2, 7, 11)


def test_progress_outside_a_notebook_or_terminal_draws_nothing():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert list(progress(range(3), "steps")) == [0, 1, 2]
    assert out.getvalue() == "" and err.getvalue() == ""


def test_progress_leaves_no_bar_in_a_stored_notebook(tmp_path):
    """In a kernel the line updates in place and is blanked at the end: the stored cell shows only the results."""
    import json

    import nbformat
    from nbclient import NotebookClient
    code = ("import time\nfrom utils.progress import progress\n"
            "for step in progress(range(4), 'steps'):\n    time.sleep(0.3)\nprint('done')")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(notebook, timeout=120, kernel_name="cs336-primitives",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[0].outputs
    assert "steps" not in json.dumps(outputs) and any(o.get("text") == "done\n" for o in outputs)
