"""The optimizers written out in utils.optimizers (SGD, RMSProp) follow torch.optim step for step and keep the state
they claim; exercise 7's checks pass the instructor's solutions and reject wrong or borrowed ones."""
import math
import re
from pathlib import Path

import nbformat
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import utils.optimizers as ours
from utils.optimizer_checks import (
    Case,
    check_optimizer_matches,
    forbidden_in_class,
    forbidden_optimizer_targets,
    reference_runs,
)
from utils.optimizers import run_optimizer, seeded_loss, seeded_params, state_summary, trajectory_gap

# (our class, torch's class, our hyperparameters -> torch's, the state tensors ours and torch's keep)
PAIRS = {
    "sgd": (ours.SGD, torch.optim.SGD, set()),
    "rmsprop": (ours.RMSProp, torch.optim.RMSprop, {"square_avg"}),
}
SETTINGS = {
    "sgd": [dict(lr=0.1), dict(lr=0.01)],
    "rmsprop": [dict(lr=0.01), dict(lr=0.05, alpha=0.9, eps=0.1)],
}
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-12}


def both(name, steps=40, dtype=torch.float64, groups=False, **hyper):
    """Run our optimizer and torch's with the same hyperparameters (in two param groups if `groups`)."""
    mine, theirs, _ = PAIRS[name]

    def build(cls):
        if not groups:
            return lambda ps: cls(ps, **hyper)
        first = {k: v * 0.5 if k == "lr" else v for k, v in hyper.items()}
        return lambda ps: cls([{"params": ps[:2], **first}, {"params": ps[2:]}], **hyper)

    return run_optimizer(build(mine), steps, dtype=dtype), run_optimizer(build(theirs), steps, dtype=dtype)


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("groups", [False, True])
def test_trajectories_match_torch(name, dtype, groups):
    for hyper in SETTINGS[name]:
        a, b = both(name, dtype=dtype, groups=groups, **hyper)
        assert trajectory_gap(a, b) < TOLERANCE[dtype], (name, hyper)
        assert a.losses[-1] < a.losses[0], "the problem should be one an optimizer can make progress on"


@pytest.mark.parametrize("name", PAIRS)
def test_state_names_shapes_and_values_match_torch(name):
    a, b = both(name, **SETTINGS[name][-1])
    expected = PAIRS[name][2]
    used = a.params[:-1]
    for summary, p in zip(state_summary(a.optimizer, used), used):
        assert summary == {key: tuple(p.shape) for key in expected}
    for mine, theirs in zip(used, b.params[:-1]):
        for key in expected:
            torch.testing.assert_close(a.optimizer.state[mine][key], b.optimizer.state[theirs][key],
                                       rtol=1e-12, atol=1e-12)
            assert a.optimizer.state[mine][key].dtype == mine.dtype


@pytest.mark.parametrize("name", PAIRS)
def test_a_parameter_without_gradient_is_skipped(name):
    a, _ = both(name, **SETTINGS[name][0])
    unused = a.params[-1]
    assert unused.grad is None and not a.optimizer.state.get(unused)
    assert torch.equal(a.trajectory[0, -unused.numel():], a.trajectory[-1, -unused.numel():])
    assert torch.equal(unused.detach(), seeded_params(0, torch.float64)[-1].detach())


@settings(max_examples=30, deadline=None)
@given(lr=st.floats(1e-3, 0.5), eps=st.sampled_from([1e-10, 1e-4, 0.1]), alpha=st.floats(0.5, 0.999),
       seed=st.integers(0, 1000))
def test_rmsprop_matches_torch_for_any_hyperparameters(lr, eps, alpha, seed):
    hyper = dict(lr=lr, alpha=alpha, eps=eps)
    a = run_optimizer(lambda ps: ours.RMSProp(ps, **hyper), 15, seed, torch.float64)
    b = run_optimizer(lambda ps: torch.optim.RMSprop(ps, **hyper), 15, seed, torch.float64)
    assert trajectory_gap(a, b) < 1e-9  # float64 rounding, amplified a little by extreme settings


def test_defaults_match_torch():
    mine = ours.RMSProp([torch.nn.Parameter(torch.zeros(1))]).defaults
    theirs = torch.optim.RMSprop([torch.nn.Parameter(torch.zeros(1))]).defaults
    assert mine == {k: theirs[k] for k in ("lr", "alpha", "eps")}


def test_utils_holds_no_answer_to_exercise_7():
    for name in ("Momentum", "AdaGrad", "Adam", "AdamW", "adam_update"):
        assert not hasattr(ours, name), name


