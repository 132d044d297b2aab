"""Runs in a trusted process of its own, forked once per run: the only code that imports the instructor's `reference`.

Why a process of its own: the grader never imports `reference`, so nothing of it is in any memory a notebook could come
from (notebooks are forked from the zygote, which never sees it either), and the grader stays light (it imports no
torch). The checker imports `reference` once, makes every hidden test's cases and expected results once, then answers
each request for verdicts in a child of its own, a fork that starts with all of that in memory: a hand-in that
crashes a check takes that child only.

Forked from where: in a grading run, from the zygote once its preload is done (`forker`: torch and the course's
modules are then imported once per run, not twice; about 2 CPU-s a run on the 2-core machine), the import of
`reference` happening in the checker alone, after the fork; without a zygote, from the grader itself.

    checker = Checker(keys[, forker=zygote])
                                        the cases, {key: encoded cases}, in checker.cases; the cost budgets of those
                                        keys (protocol.CostBudget, parsed strictly) in checker.budgets
    checker.verdicts(handed)            [Verdict, ...], one per (key, encoded results or None), from any worker

A check that fails raises AssertionError: the student's results are wrong. Results that cannot be decoded (malformed
or crafted JSON, a dtype that may not be carried, a shape that lies) are the student's failure too. Anything else
raised while making the cases or the expected results is the course's fault (CourseError: the run stops before anyone
is graded). Anything else raised while comparing is a Verdict with `fault`: the grader's, never the student's.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Protocol, cast

from autograder import cgroups, heap
from autograder.errors import GraderError
from autograder.forked import Child, ChildFailed, serve_child
from autograder.protocol import CostBudget, ProtocolError, Verdict

CHECK_SECONDS = 600


class CourseError(GraderError):
    """The instructor's side of a hidden test is broken (a reference module missing or failing); says which."""
    context = "the self-check stopped the run; nobody was graded.\n"


def _references() -> ModuleType:
    """`reference.hidden`, imported from this checkout: one installed from another checkout (an editable install of
    another clone, say) would grade with answers that are not the course's."""
    from reference import hidden
    here = Path(__file__).resolve().parents[2] / "reference"
    if Path(hidden.__file__).resolve().parent != here:
        raise CourseError(f"the references were imported from {Path(hidden.__file__).parent}, not from this "
                          f"checkout's {here}: install the course from the checkout you grade with (make install)")
    return hidden


def verdict(hidden: ModuleType, key: str, text: str | None) -> Verdict:
    """The verdict on one hand-in (in the trusted process; `hidden` is reference.hidden)."""
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
    except BaseException as error:  # the check's own failure, never the student's
        return Verdict(False, f"the grader could not check these results ({error.__class__.__name__}: "
                              f"{str(error)[:200]}); an instructor will look at it", True)


class Checker:
    """The run's trusted checker process (see the module docstring)."""

    def __init__(self, keys: list[str], seconds: float = CHECK_SECONDS, forker: Forker | None = None):
        self.seconds = seconds
        self.memory = cgroups.memory_events()  # to name memory if the kernel kills the checker (issue #62)
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        deadline = time.monotonic() + seconds
        if forker is None:   # a fork of this process, which imports torch and the references itself
            self.process: Child = Child(lambda answer: _serve(keys, theirs, answer, close=self.control), serves=True)
            theirs.close()
        else:                # a fork of the zygote, whose preload (torch, the course's modules) it shares
            try:
                self.process = forker.start_checker(keys, theirs, self.control, seconds)
            except BaseException:
                self.control.close()
                raise
        while not self.process.done:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.process], [], [], left)[0]:
                self.close()
                raise CourseError(f"the hidden tests' cases took longer than {seconds:g} s to make")
            self.process.pump()
        try:
            answered = self.process.answer()
            self.cases: dict[str, str] = answered["cases"]
            self.budgets: dict[str, list[CostBudget]] = {
                key: [cast(CostBudget, CostBudget.parse(line)) for line in lines]
                for key, lines in answered["budgets"].items()}
        except ProtocolError as error:  # a budget in reference/ that is not what CostBudget declares
            self.close()
            raise CourseError(f"a cost budget in reference/ is malformed: {error}") from None
        except ChildFailed as error:  # a CourseError says what is wrong; anything else, the line a traceback ends with
            self.close()
            said = error.said if error.raised_a(CourseError) else \
                f"{error.raised[0]}: {error.said}" if error.raised else str(error) or "it died without an answer"
            raise CourseError(said + cgroups.out_of_memory_note(self.memory)) from None

    def verdicts(self, handed: list[tuple[str, str | None]]) -> list[Verdict]:
        """One verdict per (key, encoded results or None when nothing was handed in), in order."""
        if not handed:
            return []
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(self.control, [b"check"], [theirs.fileno()])
            theirs.close()
            ours.sendall(json.dumps(handed).encode())
            ours.shutdown(socket.SHUT_WR)
            ours.settimeout(self.seconds)
            reply = b"".join(iter(lambda: ours.recv(1 << 20), b""))
        except (OSError, socket.timeout) as error:
            raise CourseError(f"the hidden tests' trusted side did not answer ({error}{self._gone()})"
                              f"{cgroups.out_of_memory_note(self.memory)}") from None
        finally:
            ours.close()
        try:
            answer = json.loads(reply)
        except ValueError:
            raise CourseError(f"the hidden tests' trusted side died while checking (a crash{self._gone()})"
                              f"{cgroups.out_of_memory_note(self.memory)}") from None
        if isinstance(answer, dict):
            raise CourseError(answer["error"])
        try:
            return [cast(Verdict, Verdict.parse(line)) for line in answer]
        except ProtocolError as error:  # the checker's own answer, read as strictly as any message
            raise CourseError(f"the hidden tests' trusted side answered something that is not a verdict: {error}") from None

    def _gone(self) -> str:
        """'; the checker process (pid N) is gone' when it is (dead, or a zombie its parent has not reaped), else ''.
        Read from /proc: the worker asking is not the checker's parent, and cannot wait for it."""
        try:
            state = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "X"
        return f"; the checker process (pid {self.process.pid}) is gone" if state in ("Z", "X") else ""

    def close(self) -> None:
        """Stop the checker now (it holds no state worth an orderly end) and reap it. Also frees the zygote, whose
        control socket the checker inherited when it was forked."""
        self.control.close()
        self.process.kill()


