"""Exercise 9 (mixed precision): the references its hidden tests compare with. Instructor-only.

Tasks 1, 3 and 5 are compared with torch itself: the master-weight step with `torch.autocast` (whose fp32 parameters
are master weights, bit for bit), the loss-scale rule with the kernel `torch.amp.GradScaler.update` runs, and the
dtype of each op with `torch.autocast`. Tasks 2 and 4 are compared with these.
"""
from __future__ import annotations

from typing import Sequence

import torch
from jaxtyping import Float
from torch import Tensor


def loss_scaled_step(loss: Float[Tensor, ""], model_params: Sequence[Tensor], master_params: Sequence[Tensor],
                     optimizer: torch.optim.Optimizer, scale: float) -> bool:
    """Task 2: backward of `loss * scale`, unscale in fp32, step the fp32 masters only if every gradient is finite
    (then copy them into the model, rounding); clear every gradient either way; True if it stepped."""
    (loss * scale).backward()
    grads = [param.grad.float() / scale for param in model_params]
    stepped = all(bool(torch.isfinite(grad).all()) for grad in grads)
    if stepped:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)
    for param, master in zip(model_params, master_params):
        param.grad = master.grad = None
    return stepped


def mlp_activation_bytes(batch: int, seq: int, dim: int, hidden: int, dtype: torch.dtype) -> int:
    """Task 4: the inputs of up (dim numbers), GELU and down (hidden each) for every token, stored in `dtype`."""
    return batch * seq * (dim + 2 * hidden) * dtype.itemsize


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import math
import random

import torch.nn.functional as F

import utils.mixed_precision
from reference.hidden import HiddenTest
from utils import cost as _cost
from utils.grading import check_float, check_int, check_str, check_tensor, check_type


def _maker(recipe):
    """An optimizer builder from a plain-data recipe (class name in torch.optim, keyword arguments)."""
    name, kwargs = recipe
    return lambda params: getattr(torch.optim, name)(params, **kwargs)


def _check_list(results: object, count: int, what: str) -> None:
    check_type(results, list, f"{what}: the results handed in")
    check_int(len(results), count, f"{what}: how many results were handed in")


# ---- task 1: the master-weight step against torch.autocast on fp32 parameters (the notebook's visible test, here)
def _prepare(dtype, make_optimizer, seed, steps=5):
    torch.manual_seed(seed)
    model = utils.mixed_precision.MLP(8, 24).to(dtype)
    master = utils.mixed_precision.fp32_master_copy(model.parameters())
    generator = torch.Generator().manual_seed(seed)
    batches = [(torch.randn(6, 8, generator=generator), torch.randn(6, 8, generator=generator)) for _ in range(steps)]
    return model, master, make_optimizer(master), batches


