"""Stand-ins for an earlier task's function while a later task is checked (utils.grading.earlier_tasks_done_right).

When a later task calls an earlier task's function, a mistake in the earlier task must cost its points only once. So
the later task's checks swap in a stand-in that knows the right results for the calls the checked cases make, and no
others: a table of (arguments, result) pairs, made from values the test already has (visible tests) or from values
the grader sends with the hidden cases. It is not a general answer: a call it has no entry for goes to the student's
own function, as if nothing had been swapped.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Callable, Sequence, cast

import torch

_tensor_type = torch.Tensor
_parameter_type = torch.nn.Parameter
_equal = torch.equal  # taken at import (the locked set-up cell), before a solution could rebind torch.equal
_function_modes = torch._C._len_torch_function_stack
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _same(given: object, known: object) -> bool:
    """`given` is the argument `known` stands for: equal ints/floats/strings, sequences of them (a tuple, a list or a
    torch.Size alike), or a tensor of the same shape and dtype whose values agree to float rounding.

    The comparison runs the argument's own methods, so only a plain tensor (or Parameter), with no torch function or
    dispatch mode of the caller's active, is compared at all: a subclass or a mode could make any argument equal to
    every entry and take the table's answers for inputs of its choosing (the red team of issue #63 did, with a
    subclass whose subtraction returned zeros). Such a call goes to the student's own function."""
    if isinstance(known, _tensor_type):
        if type(given) not in (_tensor_type, _parameter_type) or _function_modes() or _dispatch_modes():
            return False
        tensor: torch.Tensor = given   # tensors now (mypy does not read torch, so it cannot narrow either)
        right: torch.Tensor = known
        if tensor.shape != right.shape or tensor.dtype != right.dtype:
            return False
        if right.numel() == 0:
            return True
        if not right.dtype.is_floating_point:
            return bool(_equal(tensor.detach().cpu(), right))
        tensor, right = tensor.detach().cpu().double(), right.double()
        scale = float(right.abs().max())
        return bool(((tensor - right).abs() <= 1e-5 * scale + 1e-4 * right.abs()).all())
    if isinstance(known, (tuple, list)):
        if type(given) not in (tuple, list, torch.Size):   # exactly these: a subclass's __len__ or __iter__ is its own
            return False
        items = cast("tuple | list", given)   # mypy does not narrow by an exact type
        return len(items) == len(known) and all(_same(g, k) for g, k in zip(items, known))
    if type(known) in (bool, int, float, str) or known is None:
        return type(given) is type(known) and given == known
    if dataclasses.is_dataclass(known) and not isinstance(known, type):  # a config such as exercise 10's GPT2Shape
        return type(given) is type(known) and all(_same(getattr(given, f.name), getattr(known, f.name))
                                                 for f in dataclasses.fields(known))
    return False


def answers_from_table(own: Callable, table: Sequence[tuple[tuple, object]]) -> Callable:
    """A stand-in for the earlier function `own` (the student's): a call whose arguments match an entry of `table`
    (pairs of a tuple of positional arguments and the right result) gets that result (a tensor is cloned), any other
    call goes to `own`. Keyword arguments are matched by `own`'s parameter names."""
    try:
        signature = inspect.signature(own)
    except (TypeError, ValueError):
        signature = None

    def stand_in(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs) if signature is not None else None
            if bound is not None:
                bound.apply_defaults()
        except TypeError:
            bound = None
        positional = tuple(bound.arguments.values()) if bound is not None else args if not kwargs else None
        if positional is not None:
            for known_args, result in table:
                if len(positional) == len(known_args) and all(_same(g, k) for g, k in zip(positional, known_args)):
                    return result.clone() if isinstance(result, _tensor_type) else result
        return own(*args, **kwargs)

    stand_in.__name__ = getattr(own, "__name__", "earlier_task")
    stand_in.__doc__ = "A stand-in for an earlier task's function: right results for the checked cases only."
    return stand_in
