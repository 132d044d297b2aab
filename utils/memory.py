"""Memory of training, in bytes: parameters + gradients + optimizer state + activations.

The per-parameter part is a handful of bytes per parameter that depends on the dtypes and the optimizer;
the activations depend on batch size and sequence length instead.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from torch import Tensor, nn

# The per-element state tensors each torch.optim optimizer keeps for a parameter, by the names it stores them under
# (its 0-dim `step` counters aside).
STATE_NAMES: dict[str, tuple[str, ...]] = {
    "sgd": (),                                # nothing
    "momentum": ("momentum_buffer",),         # the velocity
    "adagrad": ("sum",),                      # the sum of squared gradients
    "rmsprop": ("square_avg",),               # the running mean of squared gradients
    "adam": ("exp_avg", "exp_avg_sq"),        # first and second moments
    "adamw": ("exp_avg", "exp_avg_sq"),       # same as adam; weight decay needs no state
}
# How many tensors the size of the parameters each optimizer keeps in its state.
OPTIMIZER_STATE_TENSORS: dict[str, int] = {name: len(names) for name, names in STATE_NAMES.items()}


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


# ---------------------------------------------------------------------------------------------------------------
# The four parts of training memory, predicted from a model and measured from the tensors training really holds.

@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes of each part of training memory."""
    params: int
    grads: int
    optimizer_state: int
    activations: int

    @property
    def total(self) -> int:
        """params + grads + optimizer_state + activations, in bytes."""
        return self.params + self.grads + self.optimizer_state + self.activations


def training_memory(model: nn.Module, optimizer: str, activation_bytes: int = 0) -> MemoryBreakdown:
    """Predicted training memory of `model` with the named optimizer (a key of OPTIMIZER_STATE_TENSORS), in bytes.

    Each trainable parameter costs its own bytes, the same again for its gradient, and one more copy per state
    tensor the optimizer keeps (torch.optim keeps state in the parameter's dtype). Activations are passed in,
    since they depend on the batch, not on the model alone (see `deep_linear_activation_bytes`).
    """
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return MemoryBreakdown(params=param_bytes, grads=param_bytes,
                           optimizer_state=OPTIMIZER_STATE_TENSORS[optimizer] * param_bytes,
                           activations=activation_bytes)


def deep_linear_activation_bytes(dim: int, num_layers: int, out_features: int, batch_size: int,
                                 dtype: torch.dtype = torch.float32) -> int:
    """Bytes autograd saves for backward in a DeepLinear forward pass followed by a loss on its output.

    Each of the num_layers + 1 matmuls saves its input (batch x dim; the first is the input batch itself) to
    compute its weight's gradient, and the loss saves the output (batch x out_features). The weights are saved
    too, but they are the parameters themselves: no extra memory.
    """
    return batch_size * ((num_layers + 1) * dim + out_features) * dtype.itemsize


def tiny_lm_activation_bytes(vocab_size: int, dim: int, hidden: int, batch_size: int, seq_len: int,
                             dtype: torch.dtype = torch.float32) -> int:
    """Bytes autograd saves for backward in a TinyLM forward pass plus a cross-entropy loss on (batch, seq) tokens.

    Per token: the int64 input id (kept by the embedding) and target id (kept by the loss), the embedding output
    (dim), the GELU input and output (hidden each) and the log-probabilities (vocab). The logits themselves are not
    kept: log_softmax's backward needs only its output. Plus one 0-dim float the loss keeps. All of it grows with
    batch x sequence length.
    """
    tokens = batch_size * seq_len
    per_token = 2 * torch.int64.itemsize + (dim + 2 * hidden + vocab_size) * dtype.itemsize
    return tokens * per_token + torch.float32.itemsize


def saved_tensor_bytes(forward: Callable[[], Tensor], exclude: Iterable[Tensor] = ()) -> int:
    """Run `forward()` and return the bytes of the tensors autograd saves for backward (the activations).

    Counts each storage once (views share it), and skips the storages of `exclude` (pass the model's parameters:
    saving a weight for backward costs no extra memory).
    """
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    saved: dict[int, Tensor] = {}  # storage address -> a tensor using it (kept alive, so no address is reused)

    def pack(t: Tensor) -> Tensor:
        if t.untyped_storage().data_ptr() not in skip:
            saved[t.untyped_storage().data_ptr()] = t
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return sum(t.untyped_storage().nbytes() for t in saved.values())


def optimizer_state_tensor_bytes(optimizer: torch.optim.Optimizer, name: str) -> int:
    """Bytes of the state tensors that `STATE_NAMES[name]` lists, read from `optimizer.state` (an optimizer of that
    kind, after its first step): SGD 0, momentum, AdaGrad and RMSProp 1 x P values, Adam and AdamW 2 x P."""
    return sum(state[key].nbytes for state in optimizer.state.values() for key in STATE_NAMES[name])


def measured_memory(model: nn.Module, optimizer: torch.optim.Optimizer, name: str, activation_bytes: int = 0
                    ) -> MemoryBreakdown:
    """Training memory read off the tensors that exist: the parameters, their .grad, and the state tensors of
    `optimizer`, an optimizer of the kind `name` (a key of STATE_NAMES)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return MemoryBreakdown(params=sum(p.numel() * p.element_size() for p in params),
                           grads=sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None),
                           optimizer_state=optimizer_state_tensor_bytes(optimizer, name),
                           activations=activation_bytes)
