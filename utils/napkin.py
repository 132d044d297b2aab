"""Napkin-math answers: one number in a stated unit (bytes, GiB, FLOPs, seconds, days, ...), graded within a stated
tolerance, with feedback that says how far off a wrong number is and which way (issue #52), and what it reveals before
the deadline (issue #61; docs/course.md, "What napkin feedback tells you").

A napkin question states its inputs and the unit of its answer in its text; the student assigns the answer, a plain
Python int or float, to a named variable. Two checks, used by the question's test cell:

- `check_napkin_answer` (the visible part): the answer is a plain, finite, positive number. It knows no expected
  value, so it can tell a student nothing about the answer.
- `check_napkin` (the hidden part, run by the trusted grader with the expected value that the instructor's
  references compute from the question's inputs): the answer must be within the question's `Tolerance`. A wrong one
  gets, in this order of preference:
  1. the slips its factor matches (`slips`: each a factor and what it is; a unit, an input of the question left out,
     used twice or the wrong way round, a convention of the lecture), every one that matches, with the factor as it is
     ("1,024x too large: MiB where GiB were asked?");
  2. a near miss (off by at most NEAR times the tolerance) said as one, with its direction and no number but the
     tolerance the question states, pointing at rounding;
  3. otherwise which way it is off and a band of the 1-1.5-2-3-5 grid it lies in ("between 1.5x and 2x too small"),
     wider than any tolerance, whose edges are never within the tolerance of the answer's factor (a band with such an
     edge is widened to the next edge), so that no number printed is one to multiply by and pass.
  The expected value itself is never written. A factor is printed as it is ("1,024x", never a rounded "1,000x") only
  beside the slip it matches, which the student fixes anyway; tests/test_napkin.py checks all of this over a grid of
  answers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from utils.grading import _fail

_NUMBER_HINT = "assign one plain Python number (an int or a float, such as 2.5e9), in {unit}: not a string, a tensor or a numpy number."


@dataclass(frozen=True)
class Tolerance:
    """How close a napkin answer must be to the expected value: within `relative` of it (0.05: within 5%), or, when
    `factor` is set, within that factor either way (2: from half to twice it). Questions state it in their text."""
    relative: float = 0.0
    factor: float | None = None

    def __post_init__(self):
        # The feedback's bands and slips look one decade either way of the answer (`_allows`, `band`): a tolerance
        # as wide as 10x would pass band edges that a decade's band cannot step past. A napkin answer is asked to
        # within a few percent, or a small factor.
        if self.factor is not None and not 1 < self.factor < 10:
            raise ValueError(f"a napkin tolerance's factor must be above 1 and below 10, not {self.factor!r}")
        if not 0 <= self.relative < 0.9:   # within 90% passes a tenth of the value: a decade
            raise ValueError(f"a napkin tolerance's relative width must be at least 0 and below 0.9, not {self.relative!r}")

    def allows(self, ratio: float) -> bool:
        """Whether an answer `ratio` times the expected value passes."""
        if self.factor is not None:
            return 1 / self.factor <= ratio <= self.factor
        return abs(ratio - 1) <= self.relative * (1 + 1e-9)  # "within 5%" includes 5% itself, in floats too

    def __str__(self) -> str:
        if self.factor is not None:
            return f"within a factor of {self.factor:g}"
        return f"within {self.relative:.0%}"


def within_percent(percent: float) -> Tolerance:
    """Within `percent` % of the expected value."""
    return Tolerance(relative=percent / 100)


def within_factor(factor: float) -> Tolerance:
    """Within `factor` times the expected value, either way."""
    return Tolerance(factor=factor)


# Typical slips, as (answer / expected value) -> what the slip is. A question's hidden test picks those that fit it.
BITS_FOR_BYTES = {8.0: "bits where bytes were asked? A byte is 8 bits."}
GB_FOR_GIB = {2**30 / 1e9: "GB (10^9 bytes) where GiB (2^30 bytes) were asked?"}
GIB_FOR_GB = {1e9 / 2**30: "GiB (2^30 bytes) where GB (10^9 bytes) were asked?"}
MIB_FOR_GIB = {1024.0: "MiB where GiB were asked? A GiB is 1,024 MiB."}
MS_FOR_S = {1000.0: "milliseconds where seconds were asked?"}
S_FOR_MS = {1e-3: "seconds where milliseconds were asked?"}
PERCENT_FOR_FRACTION = {100.0: "a percentage where a fraction (from 0 to 1) was asked?"}
MULTIPLY_ADDS = {0.5: "multiply-adds counted where FLOPs were asked? One multiply-add is 2 FLOPs."}


def is_number(value: object) -> bool:
    """A plain int or float (bool, numpy numbers and tensors are not), finite and above 0."""
    if type(value) is not int and type(value) is not float:
        return False
    try:
        return math.isfinite(float(value)) and value > 0
    except OverflowError:  # an int beyond any float
        return False


def check_napkin_answer(value: object, what: str, unit: str) -> None:
    """The visible check of a napkin answer: a plain, finite, positive number (of any size: no expected value here)."""
    if value is None:
        _fail(what, "still None", f"replace the raise line of the answer cell above with `{what} = ` and your number, "
                                  "then run that cell.")
    if type(value) is not int and type(value) is not float:
        _fail(what, f"expected a plain number (int or float), got {type(value).__name__}", _NUMBER_HINT.format(unit=unit))
    if not is_number(value):
        _fail(what, f"expected a finite number above 0, got {value!r}",
              f"every quantity asked here (a size, a count, a time) is positive: {_NUMBER_HINT.format(unit=unit)}")


NEAR = 2.5          # an answer off by at most NEAR x the tolerance is a near miss: a rounding, most often
GRID = (1, 1.5, 2, 3, 5)   # the bands a factor without a named slip is told in, per power of ten
PLAIN = 15          # factors up to 10^PLAIN are written out (1,500x); larger ones as 1.5 x 10^20x


def factor_as_it_is(factor: float) -> str:
    """A factor (at least 1) as measured, to 3 significant digits: "1,024x", "8x", "1.07x", "1.2e+06x"."""
    if factor >= 1e6:
        return f"{factor:.3g}x"
    if factor >= 100:
        return f"{round(factor):,}x"
    return f"{factor:.3g}x"


def _allows(tolerance: Tolerance | None, log_ratio: float) -> bool:
    """Whether `tolerance` passes an answer 10^log_ratio times the expected value (no overflow for any log_ratio)."""
    return tolerance is not None and abs(log_ratio) < 1 and tolerance.allows(10**log_ratio)


def band(log_factor: float, tolerance: Tolerance | None = None) -> tuple[tuple[float, int], tuple[float, int]]:
    """The band of the 1-1.5-2-3-5 grid that a factor of 10^log_factor (at least 1) lies in, each edge as (mantissa,
    power of ten): ((1.5, 0), (2, 0)) for 1.7, ((1, 3), (1.5, 3)) for 1200. An edge that `tolerance` would let the
    factor pass as (1.5 for 1.52 at 2%) is moved to the next edge out, so that multiplying by an edge never passes:
    ((1, 0), (2, 0)) for 1.52, ((5, 2), (1.5, 3)) for 1024 at 5%. In logarithms, so that any factor has a band."""
    decade = math.floor(log_factor)
    edges = [(edge, power) for power in (decade - 1, decade, decade + 1) for edge in GRID] + [(1.0, decade + 2)]
    edges = [edge for edge in edges if edge[1] >= 0]

    def log(edge: tuple[float, int]) -> float:
        return math.log10(edge[0]) + edge[1]
    high = next(i for i, edge in enumerate(edges) if log_factor < log(edge))
    low = high - 1
    while low > 0 and _passes_either_way(tolerance, log_factor - log(edges[low])):
        low -= 1
    while high < len(edges) - 1 and _passes_either_way(tolerance, log_factor - log(edges[high])):
        high += 1
    return edges[low], edges[high]


def _passes_either_way(tolerance: Tolerance | None, log_ratio: float) -> bool:
    """Whether an answer off by 10^log_ratio, multiplied or divided by it, could pass: a relative tolerance is not
    symmetric in a ratio (within 60% passes 0.5 but not 2), and a logarithm's rounding makes a factor of exactly 2
    2.0000000000000004, so both ways are tried, each with a hair of slack."""
    if tolerance is None or abs(log_ratio) >= 1:
        return False
    ratio = 10**log_ratio
    return any(tolerance.allows(r * slack) for r in (ratio, 1 / ratio) for slack in (1 - 1e-12, 1 + 1e-12))


def _grid_number(edge: tuple[float, int]) -> str:
    mantissa, power = edge
    if power > PLAIN:
        return f"{mantissa:g} x 10^{power}" if mantissa != 1 else f"10^{power}"
    value = mantissa * 10**power
    return f"{value:,.0f}" if value >= 10 else f"{value:g}"


def off_by(ratio: float, tolerance: Tolerance | None = None, log_ratio: float | None = None) -> str:
    """Which way and how far an answer `ratio` times the expected value is, in a band that no tolerance fits in:
    "between 1.5x and 2x too small", "between 1,000x and 1,500x too large", "less than 1.5x too large"; with the
    question's `tolerance`, neither edge is a factor that would make the answer pass (`band`). `log_ratio` (log10 of
    the ratio) stands for a ratio too large or too small for a float (an answer of 1e308 for a few GiB: the ratio is
    inf; 5e-324: it is 0), so that any answer gets words."""
    if log_ratio is None:
        log_ratio = math.log10(ratio)
    way = "too large" if log_ratio > 0 else "too small"
    low, high = band(abs(log_ratio), tolerance)
    if low == (1, 0):
        return f"less than {_grid_number(high)}x {way}"
    return f"between {_grid_number(low)}x and {_grid_number(high)}x {way}"


Slips = dict[float, str] | list[tuple[float, str]]


def slips_named(log_ratio: float, tolerance: Tolerance, slips: Slips | None) -> list[str]:
    """Every slip in `slips` (factor -> what it is) whose factor the answer's ratio (10^log_ratio) matches, to
    `tolerance`: two slips with the same factor are both named."""
    pairs = slips.items() if isinstance(slips, dict) else (slips or [])
    return list(dict.fromkeys(slip for factor, slip in pairs if _allows(tolerance, log_ratio - math.log10(factor))))


def is_near_miss(log_ratio: float, tolerance: Tolerance) -> bool:
    """Off by at most NEAR times the tolerance (a relative tolerance only)."""
    return tolerance.factor is None and abs(log_ratio) < 1 and abs(10**log_ratio - 1) <= NEAR * tolerance.relative


def napkin_feedback(ratio: float, unit: str, tolerance: Tolerance, slips: Slips | None = None,
                    log_ratio: float | None = None) -> str:
    """What a wrong answer `ratio` times the expected value (10^log_ratio, for a ratio beyond a float) is told: the
    slips it matches with its factor as it is, or a near miss, or a band (utils/napkin.py's docstring says why no
    more)."""
    if log_ratio is None:
        log_ratio = math.log10(ratio)
    way = "too large" if log_ratio > 0 else "too small"
    named = slips_named(log_ratio, tolerance, slips)
    if named:
        return f"{factor_as_it_is(10 ** abs(log_ratio))} {way}: " + " Or ".join(named)
    if is_near_miss(log_ratio, tolerance):
        return (f"a near miss, a little {way} (graded {tolerance}): a rounding that went too far? Keep three "
                "significant digits as you go.")
    return f"{off_by(ratio, tolerance, log_ratio)}: recheck each factor of your product, and the unit ({unit})."


def check_napkin(value: object, expected: float, what: str, unit: str, tolerance: Tolerance,
                 slips: Slips | None = None) -> None:
    """The hidden check of a napkin answer: `value` must be a plain positive number within `tolerance` of `expected`.
    A wrong one fails with napkin_feedback (never the expected value)."""
    check_napkin_answer(value, what, unit)
    value = cast(float, value)                             # a plain int or float, checked just above
    log_ratio = math.log10(value) - math.log10(expected)   # defined for any positive int, and any float down to 5e-324
    ratio = float(value) / expected                        # inf or 0.0 where the true ratio is beyond a float
    if tolerance.allows(ratio):
        return
    shown = repr(value) if len(repr(value)) <= 24 else f"{float(value):.6g}"
    _fail(what, f"{shown} {unit} is not {tolerance} of the answer",
          napkin_feedback(ratio, unit, tolerance, slips, log_ratio))