def _autocast_trajectory(dtype, make_optimizer, seed, steps=5):
    model16, _, _, batches = _prepare(dtype, make_optimizer, seed, steps)
    model = utils.mixed_precision.MLP(8, 24)
    with torch.no_grad():
        for p, q in zip(model.parameters(), model16.parameters()):
            p.copy_(q.float())
    optimizer = make_optimizer(list(model.parameters()))
    history = []
    for x, y in batches:
        with torch.autocast("cpu", dtype=dtype):
            out = model(x.to(dtype))
        F.mse_loss(out.float(), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        history.append([p.detach().clone() for p in model.parameters()])
    return history, [v.dtype for s in optimizer.state.values() for v in s.values() if v.dim() > 0]


MASTER_CASES = [(torch.bfloat16, ("AdamW", {"lr": 3e-3}), 10), (torch.bfloat16, ("SGD", {"lr": 0.05, "momentum": 0.9}), 1),
                (torch.float16, ("AdamW", {"lr": 3e-3}), 2), (torch.bfloat16, ("SGD", {"lr": 1e-4}), 3),
                (torch.float16, ("Adam", {"lr": 1e-2, "betas": (0.5, 0.9)}), 4)]


def _master_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "master_weight_step")
    for (dtype, recipe, seed), (want, want_dtypes), got in zip(cases, expected, results):
        label = f"{dtype} model, {recipe[0]}{recipe[1]}, case {seed}"
        check_type(got, tuple, f"the run handed in ({label})")
        check_int(len(got), 2, f"the run handed in ({label})")
        history, got_dtypes = got
        check_type(history, list, f"the steps handed in ({label})")
        check_int(len(history), len(want), f"the steps handed in ({label})")
        for step, (entry, w_params) in enumerate(zip(history, want)):
            check_type(entry, tuple, f"step {step} ({label})")
            check_int(len(entry), 3, f"step {step} ({label})")
            g_master, g_model, g_cleared = entry
            check_type(g_master, list, f"the masters after step {step} ({label})")
            check_type(g_model, list, f"the model after step {step} ({label})")
            check_int(len(g_master), len(w_params), f"the masters after step {step} ({label})")
            check_int(len(g_model), len(w_params), f"the model parameters after step {step} ({label})")
            for index, (gm, wp, gp) in enumerate(zip(g_master, w_params, g_model)):
                what = f"{label}, step {step}, parameter {index}"
                check_tensor(gm, wp, f"master weights against torch.autocast's fp32 parameters ({what})", rtol=1e-5,
                             atol=1e-7, hint="autocast's fp32 parameters are master weights: the same gradients, cast to "
                                             "fp32, reach the same optimizer.")
                check_tensor(gp, gm.to(dtype), f"model weights = master rounded to {dtype} ({what})")
            check_int(int(g_cleared is True), 1, f"every .grad set to None ({label}, step {step})")
        check_str(str(got_dtypes), str(want_dtypes), f"optimizer state dtypes ({label})")


# ---- task 2: loss scaling, against this module's loss_scaled_step
def _tiny_problem(seed=0, n=256, d=32):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=generator)
    return x, x @ (torch.randn(d, d, generator=generator) * 2e-5 / math.sqrt(d))


def _scaled_run(step_fn, make_optimizer, scales, seed, device="cpu", start=0.0, nan_at=None):
    x, target = _tiny_problem(seed)
    x, target = x.to(device), target.to(device)
    w16 = torch.full((32, 32), start, dtype=torch.float16, device=device, requires_grad=True)
    master = [w16.detach().float().clone().requires_grad_()]
    optimizer = make_optimizer(master)
    flags, masters, models, cleared = [], [], [], []
    for step, scale in enumerate(scales):
        loss = F.mse_loss((x.half() @ w16).float(), target)
        if step == nan_at:
            loss = loss * float("nan")
        flags.append(step_fn(loss, [w16], master, optimizer, scale))
        masters.append(master[0].detach().clone())
        models.append(w16.detach().clone())
        cleared.append(w16.grad is None and master[0].grad is None)
    steps_taken = [int(s["step"]) for s in optimizer.state.values() if "step" in s]
    return flags, masters, models, cleared, steps_taken


SCALED_RUNS = [(("SGD", {"lr": 20.0}), [2.0**16] * 4, 0, 0.0, None),
               (("SGD", {"lr": 20.0}), [2.0**10, 2.0**20, 2.0**24, 2.0**16], 1, 0.0, None),
               (("AdamW", {"lr": 1e-4}), [2.0**16, 2.0**40, 2.0**16, 2.0**36, 2.0**16], 2, 0.001, None),
               (("SGD", {"lr": 10.0, "momentum": 0.9}), [2.0**16] * 4, 3, 0.0, 2),
               (("AdamW", {"lr": 1e-4}), [1.0, 1.0, 2.0**16], 4, 0.0, None)]


def _scaled_cases() -> list[dict]:
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    return [dict(run=i, optimizer=recipe, scales=scales, seed=seed, device=device, start=start, nan_at=nan_at)
            for i, (recipe, scales, seed, start, nan_at) in enumerate(SCALED_RUNS) for device in devices]


