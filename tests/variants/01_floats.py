"""Exercise 1, floats: ldexp on integer fields, limits from exponents, a loop over the shape, exact Fraction thresholds."""

VARIANTS = {
    "decode": """
def decode(bits: int, exponent_bits: int, mantissa_bits: int) -> float:
    '''The value of `bits` in an IEEE-style format with the given field widths, as a float.'''
    negative = (bits >> (exponent_bits + mantissa_bits)) == 1
    exponent = (bits >> mantissa_bits) % (1 << exponent_bits)
    fraction = bits % (1 << mantissa_bits)
    bias = (1 << (exponent_bits - 1)) - 1
    if exponent == (1 << exponent_bits) - 1:
        if fraction != 0:
            return math.nan
        magnitude = math.inf
    elif exponent == 0:
        # subnormal: fraction units of 2^(1 - bias - mantissa_bits)
        magnitude = math.ldexp(fraction, 1 - bias - mantissa_bits)
    else:
        # normal: the integer 1.fraction (mantissa_bits + 1 bits) times 2^(exponent - bias - mantissa_bits)
        magnitude = math.ldexp((1 << mantissa_bits) + fraction, exponent - bias - mantissa_bits)
    return -magnitude if negative else magnitude
""",
    "limits": """
def limits(exponent_bits: int, mantissa_bits: int, ieee_specials: bool = True) -> tuple[float, float, float, float]:
    '''(max, smallest_normal, smallest_subnormal, eps) of a format, as floats.'''
    bias = (1 << (exponent_bits - 1)) - 1
    if ieee_specials:
        top_exponent = (1 << exponent_bits) - 2         # the all-ones exponent is inf/nan
        top_fraction = (1 << mantissa_bits) - 1         # all-ones mantissa
    else:
        top_exponent = (1 << exponent_bits) - 1         # E4M3: the top exponent holds numbers
        top_fraction = (1 << mantissa_bits) - 2         # ... but its all-ones mantissa is nan
    largest = math.ldexp((1 << mantissa_bits) + top_fraction, top_exponent - bias - mantissa_bits)
    return (largest, math.ldexp(1.0, 1 - bias), math.ldexp(1.0, 1 - bias - mantissa_bits), math.ldexp(1.0, -mantissa_bits))
""",
    "tensor_nbytes": """
def tensor_nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    '''Bytes of a dense tensor with this shape and dtype.'''
    numel = 1
    for size in shape:
        numel *= size
    bytes_per_element = torch.empty((), dtype=dtype).element_size()  # one element, not the whole tensor
    return numel * bytes_per_element
""",
    "after_cast": """
from fractions import Fraction


def after_cast(value: float, exponent_bits: int, mantissa_bits: int) -> str:
    '''What storing `value` in the format does to it: zero, underflow, subnormal, normal or overflow.'''
    if value == 0:
        return "zero"
    largest, smallest_normal, smallest_subnormal, _ = limits(exponent_bits, mantissa_bits)
    magnitude = abs(Fraction(value))           # exact: no rounding in the comparisons below
    half_subnormal = Fraction(smallest_subnormal) / 2
    _, power = math.frexp(largest)             # largest < 2^power: the next power of two, where inf starts
    overflow_from = (Fraction(largest) + Fraction(2) ** power) / 2   # halfway; a tie rounds to the even 2^power
    if magnitude >= overflow_from:
        return "overflow"
    if magnitude <= half_subnormal:
        return "underflow"
    if magnitude < Fraction(smallest_normal) - half_subnormal:
        return "subnormal"
    return "normal"
""",
    "weights_gib": """
weights_gib = 7 * 10**9 * 16 / 8 / 1024**3
""",
}
