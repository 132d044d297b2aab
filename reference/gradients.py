"""Exercise 6 (gradients by hand): the trusted half of its hidden tests (reference/hidden.py).

The answers need no instructor code: autograd's gradients and FlopCounterMode's counts (utils.gradients) are the
oracles, computed here in the grader's trusted process. The notebook only calls the student's functions on the cases
and hands in what they returned. Where a later task may call an earlier one (two_layer_grads and stack_grads call
w2_grad and h1_grad; stack_flops may call two_layer_flops), the cases carry the right results of just those calls
(utils.gradients.two_layer_call_table, stack_call_table), so a mistake in an earlier task costs its points once.
"""
from __future__ import annotations

import random

import torch

from reference.hidden import HiddenTest
from reference.hidden import results_list as _results
from utils.diagnosis import Factor, Part, slips
from utils.gradients import (
    autograd_linear_grads,
    autograd_linear_stack_activation_grads,
    autograd_linear_stack_grads,
    autograd_two_layer_grads,
    count_linear_stack_flops,
    count_two_layer_flops,
    h1_grad_slips,
    stack_call_table,
    stack_slips,
    two_layer_call_table,
    two_layer_slips,
    w2_grad_slips,
)
from utils.grading import check_int, check_tensor, check_type


def _check_grad(got: object, expected: torch.Tensor, what: str, hint: str | None = None,
                mistakes: list | None = None, explain=None) -> None:
    scale = float(expected.abs().max())
    check_tensor(got, expected, what, hint=hint, atol=1e-5 * scale, rtol=1e-4, mistakes=mistakes, explain=explain)


W2_GRAD_HINT = ("w2.grad has w2's shape (D, K) and sums over the batch index i, h1's rows: a matmul sums over its "
                "inner index (lecture 6, section 3).")
H1_GRAD_HINT = ("h1.grad has h1's shape (B, D) and sums over k, the last index of both w2 and h2_grad: a matmul sums "
                "over its inner index (lecture 6, section 3).")


def _dtype(n: int) -> torch.dtype:
    return torch.float64 if n % 5 == 4 else torch.float32


SHAPES = [(1, 1, 1), (1, 6, 2), (7, 1, 3), (4, 5, 1), (32, 16, 8)]


# ---- tasks 1 and 2: w2_grad, h1_grad -----------------------------------------------------------------------------
def _w2_grad_cases() -> list:
    rng = random.Random(61)
    gen = torch.Generator().manual_seed(61)
    shapes = SHAPES + [tuple(rng.randint(1, 40) for _ in range(3)) for _ in range(40)]
    cases = []
    for n, (b, d, k) in enumerate(shapes):
        h1 = torch.randn(b, d, generator=gen, dtype=_dtype(n))
        h2_grad = torch.randn(b, k, generator=gen, dtype=_dtype(n))
        w2 = torch.randn(d, k, generator=gen, dtype=_dtype(n))  # drawn as before: autograd's w2.grad does not use it
        cases.append((h1, h2_grad, w2))
    return cases


def _w2_grad_check(cases, expected, results) -> None:
    for (h1, h2_grad, _), want, got in zip(cases, expected, _results(results, len(cases), "w2_grad")):
        _check_grad(got, want, f"w2_grad for h1 {tuple(h1.shape)} {h1.dtype}", hint=W2_GRAD_HINT,
                    mistakes=[(want.T, "this is w2.grad transposed: " + W2_GRAD_HINT)],
                    explain=w2_grad_slips(h1, h2_grad, want))


def _h1_grad_cases() -> list:
    rng = random.Random(62)
    gen = torch.Generator().manual_seed(62)
    shapes = SHAPES + [tuple(rng.randint(1, 40) for _ in range(3)) for _ in range(40)]
    cases = []
    for n, (b, d, k) in enumerate(shapes):
        h1 = torch.randn(b, d, generator=gen, dtype=_dtype(n))  # drawn as before: autograd's h1.grad does not use it
        w2 = torch.randn(d, k, generator=gen, dtype=_dtype(n))
        h2_grad = torch.randn(b, k, generator=gen, dtype=_dtype(n))
        cases.append((w2, h2_grad, h1))
    return cases


def _h1_grad_check(cases, expected, results) -> None:
    for (w2, h2_grad, _), want, got in zip(cases, expected, _results(results, len(cases), "h1_grad")):
        _check_grad(got, want, f"h1_grad for w2 {tuple(w2.shape)}, h2_grad {tuple(h2_grad.shape)} {w2.dtype}",
                    hint=H1_GRAD_HINT, mistakes=[(want.T, "this is h1.grad transposed: " + H1_GRAD_HINT)],
                    explain=h1_grad_slips(w2, h2_grad, want))


