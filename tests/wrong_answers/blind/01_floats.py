"""Exercise 1, floats: wrong answers written from the student edition alone (see __init__.py)."""
from tests.wrong_answers import Wrong

_DECODE = '''
def decode(bits, exponent_bits, mantissa_bits):
    sign = (bits >> (exponent_bits + mantissa_bits)) & 1
    e = {exponent}
    f = bits & ((1 << mantissa_bits) - 1)
    bias = {bias}
    s = -1.0 if sign else 1.0
    if e == (1 << exponent_bits) - 1:
        {specials}
    if e == 0:
        {subnormal}
    return s * (1 + f / {scale}) * 2.0 ** (e - bias)
'''
_D = dict(exponent="(bits >> mantissa_bits) & ((1 << exponent_bits) - 1)", bias="2 ** (exponent_bits - 1) - 1",
          specials="return s * math.inf if f == 0 else math.nan",
          subnormal="return s * (f / 2**mantissa_bits) * 2.0 ** (1 - bias)", scale="2**mantissa_bits")

_LIMITS = '''
def limits(exponent_bits, mantissa_bits, ieee_specials=True):
    bias = 2 ** (exponent_bits - 1) - 1
    top = 2 ** exponent_bits - 1
    {body}
    return {result}
'''
_L = dict(body='''emax = top - 1 if ieee_specials else top
    frac = 2.0 - 2.0 ** -mantissa_bits if ieee_specials else 2.0 - 2.0 ** (1 - mantissa_bits)
    largest = frac * 2.0 ** (emax - bias)
    normal = 2.0 ** (1 - bias)
    sub = 2.0 ** (1 - bias - mantissa_bits)
    eps = 2.0 ** -mantissa_bits''', result="(largest, normal, sub, eps)")

_CAST = '''
def after_cast(value, exponent_bits, mantissa_bits):
    largest, normal, sub, eps = limits(exponent_bits, mantissa_bits)
    a = {a}
    if a == 0:
        return "zero"
    if {under}:
        return "underflow"
    if {subn}:
        return "subnormal"
    if {norm}:
        return "normal"
    return {over}
'''
_C = dict(a="abs(value)", under="a <= sub / 2", subn="a < normal - sub / 2",
          norm="a < largest + 2.0 ** (math.log2(normal) + math.log2(largest) - math.log2(normal) - mantissa_bits) / 2",
          over='"overflow"')
# the half step above max: max's exponent minus the mantissa bits, halved
_C["norm"] = "a < largest + 2.0 ** (math.floor(math.log2(largest)) - mantissa_bits) / 2"

WRONG = [
    Wrong("decode", "bias 2^(E-1) instead of 2^(E-1) - 1", r"bias", _DECODE.format(**{**_D, "bias": "2 ** (exponent_bits - 1)"})),
    Wrong("decode", "subnormals scaled by 2^(-bias) instead of 2^(1 - bias)", r"1 - bias|one below|same power|exponent field 1",
          _DECODE.format(**{**_D, "subnormal": "return s * (f / 2**mantissa_bits) * 2.0 ** (-bias)"})),
    Wrong("decode", "an all-ones exponent is inf whatever the mantissa", r"mantissa is 0|only when|f = 0|f == 0|any other mantissa",
          _DECODE.format(**{**_D, "specials": "return s * math.inf"})),
    Wrong("decode", "a zero returns 0.0 before the sign is applied, so -0.0 is lost", r"sign",
          _DECODE.format(**{**_D, "subnormal": "return 0.0 if f == 0 else s * (f / 2**mantissa_bits) * 2.0 ** (1 - bias)"})),
    Wrong("decode", "the exponent is not masked, so the sign bit leaks into it", r"sign bit|mask|its own",
          _DECODE.format(**{**_D, "exponent": "bits >> mantissa_bits"})),
    Wrong("decode", "the mantissa divided by 2^M - 1 instead of 2^M", r"2\^M|2\*\*M|2\*\*mantissa|f / 2|units of",
          _DECODE.format(**{**_D, "scale": "(2**mantissa_bits - 1)"})),
    Wrong("decode", "the implicit leading 1 added to subnormals too", r"implicit|leading 1",
          _DECODE.format(**{**_D, "subnormal": "return s * (1 + f / 2**mantissa_bits) * 2.0 ** (1 - bias)"})),
    Wrong("limits", "max uses the all-ones exponent, which IEEE formats reserve for inf and nan",
          r"reserved|inf and nan|the field below", _LIMITS.format(**{**_L, "body": _L["body"].replace(
              "emax = top - 1 if ieee_specials else top", "emax = top")})),
    Wrong("limits", "max without the all-ones mantissa: 2^emax only", r"all-ones mantissa|mantissa",
          _LIMITS.format(**{**_L, "body": _L["body"].replace("largest = frac *", "largest = 1.0 *")})),
    Wrong("limits", "eps as half the gap (unit roundoff, 2^-(M+1))", r"gap|next larger|half",
          _LIMITS.format(**{**_L, "body": _L["body"].replace("eps = 2.0 ** -mantissa_bits", "eps = 2.0 ** -(mantissa_bits + 1)")})),
    Wrong("limits", "smallest subnormal one power of two too low: 2^(-bias - M)", r"1 - bias|one below|same power|exponent field 1",
          _LIMITS.format(**{**_L, "body": _L["body"].replace("sub = 2.0 ** (1 - bias - mantissa_bits)",
                                                                 "sub = 2.0 ** (-bias - mantissa_bits)")})),
    Wrong("limits", "E4M3's max keeps the all-ones mantissa, which is nan there (480 instead of 448)", r"nan|110|all-ones mantissa",
          _LIMITS.format(**{**_L, "body": _L["body"].replace(
              "frac = 2.0 - 2.0 ** -mantissa_bits if ieee_specials else 2.0 - 2.0 ** (1 - mantissa_bits)",
              "frac = 2.0 - 2.0 ** -mantissa_bits")})),
    Wrong("limits", "returns a list, not a tuple", r"tuple", _LIMITS.format(**{**_L, "result": "[largest, normal, sub, eps]"})),
    Wrong("limits", "max computed with ints, so an int comes back", r"float",
          _LIMITS.format(**{**_L, "body": _L["body"].replace("largest = frac * 2.0 ** (emax - bias)",
              "largest = (2 ** (mantissa_bits + 1) - (1 if ieee_specials else 2)) * 2 ** (emax - bias - mantissa_bits)")})),
    Wrong("tensor_nbytes", "bytes per element from torch.finfo, which knows no integer dtype", r"itemsize|floating|integer", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape) * torch.finfo(dtype).bits // 8
"""),
    Wrong("tensor_nbytes", "the number of elements, without their size", r"bytes per element|itemsize|element size|x 4 bytes", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape)
"""),
    Wrong("tensor_nbytes", "bits, not bytes: itemsize times 8", r"bits|8x|byte is 8", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape) * dtype.itemsize * 8
