"""Runs as the student, inside the sandbox, but installed before any of the student's code: what a rule-bound task's
code really runs while its test cell calls it (issue #59), beside the judge's reading of its text (utils/rules.py).

The grader sends a test cell of a rule-bound task with the rule's watch (`CellRequest.watch`, lines made by
autograder/grader/rules.py `watch_lines`). While the cell runs, the task (its function, or its class's own methods)
is called through a wrapper; during its first calls (a budget, so that grading stays cheap) the wrapper pushes
- a torch function mode, which sees every torch function and tensor method the call runs, with the Python frame
  that called it: a name the rule forbids called by the student's code, one of the rule's methods
  (`x.permute` in an einops task), a private torch function, a call made by a forbidden module (torch.optim.adamw
  updating the parameters), a dispatch mode of someone else's on the stack (FlopCounterMode);
- for an autograd rule, a dispatch mode that sees the autograd engine run (a backward pass, however it was started:
  `torch._C._ImperativeEngine().run_backward(...)` included);
and an audit hook, installed once per process before anything else and impossible to remove, reports what the
student's frames do to the watch itself or around it: sys.settrace/setprofile, exec/compile of code, ctypes, forks,
threads. The stacks of modes are checked on the way out: a mode the task's code pushed, popped or replaced is
evidence of tampering. Everything seen comes back as `CellResult.ran`; the grader flags a task for a person where it
differs from the judge's verdict. None of it charges a student: the verdict is the judge's.
"""
from __future__ import annotations

import functools
import sys
from types import FrameType
from typing import Any, Callable

CALL_BUDGET = 16        # watched calls of the task per test cell
EVENT_BUDGET = 5000     # torch calls looked at per test cell (past it, a call is forwarded unread)
MAX_EVIDENCE = 20
AUDITED = {"exec", "compile", "sys.settrace", "sys.setprofile", "sys.addaudithook", "ctypes.dlopen",
           "ctypes.dlsym", "ctypes.call_function", "ctypes.cdata", "ctypes.addressof", "os.fork", "os.forkpty",
           "os.posix_spawn", "os.exec", "os.system", "subprocess.Popen", "_thread.start_new_thread",
           "object.__setattr__", "object.__delattr__", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
           "code.__new__", "function.__new__", "marshal.loads"}
ACTIVE: list["Watch"] = []   # the watch of the running test cell, while its task runs


class Spec:
    """A rule as the watch reads it, from the request's lines ("task:w2_grad", "name:torch.autograd", ...)."""

    def __init__(self, lines: list[str]):
        self.task = ""
        self.names: list[str] = []
        self.methods: set[str] = set()
        self.private_of: list[str] = []
        self.needs: list[str] = []
        self.stand_ins: set[str] = set()
        self.engine = False
        for line in lines:
            kind, _, value = line.partition(":")
            if kind == "task":
                self.task = value
            elif kind == "name":
                self.names.append(value)
            elif kind == "method":
                self.methods.add("__matmul__" if value == "@" else value)
            elif kind == "private_of":
                self.private_of.append(value)
            elif kind == "needs":
                self.needs.append(value)
            elif kind == "stand_in":
                self.stand_ins.add(value)
            elif kind == "engine":
                self.engine = True