def _scaled_expected(cases: list[dict]) -> list:
    return [_scaled_run(loss_scaled_step, _maker(c["optimizer"]), c["scales"], c["seed"], c["device"], c["start"],
                        c["nan_at"]) for c in cases]


def _scaled_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "loss_scaled_step")
    for case, want, got in zip(cases, expected, results):
        label = f"run {case['run']} on {case['device']}"
        check_type(got, tuple, f"the run handed in ({label})")
        check_int(len(got), 5, f"the run handed in ({label})")
        for part in got[:4]:
            check_type(part, list, f"the run handed in ({label})")
            check_int(len(part), len(case["scales"]), f"the steps handed in ({label})")
        for step, (g_flag, w_flag) in enumerate(zip(got[0], want[0])):
            what = f"{label}, step {step} (scale {case['scales'][step]:g})"
            check_type(g_flag, bool, f"return value, {what}", hint="return a Python bool: True when the step was taken.")
            check_int(int(g_flag), int(w_flag), f"stepped?, {what}",
                      hint="skip the step when any unscaled gradient holds an inf or a nan.")
            check_tensor(got[1][step], want[1][step], f"master weights, {what}", rtol=1e-6, atol=1e-12,
                         hint="unscale in fp32: divide param.grad.float() by scale.")
            check_tensor(got[2][step], got[1][step].to(torch.float16), f"fp16 model = master rounded, {what}")
            check_int(int(got[3][step] is True), 1, f"all gradients set to None, {what}")
        check_str(str(got[4]), str(want[4]), f"optimizer steps counted in {label}",
                  hint="a skipped step must not call optimizer.step().")


# ---- task 3: the loss-scale rule, against the kernel torch.amp.GradScaler.update runs
def _scale_cases() -> list:
    rng = random.Random(9)
    sequences = []
    for _ in range(60):
        interval = rng.choice([1, 2, 3, 5, 2000])
        scale = rng.choice([1.0, 3.0, 2.0**16, 2.0**-3])
        sequences.append((scale, interval, [rng.random() < 0.3 for _ in range(rng.randint(1, 40))]))
    sequences.append((2.0**16, 2000, [False] * 4500 + [True] + [False] * 10))
    return sequences


def _grad_scaler_trace(scale, interval, infs):
    """(scale, good steps) after each step, from the kernel torch.amp.GradScaler.update runs (growth 2, backoff 0.5)."""
    scale, good_steps, trace = torch.tensor([scale]), torch.zeros(1, dtype=torch.int32), []
    for found_inf in infs:
        torch._amp_update_scale_(scale, good_steps, torch.tensor([float(found_inf)]), 2.0, 0.5, interval)
        trace.append((scale.item(), int(good_steps.item())))
    return trace


def _scale_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "next_loss_scale")
    for (_scale, interval, infs), trace, gots in zip(cases, expected, results):
        check_type(gots, list, "next_loss_scale's results")
        for step, (found_inf, (want_scale, want_good), got) in enumerate(zip(infs, trace, gots)):
            check_type(got, tuple, "next_loss_scale's result", hint="return a tuple (new_scale, new_good_steps).")
            check_int(len(got), 2, "length of next_loss_scale's result")
            what = f"step {step} (found_inf={found_inf}, growth_interval={interval})"
            rule = ("an inf or nan halves the scale (times 0.5) and resets the count to 0" if found_inf else
                    "a good step adds 1 to the count, and the step that brings it to growth_interval doubles the "
                    "scale and resets the count")
            check_float(got[0], want_scale, f"scale after {what}", hint=f"{rule} (lecture 9, section 5).")
            check_int(got[1], want_good, f"good_steps after {what}", hint=f"{rule} (lecture 9, section 5).")
        check_int(len(gots), len(infs), f"steps handed in (growth_interval={interval})")


