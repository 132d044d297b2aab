"""What is wrong with a wrong answer, found by comparing it with the right one's structure (issue #61).

A check that only says "expected 854,438,400, got 850,899,456" leaves the student to guess; a table of the wrong values
someone thought of names only those. Here a wrong value is compared with what single slips of the right answer's
structure give, generated from that structure, so that a slip nobody listed is named too:

- a count or a size that is a sum of named parts (`Part`): a part left out, a part counted twice, or a thing of the
  problem that is no part of the answer counted in (`Part(..., counts=False)`);
- a value that is a product of named factors (`Factor`): a factor left out, counted twice, or used the other way
  round (multiplied where it divides);
- a tensor: transposed, its axes in another order, the right values in other places, a constant scale (named when it
  is one of the case's own quantities), the sign, or another shape (`explain_tensor`).

Two slips at once are named too, when exactly one pair gives the value. A check passes `explain=` (a function of the
wrong value, as `slips(...)` and `tensor_slips(...)` build) to utils.grading's checks, which print what it found on a
line of its own ("Found: ..."). The parts and factors are the case's own quantities, which its text states; nothing here
holds an answer: the checks give them, with the right value they already compare against.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import torch

_tensor_type = torch.Tensor


@dataclass(frozen=True)
class Factor:
    """A named factor of a right answer that is a product (its value in this case), and why it is there."""
    what: str
    value: float
    why: str = ""


@dataclass(frozen=True)
class Part:
    """A named part of a right answer that is a sum (FLOPs, bytes, parameters), with its size in this case; with
    counts=False, a thing of the problem that is not part of the answer (a bias in a FLOP count, a lookup). `why` says,
    in a few words, why it counts or not; `factors` are the case's quantities the part is a product of (B, D, K), so
    that one of them left out of the part, or another quantity in its place, is found too."""
    what: str
    size: float
    why: str = ""
    counts: bool = True
    factors: tuple[Factor, ...] = ()


@dataclass(frozen=True)
class Slip:
    """A wrong value that one or two slips of the structure give, the words that say which, and the part or factor
    each slip is about (`about`: a pair of slips about the same one is no pair)."""
    value: float
    words: str
    why: str = ""
    about: str = ""


def _number(value: object) -> float | None:
    """A plain int or float as a float; None for anything else (bool, numpy, tensors)."""
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return value if type(value) is float and math.isfinite(value) else None


def same(a: float, b: float, rel_tol: float) -> bool:
    """a equals b to rel_tol (exactly when rel_tol is 0)."""
    return a == b or (rel_tol > 0 and abs(a - b) <= rel_tol * max(abs(a), abs(b)))


def _amount(x: float) -> str:
    """A part's size or a factor's value as it is: an int with thousands separators, else 4 significant digits."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e18 else f"{x:.4g}"


def _inside_parts(expected: float, parts: Sequence[Part], quantities: Sequence[Factor]) -> list[Slip]:
    """Slips inside a part that is a product of the case's quantities: one of its factors left out, or another of the
    case's quantities in its place."""
    found = []
    for part in parts:
        if not part.counts:
            continue
        for factor in part.factors:
            if factor.value in (0, 1):
                continue
            found.append(Slip(expected - part.size + part.size / factor.value,
                              f"with {factor.what} left out of {part.what}", part.why, part.what))
            found.append(Slip(expected - part.size + part.size * factor.value,
                              f"with {factor.what} applied twice in {part.what}", part.why, part.what))
            for other in quantities:
                if other.value != factor.value and other.value:
                    found.append(Slip(expected - part.size + part.size * other.value / factor.value,
                                      f"with {other.what} where {factor.what} belongs in {part.what}", part.why,
                                      part.what))
    return found


def single_slips(expected: float, parts: Sequence[Part] = (), factors: Sequence[Factor] = (),
                 quantities: Sequence[Factor] = ()) -> list[Slip]:
    """Every value one slip of the structure gives: each part left out, counted twice or (counts=False) counted in;
    each factor left out, counted twice or used the other way round; inside a part, a factor left out or another of
    the case's `quantities` in its place."""
    found = []
    for part in parts:
        if part.size == 0:
            continue
        named = f"{part.what} ({_amount(part.size)})"
        if part.counts:
            found.append(Slip(expected - part.size, f"with {named} left out", part.why, part.what))
            found.append(Slip(expected + part.size, f"with {named} counted twice", part.why, part.what))
        else:
            found.append(Slip(expected + part.size, f"with {named} counted in", part.why, part.what))
    for factor in factors:
        if factor.value in (0, 1):
            continue
        named = f"{factor.what} ({_amount(factor.value)})"
        found.append(Slip(expected / factor.value, f"with {named} left out", factor.why, factor.what))
        found.append(Slip(expected * factor.value, f"with {named} applied twice", factor.why, factor.what))
        found.append(Slip(expected / factor.value**2, f"with {named} used the other way round (dividing where it "
                          "multiplies, or multiplying where it divides)", factor.why, factor.what))
    return found + _inside_parts(expected, parts, quantities)