"""),
    Wrong("tensor_nbytes", "the sum of the sizes instead of their product", r"product|multipl|numel|elements x", """
def tensor_nbytes(shape, dtype):
    return sum(shape) * dtype.itemsize
"""),
    Wrong("tensor_nbytes", "numpy's prod: a numpy integer comes back", r"plain int|int64|numpy", """
import numpy as np
def tensor_nbytes(shape, dtype):
    return np.prod(shape, dtype=np.int64) * dtype.itemsize
"""),
    Wrong("tensor_nbytes", "4 bytes for every dtype", r"itemsize|dtype|bytes per element", """
def tensor_nbytes(shape, dtype):
    return math.prod(shape) * 4
"""),
    Wrong("after_cast", "no halfway points: underflow below the smallest subnormal, overflow above max",
          r"half", _CAST.format(**{**_C, "under": "a < sub", "subn": "a < normal", "norm": "a <= largest"})),
    Wrong("after_cast", "overflow as soon as the value is above max", r"half a step|halfway|rounds down",
          _CAST.format(**{**_C, "norm": "a <= largest"})),
    Wrong("after_cast", "a tie at half the smallest subnormal rounds up (< instead of <=)", r"tie|even|exactly half",
          _CAST.format(**{**_C, "under": "a < sub / 2"})),
    Wrong("after_cast", "the cut between subnormal and normal at the smallest normal itself",
          r"half a subnormal step|below the smallest normal|rounds up to the smallest normal|cut",
          _CAST.format(**{**_C, "subn": "a < normal"})),
    Wrong("after_cast", "no abs: a negative value compares as tiny", r"sign|negative|abs",
          _CAST.format(**{**_C, "a": "value"})),
    Wrong("after_cast", "answers 'inf' instead of 'overflow'", r"five words|one of the", _CAST.format(**{**_C, "over": '"inf"'})),
    Wrong("after_cast", "inf starts a whole step above max, not half a step", r"half a step|halfway",
          _CAST.format(**{**_C, "norm": "a < largest + 2.0 ** (math.floor(math.log2(largest)) - mantissa_bits)"})),
    Wrong("weights_gib", "GB (10^9) instead of GiB", r"\bGB\b|10\^9", "weights_gib = 7e9 * 2 / 1e9\n"),
    Wrong("weights_gib", "4 bytes per parameter (fp32) for bf16", r"4 bytes|fp32|float32|bytes per param", "weights_gib = 7e9 * 4 / 2**30\n"),
    Wrong("weights_gib", "bits, not bytes", r"bits", "weights_gib = 7e9 * 16 / 2**30\n"),
    Wrong("weights_gib", "one byte per parameter", r"2 bytes|bytes per param|bf16", "weights_gib = 7e9 / 2**30\n"),
    Wrong("weights_gib", "MiB instead of GiB", r"MiB|1,?024", "weights_gib = 7e9 * 2 / 2**20\n"),
]
