"""The floats references against torch, the oracle: every bit pattern decodes to what torch stores, limits match
finfo, cast outcomes describe torch's casts. reference.floats is the instructor's (any widths); utils.floats asks
torch."""
import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reference.floats import cast_outcome, decode_bits, format_limits, round_to_format, split_bits
from utils.floats import BF16, FORMATS, FP8_E4M3, FP8_E5M2, FP16, FP32, FloatFormat, bits_of, from_bits, positive_values
from utils.floats import format_limits as torch_limits


def torch_decode(bits: int, fmt: FloatFormat) -> float:
    """utils.floats.from_bits: what torch reads from the same bits."""
    return from_bits(bits, fmt)


def same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def test_every_8_and_16_bit_pattern_decodes_like_torch():
    for fmt in (FP16, BF16, FP8_E4M3, FP8_E5M2):
        for bits in range(1 << fmt.total_bits):
            assert same_float(decode_bits(bits, fmt), torch_decode(bits, fmt)), (fmt.name, hex(bits))


@given(st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=3000, deadline=None)
def test_fp32_bit_patterns_decode_like_torch(bits):
    assert same_float(decode_bits(bits, FP32), torch_decode(bits, FP32))


def test_worked_example_0_15625():
    assert bits_of(0.15625, FP32) == 0x3E200000
    assert split_bits(0x3E200000, FP32) == (0, 124, 1 << 21)
    assert decode_bits(0x3E200000, FP32) == 0.15625


@given(st.floats(allow_nan=False, allow_infinity=False, width=32))
@settings(max_examples=500, deadline=None)
def test_bits_of_round_trips_through_decode(value):
    assert decode_bits(bits_of(value, FP32), FP32) == value


def test_limits_agree_with_torch_finfo():
    for fmt in FORMATS:
        limits, info = format_limits(fmt), torch.finfo(fmt.dtype)
        assert (limits.max, limits.smallest_normal, limits.eps) == (info.max, info.smallest_normal, info.eps)
        assert limits.smallest_subnormal == torch_decode(1, fmt)  # finfo has no smallest subnormal field
        assert torch_limits(fmt) == limits  # what the lecture reads off torch


def test_from_bits_is_torchs_reading_of_the_signed_bits():
    signed = {8: torch.int8, 16: torch.int16, 32: torch.int32}
    for fmt in FORMATS:
        for bits in (0, 1, 1 << (fmt.total_bits - 1), (1 << fmt.total_bits) - 1, bits_of(-1.5, fmt)):
            as_signed = bits - (1 << fmt.total_bits) if bits >> (fmt.total_bits - 1) else bits
            expected = torch.tensor([as_signed], dtype=signed[fmt.total_bits]).view(fmt.dtype).item()
            assert same_float(from_bits(bits, fmt), expected), (fmt.name, hex(bits))
    assert from_bits(0x3E200000, FP32) == 0.15625 and math.copysign(1, from_bits(0x8000, FP16)) == -1


def test_torch_helpers_refuse_formats_torch_does_not_have():
    made_up = FloatFormat("E3M2", 3, 2)
    for helper in (torch_limits, positive_values):
        try:
            helper(made_up)
        except ValueError:
            continue
        raise AssertionError(f"{helper.__name__} answered for a format torch does not have")


def test_fp8_maxima_and_underflow_figures_from_the_course():
    assert format_limits(FP8_E4M3).max == 448 and format_limits(FP8_E5M2).max == 57344
    assert torch.tensor(1e-8, dtype=torch.float16).item() == 0.0
    assert math.isclose(torch.tensor(1e-8, dtype=torch.bfloat16).item(), 1.0012e-08, rel_tol=1e-4)


@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(FORMATS))
@settings(max_examples=3000, deadline=None)
def test_round_to_format_matches_torch_cast(value, fmt):
    expected = torch.tensor(value, dtype=torch.float64).to(fmt.dtype).item()
    if not fmt.ieee_specials and cast_outcome(value, fmt) == "overflow":
        # E4M3 has no inf: torch's cast saturates (CPU kernels of torch 2.13) or gives NaN (CUDA, torch 2.11's CPU)
        assert round_to_format(value, fmt) == math.copysign(448.0, value)
        assert math.isnan(expected) or expected == math.copysign(448.0, value)
        return
    assert same_float(round_to_format(value, fmt), expected)


@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from((FP16, BF16, FP8_E5M2)))
@settings(max_examples=2000, deadline=None)
def test_cast_outcome_describes_what_torch_stores(value, fmt):
    stored = torch.tensor(value, dtype=torch.float64).to(fmt.dtype).item()
    outcome = cast_outcome(value, fmt)
    if value == 0:
        assert outcome == "zero"
    elif stored == 0:
        assert outcome == "underflow"
    elif math.isinf(stored):
        assert outcome == "overflow"
    else:
        assert outcome == ("subnormal" if abs(stored) < torch.finfo(fmt.dtype).smallest_normal else "normal")


def test_cast_outcome_at_the_halfway_points_of_fp16():
    assert cast_outcome(2.0**-25, FP16) == "underflow"      # exactly half the smallest subnormal: ties to 0
    assert cast_outcome(2.0**-25 * 1.001, FP16) == "subnormal"
    assert cast_outcome(65519.0, FP16) == "normal" and cast_outcome(65520.0, FP16) == "overflow"


def test_positive_values_of_fp8_e4m3():
    values = positive_values(FP8_E4M3)
    assert values == [v for v in (decode_bits(b, FP8_E4M3) for b in range(1, 128)) if math.isfinite(v)]
    assert len(values) == 126 and values[0] == 2.0**-9 and values[-1] == 448  # 127 positive patterns, one is nan
    assert values == sorted(values)


def test_exercise_1_after_cast_cases_carry_the_right_limits_of_their_formats_only():
    """Task 4's stand-in for limits knows each checked format's limits (torch.finfo's where torch has it), no other."""
    from reference import hidden
    cases = hidden.cases("floats.after_cast")
    known = dict(cases["limits"])
    assert set(known) == {(e, m, True) for _, e, m in cases["calls"]}
    for dtype, key in [(torch.float16, (5, 10, True)), (torch.bfloat16, (8, 7, True)), (torch.float32, (8, 23, True))]:
        finfo = torch.finfo(dtype)
        assert known[key] == (finfo.max, finfo.tiny, finfo.smallest_normal * finfo.eps, finfo.eps)
