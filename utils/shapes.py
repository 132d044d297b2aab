"""Shapes checked at run time with jaxtyping + beartype, the short messages they give, and the exercise's checks.

A jaxtyping annotation such as `Float[Tensor, "batch seq d_model"]` is documentation until a type checker reads
it. `typechecked` (jaxtyped + beartype) makes it a promise checked on every call: the dtype kind, the number of
dimensions, and that a name means the same size everywhere in one call (argument to argument, and in the result).
"""
import contextlib
import functools
import inspect
import re
import types
from collections.abc import Iterator
from typing import Callable, NoReturn, TypeVar

import torch
from beartype import beartype
from beartype.roar import BeartypeCallHintViolation
from jaxtyping import TypeCheckError, jaxtyped
from torch import Tensor
from torch._tensor_str import PRINT_OPTS

from utils.grading import global_names

Function = TypeVar("Function", bound=Callable)

# The errors a shape-checked function raises for an argument or a result that breaks its annotation.
SHAPE_ERRORS = (TypeCheckError, BeartypeCallHintViolation)


def typechecked(fn: Function) -> Function:
    """Check `fn`'s jaxtyping annotations on every call: jaxtyped shares dimension sizes, beartype checks types."""
    return jaxtyped(typechecker=beartype)(fn)


@contextlib.contextmanager
def short_tensor_reprs() -> Iterator[None]:
    """Tensors print summarized (first and last item of each axis) while a shape check may refuse a call.

    beartype writes the whole repr of each argument it refuses into its message, and jaxtyping, looking for the
    argument at fault, has beartype refuse a call several times before it raises its own error (which prints a tensor
    as f32[2,3,5,6] and is the message we read). torch formats a repr element by element in Python: a refused call of
    exercise 4's shapes took 14.7 ms, 7.5 ms with this (bench/refused_calls.py, 2-core VM, 2026-11-30). Only the text
    of a refusal changes (a bare @beartype's message, already cut at about 100 characters, shows fewer numbers).
    """
    saved = PRINT_OPTS.threshold, PRINT_OPTS.edgeitems
    torch.set_printoptions(threshold=0, edgeitems=1)
    try:
        yield
    finally:
        torch.set_printoptions(threshold=saved[0], edgeitems=saved[1])


# ---------------------------------------------------------------------------------------------------------------
# Readable shape errors
# ---------------------------------------------------------------------------------------------------------------

_ACTUAL = re.compile(r"^Actual value: (.*?)(?:\(\w+\))?$", re.MULTILINE)
_EXPECTED = re.compile(r"^Expected type: (?:<class ')?(.*?)(?:'>)?\.$", re.MULTILINE)
_WHERE = re.compile(r"whilst checking the (parameters|return value) of ([\w.<>]+)\.")
_PARAMETER = re.compile(r"typechecking parameter '(\w+)'")
_TENSOR = re.compile(r"^([a-z]+\d*)\[([\d,]*)\]$")
_ANNOTATION = re.compile(r"^(\w+)\[\w+, '(.*)'\]$")
_SIZES_HEADER = "The current values for each jaxtyping axis annotation are as follows.\n"
_DTYPE_KINDS = {"Float": ("f", "bf"), "Int": ("i", "u"), "Bool": ("bool",)}


def _bound_sizes(message: str) -> dict[str, int | tuple[int, ...]]:
    """The dimension sizes jaxtyping had bound when it gave up (a variadic `*batch` is a tuple)."""
    if _SIZES_HEADER not in message:
        return {}
    sizes: dict[str, int | tuple[int, ...]] = {}
    for line in message.split(_SIZES_HEADER, 1)[1].splitlines():
        name, _, value = line.partition("=")
        if value.isdigit():
            sizes[name] = int(value)
        elif value.startswith("torch.Size(["):
            sizes[name] = tuple(int(v) for v in value[len("torch.Size(["):-2].split(",") if v.strip())
    return sizes


