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
