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
    """torch.optim's run of a case and, for a case below float64, the same problem run in float64 by torch.optim;
    and torch.optim's runs of the probes (PROBES), when the task has them."""
    run: Run
    exact: Run | None
    probes: list[dict] | None = None


# ---- probes (issue #61): small runs that each change one thing, so that a wrong update is placed where it goes wrong
@dataclass(frozen=True)
class Probe:
    """A float64 run of two parameters, p from step 1 and q from step 2 (its gradient is None at step 1), with the
    gradients PROBE_GRADS: `hyper` are the constructor's arguments; `what` says what this probe changes from the plain
    one; `in_place`: each step writes the new gradient into the same p.grad tensor, as backward does after
    zero_grad(set_to_none=False)."""
    what: str
    hyper: dict
    in_place: bool = False


PROBE_GRADS = [[0.5, -1.0, 2.0], [1.0, 0.5, -0.25], [-0.3, 0.2, 1.0]]


@dataclass(frozen=True)
class ProbeSet:
    """The probes of one exercise optimizer: its plain settings, one probe per setting it adds (name -> value), and
    what each setting and each state tensor is, in the task's words."""
    plain: dict
    changes: dict
    words: dict


def probes_of(probe_set: ProbeSet) -> list[Probe]:
    """The plain probe, one per change, and the plain one with gradients written in place."""
    return ([Probe("plain", probe_set.plain)]
            + [Probe(name, {**probe_set.plain, name: value}) for name, value in probe_set.changes.items()]
            + [Probe("in place", probe_set.plain, in_place=True)])


def run_probe(cls: type, probe: Probe) -> dict:
    """What `cls` does on `probe`, as plain data: p and q after each step, and each one's state tensors after each
    step (name -> tensor, those with at least one dimension)."""
    p = nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))
    q = nn.Parameter(torch.tensor([0.3, 0.7, -1.1], dtype=torch.float64))
    optimizer = cls([p, q], **probe.hyper)
    params, states = [], []
    for step, values in enumerate(PROBE_GRADS):
        for param, scale in ((p, 1.0), (q, -0.5)):
            if param is q and step == 0:
                continue
            gradient = torch.tensor(values, dtype=torch.float64) * scale
            if probe.in_place and param.grad is not None:
                param.grad.copy_(gradient)
            else:
                param.grad = gradient
        optimizer.step()
        params.append(torch.cat([p.detach().clone(), q.detach().clone()]))
        states.append([{str(name): value.detach().clone() for name, value in optimizer.state.get(param, {}).items()
                        if torch.is_tensor(value) and value.dim() > 0} for param in (p, q)])
    return {"params": torch.stack(params), "states": states}


def _same(a: object, b: torch.Tensor) -> bool:
    if type(a) is not torch.Tensor:
        return False
    given: torch.Tensor = a   # exactly a tensor now (mypy does not read torch, so it cannot narrow `a`)
    return (given.shape == b.shape and given.dtype == b.dtype
            and bool(torch.allclose(given, b, **FLOAT64_TOLERANCE, equal_nan=True)))


def _state_ratio(got: object, want: torch.Tensor) -> str:
    """How a state tensor compares with torch's: 'x0.01' when a constant times it, else 'differs'."""
    if type(got) is not torch.Tensor:
        return f"is a {type(got).__name__}, not a tensor"
    given: torch.Tensor = got   # exactly a tensor now (mypy does not read torch, so it cannot narrow `got`)
    if given.dtype != want.dtype or given.shape != want.shape:
        return (f"is a {tuple(given.shape)} {given.dtype} tensor where torch's is {tuple(want.shape)} {want.dtype}: a "
                "state tensor takes its parameter's shape and dtype")
    from utils.diagnosis import _scale
    c = _scale(given, want)
    return f"is {c:.4g} times torch's" if c is not None else "differs"


