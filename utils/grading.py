"""Checks used by the exercise tests: strict about types, dtypes and shapes, and written to give a hint.

Each check raises AssertionError with a message a student can act on. The comparisons use references to
torch's functions taken when this module is first imported (by an exercise's locked first cell, before any
student code runs), so a solution that rebinds `torch.allclose` or `torch.testing.assert_close` changes
nothing here. Exact type checks (`type(x) is float`, not isinstance) stop objects whose `__eq__` always
says True.
"""
from __future__ import annotations

import contextlib
import inspect
import math
import re
import types
from typing import Callable, Iterator, NoReturn, TypeVar

import torch
from jaxtyping import Shaped
from torch import Tensor

_assert_close = torch.testing.assert_close
_isclose = torch.isclose
_all = torch.all
_strided = torch.strided
_tensor_type = torch.Tensor
_isnan = math.isnan
T = TypeVar("T")


def _fail(what: str, detail: str, hint: str | None, found: str | None = None) -> NoReturn:
    """AssertionError "what: detail", then what a diagnosis found in the wrong value (utils/diagnosis.py) on a line
    "Found: ...", then the hint on a line "Hint: ..."."""
    message = f"{what}: {detail}"
    if found:
        message += f"\nFound: {found}"
    if hint:
        message += f"\nHint: {hint}"
    raise AssertionError(message)


def _found(explain: Callable[[object], str | None] | None, value: object) -> str | None:
    """What `explain` (a diagnosis of the wrong value, utils/diagnosis.py) says of `value`; None if it says nothing or
    fails (a diagnosis never turns a wrong answer into a crash)."""
    if explain is None:
        return None
    try:
        return explain(value)
    except Exception:  # a diagnosis that cannot read the value has nothing to say
        return None


def check_type(value: object, expected_type: type, what: str, hint: str | None = None) -> None:
    """`value` must be exactly of `expected_type` (a subclass does not count; bool is not an int)."""
    exactly(value, expected_type, what, hint)


def exactly(value: object, expected_type: type[T], what: str, hint: str | None = None) -> T:
    """check_type, returning `value` typed, for code that goes on with it (a notebook's test calls check_type, which
    returns None: a check on a cell's last line shows nothing)."""
    if type(value) is not expected_type:
        name = expected_type.__name__
        _fail(what, f"expected {'an' if name[0] in 'aeiou' else 'a'} {name}, got {type(value).__name__}", hint)
    return value


def _named(value: object, mistakes: dict | None, hint: str | None, same=lambda a, b: a == b) -> str | None:
    """The hint for a wrong `value`: the one `mistakes` (a wrong value -> the hint naming the mistake that gives it)
    has for it, else `hint`."""
    for wrong, named in (mistakes or {}).items():
        if same(value, wrong):
            return named
    return hint


def check_int(value: object, expected: int, what: str, hint: str | None = None,
              mistakes: dict[int, str] | None = None, explain: Callable[[object], str | None] | None = None) -> None:
    """`value` must be a plain int equal to `expected`. `mistakes` maps wrong values that a known mistake gives to the
    hint that names it (used instead of `hint` when `value` is one of them); `explain` is a diagnosis of a wrong value
    (utils/diagnosis.py), printed as what it found."""
    value = exactly(value, int, what, hint)
    if int.__ne__(value, expected):
        _fail(what, f"expected {expected:,}, got {value:,}", _named(value, mistakes, hint), _found(explain, value))


def _floats_match(value: float, expected: float, rel_tol: float) -> bool:
    if _isnan(expected) or _isnan(value):
        return _isnan(expected) and _isnan(value)
    same = float.__eq__(value, expected) and math.copysign(1.0, value) == math.copysign(1.0, expected)
    close = rel_tol > 0 and math.isfinite(expected) and abs(value - expected) <= rel_tol * abs(expected)
    return same or close


def check_float(value: object, expected: float, what: str, hint: str | None = None, rel_tol: float = 0.0,
                mistakes: dict[float, str] | None = None, explain: Callable[[object], str | None] | None = None) -> None:
    """`value` must be a plain float equal to `expected` (to `rel_tol`; nan matches nan; signs of inf and 0 matter).
    `mistakes` and `explain` as in check_int, `mistakes` matched to the same `rel_tol`."""
    value = exactly(value, float, what, hint)
    if not _floats_match(value, expected, rel_tol):
        named = _named(value, mistakes, hint, lambda a, b: _floats_match(a, float(b), max(rel_tol, 1e-12)))
        _fail(what, f"expected {expected!r}, got {value!r}", named, _found(explain, value))


