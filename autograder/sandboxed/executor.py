"""Runs as the student, inside the sandbox: a notebook's cells, one request at a time, with the tests' tools guarded.

The process first says Ready (with the walls it was built with), then reads one request per line (protocol.Files:
the assignment's files for its working folder; protocol.CellRequest: one cell) and answers each with one line
(protocol.CellResult). It runs cells with IPython, as a notebook would. A test cell's hidden tests get their cases from the request and leave the student's results in
`handed` (utils/handin.py); what they are compared with never enters this process.

The guard: after the locked set-up cell has run, it records every attribute of the modules and classes the
tests rely on (torch, numpy, math, builtins, the course's `utils`, `torch.Tensor`, ...), the modules in
`sys.modules`, and the names the set-up cell defined. Before each test cell it puts back anything a student's
cell rebound (reported as 'restored'); after each test cell it checks again, and a test cell during which any
of them changed fails (reported as 'tampered'). Global torch settings a student may change (default dtype and
device, grad mode) are reset before each test too.
"""
from __future__ import annotations

import base64
import builtins
import io
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.protocol import HIDDEN_TESTS, CellKind, CellRequest, CellResult, Files, Message, Ready
from autograder.sandboxed import watch

if TYPE_CHECKING:  # imported when the shell is made (make_shell), after the walls
    from IPython.core.interactiveshell import InteractiveShell

MISSING = object()
# Caches Python itself adds to a class on first use (copyreg stores __slotnames__ when a tensor is first pickled).
BENIGN_CLASS_KEYS = {"__slotnames__"}
PROTECTED_MODULES = ("builtins", "math", "operator", "functools", "random", "json", "numpy", "numpy.testing",
                     "torch", "torch.testing", "torch.testing._comparison", "torch.nn", "torch.nn.functional", "torch.optim", "einops",
                     "jaxtyping", "beartype", "warnings", "contextlib", "types")


def _protected_classes() -> list[type]:
    """torch's classes the tests rely on, when the course uses torch at all (its zygote imported it: Course.imports);
    a course that never imports torch has tests that never call it."""
    if "torch" not in sys.modules:
        return []
    import torch
    import torch.testing._comparison as comparison
    return [torch.Tensor, torch.nn.Module, torch.nn.Parameter, torch.optim.Optimizer,
            comparison.Pair, comparison.TensorLikePair, comparison.NumberPair, comparison.BooleanPair]


class Guard:
    """A record of the tests' tools, to restore and to compare against."""

    def __init__(self, namespace: dict):
        self.modules = {name: sys.modules[name] for name in sys.modules
                        if name in PROTECTED_MODULES or name == "utils" or name.startswith("utils.")}
        self.module_dicts = {name: dict(module.__dict__) for name, module in self.modules.items()}
        self.class_dicts = {cls: dict(cls.__dict__) for cls in _protected_classes()}
        self.namespace = namespace
        self.names = {k: v for k, v in namespace.items() if not k.startswith("_")}

    def differences(self, fix: bool) -> list[str]:
        """Names of the guarded things that differ from the record; with fix=True, put them back."""
        changed = self._modules(fix) + self._classes(fix) + self._names(fix)
        if sys.gettrace() is not None or sys.getprofile() is not None:
            changed.append("sys.settrace/setprofile")
            if fix:
                sys.settrace(None)
                sys.setprofile(None)
        return changed

    def _modules(self, fix: bool) -> list[str]:
        """The guarded modules replaced in sys.modules, and their attributes rebound or deleted."""
        changed = []
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                changed.append(f"sys.modules[{name!r}]")
                if fix:
                    sys.modules[name] = module
            current = module.__dict__
            for key, value in self.module_dicts[name].items():
                if current.get(key, MISSING) is not value:
                    changed.append(f"{name}.{key}")
                    if fix:
                        current[key] = value
        return changed

    def _classes(self, fix: bool) -> list[str]:
        """The guarded classes' attributes added (but Python's own caches), rebound or deleted."""
        changed = []
        for cls, saved in self.class_dicts.items():
            for key in [k for k in cls.__dict__ if k not in saved and k not in BENIGN_CLASS_KEYS]:
                changed.append(f"{cls.__name__}.{key}")
                if fix:
                    delattr(cls, key)
            for key, value in saved.items():
                if cls.__dict__.get(key, MISSING) is not value:
                    changed.append(f"{cls.__name__}.{key}")
                    if fix:
                        setattr(cls, key, value)
        return changed

    def _names(self, fix: bool) -> list[str]:
        """The set-up cell's names rebound or deleted in the notebook's namespace."""
        changed = []
        for key, value in self.names.items():
            if self.namespace.get(key, MISSING) is not value:
                changed.append(key)
                if fix:
                    self.namespace[key] = value
        return changed