def _name_sizes(dims: list[str], shape: tuple[int, ...]) -> list[tuple[str, int | tuple[int, ...]]]:
    """(dimension name, size) pairs; a variadic `*name` (at most one) gets the tuple of sizes it covers."""
    variadic = [i for i, d in enumerate(dims) if d.startswith("*") or d == "..."]
    if not variadic:
        return list(zip(dims, shape))
    i = variadic[0]
    tail = len(dims) - i - 1
    middle: list[tuple[str, int | tuple[int, ...]]] = [(dims[i].lstrip("*"), tuple(shape[i:len(shape) - tail]))]
    return list(zip(dims[:i], shape[:i])) + middle + list(zip(dims[i + 1:], shape[len(shape) - tail:]))


def _mismatch(actual: str, expected: str, sizes: dict[str, int | tuple[int, ...]]) -> str | None:
    """Why a value `actual` ('f32[2,5,6]') breaks `expected` ("Float[Tensor, 'b s d']"), when we can tell."""
    tensor, annotation = _TENSOR.match(actual), _ANNOTATION.match(expected)
    if annotation is None:
        return None
    if tensor is None:
        return f"expected a tensor, got {actual}"
    dtype, shape = tensor.group(1), tuple(int(s) for s in tensor.group(2).split(",") if s)
    kind, dims = annotation.group(1), annotation.group(2).split()
    if kind in _DTYPE_KINDS and not dtype.startswith(_DTYPE_KINDS[kind]):
        return f"dtype {dtype} is not a {kind} dtype"
    n_variadic = sum(d.startswith("*") or d == "..." for d in dims)
    n_fixed = len(dims) - n_variadic
    if n_variadic > 1:
        return None
    if len(shape) < n_fixed or (n_variadic == 0 and len(shape) != n_fixed):
        needed = f"at least {n_fixed}" if n_variadic else f"{n_fixed}"
        return f"it has {len(shape)} dimension{'s' * (len(shape) != 1)}, the annotation needs {needed}"
    for name, size in _name_sizes(dims, shape):
        if name.isdigit() and int(name) != size:
            return f"a dimension of size {size} where the annotation fixes {name}"
        if name in sizes and sizes[name] != size:
            return f"{name} is {size} here, but {sizes[name]} elsewhere in this call"
    return None


def shape_error_message(error: BaseException) -> str:
    """A short, readable version of the error a `typechecked` function raises for a wrong shape or dtype.

    Says which argument (or the return value) broke which annotation, what it got, and why when that can be
    worked out (dtype, number of dimensions, or a named size that differs from its size elsewhere in the call).
    """
    message = str(error)
    where, actual, expected = _WHERE.search(message), _ACTUAL.search(message), _EXPECTED.search(message)
    if not (isinstance(error, TypeCheckError) and where and actual and expected):
        first_line = (message.strip().splitlines() or [""])[0]
        return f"{type(error).__name__}: {first_line[:300]}"
    function = where.group(2).rsplit(".", 1)[-1]
    parameter = _PARAMETER.search(message)
    what = f"argument '{parameter.group(1)}'" if where.group(1) == "parameters" and parameter else "the return value"
    sizes = _bound_sizes(message)
    lines = [f"{function}() rejected {what}: got {actual.group(1)}, expected {expected.group(1)}"]
    reason = _mismatch(actual.group(1), expected.group(1), sizes)
    if reason:
        lines.append(f"  why: {reason}")
    if sizes:
        lines.append("  sizes bound in this call: " + ", ".join(f"{name}={size}" for name, size in sizes.items()))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Checks for the exercise (same style as utils.grading: AssertionError with a hint)
# ---------------------------------------------------------------------------------------------------------------

EINOPS_NAMES = {"einops", "rearrange", "reduce", "einsum", "repeat", "pack", "unpack"}


def check_uses_einops(fn: Callable, task: str) -> None:
    """`fn` must call einops (rearrange, reduce, einsum, ...): the task asks for the einops way."""
    if not _reaches_einops(fn):
        raise AssertionError(f"{task}: the solution does not use einops\nHint: this task asks for einops "
                             "(rearrange, reduce or einsum), not view/permute/transpose.")


def _reaches_einops(fn: Callable, depth: int = 3) -> bool:
    """Whether `fn`'s code names einops or something of einops under any name (`from einops import reduce as r`, a
    module alias, a functools.partial of it), directly or through the notebook's own functions it calls, `depth` deep
    (the red team of issue #63: correct answers with an alias or a helper lost their points)."""
    fn = inspect.unwrap(getattr(fn, "_torchdynamo_orig_callable", fn))   # torch.compile's wrapper: the function
    if not hasattr(fn, "__code__"):
        return False
    names = global_names(fn)
    if names & EINOPS_NAMES:
        return True
    for name in names:
        value = fn.__globals__.get(name)
        while isinstance(value, functools.partial):
            value = value.func
        if _of_einops(value):
            return True
        if depth > 0 and inspect.isfunction(value) and value.__module__ == fn.__module__ and value is not fn \
                and _reaches_einops(value, depth - 1):
            return True
    return False


def _of_einops(value: object) -> bool:
    module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "einops"


def _is_jaxtyped(fn: Callable) -> bool:
    """True when the outermost wrapper of `fn` is jaxtyping's (which shares dimension sizes across arguments)."""
    code = getattr(fn, "__code__", None)
    return code is not None and "jaxtyping" in code.co_filename


def _shapes(fn: Callable, args: tuple) -> dict[str, tuple[int, ...]]:
    """The shape of each tensor argument, by its parameter's name."""
    try:
        bound = inspect.signature(inspect.unwrap(fn)).bind(*args)
    except (TypeError, ValueError):
        return {}
    return {name: tuple(value.shape) for name, value in bound.arguments.items() if isinstance(value, Tensor)}


def check_accepts(fn: Callable, args: tuple, what: str, hint: str | None = None) -> object:
    """`fn(*args)` for a valid input; a shape-check error here means the annotations are too strict."""
    try:
        with short_tensor_reprs():
            return fn(*args)
    except SHAPE_ERRORS as error:
        _rejected_a_valid_input(shape_error_message(error), what, hint, annotations_of(fn))


# ---- what the annotations did (issue #61): read from the annotations themselves and the call's shapes ------------
_WHY_NAME = re.compile(r"why: (\S+) is (.+) here, but (.+) elsewhere in this call")
_WRITTEN = re.compile(r"""^(\w+)\[\s*[\w.]+\s*,\s*['"](.*)['"]\s*\]$""")
_WHY_DIMS = re.compile(r"why: it has (\d+) dimensions?, the annotation needs (.+)$", re.MULTILINE)


def annotations_of(fn: Callable) -> dict[str, str]:
    """The jaxtyping annotations of `fn` (unwrapped) as plain text: parameter -> its dimension string, and 'return'."""
    found = {}
    for name, annotation in getattr(inspect.unwrap(fn), "__annotations__", {}).items():
        if isinstance(annotation, str):   # postponed (from __future__ import annotations): read the text
            written = _WRITTEN.match(annotation.strip())
            if written:
                found[name] = f"{written.group(1)}[{written.group(2)}]"
            continue
        dims = getattr(annotation, "dim_str", None)
        if isinstance(dims, str):
            found[name] = f"{getattr(annotation, '__name__', '').split('[')[0]}[{dims}]"
    return found


def _dims(annotation: str) -> list[str]:
    return annotation[annotation.index("[") + 1:-1].split() if "[" in annotation else annotation.split()


def _found_in_rejection(message: str, annotations: dict[str, str]) -> str | None:
    """Why a valid input was rejected, in words: a name given to axes that differ, or a fixed number of axes."""
    name = _WHY_NAME.search(message)
    if name:
        dim, here, there = name.groups()
        holders = [p for p, a in annotations.items() if dim in {d.lstrip("*") for d in _dims(a)}]
        where = f" ({' and '.join(holders)})" if holders else ""
        return (f"your annotations give the one name {dim}{where} to axes that differ in this valid call ({here} and "
                f"{there}): each axis that may differ from another needs its own name")
    dims = _WHY_DIMS.search(message)
    if dims:
        return (f"an annotation fixes the number of axes ({dims.group(2)}), and this valid call has {dims.group(1)}: a "
                "variadic *name stands for any number of leading axes, none included")
    return None


