"""Checking an optimizer written in exercise 7 against torch.optim's: the tools its test cells use (shipped to
students with the visible tests), and the recipes of the hidden cases' optimizers. The lecture's own optimizers are in
utils/optimizers.py."""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Callable, Iterator

import torch
from torch import nn
from torch.optim import Optimizer

from utils.optimizers import SGD, RMSProp, Run, run_optimizer


@dataclass
class Case:
    """One comparison: hyperparameters for the constructor, optional per-group overrides (the first two parameter
    tensors form group 1, the rest group 2), the dtype, the seed of the problem, and how many steps to run."""
    hyper: dict
    groups: tuple[dict, dict] | None = None
    dtype: torch.dtype = torch.float64
    seed: int = 0
    steps: int = 25
    as_iterator: bool = False  # pass the parameters as a one-shot iterator, as model.parameters() does

    def maker(self, cls: type) -> Callable[[list[nn.Parameter]], Optimizer]:
        """A function that builds `cls` for a list of parameters, the way this case asks."""
        def make(params):
            if self.groups is None:
                return cls(iter(params) if self.as_iterator else params, **self.hyper)
            first, second = self.groups
            return cls([{"params": params[:2], **first}, {"params": params[2:], **second}], **self.hyper)
        return make


# float64 runs are compared with torch's directly: their rounding errors stay far below these tolerances even where
# the trajectory amplifies them. Lower precisions are compared with the float64 run of the same problem instead,
# allowing what torch's own run at that precision is off by (utils.grading.check_as_accurate_as_torch): how far a
# float32 trajectory drifts depends on the case (25 AdaGrad steps with lr=0.5, eps=0.1 drift ~1e-3), not on a constant.
FLOAT64_TOLERANCE = dict(atol=1e-9, rtol=1e-7)


@dataclass
class Reference:
    """torch.optim's run of a case and, for a case below float64, the same problem run in float64 by torch.optim."""
    run: Run
    exact: Run | None


def forbidden_optimizer_targets() -> dict[str, tuple[object, str]]:
    """Everything in torch.optim (and this module) that would do the exercise's work: the optimizer classes and
    the functional update helpers they call, as label -> (module, attribute), for `utils.grading.forbidden`."""
    import importlib

    targets = {}
    for name in ("SGD", "Adagrad", "Adam", "AdamW", "RMSprop"):
        targets[f"torch.optim.{name}"] = (torch.optim, name)
    for module_name in ("sgd", "adagrad", "adam", "adamw", "rmsprop"):
        module = importlib.import_module(f"torch.optim.{module_name}")
        for attribute in dir(module):
            value = getattr(module, attribute)
            is_class = isinstance(value, type) and issubclass(value, Optimizer) and value is not Optimizer
            is_update = callable(value) and not isinstance(value, type) and module_name in attribute.lower()
            if is_class or is_update:
                targets[f"torch.optim.{module_name}.{attribute}"] = (module, attribute)
    functional = importlib.import_module("torch.optim._functional")
    for attribute in ("sgd", "adagrad", "adam", "adamw", "rmsprop"):
        targets[f"torch.optim._functional.{attribute}"] = (functional, attribute)
    import utils.optimizers
    for attribute in ("SGD", "RMSProp"):
        targets[f"utils.optimizers.{attribute}"] = (utils.optimizers, attribute)
    return targets


def ready_made_optimizers() -> tuple[type, ...]:
    """Every optimizer class of torch.optim and of utils.optimizers: what an exercise's optimizer must not inherit from."""
    this = [SGD, RMSProp]
    torchs = [value for value in vars(torch.optim).values()
              if isinstance(value, type) and issubclass(value, Optimizer) and value is not Optimizer]
    return tuple(torchs + this)


READY_MADE = ready_made_optimizers()  # taken at import, before any test stubs torch.optim's classes


@contextlib.contextmanager
def forbidden_in_class(cls: type, targets: dict[str, tuple[object, str]], task: str) -> Iterator[None]:
    """`utils.grading.forbidden` for a whole class: within the block calling a target fails, and a class whose
    methods refer to a target (through a global name, a class attribute, a default argument or a closure, which
    stubbing the target's module would not reach) fails at once."""
    from utils.grading import forbidden, global_names

    originals = {label: getattr(module, attribute) for label, (module, attribute) in targets.items()}
    members = [value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
               for value in vars(cls).values()]
    methods = [inspect.unwrap(member) for member in members if inspect.isfunction(member)]  # unwrap @torch.no_grad()
    held = list(members)
    for method in methods:
        held += list(method.__defaults__ or ()) + list((method.__kwdefaults__ or {}).values())
        held += [_cell_value(cell) for cell in method.__closure__ or ()]
        held += [method.__globals__.get(name) for name in global_names(method)]
    for value in held:
        for label, original in originals.items():
            if value is original:
                raise AssertionError(f"{task}: the class refers to {label}\n"
                                     f"Hint: this task asks you to write the update rule without {label}.")
    with forbidden(methods[0] if methods else _no_method, targets, task):
        yield