def _first_difference(got: dict, want: dict, names: set[str], words: dict) -> tuple[int, list[str]] | None:
    """The first step where the parameters or the named state tensors differ, and which state tensors differ then."""
    params: torch.Tensor = got.get("params") if isinstance(got, dict) else None   # used once exactly a tensor
    states = got.get("states") if isinstance(got, dict) else None
    if type(params) is not torch.Tensor or params.shape != want["params"].shape or type(states) is not list \
            or len(states) != len(want["states"]):
        return 0, []
    for step in range(len(want["states"])):
        state_notes = []
        for which, (got_state, want_state) in enumerate(zip(states[step], want["states"][step])):
            if which == 1 and step == 0:   # q has no gradient yet: torch's Adagrad has its state, the task's has none
                continue
            for name in sorted(names & set(want_state)):
                value = got_state.get(name) if isinstance(got_state, dict) else None
                if not _same(value, want_state[name]):
                    state_notes.append(f"{'pq'[which]}'s state['{name}'] {_state_ratio(value, want_state[name])}"
                                       + (f" ({words[f'state {name}']})" if f"state {name}" in words else ""))
        if state_notes or not _same(params[step], want["params"][step]):
            return step, state_notes
    return None


def explain_probes(observed: object, reference: list[dict], probe_set: ProbeSet, names: set[str]) -> str | None:
    """Where the probes first part from torch's: the plain settings (the basic update, or what carries over between
    steps), one added setting (that setting), or gradients written in place (a state tensor that is p.grad itself)."""
    probes = probes_of(probe_set)
    if type(observed) is not list or len(observed) != len(probes):
        return None
    for probe, got, want in zip(probes, observed, reference):
        found = _first_difference(got, want, names, probe_set.words)
        if found is None:
            continue
        step, notes = found
        state = f" ({'; '.join(notes)})" if notes else ""
        if probe.what == "plain":
            if step == 0 and not notes:
                return (f"with the plain settings {probe_set.plain}, your state after the first step is torch's but the "
                        "update made from it is not: check the update against the formula (what it divides by, where "
                        "eps goes, and whether it uses the state from before or after this step's change)")
            if step == 0:
                return (f"with the plain settings {probe_set.plain}, the first step already differs{state}: how the "
                        "state starts and what each step adds to it")
            return (f"with the plain settings {probe_set.plain}, step 1 is right and step {step + 1} is not{state}: what "
                    "carries over from one step to the next (the state, or the step count t of each parameter; q's "
                    "first step comes at step 2)")
        if probe.in_place:
            return ("when backward writes each new gradient into the same p.grad tensor (zero_grad(set_to_none=False) "
                    "does that), your state changes with it: a state tensor that is p.grad itself, not a copy of it")
        said = probe_set.words.get(probe.what, f"{probe.what} enters the update differently")
        return (f"with only {probe.what}={probe.hyper[probe.what]!r} added to the plain settings {probe_set.plain}, "
                f"your steps part from torch's at step {step + 1}{state}: {said}")
    return None


