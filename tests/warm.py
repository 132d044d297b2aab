"""`nbgrader ...` and `python -m autograder.X ...` for the tests, each in a fork of an interpreter that has already
imported nbgrader: `run` takes what `subprocess.run` takes and answers what it answers.

Why: a fresh interpreter spends about 1.5 of the 1.8 CPU-s an `nbgrader` command costs importing nbgrader (its package
imports its Jupyter server extensions, nbconvert, SQLAlchemy and its exchange), and the grader imports it too. The
tests run some 120 such commands; on `make test`'s two cores that was a tenth of its time (docs/tests.md).
nbgrader's own tests run its applications in their own process (`nbgrader.tests.run_nbgrader`); here each command
still gets a process of its own: a fork of a server that imported nbgrader and third-party modules only, never this
checkout's. The fork takes the command's argv, working folder, environment (whole), umask and standard streams, puts
the working folder first on `sys.path` as `python -m` does (a test that runs another checkout's grader from its
folder runs that checkout's code), runs the command's `__main__`, and exits as an interpreter does: its threads
joined, its `atexit` handlers run, its streams flushed, with the exit status `subprocess` reports (minus a signal
number when killed).

What stays different from a fresh interpreter: its /proc/PID/cmdline is the server's (nothing graded reads it; the
grader records `sys.argv`, which is the command's), and modules third-party packages imported in the server saw the
server's environment at import time (in the packages it imports, only four variables are read outside a function,
JUPYTER_ALLOW_INSECURE_WRITES, TRAITLETS_APPLICATION_RAISE_CONFIG_FILE_ERROR, TORNADO_EXTENSION and
GATEWAY_WS_PING_INTERVAL_SECS, and no test sets one). Anything else (another program, `runuser`, a command with interpreter
flags, a `Popen`) runs as a plain subprocess, unchanged. The console scripts themselves stay covered where commands
run exactly as printed (tests/test_readme_commands.py) and as students on the hub (tests/test_class_hub.py).
"""
from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

BIN = Path(sys.executable).parent
NBGRADER = BIN / "nbgrader"
# What the server imports once: nbgrader whole (its package imports the rest) and what the grader and the course's
# commands import of SQLAlchemy and alembic (autograder/database.py). Nothing of this checkout.
PRELOAD = ("nbgrader.apps", "nbgrader.api", "nbgrader.dbutil", "nbgrader.plugins", "nbgrader.converters",
           "nbgrader.exchange.default", "alembic.config", "alembic.script", "sqlalchemy.orm")
PYTHONS = ("python", "python3", f"python{sys.version_info.major}.{sys.version_info.minor}")
MESSAGE_BYTES = 1 << 20


# --- the client: the tests' side -----------------------------------------------------------------------------------

def target(args, env: dict | None) -> tuple[str, str] | None:
    """("nbgrader", "") for this environment's nbgrader, ("module", "autograder.X") for this environment's python
    with `-m autograder.X` (or `utils.X`, or `nbgrader`); None for anything else (a plain subprocess)."""
    if not isinstance(args, (list, tuple)) or not args or not all(isinstance(a, (str, os.PathLike)) for a in args):
        return None
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    program = shutil.which(str(args[0]), path=path) if os.sep not in str(args[0]) else str(args[0])
    if program is None or Path(program).parent.resolve() != BIN.resolve():
        return None
    name = Path(program).name
    if name == "nbgrader":
        return ("nbgrader", "")
    if name in PYTHONS and len(args) >= 3 and str(args[1]) == "-m" and (
            str(args[2]).split(".")[0] in ("autograder", "utils") or str(args[2]) == "nbgrader"):
        return ("module", str(args[2]))
    return None


def run(args, *, cwd=None, env=None, input=None, capture_output=False, text=None, timeout=None, check=False,
        stdout=None, stderr=None, encoding=None, errors=None, universal_newlines=None, **rest):
    """`subprocess.run(args, ...)`; forked warm when `target` names the command and no option beyond these is given."""
    kind = target(args, env)
    if kind is None or rest:
        return subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=capture_output, text=text,
                              timeout=timeout, check=check, stdout=stdout, stderr=stderr, encoding=encoding,
                              errors=errors, universal_newlines=universal_newlines, **rest)
    if capture_output:
        stdout = stderr = subprocess.PIPE
    as_text = bool(text or encoding or errors or universal_newlines)
    request = {"kind": kind[0], "module": kind[1], "argv": [str(a) for a in args],
               "cwd": str(Path(cwd or os.getcwd()).resolve()), "env": dict(env if env is not None else os.environ),
               "umask": _umask()}
    if isinstance(input, str):
        input = input.encode(encoding or "utf-8", errors or "strict")
    code, out, err = _server().run(request, stdin=input, stdout=stdout, stderr=stderr, timeout=timeout, args=args)
    if as_text:
        out, err = (_decoded(b, encoding, errors) for b in (out, err))
    done = subprocess.CompletedProcess(args, code, out, err)
    if check:
        done.check_returncode()
    return done


