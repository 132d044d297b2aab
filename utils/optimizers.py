"""Six optimizers written out as `torch.optim.Optimizer` subclasses, and a seeded problem to compare them on.

Each class follows the same update rule, in the same order, as the torch.optim class named in its docstring
(with that class's other options left at their defaults), so their trajectories agree to rounding error.
What each keeps in `self.state[p]`, per parameter p:

    SGD        nothing
    Momentum   momentum_buffer                      (1 tensor the size of p)
    AdaGrad    step, sum                            (1)
    RMSProp    step, square_avg                     (1)
    Adam       step, exp_avg, exp_avg_sq            (2)
    AdamW      step, exp_avg, exp_avg_sq            (2)

`step` is a plain int here (torch keeps a 0-dim tensor); it costs a few bytes per parameter tensor, not per element.
State is created the first time a parameter has a gradient; a parameter whose `.grad` is None is skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from jaxtyping import Float
from torch import Tensor, nn
from torch.optim import Optimizer

Params = Iterable[nn.Parameter] | Iterable[dict]


class SGD(Optimizer):
    """Plain gradient descent, like torch.optim.SGD: p <- p - lr * g."""

    def __init__(self, params: Params, lr: float = 1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.add_(p.grad, alpha=-group["lr"])
        return loss


class Momentum(Optimizer):
    """SGD with momentum, like torch.optim.SGD(momentum=...): v <- momentum * v + g (v = g at the first step); p <- p - lr * v."""

    def __init__(self, params: Params, lr: float = 1e-3, momentum: float = 0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = p.grad.clone()
                else:
                    state["momentum_buffer"].mul_(group["momentum"]).add_(p.grad)
                p.add_(state["momentum_buffer"], alpha=-group["lr"])
        return loss


class AdaGrad(Optimizer):
    """AdaGrad, like torch.optim.Adagrad: s <- s + g^2; p <- p - lr * g / (sqrt(s) + eps)."""

    def __init__(self, params: Params, lr: float = 1e-2, eps: float = 1e-10):
        super().__init__(params, dict(lr=lr, eps=eps))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["sum"] = torch.zeros_like(p)
                state["step"] += 1
                state["sum"].add_(p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["sum"].sqrt() + group["eps"]))
        return loss


class RMSProp(Optimizer):
    """RMSProp, like torch.optim.RMSprop: a <- alpha * a + (1 - alpha) * g^2; p <- p - lr * g / (sqrt(a) + eps).

    AdaGrad's sum only grows, so its steps shrink forever; a running average forgets old gradients.
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = torch.zeros_like(p)
                state["step"] += 1
                alpha = group["alpha"]
                state["square_avg"].mul_(alpha).add_((1 - alpha) * p.grad * p.grad)
                p.sub_(group["lr"] * p.grad / (state["square_avg"].sqrt() + group["eps"]))
        return loss


class Adam(Optimizer):
    """Adam, like torch.optim.Adam: momentum (m) and RMSProp (v) together, both bias-corrected.

    m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  m_hat = m / (1 - b1^t);  v_hat = v / (1 - b2^t)
    p <- p - lr * m_hat / (sqrt(v_hat) + eps).  `weight_decay` is the old L2 penalty: g <- g + weight_decay * p.
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad + group["weight_decay"] * p if group["weight_decay"] else p.grad
                _adam_update(p, grad, self.state[p], group)
        return loss


class AdamW(Optimizer):
    """AdamW, like torch.optim.AdamW: Adam with decoupled weight decay, p <- p - lr * weight_decay * p, then the Adam step.

    The decay is applied to the weights directly instead of being added to the gradient, so Adam's
    normalization by sqrt(v_hat) does not rescale it (Loshchilov and Hutter, 2019).
    """

    def __init__(self, params: Params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.mul_(1 - group["lr"] * group["weight_decay"])
                _adam_update(p, p.grad, self.state[p], group)
        return loss


def _adam_update(p: Tensor, grad: Tensor, state: dict, group: dict) -> None:
    """One bias-corrected Adam step of `p` in place, creating its state (step, exp_avg, exp_avg_sq) if new."""
    if not state:
        state["step"] = 0
        state["exp_avg"] = torch.zeros_like(p)
        state["exp_avg_sq"] = torch.zeros_like(p)
    state["step"] += 1
    beta1, beta2 = group["betas"]
    state["exp_avg"].mul_(beta1).add_((1 - beta1) * grad)
    state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * grad * grad)
    m_hat = state["exp_avg"] / (1 - beta1 ** state["step"])
    v_hat = state["exp_avg_sq"] / (1 - beta2 ** state["step"])
    p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))


def _evaluate(closure: Callable[[], Tensor] | None) -> Tensor | None:
    """The loss from `closure` (which may run backward), computed with gradients on; None without a closure."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


