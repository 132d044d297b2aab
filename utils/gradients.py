"""The gradients lecture's models, and torch's own answers about them: autograd's gradients, FlopCounterMode's counts.

The two-layer linear model:

    x (B x D)  --w1 (D x D)-->  h1 (B x D)  --w2 (D x K)-->  h2 (B x K)  -->  loss = mean(h2 ** 2)

and a stack of linear layers with biases, h_l = h_(l-1) @ W_l + b_l, with the same loss on its last output.

Nothing here is a backward pass written by hand or a FLOP formula: exercise 6 asks for those. These functions ask
autograd and `FlopCounterMode`, the oracles that the lecture and the exercise's tests compare with.
"""
from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from utils.flops import count_flops


def two_layer_loss(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"], w2: Float[Tensor, "d k"]) -> Float[Tensor, ""]:
    """The two-layer model's loss, mean((x @ w1 @ w2) ** 2): a scalar (two matmuls, then elementwise work)."""
    return (x @ w1 @ w2).pow(2).mean()


def linear_stack_loss(x: Float[Tensor, "batch d0"], weights: list[Tensor], biases: list[Tensor]) -> Float[Tensor, ""]:
    """mean(h_L ** 2) for the stack h_l = h_(l-1) @ weights[l-1] + biases[l-1], h_0 = x."""
    h = x
    for w, b in zip(weights, biases):
        h = h @ w + b
    return h.pow(2).mean()


# ---------------------------------------------------------------- autograd's gradients

def autograd_linear_grads(inp: Float[Tensor, "batch d_in"], w: Float[Tensor, "d_in d_out"],
                          out_grad: Float[Tensor, "batch d_out"]) -> tuple[Tensor, Tensor]:
    """(w.grad, inp.grad) for out = inp @ w when d loss / d out = out_grad, from autograd. Inputs are not modified."""
    inp = inp.detach().clone().requires_grad_(True)
    w = w.detach().clone().requires_grad_(True)
    (inp @ w).backward(out_grad)
    return w.grad, inp.grad


def autograd_two_layer_grads(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"],
                             w2: Float[Tensor, "d k"]) -> dict[str, Tensor]:
    """d loss / d h2, w2, h1, w1 of the two-layer model, from autograd (`retain_grad` keeps h1's and h2's)."""
    w1 = w1.detach().clone().requires_grad_(True)
    w2 = w2.detach().clone().requires_grad_(True)
    h1 = x.detach() @ w1
    h2 = h1 @ w2
    h1.retain_grad()  # non-leaf tensors keep no .grad unless asked
    h2.retain_grad()
    h2.pow(2).mean().backward()
    return {"h2": h2.grad, "w2": w2.grad, "h1": h1.grad, "w1": w1.grad}


def autograd_linear_stack_grads(x: Float[Tensor, "batch d0"], weights: list[Tensor],
                                biases: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(weight grads, bias grads) of the stack's loss, from autograd. Inputs are not modified."""
    weights = [w.detach().clone().requires_grad_(True) for w in weights]
    biases = [b.detach().clone().requires_grad_(True) for b in biases]
    linear_stack_loss(x.detach(), weights, biases).backward()
    return [w.grad for w in weights], [b.grad for b in biases]


def autograd_linear_stack_activation_grads(x: Float[Tensor, "batch d0"], weights: list[Tensor],
                                           biases: list[Tensor]) -> list[Tensor]:
    """[h_0.grad, ..., h_L.grad] of the stack's loss (h_0 = x), from autograd (`retain_grad` keeps them)."""
    h = x.detach().clone().requires_grad_(True)
    activations = [h]
    for w, b in zip(weights, biases):
        h = h @ w.detach() + b.detach()
        h.retain_grad()
        activations.append(h)
    h.pow(2).mean().backward()
    return [a.grad for a in activations]


# ---------------------------------------------------------------- what a hand-written backward pass calls

def two_layer_call_table(x: Tensor, w1: Tensor, w2: Tensor, grads: dict[str, Tensor]) -> dict[str, list]:
    """The calls of exercise 6's `w2_grad` and `h1_grad` that the two-layer backward pass makes, each with its right
    result taken from `grads` (autograd's, as `autograd_two_layer_grads` gives them): {"w2_grad": [((h1, h2.grad),
    w2.grad), ((x, h1.grad), w1.grad)], "h1_grad": [((w2, h2.grad), h1.grad)]}. For utils.earlier.answers_from_table:
    while a later task is checked, these calls get right results, so a mistake in tasks 1 or 2 costs their points
    only once. Nothing is computed here but the forward pass h1 = x @ w1."""
    first_output = x @ w1
    return {"w2_grad": [((first_output, grads["h2"]), grads["w2"]), ((x, grads["h1"]), grads["w1"])],
            "h1_grad": [((w2, grads["h2"]), grads["h1"])]}


def stack_call_table(x: Tensor, weights: list[Tensor], biases: list[Tensor], activation_grads: list[Tensor],
                     weight_grads: list[Tensor]) -> dict[str, list]:
    """As `two_layer_call_table`, for the stack: layer l's w2_grad(h_(l-1), h_l.grad) -> W_l.grad and
    h1_grad(W_l, h_l.grad) -> h_(l-1).grad, with the right results from `activation_grads` (h_0.grad ... h_L.grad,
    as `autograd_linear_stack_activation_grads` gives them) and `weight_grads`. Computes only the forward pass."""
    inputs = [x]  # h_0 ... h_L
    for weight, bias in zip(weights, biases):
        inputs.append(inputs[-1] @ weight + bias)
    table = {"w2_grad": [], "h1_grad": []}
    for layer, weight in enumerate(weights):
        table["w2_grad"].append(((inputs[layer], activation_grads[layer + 1]), weight_grads[layer]))
        table["h1_grad"].append(((weight, activation_grads[layer + 1]), activation_grads[layer]))
    return table


# ---------------------------------------------------------------- FlopCounterMode's counts

def count_two_layer_flops(batch: int, d: int, k: int, x_requires_grad: bool = False,
                          device: str = "meta") -> tuple[int, int]:
    """(forward, backward) FLOPs of the two-layer model counted by FlopCounterMode on `device`.

    On the meta device tensors have shapes but no data, so any size is counted instantly.
    """
    x = torch.randn(batch, d, device=device, requires_grad=x_requires_grad)
    w1 = torch.randn(d, d, device=device, requires_grad=True)
    w2 = torch.randn(d, k, device=device, requires_grad=True)
    forward = count_flops(two_layer_loss, x, w1, w2)
    backward = count_flops(two_layer_loss(x, w1, w2).backward)
    return forward, backward


def count_linear_stack_flops(batch: int, dims: list[int], x_requires_grad: bool = False,
                             device: str = "meta") -> tuple[int, int]:
    """(forward, backward) FLOPs of the linear stack with widths dims = [d0, ..., dL], counted by FlopCounterMode."""
    x = torch.randn(batch, dims[0], device=device, requires_grad=x_requires_grad)
    weights = [torch.randn(a, b, device=device, requires_grad=True) for a, b in zip(dims, dims[1:])]
    biases = [torch.randn(b, device=device, requires_grad=True) for b in dims[1:]]
    forward = count_flops(linear_stack_loss, x, weights, biases)
    backward = count_flops(linear_stack_loss(x, weights, biases).backward)
    return forward, backward