def _decoded(data, encoding, errors):
    if data is None:
        return None
    return data.decode(encoding or "utf-8", errors or "strict").replace("\r\n", "\n").replace("\r", "\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class _Server:
    """The server of this process: started on first use, gone with this process (its stdin is our pipe)."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="warm-")
        self.path = os.path.join(self.folder, "socket")
        code = ("import sys; sys.path.pop(0); sys.path.insert(0, sys.argv[2]); "
                "from tests.warm import serve; serve(sys.argv[1])")
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
        self.process = subprocess.Popen([sys.executable, "-c", code, self.path, str(Path(__file__).parent.parent)],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=clean, cwd="/")
        atexit.register(self.stop)

    def connect(self) -> socket.socket:
        deadline = time.monotonic() + 120
        while True:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                connection.connect(self.path)
                return connection
            except (FileNotFoundError, ConnectionRefusedError):
                connection.close()
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tests/warm.py: its server did not start (exit status {self.process.poll()})") from None
                time.sleep(0.05)

    def run(self, request: dict, stdin, stdout, stderr, timeout, args):
        """(exit status, captured stdout or None, captured stderr or None)."""
        connection = self.connect()
        streams = _Streams(stdin, stdout, stderr)
        try:
            socket.send_fds(connection, [json.dumps(request).encode()], streams.for_child())
            streams.handed_over()
            pid = int(connection.recv(64))
            if streams.writer is not None:
                threading.Thread(target=_feed, args=(streams.writer, stdin), daemon=True).start()
            status = streams.collect(connection, pid, timeout, args)
            return (status, bytes(streams.captured[1]) if stdout == subprocess.PIPE else None,
                    bytes(streams.captured[2]) if stderr == subprocess.PIPE else None)
        finally:
            connection.close()
            streams.close()

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class _Streams:
    """A command's three standard streams as `subprocess` would make them: the descriptors handed to the child, the
    read ends of its pipes here, and what came out of them."""

    def __init__(self, stdin, stdout, stderr):
        self.handed: list[int] = []    # ours to close once the server has its copies
        self.reads: dict[int, int] = {}   # read end -> 1 (stdout) or 2 (stderr)
        self.captured = {1: bytearray(), 2: bytearray()}
        self.writer = None
        if stdin is None:
            self.stdin = self._opened(os.open(os.devnull, os.O_RDONLY))
        else:
            self.stdin, self.writer = os.pipe()
            self.handed.append(self.stdin)
        self.stdout = self._stream(stdout, 1)
        self.stderr = self.stdout if stderr == subprocess.STDOUT else self._stream(stderr, 2)

    def _opened(self, fd: int) -> int:
        self.handed.append(fd)
        return fd

    def _stream(self, choice, which: int) -> int:
        if choice is None:
            return which   # this process's own, as a subprocess inherits them
        if choice == subprocess.PIPE:
            read, write = os.pipe()
            self.reads[read] = which
            return self._opened(write)
        if choice == subprocess.DEVNULL:
            return self._opened(os.open(os.devnull, os.O_RDWR))
        return choice if isinstance(choice, int) else choice.fileno()

    def for_child(self) -> list[int]:
        return [self.stdin, self.stdout, self.stderr]

    def handed_over(self) -> None:
        for fd in self.handed:
            os.close(fd)
        self.handed.clear()

    def collect(self, connection: socket.socket, pid: int, timeout, args) -> int:
        """Read the pipes to their end and the exit status off the connection; on `timeout`, kill the child and raise
        TimeoutExpired, as subprocess.run does."""
        selector = selectors.DefaultSelector()
        for read in self.reads:
            selector.register(read, selectors.EVENT_READ)
        selector.register(connection, selectors.EVENT_READ)
        deadline = None if timeout is None else time.monotonic() + timeout
        status = None
        while status is None or selector.get_map():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                _kill(pid)
                _drain(connection)
                raise subprocess.TimeoutExpired(args, timeout, bytes(self.captured[1]) or None,
                                                bytes(self.captured[2]) or None)
            for key, _ in selector.select(left):
                if key.fileobj is connection:
                    status = _ended(connection.recv(64))
                    selector.unregister(connection)
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    self.captured[self.reads[key.fd]] += chunk
                else:
                    selector.unregister(key.fd)
        return status

    def close(self) -> None:
        for fd in [*self.handed, *self.reads]:
            try:
                os.close(fd)
            except OSError:
                pass


def _ended(answer: bytes) -> int:
    """The exit status in the server's answer; the child's CPU (with what it waited for) added to FORKED_CPU."""
    global FORKED_CPU
    if not answer:
        return -signal.SIGKILL
    status, cpu = answer.split()
    with _lock:
        FORKED_CPU += float(cpu)
    return int(status)


def forked_cpu_seconds() -> float:
    """User and system CPU seconds of the commands this process ran warm, as getrusage's RUSAGE_CHILDREN would count
    them had they been its own children (tests/cpu_cost.py adds them to a test file's cost)."""
    return FORKED_CPU


def _feed(fd: int, data: bytes) -> None:
    try:
        with open(fd, "wb") as pipe:
            pipe.write(data)
    except BrokenPipeError:
        pass


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _drain(connection: socket.socket) -> None:
    connection.settimeout(30)
    try:
        connection.recv(64)
    except OSError:
        pass


_lock = threading.Lock()
_the_server: _Server | None = None
FORKED_CPU = 0.0


def _server() -> _Server:
    global _the_server
    with _lock:
        if _the_server is None or _the_server.process.poll() is not None:
            _the_server = _Server()
        return _the_server


# --- the server and its forks --------------------------------------------------------------------------------------

def serve(path: str) -> None:
    """Import PRELOAD, then fork one child per request on the socket at `path`, and answer each with the child's pid,
    then its exit status; ends when its stdin (the tests' pipe) closes."""
    for name in PRELOAD:
        importlib.import_module(name)
    base = list(sys.path[1:])   # without the folder of tests/ put first to import this module
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".new")
    os.rename(path + ".new", path)   # clients connect only once it listens
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listener")
    selector.register(sys.stdin, selectors.EVENT_READ, "lifeline")
    while True:
        for key, _ in selector.select():
            if key.data == "lifeline":
                if not os.read(sys.stdin.fileno(), 1024):
                    return
            elif key.data == "listener":
                connection, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 3)
                pid = os.fork()
                if pid == 0:
                    running = [k for k in selector.get_map().values() if isinstance(k.data, tuple)]
                    _child(json.loads(message), fds, base, [listener, connection, selector, *(k.fd for k in running),
                                                            *(k.data[1] for k in running)])
                for fd in fds:
                    os.close(fd)
                connection.sendall(str(pid).encode())
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ, (pid, connection))
            else:
                pid, connection = key.data
                selector.unregister(key.fileobj)
                os.close(key.fd)
                _, status, usage = os.wait4(pid, 0)
                try:
                    connection.sendall(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime}".encode())
                except OSError:
                    pass
                connection.close()


