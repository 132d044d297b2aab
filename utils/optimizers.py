"""Two optimizers written out as `torch.optim.Optimizer` subclasses, and a seeded problem to compare optimizers on.

`SGD` keeps no state; `RMSProp` keeps one running average per parameter. Each follows the same update rule, in the
same order, as the torch.optim class named in its docstring (with that class's other options left at their
defaults), so their trajectories agree to rounding error. What each keeps in `self.state[p]`, per parameter p:

    SGD        nothing
    RMSProp    step, square_avg                     (1 tensor the size of p)

`step` is a plain int here (torch keeps a 0-dim tensor); it costs a few bytes per parameter tensor, not per element.
State is created the first time a parameter has a gradient; a parameter whose `.grad` is None is skipped.
Momentum, AdaGrad and AdamW are exercise 7's to write; the lecture runs torch.optim's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import torch
from jaxtyping import Float
from torch import Tensor, nn
from torch.optim import Optimizer

Params = Iterable[nn.Parameter] | Iterable[dict]


def params_with_grads(optimizer: Optimizer) -> Iterator[tuple[dict, nn.Parameter, dict]]:
    """(group, parameter, its state) for every parameter that has a gradient: the loop every step() runs."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                yield group, p, optimizer.state[p]


class SGD(Optimizer):
    """Plain gradient descent, like torch.optim.SGD: p <- p - lr * g."""

    def __init__(self, params: Params, lr: float = 1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group, p, _state in params_with_grads(self):
            p.add_(p.grad, alpha=-group["lr"])
        return loss


class RMSProp(Optimizer):
    """RMSProp, like torch.optim.RMSprop: a <- alpha * a + (1 - alpha) * g^2; p <- p - lr * g / (sqrt(a) + eps).

    A running average of the squared gradients forgets old ones, so the step size follows the recent gradient scale.
    """

    def __init__(self, params: Params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps))

    @torch.no_grad()
    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        loss = _evaluate(closure)
        for group, p, state in params_with_grads(self):
            if not state:
                state["step"] = 0
                state["square_avg"] = torch.zeros_like(p)
            state["step"] += 1
            alpha = group["alpha"]
            state["square_avg"].mul_(alpha).add_((1 - alpha) * p.grad * p.grad)
            p.sub_(group["lr"] * p.grad / (state["square_avg"].sqrt() + group["eps"]))
        return loss


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
    """The parameters an optimizer trained, the optimizer (with its state), and the losses and all parameter values
    after every step."""
    params: list[nn.Parameter]
    optimizer: Optimizer
    losses: list[float]
    trajectory: Float[Tensor, "steps numel"]


def seeded_params(seed: int, dtype: torch.dtype = torch.float32, shapes=PROBLEM_SHAPES) -> list[nn.Parameter]:
    """Parameters of the given shapes drawn from N(0, 1) with a seeded generator. The last one is never used by
    `seeded_loss`, so its `.grad` stays None (an optimizer must skip it)."""
    generator = torch.Generator().manual_seed(seed)
    return [nn.Parameter(torch.randn(shape, generator=generator, dtype=dtype)) for shape in shapes]


def seeded_loss(params: list[nn.Parameter], seed: int, step: int, draw_dtype: torch.dtype | None = None
                ) -> Float[Tensor, ""]:
    """A quadratic bowl around seeded targets, plus a coupling term. The targets jitter from step to step (like a new
    minibatch). Every parameter but the last enters, each with its own gradient scale. The targets are drawn in
    `draw_dtype` (default: the parameters' dtype), so a float64 run can solve exactly the problem a float32 run has."""
    centers = torch.Generator().manual_seed(1_000_003 * (seed + 1))
    jitter = torch.Generator().manual_seed(1_000_003 * (seed + 1) + step + 1)
    used = params[:-1]
    loss = 0.0
    for p, scale in zip(used, GRADIENT_SCALES):
        dtype = draw_dtype or p.dtype
        target = torch.randn(p.shape, generator=centers, dtype=dtype)
        target = (target + 0.3 * torch.randn(p.shape, generator=jitter, dtype=dtype)).to(p.dtype)
        loss = loss + scale * ((p - target) ** 2).mean()
    coupling = used[0].sum() * used[1].sum()
    return loss + 0.1 * torch.tanh(coupling)


def run_optimizer(make_optimizer: Callable[[list[nn.Parameter]], Optimizer], steps: int = 30, seed: int = 0,
                  dtype: torch.dtype = torch.float32, compute_dtype: torch.dtype | None = None) -> Run:
    """Train `seeded_params(seed)` on `seeded_loss` for `steps` steps with the optimizer `make_optimizer(params)` builds
    (it may put the parameters into several param groups). Records every parameter, flattened, after each step.
    The problem is drawn in `dtype`; `compute_dtype` (default: `dtype`) runs it at another precision: float64 gives
    the exact trajectory that a float32 run approximates."""
    params = seeded_params(seed, dtype)
    if compute_dtype is not None and compute_dtype != dtype:
        params = [nn.Parameter(p.detach().to(compute_dtype)) for p in params]
    optimizer = make_optimizer(params)
    losses, trajectory = [], []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = seeded_loss(params, seed, step, draw_dtype=dtype)
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

