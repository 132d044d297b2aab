"""Bytes and the units we count them in: GB means 10^9 bytes, GiB means 2^30 bytes."""
from __future__ import annotations

import torch
from jaxtyping import Shaped
from torch import Tensor

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40


def bytes_for(shape: tuple[int, ...] | torch.Size, dtype: torch.dtype) -> int:
    """Bytes needed to store a dense tensor of this shape and dtype, without allocating it: torch counts them for a
    tensor on the meta device, which has a shape and a dtype but no data."""
    return torch.empty(tuple(shape), dtype=dtype, device="meta").nbytes


def tensor_bytes(x: Shaped[Tensor, "..."]) -> int:
    """Bytes of the elements a tensor holds: numel x element_size (not the size of its whole storage)."""
    return x.numel() * x.element_size()


def format_bytes(num_bytes: int | float) -> str:
    """A byte count in decimal and binary units, e.g. '2,415,919,104 bytes = 2.42 GB = 2.25 GiB'."""
    decimal = [(n, u) for n, u in ((TB, "TB"), (GB, "GB"), (MB, "MB"), (KB, "KB")) if num_bytes >= n][:1]
    binary = [(n, u) for n, u in ((TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")) if num_bytes >= n][:1]
    return " = ".join([f"{num_bytes:,} bytes"] + [f"{num_bytes / n:.3g} {u}" for n, u in decimal + binary])


def significant(x: float, digits: int) -> str:
    """`x` to `digits` significant digits, with thousands separators and no exponent from 100 up:
    significant(2712.4, 2) -> '2,700', significant(0.01834, 3) -> '0.0183' (timings: the rest is noise)."""
    rounded = float(f"{x:.{digits}g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:g}"
