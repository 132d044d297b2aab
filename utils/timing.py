"""Timing done right: warm up, synchronize the device, repeat, take the median."""
from __future__ import annotations

import statistics
import time
from typing import Callable

import torch


def synchronize(device: torch.device | str | None = None) -> None:
    """Wait until all queued work on `device` has finished (GPU kernels run asynchronously; a CPU needs no wait)."""
    device = torch.device(device) if device is not None else None
    if device is None or device.type == "cuda":
        if torch.cuda.is_available():
            torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def time_it(fn: Callable[[], object], *, warmup: int = 2, repeats: int = 5,
            device: torch.device | str | None = None) -> float:
    """Median wall time of one call of `fn`, in seconds, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        synchronize(device)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)