def check_str(value: object, expected: str, what: str, hint: str | None = None) -> None:
    """`value` must be a plain str equal to `expected`."""
    value = exactly(value, str, what, hint)
    if str.__ne__(value, expected):
        _fail(what, f"expected {expected!r}, got {value!r}", hint)


def check_bool(value: object, expected: bool, what: str, hint: str | None = None) -> None:
    """`value` must be exactly True or False (not 1, not a numpy or torch bool) and equal to `expected`."""
    value = exactly(value, bool, what, hint)
    if value is not expected:
        _fail(what, f"expected {expected}, got {value}", hint)


def check_ints(value: object, expected: tuple[int, ...], what: str, hint: str | None = None) -> None:
    """`value` must be a plain tuple of plain ints equal to `expected` (a list, a torch.Size or numpy ints fail)."""
    value = exactly(value, tuple, what, hint)
    if tuple.__len__(value) != len(expected):
        _fail(what, f"expected {len(expected)} entries {expected}, got {tuple.__len__(value)}", hint)
    if any(type(v) is not int for v in value):
        _fail(what, f"expected plain ints, got {[type(v).__name__ for v in value]}", hint)
    if any(int.__ne__(v, e) for v, e in zip(value, expected)):
        _fail(what, f"expected {expected}, got {tuple(int.__int__(v) for v in value)}", hint)


SHOWN_ELEMENTS = 16  # tensors up to this size are printed whole when they differ (got and expected side by side)


def show(t: Tensor) -> str:
    """A small tensor's values as a nested list, floats to 4 significant digits."""
    def text(x: object) -> str:
        if isinstance(x, list):
            return "[" + ", ".join(text(v) for v in x) + "]"
        return f"{x:.4g}" if isinstance(x, float) else str(x)
    return text(t.detach().cpu().tolist())


def warm_up() -> None:
    """Make the first comparison as fast as the rest: torch.testing.assert_close imports torch.distributed.tensor (and
    sympy) on its first call, a cost every process would pay that makes the first comparison. The grader's zygote and
    trusted checker call this once, so that no notebook process and no per-submission check pays for it again."""
    _assert_close(torch.zeros(1), torch.zeros(1))


def _closeness(value: Tensor, expected: Tensor, atol: float, rtol: float) -> bool | None:
    """Whether torch.testing.assert_close(value, expected, atol=atol, rtol=rtol, equal_nan=True) would pass, where
    that is certain without calling it: two strided floating-point tensors of one dtype, shape and device, which it
    compares with torch.isclose exactly as this does; None otherwise (ask assert_close). Said without the message
    assert_close builds for a mismatch, which a wrong answer's known mistakes each cost (and the trusted checker
    compares every hand-in)."""
    if not (value.dtype == expected.dtype and value.dtype.is_floating_point and value.shape == expected.shape
            and value.device == expected.device and value.layout == _strided and expected.layout == _strided):
        return None
    return bool(_all(_isclose(value, expected, rtol=rtol, atol=atol, equal_nan=True)))