def reset_torch_state() -> None:
    """Undo global settings a student cell may have changed that would change what the tests compute (none when the
    course never imports torch: see _protected_classes)."""
    if "torch" not in sys.modules:
        return
    import torch
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    torch.set_default_device(None)


class CappedText(io.TextIOBase):
    """A text stream that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.kept, self.dropped = limit, 0, 0
        self.parts: list[str] = []

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = self.limit - self.kept
        self.parts.append(text[:max(room, 0)])
        self.kept += min(len(text), max(room, 0))
        self.dropped += max(len(text) - max(room, 0), 0)
        return len(text)

    def value(self) -> str:
        text = "".join(self.parts)
        return text + (f"\n[... {self.dropped:,} more characters of output dropped]" if self.dropped else "")


def _error_text(error: BaseException) -> str:
    """The exception as a student should read it: the type and message, plus the line of their code if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith("<ipython-input")
              or f.filename.startswith("/tmp/ipykernel") or "ipython-input" in f.filename or f.filename.startswith("<cell")]
    where = f"  (line {frames[-1].lineno}: {frames[-1].line})\n" if frames and frames[-1].line else ""
    return where + "".join(traceback.format_exception_only(type(error), error)).strip()


def _raised(error: BaseException | None, limit: int) -> tuple[str, str]:
    """(ename, evalue) of what a cell raised, as Jupyter's error message holds them: the class's own name and the
    exception's str, its first `limit` characters (a str that raises is said so, as traceback does); ('', '') for
    nothing raised."""
    if error is None:
        return "", ""
    try:
        value = str(error)
    except BaseException:  # the student's own __str__
        value = "<exception str() failed>"
    return type(error).__name__[:200], value[:limit]


def _line_in_cell(error: BaseException, names: list[str]) -> int | None:
    """The line of this cell's own code that the error passed through last (None if it never did): the grader
    uses it to tell a failed hidden check from a failed visible one. A frame belongs to this cell when IPython
    compiled it under one of this cell's names (an earlier cell's function, called from here, does not)."""
    lines = [number for frame, number in traceback.walk_tb(error.__traceback__) if frame.f_code.co_filename in names]
    return lines[-1] if lines else None


def _without_hidden_tests(lines: list[str]) -> list[str]:
    """A test cell's lines as linecache may hold them: its hidden tests' lines blank, so that the line numbers of
    the rest still hold (issue #59: a student's function that reads the stack while a hidden test runs, with
    traceback.extract_stack(), finds no line of it)."""
    text = "".join(lines)
    for match in HIDDEN_TESTS.finditer(text):
        blank = "\n" * text.count("\n", match.start(), match.end())
        text = text[:match.start()] + blank + text[match.end():]
    return text.splitlines(keepends=True)


