"""How a hidden test hands a student's results to the grader: the plumbing only, no answers and no checks.

A hidden test (the instructor-only part at the end of a graded test cell, which students never see) does two things
with the student's code and nothing else:

    cases = hidden_cases("models_optimizers.largest_model")      # the inputs, made by the instructor's code
    hand_in("models_optimizers.largest_model", [largest_model(*case) for case in cases])

Under the grader the notebook runs in a sandboxed process that cannot read the instructor's references: the grader
computes the cases in a trusted process and sends them with the test cell; the results handed in go back to it as
data, and a trusted process compares them with the expected results, which never enter the student's process. In an
instructor's own run of the exercise (JupyterLab, nbval, plain nbgrader), both calls ask the references in this
process and `hand_in` checks at once, raising the same AssertionError.

Values cross the boundary as JSON that keeps exact types: None, bool, int, float (bit-exact, nan and inf
included), str, tuple, list, dict with str keys, torch.dtype and torch.Tensor (dtype, shape, device and bytes).
Anything else is handed in as its type's name, so a check sees "expected a float, got float64" rather than a value
that pretends to be one. Decoding only ever builds those types: nothing from a sandbox is unpickled or run.
"""
from __future__ import annotations

import base64
import functools
import json
import math
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

HANDIN_LIMIT_BYTES = 8 * 2**20  # the most a hidden test may hand in (JSON text); more fails the test


class Channel:
    """The grader's side of one test cell, set by the notebook process before the cell runs. `active` is False
    outside the grader."""

    def __init__(self) -> None:
        self.active = False
        self.cases: dict[str, str] = {}    # key -> encoded cases, for this cell only
        self.handed: dict[str, str] = {}   # key -> encoded results, read by the grader after the cell

    def begin(self, cases: dict[str, str]) -> None:
        self.active, self.cases, self.handed = True, dict(cases), {}

    def end(self) -> dict[str, str]:
        handed, self.cases, self.handed = self.handed, {}, {}
        return handed


CHANNEL = Channel()


def hidden_cases(key: str) -> object:
    """The inputs of hidden test `key` ("<reference module>.<test>"), as Python values (tensors on the CPU)."""
    if CHANNEL.active:
        if key not in CHANNEL.cases:
            raise LookupError(f"the grader sent no cases for hidden test {key!r}")
        return decode(CHANNEL.cases[key])
    from reference import hidden  # an instructor's own run: the references are right here
    hidden.expected(key)  # now, before the test stubs anything the references use (utils.grading.forbidden)
    return decode(encode(hidden.cases(key)))


def hand_in(key: str, results: object) -> None:
    """Give the student's results for hidden test `key` to the grader (outside the grader: check them here)."""
    text = encode(results)
    if len(text) > HANDIN_LIMIT_BYTES:
        raise ValueError(f"the results handed in for {key!r} are {len(text):,} bytes of JSON; the limit is "
                         f"{HANDIN_LIMIT_BYTES:,}")
    if CHANNEL.active:
        CHANNEL.handed[key] = text
        return
    from reference import hidden
    hidden.check(key, decode(text))


def outcome(fn, *args, **kwargs) -> tuple[str, object]:
    """What calling `fn` did, as data to hand in: ("returned", the value) or ("raised", the exception's type name)."""
    try:
        return "returned", fn(*args, **kwargs)
    except Exception as error:  # which exception it was is the observation
        return "raised", type(error).__name__


# ---- encoding ------------------------------------------------------------------------------------------------
def _tensor_bytes(t: torch.Tensor) -> bytes:
    import torch
    flat = torch.empty(t.numel(), dtype=t.dtype).copy_(t.detach().reshape(-1))  # stride 1, whatever t's strides
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _to_json(value: object) -> object:
    kind = type(value)  # exact types only: a subclass of float is not a float here
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if type(value) is float:   # type(value) again, not `kind`: mypy narrows `value` on this test only
        return {"float": float.hex(value)}
    if type(value) is tuple:
        return {"tuple": [_to_json(v) for v in value]}
    if type(value) is list:
        return [_to_json(v) for v in value]
    if type(value) is dict and all(type(k) is str for k in value):
        return {"dict": {k: _to_json(v) for k, v in value.items()}}
    # torch only if this process loaded it: a course that never imports torch never pays for it here (no value of
    # torch's types can exist without it)
    loaded = sys.modules.get("torch")
    if loaded is not None and kind is loaded.dtype:
        return {"dtype": str(value).removeprefix("torch.")}
    if loaded is not None and (kind is loaded.Tensor or kind is loaded.nn.Parameter):
        tensor: torch.Tensor = value   # exactly one of the two (mypy does not read torch, so it cannot narrow `value`)
        data = _tensor_bytes(tensor)
        return {"tensor": {"dtype": str(tensor.dtype).removeprefix("torch."), "shape": list(tensor.shape),
                           "device": str(tensor.device), "parameter": kind is loaded.nn.Parameter,
                           "requires_grad": bool(tensor.requires_grad), "data": base64.b64encode(data).decode()}}
    return {"other": f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__}