def _pairs(expected: float, singles: list[Slip]) -> list[Slip]:
    """Two slips at once: their changes add (parts) and multiply (factors) independently, so a pair's value is the
    first slip's value changed as the second changes the right one."""
    found = []
    for a, b in itertools.combinations(singles, 2):
        if expected == 0 or a.about == b.about:
            continue
        additive = a.value + b.value - expected
        multiplicative = a.value * b.value / expected
        for value in {additive, multiplicative}:
            found.append(Slip(value, f"{a.words}, and {b.words}", "; ".join(w for w in (a.why, b.why) if w),
                              f"{a.about} + {b.about}"))
    return found


def find(got: float, candidates: Iterable[Slip], rel_tol: float) -> list[Slip]:
    """The candidates whose value is `got`, each wording once."""
    matches: dict[str, Slip] = {}
    for slip in candidates:
        if same(got, slip.value, rel_tol) and slip.words not in matches:
            matches[slip.words] = slip
    return list(matches.values())


def explain_value(got: object, expected: float, parts: Sequence[Part] = (), factors: Sequence[Factor] = (),
                  rel_tol: float = 1e-9, noun: str = "value", quantities: Sequence[Factor] = ()) -> str | None:
    """What one or two slips of the structure give `got`, in words; None when no slip does (or several pairs do).
    `rel_tol` 0 compares exactly (counts). Single slips first (those inside a part last), then pairs."""
    value = _number(got)
    if value is None or same(value, expected, rel_tol):
        return None
    singles = single_slips(expected, parts, factors, quantities)
    matches = find(value, singles, rel_tol)
    if not matches:
        pairs = find(value, _pairs(expected, single_slips(expected, parts, factors)), rel_tol)
        matches = pairs if len(pairs) == 1 else []
    if not matches:
        return None
    said = ", or ".join(slip.words for slip in matches)
    why = "; ".join(dict.fromkeys(slip.why for slip in matches if slip.why))
    return f"your {noun} is the right {noun} {said}" + (f": {why}" if why else "") + "."


def slips(expected: float, parts: Sequence[Part] = (), factors: Sequence[Factor] = (), rel_tol: float = 1e-9,
          noun: str = "value", quantities: Sequence[Factor] = ()) -> Callable[[object], str | None]:
    """explain_value for one case, as a check's `explain=`."""
    return lambda got: explain_value(got, expected, parts, factors, rel_tol, noun, quantities)


