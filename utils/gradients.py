"""Backward passes written by hand, and what they cost in FLOPs.

The two-layer linear model of the gradients lecture:

    x (B x D)  --w1 (D x D)-->  h1 (B x D)  --w2 (D x K)-->  h2 (B x K)  -->  loss = mean(h2 ** 2)

For a linear layer `out = inp @ w` whose output has the gradient `out_grad` (d loss / d out, same shape as out):

    w.grad   = inp.T @ out_grad       w.grad[j, k]   = sum_i inp[i, j] * out_grad[i, k]
    inp.grad = out_grad @ w.T         inp.grad[i, j] = sum_k w[j, k]   * out_grad[i, k]

Each is one matmul with as many FLOPs as the forward matmul, so backward = 2 x forward. The first layer's
input x is data (no requires_grad), so its gradient is skipped, which saves one matmul of the first layer.

Everything here is checked against autograd and `FlopCounterMode` in `tests/test_gradients.py`.
"""
from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from utils.flops import count_flops, matmul_flops


# ---------------------------------------------------------------- one linear layer

def weight_grad(inp: Float[Tensor, "batch d_in"], out_grad: Float[Tensor, "batch d_out"]) -> Float[Tensor, "d_in d_out"]:
    """d loss / d w for out = inp @ w: sum over the batch of inp[i, j] * out_grad[i, k]."""
    return inp.T @ out_grad


def input_grad(w: Float[Tensor, "d_in d_out"], out_grad: Float[Tensor, "batch d_out"]) -> Float[Tensor, "batch d_in"]:
    """d loss / d inp for out = inp @ w: sum over the outputs of w[j, k] * out_grad[i, k]."""
    return out_grad @ w.T


def autograd_linear_grads(inp: Float[Tensor, "batch d_in"], w: Float[Tensor, "d_in d_out"],
                          out_grad: Float[Tensor, "batch d_out"]) -> tuple[Tensor, Tensor]:
    """(w.grad, inp.grad) for out = inp @ w when d loss / d out = out_grad, from autograd (the oracle)."""
    inp = inp.detach().clone().requires_grad_(True)
    w = w.detach().clone().requires_grad_(True)
    (inp @ w).backward(out_grad)
    return w.grad, inp.grad


# ---------------------------------------------------------------- the two-layer model

def two_layer_forward(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"],
                      w2: Float[Tensor, "d k"]) -> tuple[Float[Tensor, "batch d"], Float[Tensor, "batch k"]]:
    """The activations (h1, h2): h1 = x @ w1, h2 = h1 @ w2. Two matmuls: 2BD^2 + 2BDK FLOPs."""
    h1 = x @ w1
    h2 = h1 @ w2
    return h1, h2


def mean_square_loss(h2: Float[Tensor, "batch k"]) -> Float[Tensor, ""]:
    """The lecture's loss: the mean of h2's squared entries (a scalar)."""
    return h2.pow(2).mean()


