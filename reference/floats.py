"""Exercise 1 (floats), the instructor's references: decode, limits and cast outcomes for any field widths.

Hidden tests compare with torch where a torch dtype exists (torch.finfo, torch's own reading of a bit pattern) and
with these functions for the made-up formats torch does not have, e.g. 3 exponent bits and 2 mantissa bits.

A normal number is  (-1)^S x 1.M x 2^(E - bias);  when the exponent field E is 0 it is subnormal:
(-1)^S x 0.M x 2^(1 - bias).  bias = 2^(exponent_bits - 1) - 1.
"""
from __future__ import annotations

import math

from utils.floats import FloatFormat, FormatLimits


def split_bits(bits: int, fmt: FloatFormat) -> tuple[int, int, int]:
    """The (sign, exponent field, mantissa field) integers of a bit pattern."""
    mantissa = bits & ((1 << fmt.mantissa_bits) - 1)
    exponent = (bits >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    sign = (bits >> (fmt.exponent_bits + fmt.mantissa_bits)) & 1
    return sign, exponent, mantissa


def decode_bits(bits: int, fmt: FloatFormat) -> float:
    """The real number a bit pattern stands for in `fmt` (inf and nan included), exactly, as a Python float."""
    sign, exponent, mantissa = split_bits(bits, fmt)
    top_exponent = (1 << fmt.exponent_bits) - 1
    top_mantissa = (1 << fmt.mantissa_bits) - 1
    signed_one = -1.0 if sign else 1.0
    if fmt.ieee_specials and exponent == top_exponent:
        return signed_one * math.inf if mantissa == 0 else math.nan
    if not fmt.ieee_specials and exponent == top_exponent and mantissa == top_mantissa:
        return math.nan
    if exponent == 0:  # subnormal: no implicit leading 1, exponent fixed at 1 - bias
        return signed_one * math.ldexp(mantissa, 1 - fmt.bias - fmt.mantissa_bits)
    return signed_one * math.ldexp((1 << fmt.mantissa_bits) + mantissa, exponent - fmt.bias - fmt.mantissa_bits)


def format_limits(fmt: FloatFormat) -> FormatLimits:
    """Max, smallest normal, smallest subnormal and eps of `fmt`, each read off its bit pattern (any widths)."""
    top_exponent = (1 << fmt.exponent_bits) - 1
    if fmt.ieee_specials:  # largest exponent below the reserved one, all mantissa bits set
        max_bits = ((top_exponent - 1) << fmt.mantissa_bits) | ((1 << fmt.mantissa_bits) - 1)
    else:                  # top exponent is usable; all-ones mantissa there is NaN
        max_bits = (top_exponent << fmt.mantissa_bits) | ((1 << fmt.mantissa_bits) - 2)
    one_bits = fmt.bias << fmt.mantissa_bits
    return FormatLimits(
        max=decode_bits(max_bits, fmt),
        smallest_normal=decode_bits(1 << fmt.mantissa_bits, fmt),
        smallest_subnormal=decode_bits(1, fmt),
        eps=decode_bits(one_bits + 1, fmt) - 1.0,
    )


def _round_magnitude(magnitude: float, fmt: FloatFormat) -> float:
    """Round a positive finite number to `fmt`'s grid (ties to even), ignoring the top of the range."""
    _, binary_exponent = math.frexp(magnitude)             # magnitude = f x 2^binary_exponent, f in [0.5, 1)
    exponent = max(binary_exponent - 1, 1 - fmt.bias)      # subnormals share the smallest normal exponent
    spacing = math.ldexp(1.0, exponent - fmt.mantissa_bits)  # gap between neighbours at this magnitude
    return round(magnitude / spacing) * spacing            # Python's round() breaks ties to even


def round_to_format(value: float, fmt: FloatFormat) -> float:
    """The number of `fmt` nearest to `value` (ties to even), in pure Python: works for any exponent/mantissa width.

    Past the largest number an IEEE-style format gives inf; fp8 E4M3 (no inf) saturates at its max here. torch's
    own cast is not consistent there: some kernels saturate (CPU, torch 2.13), others give NaN (CUDA).
    """
    if value == 0 or not math.isfinite(value):
        return value
    rounded = _round_magnitude(abs(value), fmt)
    largest = format_limits(fmt).max
    if rounded > largest:
        rounded = math.inf if fmt.ieee_specials else largest
    return math.copysign(rounded, value)


def cast_outcome(value: float, fmt: FloatFormat) -> str:
    """What storing a finite `value` in `fmt` does to it: 'zero', 'underflow' (becomes 0), 'subnormal', 'normal'
    or 'overflow' (rounds past the largest number: inf, or saturation at max in a format without inf)."""
    if value == 0:
        return "zero"
    rounded = _round_magnitude(abs(value), fmt)
    limits = format_limits(fmt)
    if rounded == 0:
        return "underflow"
    if rounded > limits.max:
        return "overflow"
    return "subnormal" if rounded < limits.smallest_normal else "normal"


# ---- hidden tests (reference/hidden.py): cases, expected results, checks -----------------------------------------
import random

import torch

import utils.floats
from reference.hidden import HiddenTest
from reference.hidden import results_list as _results
from utils.grading import check_float, check_int, check_str, check_type

# Formats torch has are decoded by torch itself (utils.floats.from_bits views the bits as the dtype); the others, and
# E4M3 read IEEE-style (torch's float8_e4m3fn has no inf), by the functions above.
_TORCH_DTYPES = {(8, 23): torch.float32, (5, 10): torch.float16, (8, 7): torch.bfloat16, (5, 2): torch.float8_e5m2,
                 (11, 52): torch.float64}




def _decode_cases() -> list[tuple[int, int, int]]:
    rng = random.Random(2025)
    cases = []
    for e, m in [(8, 23), (5, 10), (8, 7), (5, 2), (4, 3), (3, 2), (6, 9), (11, 52)]:
        n = 1 + e + m
        top = (2**e - 1) << m
        edges = [0, 1, 2**m - 1, 2**m, top - 1, top, top | 1, 2 ** (n - 1), 2 ** (n - 1) | 1, 2**n - 1]
        cases += [(bits, e, m) for bits in edges + [rng.randrange(2**n) for _ in range(300)]]
    return cases


def _decode_expected(cases: list) -> list[float]:
    def oracle(bits: int, e: int, m: int) -> float:
        fmt = utils.floats.FloatFormat(f"E{e}M{m}", e, m, dtype=_TORCH_DTYPES.get((e, m)))
        return utils.floats.from_bits(bits, fmt) if fmt.dtype is not None else decode_bits(bits, fmt)
    return [oracle(*case) for case in cases]


def _decode_check(cases, expected, results) -> None:
    for (bits, e, m), want, got in zip(cases, expected, _results(results, len(cases), "decode")):
        check_float(got, want, f"decode({bits:#x}, {e}, {m})")


# None of the formats task 4's stand-in limits knows (_cast_cases): that stand-in runs in the student's process, so
# what it answers must not be an expected value of this test (issue #48; tests/test_hidden_tests.py checks it).
_LIMITS_FORMATS = [(11, 52, True), (4, 3, False), (3, 4, False), (5, 6, False), (8, 10, True), (6, 5, True),
                   (4, 4, True), (7, 12, True), (5, 9, True), (3, 3, True)]
_LIMITS_DTYPES = {(8, 23, True): torch.float32, (5, 10, True): torch.float16, (8, 7, True): torch.bfloat16,
                  (5, 2, True): torch.float8_e5m2, (4, 3, False): torch.float8_e4m3fn, (11, 52, True): torch.float64}


def _limits_expected(cases: list) -> list[tuple[float, ...]]:
    """torch.finfo and torch's reading of bit pattern 1 where torch has the format; the functions above elsewhere."""
    expected = []
    for e, m, ieee in cases:
        fmt = utils.floats.FloatFormat("x", e, m, ieee_specials=ieee, dtype=_LIMITS_DTYPES.get((e, m, ieee)))
        ref = utils.floats.format_limits(fmt) if fmt.dtype is not None else format_limits(fmt)
        expected.append((ref.max, ref.smallest_normal, ref.smallest_subnormal, ref.eps))
    return expected


def _limits_check(cases, expected, results) -> None:
    for (e, m, ieee), want, got in zip(cases, expected, _results(results, len(cases), "limits")):
        call = f"limits({e}, {m}, ieee_specials={ieee})"
        check_type(got, tuple, call, hint="return a tuple of four floats: (max, smallest_normal, smallest_subnormal, eps).")
        check_int(len(got), 4, f"length of {call}")
        for name, g, w in zip(("max", "smallest_normal", "smallest_subnormal", "eps"), got, want):
            check_float(g, w, f"{name} of {call}")


_NBYTES_SHAPES = [(), (0,), (7,), (3, 0, 5), (2, 3, 5, 7), (4 * 12288, 12288), (10**6, 10**6), (1024, 1024, 1024, 64)]
_NBYTES_DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2,
                  torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64]