# ---- task 3: two_layer_grads -------------------------------------------------------------------------------------
def _two_layer_grads_cases() -> dict:
    rng = random.Random(63)
    gen = torch.Generator().manual_seed(63)
    shapes = [(1, 1, 1), (1, 6, 2), (7, 1, 3), (4, 5, 1), (3, 2, 9), (64, 32, 16)]
    shapes += [tuple(rng.randint(1, 40) for _ in range(3)) for _ in range(40)]
    cases, table = [], {"w2_grad": [], "h1_grad": []}
    for n, (b, d, k) in enumerate(shapes):
        x = torch.randn(b, d, generator=gen, dtype=_dtype(n))
        w1 = torch.randn(d, d, generator=gen, dtype=_dtype(n)) / d**0.5
        w2 = torch.randn(d, k, generator=gen, dtype=_dtype(n)) / d**0.5
        cases.append((x, w1, w2))
        for name, calls in two_layer_call_table(x, w1, w2, autograd_two_layer_grads(x, w1, w2)).items():
            table[name] += calls
    return {"cases": cases, **table}


def check_grads(got: object, expected: dict, what: str, hint: str | None = None, mistakes: dict | None = None,
                case: tuple | None = None) -> None:
    """The visible test's check_grads (task 3), here for the hidden cases; `case` (x, w1, w2) places a wrong
    gradient at the step that makes it (utils.gradients.two_layer_slips)."""
    check_type(got, dict, what, hint="return a dict with the keys 'h2', 'w2', 'h1', 'w1'.")
    check_int(len(got), 4, f"number of entries in {what}", hint="exactly the keys 'h2', 'w2', 'h1', 'w1'.")
    found = two_layer_slips(got, *case, expected) if case else {}
    for name in ("h2", "w2", "h1", "w1"):
        if name not in got:
            raise AssertionError(f"{what}: the key {name!r} is missing\nHint: use the keys 'h2', 'w2', 'h1', 'w1'.")
        _check_grad(got[name], expected[name], f"{what}[{name!r}]", hint=hint, mistakes=(mistakes or {}).get(name),
                    explain=found.get(name))


def mean_mistakes(h2_grad: torch.Tensor, batch: int, k: int) -> dict:
    """h2.grad when the loss's mean is differentiated wrongly: its division left out, or only by B, or only by K."""
    return {"h2": [(h2_grad * batch * k, f"h2.grad is B x K = {batch * k} times too big: the loss is a mean over "
                                         f"all B x K entries of h2, and its division carries into the derivative "
                                         f"(lecture 6, section 3)."),
                   (h2_grad * k, f"h2.grad is K = {k} times too big: the mean is over all B x K entries, not over "
                                 f"the B rows only."),
                   (h2_grad * batch, f"h2.grad is B = {batch} times too big: the mean is over all B x K entries, "
                                     f"not over the K columns only."),
                   (h2_grad / 2, "h2.grad is half the right one: the derivative of h^2 is 2h.")]}


def _two_layer_grads_check(cases, expected, results) -> None:
    for (x, w1, w2), want, got in zip(cases["cases"], expected,
                                      _results(results, len(cases["cases"]), "two_layer_grads")):
        check_grads(got, want, f"two_layer_grads for x {tuple(x.shape)}, w2 {tuple(w2.shape)} {x.dtype}",
                    hint="every gradient has the dtype and shape of its tensor; h2.grad is the derivative of a mean "
                         "of squares; then walk back with the rules of tasks 1 and 2 (lecture 6, section 3).",
                    mistakes=mean_mistakes(want["h2"], x.shape[0], w2.shape[1]), case=(x, w1, w2))


# ---- tasks 4 and 6: two_layer_flops, stack_flops -----------------------------------------------------------------
def check_flop_pair(got: object, expected: tuple[int, int], what: str, hint: str | None = None,
                    mistakes: dict | None = None, explain: dict | None = None) -> None:
    """The visible tests' check_flop_pair (tasks 4 and 6), here for the hidden cases; `explain` maps "forward" and
    "backward" to a diagnosis of a wrong count (flop_slips)."""
    check_type(got, tuple, what, hint="return a tuple (forward, backward) of two ints.")
    check_int(len(got), 2, f"length of {what}", hint="return a tuple (forward, backward) of two ints.")
    check_int(got[0], expected[0], f"forward FLOPs of {what}", hint=hint, mistakes=(mistakes or {}).get("forward"),
              explain=(explain or {}).get("forward"))
    check_int(got[1], expected[1], f"backward FLOPs of {what}", hint=hint, mistakes=(mistakes or {}).get("backward"),
              explain=(explain or {}).get("backward"))


