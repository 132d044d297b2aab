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
from typing import Callable, Iterator

import torch
from jaxtyping import Shaped
from torch import Tensor

_assert_close = torch.testing.assert_close
_tensor_type = torch.Tensor
_isnan = math.isnan


def _fail(what: str, detail: str, hint: str | None) -> None:
    message = f"{what}: {detail}"
    if hint:
        message += f"\nHint: {hint}"
    raise AssertionError(message)


def check_type(value: object, expected_type: type, what: str, hint: str | None = None) -> None:
    """`value` must be exactly of `expected_type` (a subclass does not count; bool is not an int)."""
    if type(value) is not expected_type:
        _fail(what, f"expected a {expected_type.__name__}, got {type(value).__name__}", hint)


def _named(value: object, mistakes: dict | None, hint: str | None, same=lambda a, b: a == b) -> str | None:
    """The hint for a wrong `value`: the one `mistakes` (a wrong value -> the hint naming the mistake that gives it)
    has for it, else `hint`."""
    for wrong, named in (mistakes or {}).items():
        if same(value, wrong):
            return named
    return hint


def check_int(value: object, expected: int, what: str, hint: str | None = None,
              mistakes: dict[int, str] | None = None) -> None:
    """`value` must be a plain int equal to `expected`. `mistakes` maps wrong values that a known mistake gives to the
    hint that names it (used instead of `hint` when `value` is one of them)."""
    check_type(value, int, what, hint)
    if int.__ne__(value, expected):
        _fail(what, f"expected {expected:,}, got {value:,}", _named(value, mistakes, hint))


def _floats_match(value: float, expected: float, rel_tol: float) -> bool:
    if _isnan(expected) or _isnan(value):
        return _isnan(expected) and _isnan(value)
    same = float.__eq__(value, expected) and math.copysign(1.0, value) == math.copysign(1.0, expected)
    close = rel_tol > 0 and math.isfinite(expected) and abs(value - expected) <= rel_tol * abs(expected)
    return same or close


def check_float(value: object, expected: float, what: str, hint: str | None = None, rel_tol: float = 0.0,
                mistakes: dict[float, str] | None = None) -> None:
    """`value` must be a plain float equal to `expected` (to `rel_tol`; nan matches nan; signs of inf and 0 matter).
    `mistakes` as in check_int, matched to the same `rel_tol`."""
    check_type(value, float, what, hint)
    if not _floats_match(value, expected, rel_tol):
        named = _named(value, mistakes, hint, lambda a, b: _floats_match(a, float(b), max(rel_tol, 1e-12)))
        _fail(what, f"expected {expected!r}, got {value!r}", named)


def check_str(value: object, expected: str, what: str, hint: str | None = None) -> None:
    """`value` must be a plain str equal to `expected`."""
    check_type(value, str, what, hint)
    if str.__ne__(value, expected):
        _fail(what, f"expected {expected!r}, got {value!r}", hint)


def check_bool(value: object, expected: bool, what: str, hint: str | None = None) -> None:
    """`value` must be exactly True or False (not 1, not a numpy or torch bool) and equal to `expected`."""
    check_type(value, bool, what, hint)
    if value is not expected:
        _fail(what, f"expected {expected}, got {value}", hint)


def check_ints(value: object, expected: tuple[int, ...], what: str, hint: str | None = None) -> None:
    """`value` must be a plain tuple of plain ints equal to `expected` (a list, a torch.Size or numpy ints fail)."""
    check_type(value, tuple, what, hint)
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


