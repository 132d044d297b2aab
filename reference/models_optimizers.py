"""Exercise 7 (models and optimizers): the references its hidden tests compare with. Instructor-only.

Tasks 1-3 (MomentumSGD, AdaGrad, AdamW) are compared with torch.optim itself, so they have nothing here.
"""
from __future__ import annotations

import torch

# State tensors the size of the parameters, per optimizer (task 5's table), each 4 bytes (fp32) per parameter.
STATE_TENSORS = {"sgd": 0, "momentum": 1, "adagrad": 1, "rmsprop": 1, "adam": 2, "adamw": 2}


def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Task 4: bytes of every tensor with at least one dimension among the values of `optimizer.state`."""
    return sum(value.numel() * value.element_size()
               for state in optimizer.state.values() for value in state.values()
               if isinstance(value, torch.Tensor) and value.dim() > 0)


def largest_model(num_gpus: int, bytes_per_gpu: int, optimizer: str, param_dtype: torch.dtype = torch.float32,
                  master_weights: bool = False, reserved_bytes_per_gpu: int = 0) -> int:
    """Task 5: most parameters whose weights and gradients (`param_dtype`), optional fp32 master copy and fp32
    optimizer state fit, sharded evenly over `num_gpus` GPUs, after the reserve on each; 0 if the reserve takes all."""
    per_param = 2 * param_dtype.itemsize + 4 * master_weights + 4 * STATE_TENSORS[optimizer]
    free_per_gpu = max(0, bytes_per_gpu - reserved_bytes_per_gpu)
    return num_gpus * free_per_gpu // per_param