# ---- tensors --------------------------------------------------------------------------------------------------------
def _close(a: torch.Tensor, b: torch.Tensor, rel: float = 1e-4) -> bool:
    """Same shape and values to `rel` of the largest entry (a diagnosis, not a verdict: the check itself is stricter)."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    if a.numel() == 0:
        return True
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    scale = float(b.abs().max()) or 1.0
    return bool(((a - b).abs() <= rel * scale + 1e-12).all())


def _scale(got: torch.Tensor, expected: torch.Tensor) -> float | None:
    """The one number c with got = c x expected, entry by entry (to 1e-4), or None."""
    got, expected = got.detach().double().cpu(), expected.detach().double().cpu()
    big = expected.abs() > 1e-6 * float(expected.abs().max() or 1.0)
    if not bool(big.any()) or not _close(got[~big], torch.zeros_like(got[~big]), 1e-3):
        return None
    ratios = got[big] / expected[big]
    c = float(ratios.median())
    if not math.isfinite(c) or c == 0 or abs(c - 1) < 1e-4:
        return None
    return c if bool(((ratios - c).abs() <= 1e-4 * abs(c)).all()) else None


def _near(a: float, b: float) -> bool:
    return b != 0 and abs(a - b) <= 1e-3 * abs(b)


def _named_scale(c: float, scales: dict[str, float]) -> str:
    """c (got / right, the same for every value) in words, with the case's quantity it is, if any: one of them
    (multiplied or divided by it), its square (used the other way round), or one quantity where another belongs."""
    if _near(c, -1):
        return "every value has the wrong sign"
    said = f"every value is {c:.4g} times the right one"
    for name, value in scales.items():
        if _near(c, value):
            return f"{said}: a factor {name} ({value:.4g}) too many (multiplied in, or its division left out)"
        if _near(c, 1 / value):
            return (f"every value is 1/{value:.4g} of the right one: a factor {name} ({value:.4g}) too few (divided "
                    "by, or its multiplication left out)")
        if _near(c, value**2):
            return f"{said}: {name} ({value:.4g}) used the other way round, multiplied where it divides"
        if _near(c, 1 / value**2):
            return f"{said}: {name} ({value:.4g}) used the other way round, divided where it multiplies"
    for (right, right_value), (used, used_value) in itertools.permutations(scales.items(), 2):
        if _near(c, right_value / used_value):
            return f"{said}: divided by {used} ({used_value:.4g}) where {right} ({right_value:.4g}) belongs"
    return f"{said}: a scale is off"


def _row_scales(got: torch.Tensor, expected: torch.Tensor) -> list[float] | None:
    """For a tensor whose rows (first axis) are each a constant times the right row: those constants; else None."""
    if expected.dim() < 2 or got.shape != expected.shape:
        return None
    rows = []
    for g, e in zip(got, expected):
        if _close(g, e):
            rows.append(1.0)
            continue
        c = _scale(g, e)
        if c is None:
            return None
        rows.append(c)
    return rows


def _explain_rows(rows: list[float], row_quantities: dict[str, Sequence[float]]) -> str:
    """Rows each off by their own factor, named when the factors are one per-row quantity over another."""
    said = ", ".join(f"row {i} x{c:.4g}" for i, c in enumerate(rows))
    for (right, right_values), (used, used_values) in itertools.permutations(row_quantities.items(), 2):
        if all(_near(c, r / u) if u else False for c, r, u in zip(rows, right_values, used_values)):
            return f"each row is off by its own factor ({said}): divided by {used} where {right} belongs"
    return f"each row is off by its own factor ({said}): a per-row quantity is wrong"


def _wrong_axis(got: torch.Tensor, expected: torch.Tensor, row_quantities: dict[str, Sequence[float]]) -> str | None:
    """A per-row quantity that divided the last axis instead of the rows (a (batch,) tensor broadcast against
    (batch, n) lines up with the last axis): got = expected x q[row] / q[column]."""
    if expected.dim() != 2 or expected.shape[0] != expected.shape[1]:
        return None
    for name, values in row_quantities.items():
        q = torch.tensor([float(v) for v in values], dtype=torch.float64)
        if len(q) == expected.shape[0] and bool((q != 0).all()) and _close(got, expected.double() * q[:, None] / q[None, :]):
            return (f"{name}, one per row, divided the columns instead of the rows: a tensor of shape (batch,) lines up "
                    "with the last axis when broadcast; as (batch, 1) it lines up with the rows")
    return None


def _axes(names: Sequence[str] | None, order: Sequence[int]) -> str:
    return "(" + ", ".join(names[i] if names else f"axis {i}" for i in order) + ")"


def explain_tensor(got: object, expected: torch.Tensor, scales: dict[str, float] | None = None,
                   axes: Sequence[str] | None = None, elementwise_of: Sequence[Sequence[int]] = (),
                   row_quantities: dict[str, Sequence[float]] | None = None) -> str | None:
    """What is wrong with tensor `got` against `expected`, in words; None when nothing simple explains it.
    `scales`: the case's quantities a value may have been multiplied or divided by ({"the batch size B": 6, ...});
    `axes`: names of expected's axes; `elementwise_of`: input shapes whose broadcast shape an elementwise product of
    the inputs (instead of a matmul) has; `row_quantities`: quantities with one value per row (the real tokens of each
    row, the sequence length) a row may have been divided by instead of another."""
    if type(got) is not _tensor_type:
        return None
    tensor: torch.Tensor = got   # exactly a torch.Tensor now (mypy does not read torch, so it cannot narrow `got`)
    if not (tensor.dtype.is_floating_point and expected.dtype.is_floating_point):
        return None
    if tuple(tensor.shape) == tuple(expected.shape):
        return _same_shape_slip(tensor, expected, scales or {}, row_quantities or {})
    return _shape_slip(tensor, expected, axes, elementwise_of)


def _same_shape_slip(got: torch.Tensor, expected: torch.Tensor, scales: dict[str, float],
                     row_quantities: dict[str, Sequence[float]]) -> str | None:
    """explain_tensor for a tensor of the right shape: a scale, a per-row scale, a quantity on the wrong axis, the
    values moved about, or transposed."""
    if _close(got, expected):
        return None
    c = _scale(got, expected)
    if c is not None:
        return _named_scale(c, scales)
    rows = _row_scales(got, expected)
    if rows is not None:
        return _explain_rows(rows, row_quantities)
    wrong_axis = _wrong_axis(got, expected, row_quantities)
    if wrong_axis:
        return wrong_axis
    if got.numel() > 1 and _close(got.flatten().sort().values, expected.flatten().sort().values):
        return "the right values, in the wrong places: an axis order, or which factor of a merged axis comes first"
    if expected.dim() == 2 and got.shape[0] == got.shape[1] and _close(got, expected.T):
        return "the right values, transposed"
    return None


def _shape_slip(got: torch.Tensor, expected: torch.Tensor, axes: Sequence[str] | None,
                elementwise_of: Sequence[Sequence[int]]) -> str | None:
    """explain_tensor for a tensor of another shape: transposed, axes permuted, an axis reduced, reshaped, an
    elementwise product for a matmul, an axis missing or one too many."""
    shape, want = tuple(got.shape), tuple(expected.shape)
    if expected.dim() >= 2 and shape == want[::-1] and expected.dim() == 2 and _close(got, expected.T):
        return f"the right values, transposed: {shape} where {want} was asked"
    if expected.dim() >= 2 and sorted(shape) == sorted(want) and expected.dim() <= 6:
        for order in itertools.permutations(range(expected.dim())):
            if tuple(want[i] for i in order) == shape and _close(got, expected.permute(order)):
                return f"the right values with the axes in another order: {_axes(axes, order)} where {_axes(axes, range(len(want)))} was asked"
    for axis in range(expected.dim()):
        for how, reduced in (("summed", expected.sum(axis)), ("averaged", expected.mean(axis))):
            if shape == tuple(reduced.shape) and _close(got, reduced):
                named = axes[axis] if axes else f"axis {axis}"
                return f"the right values {how} over {named}: that axis is gone, where {want} keeps it"
    if got.numel() == expected.numel() and _close(got.reshape(want), expected):
        return f"the right values in another shape: {shape} where {want} was asked"
    if _elementwise(shape, elementwise_of):
        return (f"shape {shape} is what an elementwise product of the inputs (or of one transposed) gives: a matmul "
                f"sums over the index its two factors share, and leaves {want}")
    if shape == want[:-1] or shape == want[1:]:
        return f"shape {shape}: one axis of {want} summed away or missing"
    if len(shape) == len(want) + 1 and 1 in shape:
        return f"shape {shape}: an extra axis of size 1 (keepdim?) where {want} was asked"
    return None


def _elementwise(shape: tuple[int, ...], inputs: Sequence[Sequence[int]]) -> bool:
    """Whether two of the inputs (either transposed) broadcast to `shape`: the mark of * where @ was meant."""
    forms = [tuple(s) for s in inputs] + [tuple(s)[::-1] for s in inputs if len(s) == 2]
    for a, b in itertools.combinations(forms, 2):
        try:
            if tuple(torch.broadcast_shapes(a, b)) == shape:
                return True
        except RuntimeError:
            continue
    return False


def explain_candidates(got: object, candidates: dict[str, torch.Tensor]) -> str | None:
    """The first of `candidates` (words -> the tensor that slip gives, built from the case's own structure) that `got`
    equals, in words; None if none."""
    if type(got) is not _tensor_type:
        return None
    given: torch.Tensor = got   # exactly a torch.Tensor now (mypy does not read torch, so it cannot narrow `got`)
    if not given.dtype.is_floating_point:
        return None
    for words, tensor in candidates.items():
        if _close(given, tensor):
            return words
    return None


def tensor_slips(expected: torch.Tensor, scales: dict[str, float] | None = None, axes: Sequence[str] | None = None,
                 elementwise_of: Sequence[Sequence[int]] = (),
                 row_quantities: dict[str, Sequence[float]] | None = None) -> Callable[[object], str | None]:
    """explain_tensor for one case, as a check's `explain=`."""
    return lambda got: explain_tensor(got, expected, scales, axes, elementwise_of, row_quantities)


MULTIPLY_ADD = Factor("the 2 FLOPs of a multiply-add", 2, "a matmul's term is a multiply and an add")


def flop_count_slips(expected: int) -> Callable[[object], str | None]:
    """A diagnosis of any FLOP count, from the one convention every count here shares (2 FLOPs per multiply-add): a
    count half or twice the right one names it. It knows nothing else of the count."""
    return slips(expected, factors=[MULTIPLY_ADD], rel_tol=0, noun="count")
