"""Floating-point formats as bit fields: decode any (exponent bits, mantissa bits) pattern, and the limits of a format.

A normal number is  (-1)^S x 1.M x 2^(E - bias);  when the exponent field E is 0 the number is subnormal:
(-1)^S x 0.M x 2^(1 - bias).  bias = 2^(exponent_bits - 1) - 1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: 1 sign bit, `exponent_bits`, `mantissa_bits` (the stored fraction).

    `ieee_specials` is True when the all-ones exponent is reserved for inf and NaN (fp32, fp16, bf16, fp8 E5M2).
    fp8 E4M3 ('fn': finite) has no infinity and spends that exponent on numbers; only all-ones bits are NaN.
    """
    name: str
    exponent_bits: int
    mantissa_bits: int
    ieee_specials: bool = True
    dtype: torch.dtype | None = None

    @property
    def total_bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bias(self) -> int:
        return 2 ** (self.exponent_bits - 1) - 1


FP32 = FloatFormat("fp32", 8, 23, dtype=torch.float32)
FP16 = FloatFormat("fp16", 5, 10, dtype=torch.float16)
BF16 = FloatFormat("bf16", 8, 7, dtype=torch.bfloat16)
FP8_E4M3 = FloatFormat("fp8 E4M3", 4, 3, ieee_specials=False, dtype=torch.float8_e4m3fn)
FP8_E5M2 = FloatFormat("fp8 E5M2", 5, 2, dtype=torch.float8_e5m2)
FORMATS = (FP32, FP16, BF16, FP8_E4M3, FP8_E5M2)

# Integer dtypes of the same width, used to look at a float's raw bits through torch.
_BITS_DTYPE = {8: torch.int8, 16: torch.int16, 32: torch.int32}


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


def bits_of(value: float, fmt: FloatFormat) -> int:
    """The bit pattern torch stores for `value` after rounding it to `fmt` (which must have a torch dtype)."""
    stored = torch.tensor([value], dtype=torch.float64).to(fmt.dtype)
    signed = int(stored.view(_BITS_DTYPE[fmt.total_bits]).item())
    return signed % (1 << fmt.total_bits)  # two's complement -> unsigned bit pattern


@dataclass(frozen=True)
class FormatLimits:
    """The landmarks of a format, all as plain floats."""
    max: float                 # largest finite number
    smallest_normal: float     # 2^(1 - bias); torch.finfo calls it `smallest_normal` (or `tiny`)
    smallest_subnormal: float  # 2^(1 - bias - mantissa_bits)
    eps: float                 # gap between 1.0 and the next number: 2^-mantissa_bits


def format_limits(fmt: FloatFormat) -> FormatLimits:
    """Max, smallest normal, smallest subnormal and eps of `fmt`, each read off its bit pattern."""
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


def positive_values(fmt: FloatFormat) -> list[float]:
    """Every finite positive number of a small format, in increasing order (use on 8- to 16-bit formats)."""
    values = (decode_bits(bits, fmt) for bits in range(1, 1 << (fmt.total_bits - 1)))
    return [v for v in values if math.isfinite(v)]


def _round_magnitude(magnitude: float, fmt: FloatFormat) -> float:
    """Round a positive finite number to `fmt`'s grid (ties to even), ignoring the top of the range."""
    _, binary_exponent = math.frexp(magnitude)             # magnitude = f x 2^binary_exponent, f in [0.5, 1)
    exponent = max(binary_exponent - 1, 1 - fmt.bias)      # subnormals share the smallest normal exponent
    spacing = math.ldexp(1.0, exponent - fmt.mantissa_bits)  # gap between neighbours at this magnitude
    return round(magnitude / spacing) * spacing            # Python's round() breaks ties to even


def round_to_format(value: float, fmt: FloatFormat) -> float:
    """The number of `fmt` nearest to `value` (ties to even), in pure Python: works for any exponent/mantissa width.

    Past the largest number an IEEE-style format gives inf; fp8 E4M3 (no inf) saturates at its max, as torch does.
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


def round_trip(value: float, dtype: torch.dtype) -> float:
    """What is left of `value` after storing it in `dtype` (round to nearest even; may give 0.0 or inf)."""
    return torch.tensor(value, dtype=torch.float64).to(dtype).item()