def flop_slips(batch: int, dims: list[int], x_requires_grad: bool, names: list[str] | None = None) -> dict:
    """The structure of the right counts of a stack of linear layers of widths `dims` (utils.diagnosis): forward, one
    matmul per layer; backward, a weight-gradient matmul per layer and an input-gradient matmul per layer whose input
    needs a gradient; the biases' additions and (without x_requires_grad) x's gradient are there but do not count.
    `names` names the widths (["D", "D", "K"] for task 4's model)."""
    names = names or [f"d_{i}" for i in range(len(dims))]
    quantities = [Factor("the batch size B", batch)] + [Factor(f"the width {n}", d) for n, d in zip(names, dims)]

    def matmul(what: str, layer: int) -> Part:
        a, b = dims[layer], dims[layer + 1]
        return Part(f"{what} of layer {layer + 1} (B x {names[layer]} x {names[layer + 1]})", 2 * batch * a * b,
                    factors=(Factor("B", batch), Factor(names[layer], a), Factor(names[layer + 1], b)))

    layers = range(len(dims) - 1)
    forward = [matmul("the forward matmul", i) for i in layers]
    forward.append(Part("the biases' additions", batch * sum(dims[1:]), "adding a bias is elementwise work, which "
                        "FlopCounterMode does not count", counts=False))
    backward = [matmul("the weight-gradient matmul", i) for i in layers]
    backward += [matmul("the input-gradient matmul", i) for i in layers if i > 0 or x_requires_grad]
    if not x_requires_grad:
        backward.append(Part("x's gradient (the input-gradient matmul of layer 1)", 2 * batch * dims[0] * dims[1],
                             "x is data unless x_requires_grad is True, and autograd skips it", counts=False))
    factors = [Factor("the 2 FLOPs of a multiply-add", 2)]
    per_layer = [2 * batch * a * b for a, b in zip(dims, dims[1:])]
    right = (sum(per_layer), 2 * sum(per_layer) - (0 if x_requires_grad else per_layer[0]))
    return {"forward": slips(right[0], forward, factors, 0, "count", quantities),
            "backward": slips(right[1], backward, factors, 0, "count", quantities)}


def flop_mistakes(batch: int, dims: list[int], x_requires_grad: bool) -> dict:
    """The counts that typical mistakes give for a stack of bias-free (or biased) linear layers of widths `dims`,
    each with the hint that names it: FlopCounterMode's count is one forward matmul per layer, and backward a
    weight-gradient matmul per layer plus an input-gradient matmul per layer whose input needs a gradient."""
    per_layer = [2 * batch * a * b for a, b in zip(dims, dims[1:])]
    forward = sum(per_layer)
    backward = 2 * forward - (0 if x_requires_grad else per_layer[0])
    mistakes = {"forward": {forward + batch * sum(dims[1:]): "biases cost no counted FLOPs: adding one is "
                                                             "elementwise work."},
                "backward": {}}
    if x_requires_grad:
        mistakes["backward"][backward - per_layer[0]] = ("with x_requires_grad=True autograd also computes x.grad, "
                                                         "the first layer's input gradient.")
    else:
        mistakes["backward"][backward + per_layer[0]] = ("that counts x.grad, the first layer's input gradient: x is "
                                                         "data unless x_requires_grad is True (lecture 6, section 4).")
    for layer in range(1, len(per_layer)):
        mistakes["backward"].setdefault(backward - per_layer[layer], (
            f"short by {per_layer[layer]:,} FLOPs, the input-gradient matmul of layer {layer + 1}: every layer whose "
            f"input needs a gradient computes one (lecture 6, section 4)."))
    return mistakes


def _two_layer_flops_cases() -> list:
    """((batch, d, k), x_requires_grad, device FlopCounterMode counts on): real tensors for small sizes, meta for big."""
    rng = random.Random(64)
    small = [(1, 1, 1), (2, 3, 5), (7, 4, 1), (1, 9, 9)] + [tuple(rng.randint(1, 12) for _ in range(3)) for _ in range(12)]
    big = [(2048, 4096, 50257), (10**6, 12288, 12288), (1, 10**5, 3)]
    big += [tuple(rng.randint(1, 10**5) for _ in range(3)) for _ in range(20)]
    return [(sizes, x_requires_grad, device) for sizes_list, device in ((small, "cpu"), (big, "meta"))
            for sizes in sizes_list for x_requires_grad in (False, True)]