def _aligned(dims: list[str], shape: tuple[int, ...]) -> list[tuple[str, str, int | tuple[int, ...]]]:
    """(place, name, size) of an argument's axes: 'lead' for the variadic part, 'first i' / 'last i' for fixed axes."""
    pairs = _name_sizes(dims, shape)
    variadic = next((i for i, d in enumerate(dims) if d.startswith("*") or d == "..."), None)
    places = []
    for i, (name, size) in enumerate(pairs):
        if variadic is None or i < variadic:
            places.append((f"first {i}", name, size))
        elif i == variadic:
            places.append(("lead", dims[variadic], size))
        else:
            places.append((f"last {len(pairs) - i}", name, size))
    return places


def _found_in_acceptance(annotations: dict[str, str], shapes: dict[str, tuple[int, ...]]) -> str | None:
    """Why a wrong input got through the annotations: axes that differ in it at the same place of two arguments
    whose names differ (or are a bare ...), so nothing compares them."""
    found = []
    names = [p for p in shapes if p in annotations]
    for a, b in [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]:
        place_b = {place: (name, size) for place, name, size in _aligned(_dims(annotations[b]), shapes[b])}
        for place, name, size in _aligned(_dims(annotations[a]), shapes[a]):
            if place in place_b and place_b[place][1] != size and (name != place_b[place][0] or name == "..."):
                other, other_size = place_b[place]
                found.append(f"{a}'s {name} {size} and {b}'s {other} {other_size}")
    if not found:
        return None
    return ("in this input " + "; ".join(found) + " differ, and nothing compares them: names that differ (or a bare "
            "...) are never compared across arguments; axes that must agree need one shared name")


def _rejected_a_valid_input(message: str, what: str, hint: str | None,
                            annotations: dict[str, str] | None = None) -> NoReturn:
    found = _found_in_rejection(message, annotations or {})
    text = f"{what}: rejected a valid input\n{message}" + (f"\nFound: {found}" if found else "")
    text += "\nHint: compare your annotations with the task text."
    if hint:
        text += f" {hint}"
    raise AssertionError(text) from None


def _let_a_wrong_input_in(detail: str, decorated: bool, jaxtyped: bool, what: str, hint: str | None,
                          found: str | None = None) -> NoReturn:
    if decorated and not jaxtyped:
        advice = ("the function is decorated, but not with jaxtyped: beartype alone checks each argument on its own "
                  "and never compares sizes across arguments. Use @typechecked (jaxtyped + beartype).")
    elif decorated:
        advice = ("the annotations let this input in: sizes that must agree need the same dimension name, and "
                  "the dtype kind (Float, Bool) must match the task.")
    else:
        advice = ("the function has no decorator, and annotations alone are documentation: nothing checks them. "
                  "Put @typechecked (or @jaxtyped(typechecker=beartype)) on the line above `def`.")
    message = f"{what}: {detail}" + (f"\nFound: {found}" if found and decorated and jaxtyped else "") + f"\nHint: {advice}"
    if hint:
        message += f" {hint}"
    raise AssertionError(message)


def _returned(result: object) -> str:
    shape = tuple(result.shape) if isinstance(result, Tensor) else type(result).__name__
    return f"accepted a wrong input and returned {shape}"


RAISED_INSIDE = ("the annotations let this valid input in, and then the function's body raised: call it yourself on "
                 "inputs of these shapes and read the traceback (lecture 4, sections 3 and 7).")


def _raised_inside(error: BaseException) -> str:
    return f"raised {type(error).__name__} from inside the function, not a shape-check error: {str(error)[:200]}"