class AdamWithoutBiasCorrection(torch.optim.Optimizer):
    """A plausible mistake: Adam with m and v used as they are."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                beta1, beta2 = group["betas"]
                state["exp_avg"].mul_(beta1).add_((1 - beta1) * p.grad)
                state["exp_avg_sq"].mul_(beta2).add_((1 - beta2) * p.grad**2)
                p.sub_(group["lr"] * state["exp_avg"] / (state["exp_avg_sq"].sqrt() + group["eps"]))


def test_the_comparison_catches_a_missing_bias_correction_and_coupled_weight_decay():
    wrong = run_optimizer(lambda ps: AdamWithoutBiasCorrection(ps, lr=0.05), 20, dtype=torch.float64)
    right = run_optimizer(lambda ps: torch.optim.Adam(ps, lr=0.05), 20, dtype=torch.float64)
    assert trajectory_gap(wrong, right) > 1e-3
    coupled = run_optimizer(lambda ps: torch.optim.Adam(ps, lr=0.05, weight_decay=0.3), 20, dtype=torch.float64)
    decoupled = run_optimizer(lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.3), 20, dtype=torch.float64)
    assert trajectory_gap(coupled, decoupled) > 1e-3


def test_closure_is_called_and_its_loss_returned():
    params = seeded_params(3)
    optimizer = ours.RMSProp(params, lr=0.1)

    def closure():
        optimizer.zero_grad()
        loss = seeded_loss(params, 3, 0)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert math.isclose(loss.item(), seeded_loss(seeded_params(3), 3, 0).item(), rel_tol=1e-6)
    assert optimizer.state[params[0]]["square_avg"].abs().sum() > 0


# ---- the exercise's checks: they pass the instructor's solutions and reject wrong or borrowed ones ----------------

SOURCE = Path(__file__).resolve().parent.parent / "source" / "07_models_optimizers" / "07_models_optimizers.ipynb"
STATE_NAMES = {"MomentumSGD": {"momentum_buffer"}, "AdaGrad": {"sum"}, "AdamW": {"exp_avg", "exp_avg_sq"}}
TORCH_TWINS = {"MomentumSGD": torch.optim.SGD, "AdaGrad": torch.optim.Adagrad, "AdamW": torch.optim.AdamW}
CASES = {"MomentumSGD": [Case(dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1), steps=12),
                         Case(dict(lr=0.05, momentum=0.9), groups=({"lr": 0.01}, {"momentum": 0.5}), steps=12)],
         "AdaGrad": [Case(dict(lr=0.5, eps=0.1, initial_accumulator_value=0.5), steps=12),
                     Case(dict(lr=0.1), groups=({"lr": 0.02}, {"eps": 1e-3}), steps=12)],
         "AdamW": [Case(dict(lr=0.1, betas=(0.8, 0.9), eps=0.1, weight_decay=0.3), steps=12),
                   Case(dict(lr=0.05), groups=({"weight_decay": 0.5}, {"betas": (0.5, 0.9)}), steps=12)]}


def solution_source(name: str) -> str:
    """The instructor's solution cell for `name`, without the solution markers."""
    nb = nbformat.read(SOURCE, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == name)
    return re.sub(r"^\s*### (BEGIN|END) SOLUTION\s*$\n?", "", cell.source, flags=re.MULTILINE)


def define(source: str, name: str) -> type:
    namespace = {"torch": torch, "math": math}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


def grade(name: str, cls: type) -> None:
    """What the hidden tests do, on fewer cases."""
    references = reference_runs(TORCH_TWINS[name], CASES[name])
    with forbidden_in_class(cls, forbidden_optimizer_targets(), name):
        check_optimizer_matches(cls, CASES[name], references, STATE_NAMES[name], name)


@pytest.mark.parametrize("name", STATE_NAMES)
def test_the_instructors_solutions_pass(name):
    grade(name, define(solution_source(name), name))


