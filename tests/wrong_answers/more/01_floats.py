"""Exercise 1, floats: more typical wrong answers (issue #50)."""
from tests.wrong_answers import Wrong

_DECODE = '''
def decode(bits, exponent_bits, mantissa_bits):
    sign = {sign}
    exponent = {exponent}
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1) - 1
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf if fraction == 0 else math.nan
    if exponent == 0:
        return sign * (fraction / 2**mantissa_bits) * 2.0 ** ({subnormal})
    return sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
'''
_SIGN = "-1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0"
_EXPONENT = "(bits >> mantissa_bits) & (2**exponent_bits - 1)"
_LIMITS = '''
def limits(exponent_bits, mantissa_bits, ieee_specials=True):
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2**exponent_bits - 1
    if ieee_specials:
        largest = (2 - 2.0**-mantissa_bits) * 2.0 ** (top - 1 - bias)
    else:
        largest = {e4m3}
    return {result}
'''
_E4M3 = "(2 - 2 * 2.0**-mantissa_bits) * 2.0 ** (top - bias)"
_RESULT = "largest, 2.0 ** (1 - bias), 2.0 ** (1 - bias - mantissa_bits), 2.0**-mantissa_bits"
_AFTER_CAST = '''
def after_cast(value, exponent_bits, mantissa_bits):
    if value == 0:
        return "zero"
    largest, smallest_normal, smallest_subnormal, eps = limits(exponent_bits, mantissa_bits)
    top_step = largest * eps / (2 - eps)
    magnitude = {magnitude}
    if magnitude >= largest + top_step / 2:
        return {overflow}
    if magnitude <= {underflow}:
        return "underflow"
    if magnitude < smallest_normal - smallest_subnormal / 2:
        return "subnormal"
    return "normal"
'''
_CAST = dict(magnitude="abs(value)", overflow='"overflow"', underflow="smallest_subnormal / 2")

WRONG = [
    Wrong("decode", "the sign as the int -1, multiplied into the int fraction first, so -0.0 comes out as +0.0",
          r"-0\.0|negative zero|survive a zero", """
def decode(bits, exponent_bits, mantissa_bits):
    sign = -1 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1
    exponent = (bits >> mantissa_bits) & (2**exponent_bits - 1)
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1) - 1
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf if fraction == 0 else math.nan
    if exponent == 0:
        return sign * fraction / 2**mantissa_bits * 2.0 ** (1 - bias)
    return sign * (1 + fraction / 2**mantissa_bits) * 2.0 ** (exponent - bias)
"""),
    Wrong("decode", "the exponent field keeps the sign bit: no mask after the shift", r"sign bit|top bit", _DECODE.format(
        sign=_SIGN, exponent="bits >> mantissa_bits", subnormal="1 - bias")),
    Wrong("decode", "subnormals scaled by 2^(-bias) instead of 2^(1 - bias)", r"smallest normal|1 - bias", _DECODE.format(
        sign=_SIGN, exponent=_EXPONENT, subnormal="-bias")),
    Wrong("decode", "the mantissa divided by 2^(M - 1) instead of 2^M", r"mantissa|fraction", """
def decode(bits, exponent_bits, mantissa_bits):
    sign = -1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0
    exponent = (bits >> mantissa_bits) & (2**exponent_bits - 1)
    fraction = bits & (2**mantissa_bits - 1)
    bias = 2 ** (exponent_bits - 1) - 1
    if exponent == 2**exponent_bits - 1:
        return sign * math.inf if fraction == 0 else math.nan
    if exponent == 0:
        return sign * (fraction / 2 ** (mantissa_bits - 1)) * 2.0 ** (1 - bias)
    return sign * (1 + fraction / 2 ** (mantissa_bits - 1)) * 2.0 ** (exponent - bias)
"""),
    Wrong("limits", "smallest_normal from exponent field 0, 2^(-bias)", r"exponent field 1|smallest normal",
          _LIMITS.format(e4m3=_E4M3, result="largest, 2.0 ** (-bias), 2.0 ** (1 - bias - mantissa_bits), 2.0**-mantissa_bits")),
    Wrong("limits", "smallest_subnormal one binade too small, 2^(-bias - M)", r"exponent field 0|subnormal", _LIMITS.format(
        e4m3=_E4M3, result="largest, 2.0 ** (1 - bias), 2.0 ** (-bias - mantissa_bits), 2.0**-mantissa_bits")),
    Wrong("limits", "a list instead of a tuple", r"tuple", _LIMITS.format(e4m3=_E4M3, result=f"[{_RESULT}]")),
    Wrong("limits", "ignores ieee_specials: E4M3 gets the IEEE max, 240", r"E4M3|exponent field 15|ieee_specials",
          _LIMITS.format(e4m3="(2 - 2.0**-mantissa_bits) * 2.0 ** (top - 1 - bias)", result=_RESULT)),
    Wrong("tensor_nbytes", "adds the sizes of the dimensions instead of multiplying them", r"elements|product", """
def tensor_nbytes(shape, dtype):
    return sum(shape) * dtype.itemsize
"""),
    Wrong("tensor_nbytes", "returns a 0-dim tensor from torch.prod", r"\bint\b", """
def tensor_nbytes(shape, dtype):
    return torch.tensor(shape).prod() * dtype.itemsize
"""),
    Wrong("tensor_nbytes", "bits, not bytes: itemsize times 8", r"bytes", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape) * dtype.itemsize * 8
"""),
    Wrong("after_cast", "compares the value, not its size, so a large negative number underflows", r"sign|negative|abs",
          _AFTER_CAST.format(**{**_CAST, "magnitude": "value"})),
    Wrong("after_cast", "underflow below half the smallest normal, not half the smallest subnormal",
          r"subnormal", _AFTER_CAST.format(**{**_CAST, "underflow": "smallest_normal / 2"})),
    Wrong("after_cast", "answers 'inf' for an overflow, a word the task does not use", r"one of the five|five words",
          _AFTER_CAST.format(**{**_CAST, "overflow": '"inf"'})),
]