# ---- task 4: activation bytes, against this module and against what autograd saves
MLP_ARGS = (*_cost.MLP_SHAPE, torch.float32)  # the MLP block the grader runs in the measured part (cost budget)


def _bytes_cases() -> list[dict]:
    rng = random.Random(4)
    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn, torch.float8_e5m2]
    cases = [(rng.randint(1, 64), rng.choice([1, 7, 128, 2048, 8192]), rng.choice([1, 16, 768, 4096, 12288]),
              rng.choice([3, 64, 3072, 11008, 49152]), rng.choice(dtypes)) for _ in range(200)]
    cases += [(1, 1, 1, 1, d) for d in dtypes] + [(0, 5, 7, 9, torch.float32)]
    measured = [(b, s, d, h, dtype) for b, s, d, h in [(2, 3, 4, 5), (1, 7, 8, 16), (3, 2, 6, 10)]
                for dtype in (torch.float32, torch.bfloat16)]
    cases.insert(rng.randrange(len(cases) + 1), MLP_ARGS)  # the prediction the cost budget checks against the machine
    return [dict(args=case, measured=False) for case in cases] + [dict(args=case, measured=True) for case in measured]


def _measured_bytes(batch, seq, dim, hidden, dtype) -> int:
    """What autograd really saves, on a small MLP: an fp32 model, or an fp32 model under bf16 autocast."""
    torch.manual_seed(0)
    block = utils.mixed_precision.MLP(dim, hidden)
    x = torch.randn(batch, seq, dim)

    def forward():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            block(x)
    return utils.mixed_precision.saved_activation_bytes(forward, list(block.parameters()))


def _bytes_expected(cases: list[dict]) -> list[int]:
    return [_measured_bytes(*c["args"]) if c["measured"] else mlp_activation_bytes(*c["args"]) for c in cases]


def _bytes_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "mlp_activation_bytes")
    for case, want, got in zip(cases, expected, results):
        what = f"mlp_activation_bytes{case['args']}" + (" against the bytes autograd saved" if case["measured"] else "")
        check_int(got, want, what, hint="per token autograd keeps the input of up, of GELU and of down, each as wide "
                                        "as that layer's input, in the dtype's bytes; a Python int "
                                        "(lecture 9, section 6).", explain=_activation_slips(case["args"], want))


def _activation_slips(args: tuple, want: int):
    """What a wrong count of mlp_activation_bytes gives (utils.diagnosis): the three saved tensors as parts, what is
    saved that does not count (the weights, the output), the bytes per element."""
    from utils.diagnosis import Factor, Part, slips
    batch, seq, dim, hidden, dtype = args
    tokens, size = batch * seq, dtype.itemsize
    parts = [Part("the input of up (batch, seq, dim)", tokens * dim * size),
             Part("GELU's input (batch, seq, hidden)", tokens * hidden * size, "GELU's derivative needs its input"),
             Part("down's input (batch, seq, hidden)", tokens * hidden * size),
             Part("the weights of up and down", 2 * dim * hidden * size, "they are parameters, not activations",
                  counts=False),
             Part("down's output (batch, seq, dim)", tokens * dim * size, "nothing keeps the output for backward",
                  counts=False)]
    factors = [Factor(f"{size} bytes per element of {dtype}", size)] + ([Factor("4 bytes (fp32)", 4)] if size != 4 else [])
    quantities = [Factor("dim", dim), Factor("hidden", hidden)]
    return slips(want, parts, factors, 0, "count", quantities)


# ---- task 5: autocast's output dtypes, measured with torch.autocast
def _autocast_cases() -> list[tuple]:
    return [(op, d) for op in utils.mixed_precision.AUTOCAST_PROBES
            for d in (torch.float32, torch.bfloat16, torch.float16, torch.float64)]


