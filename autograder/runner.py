"""Run one notebook's plan in a sandboxed process: per-cell time limits, restarts after crashes.

The grader's process has already imported torch, IPython and the course's `utils`; each notebook process is a
fork of it, so starting one costs milliseconds instead of a kernel start plus `import torch`.

    grader (trusted) --fork--> wall builder --unshare, fork--> notebook process (PID 1 of its namespace)

A cell that runs past `cell_seconds`, exhausts its memory or kills its process is marked failed with the
reason; a fresh process then re-runs the cells before it (skipping the ones that crashed) and goes on, at most
`max_restarts` times and within `notebook_seconds` in all.
"""
from __future__ import annotations

import json
import os
import secrets
import select
import signal
import sys
import time
import traceback
from pathlib import Path

from autograder import executor, sandbox
from autograder.plan import Plan
from utils.handin import HANDIN_LIMIT_BYTES


STARTUP_ERROR = ".startup-error.txt"
# What a notebook keeps of the grader's environment: the locale, and the variables that pick torch's and oneDNN's
# CPU kernels (read lazily, after the environment is cleared), so a grading run can reproduce another CPU
# (tests/test_variants.py grades under ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2).
KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "TZ", "ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a request with cases can be larger than a pipe's buffer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Died(Exception):
    """The notebook process ended or stopped answering; the message says how."""


class NotebookProcess:
    """One sandboxed process that runs cells on request."""

    def __init__(self, limits: sandbox.Limits, workdir: Path, readable: list[Path]):
        self.limits, self.workdir = limits, workdir
        request_r, self.request_w = os.pipe()
        self.reply_r, reply_w = os.pipe()
        pid_r, pid_w = os.pipe()
        self.builder = os.fork()
        if self.builder == 0:
            os.close(self.request_w), os.close(self.reply_r), os.close(pid_r)
            _build_walls_and_serve(limits, workdir, readable, request_r, reply_w, pid_w)
        for fd in (request_r, reply_w, pid_w):
            os.close(fd)
        with os.fdopen(pid_r) as f:
            text = f.read().strip()
        self.pid = int(text) if text.isdigit() else None
        self.buffer = b""
        if self.pid is None:
            self.kill()
            raise Died("the notebook process could not be started")

    def run(self, kind: str, code: str, seconds: float, cases: dict[str, str] | None = None) -> dict:
        """Run one cell (a test cell with the encoded cases of its hidden tests); its reply, or Died if the process
        dies, times out or answers out of turn."""
        request_id = secrets.token_hex(8)
        request = json.dumps({"id": request_id, "kind": kind, "code": code, "cases": cases or {}}) + "\n"
        try:
            _write_all(self.request_w, request.encode())
        except OSError:
            raise Died("the notebook process had already exited") from None
        deadline = time.monotonic() + seconds
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Died(f"the cell ran longer than {seconds:g} s and was stopped")
            ready, _, _ = select.select([self.reply_r], [], [], left)
            if ready:
                chunk = os.read(self.reply_r, 1 << 16)
                if not chunk:
                    raise Died(self._exit_reason())
                self.buffer += chunk
                if len(self.buffer) > 4 * self.limits.output_chars + 2 * HANDIN_LIMIT_BYTES + (1 << 20):
                    raise Died("the notebook process flooded the grader's channel")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or reply.get("id") != request_id or self.buffer:
            raise Died("the notebook wrote to the grader's channel (its result was not trusted)")
        return reply

    def _exit_reason(self) -> str:
        _, status = os.waitpid(self.builder, 0)
        self.builder = None
        code = os.waitstatus_to_exitcode(status)
        if code > 128:
            name = signal.Signals(code - 128).name if code - 128 in signal.Signals._value2member_map_ else code - 128
            return f"the notebook process was killed by signal {name} (a crash, or a memory or CPU limit)"
        startup = self.workdir / STARTUP_ERROR
        if code == 71 and startup.is_file():
            return f"the notebook process could not start: {startup.read_text().strip().splitlines()[-1][:300]}"
        return f"the notebook process exited with code {code} (os._exit or a crash)"

    def kill(self) -> None:
        """Stop the process and everything it started (its PID namespace dies with it)."""
        for pid in (self.pid, self.builder):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.builder:
            try:
                os.killpg(self.builder, signal.SIGKILL)  # where no PID namespace exists: the session's group
            except (ProcessLookupError, PermissionError):
                pass
            os.waitpid(self.builder, 0)
            self.builder = None
        for fd in (self.request_w, self.reply_r):
            try:
                os.close(fd)
            except OSError:
                pass