# ---------------------------------------------------------------------------------------------------------------
# A seeded problem, to run two optimizers side by side and compare their parameter trajectories.

PROBLEM_SHAPES: tuple[tuple[int, ...], ...] = ((4, 3), (5,), (2, 3, 2), (3, 3))
GRADIENT_SCALES: tuple[float, ...] = (0.01, 1.0, 30.0)  # very different gradient sizes for the used parameters


@dataclass
class Run:
    """The parameters an optimizer trained, the optimizer (with its state) and the losses and values after every step."""
    params: list[nn.Parameter]
    optimizer: Optimizer
    losses: list[float]
    trajectory: Float[Tensor, "steps numel"]


def seeded_params(seed: int, dtype: torch.dtype = torch.float32, shapes=PROBLEM_SHAPES) -> list[nn.Parameter]:
    """Parameters of the given shapes drawn from N(0, 1) with a seeded generator. The last one is never used by
    `seeded_loss`, so its `.grad` stays None (an optimizer must skip it)."""
    generator = torch.Generator().manual_seed(seed)
    return [nn.Parameter(torch.randn(shape, generator=generator, dtype=dtype)) for shape in shapes]


def seeded_loss(params: list[nn.Parameter], seed: int, step: int) -> Float[Tensor, ""]:
    """A quadratic bowl around seeded targets, plus a coupling term. The targets jitter from step to step (like a new
    minibatch). Every parameter but the last enters, each with its own gradient scale."""
    centers = torch.Generator().manual_seed(1_000_003 * (seed + 1))
    jitter = torch.Generator().manual_seed(1_000_003 * (seed + 1) + step + 1)
    used = params[:-1]
    loss = 0.0
    for p, scale in zip(used, GRADIENT_SCALES):
        target = torch.randn(p.shape, generator=centers, dtype=p.dtype)
        target = target + 0.3 * torch.randn(p.shape, generator=jitter, dtype=p.dtype)
        loss = loss + scale * ((p - target) ** 2).mean()
    coupling = used[0].sum() * used[1].sum()
    return loss + 0.1 * torch.tanh(coupling)


def run_optimizer(make_optimizer: Callable[[list[nn.Parameter]], Optimizer], steps: int = 30, seed: int = 0,
                  dtype: torch.dtype = torch.float32) -> Run:
    """Train `seeded_params(seed)` on `seeded_loss` for `steps` steps with the optimizer `make_optimizer(params)` builds
    (it may put the parameters into several param groups). Records every parameter, flattened, after each step."""
    params = seeded_params(seed, dtype)
    optimizer = make_optimizer(params)
    losses, trajectory = [], []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = seeded_loss(params, seed, step)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        trajectory.append(torch.cat([p.detach().flatten() for p in params]))
    return Run(params, optimizer, losses, torch.stack(trajectory))


def trajectory_gap(a: Run, b: Run) -> float:
    """Largest absolute difference between two runs' parameters over all steps."""
    return (a.trajectory - b.trajectory).abs().max().item()


def state_summary(optimizer: Optimizer, params: list[nn.Parameter]) -> list[dict[str, tuple[int, ...]]]:
    """For each parameter, its state entries that are tensors with at least one dimension, as name -> shape."""
    summary = []
    for p in params:
        state = optimizer.state.get(p, {})
        summary.append({name: tuple(value.shape) for name, value in state.items()
                        if torch.is_tensor(value) and value.dim() > 0})
    return summary