def _child(request: dict, fds: list[int], base: list[str], server_parts: list) -> None:
    """Become the command: its streams, folder, umask, environment, path and argv; run it; exit as an interpreter
    exits. Never returns."""
    code = 1
    try:
        for part in server_parts:
            try:
                part.close() if not isinstance(part, int) else os.close(part)
            except OSError:
                pass
        for target_fd, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target_fd)
        for fd in set(fds):
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        gc.unfreeze()
        if request["kind"] == "nbgrader":
            sys.path[:] = [str(BIN), *extra, *base]   # a script's own folder first, as for `nbgrader`
            sys.argv = [request["argv"][0], *request["argv"][1:]]
            from nbgrader.apps.nbgraderapp import main
            code = _status(main())
        else:
            sys.path[:] = [request["cwd"], *extra, *base]
            sys.argv = [request["module"], *request["argv"][3:]]
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
    except SystemExit as stop:
        code = _status(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    _exit(code)


def _status(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def _exit(code: int) -> None:
    """What an interpreter does at its end: wait for its threads, run `atexit`, flush its streams."""
    try:
        threading._shutdown()   # type: ignore[attr-defined]   # what Py_FinalizeEx does first
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    finally:
        if code < 0:   # the command was interrupted: it ends by the signal, as Python ends on an unhandled Ctrl-C
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code & 0xFF)

