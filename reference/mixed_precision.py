"""Exercise 9 (mixed precision): the references its hidden tests compare with. Instructor-only.

Tasks 1, 3 and 5 are compared with torch itself: the master-weight step with `torch.autocast` (whose fp32 parameters
are master weights, bit for bit), the loss-scale rule with the kernel `torch.amp.GradScaler.update` runs, and the
dtype of each op with `torch.autocast`. Tasks 2 and 4 are compared with these.
"""
from __future__ import annotations

from typing import Sequence

import torch
from jaxtyping import Float
from torch import Tensor


def loss_scaled_step(loss: Float[Tensor, ""], model_params: Sequence[Tensor], master_params: Sequence[Tensor],
                     optimizer: torch.optim.Optimizer, scale: float) -> bool:
    """Task 2: backward of `loss * scale`, unscale in fp32, step the fp32 masters only if every gradient is finite
    (then copy them into the model, rounding); clear every gradient either way; True if it stepped."""
    (loss * scale).backward()
    grads = [param.grad.float() / scale for param in model_params]
    stepped = all(bool(torch.isfinite(grad).all()) for grad in grads)
    if stepped:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        with torch.no_grad():
            for param, master in zip(model_params, master_params):
                param.copy_(master)
    for param, master in zip(model_params, master_params):
        param.grad = master.grad = None
    return stepped


def mlp_activation_bytes(batch: int, seq: int, dim: int, hidden: int, dtype: torch.dtype) -> int:
    """Task 4: the inputs of up (dim numbers), GELU and down (hidden each) for every token, stored in `dtype`."""
    return batch * seq * (dim + 2 * hidden) * dtype.itemsize
