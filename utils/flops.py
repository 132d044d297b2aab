"""Counting FLOPs: a FLOP is one add or one multiply; FLOPs is an amount; FLOP/s is a rate.

The formulas here are checked against `torch.utils.flop_counter.FlopCounterMode` in `tests/test_flops.py`
and in the lecture notebooks. FlopCounterMode counts matmul-like ops only (no elementwise ops, and not
`torch.dot` or `torch.mv` either), and counts 0 for `scaled_dot_product_attention` on real CPU tensors:
count attention on the meta device.

The second half is the roofline: how many FLOPs an op does per byte it moves (its arithmetic intensity),
and whether the memory or the arithmetic units limit its speed.
"""
from __future__ import annotations

from typing import Callable

from torch.utils.flop_counter import FlopCounterMode

SECONDS_PER_DAY = 24 * 60 * 60


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an (m x k) @ (k x n) matmul: each of the m*n outputs takes k multiplies and k adds."""
    return 2 * m * k * n


def count_flops(fn: Callable[..., object], *args: object, **kwargs: object) -> int:
    """FLOPs that FlopCounterMode records while `fn(*args, **kwargs)` runs (matmul-like ops only)."""
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


def linear_flops(tokens: int, in_features: int, out_features: int) -> int:
    """Forward FLOPs of a bias-free linear layer on `tokens` input rows: one (tokens x in) @ (in x out) matmul."""
    return matmul_flops(tokens, in_features, out_features)


def forward_flops(params: int, tokens: int) -> int:
    """Forward FLOPs of a model made of matmuls: 2 per parameter per token (one multiply, one add)."""
    return 2 * params * tokens


def training_flops(params: int, tokens: int) -> int:
    """The 6 x params x tokens rule: forward 2 FLOPs per parameter per token, backward 4."""
    return 6 * params * tokens


def attention_training_flops(batch: int, seq_len: int, d_model: int) -> int:
    """FLOPs of attention's two sequence-by-sequence matmuls (Q K^T and scores @ V), forward and backward.

    Forward: 2 matmuls of 2 * seq_len^2 * d_model FLOPs each per sequence; backward does twice the forward.
    This is the part of a transformer that 6 x params x tokens leaves out (it has no parameters). The full
    square is counted, as FlopCounterMode does; a causal kernel that skips the masked half does about half.
    """
    return 3 * 2 * matmul_flops(seq_len, d_model, seq_len) * batch


def mfu(flops: float, seconds: float, peak_flops_per_second: float) -> float:
    """Model FLOPs utilization: achieved FLOP/s (flops / seconds) as a fraction of the peak FLOP/s."""
    return flops / seconds / peak_flops_per_second


def flops_per_day(num_gpus: int, peak_flops_per_second: float, mfu: float) -> float:
    """FLOPs that `num_gpus` GPUs deliver in one day when they run at `mfu` times their peak FLOP/s."""
    return num_gpus * peak_flops_per_second * mfu * SECONDS_PER_DAY


def training_days(params: float, tokens: float, num_gpus: int, peak_flops_per_second: float, mfu: float) -> float:
    """Days to train `params` parameters on `tokens` tokens (6 x params x tokens FLOPs) on `num_gpus` GPUs."""
    return training_flops(params, tokens) / flops_per_day(num_gpus, peak_flops_per_second, mfu)


def matmul_bytes(m: int, k: int, n: int, bytes_per_element: int) -> int:
    """The fewest bytes an (m x k) @ (k x n) matmul moves: read both inputs once, write the output once."""
    return (m * k + k * n + m * n) * bytes_per_element


def elementwise_bytes(numel: int, bytes_per_element: int, inputs: int = 1) -> int:
    """Bytes an elementwise op moves: read `inputs` tensors of `numel` elements, write one of the same size."""
    return (inputs + 1) * numel * bytes_per_element


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs per byte moved to or from memory."""
    return flops / bytes_moved


def ridge_point(peak_flops_per_second: float, bytes_per_second: float) -> float:
    """The arithmetic intensity (FLOP/byte) at which memory and arithmetic take equally long on a device."""
    return peak_flops_per_second / bytes_per_second


def attainable_flops_per_second(intensity: float, peak_flops_per_second: float, bytes_per_second: float) -> float:
    """The roofline: an op of this intensity runs at most at min(peak, intensity x bandwidth) FLOP/s."""
    return min(peak_flops_per_second, intensity * bytes_per_second)


def bound(intensity: float, peak_flops_per_second: float, bytes_per_second: float) -> str:
    """'compute-bound' at or above the ridge point, 'memory-bound' below it."""
    if intensity >= ridge_point(peak_flops_per_second, bytes_per_second):
        return "compute-bound"
    return "memory-bound"