MUTATIONS = [  # (class, text in the solution, replacement): plausible mistakes the checks must catch
    ("MomentumSGD", 'd = p.grad + group["weight_decay"] * p', "d = p.grad"),
    ("MomentumSGD", 'd + group["momentum"] * velocity if', "velocity if"),
    ("MomentumSGD", '.mul_(group["momentum"]).add_(d)', '.mul_(group["momentum"]).add_((1 - group["momentum"]) * d)'),
    ("MomentumSGD", 'p.sub_(group["lr"] * direction)', 'p.sub_(self.defaults["lr"] * direction)'),
    ("AdaGrad", '(state["sum"].sqrt() + group["eps"])', '(state["sum"] + group["eps"]).sqrt()'),
    ("AdaGrad", 'torch.full_like(p, group["initial_accumulator_value"])', "torch.zeros_like(p)"),
    ("AdaGrad", 'torch.full_like(p, group["initial_accumulator_value"])',
     'torch.zeros(p.shape) + group["initial_accumulator_value"]'),                      # float32 state for float64 p
    ("AdamW", "m_hat = state[\"exp_avg\"] / (1 - beta1**t)", "m_hat = state[\"exp_avg\"]"),
    ("AdamW", '(v_hat.sqrt() + group["eps"])', '(v_hat + group["eps"]).sqrt()'),
    ("AdamW", 'p.mul_(1 - group["lr"] * group["weight_decay"])', "pass"),
    ("AdamW", "if p.grad is None:\n                    continue\n",
     "if p.grad is None:\n                    p.grad = torch.zeros_like(p)\n"),                  # updates unused params
]


@pytest.mark.parametrize("name, old, new", MUTATIONS, ids=[f"{m[0]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_plausible_mistakes_are_caught(name, old, new):
    source = solution_source(name)
    assert old in source, "the mutation no longer applies to the solution: update MUTATIONS"
    with pytest.raises(AssertionError):
        grade(name, define(source.replace(old, new), name))


BORROWED = {  # ways to let torch.optim do the work
    "subclass": "class MomentumSGD(torch.optim.SGD):\n    '''x'''\n",
    "wrapper": '''
class MomentumSGD(torch.optim.Optimizer):
    \'\'\'x\'\'\'
    def __init__(self, params, lr=0.01, momentum=0.9, weight_decay=0.0, nesterov=False):
        params = list(params)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))
        self.inner = torch.optim.SGD(self.param_groups, lr=lr, momentum=momentum)
    def step(self, closure=None):
        self.inner.step()
''',
    "functional": '''
class MomentumSGD(torch.optim.Optimizer):
    \'\'\'x\'\'\'
    def __init__(self, params, lr=0.01, momentum=0.9, weight_decay=0.0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            buffers = [self.state[p].get("momentum_buffer") for p in params]
            torch.optim._functional.sgd(params, [p.grad for p in params], buffers, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=0, nesterov=group["nesterov"], maximize=False)
            for p, b in zip(params, buffers):
                self.state[p]["momentum_buffer"] = b
''',
    "captured in a default argument": '''
class MomentumSGD(torch.optim.Optimizer):
    \'\'\'x\'\'\'
    def __init__(self, params, lr=0.01, momentum=0.9, weight_decay=0.0, nesterov=False):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov))
    @torch.no_grad()
    def step(self, closure=None, sgd=borrowed_sgd):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            buffers = [self.state[p].get("momentum_buffer") for p in params]
            sgd(params, [p.grad for p in params], buffers, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=0, nesterov=group["nesterov"], maximize=False)
            for p, b in zip(params, buffers):
                self.state[p]["momentum_buffer"] = b
''',
}
BORROWED["a global alias"] = BORROWED["captured in a default argument"].replace(
    "closure=None, sgd=borrowed_sgd)", "closure=None)").replace(
    "            sgd(params", "            borrowed_sgd(params")


@pytest.mark.parametrize("how", BORROWED)
def test_borrowing_torch_optim_is_rejected(how):
    cls = define("import torch.optim._functional\nfrom torch.optim.sgd import sgd as borrowed_sgd\n" + BORROWED[how],
                 "MomentumSGD")
    with pytest.raises(AssertionError, match="inherits from|the solution called|the class refers to"):
        grade("MomentumSGD", cls)


def test_the_borrowing_examples_would_otherwise_pass():
    """So the test above fails for the right reason: without the guards, the functional version matches torch."""
    cls = define("import torch.optim._functional\n" + BORROWED["functional"], "MomentumSGD")
    case = CASES["MomentumSGD"][0]
    check_optimizer_matches(cls, [case], reference_runs(torch.optim.SGD, [case]), {"momentum_buffer"}, "MomentumSGD")


def test_targets_are_restored_after_the_block():
    before = torch.optim.SGD, torch.optim._functional.adamw, ours.RMSProp
    with pytest.raises(AssertionError):
        with forbidden_in_class(ours.RMSProp, forbidden_optimizer_targets(), "x"):
            torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))])
    assert (torch.optim.SGD, torch.optim._functional.adamw, ours.RMSProp) == before
