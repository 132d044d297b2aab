"""Exercise 3 (strides and views), what the hidden tests need besides torch: random cases.

torch is the oracle for every task (stride(), storage_offset(), is_contiguous(), view(), unfold), so no answer lives
here; these make the views and shapes the hidden tests ask torch about.
"""
from __future__ import annotations

import math
import random

import torch
from jaxtyping import Int64
from torch import Tensor


def random_view(rng: random.Random, max_dims: int = 4, max_size: int = 5) -> Int64[Tensor, "..."]:
    """A random view of a fresh int64 arange (each element holds its storage index), made by up to four random
    permutes, transposes, slices (steps 1 to 3) and selects; size-0 and size-1 dims come up often."""
    sizes = [0] + [1] * 2 + list(range(2, max_size + 1)) * 3  # size 0 and size 1 are common, but not the rule
    shape = [rng.choice(sizes) for _ in range(rng.choice([0] + list(range(1, max_dims + 1)) * 3))]
    view = torch.arange(math.prod(shape), dtype=torch.int64).view(shape)
    for _ in range(rng.randint(0, 4)):
        if view.dim() == 0:
            break
        dim = rng.randrange(view.dim())
        op = rng.choice(["permute", "permute", "transpose", "slice", "slice", "select"])
        if op == "permute":
            view = view.permute(rng.sample(range(view.dim()), view.dim()))
        elif op == "transpose":
            view = view.transpose(dim, rng.randrange(view.dim()))
        elif op == "slice":
            start = rng.choice([None, None, rng.randint(-6, 6)])  # mostly non-empty slices, some empty ones
            stop = rng.choice([None, None, rng.randint(-6, 6)])
            index = [slice(None)] * view.dim()
            index[dim] = slice(start, stop, rng.randint(1, 3))
            view = view[tuple(index)]
        elif view.shape[dim] > 0:
            view = view.select(dim, rng.randrange(view.shape[dim]))
    return view


def random_shape_with_numel(rng: random.Random, numel: int) -> tuple[int, ...]:
    """A random shape holding exactly `numel` elements, in a random order, sometimes with an extra size-1 dim."""
    if numel == 0:
        shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 2))] + [0]
    else:
        shape, left = [], numel
        while left > 1 and len(shape) < 4:
            factor = rng.choice([d for d in range(1, left + 1) if left % d == 0])
            shape.append(factor)
            left //= factor
        shape.append(left)
    if rng.random() < 0.3:
        shape.append(1)
    rng.shuffle(shape)
    return tuple(shape)
