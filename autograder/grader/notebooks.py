"""Runs in the grader: starts notebook processes through the zygote and runs one notebook's plan in them, with
per-cell time limits and restarts after crashes.

    grader --Spawn--> zygote --fork--> builder --fork--> notebook process (PID 1 of its namespaces)

A cell that runs past `cell_seconds`, exhausts its memory or kills its process is marked failed with the reason; a
fresh process then re-runs the cells before it (skipping the ones that crashed) and goes on, at most `max_restarts`
times and within `notebook_seconds` in all. A process that cannot be started (before it says Ready, no student code
has run in it) is the grader's fault: GraderFault, never charged to the student.
"""
from __future__ import annotations

import base64
import json
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from autograder import cgroups
from autograder.course import import_root
from autograder.errors import GraderError
from autograder.forked import Adopted
from autograder.grader import cost
from autograder.grader.budget_files import BudgetFiles, Lent
from autograder.grader.plan import CellRun, Plan
from autograder.limits import Limits
from autograder.outcome import CellKind, Failure
from autograder.protocol import (
    KEPT_ENVIRONMENT,
    CellRequest,
    CellResult,
    CostBudget,
    Exited,
    Files,
    Init,
    Message,
    ProtocolError,
    Ready,
    Spawn,
    StartChecker,
    Started,
    StartupFailed,
)

START_SECONDS = 60  # for a notebook process to say Ready (many starting at once on a loaded machine)
STARVED_FACTOR = 4  # a cell's wall time may stretch to this many times its limit while it waits for a CPU (issue #49)
HANDIN_LIMIT_BYTES = 8 * 2**20  # utils.handin's (a test checks they agree): what a hidden test may hand in


class GraderFault(GraderError):
    """The grader could not run a submission (a notebook process that could not start, a zygote gone): never the
    student's fault; the submission is left NOT GRADED with this message, and not remembered. Raised out of a whole
    run (the walls' probe), nobody was graded."""
    context = "the sandbox could not start a notebook process on this machine; nobody was graded: "


class MachineShort(GraderFault):
    """The machine or the grader's cgroup, not the student, was short (issue #49): the kernel killed the notebook
    process for want of memory, or the process waited for a CPU longer than it ran; NOT GRADED, never cached."""


class Died(Exception):
    """The notebook process ended or stopped answering (the student's code did it); the message says how, `failure`
    what kind of failure it is (Failure.TIMEOUT or Failure.CRASH)."""

    def __init__(self, message: str, failure: Failure):
        super().__init__(message)
        self.failure = failure


def failed(error: str, failure: Failure) -> CellRun:
    """The run of a cell that did not run to completion (a crash, a time-out, never run)."""
    return CellRun(False, error=error, failure=failure)


def cell_failure(reply: CellResult) -> Failure | None:
    """Why a cell the notebook process ran failed (None: it passed): the tests' tools changed under them, a syntax
    error (the notebook process says so: CellResult.syntax), or any other exception or failed check."""
    if reply.tampered:
        return Failure.TAMPERED
    if reply.ok:
        return None
    return Failure.SYNTAX if reply.syntax else Failure.ERROR