def two_layer_loss(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"], w2: Float[Tensor, "d k"]) -> Float[Tensor, ""]:
    """Forward pass and loss in one call: mean(h2 ** 2)."""
    return mean_square_loss(two_layer_forward(x, w1, w2)[1])


def mean_square_loss_grad(h2: Float[Tensor, "batch k"]) -> Float[Tensor, "batch k"]:
    """d loss / d h2 for loss = mean(h2 ** 2): 2 * h2 / (number of entries)."""
    return 2 * h2 / h2.numel()


def two_layer_backward(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"], w2: Float[Tensor, "d k"],
                       h1: Float[Tensor, "batch d"], h2_grad: Float[Tensor, "batch k"],
                       with_x_grad: bool = False) -> dict[str, Tensor]:
    """The gradients of the loss w.r.t. w2, h1, w1 (and x if `with_x_grad`), given h2_grad = d loss / d h2.

    Needs the forward's input x and activation h1: this is why a training step keeps activations in memory.
    """
    grads = {"w2": weight_grad(h1, h2_grad),   # 2BDK FLOPs
             "h1": input_grad(w2, h2_grad)}    # 2BDK FLOPs
    grads["w1"] = weight_grad(x, grads["h1"])  # 2BD^2 FLOPs
    if with_x_grad:
        grads["x"] = input_grad(w1, grads["h1"])  # 2BD^2 FLOPs, skipped when x is data
    return grads


def two_layer_grads(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"],
                    w2: Float[Tensor, "d k"]) -> dict[str, Tensor]:
    """Forward, loss = mean(h2 ** 2), and the hand-written backward: gradients of h2, w2, h1 and w1."""
    h1, h2 = two_layer_forward(x, w1, w2)
    h2_grad = mean_square_loss_grad(h2)
    return {"h2": h2_grad, **two_layer_backward(x, w1, w2, h1, h2_grad)}


def autograd_two_layer_grads(x: Float[Tensor, "batch d"], w1: Float[Tensor, "d d"],
                             w2: Float[Tensor, "d k"]) -> dict[str, Tensor]:
    """The same gradients as `two_layer_grads`, from autograd (the oracle). Inputs are not modified."""
    w1 = w1.detach().clone().requires_grad_(True)
    w2 = w2.detach().clone().requires_grad_(True)
    h1, h2 = two_layer_forward(x.detach(), w1, w2)
    h1.retain_grad()  # non-leaf tensors keep no .grad unless asked
    h2.retain_grad()
    mean_square_loss(h2).backward()
    return {"h2": h2.grad, "w2": w2.grad, "h1": h1.grad, "w1": w1.grad}


def two_layer_flops(batch: int, d: int, k: int, x_requires_grad: bool = False) -> tuple[int, int]:
    """(forward, backward) matmul FLOPs of the two-layer model, as FlopCounterMode counts them.

    forward  = 2BD^2 + 2BDK = 2 x tokens x params (tokens = B, params = D^2 + DK)
    backward = 2BDK (w2.grad) + 2BDK (h1.grad) + 2BD^2 (w1.grad) [+ 2BD^2 (x.grad) if x requires grad]
    """
    forward = matmul_flops(batch, d, d) + matmul_flops(batch, d, k)
    backward = 2 * matmul_flops(batch, d, k) + matmul_flops(batch, d, d)
    if x_requires_grad:
        backward += matmul_flops(batch, d, d)
    return forward, backward


def count_two_layer_flops(batch: int, d: int, k: int, x_requires_grad: bool = False,
                          device: str = "meta") -> tuple[int, int]:
    """(forward, backward) FLOPs of the two-layer model counted by FlopCounterMode on `device`.

    On the meta device tensors have shapes but no data, so any size is counted instantly.
    """
    x = torch.randn(batch, d, device=device, requires_grad=x_requires_grad)
    w1 = torch.randn(d, d, device=device, requires_grad=True)
    w2 = torch.randn(d, k, device=device, requires_grad=True)
    forward = count_flops(two_layer_loss, x, w1, w2)
    loss = two_layer_loss(x, w1, w2)
    backward = count_flops(loss.backward)
    return forward, backward


# ---------------------------------------------------------------- a stack of linear layers with biases

def linear_stack_forward(x: Float[Tensor, "batch d0"], weights: list[Tensor],
                         biases: list[Tensor]) -> list[Tensor]:
    """Activations [x, h1, ..., hL] of h_l = h_(l-1) @ weights[l-1] + biases[l-1]."""
    activations = [x]
    for w, b in zip(weights, biases):
        activations.append(activations[-1] @ w + b)
    return activations


def linear_stack_loss(x: Float[Tensor, "batch d0"], weights: list[Tensor], biases: list[Tensor]) -> Float[Tensor, ""]:
    """mean(hL ** 2) of the stack's last activation."""
    return mean_square_loss(linear_stack_forward(x, weights, biases)[-1])


def linear_stack_grads(x: Float[Tensor, "batch d0"], weights: list[Tensor],
                       biases: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(weight grads, bias grads) of loss = mean(hL ** 2), by hand, walking the layers backwards.

    A bias is added to every row of the batch, so its gradient is out_grad summed over the batch.
    """
    activations = linear_stack_forward(x, weights, biases)
    out_grad = mean_square_loss_grad(activations[-1])
    weight_grads, bias_grads = [], []
    for layer in reversed(range(len(weights))):
        weight_grads.append(weight_grad(activations[layer], out_grad))
        bias_grads.append(out_grad.sum(dim=0))
        if layer > 0:  # the gradient w.r.t. x itself is never needed
            out_grad = input_grad(weights[layer], out_grad)
    return weight_grads[::-1], bias_grads[::-1]


def autograd_linear_stack_grads(x: Float[Tensor, "batch d0"], weights: list[Tensor],
                                biases: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """The same gradients as `linear_stack_grads`, from autograd. Inputs are not modified."""
    weights = [w.detach().clone().requires_grad_(True) for w in weights]
    biases = [b.detach().clone().requires_grad_(True) for b in biases]
    linear_stack_loss(x.detach(), weights, biases).backward()
    return [w.grad for w in weights], [b.grad for b in biases]


def linear_stack_flops(batch: int, dims: list[int], x_requires_grad: bool = False) -> tuple[int, int]:
    """(forward, backward) matmul FLOPs of a linear stack with widths dims = [d0, d1, ..., dL].

    Biases add no matmul FLOPs. Backward: every layer's weight gradient, and the input gradient of every layer
    but the first (the first's too when x requires grad).
    """
    per_layer = [matmul_flops(batch, d_in, d_out) for d_in, d_out in zip(dims, dims[1:])]
    forward = sum(per_layer)
    weight_grads = forward                   # one (d_in x batch) @ (batch x d_out) matmul per layer
    input_grads = forward - per_layer[0]     # one (batch x d_out) @ (d_out x d_in) matmul per layer but the first
    if x_requires_grad:
        input_grads += per_layer[0]
    return forward, weight_grads + input_grads


def count_linear_stack_flops(batch: int, dims: list[int], x_requires_grad: bool = False,
                             device: str = "meta") -> tuple[int, int]:
    """(forward, backward) FLOPs of the linear stack (with biases) counted by FlopCounterMode on `device`."""
    x = torch.randn(batch, dims[0], device=device, requires_grad=x_requires_grad)
    weights = [torch.randn(a, b, device=device, requires_grad=True) for a, b in zip(dims, dims[1:])]
    biases = [torch.randn(b, device=device, requires_grad=True) for b in dims[1:]]
    forward = count_flops(linear_stack_loss, x, weights, biases)
    loss = linear_stack_loss(x, weights, biases)
    backward = count_flops(loss.backward)
    return forward, backward

