"""Strides, views and contiguity: a tensor's metadata as torch reports it, and pictures of the storage a view reads.

A tensor is a pointer into a flat storage plus three pieces of metadata: shape, strides and storage offset
(all counted in elements, not bytes). Element (i0, i1, ...) lives at storage index
    storage_offset + i0 * strides[0] + i1 * strides[1] + ...
A view is a new set of metadata over the same storage; a copy is new storage. Working that arithmetic out by hand
is exercise 3's job; everything here asks torch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import torch
import torch._prims_common
from jaxtyping import Int64
from torch import Tensor

from utils.grading import check_bool, check_int, check_ints, check_type, exactly, forbidden  # noqa: F401 (the exercise imports them from here)

forbidding = forbidden  # the name the exercise uses; forbidden() leaves classes exactly as they were

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Taken at import (before any student code runs), so rebinding them later changes nothing here.
_untyped_storage = torch.Tensor.untyped_storage
_storage_data_ptr = torch.UntypedStorage.data_ptr

# What an exercise forbids where the task is to work out the layout by hand: every way of asking torch for it,
# including the plain-Python helpers torch keeps for its own reference implementations.
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
    "torch._prims_common.make_contiguous_strides_for": (torch._prims_common, "make_contiguous_strides_for"),
    "torch._prims_common.check_contiguous_sizes_strides": (torch._prims_common, "check_contiguous_sizes_strides"),
}


class ViewMeta(NamedTuple):
    """The metadata of a strided tensor: shape, strides (elements) and storage offset (elements)."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    storage_offset: int


def check_metadata(got: object, want: tuple, what: str, hint: str | None = None) -> None:
    """`got` must be a view's (shape, strides, storage offset), as plain tuples and ints, equal to `want`."""
    got = exactly(got, tuple, what, hint="return a tuple (new_shape, new_strides, new_storage_offset).")
    check_int(len(got), 3, f"length of {what}", hint="three things: (new_shape, new_strides, new_storage_offset).")
    check_ints(got[0], want[0], f"new shape of {what}", hint)
    check_ints(got[1], want[1], f"new strides of {what}", hint)
    check_int(got[2], want[2], f"new storage offset of {what}", hint)


def meta_of(t: Tensor) -> ViewMeta:
    """Read a tensor's metadata from torch, as plain ints."""
    return ViewMeta(tuple(t.shape), tuple(t.stride()), t.storage_offset())


def same_storage(a: Tensor, b: Tensor) -> bool:
    """True when `a` and `b` are views of one storage (compares the storages' start, not `data_ptr()`, which
    points at each tensor's first element and so differs between views with different offsets). Two tensors with
    empty storages both have address 0 and compare equal."""
    return _storage_data_ptr(_untyped_storage(a)) == _storage_data_ptr(_untyped_storage(b))


def storage_indices(view: Tensor) -> Int64[Tensor, "..."]:
    """For every element of `view`, the storage index (elements) it reads. torch works it out: the same shape,
    strides and offset laid over a storage whose every cell holds its own index."""
    cells = _untyped_storage(view).nbytes() // view.element_size()
    return torch.arange(cells, dtype=torch.int64).as_strided(view.shape, view.stride(), view.storage_offset())


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
