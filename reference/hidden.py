"""The trusted half of every hidden test: its cases, its expected results and its check, by key.

A key is "<module>.<test>": `reference/<module>.py` holds `HIDDEN_TESTS = {"<test>": HiddenTest(...)}` beside the
instructor's answers it compares against. The notebook's hidden section (see utils/handin.py) only calls the
student's code on `cases()` and hands the results in; `expected()` and `check()` run in a trusted process, so the
student's process never holds an expected value, a reference function or its source.

Every function here memoises per process: the grader's checker computes each test's cases and expected results once
per run, however many students it checks.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

KEY = re.compile(r"^([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class HiddenTest:
    """cases() -> the inputs (no answers in them: they are sent to the student's process);
    expected(cases) -> what a correct solution gives (never leaves the trusted process);
    check(cases, expected, results) -> None, or AssertionError with a message and a `Hint:` line."""
    cases: Callable[[], object]
    expected: Callable[[object], object]
    check: Callable[[object, object, object], None]
    varies: str = ""  # what the hidden cases vary beyond the visible ones ("the ZeRO stage and the GPU count"):
                      # the hint a failure gets when its check gives none of its own


def keep_stand_ins_apart(tests: dict[str, HiddenTest]) -> dict[str, HiddenTest]:
    """The tests, each without the hidden cases that a later test's stand-in for it answers (the table named after it
    in the later test's cases, utils.earlier.answers_from_table). A stand-in runs in the student's process, where a
    student can print what it returns: that must be no expected value of the earlier task's own test (issue #48)."""
    def own_cases(name: str, test: HiddenTest) -> Callable[[], object]:
        def cases() -> object:
            found = test.cases()
            known = {repr(key) for other_name, other in tests.items() if other_name != name
                     for theirs in [other.cases()] if isinstance(theirs, dict) and name in theirs
                     for key, _ in theirs[name]}
            if not known:
                return found
            if isinstance(found, dict):
                return {**found, "calls": [case for case in found["calls"] if repr(case) not in known]}
            return [case for case in found if repr(case) not in known]   # type: ignore[attr-defined]
        return cases
    return {name: dataclasses.replace(test, cases=own_cases(name, test)) for name, test in tests.items()}


_cases: dict[str, object] = {}
_expected: dict[str, object] = {}


def hidden_test(key: str) -> HiddenTest:
    """The HiddenTest registered under `key`; KeyError naming the key when there is none."""
    match = KEY.match(key)
    if not match:
        raise KeyError(f"{key!r} is not a hidden test key (<module>.<test>)")
    module = importlib.import_module(f"reference.{match.group(1)}")
    if Path(module.__file__).resolve().parent != Path(__file__).resolve().parent:  # an editable install elsewhere
        raise ImportError(f"reference.{match.group(1)} came from {module.__file__}, not from {Path(__file__).parent}")
    tests = getattr(module, "HIDDEN_TESTS", {})
    if match.group(2) not in tests:
        raise KeyError(f"reference/{match.group(1)}.py registers no hidden test {match.group(2)!r}")
    return tests[match.group(2)]


def cases(key: str) -> object:
    """The inputs of hidden test `key` (what the student's code is called with)."""
    if key not in _cases:
        _cases[key] = hidden_test(key).cases()
    return _cases[key]


def expected(key: str) -> object:
    """What a correct solution gives on `cases(key)`, with every tensor on the CPU: hand-ins are decoded onto the CPU
    (utils.handin.decode), and the grader's trusted checker compares in children it forks, where a CUDA tensor made
    before the fork cannot be used (CUDA does not survive a fork)."""
    if key not in _expected:
        _expected[key] = _on_cpu(hidden_test(key).expected(cases(key)))
    return _expected[key]


def _on_cpu(value: object) -> object:
    """`value` with each tensor in it (in lists, tuples and dicts, however nested) moved to the CPU."""
    import torch
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(_on_cpu(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    return value


def results_list(results: object, count: int, task: str) -> list:
    """The results a hidden test handed in, as a list of `count` entries (one per case), or AssertionError saying
    what came instead: the first line of every check, so that wrong results never raise anything else."""
    from utils.grading import check_int, check_type
    check_type(results, list, f"{task}: the results handed in")
    check_int(len(results), count, f"{task}: how many results were handed in")
    return results


def remember_expected(key: str, value: object) -> None:
    """Use `value` as the expected results of `key` (computed once per grading run by the grader's trusted child)."""
    _expected[key] = value


def check(key: str, results: object) -> None:
    """AssertionError (with a hint) unless `results` are what a correct solution gives on the cases of `key`."""
    test = hidden_test(key)
    try:
        test.check(cases(key), expected(key), results)
    except AssertionError as error:
        if test.varies and "\nHint:" not in f"\n{error}":
            raise AssertionError(f"{error}\nHint: your code passes the visible tests but not every hidden case; "
                                 f"they vary {test.varies}.") from None
        raise


@dataclass(frozen=True)
class NapkinTest(HiddenTest):
    """The hidden test of a napkin-math question (utils/napkin.py), with what its text must state: the unit of its
    answer and its tolerance (tests/test_napkin.py checks the text against them)."""
    unit: str = ""
    tolerance: object = None


# A unit prefix off (k, M, G, T are powers of 1,000): named unless a question's own slip has that factor.
PREFIX_SLIPS = [(1e3, "a unit prefix off by one step (k, M, G, T: a factor of 1,000), as with TFLOP/s read as 10^9?"),
                (1e-3, "a unit prefix off by one step (k, M, G, T: a factor of 1,000), as with TFLOP/s read as 10^15?"),
                (1e6, "a unit prefix off by two steps (a factor of 10^6)?"), (1e-6, "a unit prefix off by two steps (a factor of 10^6)?")]


def _amount(value: float) -> str:
    return f"{value:,}" if float(value).is_integer() and abs(value) < 1e18 else f"{value:.4g}"


def quantity_slips(answer: Callable[..., float], values: dict[str, float],
                   words: dict[str, str]) -> list[tuple[float, str]]:
    """The factors single slips of the answer's quantities give (issue #61), generated from `answer` itself rather than
    listed: each quantity (an input of the question or a convention the answer uses) left out, counted twice or used
    the wrong way round, one power too few or too many of a quantity that enters squared or cubed, and the whole
    quotient upside down. `words` names a quantity (default: its name in words, with its value)."""
    expected = float(answer(**values))
    found: list[tuple[float, str]] = []

    def ratio(name: str, value: float) -> float | None:
        try:
            got = float(answer(**{**values, name: value}))
        except ZeroDivisionError:
            return None
        return got / expected if math.isfinite(got) and got > 0 else None

    for name, value in values.items():
        if type(value) not in (int, float) or value in (0, 1):
            continue
        said = words.get(name, f"the {name.replace('_', ' ')} ({_amount(value)})")
        left_out = ratio(name, 0)
        if left_out is not None:   # a term of a sum
            found += [(left_out, f"{said} left out?"), (ratio(name, 2 * value) or 1, f"{said} counted twice?")]
            continue
        doubled = ratio(name, 2 * value)
        exponent = round(math.log2(doubled)) if doubled else 0
        if not doubled or exponent == 0 or abs(math.log2(doubled) - exponent) > 1e-9:
            continue
        found += [(value ** -exponent, f"{said} left out?"), (value ** exponent, f"{said} used twice?"),
                  (value ** (-2 * exponent), f"{said} the wrong way round (multiplied where it divides, or divided "
                                             "where it multiplies)?")]
        if abs(exponent) > 1:
            sign = 1 if exponent > 0 else -1
            power = f"it enters to the power {abs(exponent)}"
            found += [(value ** -sign, f"one power of {said} too few ({power})?"),
                      (value ** sign, f"one power of {said} too many ({power})?")]
    if expected != 1:
        found.append((1 / expected**2, "the quotient upside down (what divides multiplied, and what multiplies "
                                       "divided)?"))
    return [(factor, words) for factor, words in found if factor > 0 and factor != 1]


def napkin_test(inputs: dict[str, object], answer: Callable[..., float], what: str, unit: str, tolerance,
                slips: dict[float, str] | None = None, conventions: dict[str, tuple[float, str]] | None = None,
                words: dict[str, str] | None = None) -> NapkinTest:
    """The hidden test of a napkin question: its cases are the inputs its text states, as (name, value) pairs (no
    answer and no step of one in them: they reach the student's process); its expected value is
    `answer(**inputs, **conventions)`, computed here, never typed in; `conventions` are the quantities the answer uses
    that the text leaves to the lecture (the 2 bytes of a bf16 number), name -> (value, what it is in words), and stay
    here. Its check is utils.napkin.check_napkin within `tolerance`, naming the slips an answer's factor matches: the
    hand-written `slips` (units and the question's own traps) first, then those `quantity_slips` generates."""
    from utils.napkin import check_napkin

    conventions = conventions or {}
    values = {**inputs, **{name: value for name, (value, _) in conventions.items()}}
    named = {**{name: said for name, (_, said) in conventions.items()}, **(words or {})}
    table = list((slips or {}).items())   # the hand-written ones say it better where they have the factor
    table += [(factor, words) for factor, words in quantity_slips(answer, values, named)
              if all(abs(factor / f - 1) > 1e-9 for f, _ in (slips or {}).items())]
    table += [(factor, words) for factor, words in PREFIX_SLIPS if all(abs(factor / f - 1) > 1e-6 for f, _ in table)]

    def check(cases, expected, results) -> None:
        check_napkin(results, expected, what, unit, tolerance, table)
    return NapkinTest(lambda: tuple(inputs.items()), lambda cases: float(answer(**dict(cases), **{
        name: value for name, (value, _) in conventions.items()})), check, unit=unit, tolerance=tolerance)


from autograder.protocol import CostBudget  # typed: the checker sends each one to the grader


def budgets(key: str) -> list[CostBudget]:
    """The cost budgets of hidden test `key` (`COST_BUDGETS` in its reference module), in order; [] if none."""
    match = KEY.match(key)
    if not match:
        return []
    module = importlib.import_module(f"reference.{match.group(1)}")
    return [budget for budget in getattr(module, "COST_BUDGETS", ()) if budget.key == key]
