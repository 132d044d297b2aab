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
    table: dict[str, list] = {"w2_grad": [], "h1_grad": []}
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


# ---------------------------------------------------------------- which step of a hand-written backward pass is wrong
# (issue #61): each gradient is compared with what task 1's and task 2's rules give from the student's own upstream
# gradient, so that a mistake is placed at the step that makes it, and with what the rules give from the case's other
# activations, so that a layer given the wrong input is named. Black boxes: the rules come from autograd.

def _close(a: object, b: Tensor) -> bool:
    if type(a) is not Tensor:
        return False
    given: Tensor = a   # exactly a Tensor now (mypy does not read torch, so it cannot narrow `a`)
    return (tuple(given.shape) == tuple(b.shape)
            and bool(torch.allclose(given.detach().double(), b.detach().double(), rtol=1e-4,
                                    atol=1e-6 * (float(b.detach().abs().max()) if b.numel() else 1.0))))


def weight_grad_rule(inp: Tensor, out_grad: Tensor) -> Tensor:
    """Task 1's rule as autograd computes it: the weight gradient of out = inp @ w for d loss / d out = out_grad."""
    return autograd_linear_grads(inp, torch.zeros(inp.shape[-1], out_grad.shape[-1], dtype=inp.dtype), out_grad)[0]


def input_grad_rule(w: Tensor, out_grad: Tensor) -> Tensor:
    """Task 2's rule as autograd computes it: the input gradient of out = inp @ w for d loss / d out = out_grad."""
    return autograd_linear_grads(torch.zeros(out_grad.shape[0], w.shape[0], dtype=w.dtype), w, out_grad)[1]


def explain_weight_grad(got: object, weight: str, right_input: str, activations: dict[str, Tensor], out_grad: Tensor,
                        upstream: str) -> str | None:
    """Why `got`, a hand-written gradient of `weight` (whose layer takes activations[right_input]), is wrong: it follows
    from the student's own `upstream` gradient `out_grad` by task 1's rule (so the mistake is upstream), or it is that
    rule applied to another activation, or transposed."""
    if type(got) is not Tensor:
        return None
    if _close(got, weight_grad_rule(activations[right_input], out_grad)):
        return f"your {weight}.grad follows from your {upstream} by task 1's rule: the mistake is in {upstream}"
    for name, activation in activations.items():
        if name == right_input or activation.shape[0] != out_grad.shape[0]:
            continue
        candidate = weight_grad_rule(activation, out_grad)
        if _close(got, candidate) or _close(got, candidate.T):
            return (f"your {weight}.grad is task 1's rule with {name} as the layer's input: {weight} multiplies "
                    f"{right_input}, so its gradient pairs {right_input} with the layer's output gradient")
    if _close(got, weight_grad_rule(activations[right_input], out_grad).T):
        return f"your {weight}.grad is the right rule, transposed: it has {weight}'s shape"
    return None


def explain_input_grad(got: object, name: str, weight: str, weights: dict[str, Tensor], out_grad: Tensor,
                       upstream: str) -> str | None:
    """As explain_weight_grad, for an activation's gradient: task 2's rule from the student's `upstream` gradient,
    or that rule with another weight."""
    if type(got) is not Tensor:
        return None
    if _close(got, input_grad_rule(weights[weight], out_grad)):
        return f"your {name}.grad follows from your {upstream} by task 2's rule: the mistake is in {upstream}"
    for other, w in weights.items():
        if other != weight and w.shape[-1] == out_grad.shape[-1] and _close(got, input_grad_rule(w, out_grad)):
            return f"your {name}.grad is task 2's rule with {other}, where the layer's weight is {weight}"
    return None


