"""utils.transfer, utils.device.pick_device and exercise 2's references (reference.tensors_on_gpu) against torch:
allocator rounding, when `.to` copies, which device a process picks, copy bandwidth.

Where the real thing needs a GPU (the caching allocator, pinned memory), the test is skipped without CUDA.
"""
import math
import statistics

import matplotlib
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

matplotlib.use("Agg")

from reference.tensors_on_gpu import allocated_bytes, pick_device, to_copies
from utils.device import get_device
from utils.device import pick_device as pick_single_device
from utils.transfer import (
    ALLOCATOR_BLOCK_BYTES,
    SMALL_ALLOCATION_BYTES,
    SimulatedStream,
    allocator_bytes,
    check_bool,
    copy_bandwidth,
    default_caching_allocator,
    measured_allocated_bytes,
    plot_allocator_rounding,
    plot_copy_bandwidth,
)
from utils.transfer import to_copies as torch_says_to_copies

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int64,
          torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64]
small_shapes = st.lists(st.integers(min_value=0, max_value=40), min_size=0, max_size=3).map(tuple)
tensor_specs = st.lists(st.tuples(small_shapes, st.sampled_from(DTYPES)), max_size=6)


def test_allocator_rounding_examples():
    assert [allocator_bytes(n) for n in (0, 1, 4, 400, 511, 512, 513, 516, 2000, 4096, 6000)] == \
        [0, 512, 512, 512, 512, 512, 1024, 1024, 2048, 4096, 6144]
    assert allocator_bytes(1000, block=256) == 1024
    with pytest.raises(ValueError):
        allocator_bytes(-1)


@given(st.integers(min_value=0, max_value=2**40))
@settings(max_examples=200, deadline=None)
def test_allocator_bytes_is_the_next_multiple_of_512(nbytes):
    allocated = allocator_bytes(nbytes)
    assert allocated % ALLOCATOR_BLOCK_BYTES == 0
    assert nbytes <= allocated < nbytes + ALLOCATOR_BLOCK_BYTES
    assert (allocated == 0) == (nbytes == 0)


@given(tensor_specs)
@settings(max_examples=200, deadline=None)
def test_prediction_rounds_the_bytes_torch_stores(specs):
    """The bytes come from real tensors' storage; the rounding is applied per tensor, not to the total."""
    stored = [torch.empty(shape, dtype=dtype).untyped_storage().nbytes() for shape, dtype in specs]
    assert allocated_bytes(specs) == sum(allocator_bytes(n) for n in stored)  # the exercise's reference


def test_course_numbers():
    assert allocated_bytes([((32, 32), torch.float32)] * 2) == 8192
    assert allocated_bytes([((100,), torch.float32)]) == 512
    assert allocated_bytes([((129,), torch.float32)]) == 1024
    assert allocated_bytes([((0,), torch.float32), ((2, 0), torch.int64)]) == 0
    assert allocated_bytes([]) == 0


def test_cpu_build_reports_zero_allocated_and_no_default_allocator():
    if torch.cuda.is_available():
        pytest.skip("only a machine without CUDA reports 0")
    assert torch.cuda.memory_allocated() == 0  # silently, no error
    assert default_caching_allocator() is False


@needs_cuda
def test_two_32x32_fp32_tensors_add_8192_bytes_on_the_gpu():
    if not default_caching_allocator():
        pytest.skip("a non-default CUDA allocator configuration changes the rounding")
    assert measured_allocated_bytes([((32, 32), torch.float32)] * 2) == 8192


@needs_cuda
@given(tensor_specs)
@settings(max_examples=50, deadline=None)
def test_prediction_matches_the_real_caching_allocator(specs):
    if not default_caching_allocator():
        pytest.skip("a non-default CUDA allocator configuration changes the rounding")
    assert all(allocated_bytes([spec]) <= SMALL_ALLOCATION_BYTES for spec in specs)  # where the rule is exact
    assert measured_allocated_bytes(specs) == allocated_bytes(specs)


