"""Counting FLOPs and bytes: a FLOP is one add or one multiply; FLOPs is an amount; FLOP/s is a rate.

`count_flops` asks torch's `FlopCounterMode`, which counts matmul-like ops only (no elementwise ops, and not
`torch.dot` or `torch.mv` either) and counts 0 for `scaled_dot_product_attention` on real CPU tensors: count
attention on the meta device. `matmul_flops` and `matmul_bytes` are the cost of one 2-D matmul (lecture 5 checks them
against `FlopCounterMode` and against the bytes of real tensors); the lecture writes the rest of its napkin math out.

The second half is the roofline's vocabulary: how many FLOPs an op does per byte it moves (its arithmetic intensity),
the device's ridge point, and which side of it an op falls on.
"""
from __future__ import annotations

from typing import Callable

from torch.utils.flop_counter import FlopCounterMode

SECONDS_PER_DAY = 24 * 60 * 60


def count_flops(fn: Callable[..., object], *args: object, **kwargs: object) -> int:
    """FLOPs that FlopCounterMode records while `fn(*args, **kwargs)` runs (matmul-like ops only)."""
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of one (m x k) @ (k x n) matmul: each of the m*n outputs takes k multiplies and k adds."""
    return 2 * m * k * n


def linear_flops(tokens: int, in_features: int, out_features: int) -> int:
    """Forward FLOPs of a bias-free linear layer on `tokens` input rows: one (tokens x in) @ (in x out) matmul."""
    return matmul_flops(tokens, in_features, out_features)


def attention_training_flops(batch: int, seq_len: int, d_model: int) -> int:
    """FLOPs of attention's two sequence-by-sequence matmuls (Q K^T and scores @ V), forward and backward.

    Forward: 2 matmuls of 2 * seq_len^2 * d_model FLOPs each per sequence; backward does twice the forward.
    This is the part of a transformer that 6 x params x tokens leaves out (it has no parameters). The full
    square is counted, as FlopCounterMode does; a causal kernel that skips the masked half does about half.
    """
    return 3 * 2 * matmul_flops(seq_len, d_model, seq_len) * batch


def matmul_bytes(m: int, k: int, n: int, bytes_per_element: int) -> int:
    """The fewest bytes one (m x k) @ (k x n) matmul moves: read both inputs once, write the output once."""
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


def bound(intensity: float, peak_flops_per_second: float, bytes_per_second: float) -> str:
    """'compute-bound' at or above the ridge point, 'memory-bound' below it."""
    if intensity >= ridge_point(peak_flops_per_second, bytes_per_second):
        return "compute-bound"
    return "memory-bound"



def linear_model_matmul_shapes(batch_shape: tuple[int, ...], widths: list[int]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (a_shape, b_shape) pairs of the matmuls one might count for exercise 5's linear model (forward, weight
    gradient, input gradient; the batch kept or flattened to tokens), each once. Shapes only: no count, no answer.
    Exercise 5's tests use them to know which calls of the earlier task's `matmul_flop_count` to answer right."""
    tokens = 1
    for size in batch_shape:
        tokens *= size
    batch = tuple(batch_shape)
    pairs = []
    for d_in, d_out in zip(widths, widths[1:]):
        pairs += [(batch + (d_in,), (d_in, d_out)), ((tokens, d_in), (d_in, d_out)),     # forward
                  ((d_in, tokens), (tokens, d_out)),                                      # weight gradient
                  (batch + (d_out,), (d_out, d_in)), ((tokens, d_out), (d_out, d_in))]   # input gradient
    return list(dict.fromkeys(pairs))
