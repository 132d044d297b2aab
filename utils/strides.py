"""Strides, views and contiguity: the arithmetic torch does on a tensor's metadata, written out in plain Python.

A tensor is a pointer into a flat storage plus three pieces of metadata: shape, strides and storage offset
(all counted in elements, not bytes). Element (i0, i1, ...) lives at storage index
    storage_offset + i0 * strides[0] + i1 * strides[1] + ...
A view is a new set of metadata over the same storage; a copy is new storage.
"""
from __future__ import annotations

import contextlib
import math
import random
from typing import TYPE_CHECKING, Callable, Iterator, NamedTuple, Sequence

import torch
from jaxtyping import Int64, Shaped
from torch import Tensor

from utils.grading import check_bool, check_ints, forbidden  # noqa: F401 (the exercise imports them from here)

forbidding = forbidden  # the name the exercise uses; forbidden() leaves classes exactly as they were

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Taken at import (before any student code runs), so rebinding them later changes nothing here.
_untyped_storage = torch.Tensor.untyped_storage
_storage_data_ptr = torch.UntypedStorage.data_ptr

# What an exercise forbids where the task is to work out the layout by hand: every way of asking torch for it.
TORCH_LAYOUT_ORACLES = {
    "Tensor.stride": (torch.Tensor, "stride"),
    "Tensor.storage_offset": (torch.Tensor, "storage_offset"),
    "Tensor.is_contiguous": (torch.Tensor, "is_contiguous"),
    "Tensor.view": (torch.Tensor, "view"),
    "Tensor.reshape": (torch.Tensor, "reshape"),
    "Tensor.as_strided": (torch.Tensor, "as_strided"),
    "Tensor.set_": (torch.Tensor, "set_"),
    "torch.as_strided": (torch, "as_strided"),
    "torch.empty_strided": (torch, "empty_strided"),
}


class ViewMeta(NamedTuple):
    """The metadata of a strided tensor: shape, strides (elements) and storage offset (elements)."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    storage_offset: int


def meta_of(t: Tensor) -> ViewMeta:
    """Read a tensor's metadata as plain ints."""
    return ViewMeta(tuple(t.shape), tuple(t.stride()), t.storage_offset())


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides (elements) of a fresh row-major tensor: the last dim is 1, each earlier one is the product of the
    sizes after it. A size-0 dim counts as 1 here, as in torch, so (2, 0, 3) gives (3, 3, 1)."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def offset_of(index: Sequence[int], strides: Sequence[int], storage_offset: int = 0) -> int:
    """Storage index (elements) of the element at `index`: storage_offset + sum(index[d] * strides[d])."""
    return storage_offset + sum(i * s for i, s in zip(index, strides, strict=True))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's rule for `Tensor.is_contiguous()`: the strides are the row-major ones, except that the stride of a
    size-1 dim does not matter (it is never used), and a tensor with no elements is always contiguous."""
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def transpose_view(meta: ViewMeta, dim0: int, dim1: int) -> ViewMeta:
    """`t.transpose(dim0, dim1)`: swap two entries of shape and of strides; the offset stays."""
    shape, strides = list(meta.shape), list(meta.strides)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    strides[dim0], strides[dim1] = strides[dim1], strides[dim0]
    return ViewMeta(tuple(shape), tuple(strides), meta.storage_offset)


def permute_view(meta: ViewMeta, dims: Sequence[int]) -> ViewMeta:
    """`t.permute(dims)`: dim d of the result is dim dims[d] of the input."""
    return ViewMeta(tuple(meta.shape[d] for d in dims), tuple(meta.strides[d] for d in dims), meta.storage_offset)


def select_view(meta: ViewMeta, dim: int, index: int) -> ViewMeta:
    """`t.select(dim, index)` (what `t[..., index, ...]` does): move the offset to `index`, drop the dim."""
    size = meta.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of range for a dim of size {size}")
    index %= size
    shape = meta.shape[:dim] + meta.shape[dim + 1:]
    strides = meta.strides[:dim] + meta.strides[dim + 1:]
    return ViewMeta(shape, strides, meta.storage_offset + index * meta.strides[dim])


def slice_view(meta: ViewMeta, dim: int, start: int | None = None, stop: int | None = None, step: int = 1) -> ViewMeta:
    """`t[..., start:stop:step, ...]` on one dim (step > 0; torch has no negative steps).

    Python's slice rules clamp start and stop to the dim; the offset moves to `start`, the stride is
    multiplied by `step`, and the size is the number of indices the slice picks.
    """
    if step <= 0:
        raise ValueError("torch slices need a positive step")
    first, last, step = slice(start, stop, step).indices(meta.shape[dim])
    size = len(range(first, last, step))
    shape = meta.shape[:dim] + (size,) + meta.shape[dim + 1:]
    strides = meta.strides[:dim] + (meta.strides[dim] * step,) + meta.strides[dim + 1:]
    return ViewMeta(shape, strides, meta.storage_offset + first * meta.strides[dim])


def view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides `t.view(new_shape)` would get, or None when `view` raises (and `reshape` therefore copies).

    The rule (torch's `computeStride`): group the old dims, from the last, into chunks that are laid out
    contiguously relative to each other (stride[d] == stride[d + 1] * size[d + 1]; size-1 dims join any chunk).
    A view may split a chunk into any dims and merge dims inside one chunk, but no new dim may span two chunks.
    `new_shape` must have the same number of elements as `shape`.
    """
    shape, strides, new_shape = tuple(shape), tuple(strides), tuple(new_shape)
    if math.prod(shape) != math.prod(new_shape):
        raise ValueError(f"shape {new_shape} has a different number of elements than {shape}")
    if not shape:
        return (1,) * len(new_shape)
    if math.prod(shape) == 0:  # no elements: any layout will do
        return tuple(strides) if shape == new_shape else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_stride = strides[-1]  # stride of the innermost element of the current chunk
    chunk_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        chunk_numel *= shape[d]
        chunk_ends = d == 0 or (shape[d - 1] != 1 and strides[d - 1] != chunk_numel * chunk_stride)
        if not chunk_ends:
            continue
        while view_d >= 0 and (view_numel < chunk_numel or new_shape[view_d] == 1):
            new_strides[view_d] = view_numel * chunk_stride
            view_numel *= new_shape[view_d]
            view_d -= 1
        if view_numel != chunk_numel:
            return None
        if d > 0:
            chunk_stride, chunk_numel, view_numel = strides[d - 1], 1, 1
    return tuple(new_strides) if view_d == -1 else None