def _under(name: str, prefixes: list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


class Watch:
    """One test cell's watch: `arm(namespace)` before the cell, `disarm()` after it; `evidence` then says what ran."""

    def __init__(self, lines: list[str], student_files: set[str]):
        self.spec = Spec(lines)
        self.student = student_files
        self.evidence: list[str] = []
        self.calls = 0
        self.events = 0
        self.inside = 0
        self.restore: list[Callable[[], None]] = []
        self._names: dict[Any, tuple[str, ...]] = {}
        self._callers: dict[Any, str | None] = {}

    # -- the task, wrapped ------------------------------------------------------------------------------------------
    def arm(self, namespace: dict) -> None:
        """Call the task through the watch while the cell runs: its function, or its class's own methods."""
        task = namespace.get(self.spec.task)
        if isinstance(task, type):
            import inspect
            for attribute, value in list(vars(task).items()):
                own = inspect.unwrap(value) if callable(value) else None     # @torch.no_grad() def step: the step
                if own is not None and getattr(getattr(own, "__code__", None), "co_filename", "") in self.student:
                    setattr(task, attribute, self._wrap(value))
                    self.restore.append(functools.partial(setattr, task, attribute, value))
        elif callable(task) and not isinstance(task, functools.partial):
            namespace[self.spec.task] = self._wrap(task)
            self.restore.append(functools.partial(namespace.__setitem__, self.spec.task, task))

    def disarm(self) -> list[str]:
        for undo in reversed(self.restore):
            undo()
        self.restore.clear()
        self._own_modules()
        return self.evidence

    def _own_modules(self) -> None:
        """A module imported from the notebook's own folder is code the judge never read (a `csv.py` the notebook
        wrote, imported in place of the standard library's): tampering."""
        import os
        here = os.getcwd() + os.sep
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path.startswith(here):
                self.note(f"tampering: {name} was imported from a file the notebook wrote")

    def _wrap(self, fn: Callable) -> Callable:
        watch = self

        @functools.wraps(fn)
        def watched(*args: Any, **kwargs: Any) -> Any:
            if watch.inside or watch.calls >= CALL_BUDGET or watch.events >= EVENT_BUDGET:
                return fn(*args, **kwargs)
            watch.calls += 1
            return watch._watched_call(fn, args, kwargs)
        return watched

    def _watched_call(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        import torch
        functions_before = torch._C._len_torch_function_stack()
        dispatch_before = torch._C._len_torch_dispatch_stack()
        modes = [_mode("function")(self)] + ([_mode("engine")(self)] if self.spec.engine else [])
        self.dispatch_baseline = dispatch_before + (1 if self.spec.engine else 0)
        entered = []
        self.inside += 1
        ACTIVE.append(self)
        try:
            for mode in modes:
                mode.__enter__()
                entered.append(mode)
            return fn(*args, **kwargs)
        finally:
            ACTIVE.remove(self)
            self.inside -= 1
            self._leave(entered, functions_before, dispatch_before)

    def _leave(self, entered: list[Any], functions_before: int, dispatch_before: int) -> None:
        """Pop this call's modes, checking that they are where they were put: a task that pushed, popped or replaced
        a mode tampered with the watch (its own modes are put back above where ours were, ours never stay)."""
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        for mode in reversed(entered):
            dispatch = isinstance(mode, TorchDispatchMode)
            length = torch._C._len_torch_dispatch_stack if dispatch else torch._C._len_torch_function_stack
            at = torch._C._get_dispatch_stack_at if dispatch else torch._C._get_function_stack_at
            pop = torch._C._pop_torch_dispatch_stack if dispatch else torch._C._pop_torch_function_stack
            push = torch._C._push_on_torch_dispatch_stack if dispatch else torch._C._push_on_torch_function_stack
            stack = [at(i) for i in range(length())]
            if not stack or stack[-1] is not mode:
                self.note("tampering: a torch mode was pushed or popped by the task's code and not put back")
                if any(m is mode for m in stack):
                    above = []
                    while length() and at(length() - 1) is not mode:
                        above.append(pop())
                    pop()
                    for foreign in reversed(above):
                        push(foreign)
                continue
            try:
                mode.__exit__(None, None, None)
            except Exception:       # a stack the task's code left broken
                self.note("tampering: the watch's torch modes could not be left as they were entered")
        if torch._C._len_torch_function_stack() != functions_before or \
                torch._C._len_torch_dispatch_stack() != dispatch_before:
            self.note("tampering: the task's code left torch's mode stacks changed")

    # -- what ran ---------------------------------------------------------------------------------------------------
    def note(self, what: str) -> None:
        if what not in self.evidence and len(self.evidence) < MAX_EVIDENCE:
            self.evidence.append(what)

    def student_frame(self, frame: FrameType | None) -> bool:
        return frame is not None and frame.f_code.co_filename in self.student

    def names_of(self, func: Any) -> tuple[str, ...]:
        """The qualified names a torch callable is known by (`torch.functional.einsum` is `torch.einsum` too)."""
        found = self._names.get(func)
        if found is None:
            found = _names_of(func)
            self._names[func] = found
        return found

    def forbidden_caller(self, frame: FrameType) -> str | None:
        """The rule's name a frame's function has (torch.optim.adamw._single_tensor_adamw), if any."""
        code = frame.f_code
        if code not in self._callers:
            module = frame.f_globals.get("__name__", "")
            qualname = getattr(code, "co_qualname", code.co_name)
            name = f"{module}.{qualname}"
            self._callers[code] = name if _under(name, self.spec.names) and not self._public(module, qualname) else None
        return self._callers[code]

    def _public(self, module: str, qualname: str) -> bool:
        """Whether a function (or a method of a class) is also torch's under a name the rule allows:
        torch.autograd.grad_mode.enable_grad is torch.enable_grad."""
        import torch
        first = qualname.split(".")[0]
        defined = getattr(sys.modules.get(module), first, None)
        return defined is not None and getattr(torch, first, None) is defined and \
            not _under(f"torch.{first}", self.spec.names)

    def saw_function(self, func: Any, frame: FrameType) -> None:
        """A torch function or method about to run; `frame`: the handler's own frame."""
        self.events += 1
        if self.events > EVENT_BUDGET:
            return
        own = getattr(func, "__code__", None)
        caller: FrameType | None = frame.f_back
        while caller is not None and (caller.f_code is own or caller.f_code.co_filename.endswith("overrides.py")):
            caller = caller.f_back
        if caller is None:
            return
        spec = self.spec
        names = self.names_of(func)
        if self._foreign_depth():
            self._foreign_modes()
        if self.student_frame(caller):
            for name in names:
                if _under(name, spec.names):
                    self.note(f"{name}, called by the task's code")
                elif _under(name, spec.private_of) and _private(name):
                    self.note(f"{name} (private), called by the task's code")
                elif name.rsplit(".", 1)[-1] in spec.methods and not _under(name, spec.needs):
                    self.note(f".{name.rsplit('.', 1)[-1].replace('__matmul__', '@')}, called by the task's code")
        else:
            forbidden = self.forbidden_caller(caller)
            if forbidden and not self._through_stand_in(caller):
                self.note(f"{forbidden} ran inside the task")

    def _through_stand_in(self, frame: FrameType | None) -> bool:
        """Whether the frames from `frame` up to the task's own code pass through another task's function (the
        tests may put a correct one in its place: `earlier_tasks_done_right`); that task is judged on its own."""
        while frame is not None and not self.student_frame(frame):
            if frame.f_code.co_name in self.spec.stand_ins:
                return True
            frame = frame.f_back
        return False

    def _foreign_depth(self) -> bool:
        import torch
        return torch._C._len_torch_dispatch_stack() > self.dispatch_baseline

    def _foreign_modes(self) -> None:
        import torch
        depth = torch._C._len_torch_dispatch_stack()
        for index in range(self.dispatch_baseline, depth):
            mode = torch._C._get_dispatch_stack_at(index)
            name = f"{type(mode).__module__}.{type(mode).__qualname__}"
            if _under(name, self.spec.names):
                self.note(f"{name} was on torch's dispatch stack while the task ran")

    def saw_backward(self) -> None:
        self.note("the autograd engine ran a backward pass inside the task")


def _names_of(func: Any) -> tuple[str, ...]:
    """A torch callable's public names: `torch.Tensor.view` for a tensor method, `torch.zeros` for what torch itself
    offers under that name (`torch.einsum` too, defined in torch.functional), else where it is defined."""
    import torch
    name = getattr(func, "__name__", "") or ""
    owner = getattr(func, "__objclass__", None)
    if isinstance(owner, type) and issubclass(owner, torch._C.TensorBase):
        return (f"torch.Tensor.{name}",)
    if name and (getattr(torch, name, None) is func or getattr(torch._C._VariableFunctions, name, None) is func):
        return (f"torch.{name}",)
    module = getattr(func, "__module__", None) or ""
    qualname = getattr(func, "__qualname__", name) or name
    return (f"{module}.{qualname}",) if module else (f"torch.{name}",)


def _function_mode() -> type:
    from torch.overrides import TorchFunctionMode

    class FunctionWatch(TorchFunctionMode):
        def __init__(self, watch: Watch):
            super().__init__()
            self.watch = watch

        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            self.watch.saw_function(func, sys._getframe())
            return func(*args, **(kwargs or {}))
    return FunctionWatch


def _engine_mode() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class EngineWatch(TorchDispatchMode):
        def __init__(self, watch: Watch):
            super().__init__()
            self.watch = watch

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            import torch
            if torch._C._current_graph_task_id() != -1:
                self.watch.saw_backward()
            return func(*args, **(kwargs or {}))
    return EngineWatch


_MODES: dict[str, type] = {}


def _mode(kind: str) -> type:
    """The mode classes, made on first use (torch is imported by then; this module does not import it itself)."""
    if kind not in _MODES:
        _MODES[kind] = _function_mode() if kind == "function" else _engine_mode()
    return _MODES[kind]


# ---- the audit hook ---------------------------------------------------------------------------------------------
_in_hook = [False]


def _audit(event: str, args: tuple) -> None:
    """What the student's frames do while their task runs under a watch (sys.addaudithook: it cannot be removed)."""
    if not ACTIVE or event not in AUDITED or _in_hook[0]:
        return
    _in_hook[0] = True
    try:
        watch = ACTIVE[-1]
        frame: FrameType | None = sys._getframe(1)
        immediate = frame
        while immediate is not None and immediate.f_code.co_filename.startswith("<frozen"):
            immediate = immediate.f_back
        anywhere = False
        while frame is not None:
            if watch.student_frame(frame):
                anywhere = True
                break
            frame = frame.f_back
        direct = watch.student_frame(immediate)
        if direct or (anywhere and event in ("os.fork", "os.forkpty", "os.posix_spawn", "subprocess.Popen",
                                             "_thread.start_new_thread", "os.system", "os.exec")):
            watch.note(f"tampering: the task's code ran {event}")
    finally:
        _in_hook[0] = False


_installed = [False]


def install() -> None:
    """The audit hook, once per process, before any of the student's code (executor.serve)."""
    if not _installed[0]:
        sys.addaudithook(_audit)
        _installed[0] = True