def explain_two_layer_grads(got: dict, x: Tensor, w1: Tensor, w2: Tensor) -> dict[str, str | None]:
    """For each entry of a hand-written two_layer_grads result: what a wrong gradient follows from (explain_weight_grad,
    explain_input_grad), using the student's own h2 and h1 gradients as the upstream ones."""
    h1 = x @ w1
    activations = {"x": x, "h1": h1}
    own_h2: Tensor = got.get("h2")   # anything the student returned: used below only when exactly a Tensor
    own_h1: Tensor = got.get("h1")
    found: dict[str, str | None] = {}
    if type(own_h2) is Tensor and own_h2.shape == (x.shape[0], w2.shape[1]):
        found["w2"] = explain_weight_grad(got.get("w2"), "w2", "h1", activations, own_h2, "h2.grad")
        found["h1"] = explain_input_grad(got.get("h1"), "h1", "w2", {"w1": w1, "w2": w2}, own_h2, "h2.grad")
    if type(own_h1) is Tensor and own_h1.shape == h1.shape:
        found["w1"] = explain_weight_grad(got.get("w1"), "w1", "x", activations, own_h1, "h1.grad")
    return found


def stack_without_biases(x: Tensor, weights: list[Tensor], biases: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """The gradients of the stack whose forward pass leaves out every bias: what a backward pass gives when its
    forward pass forgot them (each bias still collects its layer's output gradient)."""
    return autograd_linear_stack_grads(x, weights, [torch.zeros_like(b) for b in biases])


def mean_loss_scales(batch: int, k: int) -> dict[str, float]:
    """The quantities a gradient of mean(h ** 2) over a (batch x k) h may be off by (utils.diagnosis names them)."""
    return {"B x K, the entries the mean averages over": batch * k, "K (the mean is over all B x K entries)": k,
            "the batch size B": batch, "2, the square's derivative": 2}


def w2_grad_slips(h1: Tensor, h2_grad: Tensor, expected: Tensor):
    """A diagnosis (utils.diagnosis) of a wrong w2_grad(h1, h2_grad): a scale by B, an elementwise product."""
    from utils.diagnosis import tensor_slips
    return tensor_slips(expected, {"the batch size B": h1.shape[0]}, axes=("D", "K"),
                        elementwise_of=(tuple(h1.shape), tuple(h2_grad.shape)))


def h1_grad_slips(w2: Tensor, h2_grad: Tensor, expected: Tensor):
    """A diagnosis (utils.diagnosis) of a wrong h1_grad(w2, h2_grad): a scale by B, an elementwise product, the batch
    summed away."""
    from utils.diagnosis import tensor_slips
    return tensor_slips(expected, {"the batch size B": h2_grad.shape[0]}, axes=("B (one row per token)", "D"),
                        elementwise_of=(tuple(w2.shape), tuple(h2_grad.shape)))


def two_layer_slips(got: object, x: Tensor, w1: Tensor, w2: Tensor, expected: dict[str, Tensor]):
    """A diagnosis for each entry of a wrong two_layer_grads result: name -> explain function."""
    from utils.diagnosis import explain_tensor
    steps = explain_two_layer_grads(got, x, w1, w2) if isinstance(got, dict) else {}
    scales = mean_loss_scales(x.shape[0], w2.shape[1])
    return {name: (lambda value, name=name: steps.get(name) or explain_tensor(value, expected[name], scales))
            for name in expected}


def stack_slips(x: Tensor, weights: list[Tensor], biases: list[Tensor], expected: tuple[list[Tensor], list[Tensor]]):
    """A diagnosis for each gradient of a wrong stack_grads result: (kind, layer) -> explain function, comparing with
    the gradients of the stack without biases (a forward pass that left them out) and the mean's scales."""
    from utils.diagnosis import explain_candidates, explain_tensor
    without = stack_without_biases(x, weights, biases)
    scales = mean_loss_scales(x.shape[0], weights[-1].shape[1])
    found = {}
    for index, kind in enumerate(("weight", "bias")):
        for layer, want in enumerate(expected[index]):
            candidates = {"these are the gradients of the stack without its biases: the forward pass adds b_l to "
                          "every row of h_l, and the backward pass starts from those outputs": without[index][layer]}
            found[kind, layer] = (lambda value, want=want, candidates=candidates:
                                  explain_candidates(value, candidates) or explain_tensor(value, want, scales))
    return found
