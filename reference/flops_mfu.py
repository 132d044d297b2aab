"""Exercise 5 (FLOPs and MFU): the answers that torch cannot give, for the hidden tests to compare with.

Tasks 1, 2 and 5 need no reference: their hidden tests count FLOPs with `FlopCounterMode` and bytes from the sizes of
meta tensors. Training days, MFU and the roofline time are arithmetic on numbers torch knows nothing about.
"""
from __future__ import annotations

import torch

from utils.flops import SECONDS_PER_DAY, matmul_flops
from utils.hardware import peak_flops


def training_days(params: float, tokens: float, num_gpus: int, peak_flops_per_second: float, mfu: float) -> float:
    """Days to train: 6 x params x tokens FLOPs over num_gpus x peak (FLOP/s) x mfu x 86400 FLOPs per day."""
    flops_per_day = num_gpus * peak_flops_per_second * mfu * SECONDS_PER_DAY
    return 6 * params * tokens / flops_per_day


def matmul_mfu(m: int, k: int, n: int, seconds: float, device_name: str, dtype: torch.dtype | str) -> float | None:
    """Achieved FLOP/s of an (m x k) @ (k x n) matmul that took `seconds`, over the dense peak; None if unknown."""
    peak = peak_flops(device_name, dtype)
    if peak is None:
        return None
    return matmul_flops(m, k, n) / seconds / peak


def roofline_seconds(ops: list[tuple[float, float]], peak_flops_per_second: float, bytes_per_second: float) -> float:
    """The least time (seconds) of ops run one after another, each (FLOPs, bytes moved): sum of max(F / peak, M / bw)."""
    return sum(max(flops / peak_flops_per_second, moved / bytes_per_second) for flops, moved in ops)