def _build_walls_and_serve(limits, workdir, readable, request_r, reply_w, pid_w) -> None:
    """In the forked child: new session and namespaces, fork the notebook process, wait for it. Never returns."""
    code = 70
    try:
        os.setsid()
        sandbox.enter_namespaces(limits.network)
        inner = os.fork()
        if inner == 0:
            os.close(pid_w)
            _become_notebook(limits, workdir, readable, request_r, reply_w)
        os.write(pid_w, f"{inner}\n".encode())
        os.close(pid_w)
        os.close(request_r), os.close(reply_w)
        _, status = os.waitpid(inner, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code
    finally:
        os._exit(code)


def _become_notebook(limits, workdir, readable, request_r, reply_w) -> None:
    """The notebook process: limits, walls, a clean environment, then serve cells. Never returns."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = {0, 1, 2, request_r, reply_w}
        for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
            if int(name) not in keep:
                try:
                    os.close(int(name))
                except OSError:
                    pass
        os.chdir(workdir)
        for var in list(os.environ):
            if var not in KEPT_ENVIRONMENT:
                del os.environ[var]
        os.environ.update(HOME=str(workdir), TMPDIR=str(workdir), MPLCONFIGDIR=str(workdir), IPYTHONDIR=str(workdir),
                          MPLBACKEND="Agg", OMP_NUM_THREADS=str(limits.torch_threads))
        import tempfile
        tempfile.tempdir = str(workdir)
        import torch
        torch.set_num_threads(limits.torch_threads)
        sandbox.apply_rlimits(limits)
        sandbox.restrict_filesystem(readable, [Path(workdir), Path(os.devnull)] + sandbox.gpu_device_files(), limits.network)
        executor.main(request_r, reply_w, limits.output_chars)
        os._exit(0)
    except BaseException:
        try:  # the grader adds the last line to the reason it reports
            (Path(workdir) / STARTUP_ERROR).write_text(traceback.format_exc())
        finally:
            os._exit(71)


def run_plan(plan: Plan, limits: sandbox.Limits, workdir: Path, readable: list[Path],
             cases: dict[str, str] | None = None) -> list[dict]:
    """Every cell's result, in order: {"ok", "output", "error", "restored", "tampered", "handed", "seconds"} (a cell
    that never ran has no "seconds"). `cases`: the encoded cases of the hidden tests (key -> JSON text)."""
    cases = cases or {}
    results: list[dict | None] = [None] * len(plan.cells)
    crashed: set[int] = set()
    deadline = time.monotonic() + limits.notebook_seconds
    restarts = 0
    while True:
        process = None
        try:
            process = NotebookProcess(limits, workdir, readable)
            for index, cell in enumerate(plan.cells):
                if index in crashed:
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Died(f"the notebook ran past its {limits.notebook_seconds:g} s limit")
                started = time.monotonic()
                try:
                    results[index] = process.run(cell.kind, cell.code, min(limits.cell_seconds, left),
                                                 {key: cases[key] for key in cell.hidden_keys if key in cases})
                except Died as died:
                    results[index] = {"ok": False, "output": "", "error": str(died), "restored": [], "tampered": [],
                                      "seconds": round(time.monotonic() - started, 3)}
                    crashed.add(index)
                    raise
                results[index]["seconds"] = round(time.monotonic() - started, 3)  # wall time: for the instructor
            return results  # type: ignore[return-value]
        except Died as died:
            restarts += 1
            if restarts > limits.max_restarts or deadline - time.monotonic() <= 0:
                reason = f"not run: {died}" if deadline - time.monotonic() <= 0 else \
                    f"not run: the notebook process was restarted {limits.max_restarts} times already"
                return [r or {"ok": False, "output": "", "error": reason, "restored": [], "tampered": []} for r in results]
        finally:
            if process is not None:
                process.kill()


def readable_paths(repo: Path, private: list[Path]) -> list[Path]:
    """What a notebook may read: Python, system libraries, /proc, /sys, /dev, /etc and the course's `utils/`; never the
    repository itself (its `source/` holds the hidden tests, its `reference/` the answers) or anything under `private`."""
    candidates = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    candidates |= {Path(p) for p in sys.path if p}
    candidates |= {Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/opt")}
    walled = [repo.resolve()] + [p.resolve() for p in private]
    allowed = set()
    for path in candidates:
        if not path.exists():
            continue
        path = path.resolve()
        inside_venv = path.is_relative_to(Path(sys.prefix).resolve()) and Path(sys.prefix).resolve() != repo.resolve()
        if any(w == path or w.is_relative_to(path) or (path.is_relative_to(w) and not inside_venv) for w in walled):
            continue
        allowed.add(path)
    allowed.add((repo / "utils").resolve())
    return sorted(allowed)