def encode(value: object) -> str:
    """`value` as JSON text that keeps its exact type (see the module docstring)."""
    return json.dumps(_to_json(value), allow_nan=False)


class Other:
    """A handed-in value of a type the channel does not carry: only its type's name came through."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name}>"


class DecodeError(ValueError):
    """What was handed in is not an encoded value (malformed, or crafted to lie): the student's failure."""


# The dtypes a hand-in may carry: those whose every bit pattern is a valid value (plus bool, checked byte by byte).
# Anything else (quantized types, for one) is refused before a tensor is built from the bytes.
@functools.cache
def safe_dtypes() -> dict[str, torch.dtype]:
    """The dtypes by name (torch is imported on the first decode of a dtype or a tensor)."""
    import torch
    return {str(t).removeprefix("torch."): t for t in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8,
        torch.uint8, torch.bool, torch.complex64, torch.complex128, torch.float8_e4m3fn, torch.float8_e5m2)}


MAX_DIMS = 16


def _dtype(name: object) -> torch.dtype:
    if type(name) is not str or name not in safe_dtypes():
        raise DecodeError(f"not a dtype results may carry: {str(name)[:40]!r}")
    return safe_dtypes()[name]


def _tensor(spec: dict) -> torch.Tensor:
    import torch
    if set(spec) != {"dtype", "shape", "device", "parameter", "requires_grad", "data"}:
        raise DecodeError("a tensor with other fields than encode writes")
    dtype, shape = _dtype(spec["dtype"]), spec["shape"]
    if type(shape) is not list or len(shape) > MAX_DIMS or any(type(n) is not int or not 0 <= n < 2**40 for n in shape):
        raise DecodeError("a tensor's shape must be a list of at most 16 sizes, each a whole number from 0")
    if type(spec["data"]) is not str or any(type(spec[k]) is not bool for k in ("parameter", "requires_grad")):
        raise DecodeError("a tensor's data must be base64 text and its flags true or false")
    data = base64.b64decode(spec["data"], validate=True)
    if math.prod(shape) * torch.empty(0, dtype=dtype).element_size() != len(data):
        raise DecodeError("a tensor's bytes do not match its shape and dtype")
    if dtype is torch.bool and data.translate(None, b"\x00\x01"):
        raise DecodeError("a bool tensor's bytes must each be 0 or 1")
    tensor = torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape) if data else torch.empty(shape, dtype=dtype)
    if spec["parameter"]:
        return torch.nn.Parameter(tensor, requires_grad=spec["requires_grad"] and dtype.is_floating_point)
    return tensor.requires_grad_(spec["requires_grad"] and (dtype.is_floating_point or dtype.is_complex))


def _from_json(value: object) -> object:
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is list:
        return [_from_json(v) for v in value]
    if type(value) is dict and len(value) == 1:
        (tag, inner), = value.items()
        if tag == "float" and type(inner) is str:
            return float.fromhex(inner)
        if tag == "tuple" and type(inner) is list:
            return tuple(_from_json(v) for v in inner)
        if tag == "dict" and type(inner) is dict:
            return {k: _from_json(v) for k, v in inner.items()}
        if tag == "dtype":
            return _dtype(inner)
        if tag == "tensor" and type(inner) is dict:
            return _tensor(inner)
        if tag == "other" and type(inner) is str:
            return Other(inner[:200])
    raise DecodeError(f"not an encoded value: {str(value)[:80]!r}")


def decode(text: object) -> object:
    """The value `encode` wrote, with tensors on the CPU (a hidden test that cares about the device hands in
    `str(tensor.device)` too). DecodeError, and nothing else, for anything that is not such a value."""
    if type(text) is not str or len(text) > HANDIN_LIMIT_BYTES:
        raise DecodeError("results must be JSON text within the hand-in limit")
    try:
        return _from_json(json.loads(text, parse_constant=_no_constants))
    except DecodeError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError, RuntimeError, MemoryError) as error:
        raise DecodeError(f"the results could not be read ({error.__class__.__name__})") from None


def _no_constants(name: str) -> object:
    raise DecodeError(f"{name} is not a value encode writes")