def _no_method() -> None:
    """Stands in for a class without methods of its own."""


def _cell_value(cell) -> object:
    """What a closure cell holds (None if it is still empty)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def check_own_optimizer(optimizer: Optimizer, cls: type, task: str) -> None:
    """`optimizer` must be an instance of exactly `cls`, a torch.optim.Optimizer subclass that neither inherits from
    a ready-made optimizer (torch.optim's or this module's) nor holds one inside."""
    from utils.grading import check_type

    check_type(optimizer, cls, task, hint="the constructor must return an instance of your own class.")
    for base in cls.__mro__:
        if base in READY_MADE:
            raise AssertionError(f"{task}: the class inherits from {base.__module__}.{base.__qualname__}\n"
                                 f"Hint: subclass torch.optim.Optimizer itself and write the update rule.")
    if Optimizer not in cls.__mro__:
        raise AssertionError(f"{task}: the class must subclass torch.optim.Optimizer")
    for name, value in vars(optimizer).items():
        if isinstance(value, Optimizer):
            raise AssertionError(f"{task}: the optimizer keeps another optimizer in self.{name}\n"
                                 f"Hint: write the update rule yourself instead of wrapping an existing optimizer.")


def reference_runs(torch_cls: type, cases: list[Case]) -> list[Reference]:
    """torch.optim's runs for each case (compute them before stubbing torch.optim's helpers)."""
    return [Reference(run_optimizer(case.maker(torch_cls), case.steps, case.seed, case.dtype),
                      None if case.dtype == torch.float64 else
                      run_optimizer(case.maker(torch_cls), case.steps, case.seed, case.dtype, torch.float64))
            for case in cases]


# The raw errors a typical mistake in step() raises, each with the rule of "How an optimizer is built" it breaks.
RAW_ERRORS = {
    r"NoneType": "a parameter whose .grad is None (here, the last one: it takes no part in the loss) must be skipped: "
                 "it gets no update and no state (rule 2 of \"How an optimizer is built\"; lecture 7, section 4).",
    r"KeyError": "read each hyperparameter from the parameter's group, and keep the state under the names the task "
                 "gives, created the first time a parameter has a gradient (rules 1 and 3; lecture 7, section 4).",
    r"leaf Variable|requires grad": "update the parameter in place under torch.no_grad(), which step() already has; "
                                    "do not rebind or clone it (rule 4; lecture 7, section 4).",
    r"dtype|Float|Double|expected scalar type": "state tensors take their parameter's dtype and shape, whatever the "
                                                "run's dtype (rule 3; lecture 7, section 4).",
    r"size of tensor|shape|must match": "state tensors take their parameter's shape: one per parameter, not one for "
                                        "the whole group (rule 3; lecture 7, section 4).",
}


def observe_optimizer(cls: type, case: Case, task: str) -> dict:
    """Run `cls` on `case` and return what the comparison looks at, as plain data (a hidden test hands this to the
    grader): the parameters after every step, whether the parameter without a gradient got state, and each used
    parameter's state keys and state tensors (those with at least one dimension). Checks first that the optimizer is
    the exercise's own class (`check_own_optimizer`)."""
    from utils.grading import errors_named

    with errors_named(f"{task}, a run whose last parameter gets no gradient", RAW_ERRORS):
        run = run_optimizer(case.maker(cls), case.steps, case.seed, case.dtype)
    check_own_optimizer(run.optimizer, cls, task)
    states = [run.optimizer.state.get(p, {}) for p in run.params[:-1]]
    return {"trajectory": run.trajectory.detach().clone(),
            "unused_has_state": bool(run.optimizer.state.get(run.params[-1])),
            "state_keys": [sorted(str(name) for name in state) for state in states],
            "state": [{str(name): value.detach().clone() for name, value in state.items()
                       if torch.is_tensor(value) and value.dim() > 0} for state in states]}