def _flops_check(task: str, describe):
    def check(cases, expected, results):
        cases = cases["cases"] if isinstance(cases, dict) else cases
        for case, want, got in zip(cases, expected, _results(results, len(cases), task)):
            check_type(got, tuple, f"{task}: a result handed in")
            check_int(len(got), 2, f"{task}: a result handed in")
            explicit, default = got
            batch, dims = (case[0][0], [case[0][1], case[0][1], case[0][2]]) if task == "two_layer_flops" else case[:2]
            hint = ("per layer one forward matmul (2mkn); backward a weight-gradient matmul per layer and an "
                    "input-gradient matmul per layer whose input needs a gradient (lecture 6, section 4).")
            mistakes = flop_mistakes(batch, list(dims), case[-2])
            names = ["D", "D", "K"] if task == "two_layer_flops" else None
            explain = flop_slips(batch, list(dims), case[-2], names)
            check_flop_pair(explicit, want, describe(case, False), hint=hint, mistakes=mistakes, explain=explain)
            if not case[-2]:  # x_requires_grad False: also called without it
                check_flop_pair(default, want, describe(case, True), hint=hint, mistakes=mistakes, explain=explain)
    return check


def _stack_flops_cases() -> dict:
    rng = random.Random(66)
    small = [(1, [1, 1]), (3, [5, 2]), (2, [3, 4, 5]), (4, [1, 7, 1, 7])]
    small += [(rng.randint(1, 8), [rng.randint(1, 8) for _ in range(rng.randint(2, 5))]) for _ in range(10)]
    big = [(2048, [12288] * 5 + [50257]), (10**6, [4096, 16384, 4096]), (1, [10**5, 1])]
    big += [(rng.randint(1, 10**4), [rng.randint(1, 10**4) for _ in range(rng.randint(2, 7))]) for _ in range(20)]
    cases = [(batch, dims, x_requires_grad, device) for layouts, device in ((small, "cpu"), (big, "meta"))
             for batch, dims in layouts for x_requires_grad in (False, True)]
    # A stack of widths [d, d, k] is task 4's model: a stack_flops that calls two_layer_flops gets its right counts.
    two_layer = [((batch, dims[0], dims[2], x_requires_grad), count_two_layer_flops(batch, dims[0], dims[2], x_requires_grad))
                 for batch, dims, x_requires_grad, _ in cases if len(dims) == 3 and dims[0] == dims[1]]
    return {"cases": cases, "two_layer_flops": two_layer}


# ---- task 5: stack_grads -----------------------------------------------------------------------------------------
def _stack_grads_cases() -> dict:
    rng = random.Random(65)
    gen = torch.Generator().manual_seed(65)
    layouts = [(1, [1, 1]), (4, [3, 1]), (1, [2, 3, 4]), (5, [7, 1, 6]), (3, [2, 2, 2, 2, 2, 2])]
    layouts += [(rng.randint(1, 20), [rng.randint(1, 20) for _ in range(rng.randint(2, 6))]) for _ in range(30)]
    cases, table = [], {"w2_grad": [], "h1_grad": []}
    for n, (batch, dims) in enumerate(layouts):
        x = torch.randn(batch, dims[0], generator=gen, dtype=_dtype(n))
        weights = [torch.randn(a, b, generator=gen, dtype=_dtype(n)) / a**0.5 for a, b in zip(dims, dims[1:])]
        biases = [torch.randn(b, generator=gen, dtype=_dtype(n)) for b in dims[1:]]
        cases.append((x, weights, biases))
        calls = stack_call_table(x, weights, biases, autograd_linear_stack_activation_grads(x, weights, biases),
                                 autograd_linear_stack_grads(x, weights, biases)[0])
        for name in table:
            table[name] += calls[name]
    return {"cases": cases, **table}


def _close(got: object, want: torch.Tensor) -> bool:
    return (type(got) is torch.Tensor and got.shape == want.shape and got.dtype == want.dtype
            and bool(torch.allclose(got, want, rtol=1e-4, atol=1e-5 * float(want.abs().max()))))


