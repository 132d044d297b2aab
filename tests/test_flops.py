"""utils.flops against torch: FLOP counts from FlopCounterMode, bytes from real tensors, and the napkin numbers; and
exercise 5's instructor-only references (reference.flops_mfu), which the hidden tests compare with."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.flops_mfu import matmul_mfu, roofline_seconds, training_days
from utils.flops import (
    SECONDS_PER_DAY,
    arithmetic_intensity,
    attention_training_flops,
    bound,
    count_flops,
    elementwise_bytes,
    linear_flops,
    matmul_bytes,
    matmul_flops,
    ridge_point,
)
from utils.hardware import MEMORY_BANDWIDTH, memory_bandwidth, peak_flops
from utils.models import DeepLinear, count_params

H100 = "NVIDIA H100 80GB HBM3"
dims = st.integers(min_value=1, max_value=64)
big_dims = st.integers(min_value=1, max_value=100_000)


def meta(*shape, dtype=torch.float32, requires_grad=False):
    return torch.empty(*shape, device="meta", dtype=dtype, requires_grad=requires_grad)


def nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def training_step(model, x):
    model(x).sum().backward()


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(st.integers(1, 5), max_size=2), m=big_dims, k=big_dims, n=big_dims)
def test_matmul_flops_match_flop_counter_on_meta(batch, m, k, n):
    counted = count_flops(torch.matmul, meta(*batch, m, k), meta(k, n))
    assert counted == math.prod(batch) * matmul_flops(m, k, n)


@settings(max_examples=100, deadline=None)
@given(tokens=dims, d_in=dims, d_out=dims)
def test_linear_flops_match_a_real_linear_layer(tokens, d_in, d_out):
    layer = torch.nn.Linear(d_in, d_out, bias=True)  # the bias add is elementwise: not counted, not in the formula
    assert count_flops(layer, torch.randn(tokens, d_in)) == linear_flops(tokens, d_in, d_out)


def test_flop_counter_blind_spots_the_notebook_warns_about():
    v, a = torch.randn(50), torch.randn(50, 50)
    assert count_flops(torch.dot, v, v) == count_flops(torch.mv, a, v) == count_flops(torch.relu, a) == 0
    q = torch.randn(1, 2, 8, 4)
    assert count_flops(F.scaled_dot_product_attention, q, q, q) == 0  # real CPU tensors: not counted
    qm = meta(1, 2, 8, 4)
    assert count_flops(F.scaled_dot_product_attention, qm, qm, qm) == 2 * 2 * matmul_flops(8, 4, 8)


@settings(max_examples=40, deadline=None)
@given(dim=dims, layers=st.integers(0, 4), out=dims, tokens=dims)
def test_forward_and_training_flops_of_a_deep_linear_model(dim, layers, out, tokens):
    with torch.device("meta"):
        model = DeepLinear(dim=dim, num_layers=layers, out_features=out)
    params = count_params(model)
    assert count_flops(model, meta(tokens, dim)) == 2 * tokens * params
    # 6 x tokens x params is exact when the input needs its gradient too; otherwise the first layer's input-grad
    # matmul is skipped.
    assert count_flops(training_step, model, meta(tokens, dim, requires_grad=True)) == 6 * tokens * params
    first_out = dim if layers else out
    skipped = 6 * tokens * params - count_flops(training_step, model, meta(tokens, dim))
    assert skipped == matmul_flops(tokens, dim, first_out)


@pytest.mark.parametrize("batch, seq, d_model, heads", [(1, 8, 16, 2), (2, 128, 64, 4), (3, 1024, 32, 1)])
def test_attention_training_flops_match_sdpa_on_meta(batch, seq, d_model, heads):
    q, k, v = (meta(batch, heads, seq, d_model // heads, requires_grad=True) for _ in range(3))

    def attention_step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    assert count_flops(attention_step) == attention_training_flops(batch, seq, d_model)


def test_the_course_napkin_numbers():
    h100 = peak_flops(H100, torch.bfloat16)
    assert 6 * 70 * 10**9 * 15 * 10**12 == 63 * 10**23
    assert 1024 * h100 * 0.5 * SECONDS_PER_DAY == pytest.approx(4.38e22, rel=1e-3)
    assert training_days(70e9, 15e12, 1024, h100, 0.5) == pytest.approx(143.9, abs=0.05)
    assert 14 * 8 * h100 * SECONDS_PER_DAY == pytest.approx(9.58e21, rel=1e-3)  # at the peak (MFU 1)
    assert 14 * 8 * h100 * 0.5 * SECONDS_PER_DAY == pytest.approx(4.79e21, rel=1e-3)
    assert matmul_mfu(4096, 4096, 4096, 0.2e-3, H100, torch.bfloat16) == pytest.approx(0.69449, abs=1e-5)
    assert matmul_mfu(4096, 4096, 4096, 0.2e-3, "cpu", torch.bfloat16) is None
    assert ridge_point(h100, memory_bandwidth(H100)) == pytest.approx(295.37, abs=0.01)
    assert SECONDS_PER_DAY == 86_400


@settings(max_examples=200, deadline=None)
@given(params=st.integers(1, 10**12), tokens=st.integers(1, 10**14), gpus=st.integers(1, 100_000),
       utilization=st.floats(0.01, 1.0))
def test_training_days_times_daily_throughput_is_the_work(params, tokens, gpus, utilization):
    peak = peak_flops(H100, torch.bfloat16)
    days = training_days(params, tokens, gpus, peak, utilization)
    assert days * gpus * peak * utilization * SECONDS_PER_DAY == pytest.approx(6 * params * tokens, rel=1e-12)
    assert training_days(params, tokens, 2 * gpus, peak, utilization) == pytest.approx(days / 2, rel=1e-12)


@settings(max_examples=100, deadline=None)
@given(m=big_dims, k=big_dims, n=big_dims, dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float8_e4m3fn]))
def test_matmul_bytes_are_the_bytes_of_its_tensors(m, k, n, dtype):
    a, b = meta(m, k, dtype=dtype), meta(k, n, dtype=dtype)
    assert matmul_bytes(m, k, n, dtype.itemsize) == nbytes(a, b, torch.empty(m, n, device="meta", dtype=dtype))


@settings(max_examples=100, deadline=None)
@given(numel=big_dims, dtype=st.sampled_from([torch.float32, torch.bfloat16]), inputs=st.integers(1, 3))
def test_elementwise_bytes_are_the_bytes_of_its_tensors(numel, dtype, inputs):
    xs = [meta(numel, dtype=dtype) for _ in range(inputs)]
    out = xs[0] if inputs == 1 else torch.stack(xs).sum(0)
    assert elementwise_bytes(numel, dtype.itemsize, inputs) == nbytes(*xs, out)


@settings(max_examples=300, deadline=None)
@given(intensity=st.floats(1e-3, 1e5), peak=st.floats(1e9, 1e16), bandwidth=st.floats(1e9, 1e13))
def test_roofline_is_the_slower_of_memory_and_arithmetic(intensity, peak, bandwidth):
    attainable = min(peak, intensity * bandwidth)  # FLOP/s: the roofline
    expected = "compute-bound" if attainable == peak else "memory-bound"
    if not math.isclose(intensity, ridge_point(peak, bandwidth), rel_tol=1e-12):  # exactly on the ridge: either
        assert bound(intensity, peak, bandwidth) == expected
    # `intensity` FLOPs on 1 byte take max(FLOPs / peak, bytes / bandwidth) seconds: the roofline's rate.
    seconds = roofline_seconds([(intensity, 1.0)], peak, bandwidth)
    assert intensity / seconds == pytest.approx(attainable, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.floats(1, 1e15), st.floats(1, 1e12)), min_size=1, max_size=6),
       peak=st.floats(1e9, 1e16), bandwidth=st.floats(1e9, 1e13))
def test_roofline_seconds_add_up_and_fusing_never_costs_time(ops, peak, bandwidth):
    total = roofline_seconds(ops, peak, bandwidth)
    assert total == pytest.approx(sum(roofline_seconds([op], peak, bandwidth) for op in ops), rel=1e-12)
    assert all(roofline_seconds([op], peak, bandwidth) >= max(op[0] / peak, op[1] / bandwidth) for op in ops)
    # One op doing all the FLOPs while moving only the first op's bytes (a fusion) is never slower.
    fused = (sum(flops for flops, _ in ops), ops[0][1])
    assert roofline_seconds([fused], peak, bandwidth) <= total * (1 + 1e-12)


def test_intensities_of_the_lecture_ops_on_an_h100():
    peak, bandwidth = peak_flops(H100, torch.bfloat16), memory_bandwidth(H100)
    relu = arithmetic_intensity(2**20, elementwise_bytes(2**20, 2))
    square = arithmetic_intensity(matmul_flops(4096, 4096, 4096), matmul_bytes(4096, 4096, 4096, 2))
    assert relu == 0.25 and square == pytest.approx(4096 / 3)
    assert bound(relu, peak, bandwidth) == "memory-bound" and bound(square, peak, bandwidth) == "compute-bound"
    small = arithmetic_intensity(matmul_flops(886, 886, 886), matmul_bytes(886, 886, 886, 2))
    assert bound(small, peak, bandwidth) == "memory-bound"


def test_bandwidth_table_covers_the_peak_table():
    assert memory_bandwidth(H100) == 3.35e12 and memory_bandwidth("NVIDIA A100-SXM4-80GB") == 2.039e12
    assert memory_bandwidth("cpu") is None and memory_bandwidth("Intel Arc") is None
    assert all(1e11 < b < 1e13 for b in MEMORY_BANDWIDTH.values())


# ---- exercise 5: later tasks that earn their points after a wrong task 1
LATER_TASKS_CALLING_TASK_1 = {
    "matmul_flop_count": '''
def matmul_flop_count(a_shape, b_shape):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    return math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b))) * m * k * n  # forgot the 2
''',
    "linear_model_flops": '''
def linear_model_flops(batch_shape, widths, training=False):
    forward = sum(matmul_flop_count((*batch_shape, d_in), (d_in, d_out)) for d_in, d_out in zip(widths, widths[1:]))
    if not training:
        return forward
    return 3 * forward - matmul_flop_count((math.prod(batch_shape), widths[0]), (widths[0], widths[1]))
''',
    "matmul_mfu": '''
def matmul_mfu(m, k, n, seconds, device_name, dtype):
    peak = peak_flops(device_name, dtype)
    return None if peak is None else matmul_flop_count((m, k), (k, n)) / seconds / peak
''',
    "matmul_intensity": '''
def matmul_intensity(a_shape, b_shape, bytes_per_element):
    *batch_a, m, k = a_shape
    *batch_b, _, n = b_shape
    matmuls = math.prod(torch.broadcast_shapes(tuple(batch_a), tuple(batch_b)))
    elements = math.prod(a_shape) + math.prod(b_shape) + matmuls * m * n
    return matmul_flop_count(a_shape, b_shape) / (elements * bytes_per_element)
''',
}


@pytest.mark.parametrize("test_id", ["test_linear_model_flops", "test_matmul_mfu", "test_matmul_intensity"])
def test_exercise_5_later_tasks_earn_their_points_with_a_wrong_task_1(test_id):
    from tests.exercise_cells import run_test_cell
    if test_id == "test_linear_model_flops":
        with pytest.raises(AssertionError):
            run_test_cell("05_flops_mfu", "test_matmul_flop_count", LATER_TASKS_CALLING_TASK_1)
    run_test_cell("05_flops_mfu", test_id, LATER_TASKS_CALLING_TASK_1)


def test_exercise_5_matmul_mfu_checks_the_timed_gpu_matmul_the_notebook_hands_in():
    """On a GPU the hidden test also times a 4096^3 bf16 matmul and hands the observed case in; the check computes
    its MFU in the trusted process (simulated here: this machine may have no GPU)."""
    from reference import hidden
    from reference.flops_mfu import matmul_mfu as reference_mfu
    key = "flops_mfu.matmul_mfu"
    timed = (4096, 4096, 4096, 2.5e-4, "NVIDIA H100 80GB HBM3", torch.bfloat16)
    right = list(hidden.expected(key)) + [reference_mfu(*timed)]
    hidden.check(key, {"timed": [timed], "results": right})
    with pytest.raises(AssertionError, match="matmul_mfu"):
        hidden.check(key, {"timed": [timed], "results": right[:-1] + [0.5]})
    with pytest.raises(AssertionError, match="not one the test makes"):
        hidden.check(key, {"timed": [(1, 1, 1, 2.5e-4, "NVIDIA H100 80GB HBM3", torch.bfloat16)], "results": right})
