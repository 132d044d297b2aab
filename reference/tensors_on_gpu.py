"""Exercise 2 (tensors on the GPU), the instructor's references: the device a process picks, what the caching
allocator charges for a list of tensors, and whether `.to` copies, all worked out from arguments alone.

Hidden tests compare with these on every machine, and also with torch itself where the machine can answer
(`.to` on real CPU and CUDA tensors, `torch.cuda.memory_allocated` on a GPU).
"""
from __future__ import annotations

from typing import Sequence

import torch

ALLOCATOR_BLOCK_BYTES = 512  # PyTorch's c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize


def pick_device(cuda_count: int, mps_available: bool, local_rank: int = 0) -> str:
    """'cuda:<local_rank>' when there are GPUs (ValueError when that GPU does not exist), else 'mps', else 'cpu'."""
    if cuda_count > 0:
        if not 0 <= local_rank < cuda_count:
            raise ValueError(f"local_rank {local_rank} needs GPU {local_rank}, but there are only {cuda_count}")
        return f"cuda:{local_rank}"
    return "mps" if mps_available else "cpu"


def allocated_bytes(tensors: Sequence[tuple[Sequence[int], torch.dtype]]) -> int:
    """Growth of `torch.cuda.memory_allocated()`, in bytes, when each (shape, dtype) becomes its own CUDA tensor:
    each tensor's bytes (counted by torch on the meta device) rounded up to whole 512-byte blocks; 0 stays 0.
    Exact for tensors up to 1 MiB."""
    total = 0
    for shape, dtype in tensors:
        nbytes = torch.empty(tuple(shape), dtype=dtype, device="meta").nbytes
        total += -(-nbytes // ALLOCATOR_BLOCK_BYTES) * ALLOCATOR_BLOCK_BYTES
    return total


def _resolve(device: str | torch.device, current_cuda: int) -> torch.device:
    """'cuda' without an index means the current CUDA device; every other device is taken as written."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", current_cuda)
    return device


def to_copies(source_device: str, source_dtype: torch.dtype, target_device: str | None = None,
              target_dtype: torch.dtype | None = None, copy: bool = False, current_cuda: int = 0) -> bool:
    """Whether `x.to(target_device, target_dtype, copy=copy)` copies a tensor `x` on `source_device` with
    `source_dtype` (True) or returns `x` itself (False); None keeps x's device or dtype."""
    source = _resolve(source_device, current_cuda)
    target = source if target_device is None else _resolve(target_device, current_cuda)
    new_dtype = target_dtype is not None and target_dtype != source_dtype
    return copy or target != source or new_dtype
