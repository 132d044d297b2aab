"""utils.mixed_precision, exercise 9's references and its instructor's solutions against torch: autocast and
GradScaler are the oracles (the hidden tests rely on them), saved tensors are measured."""
import math
import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import utils.mixed_precision
from reference.floats import cast_outcome
from reference.mixed_precision import loss_scaled_step, mlp_activation_bytes
from utils.floats import BF16, FP16
from utils.memory import bytes_per_param
from utils.mixed_precision import (
    AUTOCAST_PROBES,
    MLP,
    autocast_output_dtype,
    fp32_master_copy,
    saved_activation_bytes,
    saved_tensors,
    underflow_fraction,
)

SOURCE = Path(__file__).resolve().parent.parent / "source" / "09_mixed_precision" / "09_mixed_precision.ipynb"


def solution(name: str):
    """The instructor's solution of task `name` in exercise 9 (the hidden tests compare it with torch)."""
    cell = next(c for c in nbformat.read(SOURCE, as_version=4).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == name)
    namespace = {"torch": torch, "math": math}
    exec(re.sub(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", "", cell.source, flags=re.MULTILINE), namespace)
    return namespace[name]


master_weight_step = solution("master_weight_step")
next_loss_scale = solution("next_loss_scale")

LOWER_PRECISION_OPS = {"matmul", "linear", "bmm", "conv1d", "scaled_dot_product_attention"}
FP32_OPS = {"cross_entropy", "mse_loss", "nll_loss", "prod"}


def test_master_copy_is_fp32_and_independent():
    model = MLP(4, 8).to(torch.bfloat16)
    master = fp32_master_copy(model.parameters())
    for p, m in zip(model.parameters(), master):
        assert m.dtype == torch.float32 and m.requires_grad and m.is_leaf
        assert torch.equal(m, p.float()) and m.data_ptr() != p.data_ptr()


def test_master_weight_step_follows_autocast_on_fp32_parameters():
    """bf16 model + fp32 master copy == fp32 model under bf16 autocast: autocast's fp32 params are master weights."""
    torch.manual_seed(0)
    model = MLP(8, 16).to(torch.bfloat16)
    master = fp32_master_copy(model.parameters())
    reference = MLP(8, 16)  # starts from the same (bf16-representable) values as the master copy
    with torch.no_grad():
        for r, m in zip(reference.parameters(), master):
            r.copy_(m)
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.1)
    opt = torch.optim.AdamW(master, lr=1e-2, weight_decay=0.1)
    for _ in range(5):
        x, y = torch.randn(6, 8), torch.randn(6, 8)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ref_loss = F.mse_loss(reference(x), y)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
        F.mse_loss(model(x.to(torch.bfloat16)).float(), y).backward()
        master_weight_step(list(model.parameters()), master, opt)
        for r, m, p in zip(reference.parameters(), master, model.parameters()):
            torch.testing.assert_close(m, r, rtol=0, atol=0)
            torch.testing.assert_close(p, r.to(torch.bfloat16), rtol=0, atol=0)
            assert p.grad is None and m.grad is None
    assert all(s["exp_avg"].dtype == torch.float32 for s in opt.state.values())


def test_master_weights_keep_updates_that_bf16_rounds_away():
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.bfloat16))
    master = fp32_master_copy([w])
    opt = torch.optim.SGD(master, lr=1.0)
    for _ in range(128):
        (w * -(2**-10)).sum().backward()  # gradient -2^-10, exact in bf16
        master_weight_step([w], master, opt)
    assert master[0][0].item() == w[0].item() == 1 + 128 * 2**-10 == 1.125
    plain = torch.ones(3, dtype=torch.bfloat16)
    for _ in range(128):
        plain += 2**-10  # below half of bf16's gap at 1.0 (2^-8): rounded away every time
    assert plain[0].item() == 1.0


def regression(dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 32, generator=generator)
    target = x @ (torch.randn(32, 32, generator=generator) * 1e-3 / 32**0.5)
    return x, target


@pytest.mark.parametrize("scale", [1.0, 2.0**10, 2.0**16])
def test_loss_scaled_step_matches_grad_scaler_under_fp16_autocast(scale):
    x, target = regression(torch.float16)
    reference = torch.nn.Parameter(torch.zeros(32, 32))
    ref_opt = torch.optim.SGD([reference], lr=20.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=scale, growth_interval=10**6)
    w16 = torch.nn.Parameter(torch.zeros(32, 32, dtype=torch.float16))
    master = fp32_master_copy([w16])
    opt = torch.optim.SGD(master, lr=20.0)
    for _ in range(4):
        with torch.autocast("cpu", dtype=torch.float16):
            ref_loss = F.mse_loss(x @ reference, target)
        scaler.scale(ref_loss).backward()
        scaler.step(ref_opt)
        scaler.update()
        ref_opt.zero_grad()
        loss = F.mse_loss((x.to(torch.float16) @ w16).float(), target)
        assert loss_scaled_step(loss, [w16], master, opt, scale) is True
        torch.testing.assert_close(master[0], reference.detach(), rtol=0, atol=0)
    assert master[0].abs().max() > 0


