"""Tensors on devices: what the CUDA caching allocator charges for a tensor, when `.to` copies, how fast copies go.

The allocator numbers come from PyTorch's c10/cuda/CUDACachingAllocator.cpp: every request is rounded up to a
multiple of 512 bytes (kMinBlockSize), requests up to 1 MiB (kSmallSize) are carved out of 2 MiB segments, and
a request for 0 bytes allocates nothing. `torch.cuda.memory_allocated()` adds up the rounded sizes.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

import torch
from jaxtyping import Shaped
from torch import Tensor

from utils.grading import check_bool  # noqa: F401 (the exercise imports it from here)
from utils.timing import time_it
from utils.units import GB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALLOCATOR_BLOCK_BYTES = 512       # every CUDA allocation is a whole number of these
SMALL_ALLOCATION_BYTES = 2**20    # up to here the rounding rule is exact (the allocator's "small pool")

TensorSpec = tuple[Sequence[int], torch.dtype]  # (shape, dtype) of a tensor we do not need to create


def allocator_bytes(nbytes: int, block: int = ALLOCATOR_BLOCK_BYTES) -> int:
    """Bytes the CUDA caching allocator hands out for a request of `nbytes` bytes: 0 for 0, otherwise `nbytes`
    rounded up to a multiple of `block`. This is how much `torch.cuda.memory_allocated()` grows.

    Exact up to 1 MiB. Above that the block can be larger: the allocator keeps a leftover of 1 MiB or less
    attached to the block instead of splitting it off.
    """
    if nbytes < 0:
        raise ValueError(f"a tensor cannot need {nbytes} bytes")
    blocks = -(-nbytes // block)  # ceiling division
    return blocks * block


def measured_allocated_bytes(tensors: Sequence[TensorSpec], device: torch.device | str = "cuda") -> int:
    """Real growth of `torch.cuda.memory_allocated(device)`, in bytes, while the tensors exist (needs CUDA)."""
    before = torch.cuda.memory_allocated(device)
    held = [torch.empty(tuple(shape), dtype=dtype, device=device) for shape, dtype in tensors]
    grown = torch.cuda.memory_allocated(device) - before
    del held
    return grown


def default_caching_allocator() -> bool:
    """True when CUDA is here and torch's caching allocator rounds as by default (so the 512-byte rule holds)."""
    if not torch.cuda.is_available():
        return False
    config = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "") + os.environ.get("PYTORCH_ALLOC_CONF", "")
    return torch.cuda.memory.get_allocator_backend() == "native" and "roundup_power2_divisions" not in config


def to_copies(x: Shaped[Tensor, "..."], device: str | torch.device | None = None, dtype: torch.dtype | None = None,
              copy: bool = False) -> bool:
    """Ask torch whether `x.to(device, dtype, copy=copy)` makes a new tensor (True) or hands back `x` itself (False).

    It runs the real `.to`, so the device must exist on this machine; 'meta' (shapes and dtypes, no data) always does.
    """
    return x.to(device=device, dtype=dtype, copy=copy) is not x


def _timing_device(source_device: str | torch.device, target_device: str | torch.device) -> torch.device:
    """The device to wait for when timing a copy: the accelerator end of it, or the CPU for a host copy."""
    for device in (torch.device(target_device), torch.device(source_device)):
        if device.type != "cpu":
            return device
    return torch.device("cpu")


def copy_bandwidth(nbytes: int, source_device: str | torch.device = "cpu", target_device: str | torch.device = "cpu",
                   pinned: bool = False, repeats: int = 5) -> float:
    """Measured bytes per second copied from an `nbytes` buffer on `source_device` into one on `target_device`
    (median of `repeats` timed copies after warm-up, waiting for the device each time).

    `pinned=True` puts the host side in page-locked memory and copies with non_blocking=True (needs CUDA).
    Counts each byte once: an on-device copy reads and writes it, so the memory moves twice as many bytes.
    """
    if nbytes <= 0:
        raise ValueError("copy_bandwidth needs at least one byte to copy")
    source = torch.empty(nbytes, dtype=torch.uint8, device=source_device,
                         pin_memory=pinned and torch.device(source_device).type == "cpu")
    target = torch.empty(nbytes, dtype=torch.uint8, device=target_device,
                         pin_memory=pinned and torch.device(target_device).type == "cpu")
    source.fill_(1)  # touch every page, so the timing does not include the OS handing out fresh memory
    seconds = time_it(lambda: target.copy_(source, non_blocking=pinned), warmup=2, repeats=repeats,
                      device=_timing_device(source_device, target_device))
    return nbytes / seconds


class SimulatedStream:
    """A pretend GPU stream on a pretend clock, to show (and test) timing of asynchronous work on any machine.

    `launch()` queues one piece of work, which takes the next of the scripted `durations` (seconds) once the
    work before it is done, and returns after only `launch_seconds`, as a CUDA kernel launch or a
    non_blocking copy does. `synchronize()` waits until the queue is empty. `clock()` reads the time.
    """

    def __init__(self, durations: Sequence[float], launch_seconds: float = 1e-6):
        self.durations = list(durations)
        self.launch_seconds = launch_seconds
        self.now = 0.0          # the host's time, in seconds
        self.busy_until = 0.0   # when the queued work will be done
        self.launches = 0

    def clock(self) -> float:
        return self.now

    def launch(self) -> None:
        if self.launches == len(self.durations):
            raise AssertionError(f"the work was launched more than {len(self.durations)} times "
                                 "(warm-up calls + timed calls)")
        start = max(self.now, self.busy_until)
        self.busy_until = start + self.durations[self.launches]
        self.launches += 1
        self.now += self.launch_seconds

    def synchronize(self) -> None:
        self.now = max(self.now, self.busy_until)


def plot_allocator_rounding(max_bytes: int = 2048, block: int = ALLOCATOR_BLOCK_BYTES) -> Figure:
    """Allocated against requested bytes: a staircase of `block`-byte steps above the line allocated = requested."""
    import matplotlib.pyplot as plt  # here, so that exercises importing this module do not pay for matplotlib

    requested = list(range(max_bytes + 1))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.step(requested, [allocator_bytes(n, block) for n in requested], where="post", label="allocated (rounded up)")
    ax.plot(requested, requested, "--", color="grey", label="requested")
    ax.set_xlabel("requested bytes (numel × element size)")
    ax.set_ylabel("bytes added to memory_allocated")
    ax.set_title(f"The CUDA caching allocator hands out whole {block}-byte blocks")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def plot_copy_bandwidth(curves: dict[str, dict[int, float]]) -> Figure:
    """Measured copy bandwidth (GB/s) against copy size (bytes, log axis); `curves` maps a label to {bytes: bytes/s}."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, points in curves.items():
        sizes = sorted(points)
        ax.plot(sizes, [points[n] / GB for n in sizes], "o-", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per copy (log scale)")
    ax.set_ylabel("bandwidth (GB/s, 1 GB = 1e9 bytes; log scale)")
    ax.set_title("Copy bandwidth grows with size until the link or the memory is the limit")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig
