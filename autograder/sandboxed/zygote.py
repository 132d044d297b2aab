"""Runs as the grader's user in a fresh interpreter that never read the course: the clean parent of every notebook.

    grader --exec--> zygote --fork--> builder (walls, as root: an unprivileged uid) --fork--> notebook (PID 1)

The grader starts it with `python -I` (no PYTHONPATH, no user site) from its own checkout and a clean environment, before it reads
anything a student must not see. The zygote imports what the course's notebooks import (named in Init: torch,
`utils` and the rest for this course; nothing heavy for a course that uses none of them) and what the executor needs
(IPython), so that a notebook process is a fork that starts warm, then waits for Spawn requests on its control socket. Its memory holds
nothing of the course: no source notebook, roster, gradebook URL, other students' names, results or hidden cases.
The cells and the cases go straight from the grader to the notebook process over its own pipes.

Each Spawn comes with three descriptors: the notebook's requests (read end), its replies (write end) and a status
socket, on which the builder sends Started (with a pidfd of the notebook process) and, when it ends, Exited.
"""
from __future__ import annotations

import fcntl
import importlib
import os
import pwd
import re
import signal
import socket
import sys
import traceback
from pathlib import Path

from autograder import heap
from autograder.limits import Limits
from autograder.protocol import (
    KEPT_ENVIRONMENT,
    Exited,
    Init,
    Message,
    ProtocolError,
    Spawn,
    StartChecker,
    Started,
    StartupFailed,
)
from autograder.sandboxed import executor, walls, watch

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the zygote imports beside the modules the course imports (issue #63: a course that never imports torch gets
# no torch; the tests grade such a course some forty times). Some imports rebind attributes of modules the tests
# rely on (loading torch._dynamo, as FlopCounterMode does on first use, replaces torch.manual_seed); doing them here,
# before the executor's guard records them, keeps a correct solution from looking like tampering. So whenever a
# package is loaded at all, the companions listed for it are loaded with it.
# Some are imported by their package only when first needed, in every notebook process that needs them, seen under
# py-spy grading exercise 4: jaxtyping's printer of a refused call's arguments (wadler_lindig, whose import reads
# package metadata), beartype's table of violation messages, torch's schema check mode, einops' torch backend.
COMPANIONS = {
    "torch": ("torch._dynamo", "torch.func", "torch.amp", "torch.utils.flop_counter", "torch.testing",
              "torch._subclasses.schema_check_mode"),
    "numpy": ("numpy.testing",),
    "jaxtyping": ("wadler_lindig",),
    "beartype": ("beartype._check.error._errmap",),
    "einops": ("einops._torch_specific",),
}
# what the executor runs cells with (IPython's shell imports its completer and the debugger's base when it starts)
ALWAYS = ("IPython.core.interactiveshell", "IPython.core.completer", "bdb", "traitlets.config")
MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
LOCKS = Path("/run/cs336-grader")  # root only: which sandbox uids a running grader holds
# Where a notebook finds the folder the grader lends it a cost budget's file in (grader/budget_files.py; utils/cost.py
# reads it): the folder is readable to this notebook alone, beside what every notebook may read.
GRADER_FILES_VARIABLE = "CS336_GRADER_FILES"


def preload(modules: list[str]) -> None:
    """Import once what the course's notebooks import (`modules`), with the companions of every package that brought
    in, and what the executor needs; each notebook process is a fork and starts warm. A module that cannot be imported
    is left for the notebook that imports it to fail on, as it would in JupyterLab."""
    if any(name.partition(".")[0] == "matplotlib" for name in modules):
        import matplotlib
        matplotlib.use("Agg")   # before pyplot picks a backend: nothing here has a display
    for name in [*ALWAYS, *modules]:
        _try_import(name)
    if "utils" in sys.modules:   # the course uses the shared module: all of it, its names bound before any fork
        for path in sorted((REPO_ROOT / "utils").glob("*.py")):
            importlib.import_module(f"utils.{path.stem}" if path.stem != "__init__" else "utils")
        utils = importlib.import_module("utils")
        for name in utils.__all__:
            getattr(utils, name)
    for package, companions in COMPANIONS.items():
        if package in sys.modules:
            for name in companions:
                _try_import(name)   # a companion another release of its package lacks is not needed
    if "torch" in sys.modules:
        import io

        import torch
        torch.save(torch.nn.Parameter(torch.zeros(1)), io.BytesIO())  # first pickling adds caches to torch's classes
        # torch.compile's first call wraps nn.Module's __init__ and __setstate__ (dynamo's generation tags): done here,
        # a student's correct use of torch.compile is not taken for tampering with nn.Module (red team, issue #63)
        from torch._dynamo.mutation_guard import install_generation_tagging_init
        install_generation_tagging_init()
    if "utils.grading" in sys.modules:
        importlib.import_module("utils.grading").warm_up()
    watch.look_at_loaded()   # no notebook's folder exists yet: nothing loaded so far comes from one


def _try_import(name: str) -> None:
    """`import name`; for `a.b` that is not a module, nothing more (it was an attribute: `from a import b`)."""
    if not MODULE_NAME.fullmatch(name):
        return
    try:
        importlib.import_module(name)
    except ImportError:
        pass


class Uids:
    """One unprivileged uid per worker slot when the zygote runs as root: no account has it, and no other grader on
    this machine holds it (a lock file each, held for the zygote's life)."""

    def __init__(self, first: int):
        self.first = first
        self.held: dict[int, int] = {}
        self.locks: list = []

    def for_slot(self, slot: int) -> int:
        if slot not in self.held:
            LOCKS.mkdir(mode=0o700, exist_ok=True)
            for uid in range(self.first, self.first + 4096):
                if uid in self.held.values() or _has_account(uid):
                    continue
                fd = os.open(LOCKS / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self.locks.append(fd)
                self.held[slot] = uid
                break
            else:
                raise walls.WallError(0, f"no free sandbox uid from {self.first}")
        return self.held[slot]


def _has_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def serve(control: socket.socket, init: Init) -> None:
    """Fork a builder for each Spawn until the grader closes the control socket."""
    readable = walls.readable_paths([Path(p) for p in init.walled], REPO_ROOT / "utils")
    uids = None
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # builders are reaped by the kernel; each reports on its socket
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 20, 3)
        if not message:
            return
        try:
            spawn = Message.parse(message)
            if isinstance(spawn, StartChecker) and len(fds) == 2:
                start_checker(*fds)
                continue
            if not isinstance(spawn, Spawn) or len(fds) != 3:
                raise ProtocolError("a Spawn with three descriptors")
            limits = Limits.from_dict(spawn.limits)
            uids = uids or Uids(limits.first_sandbox_uid)
            uid = uids.for_slot(spawn.slot) if os.geteuid() == 0 else None
        except (ProtocolError, ValueError, OSError) as error:
            _report(fds[2] if len(fds) == 3 else None, f"the zygote refused a request: {error}")
            for fd in fds:
                os.close(fd)
            continue
        if os.fork() == 0:
            build(limits, uid, readable, Path(spawn.files) if spawn.files else None, *fds)
        for fd in fds:
            os.close(fd)


def start_checker(control_fd: int, answer_fd: int) -> None:
    """Fork the run's trusted checker from this preload (torch and the course's modules, imported once for the run),
    send its pid and a pidfd on its control socket, and close this process's ends of both: no notebook forked later
    holds them (each builder closes every descriptor it was not given besides). The checker is told the run's hidden
    tests by the grader, and imports `reference`, in that child only, after the fork: neither this process nor any
    notebook process ever holds either."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _close_all_but({control_fd, answer_fd})   # this zygote's own socket to the grader among them
        from autograder.trusted.checker import serve_forked  # after the fork: the checker's alone (test_layers)
        serve_forked(control_fd, answer_fd)   # never returns
    os.close(answer_fd)
    control = socket.socket(fileno=control_fd)
    try:
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(control, [Started(pid).to_line()], [pidfd])
        finally:
            os.close(pidfd)
    except OSError:
        pass   # the grader is gone: the checker dies with this zygote
    finally:
        control.close()


def _report(status_fd: int | None, error: str) -> None:
    if status_fd is not None:
        try:
            os.write(status_fd, StartupFailed(error[-2000:]).to_line())
        except OSError:
            pass


def build(limits: Limits, uid: int | None, readable: list, files: Path | None, request_fd: int, reply_fd: int,
          status_fd: int) -> None:
    """The builder: new session, an unprivileged uid (as root), namespaces; forks the notebook (PID 1 of its
    namespace), sends its pidfd, waits for it and sends how it ended. `files`: the folder of the grader's lent files
    this notebook may read too (None: none). Never returns."""
    readable = readable + ([files] if files is not None else [])
    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _close_all_but({request_fd, reply_fd, status_fd})
        if uid is not None:
            walls.become_unprivileged(uid, readable)
        entered = walls.enter_namespaces(limits.network)
        walls.die_with_parent()
        notebook = os.fork()
        if notebook == 0:
            os.close(status_fd)
            become_notebook(limits, uid, readable, files, entered, request_fd, reply_fd)
        os.close(request_fd)
        os.close(reply_fd)
        pidfd = os.pidfd_open(notebook)
        status = socket.socket(fileno=status_fd)
        socket.send_fds(status, [Started(notebook).to_line()], [pidfd])
        os.close(pidfd)
        _, wait_status = os.waitpid(notebook, 0)
        exit_code = os.waitstatus_to_exitcode(wait_status)
        status.sendall(Exited(128 - exit_code if exit_code < 0 else exit_code).to_line())
    except BaseException:  # reported to the grader as its own failure
        _report(status_fd, traceback.format_exc())
        code = 70
    finally:
        os._exit(code)


def _close_all_but(keep: set[int]) -> None:
    """Standard streams to /dev/null, every other descriptor but `keep` closed."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    previous = 2
    for fd in sorted(keep) + [1 << 16]:
        os.closerange(previous + 1, fd)
        previous = fd


def become_notebook(limits: Limits, uid: int | None, readable: list, files: Path | None, entered: list[str],
                    request_fd: int, reply_fd: int) -> None:
    """The notebook process: its own /proc and tmpfs, a clean environment, limits, Landlock, then serve cells.
    Anything that fails before it says Ready is the grader's fault, reported as StartupFailed. Never returns."""
    try:
        walls.die_with_parent()
        work = walls.work_mount(readable)
        built = [f"uid {uid}" if uid is not None else f"uid {os.getuid()} (the grader's own, not root)"]
        if "mount" in entered:
            walls.private_mounts(work, limits.disk_mib)
            built += [f"{ns} namespace" for ns in entered] + ["own /proc", f"disk {limits.disk_mib} MiB (tmpfs)"]
        else:
            raise walls.WallError(0, "no user namespace: the notebook would share the machine's /proc and disk")
        os.chdir(work)
        for name in list(os.environ):
            if name not in KEPT_ENVIRONMENT:
                del os.environ[name]
        os.environ.update(HOME=str(work), TMPDIR=str(work), MPLCONFIGDIR=str(work), IPYTHONDIR=str(work),
                          MPLBACKEND="Agg", OMP_NUM_THREADS=str(limits.torch_threads), NBGRADER_EXECUTION="autograde")
        if files is not None:  # where a measured part finds the file a cost budget lends it (utils.cost)
            os.environ[GRADER_FILES_VARIABLE] = str(files)
        import tempfile
        tempfile.tempdir = str(work)
        if "torch" in sys.modules:   # else OMP_NUM_THREADS above caps it if the student's code imports torch
            sys.modules["torch"].set_num_threads(limits.torch_threads)
        walls.apply_rlimits(limits)
        built.append("rlimits")
        built += walls.no_huge_pages()
        gpu_files = walls.gpu_device_files()
        if gpu_files:
            built.append(walls.open_gpu())
        built += [f"landlock {w}" for w in walls.restrict_filesystem(
            readable, [work, Path(os.devnull)] + gpu_files, limits.network)]
        sys.path.append(str(work))  # the assignment's own modules, after everything else (as a kernel's cwd)
        shell = executor.make_shell()
    except BaseException:
        try:
            os.write(reply_fd, StartupFailed(traceback.format_exc()[-2000:]).to_line())
        finally:
            os._exit(71)
    try:
        executor.main(request_fd, reply_fd, limits.output_chars, built, shell)
    finally:
        os._exit(0)


def main() -> None:
    """`python -I -c ... ROOT CONTROL_FD GRADER_PID`: serve the grader that started this process."""
    root, control_fd, parent = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    walls.die_with_parent()
    if os.getppid() != parent:  # the grader ended before the line above
        os._exit(0)
    if root.resolve() not in (REPO_ROOT, REPO_ROOT / ".code"):   # the checkout, or the hub's view of its code
        raise SystemExit(f"the zygote came from {REPO_ROOT}, not from the grader's checkout {root}")
    control = socket.socket(fileno=control_fd)
    message, _, _, _ = socket.recv_fds(control, 1 << 20, 0)
    init = Message.parse(message)
    if not isinstance(init, Init):
        raise ProtocolError("the first message must be Init")
    with heap.frozen_after():   # each notebook process forked from here starts without a collector's pause on it
        preload(init.preload)
    serve(control, init)
    os._exit(0)  # nothing to flush or save: an interpreter's shutdown with torch loaded only keeps the grader waiting


if __name__ == "__main__":
    main()