def test_without_scaling_tiny_gradients_are_exactly_zero_in_fp16():
    x, target = regression(torch.float16)
    target = target / 64  # residuals ~1.5e-5: each d(loss)/d(output) is below half of fp16's smallest subnormal
    exact = torch.zeros(32, 32, requires_grad=True)
    F.mse_loss(x @ exact, target).backward()
    for scale, expect_zero in [(1.0, True), (2.0**16, False)]:
        w16 = torch.nn.Parameter(torch.zeros(32, 32, dtype=torch.float16))
        master = fp32_master_copy([w16])
        loss_scaled_step(F.mse_loss((x.to(torch.float16) @ w16).float(), target), [w16], master,
                         torch.optim.SGD(master, lr=1.0), scale)
        update = -master[0].detach()  # lr 1 from 0: the master moved by minus the unscaled gradient
        if expect_zero:
            assert torch.equal(update, torch.zeros(32, 32))
        else:
            torch.testing.assert_close(update, exact.grad, rtol=2e-2, atol=1e-9)


def test_loss_scaled_step_skips_on_inf_like_grad_scaler():
    x, target = regression(torch.float16)
    w16 = torch.nn.Parameter(torch.full((32, 32), 0.01, dtype=torch.float16))
    master = fp32_master_copy([w16])
    opt = torch.optim.AdamW(master, lr=0.1)
    loss = F.mse_loss((x.to(torch.float16) @ w16).float(), target)
    assert loss_scaled_step(loss, [w16], master, opt, 2.0**40) is False
    assert torch.equal(master[0], torch.full((32, 32), 0.01, dtype=torch.float16).float())
    assert w16.grad is None and master[0].grad is None and len(opt.state) == 0

    reference = torch.nn.Parameter(torch.full((32, 32), 0.01, dtype=torch.float16).float())
    ref_opt = torch.optim.AdamW([reference], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40)
    with torch.autocast("cpu", dtype=torch.float16):
        scaler.scale(F.mse_loss(x @ reference, target)).backward()
    scaler.step(ref_opt)
    scaler.update()
    assert torch.equal(reference.detach(), master[0].detach()) and scaler.get_scale() == 2.0**39


@given(st.lists(st.booleans(), min_size=1, max_size=25), st.integers(1, 5),
       st.sampled_from([1.0, 2.0**16, 3.0]))
@settings(max_examples=30, deadline=None)
def test_next_loss_scale_follows_grad_scaler(infs, interval, init_scale):
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=interval)
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.0)
    scale, good = init_scale, 0
    for found_inf in infs:
        scaler.scale(torch.zeros(()))  # GradScaler wants scale() called before step()
        param.grad = torch.tensor([math.inf if found_inf else 1.0])
        scaler.step(opt)
        scaler.update()
        scale, good = next_loss_scale(scale, found_inf, good, interval)
        assert scale == scaler.get_scale() and good == scaler._get_growth_tracker()


@given(st.lists(st.booleans(), min_size=1, max_size=25), st.integers(1, 5), st.sampled_from([1.0, 2.0**16, 3.0]))
@settings(max_examples=30, deadline=None)
def test_the_kernel_the_hidden_tests_use_is_what_grad_scaler_update_runs(infs, interval, init_scale):
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=interval)
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=0.0)
    scale, good = torch.tensor([init_scale]), torch.zeros(1, dtype=torch.int32)
    for found_inf in infs:
        scaler.scale(torch.zeros(()))
        param.grad = torch.tensor([math.inf if found_inf else 1.0])
        scaler.step(opt)
        scaler.update()
        torch._amp_update_scale_(scale, good, torch.tensor([float(found_inf)]), 2.0, 0.5, interval)
        assert scale.item() == scaler.get_scale() and int(good.item()) == scaler._get_growth_tracker()


def test_grad_scaler_works_on_cpu_with_fp16_autocast():
    scaler = torch.amp.GradScaler("cpu")
    assert scaler.is_enabled() and scaler.get_scale() == 2.0**16


SMALL_FLOATS = st.builds(lambda m, e, sign: sign * m * 2.0**e, st.floats(0.5, 1.0), st.integers(-45, -5),
                         st.sampled_from([1.0, -1.0, 0.0]))


