"""Floating-point formats as bit fields, and what torch makes of them.

A format is 1 sign bit, `exponent_bits` and `mantissa_bits`. This module names the formats torch has and asks torch
about them: the bits it stores for a number, the number it reads from bits, the limits `torch.finfo` reports, and
every number of a small format. Decoding bits by hand, for any widths, is exercise 1's job.
"""
from __future__ import annotations

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
_BITS_DTYPE = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def _torch_dtype(fmt: FloatFormat) -> torch.dtype:
    if fmt.dtype is None:
        raise ValueError(f"{fmt.name} has no torch dtype, so torch cannot answer for it")
    return fmt.dtype


def bits_of(value: float, fmt: FloatFormat) -> int:
    """The bit pattern torch stores for `value` after rounding it to `fmt` (which must have a torch dtype)."""
    stored = torch.tensor([value], dtype=torch.float64).to(_torch_dtype(fmt))
    signed = int(stored.view(_BITS_DTYPE[fmt.total_bits]).item())
    return signed % (1 << fmt.total_bits)  # two's complement -> unsigned bit pattern


def from_bits(bits: int, fmt: FloatFormat) -> float:
    """The number torch reads from the bit pattern `bits` (an unsigned int) of a format with a torch dtype.

    torch does the decoding: the bits go into an integer tensor of the same width, which is then viewed as floats.
    """
    dtype = _torch_dtype(fmt)
    unsigned = bits % (1 << fmt.total_bits)
    signed = unsigned - (1 << fmt.total_bits) if unsigned >> (fmt.total_bits - 1) else unsigned
    raw = torch.tensor([signed], dtype=_BITS_DTYPE[fmt.total_bits])
    return raw.view(dtype).item()


@dataclass(frozen=True)
class FormatLimits:
    """The landmarks of a format, all as plain floats."""
    max: float                 # largest finite number
    smallest_normal: float     # torch.finfo calls it `smallest_normal` (or `tiny`)
    smallest_subnormal: float  # bit pattern 1: exponent field 0, mantissa 1
    eps: float                 # gap between 1.0 and the next number


def format_limits(fmt: FloatFormat) -> FormatLimits:
    """Max, smallest normal, smallest subnormal and eps of a format with a torch dtype, as torch reports them:
    `torch.finfo` for three of them, and torch's reading of bit pattern 1 for the smallest subnormal (finfo has no
    field for it)."""
    info = torch.finfo(_torch_dtype(fmt))
    return FormatLimits(max=info.max, smallest_normal=info.smallest_normal,
                        smallest_subnormal=from_bits(1, fmt), eps=info.eps)


def positive_values(fmt: FloatFormat) -> list[float]:
    """Every finite positive number of an 8- or 16-bit format with a torch dtype, in increasing order.

    torch reads every bit pattern with the sign bit clear; for those, a larger pattern is a larger number.
    """
    dtype = _torch_dtype(fmt)
    patterns = torch.arange(1, 1 << (fmt.total_bits - 1), dtype=torch.int64).to(_BITS_DTYPE[fmt.total_bits])
    values = patterns.view(dtype).double()
    return values[values.isfinite()].tolist()


def round_trip(value: float, dtype: torch.dtype) -> float:
    """What is left of `value` after storing it in `dtype` (round to nearest even; may give 0.0 or inf)."""
    return torch.tensor(value, dtype=torch.float64).to(dtype).item()