class CellNames:
    """What IPython compiles each cell under (its `compile.cache`), recorded: the names of the running cell, and of
    every cell of the student's (the trusted side's run-time watch tells the student's frames by them). A test cell is
    cached with its hidden tests' lines blank."""

    def __init__(self, shell: InteractiveShell):
        self.running: list[str] = []
        self.student: set[str] = set()
        self.kind: CellKind | None = None
        self._cache = shell.compile.cache
        shell.compile.cache = self.cache  # type: ignore[method-assign]  # on this one shell, on purpose

    def begin(self, kind: CellKind) -> None:
        self.kind, self.running = kind, []

    def cache(self, transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
        import linecache
        name = self._cache(transformed_code, number, raw_code)
        self.running.append(name)
        if self.kind in (CellKind.ANSWER, CellKind.ADDED):
            self.student.add(name)
        elif self.kind is CellKind.TEST and name in linecache.cache:
            entry: tuple = linecache.cache[name]   # (size, mtime, lines, name), as IPython's compiler stores it
            linecache.cache[name] = (entry[0], entry[1], _without_hidden_tests(list(entry[2])), name)
        return name

    def forget(self) -> None:
        """No copy of a test cell's code stays in linecache once the cell has run (issue #48)."""
        import linecache
        for name in self.running:
            linecache.cache.pop(name, None)


def write_files(files: dict[str, str]) -> list[str]:
    """Put the assignment's files (relative path -> base64) in the working folder; the paths it could not write."""
    refused = []
    here = Path.cwd()
    for name, data in files.items():
        target = (here / name).resolve()
        if not target.is_relative_to(here) or target == here:
            refused.append(name)
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(base64.b64decode(data))
        except (OSError, ValueError):
            refused.append(name)
    return refused


def make_shell() -> InteractiveShell:
    """IPython's shell, as a notebook's kernel runs cells, with errors reported in the reply instead of printed."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    shell.showtraceback = lambda *args, **kwargs: None  # type: ignore[method-assign]  # on this one shell, on purpose
    return shell


def serve(requests: io.TextIOBase, replies: io.TextIOBase, output_chars: int, walls: list[str],
          shell: InteractiveShell) -> None:
    """Say Ready (everything after it is the student's), then answer requests until the grader closes the channel."""
    from utils.handin import CHANNEL
    watch.install()  # before any of the student's code: an audit hook cannot be removed
    watch.watch_folder(os.getcwd())  # the only folder the notebook can write: code read from it is seen
    CHANNEL.begin({})  # from here on, hidden_cases() and hand_in() talk to the grader, never to `reference`
    guard = None
    names = CellNames(shell)
    serving_pid = os.getpid()
    real_stdout, real_stderr = sys.stdout, sys.stderr
    replies.write(Ready(walls).to_line().decode())
    replies.flush()
    for line in requests:
        request = Message.parse(line)
        if isinstance(request, Files):
            refused = write_files(request.files)
            reply = CellResult(request.id, not refused, "", f"could not write {', '.join(refused)}" if refused else "",
                               [], [], None, {})
            replies.write(reply.to_line().decode())
            replies.flush()
            continue
        assert isinstance(request, CellRequest)
        restored: list[str] = []
        tampered: list[str] = []
        if request.kind is CellKind.TEST and guard is not None:
            restored = guard.differences(fix=True)
            reset_torch_state()
        out = CappedText(output_chars)
        CHANNEL.begin(request.cases if request.kind is CellKind.TEST else {})
        sys.stdout = sys.stderr = out  # stderr joins stdout: warnings are shown, never scored
        names.begin(request.kind)
        watched = watch.Watch(request.watch, names.student) if request.kind is CellKind.TEST and request.watch else None
        try:
            if watched is not None:
                watched.arm(shell.user_ns)
            result = shell.run_cell(request.code, store_history=False, silent=False)
            error = result.error_before_exec or result.error_in_exec
        except BaseException as raised:  # anything a cell throws is its own failure
            error = raised
        finally:
            sys.stdout, sys.stderr = real_stdout, real_stderr
            ran = watched.disarm() if watched is not None else []
        handed = CHANNEL.end()
        builtins_ok = isinstance(builtins.__dict__.get("print"), type(len))
        if request.kind is CellKind.SETUP and error is None and guard is None:
            guard = Guard(shell.user_ns)
        if request.kind is CellKind.TEST and guard is not None:
            tampered = guard.differences(fix=True)
        ename, evalue = _raised(error, output_chars)
        reply = CellResult(
            id=request.id, ok=error is None and not tampered and builtins_ok, output=out.value(),
            error=_error_text(error) if error is not None else "", restored=restored, tampered=tampered,
            line=_line_in_cell(error, names.running) if error is not None and error.__traceback__ else None,
            handed={k: v for k, v in handed.items() if type(k) is str and type(v) is str},
            syntax=isinstance(error, SyntaxError), ran=ran, ename=ename, evalue=evalue)
        if request.kind is CellKind.TEST:
            names.forget()
        if os.getpid() != serving_pid:  # a process the cell forked got here: only the original answers
            os._exit(0)
        replies.write(reply.to_line().decode())
        replies.flush()


def main(request_fd: int, reply_fd: int, output_chars: int, walls: list[str], shell: InteractiveShell) -> None:
    with os.fdopen(request_fd, "r") as requests, os.fdopen(reply_fd, "w") as replies:
        serve(requests, replies, output_chars, walls, shell)