@given(st.lists(SMALL_FLOATS, min_size=1, max_size=50))
@settings(max_examples=200, deadline=None)
def test_underflow_fraction_agrees_with_the_rounding_rule(values):
    tensor = torch.tensor(values, dtype=torch.float32)
    for fmt in (FP16, BF16):
        nonzero = [v for v in tensor.tolist() if v != 0]
        expected = sum(cast_outcome(v, fmt) == "underflow" for v in nonzero) / len(nonzero) if nonzero else 0.0
        assert underflow_fraction(tensor, fmt.dtype) == pytest.approx(expected, abs=1e-12)


def test_underflow_fraction_examples():
    g = torch.tensor([1e-3, 1e-6, 1e-8, 1e-9, 0.0])
    assert underflow_fraction(g, torch.float16) == 0.5
    assert underflow_fraction(g, torch.bfloat16) == 0.0
    assert underflow_fraction(g * 2**16, torch.float16) == 0.0
    assert underflow_fraction(torch.zeros(3), torch.float16) == 0.0


@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 12), st.integers(1, 20))
@settings(max_examples=40, deadline=None)
def test_mlp_activation_bytes_match_what_autograd_saves(batch, seq, dim, hidden):
    torch.manual_seed(0)
    model = MLP(dim, hidden)
    x = torch.randn(batch, seq, dim)
    params = list(model.parameters())
    assert saved_activation_bytes(lambda: model(x), params) == mlp_activation_bytes(batch, seq, dim, hidden,
                                                                                      torch.float32)

    def autocast_forward():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            model(x)
    assert saved_activation_bytes(autocast_forward, params) == mlp_activation_bytes(batch, seq, dim, hidden,
                                                                                      torch.bfloat16)
    for dtype in (torch.bfloat16, torch.float16):
        low = MLP(dim, hidden).to(dtype)
        measured = saved_activation_bytes(lambda low=low, dtype=dtype: low(x.to(dtype)), list(low.parameters()))
        assert measured == mlp_activation_bytes(batch, seq, dim, hidden, dtype)


def test_saved_tensors_include_weights_which_activation_bytes_leave_out():
    model = MLP(8, 32)
    x = torch.randn(2, 5, 8)
    saved = saved_tensors(lambda: model(x))
    assert any(t is model.down.weight for t in saved)
    total = sum(t.numel() * t.element_size() for t in saved)
    assert total - saved_activation_bytes(lambda: model(x), list(model.parameters())) == 32 * 8 * 4


def test_what_autograd_saves_can_be_measured_on_the_meta_device():
    with torch.device("meta"):
        model = MLP(4096, 11008)
        x = torch.empty(8, 2048, 4096)
    for dtype in (torch.float32, torch.bfloat16):
        low, x_low = model.to(dtype), x.to(dtype)
        assert saved_activation_bytes(lambda low=low, x_low=x_low: low(x_low), list(low.parameters())) == \
            mlp_activation_bytes(8, 2048, 4096, 11008, dtype)


def test_utils_holds_no_answer_to_exercise_9():
    for name in ("master_weight_step", "loss_scaled_step", "next_loss_scale", "mlp_activation_bytes"):
        assert not hasattr(utils.mixed_precision, name), name


@pytest.mark.parametrize("op", sorted(AUTOCAST_PROBES))
def test_cpu_autocast_follows_three_rules(op):
    for input_dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        got = autocast_output_dtype(op, input_dtype)
        if input_dtype == torch.float64:
            expected = torch.float64  # autocast never touches fp64
        elif op in LOWER_PRECISION_OPS:
            expected = torch.bfloat16
        elif op in FP32_OPS:
            expected = torch.float32
        else:
            expected = input_dtype
        assert got == expected, (op, input_dtype, got)


def test_autocast_keeps_parameters_and_their_gradients_fp32():
    model = MLP(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(torch.randn(3, 4))
        loss = F.mse_loss(out, torch.zeros(3, 4))
    loss.backward()
    assert out.dtype == torch.bfloat16 and loss.dtype == torch.float32
    assert all(p.dtype == torch.float32 and p.grad.dtype == torch.float32 for p in model.parameters())


def test_sixteen_bytes_per_parameter_with_or_without_mixed_precision():
    model = MLP(16, 64).to(torch.bfloat16)
    master = fp32_master_copy(model.parameters())
    opt = torch.optim.AdamW(master)
    F.mse_loss(model(torch.randn(2, 16, dtype=torch.bfloat16)).float(), torch.zeros(2, 16)).backward()
    grads_bytes = sum(p.grad.nbytes for p in model.parameters())
    master_weight_step(list(model.parameters()), master, opt)
    params = sum(p.numel() for p in model.parameters())
    held = (sum(p.nbytes for p in model.parameters()) + grads_bytes + sum(m.nbytes for m in master)
            + sum(v.nbytes for s in opt.state.values() for v in s.values() if v.dim() > 0))
    assert held == params * bytes_per_param("adamw", torch.bfloat16, master_weights=True) == 16 * params