def _autocast_check(cases, expected, results) -> None:
    _check_list(results, len(cases), "autocast_dtype")
    for (op, input_dtype), want, got in zip(cases, expected, results):
        check_type(got, torch.dtype, f"autocast_dtype({op!r}, {input_dtype})",
                   hint="return a torch.dtype such as torch.bfloat16.")
        check_str(str(got), str(want), f"autocast_dtype({op!r}, {input_dtype})",
                  hint="matmul-like ops run in bf16, losses and prod in fp32, the rest follows the input; fp64 stays.")


HIDDEN_TESTS = {
    "master_weight_step": HiddenTest(
        cases=lambda: list(MASTER_CASES),
        expected=lambda cases: [_autocast_trajectory(dtype, _maker(recipe), seed) for dtype, recipe, seed in cases],
        check=_master_check),
    "loss_scaled_step": HiddenTest(cases=_scaled_cases, expected=_scaled_expected, check=_scaled_check),
    "next_loss_scale": HiddenTest(cases=_scale_cases,
                                  expected=lambda cases: [_grad_scaler_trace(*c) for c in cases], check=_scale_check),
    "mlp_activation_bytes": HiddenTest(cases=_bytes_cases, expected=_bytes_expected, check=_bytes_check),
    "autocast_dtype": HiddenTest(
        cases=_autocast_cases,
        expected=lambda cases: [utils.mixed_precision.autocast_output_dtype(op, d) for op, d in cases],
        check=_autocast_check),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import GIB_FOR_GB, within_percent

HIDDEN_TESTS["mixed_adamw_gb"] = napkin_test(
    {'parameters': 7000000000},
    lambda parameters, parameter_bytes, gradient_bytes, master_bytes, first_moment_bytes, second_moment_bytes, bytes_per_gb: parameters * (parameter_bytes + gradient_bytes + master_bytes + first_moment_bytes + second_moment_bytes) / bytes_per_gb,
    "mixed_adamw_gb", "GB", within_percent(5),
    {**GIB_FOR_GB, 0.75: "12 bytes per parameter: the fp32 master weights left out, or one of AdamW's two fp32 moments? "
                         "Mixed precision keeps bf16 parameters and gradients (2 + 2 bytes) and fp32 master weights, m "
                         "and v (4 + 4 + 4).", 0.5: "everything in bf16? Only the parameters and gradients are; the master weights and both moments are fp32."},
    conventions={"parameter_bytes": (2, "the 2 bytes of each bf16 parameter"), "gradient_bytes": (2, "the 2 bytes of its bf16 gradient"),
                 "master_bytes": (4, "the 4 bytes of its fp32 master weight"), "first_moment_bytes": (4, "the 4 bytes of AdamW's first moment m"),
                 "second_moment_bytes": (4, "the 4 bytes of AdamW's second moment v"), "bytes_per_gb": (1e9, "the 10^9 bytes of a GB")})

# ---- cost budgets (issues #52, #60): measured by the grader from outside the notebook process, on the hidden test's
# own part: the student's function on every hidden case, and the forward pass of an MLP block (the first half of a
# training step) whose shape is one of them. The forward keeps the activations autograd saves, plus its output: the
# input of up is x itself, made before the part, and the output is as large as x, so the new memory is what
# mlp_activation_bytes counts, and the student's result for that case (checked by the hidden test too) must match it.
from reference.hidden import CostBudget

COST_BUDGETS = [CostBudget(
    key="mixed_precision.mlp_activation_bytes",
    what=f"down(F.gelu(up(x))) in fp32, x of shape {MLP_ARGS[:3]}, hidden {MLP_ARGS[3]}, with autograd recording",
    predicted_case=[case["args"] for case in _bytes_cases()].index(MLP_ARGS), tolerance=_cost.MLP_TOLERANCE,
    hint="autograd keeps the input of up, of GELU and of down until backward; the output is as large as x "
         "(lecture 9, section 6).")]
