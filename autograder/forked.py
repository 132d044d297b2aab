"""Runs in the grader: the one way it runs a function in a forked child of its own and gets a JSON-able answer back.

Used for the grader's own work only (the trusted checker, recording assignments, the grading workers); a student's
code never runs in such a child (notebooks come from the zygote, autograder/sandboxed/zygote.py). The child's answer
comes back over a pipe, so the parent knows exactly what happened: an answer, an error (the child's traceback), a
child that died without answering, or one that ran past its time. A child may answer early and go on working
(`Child(work, serves=True)`: the trusted checker answers with the cases, then serves verdicts).
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
import traceback
from typing import Any, Callable

PR_SET_PDEATHSIG = 1


def fork_ignoring_interrupts() -> int:
    """os.fork(), with a child that ignores SIGINT from its first instruction on.

    A Ctrl-C goes to the terminal's whole process group: the grader and every child it forked. It is the grader's to
    handle (it stops the run and says so, autograder/grade.py); a child that raised KeyboardInterrupt would instead
    report a failure the grader would charge to itself (NOT GRADED), and one interrupted in the instant after the fork,
    before it reaches its own code, would run on as a copy of the grader, stopping the grader's zygote on its way out
    (issue #49). So SIGINT is held across the fork: the child ignores it before letting it in; the parent gets it
    (KeyboardInterrupt) as soon as the fork returns."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


def class_name(kind: type) -> str:
    """A class's name as a traceback shows it: `MemoryError`, `autograder.trusted.checker.CourseError`."""
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


class ChildFailed(Exception):
    """The child raised (the message is its traceback; `raised`, the names of the exception's class and of its bases,
    class_name's; `said`, what the exception itself said, its str), died without an answer, or ran past its time
    (`raised` is then () and `said` "")."""

    def __init__(self, message: str, raised: tuple[str, ...] = (), said: str = ""):
        super().__init__(message)
        self.raised, self.said = raised, said

    def raised_a(self, kind: type[BaseException]) -> bool:
        """Whether the child raised a `kind` (an instance of it or of a subclass), as `except kind` would catch it."""
        return class_name(kind) in self.raised


class Child:
    """A forked child running `work()` (or, with `serves`, `work(answer)`, which answers and may go on); read its
    answer with `pump()` (non-blocking) until `done`."""

    def __init__(self, work: Callable, serves: bool = False):
        read_fd, write_fd = os.pipe()
        self.pid = fork_ignoring_interrupts()
        if self.pid == 0:
            os.close(read_fd)
            serve_child(work, write_fd, serves)
        os.close(write_fd)
        self.fd, self.done, self.serves = read_fd, False, serves
        self.chunks: list[bytes] = []
        self.status: int | None = None

    def fileno(self) -> int:
        return self.fd

    def pump(self) -> None:
        """Read what the child has written; at the end of its answer, `done`."""
        chunk = os.read(self.fd, 1 << 20)
        if chunk:
            self.chunks.append(chunk)
            return
        os.close(self.fd)
        self.done = True
        if not self.serves:  # it exits right after answering: reap it now
            self.wait()

    def wait(self) -> None:
        """Reap the child (it has answered, or been killed)."""
        if self.status is None:
            _, self.status = os.waitpid(self.pid, 0)

    def kill(self) -> None:
        """Stop the child, whatever it is doing, and reap it."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not self.done:
            os.close(self.fd)
            self.done = True
        self.wait()

    def answer(self) -> Any:
        """The child's answer (as JSON decodes it); ChildFailed if it raised or died without one."""
        try:
            reply = json.loads(b"".join(self.chunks))
        except ValueError:
            self.wait()
            code = os.waitstatus_to_exitcode(self.status) if self.status is not None else None
            raise ChildFailed(f"the child process died without an answer (exit status {code})") from None
        if "error" in reply:
            raise ChildFailed(reply["error"], tuple(reply["raised"]), reply["said"])
        return reply["ok"]


def serve_child(work: Callable, write_fd: int, serves: bool) -> None:
    """In the child: die with the parent, run `work`, answer on `write_fd` (or send its traceback), exit. Never
    returns. Child's side; also that of a child another process forked for this one (Adopted)."""
    answered = False

    def answer(value: object) -> None:
        nonlocal answered
        view = memoryview(json.dumps({"ok": value}).encode())
        while view:
            view = view[os.write(write_fd, view):]
        os.close(write_fd)
        answered = True

    code = 0
    try:
        import ctypes
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        try:
            if serves:
                work(answer)
            else:
                answer(work())
        except BaseException as error:  # the parent decides what it means
            if not answered:
                view = memoryview(json.dumps({"error": "".join(traceback.format_exception(error)).strip(),
                                              "raised": [class_name(k) for k in type(error).__mro__],
                                              "said": str(error)}).encode())
                while view:
                    view = view[os.write(write_fd, view):]
            code = 1
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class Adopted(Child):
    """A child another process forked on this one's behalf (the zygote forks the run's trusted checker from its
    preload, autograder/sandboxed/zygote.py): its pid, a pidfd to stop it by (its pid may be reused once it is gone),
    and the read end of its answer's pipe. Read as a Child; its own parent reaps it."""

    def __init__(self, pid: int, pidfd: int, read_fd: int):   # forks nothing: Child.__init__ would
        self.pid, self.pidfd, self.fd, self.done, self.serves = pid, pidfd, read_fd, False, True
        self.chunks = []
        self.status = None

    def wait(self) -> None:
        """Nothing to reap: its parent does."""

    def kill(self) -> None:
        """Stop the child, whatever it is doing (through its pidfd), and close what this process holds of it."""
        if self.pidfd >= 0:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.pidfd)
            self.pidfd = -1
        if not self.done:
            os.close(self.fd)
            self.done = True


def call_in_child(work: Callable[[], object], seconds: float) -> object:
    """`work()` run in a forked child: its JSON-able answer, or ChildFailed."""
    child = Child(work)
    deadline = time.monotonic() + seconds
    try:
        while not child.done:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([child], [], [], left)[0]:
                raise ChildFailed(f"ran longer than {seconds:g} s")
            child.pump()
    finally:
        child.kill() if not child.done else child.wait()
    return child.answer()
