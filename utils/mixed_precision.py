"""Mixed precision: compute in 16 bits, keep the weights and optimizer state in fp32, scale the loss for fp16.

The recipe: a low-precision (bf16 or fp16) copy of the model does the forward and backward passes; an fp32
"master" copy of the weights, and the optimizer state, receive the updates. fp16 also needs loss scaling:
multiply the loss by S before backward so that small gradients stay inside fp16's range, divide by S after.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import torch
import torch.nn.functional as F
from jaxtyping import Float, Shaped
from torch import Tensor, nn

from utils.models import Linear
from utils.units import bytes_for


# ---------------------------------------------------------------- fp32 master weights

def fp32_master_copy(params: Iterable[Tensor]) -> list[nn.Parameter]:
    """Fresh fp32 parameters holding the same values as `params` (whatever their dtype): the master weights."""
    return [nn.Parameter(p.detach().to(torch.float32).clone()) for p in params]


def copy_master_to_model(model_params: Sequence[Tensor], master_params: Sequence[Tensor]) -> None:
    """Overwrite each model parameter with its master copy, rounded to the model's dtype."""
    with torch.no_grad():
        for param, master in zip(model_params, master_params):
            param.copy_(master)


def master_weight_step(model_params: Sequence[Tensor], master_params: Sequence[Tensor],
                       optimizer: torch.optim.Optimizer) -> None:
    """One mixed-precision optimizer step.

    The gradients sit on the low-precision `model_params` (after backward). They are cast to fp32 and handed to
    the master copies, `optimizer` (built over `master_params`, so its state is fp32 too) updates the masters,
    the model gets the new values rounded to its dtype, and every gradient is cleared (set to None).
    """
    for param, master in zip(model_params, master_params):
        master.grad = param.grad.to(torch.float32)
    optimizer.step()
    copy_master_to_model(model_params, master_params)
    optimizer.zero_grad(set_to_none=True)
    for param in model_params:
        param.grad = None


# ---------------------------------------------------------------- loss scaling

def all_finite(tensors: Iterable[Tensor]) -> bool:
    """True when no tensor holds an inf or a nan."""
    return all(bool(torch.isfinite(t).all()) for t in tensors)


def loss_scaled_step(loss: Float[Tensor, ""], model_params: Sequence[Tensor], master_params: Sequence[Tensor],
                     optimizer: torch.optim.Optimizer, scale: float) -> bool:
    """Backward of `loss * scale`, unscale the gradients in fp32, and step only if they are all finite.

    Unscaling divides in fp32: dividing in fp16 would push the small gradients back below fp16's range.
    On an inf or nan nothing is updated (master, model and optimizer state stay as they were). Gradients are
    cleared either way. Returns True when the step was taken.
    """
    (loss * scale).backward()
    grads = [param.grad.to(torch.float32) / scale for param in model_params]
    stepped = all_finite(grads)
    if stepped:
        for master, grad in zip(master_params, grads):
            master.grad = grad
        optimizer.step()
        copy_master_to_model(model_params, master_params)
    optimizer.zero_grad(set_to_none=True)
    for param in model_params:
        param.grad = None
    return stepped


def next_loss_scale(scale: float, found_inf: bool, good_steps: int, growth_interval: int = 2000,
                    growth_factor: float = 2.0, backoff_factor: float = 0.5) -> tuple[float, int]:
    """Dynamic loss scaling, the rule `torch.amp.GradScaler.update` follows: (new scale, new count of good steps).

    An inf or nan halves the scale and restarts the count; `growth_interval` finite steps in a row double it.
    """
    if found_inf:
        return scale * backoff_factor, 0
    good_steps += 1
    if good_steps == growth_interval:
        return scale * growth_factor, 0
    return scale, good_steps


def underflow_fraction(values: Shaped[Tensor, "..."], dtype: torch.dtype) -> float:
    """Fraction of the nonzero `values` that become exactly 0 when stored in `dtype` (0.0 if none is nonzero)."""
    nonzero = values[values != 0]
    if nonzero.numel() == 0:
        return 0.0
    return (nonzero.to(dtype) == 0).sum().item() / nonzero.numel()


# ---------------------------------------------------------------- activation memory

def activation_bytes(shapes: Iterable[tuple[int, ...]], dtype: torch.dtype) -> int:
    """Bytes of activations with these shapes, all stored in `dtype`."""
    return sum(bytes_for(shape, dtype) for shape in shapes)


class MLP(nn.Module):
    """The feed-forward block of a transformer: down(gelu(up(x))), no biases."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.up = Linear(dim, hidden)
        self.down = Linear(hidden, dim)

    def forward(self, x: Float[Tensor, "... dim"]) -> Float[Tensor, "... dim"]:
        return self.down(F.gelu(self.up(x)))


def mlp_activation_shapes(batch: int, seq: int, dim: int, hidden: int) -> list[tuple[int, ...]]:
    """What autograd saves for the backward pass of an MLP on a (batch, seq, dim) input, besides the weights:
    the input of `up` (for up's weight gradient), the input of GELU (for its derivative) and the input of
    `down` (for down's weight gradient)."""
    return [(batch, seq, dim), (batch, seq, hidden), (batch, seq, hidden)]


def mlp_activation_bytes(batch: int, seq: int, dim: int, hidden: int, dtype: torch.dtype) -> int:
    """Bytes the MLP's saved activations take when they are stored in `dtype`: batch x seq x (dim + 2 hidden) x size."""
    return activation_bytes(mlp_activation_shapes(batch, seq, dim, hidden), dtype)


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