class Forker(Protocol):
    """What forks the checker from a preloaded process (the grader's Zygote, autograder/grader/notebooks.py): sends it
    `theirs` (the checker's end of the control socket) and returns the child once it says Started on `ours`."""

    def start_checker(self, keys: list[str], theirs: socket.socket, ours: socket.socket, seconds: float) -> Child: ...


def serve_forked(control_fd: int, answer_fd: int) -> None:
    """The checker as the zygote forks it (sandboxed/zygote.py start_checker), answering on `answer_fd` as a Child
    does; its first message on the control socket is the run's hidden tests (JSON: a list of keys), from the grader.
    Never returns. The zygote may have run torch's OpenMP pool, whose threads are not in this fork: one thread here,
    so that no operation waits at that pool's barrier (as in each verdict's child, _check)."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    control = socket.socket(fileno=control_fd)

    def work(answer: Callable[[object], None]) -> None:
        keys = json.loads(control.recv(1 << 20) or b"null")
        if type(keys) is not list or not all(type(key) is str for key in keys):
            raise CourseError(f"the checker was sent {str(keys)[:80]}, not a list of hidden tests")
        _serve(keys, control, answer)
    serve_child(work, answer_fd, serves=True)


def _serve(keys: list[str], control: socket.socket, answer: Callable[[object], None],
           close: socket.socket | None = None) -> None:
    """In the checker process: make the cases and expected results, answer with the cases and the cost budgets, then
    serve verdict requests until the grader closes the control socket. A CourseError raised here reaches the grader as
    the answer. `close`: the grader's end of the control socket, where this is a fork of the grader."""
    if close is not None:
        close.close()  # inherited by the fork: kept open here, the grader's close would never be seen
    with heap.frozen_after():   # each verdict's child, forked from here, starts without a collector's pause on it
        hidden = _references()
        from utils.handin import encode
        cases = {}
        for key in keys:
            try:
                cases[key] = encode(hidden.cases(key))
                hidden.expected(key)
            except BaseException as error:
                raise CourseError(f"hidden test {key}: its cases or expected results could not be made: {error!r}") \
                    from error
        from utils.grading import warm_up
        warm_up()  # before the first fork: each per-request child starts with what a comparison imports
    budgets = {key: [budget.to_line().decode() for budget in hidden.budgets(key)] for key in keys}
    answer({"cases": cases, "budgets": {key: lines for key, lines in budgets.items() if lines}})
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # one child per request, reaped by the kernel
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 64, 1)
        except OSError:
            return
        if not message or not fds:
            return
        if os.fork() == 0:
            _check(hidden, socket.socket(fileno=fds[0]))
        os.close(fds[0])


def _check(hidden: ModuleType, stream: socket.socket) -> None:
    """In a child of the checker: read one request, answer its verdicts, exit. Never returns."""
    import torch
    # The checker made the expected results with torch's OpenMP pool; its threads are not in this fork, and a parallel
    # op here would wait at that pool's barrier forever (a grader hung to its limit, seen under make test). One thread:
    # torch then runs every op inline, never entering an OpenMP region.
    torch.set_num_threads(1)
    try:
        request = json.loads(b"".join(iter(lambda: stream.recv(1 << 20), b"")))
        answer: list | dict = [verdict(hidden, key, text).to_line().decode() for key, text in request]
    except BaseException as error:
        answer = {"error": f"the hidden tests' trusted side failed: {error!r}"}
    try:
        stream.sendall(json.dumps(answer).encode())
    finally:
        os._exit(0)

