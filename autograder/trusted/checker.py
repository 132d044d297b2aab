"""Runs in short-lived trusted children of the grader: the only code that imports the instructor's `reference`.

Why children of their own: the grader never imports `reference`, so nothing of it is in any memory a notebook could
come from (notebooks are forked from the zygote, which never sees it either). A child forked for the purpose computes
the hidden tests' cases and expected results, or checks what a submission handed in, and sends back only data.

    cases_for(keys, folder)   -> {key: encoded cases}     once per run, before any notebook runs; the expected
                                                          results are kept, pickled, in `folder` (the run's own,
                                                          which no notebook can read and no other run shares)
    verdicts(handed, folder)  -> [Verdict, ...]           once per submission, after its notebooks ran

A check that fails raises AssertionError: the student's results are wrong. Results that cannot be decoded (malformed
or crafted JSON, a dtype that may not be carried, a shape that lies) are the student's failure too. Anything else
raised while making the cases or the expected results is the course's fault (CourseError: the run stops before anyone
is graded). Anything else raised while comparing is a Verdict with `fault`: the grader's, never the student's.
"""
from __future__ import annotations

import pickle
from pathlib import Path

from autograder.forked import ChildFailed, call_in_child
from autograder.protocol import Verdict

CHECK_SECONDS = 600


class CourseError(Exception):
    """The instructor's side of a hidden test is broken (a reference module missing or failing); says which."""


def _references():
    """`reference.hidden`, imported from this checkout: one installed from another checkout (an editable install of
    another clone, say) would grade with answers that are not the course's."""
    from reference import hidden
    here = Path(__file__).resolve().parents[2] / "reference"
    if Path(hidden.__file__).resolve().parent != here:
        raise CourseError(f"the references were imported from {Path(hidden.__file__).parent}, not from this "
                          f"checkout's {here}: install the course from the checkout you grade with (make install)")
    return hidden


def _expected_file(folder: Path, key: str) -> Path:
    return folder / f"{key}.pickle"


def _in_child(work, seconds: float) -> object:
    try:
        return call_in_child(work, seconds)
    except ChildFailed as error:
        raise CourseError(f"the hidden tests' trusted side failed: {error}") from None


def cases_for(keys: list[str], folder: Path | None = None, seconds: float = CHECK_SECONDS) -> dict[str, str]:
    """{key: the encoded cases of that hidden test}; CourseError naming the key if its cases or expected results
    cannot be made. With `folder`, the expected results are computed here too and kept there (one that cannot be
    pickled is computed again by each verdict)."""
    def work() -> dict[str, str]:
        hidden = _references()
        from utils.handin import encode
        made = {}
        for key in keys:
            try:
                made[key] = encode(hidden.cases(key))
                expected = hidden.expected(key) if folder is not None else None
            except BaseException as error:  # noqa: BLE001
                raise CourseError(f"hidden test {key}: its cases or expected results could not be made: "
                                  f"{error!r}") from error
            if folder is not None:
                try:
                    data = pickle.dumps(expected)
                except Exception:  # noqa: BLE001 - not picklable: each verdict computes it
                    continue
                _expected_file(folder, key).write_bytes(data)
        return made
    return _in_child(work, seconds) if keys else {}


def verdict(hidden, key: str, text: str | None) -> Verdict:
    """The verdict on one hand-in (in the trusted child; `hidden` is reference.hidden)."""
    from utils.handin import DecodeError, decode
    if text is None:
        return Verdict(False, "AssertionError: the hidden test handed in no results (did it stop early?)", False)
    try:
        results = decode(text)
    except DecodeError as error:
        return Verdict(False, f"AssertionError: the results handed in could not be read: {error}", False)
    try:
        hidden.check(key, results)
        return Verdict(True, "", False)
    except AssertionError as error:
        return Verdict(False, f"AssertionError: {error}".strip(), False)
    except BaseException as error:  # noqa: BLE001 - the check's own failure, never the student's
        return Verdict(False, f"the grader could not check these results ({error.__class__.__name__}: "
                              f"{str(error)[:200]}); an instructor will look at it", True)


def verdicts(handed: list[tuple[str, str | None]], folder: Path | None = None,
             seconds: float = CHECK_SECONDS) -> list[Verdict]:
    """One verdict per (key, encoded results or None when nothing was handed in), in order. Expected results come
    from `folder` where `cases_for` kept them, else are computed here."""
    def work() -> list[dict]:
        hidden = _references()
        for key in {key for key, _ in handed}:
            if folder is not None and _expected_file(folder, key).is_file():
                hidden.remember_expected(key, pickle.loads(_expected_file(folder, key).read_bytes()))
            try:
                hidden.expected(key)
            except BaseException as error:  # noqa: BLE001
                raise CourseError(f"hidden test {key}: its expected results could not be computed: {error!r}") from error
        return [verdict(hidden, key, text).__dict__ for key, text in handed]
    return [Verdict(**v) for v in _in_child(work, seconds)] if handed else []