class Zygote:
    """The grader's handle on the zygote process (autograder/sandboxed/zygote.py), started before anything secret
    is read; `walled`: paths no notebook may read; `preload`: the modules the course imports (Course.imports)."""

    def __init__(self, walled: list[Path], preload: list[str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        environment = {name: os.environ[name] for name in KEPT_ENVIRONMENT if name in os.environ}
        # -I: no PYTHONPATH, no user site, no current folder; the course's own code first, as in the grader (from the
        # hub's root-owned view of it where there is one: course.import_root)
        start = "import sys; sys.path.insert(0, sys.argv[1]); from autograder.sandboxed.zygote import main; main()"
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", start, str(import_root()), str(theirs.fileno()), str(os.getpid())],
            env=environment, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, cwd="/",
            process_group=0)  # out of the terminal's group: a Ctrl-C is the grader's to handle, not the zygote's
        self.owner = os.getpid()
        self.memory = cgroups.memory_events()  # to name memory if the kernel kills the zygote (issue #49)
        self.files = BudgetFiles()  # the files it lends its notebooks for measured parts (issue #60)
        theirs.close()
        self.control = ours
        self.control.sendall(Init([str(p) for p in walled], preload).to_line())

    def spawn(self, slot: int, limits: Limits, descriptors: list[int], files: Path | None = None) -> None:
        try:
            socket.send_fds(self.control, [Spawn(slot, limits.as_dict(), str(files or "")).to_line()], descriptors)
        except OSError as error:
            raise GraderFault(f"the grader's zygote is gone ({error}){cgroups.out_of_memory_note(self.memory)}; "
                              "grade again") from None

    def start_checker(self, keys: list[str], theirs: socket.socket, ours: socket.socket, seconds: float) -> Adopted:
        """The run's trusted checker, forked by the zygote once its preload is done (trusted/checker.py's Forker):
        `theirs`, the checker's end of its control socket, is sent and closed here; the zygote says Started, with a
        pidfd, on `ours` within `seconds`; then the checker itself is sent `keys` on `ours` (the zygote never sees
        them)."""
        read_fd, write_fd = os.pipe()
        try:
            socket.send_fds(self.control, [StartChecker().to_line()], [theirs.fileno(), write_fd])
            ours.settimeout(seconds)
            message, fds, _, _ = socket.recv_fds(ours, 1 << 16, 1)
            started = Started.parse(message)
            ours.sendall(json.dumps(keys).encode())
        except (OSError, ProtocolError) as error:   # a zygote gone (its ends closed, or none) or one answering nonsense
            os.close(read_fd)
            raise GraderFault(f"the grader's zygote did not start the checker ({error or 'it is gone'})"
                              f"{cgroups.out_of_memory_note(self.memory)}; grade again") from None
        finally:
            os.close(write_fd)
            theirs.close()
            ours.settimeout(None)
        if not isinstance(started, Started) or len(fds) != 1:
            os.close(read_fd)
            for fd in fds:
                os.close(fd)
            raise GraderFault("the grader's zygote did not say which process the checker is; grade again")
        return Adopted(started.pid, fds[0], read_fd)

    def close(self) -> None:
        """Stop the zygote now, even mid-start (a run that found nothing to grade): it holds nothing to save, and
        the notebook processes it made are already gone. Only the grader that started it stops it, never a forked
        child of the grader."""
        self.control.close()
        if os.getpid() == self.owner:
            self.process.kill()
            self.process.wait()
            self.files.close()


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a request with cases can be larger than a pipe's buffer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class NotebookProcess:
    """One sandboxed process that runs cells on request."""

    def __init__(self, zygote: Zygote, slot: int, limits: Limits):
        self.limits, self.slot, self.lender = limits, slot, zygote.files
        self.folder = zygote.files.folder(slot)  # where it finds the files the grader lends it
        request_r, self.request_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        self.status, status_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.pidfd: int | None = None
        self.given_back = 0.0  # seconds of wall time given back for waiting on a CPU (_read_reply)
        self.buffer = b""
        try:
            zygote.spawn(slot, limits, [request_r, reply_w, status_theirs.fileno()], self.folder)
        finally:
            os.close(request_r)
            os.close(reply_w)
            status_theirs.close()
        try:
            self._started()
        except GraderFault:
            self.kill()
            raise

    def _started(self) -> None:
        """Wait for the builder's Started (with the pidfd) and the notebook's Ready; GraderFault otherwise."""
        self.status.settimeout(START_SECONDS)
        try:
            message, fds, _, _ = socket.recv_fds(self.status, 1 << 16, 1)
        except (OSError, socket.timeout) as error:
            raise GraderFault(f"the notebook process could not be started ({error})") from None
        try:
            started = Message.parse(message)
        except ProtocolError:
            started = None
        if isinstance(started, StartupFailed):
            raise GraderFault(f"the notebook process could not be started: {_last_line(started.error)}")
        if not isinstance(started, Started) or len(fds) != 1:
            raise GraderFault("the notebook process could not be started (no word from its builder)")
        self.pidfd = fds[0]
        try:
            ready = self._read_message(START_SECONDS)
        except Died as died:
            raise GraderFault(f"the notebook process could not be started: {died}") from None
        if isinstance(ready, StartupFailed):
            raise GraderFault(f"the notebook process could not be started: {_last_line(ready.error)}")
        if not isinstance(ready, Ready):
            raise GraderFault("the notebook process could not be started (it did not say Ready)")
        self.walls = ready.walls

    def _read_message(self, seconds: float) -> Message:
        """The next line from the notebook, parsed; Died if it ends, is late, floods or writes something else."""
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Died(f"the cell ran longer than {seconds:g} s and was stopped", Failure.TIMEOUT)
            ready, _, _ = select.select([self.reply_r], [], [], left)
            if ready:
                chunk = os.read(self.reply_r, 1 << 16)
                if not chunk:
                    raise Died(self._exit_reason(), Failure.CRASH)
                self.buffer += chunk
                if len(self.buffer) > 4 * self.limits.output_chars + 2 * HANDIN_LIMIT_BYTES + (1 << 20):
                    raise Died("the notebook process flooded the grader's channel", Failure.CRASH)
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            return Message.parse(line)
        except ProtocolError:
            raise Died("the notebook wrote to the grader's channel (its result was not trusted)", Failure.CRASH) from None

    def _request(self, request: Files | CellRequest, seconds: float) -> CellRun:
        try:
            _write_all(self.request_w, request.to_line())
        except OSError:
            raise Died("the notebook process had already exited", Failure.CRASH) from None
        reply = self._read_reply(seconds)
        if not isinstance(reply, CellResult) or reply.id != request.id or self.buffer:
            raise Died("the notebook wrote to the grader's channel (its result was not trusted)", Failure.CRASH)
        return CellRun(reply.ok, reply.output, reply.error, tuple(reply.restored), tuple(reply.tampered), reply.line,
                       reply.handed, cell_failure(reply), ran=tuple(reply.ran[:20]), ename=reply.ename)

    def _read_reply(self, seconds: float) -> Message:
        """The reply within `seconds` of the notebook process's own time: the time its threads waited for a CPU (the
        kernel's run-queue delay, /proc/PID/task/*/schedstat: other processes, or the cgroup's CPU quota used up) is
        given back, until the wall time reaches STARVED_FACTOR x `seconds`. MachineShort, not Died, when the machine
        was short: the process still waited for a CPU then, or it died while the kernel's OOM killer acted in this
        cgroup (its memory limit, not the notebook's own, ran out)."""
        pid = cgroups.pid_of(self.pidfd) if self.pidfd is not None else None
        before, memory = (cgroups.cpu_clock(pid) if pid else None), cgroups.memory_events()
        try:
            return self._reply_in_own_time(seconds, pid, before, memory)
        finally:
            after = cgroups.cpu_clock(pid) if pid and before else None
            if before is not None and after is not None:  # the notebook's own deadline moves by the same
                self.given_back += min(after.waiting - before.waiting, STARVED_FACTOR * seconds)

    def _reply_in_own_time(self, seconds: float, pid: int | None, before: cgroups.CpuClock | None,
                           memory: cgroups.MemoryEvents) -> Message:
        started, wait, timed_out = time.monotonic(), seconds, None
        while True:
            try:
                return self._read_message(wait)
            except Died as died:
                if died.failure is not Failure.TIMEOUT:  # only the cell's own time-out is owed the wait back
                    _check_memory(memory, died)
                    raise
                timed_out = timed_out or died
            now = cgroups.cpu_clock(pid) if pid else None
            if before is None or now is None:
                raise timed_out
            elapsed, waited = time.monotonic() - started, now.waiting - before.waiting
            owed = seconds + waited - elapsed  # the process's own time still due: wall time less its wait for a CPU
            if owed <= 0.01:
                raise timed_out
            if elapsed >= STARVED_FACTOR * seconds:
                raise MachineShort(f"the machine was short of CPU, not the student: in {elapsed:.1f} s the notebook "
                                   f"process ran {now.on_cpu - before.on_cpu:.1f} s and waited {waited:.1f} s for a "
                                   f"CPU (other processes, or this job's CPU quota of {_quota()}); grade again with "
                                   "fewer --workers or more CPUs") from None
            wait = min(owed, STARVED_FACTOR * seconds - elapsed)

    def files(self, files: dict[str, bytes]) -> None:
        """Give the notebook the assignment's files (its working folder starts empty)."""
        if files:
            encoded = {name: base64.b64encode(data).decode() for name, data in files.items()}
            result = self._request(Files(secrets.token_hex(8), encoded), START_SECONDS)
            if not result.ok:
                raise GraderFault(f"the assignment's files could not be given to the notebook: {result.error}")

    def run(self, kind: CellKind, code: str, seconds: float, cases: dict[str, str] | None = None,
            watch: list[str] | None = None) -> CellRun:
        """Run one cell (a test cell with the encoded cases of its hidden tests, and its task rule's watch); its
        result, or Died if the process dies, times out or answers out of turn."""
        return self._request(CellRequest(secrets.token_hex(8), kind, code, cases or {}, watch or []), seconds)

    def lend(self, name: str, tokens: int) -> tuple[Lent | None, str]:
        """Lend this notebook a cost budget's file (grader/budget_files.py): (the file, '') or (the file or None, why
        its reads are not counted here). GraderFault when the grader cannot write or link it."""
        if self.folder is None:
            return None, self.lender.broken or "the grader has no folder to lend files in"
        try:
            return self.lender.lend(self.slot, name, tokens)
        except OSError as error:
            raise GraderFault(f"the grader could not lend the notebook the file of a cost budget ({error}); "
                              "grade again") from None

    def take_back(self, lent: Lent) -> None:
        self.lender.take_back(lent)

    def _exit_reason(self) -> str:
        """How the notebook process ended, from its builder's Exited."""
        code = None
        self.status.settimeout(10)
        try:
            message = self.status.recv(1 << 16)
            exited = Message.parse(message) if message else None
            code = exited.code if isinstance(exited, Exited) else None
        except (OSError, socket.timeout, ProtocolError):
            pass
        if code is None:
            return "the notebook process ended (how is unknown)"
        if code > 128:
            number = code - 128
            name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else number
            return f"the notebook process was killed by signal {name} (a crash, or a memory or CPU limit)"
        return f"the notebook process exited with code {code} (os._exit or a crash)"

    def kill(self) -> None:
        """Stop the process and everything it started (its PID namespace dies with it), and wait for its builder."""
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.pidfd)
            self.pidfd = None
            self.status.settimeout(10)
            try:
                while self.status.recv(1 << 16):
                    pass
            except (OSError, socket.timeout):
                pass
        for fd in (self.request_w, self.reply_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.request_w = self.reply_r = -1
        self.status.close()


def _quota() -> str:
    quota = cgroups.cpu_quota()
    return "no quota" if quota is None else f"{quota:g} CPU(s)"


def _check_memory(before: cgroups.MemoryEvents, died: Exception) -> None:
    """MachineShort when the kernel's OOM killer acted in this cgroup since `before` (the notebook's own memory
    limit is an address-space limit, which fails an allocation inside the student's code instead of killing)."""
    killed = cgroups.oom_kills_since(before)
    if killed:
        raise MachineShort(f"the machine ran out of memory, not the student: {killed} while this notebook ran "
                           f"({died}); grade again with fewer --workers or more memory") from None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no reason given"


def within_budget(results: list[CellRun], budget: int) -> list[CellRun]:
    """The results with their output cut to `budget` characters for the whole notebook, in cell order (issue #48:
    4,000 cells each at the per-cell cap made one submission write a gigabyte); a cut says so. Error text is kept
    whole: the grader reads each cell's verdict from it."""
    left, kept = budget, []
    for result in results:
        text = result.output
        if len(text) > left:
            result = replace(result, output=text[:left] + f"\n[... {len(text) - left:,} more characters dropped: the "
                                                          f"notebook's output budget of {budget:,} characters is used up]")
        left -= min(len(text), left)
        kept.append(result)
    return kept


def run_plan(plan: Plan, limits: Limits, zygote: Zygote, slot: int, files: dict[str, bytes] | None = None,
             cases: dict[str, str] | None = None, budgets: dict[str, list[CostBudget]] | None = None,
             watches: dict[str, list[str]] | None = None) -> list[CellRun]:
    """Every cell's run, in order. `files`: the assignment's files for the working folder; `cases`: the encoded cases
    of the hidden tests (key -> JSON text); `budgets`: the cost budgets by hidden test key (from the trusted checker;
    each measured on its test cell's hidden calls, autograder/grader/cost.py); `watches`: a rule-bound test cell's
    watch, by its grade_id (grader/rules.py). GraderFault when a notebook process cannot be started, or a budget's
    file cannot be lent."""
    cases = cases or {}
    results: list[CellRun | None] = [None] * len(plan.cells)
    crashed: set[int] = set()
    deadline = time.monotonic() + limits.notebook_seconds
    restarts = 0
    while True:
        process = None
        try:
            process = NotebookProcess(zygote, slot, limits)
            process.files(files or {})
            for index, cell in enumerate(plan.cells):
                if index in crashed:
                    continue
                left = deadline + process.given_back - time.monotonic()  # time waited for a CPU is given back
                if left <= 0:
                    raise Died(f"the notebook ran past its {limits.notebook_seconds:g} s limit", Failure.TIMEOUT)
                started = time.monotonic()
                own_cases = {key: cases[key] for key in cell.hidden_keys if key in cases}
                costed = cost.budgets_of(cell, budgets or {})  # measured from outside (issues #52, #60)
                try:
                    watch = (watches or {}).get(cell.grade_id) if cell.kind is CellKind.TEST else None
                    result = cost.run_measured(process, cell, costed, min(limits.cell_seconds, left), own_cases,
                                               watch) if costed else \
                        process.run(cell.kind, cell.code, min(limits.cell_seconds, left), own_cases, watch)
                except Died as died:
                    results[index] = replace(failed(str(died), died.failure), seconds=round(time.monotonic() - started, 3))
                    crashed.add(index)
                    raise
                results[index] = replace(result, seconds=round(time.monotonic() - started, 3))  # for the instructor
            return within_budget(results, limits.notebook_output_chars)  # type: ignore[arg-type]
        except Died as died:
            restarts += 1
            if restarts > limits.max_restarts or deadline - time.monotonic() <= 0:
                reason = f"not run: {died}" if deadline - time.monotonic() <= 0 else \
                    f"not run: the notebook process was restarted {limits.max_restarts} times already"
                return within_budget([r or failed(reason, Failure.NOT_RUN) for r in results],
                                     limits.notebook_output_chars)
        finally:
            if process is not None:
                deadline += process.given_back
                process.kill()
