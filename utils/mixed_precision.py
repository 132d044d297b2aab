"""Mixed precision: compute in 16 bits, keep the weights and optimizer state in fp32, scale the loss for fp16.

The recipe: a low-precision (bf16 or fp16) copy of the weights does the forward and backward passes; fp32 "master"
weights, and the optimizer state, receive the updates (`torch.autocast` does this with fp32 parameters, casting
them for each op). fp16 also needs loss scaling: multiply the loss by S before backward so that small gradients stay
inside fp16's range, divide by S after (`torch.amp.GradScaler`). Here: tools to show and measure it (an MLP block,
what autograd saves, what autocast does to each op); the steps themselves are exercise 9's to write.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Float, Shaped
from torch import Tensor, nn

from utils.models import Linear

# ---------------------------------------------------------------- fp32 master weights

def fp32_master_copy(params: Iterable[Tensor]) -> list[nn.Parameter]:
    """Fresh fp32 parameters holding the same values as `params` (whatever their dtype): the master weights."""
    return [nn.Parameter(p.detach().to(torch.float32).clone()) for p in params]


# ---------------------------------------------------------------- small numbers in 16 bits

def underflow_fraction(values: Shaped[Tensor, "..."], dtype: torch.dtype) -> float:
    """Fraction of the nonzero `values` that become exactly 0 when stored in `dtype` (0.0 if none is nonzero)."""
    nonzero = values[values != 0]
    if nonzero.numel() == 0:
        return 0.0
    return (nonzero.to(dtype) == 0).sum().item() / nonzero.numel()


# ---------------------------------------------------------------- activation memory

class MLP(nn.Module):
    """The feed-forward block of a transformer: down(gelu(up(x))), no biases."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.up = Linear(dim, hidden)
        self.down = Linear(hidden, dim)

    def forward(self, x: Float[Tensor, "... dim"]) -> Float[Tensor, "... dim"]:
        return self.down(F.gelu(self.up(x)))


def is_parameter_or_copy(t: Tensor, params: Sequence[Tensor]) -> bool:
    """True for a parameter, or a dtype cast of one (autocast saves the bf16 copy of a weight for the backward)."""
    if any(t is p for p in params):
        return True
    node = t.grad_fn
    if node is None or node.name() != "ToCopyBackward0":
        return False
    source = node.next_functions[0][0]
    return source is not None and any(getattr(source, "variable", None) is p for p in params)


def saved_tensors(fn: Callable[[], object]) -> list[Tensor]:
    """Every tensor autograd saves for the backward pass while `fn()` runs (views of one tensor counted each time)."""
    saved: list[Tensor] = []

    def pack(t: Tensor) -> Tensor:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return saved


def saved_activation_bytes(fn: Callable[[], object], params: Sequence[Tensor]) -> int:
    """Bytes of the activations autograd saves while `fn()` runs: saved tensors that are not `params` or casts of them."""
    return sum(t.numel() * t.element_size() for t in saved_tensors(fn) if not is_parameter_or_copy(t, params))


# ---------------------------------------------------------------- what autocast does to each op

def _long_zeros(x: Tensor) -> Tensor:
    return torch.zeros(x.shape[0], dtype=torch.long, device=x.device)


# One small call per op, each taking a (4, 8) input; the weights are made from the input so they share its dtype.
AUTOCAST_PROBES: dict[str, Callable[[Tensor], Tensor]] = {
    "matmul": lambda x: x @ x.T,
    "linear": lambda x: F.linear(x, x),
    "bmm": lambda x: torch.bmm(x[None], x.T[None]),
    "conv1d": lambda x: F.conv1d(x[None], x[:, :4, None]),
    "scaled_dot_product_attention": lambda x: F.scaled_dot_product_attention(x[None], x[None], x[None]),
    "cross_entropy": lambda x: F.cross_entropy(x, _long_zeros(x)),
    "mse_loss": lambda x: F.mse_loss(x, torch.zeros_like(x)),
    "nll_loss": lambda x: F.nll_loss(x, _long_zeros(x)),
    "prod": lambda x: x.prod(),
    "sum": lambda x: x.sum(),
    "mean": lambda x: x.mean(),
    "softmax": lambda x: x.softmax(dim=-1),
    "exp": lambda x: x.exp(),
    "relu": lambda x: x.relu(),
    "gelu": F.gelu,
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "add": lambda x: x + x,
}


def autocast_output_dtype(op: str, input_dtype: torch.dtype, device_type: str = "cpu",
                          autocast_dtype: torch.dtype = torch.bfloat16) -> torch.dtype:
    """The dtype of `AUTOCAST_PROBES[op]`'s output on a (4, 8) input of `input_dtype`, run under torch.autocast."""
    x = torch.randn(4, 8, device=device_type).to(input_dtype)
    with torch.autocast(device_type=device_type, dtype=autocast_dtype):
        return AUTOCAST_PROBES[op](x).dtype