def _tensors_match(value: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    close = _closeness(value, expected, atol, rtol)
    if close is not None:
        return close
    try:
        _assert_close(value, expected, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError:
        return False
    return True


def check_tensor(value: object, expected: Shaped[Tensor, "..."], what: str, hint: str | None = None,
                 atol: float = 0.0, rtol: float = 0.0, mistakes: list[tuple[Tensor, str]] | None = None,
                 explain: Callable[[object], str | None] | None = None) -> None:
    """`value` must be a real torch.Tensor with the expected dtype, shape and device, and values within atol/rtol.
    When the values differ, small tensors are shown whole (expected, then got). `mistakes` lists (tensor a known
    mistake gives, the hint that names it): a value matching one (its shape, and its values to atol/rtol) gets that
    hint instead of `hint`. `explain` is a diagnosis of a wrong tensor (utils/diagnosis.py: tensor_slips, which
    check_tensor uses by default for floating-point tensors), printed as what it found."""
    _checked_tensor(value, expected, what, hint, atol, rtol, mistakes, explain)


def _checked_tensor(value: object, expected: Tensor, what: str, hint: str | None, atol: float, rtol: float,
                    mistakes: list[tuple[Tensor, str]] | None, explain: Callable[[object], str | None] | None) -> Tensor:
    """check_tensor, returning `value` typed for the check that goes on (a check on a notebook cell's last line must
    show nothing, so check_tensor itself returns None)."""
    if explain is None and type(expected) is _tensor_type and expected.dtype.is_floating_point:
        from utils.diagnosis import tensor_slips
        explain = tensor_slips(expected)
    if type(value) is not _tensor_type:
        _fail(what, f"expected a torch.Tensor, got {type(value).__name__}", hint)
    tensor: Tensor = value   # exactly a torch.Tensor now (mypy does not read torch, so it cannot narrow `value`)
    named = hint
    for wrong, mistake in mistakes or []:
        if (tuple(tensor.shape) == tuple(wrong.shape) and tensor.dtype.is_floating_point == wrong.dtype.is_floating_point
                and _tensors_match(tensor.detach().cpu().to(wrong.dtype), wrong, atol, rtol)):
            named = mistake
            break

    def found() -> str | None:   # a known mistake's hint says it already
        return None if named is not hint else _found(explain, tensor)

    if tensor.dtype != expected.dtype:
        _fail(what, f"expected dtype {expected.dtype}, got {tensor.dtype}", hint)
    if tuple(tensor.shape) != tuple(expected.shape):
        _fail(what, f"expected shape {tuple(expected.shape)}, got {tuple(tensor.shape)}", named, found())
    if tensor.device != expected.device:
        _fail(what, f"expected device {expected.device}, got {tensor.device}", hint)
    close = _closeness(tensor, expected, atol, rtol)
    if close:
        return tensor
    try:
        _assert_close(tensor, expected, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError as error:
        said = str(error)
    else:
        if close is None:   # assert_close decides where _closeness cannot
            return tensor
        said = "not within the tolerance"   # a mismatch assert_close missed: torch.isclose replaced by the notebook
    if expected.numel() <= SHOWN_ELEMENTS:
        _fail(what, f"values differ: expected {show(expected)}, got {show(tensor)}", named, found())
    _fail(what, f"values differ: {said}", named, found())


@contextlib.contextmanager
def errors_named(what: str, hints: dict[str, str]) -> Iterator[None]:
    """Within the block, an error (other than an AssertionError) whose "Type: message" matches one of `hints`' regular
    expressions becomes an AssertionError that says what was being checked, quotes the error's first line and gives
    that pattern's hint: the raw torch errors a task's typical mistakes cause, each named. Other errors pass as
    they are."""
    try:
        yield
    except AssertionError:
        raise
    except Exception as error:  # matched against the hints, else re-raised unchanged
        text = f"{type(error).__name__}: {error}"
        for pattern, hint in hints.items():
            if re.search(pattern, text):
                raise AssertionError(f"{what}: raised {error_line(error)}\nHint: {hint}") from None
        raise


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def error_line(error: BaseException) -> str:
    """An error as one line to quote: "Type: first line", and when its message has more lines (einops gives the
    pattern first and the reason last), " ... last line" too; terminal colour codes removed."""
    lines = [line.strip() for line in ANSI.sub("", str(error)).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    quoted = f"{type(error).__name__}: {lines[0][:300]}"
    if len(lines) > 1:
        quoted += f" ... {lines[-1][:200]}"
    return quoted


# How much further from the exact result a correct low-precision computation may land than torch's own does.
# Rounding errors of different but equivalent operation orders are of the same size, so 10x leaves a wide margin,
# while a wrong formula is off by far more (and the float64 cases, compared tightly, catch it anyway).
ROUNDING_ALLOWANCE = 10


def check_as_accurate_as_torch(value: object, torch_value: Shaped[Tensor, "..."], exact: Shaped[Tensor, "..."],
                               what: str, hint: str | None = None,
                               explain: Callable[[object], str | None] | None = None) -> None:
    """For results whose rounding depends on the order of operations (a float32 trajectory, a long sum): `value`
    must have `torch_value`'s type, dtype, shape and device, and be as close to `exact` (the same computation in
    float64) as torch's own result is, up to ROUNDING_ALLOWANCE times that distance plus 4 units in the last place
    of the largest entry. The tolerance comes from the numerics of the case, not from one machine's kernels.
    `explain` as in check_tensor."""
    tensor = _checked_tensor(value, torch_value, what, hint, math.inf, 0.0, None, explain)
    exact = exact.double()
    torch_error = float((torch_value.double() - exact).abs().max()) if exact.numel() else 0.0
    ulp = torch.finfo(torch_value.dtype).eps if torch_value.dtype.is_floating_point else 0.0
    allowed = ROUNDING_ALLOWANCE * torch_error + 4 * ulp * (float(exact.abs().max()) if exact.numel() else 0.0)
    error = float((tensor.double() - exact).abs().max()) if exact.numel() else 0.0
    if not error <= allowed:  # also fails for nan
        _fail(what, f"{error:.3g} away from the float64 result, but torch's own {torch_value.dtype} result is "
                    f"{torch_error:.3g} away (allowed: {allowed:.3g})", hint, _found(explain, value))


def check_within_rounding_bound(value: object, like: Shaped[Tensor, "..."], exact: Shaped[Tensor, "..."],
                                magnitude: Shaped[Tensor, "..."], operations: int, what: str,
                                hint: str | None = None, explain: Callable[[object], str | None] | None = None) -> None:
    """For sums of products whose order the task leaves open (a dot product, an einsum, a masked mean): `value` must
    have `like`'s type, dtype, shape and device, and each entry must lie within `operations` x eps(dtype) x
    `magnitude` of `exact`. `exact` is the computation in float64; `magnitude` is the same computation on the
    absolute values of the inputs (the sum of the terms' sizes); `operations` counts the roundings along the
    longest chain: the terms of the sum plus one per other operation (a scaling, a division).

    A sum of n terms computed in any order, at any accumulation precision down to the dtype's own, is off by at
    most about n x eps/2 x magnitude (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1), so this
    allows twice the worst case of every correct solution (in float64, where `exact` carries the same rounding,
    the worst cases of both); a wrong formula is off by far more, and in float64 the allowance is ~1e-15 of the
    magnitude. `explain` diagnoses a wrong value (utils/diagnosis.py; by default tensor_slips against `exact`)."""
    if explain is None and type(exact) is _tensor_type and exact.dtype.is_floating_point:
        from utils.diagnosis import tensor_slips
        explain = tensor_slips(exact.to(like.dtype) if type(like) is _tensor_type else exact)
    tensor = _checked_tensor(value, like, what, hint, math.inf, 0.0, None, explain)
    eps = torch.finfo(like.dtype).eps
    allowed = operations * eps * magnitude.double()
    error = (tensor.double() - exact.double()).abs()
    outside = ~(error <= allowed)  # nan is outside too
    if outside.any():
        worst = int((error - allowed).nan_to_num(nan=math.inf).flatten().argmax())
        _fail(what, f"{float(error.flatten()[worst]):.3g} away from the float64 result at entry {worst} (flattened), "
                    f"but rounding {operations} operations in {like.dtype} can explain at most "
                    f"{float(allowed.flatten()[worst]):.3g} there", hint, _found(explain, value))


def global_names(fn: Callable) -> set[str]:
    """Every global name and attribute name the code of `fn` (and functions nested in it) refers to."""
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return names


@contextlib.contextmanager
def forbidden(fn: Callable, targets: dict[str, tuple[object, str]], task: str) -> Iterator[None]:
    """Within the block, calling any target (module, attribute) fails with a message that the task must not use it.

    Also fails at once if `fn`'s globals bind one of the targets under another name (`from torch import finfo`).
    """
    fn = inspect.unwrap(fn)  # a decorated function (jaxtyped, functools.wraps): check the student's own code
    for name in global_names(fn):
        bound = fn.__globals__.get(name)
        for label, (module, attribute) in targets.items():
            if bound is not None and bound is getattr(module, attribute):
                _fail(task, f"the solution uses {label}", f"this task asks you to work it out without {label}.")
    saved = {label: getattr(module, attribute) for label, (module, attribute) in targets.items()}
    # An attribute a class inherits (torch.Tensor.stride lives on torch's C base class) is deleted afterwards
    # rather than set back, so the class looks exactly as before.
    inherited = {label for label, (owner, attribute) in targets.items()
                 if isinstance(owner, type) and attribute not in owner.__dict__}

    def stub_for(label: str) -> Callable:
        def stub(*args, **kwargs):
            _fail(task, f"the solution called {label}", f"this task asks you to work it out without {label}.")
        return stub

    try:
        for label, (module, attribute) in targets.items():
            setattr(module, attribute, stub_for(label))
        yield
    finally:
        for label, (module, attribute) in targets.items():
            if label in inherited:
                delattr(module, attribute)
            else:
                setattr(module, attribute, saved[label])


@contextlib.contextmanager
def earlier_tasks_done_right(fn: Callable, correct: dict[str, Callable]) -> Iterator[None]:
    """Within the block, the names in `correct` that `fn`'s module binds (a student's answers to earlier tasks, which
    `fn` may call) are bound to correct versions instead, so a mistake in an earlier task costs its points only once.

    Only names the module already binds are replaced, and all are put back afterwards, whatever happens.
    """
    namespace = inspect.unwrap(fn).__globals__
    saved = {name: namespace[name] for name in correct if name in namespace}
    try:
        namespace.update({name: correct[name] for name in saved})
        yield
    finally:
        namespace.update(saved)


# ---- when a student's code raises (issue #50) ----------------------------------------------------------------------
# What an error of each kind usually means in these exercises; added after the task's own hint.
ERROR_KINDS = {
    "NotImplementedError": "the answer cell still raises NotImplementedError: replace that line with your answer and "
                           "run the answer cell again before its test.",
    "NameError": "a name your code uses is not defined here: run the notebook's cells from the top, and spell the "
                 "names as the task's signature does.",
    "TypeError": "a value of the wrong kind reached an operation or a call (an int where a tensor is wanted, a "
                 "tuple where an int is, None where a value should be, or too many or too few arguments): print the "
                 "type of each value on the line the traceback above points to.",
    "AttributeError": "an object lacks the attribute your code asks of it: print type(...) of the object on the line "
                      "the traceback above points to; it is not what your code takes it for.",
    "EinopsError": "einops refused the pattern, and the end of its message says why: an axis named twice in one "
                   "input, a parenthesized group with two sizes it cannot infer (give all but one, as h=...), or a "
                   "product that does not divide the axis; compare the pattern with the shapes going in.",
    "RuntimeError": "torch refused an operation: most often two tensors whose shapes, dtypes or devices do not fit "
                    "together, or an in-place change torch forbids; print .shape, .dtype and .device of the tensors "
                    "on the line the traceback above points to.",
    "IndexError": "an index ran past the end of a sequence or a dimension: check the ranges your loops and slices "
                  "use against the lengths and shapes you are given.",
    "KeyError": "a dictionary has no such key: check the keys it really holds (print its .keys()).",
    "ValueError": "a value has the right type but not a value the call accepts (unpacking the wrong number of "
                  "values, an impossible shape, a negative size).",
    "ZeroDivisionError": "your code divides by zero: check which case makes the divisor 0, and whether the task "
                         "says what to return there.",
    "RecursionError": "a function calls itself without end: check that your function does not call itself by its "
                      "own name.",
}
OTHER_ERRORS = "check the line the traceback above points to against the task's text."

# For each exercise's test (assignment, test grade_id): what the task's function takes and gives, and where the
# lecture explains it. Added to every error its code raises in that test, with the error kind's meaning.
RAISED_HINTS = {
    ("01_floats", "test_decode"): "decode takes a plain int of bits and two field widths, and returns a Python float; "
        "take the fields apart with shifts and masks on ints (lecture 1, section 1).",
    ("01_floats", "test_limits"): "limits takes two field widths and returns a tuple of four Python floats, worked "
        "out from the widths with powers of two (lecture 1, section 4).",
    ("01_floats", "test_tensor_nbytes"): "tensor_nbytes gets a shape (a tuple or a torch.Size) and a torch.dtype; "
        "the size follows from them without creating any tensor (lecture 1, section 3).",
    ("01_floats", "test_after_cast"): "after_cast takes a Python float and two field widths and returns one of five "
        "words; the limits of task 2 give the boundaries (lecture 1, section 6).",
    ("02_tensors_on_gpu", "test_pick_device"): "pick_device takes a count of CUDA GPUs, a bool for mps and a rank, "
        "and returns a device string; it never touches a real device (lecture 2, section 2).",
    ("02_tensors_on_gpu", "test_allocated_bytes"): "allocated_bytes gets a list of (shape, dtype) pairs and returns an "
        "int of bytes, worked out without creating tensors (lecture 2, section 4).",
    ("02_tensors_on_gpu", "test_to_copies"): "to_copies takes device strings (or None) and dtypes (or None) and "
        "returns a bool; it creates no tensor (lecture 2, section 3).",
    ("02_tensors_on_gpu", "test_copy_gb_per_s"): "copy_gb_per_s gets three functions (copy, synchronize, clock) to "
        "call with no arguments, a byte count and two counts of calls, and returns a float (lecture 2, section 5).",
    ("03_strides_views", "test_storage_index"): "storage_index takes tuples of ints and an int offset and returns an "
        "int; it needs no tensor (lecture 3, section 1).",
    ("03_strides_views", "test_row_major_strides"): "row_major_strides takes a shape tuple (maybe empty, maybe with a "
        "0) and returns a tuple of ints (lecture 3, section 1).",
    ("03_strides_views", "test_is_contiguous"): "is_contiguous takes a shape and strides, two tuples of ints, and "
        "returns a bool; it needs no tensor (lecture 3, section 3).",
    ("03_strides_views", "test_slice_metadata"): "slice_metadata takes the metadata of a tensor and a slice (start "
        "and stop may be None or negative) and returns (shape, strides, offset) as tuples of ints and an int "
        "(lecture 3, section 2).",
    ("03_strides_views", "test_sliding_windows"): "sliding_windows gets a 1-d tensor (maybe itself a view with a "
        "stride and an offset) and a width, and returns a view of its storage (lecture 3, section 2).",
    ("03_strides_views", "test_can_view"): "can_view takes a shape, its strides and a new shape, all tuples of ints, "
        "and returns a bool without calling view (lecture 3, section 3).",
    ("04_einops_jaxtyping", "test_split_qkv"): "split_qkv gets one tensor (batch, seq, 3 * d_model) laid out [q | k "
        "| v] and n_heads; name every axis in one rearrange pattern (lecture 4, section 6).",
    ("04_einops_jaxtyping", "test_merge_heads"): "merge_heads gets one tensor (batch, heads, seq, head_dim); name its "
        "axes in a rearrange pattern (lecture 4, section 6).",
    ("04_einops_jaxtyping", "test_attention_scores"): "attention_scores gets q and k with any leading dimensions; an "
        "einsum pattern with ... for them names the axes that meet (lecture 4, sections 4 and 7).",
    ("04_einops_jaxtyping", "test_checked_attention_scores"): "checked_attention_scores is task 3's function with "
        "jaxtyping annotations and the run-time checker; a wrong annotation rejects good inputs (lecture 4, "
        "sections 2 and 3).",
    ("04_einops_jaxtyping", "test_checked_masked_mean"): "checked_masked_mean gets x (batch, seq, hidden) and a bool "
        "mask (batch, seq); a bool tensor takes part in arithmetic once it has x's dtype (lecture 4, sections 3 "
        "and 5).",
    ("05_flops_mfu", "test_matmul_flop_count"): "matmul_flop_count takes two shape tuples (..., m, k) and (..., k, n) "
        "whose batch dimensions broadcast, and returns an int (lecture 5, section 2).",
    ("05_flops_mfu", "test_linear_model_flops"): "linear_model_flops takes a batch shape tuple and a list of widths, "
        "and returns an int (lecture 5, section 4).",
    ("05_flops_mfu", "test_training_days"): "training_days takes five numbers and returns a float of days "
        "(lecture 5, section 9).",
    ("05_flops_mfu", "test_matmul_mfu"): "matmul_mfu takes a matmul's sizes, its time, a device name and a dtype; "
        "peak_flops may return None for a device it does not know (lecture 5, sections 6 and 8).",
    ("05_flops_mfu", "test_matmul_intensity"): "matmul_intensity takes two shape tuples whose batch dimensions "
        "broadcast and a byte count per element, and returns a float (lecture 5, section 10).",
    ("05_flops_mfu", "test_roofline_seconds"): "roofline_seconds takes a list of (FLOPs, bytes) pairs, maybe empty, "
        "and two rates, and returns a float of seconds (lecture 5, section 10).",
    ("06_gradients", "test_w2_grad"): "w2_grad gets h1 (B x D) and h2_grad (B x K) and returns a (D x K) tensor; the "
        "shapes tell which matrix to transpose (lecture 6, section 3).",
    ("06_gradients", "test_h1_grad"): "h1_grad gets w2 (D x K) and h2_grad (B x K) and returns a (B x D) tensor; the "
        "shapes tell which matrix to transpose (lecture 6, section 3).",
    ("06_gradients", "test_two_layer_grads"): "two_layer_grads gets x, w1 and w2 and returns a dict of four tensors, "
        "each shaped like what it is the gradient of (lecture 6, section 3).",
    ("06_gradients", "test_two_layer_flops"): "two_layer_flops takes three ints and a bool and returns a tuple of two "
        "ints (lecture 6, section 4).",
    ("06_gradients", "test_stack_grads"): "stack_grads gets x and two lists, weights and biases, and returns two lists "
        "of tensors shaped like them; a bias of shape (d,) is added to every row (lecture 6, sections 3 and 4).",
    ("06_gradients", "test_stack_flops"): "stack_flops takes a batch size, a list of widths and a bool and returns a "
        "tuple of two ints (lecture 6, section 4).",
    ("07_models_optimizers", "test_MomentumSGD"): "step loops over self.param_groups and each group's \"params\"; a "
        "parameter's state is the dict self.state[p], and a parameter may have no gradient (lecture 7, section 4).",
    ("07_models_optimizers", "test_AdaGrad"): "step loops over self.param_groups and each group's \"params\"; a "
        "parameter's state is the dict self.state[p], and a parameter may have no gradient (lecture 7, section 4).",
    ("07_models_optimizers", "test_AdamW"): "step loops over self.param_groups and each group's \"params\"; a "
        "parameter's state is the dict self.state[p], betas is a pair, and a parameter may have no gradient "
        "(lecture 7, section 4).",
    ("07_models_optimizers", "test_state_bytes"): "state_bytes gets an optimizer: optimizer.state maps each parameter "
        "to a dict, whose values may be tensors or plain numbers (lecture 7, section 5).",
    ("07_models_optimizers", "test_largest_model"): "largest_model takes counts, an optimizer's name in lower case, "
        "a torch.dtype and a bool, and returns an int (lecture 7, section 7).",
    ("08_training_loop", "test_get_batch"): "get_batch gets data that may be any array-like (use only len(data) and "
        "slices of it), a device as a string or a torch.device, and a torch.Generator to draw from (lecture 8, "
        "section 2).",
    ("08_training_loop", "test_seed_everything"): "seed_everything takes one int and returns nothing; it seeds each "
        "library's global generator (lecture 8, section 3).",
    ("08_training_loop", "test_train"): "train gets a model, an optimizer, data, counts and a generator, and returns "
        "a list of Python floats, one per optimizer step (lecture 8, section 4).",
    ("08_training_loop", "test_save_checkpoint"): "save_checkpoint writes one torch.save file that loading with "
        "weights_only=True accepts: tensors, numbers, strings and containers of them (lecture 8, section 6).",
    ("08_training_loop", "test_load_checkpoint"): "load_checkpoint reads task 4's file with weights_only=True, "
        "restores everything into the objects it gets and returns the step, an int (lecture 8, section 6).",
    ("09_mixed_precision", "test_master_weight_step"): "master_weight_step gets two lists, 16-bit model parameters and "
        "their fp32 masters, and an optimizer over the masters; it returns nothing (lecture 9, section 4).",
    ("09_mixed_precision", "test_loss_scaled_step"): "loss_scaled_step gets a loss, the two lists of parameters, an "
        "optimizer over the masters and a scale, and returns a bool (lecture 9, section 5).",
    ("09_mixed_precision", "test_next_loss_scale"): "next_loss_scale takes a float, a bool and two ints and returns a "
        "tuple (float, int) (lecture 9, section 5).",
    ("09_mixed_precision", "test_mlp_activation_bytes"): "mlp_activation_bytes takes four ints and a torch.dtype and "
        "returns an int (lecture 9, section 6).",
    ("09_mixed_precision", "test_autocast_dtype"): "autocast_dtype takes an op's name and a torch.dtype and returns a "
        "torch.dtype, read from autocast's lists (lecture 9, section 3).",
    ("10_accounting_a_training_run", "test_param_count"): "param_count gets a GPT2Shape (read its fields, such as "
        "shape.d_model) and returns an int (lecture 10, section 2).",
    ("10_accounting_a_training_run", "test_training_flops_per_token"): "training_flops_per_token gets a GPT2Shape and "
        "returns an int (lecture 10, section 3).",
    ("10_accounting_a_training_run", "test_memory_per_gpu"): "memory_per_gpu gets a GPT2Shape, a GPU count and a "
        "ZeRO stage, and returns bytes as a float; task 1's param_count gives the parameters (lecture 10, "
        "section 4).",
    ("10_accounting_a_training_run", "test_training_days"): "training_days gets a GPT2Shape, a token count, a GPU count, "
        "a device name and an MFU; peak_flops may return None for a device it does not know (lecture 10, "
        "section 9).",
    ("01_floats", "test_weights_gib"): "weights_gib is one number, set by the answer cell above: replace its raise line "
        "with `weights_gib = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("02_tensors_on_gpu", "test_copy_seconds"): "copy_seconds is one number, set by the answer cell above: replace its raise line "
        "with `copy_seconds = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("03_strides_views", "test_copy_mib"): "copy_mib is one number, set by the answer cell above: replace its raise line "
        "with `copy_mib = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("04_einops_jaxtyping", "test_scores_gib"): "scores_gib is one number, set by the answer cell above: replace its raise line "
        "with `scores_gib = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("05_flops_mfu", "test_matmul_ms"): "matmul_ms is one number, set by the answer cell above: replace its raise line "
        "with `matmul_ms = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("06_gradients", "test_step_flops"): "step_flops is one number, set by the answer cell above: replace its raise line "
        "with `step_flops = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("07_models_optimizers", "test_adamw_gb"): "adamw_gb is one number, set by the answer cell above: replace its raise line "
        "with `adamw_gb = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("08_training_loop", "test_tokens_billions"): "tokens_billions is one number, set by the answer cell above: replace its raise line "
        "with `tokens_billions = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("09_mixed_precision", "test_mixed_adamw_gb"): "mixed_adamw_gb is one number, set by the answer cell above: replace its raise line "
        "with `mixed_adamw_gb = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("10_accounting_a_training_run", "test_run_mfu"): "run_mfu is one number, set by the answer cell above: replace its raise line "
        "with `run_mfu = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("05_flops_mfu", "test_two_weeks_flops"): "two_weeks_flops is one number, set by the answer cell above: replace its raise line "
        "with `two_weeks_flops = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("08_training_loop", "test_read_minutes"): "read_minutes is one number, set by the answer cell above: replace its raise line "
        "with `read_minutes = ` and your number (an expression of plain numbers is fine), then run that cell.",
    ("10_accounting_a_training_run", "test_gpt3_days"): "gpt3_days is one number, set by the answer cell above: replace its raise line "
        "with `gpt3_days = ` and your number (an expression of plain numbers is fine), then run that cell.",
}


def raised_hint(assignment: str, test: str, error: BaseException) -> str:
    """The hint for `error` raised in a test: the task's own (RAISED_HINTS), then what the error's kind means."""
    kind = next((ERROR_KINDS[cls.__name__] for cls in type(error).__mro__ if cls.__name__ in ERROR_KINDS),
                OTHER_ERRORS)
    if isinstance(error, NotImplementedError):   # the task is not started yet: its own hint would only distract
        return f"{kind[0].upper()}{kind[1:]}"
    return f"{RAISED_HINTS[assignment, test]} {kind[0].upper()}{kind[1:]}"


@contextlib.contextmanager
def task_errors(assignment: str, test: str) -> Iterator[None]:
    """Within a test: an error the student's code raises (anything but a check's AssertionError) becomes an
    AssertionError that names the test, quotes the error's first line and gives a hint that fits the task
    (raised_hint). The error stays chained to it, so the traceback still shows the line that raised."""
    try:
        yield
    except AssertionError:
        raise
    except Exception as error:  # every raw error gets the task's hint
        task = test.removeprefix("test_")
        raise AssertionError(f"{task}: your code raised {error_line(error)}\nHint: {raised_hint(assignment, test, error)}") \
            from error
