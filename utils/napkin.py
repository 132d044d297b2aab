"""Napkin-math answers: one number in a stated unit (bytes, GiB, FLOPs, seconds, days, ...), graded within a stated
tolerance, with feedback that says how far off a wrong number is and which way (issue #52).

A napkin question states its inputs and the unit of its answer in its text; the student assigns the answer, a plain
Python int or float, to a named variable. Two checks, used by the question's test cell:

- `check_napkin_answer` (the visible part): the answer is a plain, finite, positive number. It knows no expected
  value, so it can tell a student nothing about the answer.
- `check_napkin` (the hidden part, run by the trusted grader with the expected value that the instructor's
  references compute from the question's inputs): the answer must be within the question's `Tolerance`. A wrong one gets a
  hint with the factor it is off by (below 10x: "about 1.5x too small"; from 10x: the orders of magnitude, "about
  3 orders of magnitude (1,000x) too large") and, when that factor is a known slip, the slip's name ("bits where
  bytes were asked?"). The expected value itself is never written in a message.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from utils.grading import _fail

_NUMBER_HINT = "assign one plain Python number (an int or a float, such as 2.5e9), in {unit}: not a string, a tensor or a numpy number."


@dataclass(frozen=True)
class Tolerance:
    """How close a napkin answer must be to the expected value: within `relative` of it (0.05: within 5%), or, when
    `factor` is set, within that factor either way (2: from half to twice it). Questions state it in their text."""
    relative: float = 0.0
    factor: float | None = None

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


def off_by(ratio: float, log_ratio: float | None = None) -> str:
    """How far an answer `ratio` times the expected value is, in words: "about 1.5x too small", "about 3 orders of
    magnitude (1,000x) too large". `log_ratio` (log10 of the ratio) stands for a ratio too large or too small for a
    float (an answer of 1e308 for a few GiB: the ratio is inf; 5e-324: it is 0), so that any answer gets words."""
    if log_ratio is None:
        log_ratio = math.log10(ratio)
    way = "too large" if log_ratio > 0 else "too small"
    if abs(log_ratio) < math.log10(9.5):
        return f"about {10 ** abs(log_ratio):.2g}x {way}"
    orders = round(abs(log_ratio))
    plural = "s" if orders > 1 else ""
    times = f"{10 ** orders:,}x" if orders <= 15 else f"10^{orders}x"
    return f"about {orders} order{plural} of magnitude ({times}) {way}"


def slip_named(ratio: float, tolerance: Tolerance, slips: dict[float, str] | None) -> str | None:
    """The slip in `slips` whose factor the answer's `ratio` matches, to `tolerance`; None when it matches none."""
    for factor, slip in (slips or {}).items():
        if tolerance.allows(ratio / factor):
            return slip
    return None


def check_napkin(value: object, expected: float, what: str, unit: str, tolerance: Tolerance,
                 slips: dict[float, str] | None = None) -> None:
    """The hidden check of a napkin answer: `value` must be a plain positive number within `tolerance` of `expected`.
    A wrong one fails with how far off it is (never the expected value) and the slip from `slips` it matches."""
    check_napkin_answer(value, what, unit)
    log_ratio = math.log10(value) - math.log10(expected)   # defined for any positive int, and any float down to 5e-324
    ratio = float(value) / expected                        # inf or 0.0 where the true ratio is beyond a float
    if tolerance.allows(ratio):
        return
    distance = off_by(ratio, log_ratio)
    named = slip_named(ratio, tolerance, slips)
    hint = f"{distance}: {named}" if named else f"{distance}: recheck each factor of your product, and the unit ({unit})."
    shown = repr(value) if len(repr(value)) <= 24 else f"{float(value):.6g}"
    _fail(what, f"{shown} {unit} is not {tolerance} of the answer", hint)
