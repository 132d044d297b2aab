"""Memory of training, in bytes: parameters + gradients + optimizer state + activations.

The per-parameter part is a handful of bytes per parameter that depends on the dtypes and the optimizer;
the activations depend on batch size and sequence length instead.
"""
from __future__ import annotations

import torch

# How many tensors the size of the parameters each optimizer keeps in its state.
OPTIMIZER_STATE_TENSORS: dict[str, int] = {
    "sgd": 0,        # nothing
    "momentum": 1,   # the velocity
    "adagrad": 1,    # the sum of squared gradients
    "rmsprop": 1,    # the running mean of squared gradients
    "adam": 2,       # first and second moments
    "adamw": 2,      # same as adam; weight decay needs no state
}


def optimizer_state_bytes(num_params: int, optimizer: str, state_dtype: torch.dtype = torch.float32) -> int:
    """Bytes of optimizer state for `num_params` parameters (Adam: 2 x P values, AdaGrad: 1 x P, SGD: 0)."""
    return OPTIMIZER_STATE_TENSORS[optimizer] * num_params * state_dtype.itemsize


def bytes_per_param(optimizer: str, param_dtype: torch.dtype = torch.float32, grad_dtype: torch.dtype | None = None,
                    master_weights: bool = False, state_dtype: torch.dtype = torch.float32) -> int:
    """Bytes each parameter costs during training: the parameter, its gradient, an fp32 master copy if any,
    and the optimizer state. fp32 AdamW: 4 + 4 + 8 = 16; bf16 params and grads with fp32 master weights:
    2 + 2 + 4 + 8 = 16 as well (faster, not smaller)."""
    grad_dtype = grad_dtype or param_dtype
    master = torch.float32.itemsize if master_weights else 0
    return param_dtype.itemsize + grad_dtype.itemsize + master + optimizer_state_bytes(1, optimizer, state_dtype)


def largest_model_params(memory_bytes: int, bytes_per_parameter: int) -> int:
    """How many parameters fit in `memory_bytes` at `bytes_per_parameter`, ignoring activations."""
    return memory_bytes // bytes_per_parameter