def _nbytes_check(cases, expected, results) -> None:
    for (shape, dtype), want, got in zip(cases, expected, _results(results, len(cases), "tensor_nbytes")):
        check_type(got, tuple, f"tensor_nbytes({shape}, {dtype}): the two results handed in")
        check_int(len(got), 2, f"tensor_nbytes({shape}, {dtype}): the two results handed in")
        check_int(got[0], want, f"tensor_nbytes({shape}, {dtype})")
        check_int(got[1], want, f"tensor_nbytes(torch.Size({shape}), {dtype})")


def _cast_cases() -> dict:
    """The calls (value, exponent_bits, mantissa_bits), and task 2's right answers for their formats: a student's
    after_cast that calls their limits runs with a stand-in that knows these (utils.earlier.answers_from_table)."""
    rng = random.Random(7)
    cases = []
    formats = [(5, 10), (8, 7), (8, 23), (5, 2), (4, 3), (3, 2), (6, 9)]
    for e, m in formats:
        lim = format_limits(utils.floats.FloatFormat("x", e, m))
        top_step = lim.max * lim.eps / (2 - lim.eps)
        edges = [lim.smallest_subnormal / 2, lim.smallest_subnormal * 0.50001,
                 lim.smallest_normal - lim.smallest_subnormal / 2, lim.smallest_normal * 0.99999, lim.max,
                 lim.max + top_step / 2, lim.max + top_step * 0.49999, lim.max * 4]
        randoms = [10 ** rng.uniform(math.log10(lim.smallest_subnormal) - 3, math.log10(lim.max) + 3) for _ in range(200)]
        cases += [(signed, e, m) for value in edges + randoms for signed in (value, -value)]
    right_limits = [((e, m, True), tuple(_limits_expected([(e, m, True)])[0])) for e, m in formats]
    return {"calls": cases, "limits": right_limits}