# The probes of exercise 7's optimizers, by the torch.optim class each is compared with.
PROBES = {
    "MomentumSGD": ProbeSet(
        plain=dict(lr=0.1, momentum=0.9), changes={"weight_decay": 0.1, "nesterov": True},
        words={"weight_decay": "weight decay enters the gradient before anything else, d = g + weight_decay x p "
                               "(step 1 of task 1): the velocity and the step are made from d",
               "nesterov": "Nesterov's direction is d + momentum x v (step 3 of task 1), made from d, the gradient "
                           "with its decay",
               "state momentum_buffer": "the velocity v: d at the first step, then momentum x v + d, undamped (step 2 "
                                        "of task 1)"}),
    "AdaGrad": ProbeSet(
        plain=dict(lr=0.1), changes={"eps": 1.0, "initial_accumulator_value": 3.0},
        words={"eps": "eps goes outside the square root, beside sqrt(s) (step 2 of task 2)",
               "initial_accumulator_value": "the running sum starts at initial_accumulator_value in every element "
                                            "(step 1 of task 2)",
               "state sum": "the running sum of squared gradients, one per element (step 1 of task 2)"}),
    "AdamW": ProbeSet(
        plain=dict(lr=0.1, weight_decay=0.0), changes={"weight_decay": 0.1, "eps": 1.0, "betas": (0.5, 0.9)},
        words={"weight_decay": "AdamW's decay is decoupled: p <- p x (1 - lr x weight_decay) before anything else "
                               "(step 1 of task 3), never through the gradient",
               "eps": "eps goes outside the square root, beside sqrt(v_hat) (step 5 of task 3)",
               "betas": "each moment has its own rate: beta1 for m, beta2 for v (steps 2 and 3 of task 3)",
               "state exp_avg": "m, the first moment, at rate beta1 (step 2 of task 3)",
               "state exp_avg_sq": "v, the second moment of the squared gradient, at rate beta2 (step 3 of task 3)"}),
}
PROBED_BY_TORCH = {"SGD": "MomentumSGD", "Adagrad": "AdaGrad", "AdamW": "AdamW"}


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
    this: list[type] = [SGD, RMSProp]
    torchs: list[type] = [value for value in vars(torch.optim).values()
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
    """torch.optim's runs for each case (compute them before stubbing torch.optim's helpers), and of the probes of the
    exercise optimizer compared with `torch_cls` (PROBES), once."""
    task = PROBED_BY_TORCH.get(torch_cls.__name__)
    probes = [run_probe(torch_cls, probe) for probe in probes_of(PROBES[task])] if task else None
    return [Reference(run_optimizer(case.maker(torch_cls), case.steps, case.seed, case.dtype),
                      None if case.dtype == torch.float64 else
                      run_optimizer(case.maker(torch_cls), case.steps, case.seed, case.dtype, torch.float64), probes)
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
    probes = None
    if task in PROBES:
        with errors_named(f"{task}, a probe run (two parameters, q's first gradient at step 2)", RAW_ERRORS):
            probes = [run_probe(cls, probe) for probe in probes_of(PROBES[task])]
    return {"probes": probes, "trajectory": run.trajectory.detach().clone(),
            "unused_has_state": bool(run.optimizer.state.get(run.params[-1])),
            "state_keys": [sorted(str(name) for name in state) for state in states],
            "state": [{str(name): value.detach().clone() for name, value in state.items()
                       if torch.is_tensor(value) and value.dim() > 0} for state in states]}


def compare_optimizer_run(observed: object, case: Case, reference: Reference, state_names: set[str], task: str) -> None:
    """Check what `observe_optimizer` gave for `case` against torch.optim's run of it, with hints: the parameters
    after every step, that a parameter without a gradient is left alone (no change, no state), the names, shapes,
    dtypes and values of the per-parameter state tensors (besides them only a 'step' entry is allowed), and their
    total bytes."""
    from utils.grading import check_as_accurate_as_torch, check_int, check_tensor, exactly

    def check_close(value, torch_value, exact_value, what, hint, found=None):
        if exact_value is None:
            check_tensor(value, torch_value, what, hint, atol=FLOAT64_TOLERANCE["atol"], rtol=FLOAT64_TOLERANCE["rtol"],
                         explain=lambda _: found)
        else:
            check_as_accurate_as_torch(value, torch_value, exact_value, what, hint, explain=lambda _: found)

    label = f"{task} with {case.hyper}" + (f", groups {case.groups}" if case.groups else "") + f", {case.dtype}"
    run = exactly(observed, dict, f"{label}: what the run handed in")
    found = None
    if reference.probes is not None and task in PROBES:
        found = explain_probes(run.get("probes"), reference.probes, PROBES[task], state_names)
    used = reference.run.params[:-1]
    exact = reference.exact
    trajectory: torch.Tensor = run.get("trajectory")   # check_tensor below: exactly a tensor, or AssertionError
    check_tensor(trajectory, reference.run.trajectory, f"{label}: all parameters after every step", atol=float("inf"),
                 explain=lambda _: found)
    keys, states = run.get("state_keys"), run.get("state")
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
                    "(and read each hyperparameter from the parameter's group).", found)
    if run.get("unused_has_state") is not False:
        raise AssertionError(f"{label}: a parameter whose .grad is None has state\n"
                             f"Hint: skip parameters without a gradient; create state only when updating.")
    keys = exactly(keys, list, f"{label}: state keys")
    states = exactly(states, list, f"{label}: state tensors")
    check_int(len(states), len(used), f"{label}: parameters with state")
    check_int(len(keys), len(used), f"{label}: parameters with state")
    state_bytes = 0
    exact_params = exact.params[:-1] if exact else [None] * len(used)
    for p_reference, p_exact, names, tensors in zip(used, exact_params, keys, states):
        tensors = exactly(tensors, dict, f"{label}: state tensors")
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
    if found is not None:   # this run matches torch's, one of the probes does not
        raise AssertionError(f"{label}: this run matches torch.optim's, but a probe run does not (two float64 "
                             f"parameters, three steps)\nFound: {found}\nHint: compare each step of your update with "
                             "the task's formula.")


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


@contextlib.contextmanager
def explained_by_probes(cls: type, task: str) -> Iterator[None]:
    """Within a visible test of an exercise optimizer: a failing check without a diagnosis of its own gets the probes'
    (explain_probes) on a "Found:" line. The probes run torch.optim's class too, so call this where it is not stubbed."""
    try:
        yield
    except AssertionError as error:
        message = str(error)
        if task not in PROBES:
            raise
        torch_cls = {name: getattr(torch.optim, torch_name) for torch_name, name in PROBED_BY_TORCH.items()}[task]
        names = {"MomentumSGD": {"momentum_buffer"}, "AdaGrad": {"sum"}, "AdamW": {"exp_avg", "exp_avg_sq"}}[task]
        try:
            probes = probes_of(PROBES[task])
            found = explain_probes([run_probe(cls, probe) for probe in probes],
                                   [run_probe(torch_cls, probe) for probe in probes], PROBES[task], names)
        except Exception:  # a class that cannot run the probes: the check's own message stands
            found = None
        if not found:
            raise
        what, _, hint = message.partition("\nHint:")
        what = what.split("\nFound:")[0]   # the probes place the mistake better than a generic diagnosis
        raise AssertionError(f"{what}\nFound: {found}" + (f"\nHint:{hint}" if hint else "")) from None


def state_bytes_slips(optimizer: Optimizer, expected: int):
    """A diagnosis (utils.diagnosis) of a wrong state_bytes(optimizer): the bytes of each state name as a part (one
    left out, or counted twice), the 0-dim tensors and the plain numbers that do not count, the bytes per element."""
    from utils.diagnosis import Factor, Part, slips
    by_name: dict[str, int] = {}
    scalars = 0
    sizes = set()
    for state in optimizer.state.values():
        for name, value in state.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                by_name[str(name)] = by_name.get(str(name), 0) + value.numel() * value.element_size()
                sizes.add(value.element_size())
            elif isinstance(value, torch.Tensor):
                scalars += value.numel() * value.element_size()
    parts = [Part(f"the state tensors named {name!r}", size, "every tensor with a dimension counts, whatever its "
                  "name") for name, size in by_name.items()]
    parts.append(Part("the 0-dim tensors (step counters)", scalars, "a few bytes per parameter tensor, not per element: "
                      "the task leaves them out", counts=False))
    factors = [Factor("the bytes per element (element_size())", size) for size in sizes]
    return slips(expected, parts, factors, 0, "count")