def check_stack(got: object, expected: tuple, what: str, hint: str | None = None, batch: int = 1,
                case: tuple | None = None) -> None:
    """The visible test's check_stack (task 5), here for the hidden cases; `case` (x, weights, biases) for the
    diagnosis of a wrong gradient (utils.gradients.stack_slips)."""
    check_type(got, tuple, what, hint="return a tuple (weight_grads, bias_grads) of two lists.")
    check_int(len(got), 2, f"length of {what}", hint="return a tuple (weight_grads, bias_grads) of two lists.")
    found = stack_slips(*case, expected) if case else {}
    for kind, got_list, expected_list in zip(("weight", "bias"), got, expected):
        check_type(got_list, list, f"{kind} grads of {what}", hint="a Python list of tensors, one per layer.")
        check_int(len(got_list), len(expected_list), f"number of {kind} grads of {what}", hint="one per layer.")
        if len(got_list) > 1 and all(_close(g, e) for g, e in zip(got_list, reversed(expected_list))):
            raise AssertionError(f"{kind} grads of {what}: the right gradients, in the reverse order\nHint: the lists "
                                 f"follow the order of weights and biases, layer 1 first.")
        for layer, (g, e) in enumerate(zip(got_list, expected_list)):
            mistakes = [(e / batch, "this is the mean over the batch: a bias is added to every row, so it collects "
                                    "the gradient of every row (lecture 6, section 3).")] if kind == "bias" else None
            _check_grad(g, e, f"{kind} grad of layer {layer + 1} in {what}", hint=hint, mistakes=mistakes,
                        explain=found.get((kind, layer)))


def _stack_grads_check(cases, expected, results) -> None:
    for (x, weights, biases), want, got in zip(cases["cases"], expected,
                                               _results(results, len(cases["cases"]), "stack_grads")):
        dims = [x.shape[1]] + [w.shape[1] for w in weights]
        check_stack(got, want, f"stack_grads, batch {x.shape[0]}, widths {dims}, {x.dtype}", batch=x.shape[0],
                    case=(x, weights, biases),
                    hint="keep the dtype of the inputs; walk back from the last layer to the first, each layer's "
                         "output gradient giving its weight and bias gradients (lecture 6, section 3).")


HIDDEN_TESTS = {
    "w2_grad": HiddenTest(cases=_w2_grad_cases,
                          expected=lambda cases: [autograd_linear_grads(h1, w2, h2_grad)[0] for h1, h2_grad, w2 in cases],
                          check=_w2_grad_check),
    "h1_grad": HiddenTest(cases=_h1_grad_cases,
                          expected=lambda cases: [autograd_linear_grads(h1, w2, h2_grad)[1] for w2, h2_grad, h1 in cases],
                          check=_h1_grad_check),
    "two_layer_grads": HiddenTest(cases=_two_layer_grads_cases,
                                  expected=lambda cases: [autograd_two_layer_grads(*case) for case in cases["cases"]],
                                  check=_two_layer_grads_check),
    "two_layer_flops": HiddenTest(
        cases=_two_layer_flops_cases,
        expected=lambda cases: [count_two_layer_flops(*sizes, x_requires_grad, device=device)
                                for sizes, x_requires_grad, device in cases],
        check=_flops_check("two_layer_flops", lambda case, default: (
            f"two_layer_flops({', '.join(map(str, case[0]))}) (default x_requires_grad)" if default else
            f"two_layer_flops({', '.join(map(str, case[0]))}, x_requires_grad={case[1]})"))),
    "stack_grads": HiddenTest(cases=_stack_grads_cases,
                              expected=lambda cases: [autograd_linear_stack_grads(*case) for case in cases["cases"]],
                              check=_stack_grads_check),
    "stack_flops": HiddenTest(
        cases=_stack_flops_cases,
        expected=lambda cases: [count_linear_stack_flops(batch, dims, x_requires_grad, device=device)
                                for batch, dims, x_requires_grad, device in cases["cases"]],
        check=_flops_check("stack_flops", lambda case, default: (
            f"stack_flops({case[0]}, {case[1]}) (default x_requires_grad)" if default else
            f"stack_flops({case[0]}, {case[1]}, x_requires_grad={case[2]})"))),
}


# ---- napkin math (utils/napkin.py): the question's inputs, the answer computed from them ----------------
from reference.hidden import napkin_test
from utils.napkin import MULTIPLY_ADDS, within_percent

HIDDEN_TESTS["step_flops"] = napkin_test(
    {'parameters': 1300000000, 'sequences': 512, 'seq': 1024},
    lambda parameters, sequences, seq, flops_per_parameter_and_token: flops_per_parameter_and_token * parameters * sequences * seq,
    "step_flops", "FLOPs", within_percent(5),
    {1 / 3: "the forward pass alone? The backward pass costs twice the forward: a training step is 6 x tokens x parameters.", 2 / 3: "the backward pass counted like the forward? It costs twice the forward: one matmul for the weights' gradient and one for the inputs' gradient.", **MULTIPLY_ADDS},
    conventions={"flops_per_parameter_and_token": (6, "the 6 FLOPs per parameter and token of a training step (2 forward, 4 backward)")},
    words={"sequences": "the 512 sequences of the batch", "seq": "the 1,024 tokens of each sequence"})