def _cast_check(cases, expected, results) -> None:
    calls = cases["calls"]
    for (value, e, m), want, got in zip(calls, expected, _results(results, len(calls), "after_cast")):
        check_str(got, want, f"after_cast({value!r}, {e}, {m})")


HIDDEN_TESTS = {
    "decode": HiddenTest(_decode_cases, _decode_expected, _decode_check,
                         varies="the format (fp32, fp16, bf16, fp8 E5M2 and E4M3, fp64 and made-up widths such as 3 "
                                "exponent and 2 mantissa bits) and the bits: zero, subnormals, the largest normal, "
                                "inf and nan of either sign, and 300 random patterns per format"),
    "limits": HiddenTest(lambda: list(_LIMITS_FORMATS), _limits_expected, _limits_check,
                         varies="the widths (fp64, fp8 E4M3 and made-up formats) and ieee_specials True and False"),
    "tensor_nbytes": HiddenTest(lambda: [(shape, dtype) for shape in _NBYTES_SHAPES for dtype in _NBYTES_DTYPES],
                                lambda cases: [torch.empty(shape, dtype=dtype, device="meta").nbytes
                                               for shape, dtype in cases],
                                _nbytes_check,
                                varies="the shape (empty, zero-sized, up to 4 dimensions and 2^36 elements, given as "
                                       "a tuple or a torch.Size) and the dtype (floats, fp8, ints, bool, complex)"),
    "after_cast": HiddenTest(_cast_cases, lambda cases: [cast_outcome(v, utils.floats.FloatFormat("x", e, m))
                                                         for v, e, m in cases["calls"]], _cast_check,
                             varies="the format (fp16, bf16, fp32, fp8 and made-up widths), the sign, values at the "
                                    "edges (half the smallest subnormal, just below the smallest normal, the max and "
                                    "half a step above it) and random magnitudes across the range; your after_cast "
                                    "ran with a correct limits"),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import BITS_FOR_BYTES, GB_FOR_GIB, MIB_FOR_GIB, within_percent

HIDDEN_TESTS["weights_gib"] = napkin_test(
    {'parameters': 7000000000},
    lambda parameters, bytes_per_parameter, bytes_per_gib: parameters * bytes_per_parameter / bytes_per_gib,
    "weights_gib", "GiB", within_percent(2),
    {**BITS_FOR_BYTES, **GB_FOR_GIB, **MIB_FOR_GIB, 2.0: "4 bytes per parameter, as in fp32? bf16 takes 2."},
    conventions={"bytes_per_parameter": (2, "the 2 bytes of each bf16 parameter"),
                 "bytes_per_gib": (2**30, "the 2^30 bytes of a GiB")})