def check_rejects(fn: Callable, args: tuple, what: str, hint: str | None = None) -> str:
    """Calling `fn(*args)` must raise a shape-check error (jaxtyping/beartype); returns its short message."""
    try:
        with short_tensor_reprs():
            result = fn(*args)
    except SHAPE_ERRORS as error:
        return shape_error_message(error)
    except Exception as error:  # the wrong input got past the annotations and broke the code inside
        detail = _raised_inside(error)
    else:
        detail = _returned(result)
    _let_a_wrong_input_in(detail, hasattr(fn, "__wrapped__"), _is_jaxtyped(fn), what, hint,
                          _found_in_acceptance(annotations_of(fn), _shapes(fn, args)))


# ---- hidden tests: the call observed in the student's process, judged in the grader's (utils/handin.py) ----------

def observe_call(fn: Callable, args: tuple) -> dict:
    """What `fn(*args)` did, as plain data to hand in: {"outcome": "returned" | "rejected" | "raised", "result": the
    value returned (None otherwise), "message": the short shape-error message, what else was raised or what was returned,
    "decorated", "jaxtyped": how `fn` is wrapped}. `judge_accepts` and `judge_rejects` give the verdict."""
    observed = {"outcome": "returned", "result": None, "message": "",
                "decorated": hasattr(fn, "__wrapped__"), "jaxtyped": _is_jaxtyped(fn),
                "annotations": annotations_of(fn), "shapes": _shapes(fn, args)}
    try:
        with short_tensor_reprs():
            observed["result"] = fn(*args)
        observed["message"] = _returned(observed["result"])
    except SHAPE_ERRORS as error:
        observed.update(outcome="rejected", message=shape_error_message(error))
    except Exception as error:
        observed.update(outcome="raised", message=_raised_inside(error))
    return observed


def _observation(observed: object, what: str) -> dict:
    if (type(observed) is not dict or observed.get("outcome") not in ("returned", "rejected", "raised")
            or type(observed.get("message")) is not str or type(observed.get("decorated")) is not bool
            or type(observed.get("jaxtyped")) is not bool):
        raise AssertionError(f"{what}: the observation handed in is not one of utils.shapes.observe_call's")
    return observed


def _plain_annotations(observed: dict) -> tuple[dict[str, str], dict[str, tuple[int, ...]]]:
    """The annotations and argument shapes an observation holds, if they are plain text and tuples of ints."""
    annotations, shapes = observed.get("annotations"), observed.get("shapes")
    if type(annotations) is not dict or not all(type(k) is str and type(v) is str for k, v in annotations.items()):
        annotations = {}
    if type(shapes) is not dict or not all(type(k) is str and type(v) is tuple and all(type(n) is int for n in v)
                                           for k, v in shapes.items()):
        shapes = {}
    return annotations, shapes


def judge_accepts(observed: object, what: str, hint: str | None = None) -> object:
    """check_accepts' verdict on an `observe_call` of a valid input: its result, or AssertionError."""
    observed = _observation(observed, what)
    if observed["outcome"] == "rejected":
        _rejected_a_valid_input(observed["message"], what, hint, _plain_annotations(observed)[0])
    if observed["outcome"] == "raised":
        raise AssertionError(f"{what}: {observed['message']}\nHint: {hint or RAISED_INSIDE}")
    return observed["result"]


def judge_rejects(observed: object, what: str, hint: str | None = None) -> str:
    """check_rejects' verdict on an `observe_call` of a wrong input: the short message, or AssertionError."""
    observed = _observation(observed, what)
    if observed["outcome"] == "rejected":
        return observed["message"]
    detail = observed["message"]  # what it returned instead, or what else it raised
    _let_a_wrong_input_in(detail, observed["decorated"], observed["jaxtyped"], what, hint,
                          _found_in_acceptance(*_plain_annotations(observed)))


def merge_heads_input(case: dict) -> Tensor:
    """The input of one of exercise 4's hidden merge_heads cases: the tensor sent or, when `transposed`, its
    transpose(1, 2), non-contiguous as a transpose makes it (a tensor crosses to the notebook contiguous)."""
    return case["x"].transpose(1, 2) if case["transposed"] else case["x"]
