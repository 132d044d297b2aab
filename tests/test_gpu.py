"""What only a CUDA GPU can confirm: the course's memory predictions against the real allocator, and that the
sandboxed grader gives notebooks the GPU. Skipped, with the reason, without CUDA; `make test-gpu` runs them.
(Speed and MFU on the GPU are measured in bench/gpu_figures.py, never asserted here.)"""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from reference.tensors_on_gpu import allocated_bytes
from utils.memory import deep_linear_activation_bytes, training_memory
from utils.models import DeepLinear
from utils.transfer import default_caching_allocator, measured_allocated_bytes

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run `make test-gpu` on one)")

SPECS = [((32, 32), torch.float32), ((32, 32), torch.float32), ((1,), torch.float32), ((129,), torch.float32),
         ((3, 5, 7), torch.bfloat16), ((1000,), torch.int8), ((0,), torch.float32), ((512, 512), torch.float16)]


def test_memory_allocated_grows_as_predicted_including_rounding():
    assert default_caching_allocator(), "a non-default allocator config changes the rounding rule"
    assert measured_allocated_bytes([((32, 32), torch.float32)] * 2) == 8192
    for spec in SPECS:
        assert measured_allocated_bytes([spec]) == allocated_bytes([spec]), spec
    assert measured_allocated_bytes(SPECS) == allocated_bytes(SPECS)


def test_peak_memory_of_a_training_step_is_within_5_percent_of_the_prediction():
    """Second AdamW step of a DeepLinear (the optimizer state exists from the first): the peak of
    torch.cuda.max_memory_allocated against utils.memory's params + grads + state + activations, plus the input.

    One more thing is held on a GPU and is not the model's: cuBLAS's workspaces (cuBLAS and cuBLASLt each keep one,
    up to 32 MiB on Hopper). They are measured, not guessed: what is allocated at the start of step 2 beyond the
    parameters, the AdamW state and the input (the gradients were just freed by zero_grad)."""
    dim, layers, out, batch = 2048, 16, 256, 64
    torch.manual_seed(0)
    model = DeepLinear(dim, layers, out).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    x = torch.randn(batch, dim, device="cuda")
    for step in range(2):
        optimizer.zero_grad(set_to_none=True)
        if step == 1:
            torch.cuda.synchronize()
            held = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        model(x).pow(2).mean().backward()
        optimizer.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    memory = training_memory(model, "adamw", deep_linear_activation_bytes(dim, layers, out, batch))
    input_bytes = x.numel() * x.element_size()
    workspace = held - memory.params - memory.optimizer_state - input_bytes
    assert 0 <= workspace <= 128 * 2**20, f"unexpected bytes held between steps: {workspace:,}"
    predicted = memory.total + input_bytes + workspace
    assert abs(peak - predicted) <= 0.05 * predicted, \
        f"peak {peak:,} vs predicted {predicted:,} ({memory}, input {input_bytes:,}, workspace {workspace:,})"


def in_sandbox(code: str) -> dict:
    """The reply of a cell run as `python -m autograder.grade` runs one: in a notebook process forked from the zygote,
    a fresh interpreter that never initialises CUDA (a fork of a process that has cannot use it)."""
    probe = textwrap.dedent("""
        import json, sys
        from autograder.course import REPO_ROOT, Course
        from autograder.grader.notebooks import NotebookProcess, Zygote
        from autograder.limits import load_limits
        from autograder.outcome import CellKind
        zygote = Zygote([REPO_ROOT], Course.load(REPO_ROOT).imports())
        try:
            process = NotebookProcess(zygote, 0, load_limits())
            try:
                reply = process.run(CellKind.SETUP, sys.argv[1], 120)
            finally:
                process.kill()
        finally:
            zygote.close()
        print(json.dumps({"ok": reply.ok, "error": reply.error, "output": reply.output}))
    """)
    result = subprocess.run([sys.executable, "-c", probe, code], capture_output=True, text=True, timeout=300,
                            cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_graders_sandbox_gives_notebooks_the_gpu():
    """Each notebook initialises CUDA in its own process (before Landlock: walls.open_gpu)."""
    reply = in_sandbox("import torch\nassert torch.cuda.is_available()\n"
                       "print((torch.ones(4, device='cuda') * 2).sum().item())")
    assert reply["ok"], reply["error"]
    assert reply["output"].strip() == "8.0"


def test_with_cuda_started_the_walls_still_hold():
    """From a student's side on a GPU machine: CUDA starts before Landlock, and after it the notebook still cannot read
    the instructor's references or write into the course."""
    reply = in_sandbox(textwrap.dedent(f"""
        import torch
        assert (torch.ones(4, device="cuda") * 2).sum().item() == 8.0
        reached = []
        for what, path, mode in (("read", {str(REPO / "reference" / "hidden.py")!r}, "r"),
                                 ("write", {str(REPO / "leaked.txt")!r}, "w")):
            try:
                with open(path, mode) as f:
                    f.read() if mode == "r" else f.write("x")
                reached.append(what + " " + path)
            except OSError:
                pass
        print("reached:", reached)
    """))
    assert reply["ok"], reply["error"]
    assert reply["output"].strip() == "reached: []"
    assert not (REPO / "leaked.txt").exists()