@needs_cuda
def test_rounding_of_odd_sizes_on_the_gpu():
    if not default_caching_allocator():
        pytest.skip("a non-default CUDA allocator configuration changes the rounding")
    for numel in (1, 100, 127, 128, 129, 1000, 250_000):
        assert measured_allocated_bytes([((numel,), torch.float32)]) == allocator_bytes(4 * numel)


@pytest.mark.parametrize("source_dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
def test_to_copies_matches_torch_on_cpu(source_dtype):
    for target_device in (None, "cpu"):
        for target_dtype in (None, torch.float32, torch.bfloat16, torch.int64, torch.uint8):
            for copy in (False, True):
                x = torch.zeros(3, dtype=source_dtype)
                y = x.to(device=target_device, dtype=target_dtype, copy=copy)
                copied = y.data_ptr() != x.data_ptr()
                assert copied == (y is not x)
                assert to_copies("cpu", source_dtype, target_device, target_dtype, copy) == copied
                assert torch_says_to_copies(x, target_device, target_dtype, copy) == copied


def test_moving_to_another_device_copies_even_without_a_gpu():
    x = torch.zeros(3)
    assert torch_says_to_copies(x, "meta") and torch_says_to_copies(x, "meta", torch.float16)
    assert not torch_says_to_copies(x) and not torch_says_to_copies(x, "cpu", torch.float32)


def test_to_copies_device_names():
    f32 = torch.float32
    assert to_copies("cpu", f32, "cuda") and to_copies("cuda:0", f32, "cpu")
    assert not to_copies("cuda:0", f32, "cuda") and to_copies("cuda:1", f32, "cuda")
    assert not to_copies("cuda:1", f32, "cuda", current_cuda=1)
    assert not to_copies("cuda", f32, "cuda:2", current_cuda=2)
    assert not to_copies("mps", f32, "mps") and to_copies("mps", f32, "cpu")


@needs_cuda
def test_to_copies_matches_torch_on_cuda():
    current = torch.cuda.current_device()
    for target_device in (None, "cuda", f"cuda:{current}", "cpu"):
        for target_dtype in (None, torch.float32, torch.float16):
            for copy in (False, True):
                x = torch.zeros(3, device=f"cuda:{current}")
                copied = x.to(device=target_device, dtype=target_dtype, copy=copy).data_ptr() != x.data_ptr()
                assert to_copies(f"cuda:{current}", torch.float32, target_device, target_dtype, copy, current) == copied
                assert torch_says_to_copies(torch.zeros(3, device=f"cuda:{current}"), target_device, target_dtype,
                                            copy) == copied


def test_pick_device():
    assert pick_device(8, False, local_rank=3) == "cuda:3"
    assert pick_device(1, True) == "cuda:0"  # CUDA wins over MPS
    assert pick_device(0, True) == "mps" and pick_device(0, False) == "cpu"
    assert pick_device(0, False, local_rank=5) == "cpu"
    for bad_rank in (-1, 2):
        with pytest.raises(ValueError):
            pick_device(2, False, local_rank=bad_rank)


def test_single_process_pick_is_the_rank_0_pick():
    for cuda_count in (0, 1, 8):
        for mps_available in (False, True):
            assert pick_single_device(cuda_count, mps_available) == pick_device(cuda_count, mps_available)


def test_pick_device_agrees_with_torch_on_this_machine():
    here = pick_single_device(torch.cuda.device_count(), torch.backends.mps.is_available())
    assert torch.device(here).type == get_device().type
    torch.empty(1, device=here)  # a device torch accepts


def test_copy_bandwidth_on_cpu_is_a_plausible_rate():
    bytes_per_second = copy_bandwidth(2**20, "cpu", "cpu")
    assert type(bytes_per_second) is float and math.isfinite(bytes_per_second)
    assert 1e6 < bytes_per_second < 1e13  # between 1 MB/s and 10 TB/s
    with pytest.raises(ValueError):
        copy_bandwidth(0)


def test_pinned_copies_need_cuda():
    if torch.cuda.is_available():
        pytest.skip("this machine can pin memory")
    with pytest.raises(RuntimeError):
        copy_bandwidth(1024, "cpu", "cpu", pinned=True)


@needs_cuda
@pytest.mark.parametrize("source, target, pinned", [("cpu", "cuda", False), ("cpu", "cuda", True),
                                                    ("cuda", "cpu", True), ("cuda", "cuda", False)])
def test_copy_bandwidth_on_cuda(source, target, pinned):
    bytes_per_second = copy_bandwidth(2**24, source, target, pinned=pinned)
    assert 1e8 < bytes_per_second < 1e14


def test_simulated_stream_is_asynchronous():
    stream = SimulatedStream([0.004, 0.002], launch_seconds=1e-6)
    stream.launch()
    assert stream.clock() == 1e-6 and stream.busy_until == 0.004  # returned before the work was done
    stream.launch()  # queued behind the first
    assert stream.busy_until == pytest.approx(0.006)
    stream.synchronize()
    assert stream.clock() == pytest.approx(0.006)
    with pytest.raises(AssertionError, match="more than 2 times"):
        stream.launch()


@given(st.integers(0, 3), st.lists(st.floats(1e-4, 1e-1), min_size=1, max_size=8))
@settings(max_examples=100, deadline=None)
def test_timing_done_right_recovers_the_median_duration(warmup, timed):
    stream = SimulatedStream([0.5] * warmup + timed)
    for _ in range(warmup):
        stream.launch()
    stream.synchronize()
    seconds = []
    for _ in timed:
        start = stream.clock()
        stream.launch()
        stream.synchronize()
        seconds.append(stream.clock() - start)
    assert statistics.median(seconds) == pytest.approx(statistics.median(timed), rel=1e-9)


def test_check_bool_is_strict():
    check_bool(True, True, "x")
    check_bool(False, False, "x")
    for wrong in (1, 0, 1.0, None, "True"):
        with pytest.raises(AssertionError, match="expected a bool"):
            check_bool(wrong, True, "x")
    with pytest.raises(AssertionError, match="Hint: think"):
        check_bool(True, False, "x", hint="think")


def test_plots_are_labelled():
    fig = plot_allocator_rounding(max_bytes=2048)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    steps = ax.lines[0].get_ydata()
    assert steps[0] == 0 and steps[1] == 512 and steps[-1] == 2048
    fig = plot_copy_bandwidth({"CPU -> CPU": {1024: 1e9, 2**20: 2e10}})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "GB/s" in ax.get_ylabel()
    assert list(ax.lines[0].get_ydata()) == [1.0, 20.0]


def _right_timings(cases: dict, gpu: str | None) -> dict:
    simulated = [(nbytes / statistics.median(durations[warmup:]) / 1e9, warmup + repeats)
                 for warmup, repeats, durations, nbytes, _ in cases["scenarios"]]
    return {"real_cpu": [5.0] * len(cases["real_cpu"]), "gpu": gpu,
            "real_gpu": {"pageable": 9.0, "pinned": 50.0} if gpu else {}, "simulated": simulated}


def test_exercise_2_gpu_timings_are_checked_without_a_gpu_on_the_trusted_side():
    """A GPU machine's hand-in (device string and both host-to-device timings) is checked here, with or without CUDA;
    a GPU hand-in with a timing missing or implausible fails."""
    from reference import hidden
    cases = hidden.cases("tensors_on_gpu.copy_gb_per_s")
    hidden.check("tensors_on_gpu.copy_gb_per_s", _right_timings(cases, None))
    hidden.check("tensors_on_gpu.copy_gb_per_s", _right_timings(cases, "cuda:0"))
    for change in ({"real_gpu": {"pinned": 50.0}}, {"real_gpu": {"pageable": 9.0, "pinned": 1e6}}):
        with pytest.raises(AssertionError, match="cuda:0|pageable"):
            hidden.check("tensors_on_gpu.copy_gb_per_s", {**_right_timings(cases, "cuda:0"), **change})
