"""Counting FLOPs: a FLOP is one add or one multiply; FLOPs is an amount; FLOP/s is a rate.

The formulas here are checked against `torch.utils.flop_counter.FlopCounterMode` in `tests/test_flops.py`
and in the lecture notebooks. FlopCounterMode counts matmul-like ops only (no elementwise ops), and counts
0 for `scaled_dot_product_attention` on real CPU tensors: count attention on the meta device.
"""
from __future__ import annotations

from typing import Callable

from torch.utils.flop_counter import FlopCounterMode


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an (m x k) @ (k x n) matmul: each of the m*n outputs takes k multiplies and k adds."""
    return 2 * m * k * n


def count_flops(fn: Callable[..., object], *args: object, **kwargs: object) -> int:
    """FLOPs that FlopCounterMode records while `fn(*args, **kwargs)` runs (matmul-like ops only)."""
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


def training_flops(params: int, tokens: int) -> int:
    """The 6 x params x tokens rule: forward 2 FLOPs per parameter per token, backward 4."""
    return 6 * params * tokens


def mfu(flops: float, seconds: float, peak_flops_per_second: float) -> float:
    """Model FLOPs utilization: achieved FLOP/s (flops / seconds) as a fraction of the peak FLOP/s."""
    return flops / seconds / peak_flops_per_second
