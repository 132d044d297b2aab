"""The grader's trusted processes: they compute the hidden tests' cases and check what students' code handed in.

Why a process of its own: every notebook process is a fork of the grader, so whatever the grader holds in memory a
student's code could find there (gc.get_objects, stack frames). The grader itself therefore never imports the
instructor's `reference` package; a short-lived child forked for the purpose does, and sends back only data: the cases
(inputs, which the student's code is called with anyway) or a verdict per hidden test.

    cases_for(keys)        -> {key: encoded cases}                 once per run, before any notebook runs
    verdicts(handed)       -> [{"ok", "error", "fault"}, ...]      once per submission, after its notebooks ran

A check that fails raises AssertionError: the student's results are wrong. Anything else raised while making the cases
or the expected results is the course's fault (CourseError: the run stops before anyone is graded). Anything else
raised while comparing is marked "fault": the task scores 0 until an instructor looks, the student is told the grader
could not check it, and the run's summary lists it.
"""
from __future__ import annotations

import json
import os
import pickle
import select
import signal
import time
import traceback
from pathlib import Path


class CourseError(Exception):
    """The instructor's side of a hidden test is broken (a reference module missing or failing); says which."""


def _in_child(work, seconds: float) -> object:
    """Run `work()` in a forked child and return its JSON-able result; CourseError if it fails or runs too long."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_fd)
            try:
                reply = {"ok": work()}
            except BaseException as error:  # noqa: BLE001 - reported to the parent as the course's fault
                reply = {"error": "".join(traceback.format_exception(error)).strip()}
            data = json.dumps(reply).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_fd, view):]
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    chunks, deadline = [], time.monotonic() + seconds
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                raise CourseError(f"the hidden tests' trusted side ran longer than {seconds:g} s")
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        raise CourseError("the hidden tests' trusted side died without an answer") from None
    if "error" in reply:
        raise CourseError(reply["error"])
    return reply["ok"]


def _references():
    """`reference.hidden`, imported from this checkout: one installed from another checkout (an editable install of
    another clone, say) would grade with answers that are not the course's."""
    from pathlib import Path
    from reference import hidden
    here = Path(__file__).resolve().parent.parent / "reference"
    if Path(hidden.__file__).resolve().parent != here:
        raise CourseError(f"the references were imported from {Path(hidden.__file__).parent}, not from this "
                          f"checkout's {here}: install the course from the checkout you grade with (make install)")
    return hidden


def _expected_file(folder: Path, key: str) -> Path:
    return folder / f"{key}.pickle"


def cases_for(keys: list[str], expected_dir: Path | None = None, seconds: float = 600) -> dict[str, str]:
    """{key: the encoded cases of that hidden test}; CourseError naming the key if its cases or expected results
    cannot be made. With `expected_dir` (a folder no notebook can read), the expected results are computed here too
    and kept there, pickled by this trusted process, so that `verdicts` computes them once per run, not per student
    (one that cannot be pickled is computed again by each verdict)."""
    def work() -> dict[str, str]:
        hidden = _references()
        from utils.handin import encode
        made = {}
        for key in keys:
            try:
                made[key] = encode(hidden.cases(key))
                if expected_dir is not None:
                    expected = hidden.expected(key)
            except BaseException as error:  # noqa: BLE001
                raise CourseError(f"hidden test {key}: its cases or expected results could not be made: "
                                  f"{error!r}") from error
            if expected_dir is not None:
                try:
                    data = pickle.dumps(expected)
                except Exception:  # noqa: BLE001 - not picklable: each verdict computes it
                    continue
                expected_dir.mkdir(parents=True, exist_ok=True)
                _expected_file(expected_dir, key).write_bytes(data)
        return made
    return _in_child(work, seconds) if keys else {}


def verdicts(handed: list[tuple[str, str | None]], expected_dir: Path | None = None, seconds: float = 600) -> list[dict]:
    """One verdict per (key, encoded results or None when nothing was handed in), in order. Expected results come
    from `expected_dir` where `cases_for` kept them, else are computed here."""
    def work() -> list[dict]:
        hidden = _references()
        from utils.handin import decode
        out = []
        for key in {key for key, _ in handed}:
            if expected_dir is not None and _expected_file(expected_dir, key).is_file():
                hidden.remember_expected(key, pickle.loads(_expected_file(expected_dir, key).read_bytes()))
        for key, text in handed:
            try:
                hidden.expected(key)
            except BaseException as error:  # noqa: BLE001
                raise CourseError(f"hidden test {key}: its expected results could not be computed: {error!r}") from error
            if text is None:
                out.append({"ok": False, "fault": False,
                            "error": "AssertionError: the hidden test handed in no results (did it stop early?)"})
                continue
            try:
                results = decode(text)
            except (ValueError, TypeError, KeyError, RecursionError) as error:
                out.append({"ok": False, "fault": False,
                            "error": f"AssertionError: the results handed in could not be read ({error.__class__.__name__})"})
                continue
            try:
                hidden.check(key, results)
                out.append({"ok": True, "fault": False, "error": ""})
            except AssertionError as error:
                out.append({"ok": False, "fault": False, "error": f"AssertionError: {error}".strip()})
            except BaseException as error:  # noqa: BLE001 - the check's own failure, never the student's
                out.append({"ok": False, "fault": True,
                            "error": f"the grader could not check these results ({error.__class__.__name__}: "
                                     f"{str(error)[:200]}); an instructor will look at it"})
        return out
    return _in_child(work, seconds) if handed else []