def _tensors_match(value: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    try:
        _assert_close(value, expected, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError:
        return False
    return True


def check_tensor(value: object, expected: Shaped[Tensor, "..."], what: str, hint: str | None = None,
                 atol: float = 0.0, rtol: float = 0.0, mistakes: list[tuple[Tensor, str]] | None = None) -> None:
    """`value` must be a real torch.Tensor with the expected dtype, shape and device, and values within atol/rtol.
    When the values differ, small tensors are shown whole (expected, then got). `mistakes` lists (tensor a known
    mistake gives, the hint that names it): a value matching one (its shape, and its values to atol/rtol) gets that
    hint instead of `hint`."""
    if type(value) is not _tensor_type:
        _fail(what, f"expected a torch.Tensor, got {type(value).__name__}", hint)
    named = hint
    for wrong, mistake in mistakes or []:
        if (tuple(value.shape) == tuple(wrong.shape) and value.dtype.is_floating_point == wrong.dtype.is_floating_point
                and _tensors_match(value.detach().cpu().to(wrong.dtype), wrong, atol, rtol)):
            named = mistake
            break
    if value.dtype != expected.dtype:
        _fail(what, f"expected dtype {expected.dtype}, got {value.dtype}", hint)
    if tuple(value.shape) != tuple(expected.shape):
        _fail(what, f"expected shape {tuple(expected.shape)}, got {tuple(value.shape)}", named)
    if value.device != expected.device:
        _fail(what, f"expected device {expected.device}, got {value.device}", hint)
    try:
        _assert_close(value, expected, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError as error:
        if expected.numel() <= SHOWN_ELEMENTS:
            _fail(what, f"values differ: expected {show(expected)}, got {show(value)}", named)
        _fail(what, f"values differ: {error}", named)


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
    except Exception as error:  # noqa: BLE001 - matched against the hints, else re-raised unchanged
        text = f"{type(error).__name__}: {error}"
        for pattern, hint in hints.items():
            if re.search(pattern, text):
                first = text.splitlines()[0]
                raise AssertionError(f"{what}: raised {first[:300]}\nHint: {hint}") from None
        raise


# How much further from the exact result a correct low-precision computation may land than torch's own does.
# Rounding errors of different but equivalent operation orders are of the same size, so 10x leaves a wide margin,
# while a wrong formula is off by far more (and the float64 cases, compared tightly, catch it anyway).
ROUNDING_ALLOWANCE = 10


def check_as_accurate_as_torch(value: object, torch_value: Shaped[Tensor, "..."], exact: Shaped[Tensor, "..."],
                               what: str, hint: str | None = None) -> None:
    """For results whose rounding depends on the order of operations (a float32 trajectory, a long sum): `value`
    must have `torch_value`'s type, dtype, shape and device, and be as close to `exact` (the same computation in
    float64) as torch's own result is, up to ROUNDING_ALLOWANCE times that distance plus 4 units in the last place
    of the largest entry. The tolerance comes from the numerics of the case, not from one machine's kernels."""
    check_tensor(value, torch_value, what, hint, atol=math.inf)
    exact = exact.double()
    torch_error = float((torch_value.double() - exact).abs().max()) if exact.numel() else 0.0
    ulp = torch.finfo(torch_value.dtype).eps if torch_value.dtype.is_floating_point else 0.0
    allowed = ROUNDING_ALLOWANCE * torch_error + 4 * ulp * (float(exact.abs().max()) if exact.numel() else 0.0)
    error = float((value.double() - exact).abs().max()) if exact.numel() else 0.0
    if not error <= allowed:  # also fails for nan
        _fail(what, f"{error:.3g} away from the float64 result, but torch's own {torch_value.dtype} result is "
                    f"{torch_error:.3g} away (allowed: {allowed:.3g})", hint)


def check_within_rounding_bound(value: object, like: Shaped[Tensor, "..."], exact: Shaped[Tensor, "..."],
                                magnitude: Shaped[Tensor, "..."], operations: int, what: str,
                                hint: str | None = None) -> None:
    """For sums of products whose order the task leaves open (a dot product, an einsum, a masked mean): `value` must
    have `like`'s type, dtype, shape and device, and each entry must lie within `operations` x eps(dtype) x
    `magnitude` of `exact`. `exact` is the computation in float64; `magnitude` is the same computation on the
    absolute values of the inputs (the sum of the terms' sizes); `operations` counts the roundings along the
    longest chain: the terms of the sum plus one per other operation (a scaling, a division).

    A sum of n terms computed in any order, at any accumulation precision down to the dtype's own, is off by at
    most about n x eps/2 x magnitude (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1), so this
    allows twice the worst case of every correct solution (in float64, where `exact` carries the same rounding,
    the worst cases of both); a wrong formula is off by far more, and in float64 the allowance is ~1e-15 of the
    magnitude."""
    check_tensor(value, like, what, hint, atol=math.inf)
    eps = torch.finfo(like.dtype).eps
    allowed = operations * eps * magnitude.double()
    error = (value.double() - exact.double()).abs()
    outside = ~(error <= allowed)  # nan is outside too
    if outside.any():
        worst = int((error - allowed).nan_to_num(nan=math.inf).flatten().argmax())
        _fail(what, f"{float(error.flatten()[worst]):.3g} away from the float64 result at entry {worst} (flattened), "
                    f"but rounding {operations} operations in {like.dtype} can explain at most "
                    f"{float(allowed.flatten()[worst]):.3g} there", hint)


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
