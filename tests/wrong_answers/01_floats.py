"""Exercise 1, floats: typical wrong answers."""
from tests.wrong_answers import Wrong

WRONG = [
    Wrong("decode", "no subnormal case: the implicit leading 1 is added for exponent field 0 too", r"subnormal", """
def decode(bits, exponent_bits, mantissa_bits):
    sign = -1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0
    exponent = (bits >> mantissa_bits) & (2**exponent_bits - 1)
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1) - 1
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf if fraction == 0 else math.nan
    return sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
"""),
    Wrong("decode", "the bias is 2^(E-1) instead of 2^(E-1) - 1", r"bias", """
def decode(bits, exponent_bits, mantissa_bits):
    sign = -1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0
    exponent = (bits >> mantissa_bits) & (2**exponent_bits - 1)
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1)
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf if fraction == 0 else math.nan
    if exponent == 0:
        return sign * (fraction / 2**mantissa_bits) * 2.0 ** (1 - bias)
    return sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
"""),
    Wrong("decode", "the all-ones exponent is always inf, even with a non-zero mantissa (nan)", r"\bnan\b", """
def decode(bits, exponent_bits, mantissa_bits):
    sign = -1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0
    exponent = (bits >> mantissa_bits) & (2**exponent_bits - 1)
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1) - 1
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf
    if exponent == 0:
        return sign * (fraction / 2**mantissa_bits) * 2.0 ** (1 - bias)
    return sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
"""),
    Wrong("limits", "max uses the all-ones exponent, which IEEE formats reserve for inf and nan", r"inf|reserved|all-ones", """
def limits(exponent_bits, mantissa_bits, ieee_specials=True):
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2**exponent_bits - 1
    largest = (2 - 2.0**-mantissa_bits) * 2.0 ** (top - bias)
    if not ieee_specials:
        largest = (2 - 2 * 2.0**-mantissa_bits) * 2.0 ** (top - bias)
    return largest, 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits), 2.0**-mantissa_bits
"""),
    Wrong("limits", "eps taken as half the gap (the rounding error) instead of the gap after 1.0", r"eps|gap", """
def limits(exponent_bits, mantissa_bits, ieee_specials=True):
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2**exponent_bits - 1
    if ieee_specials:
        largest = (2 - 2.0**-mantissa_bits) * 2.0 ** (top - 1 - bias)
    else:
        largest = (2 - 2 * 2.0**-mantissa_bits) * 2.0 ** (top - bias)
    return largest, 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits), 2.0 ** -(mantissa_bits + 1)
"""),
    Wrong("limits", "E4M3's max keeps the all-ones mantissa, which is its nan", r"nan|110|mantissa", """
def limits(exponent_bits, mantissa_bits, ieee_specials=True):
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2**exponent_bits - 1
    if ieee_specials:
        largest = (2 - 2.0**-mantissa_bits) * 2.0 ** (top - 1 - bias)
    else:
        largest = (2 - 2.0**-mantissa_bits) * 2.0 ** (top - bias)
    return largest, 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits), 2.0**-mantissa_bits
"""),
    Wrong("tensor_nbytes", "counts elements, not bytes", r"bytes? (per|of each|each)|itemsize|element size", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape)
"""),
    Wrong("tensor_nbytes", "makes the tensor to ask its size, which a 2 TB tensor cannot be", r"without (allocating|creating|making)|do not create|don't create", """
def tensor_nbytes(shape, dtype):
    t = torch.empty(shape, dtype=dtype)
    return t.numel() * t.element_size()
"""),
    Wrong("tensor_nbytes", "bytes from torch.finfo, which knows only floating-point dtypes", r"int|itemsize|every dtype", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape) * torch.finfo(dtype).bits // 8
"""),
    Wrong("after_cast", "underflow only below the smallest subnormal, not at half of it", r"half", """
def after_cast(value, exponent_bits, mantissa_bits):
    if value == 0:
        return "zero"
    largest, smallest_normal, smallest_subnormal, eps = limits(exponent_bits, mantissa_bits)
    top_step = largest * eps / (2 - eps)
    magnitude = abs(value)
    if magnitude >= largest + top_step / 2:
        return "overflow"
    if magnitude < smallest_subnormal:
        return "underflow"
    if magnitude < smallest_normal - smallest_subnormal / 2:
        return "subnormal"
    return "normal"
"""),
    Wrong("after_cast", "overflow as soon as the value passes max, without the half step of rounding", r"half a step|half|rounds down", """
def after_cast(value, exponent_bits, mantissa_bits):
    if value == 0:
        return "zero"
    largest, smallest_normal, smallest_subnormal, eps = limits(exponent_bits, mantissa_bits)
    magnitude = abs(value)
    if magnitude > largest:
        return "overflow"
    if magnitude <= smallest_subnormal / 2:
        return "underflow"
    if magnitude < smallest_normal - smallest_subnormal / 2:
        return "subnormal"
    return "normal"
"""),
    Wrong("weights_gib", 'GB (10^9 bytes) where GiB were asked', r"GB \(10\^9", """
weights_gib = 7e9 * 2 / 1e9
"""),
    Wrong("weights_gib", '4 bytes per parameter, as if the weights were fp32', r"fp32|4 bytes", """
weights_gib = 7e9 * 4 / 2**30
"""),
    Wrong("weights_gib", 'the answer written as a string with its unit', r"plain number", """
weights_gib = "13 GiB"
"""),
]