def sliding_windows(x: Shaped[Tensor, " n"], width: int) -> Shaped[Tensor, "windows width"]:
    """All windows of `width` consecutive elements of a 1-D tensor, as a (n - width + 1, width) view (no copy)."""
    n, = x.shape
    step = x.stride(0)
    return x.as_strided((n - width + 1, width), (step, step), x.storage_offset())


def same_storage(a: Tensor, b: Tensor) -> bool:
    """True when `a` and `b` are views of one storage (compares the storages' start, not `data_ptr()`, which
    points at each tensor's first element and so differs between views with different offsets). Two tensors with
    empty storages both have address 0 and compare equal."""
    return _storage_data_ptr(_untyped_storage(a)) == _storage_data_ptr(_untyped_storage(b))


def storage_indices(view: Tensor) -> Int64[Tensor, "..."]:
    """For every element of `view`, the storage index (elements) it reads, computed from the metadata alone."""
    meta = meta_of(view)
    indices = torch.full(meta.shape, meta.storage_offset, dtype=torch.int64)
    for d, (size, stride) in enumerate(zip(meta.shape, meta.strides)):
        along = torch.arange(size, dtype=torch.int64) * stride
        indices = indices + along.view([size if e == d else 1 for e in range(len(meta.shape))])
    return indices


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


def plot_storage(views: dict[str, Tensor], storage_size: int | None = None) -> Figure:
    """One panel per view: its storage as a row of cells (labelled with the values stored there), the cells the view
    reads highlighted, and under each highlighted cell the order in which the view visits it (0 = its first element).

    All views should share one storage; `storage_size` defaults to the number of elements it holds.
    """
    import matplotlib.pyplot as plt  # here, so that graded exercises that import this module skip matplotlib

    first = next(iter(views.values()))
    if storage_size is None:
        storage_size = _untyped_storage(first).nbytes() // first.element_size()
    storage = first.new_empty(0).set_(_untyped_storage(first), 0, (storage_size,), (1,))
    fig, axes = plt.subplots(len(views), 1, figsize=(max(8, 0.55 * storage_size), 1.25 * len(views) + 0.6),
                             squeeze=False)
    for ax, (label, view) in zip(axes[:, 0], views.items()):
        order = storage_indices(view).flatten().tolist()
        visited = {cell: k for k, cell in reversed(list(enumerate(order)))}
        for cell in range(storage_size):
            touched = cell in visited
            ax.add_patch(plt.Rectangle((cell, 0), 1, 1, facecolor="#ff9f40" if touched else "#e8e8e8",
                                       edgecolor="white", linewidth=2))
            ax.text(cell + 0.5, 0.5, f"{storage[cell].item():g}", ha="center", va="center", fontsize=9)
            if touched:
                ax.text(cell + 0.5, -0.3, f"#{visited[cell]}", ha="center", va="center", fontsize=8, color="#b35900")
        meta = meta_of(view)
        ax.set_title(f"{label}:  shape {meta.shape}, stride {meta.strides}, offset {meta.storage_offset}",
                     fontsize=10)
        ax.set_xlim(0, storage_size)
        ax.set_ylim(-0.6, 1.05)
        ax.set_yticks([])
        ax.set_xticks([c + 0.5 for c in range(storage_size)], [str(c) for c in range(storage_size)], fontsize=8)
        ax.tick_params(length=0)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xlabel("storage index (elements); orange = read by the view, #k = the view's k-th element")
    fig.suptitle("One storage, many views", fontsize=12)
    fig.tight_layout()
    return fig