def compare_optimizer_run(observed: object, case: Case, reference: Reference, state_names: set[str], task: str) -> None:
    """Check what `observe_optimizer` gave for `case` against torch.optim's run of it, with hints: the parameters
    after every step, that a parameter without a gradient is left alone (no change, no state), the names, shapes,
    dtypes and values of the per-parameter state tensors (besides them only a 'step' entry is allowed), and their
    total bytes."""
    from utils.grading import check_as_accurate_as_torch, check_int, check_tensor, check_type

    def check_close(value, torch_value, exact_value, what, hint):
        if exact_value is None:
            check_tensor(value, torch_value, what, hint, **FLOAT64_TOLERANCE)
        else:
            check_as_accurate_as_torch(value, torch_value, exact_value, what, hint)

    label = f"{task} with {case.hyper}" + (f", groups {case.groups}" if case.groups else "") + f", {case.dtype}"
    check_type(observed, dict, f"{label}: what the run handed in")
    used = reference.run.params[:-1]
    exact = reference.exact
    trajectory = observed.get("trajectory")
    check_tensor(trajectory, reference.run.trajectory, f"{label}: all parameters after every step", atol=float("inf"))
    keys, states = observed.get("state_keys"), observed.get("state")
    if type(states) is list and len(states) == len(used):
        for p_reference, tensors in zip(used, states):
            for name in sorted(state_names & set(tensors) if type(tensors) is dict else ()):
                value = tensors[name]
                if type(value) is torch.Tensor and (value.dtype != p_reference.dtype
                                                    or tuple(value.shape) != tuple(p_reference.shape)):
                    raise AssertionError(
                        f"{label}: state['{name}'] of a {tuple(p_reference.shape)} {p_reference.dtype} parameter is "
                        f"a {tuple(value.shape)} {value.dtype} tensor\nHint: a state tensor takes its parameter's "
                        f"shape and dtype, whatever the run's dtype (rule 3 of \"How an optimizer is built\").")
    for k in range(case.steps):
        check_close(trajectory[k], reference.run.trajectory[k], exact and exact.trajectory[k],
                    f"{label}: all parameters after step {k + 1}",
                    "torch.optim does this differently; compare your update with the formula "
                    "(and read each hyperparameter from the parameter's group).")
    if observed.get("unused_has_state") is not False:
        raise AssertionError(f"{label}: a parameter whose .grad is None has state\n"
                             f"Hint: skip parameters without a gradient; create state only when updating.")
    check_type(keys, list, f"{label}: state keys")
    check_type(states, list, f"{label}: state tensors")
    check_int(len(states), len(used), f"{label}: parameters with state")
    check_int(len(keys), len(used), f"{label}: parameters with state")
    state_bytes = 0
    exact_params = exact.params[:-1] if exact else [None] * len(used)
    for p_reference, p_exact, names, tensors in zip(used, exact_params, keys, states):
        check_type(tensors, dict, f"{label}: state tensors")
        if set(tensors) != state_names or not isinstance(names, list) or set(names) - state_names - {"step"}:
            raise AssertionError(f"{label}: the state of a {tuple(p_reference.shape)} parameter holds {names}\n"
                                 f"Hint: keep exactly {sorted(state_names)} (and, if you need it, 'step').")
        for name in sorted(state_names):
            check_close(tensors[name], reference.run.optimizer.state[p_reference][name],
                        exact and exact.optimizer.state[p_exact][name],
                        f"{label}: state['{name}'] after {case.steps} steps",
                        "create it like the parameter (torch.zeros_like(p), or p.grad.clone()).")
            state_bytes += tensors[name].numel() * tensors[name].element_size()
    used_bytes = sum(p.numel() * p.element_size() for p in used)
    check_int(state_bytes, len(state_names) * used_bytes, f"{label}: bytes of the state tensors",
              hint=f"{len(state_names)} tensor(s) the size of each parameter that got a gradient.")


def check_optimizer_matches(cls: type, cases: list[Case], references: list[Reference], state_names: set[str],
                            task: str) -> None:
    """Run `cls` on every case and check it against torch.optim's run of the same case (`compare_optimizer_run`)."""
    for case, reference in zip(cases, references, strict=True):
        compare_optimizer_run(observe_optimizer(cls, case, task), case, reference, state_names, task)


# torch.optim optimizers by the names exercise 7's state_bytes cases use.
OPTIMIZER_MAKERS: dict[str, Callable[[list[nn.Parameter]], Optimizer]] = {
    "SGD": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "SGD(momentum=0.9)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adagrad": lambda ps: torch.optim.Adagrad(ps),
    "RMSprop(centered, momentum)": lambda ps: torch.optim.RMSprop(ps, centered=True, momentum=0.9),
    "RMSprop": lambda ps: torch.optim.RMSprop(ps),
    "Adam": lambda ps: torch.optim.Adam(ps),
    "Adam(amsgrad)": lambda ps: torch.optim.Adam(ps, amsgrad=True),
    "AdamW": lambda ps: torch.optim.AdamW(ps),
    "Adadelta": lambda ps: torch.optim.Adadelta(ps),
    "Rprop": lambda ps: torch.optim.Rprop(ps),
    "NAdam": lambda ps: torch.optim.NAdam(ps),
}


def optimizer_after_steps(name: str, dtype: torch.dtype, shapes: list, last_trainable: bool, steps: int,
                          seed: int) -> Optimizer:
    """The torch.optim optimizer `name` (OPTIMIZER_MAKERS) over seeded parameters of `shapes` in `dtype` (the last one
    trainable or not), after `steps` steps with seeded gradients: the same optimizer wherever it is built."""
    generator = torch.Generator().manual_seed(seed)
    params = [nn.Parameter(torch.randn(tuple(shape), generator=generator, dtype=dtype)) for shape in shapes]
    params[-1].requires_grad_(last_trainable)
    trainable = [p for p in params if p.requires_grad]
    optimizer = OPTIMIZER_MAKERS[name](trainable)
    for _ in range(steps):
        for p in trainable:
            p.grad = torch.randn(p.shape, generator=generator, dtype=dtype)
        optimizer.step()
    return optimizer
