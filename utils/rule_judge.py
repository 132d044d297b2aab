"""The judge of the tasks' rules: what a task's code uses, read from the code itself rather than by running it.

Reading the code means the check does not depend on anything the code does when it runs, so it holds where the code
cannot reach: the grader reads the submitted cells and decides outside the student's process, and the visible tests
run the same check in the notebook (`utils.rules.check_rule`), so that a student sees at once what grading will say.
Which task has which rule is the course's (utils/rules.py); this module knows no task: adding a rule never changes it.

A rule names what a task must work out by itself:
- `names`: qualified names, each with everything under it (`torch.finfo`; `torch.autograd` covers
  `torch.autograd.grad`), however they are reached: `import torch`, `from torch import finfo as f`, `ag = torch.autograd`,
  a default argument, a literal `getattr(torch, "finfo")`;
- `methods`: attribute names, on any object (`.stride`: a value's type is not known from the code alone);
- `private`: no attribute whose name starts with one underscore (`data._array`); `private_of`: none of these modules'
  private members (`torch._fused_adamw_`);
- `needs`: the task's code must use one of these (`einops`).
A task's code is its function or class, and every function and class of the student's that it refers to, however
deep. A callable kept in a container (`_AG = [torch.autograd.grad]`, then `_AG[0]`) or wrapped in
`functools.partial` stands for what it holds. What the code cannot decide is reported as `dynamic`, which the grader
flags for a person to look at (nbgrader's flag in Formgrader) and the visible check reports as a warning, never a
silent pass: names reached by text built at run time (`getattr(torch, "fin" + "fo")`, `eval`, `importlib`,
`__dict__`, `globals()`), a special method of a rule's stand-in (`data.__getstate__()`), a cell the judge cannot
read (it does not parse, or nests deeper than it follows), code built at run time outside any function
(`exec(...)` in a cell), and names aliased more ways than it follows (`MAX_ROUTES`).
"""
from __future__ import annotations

import ast
import inspect
import re
import types
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from utils.code_flow import MAX_VALUES, Env, Flow, Program, under

SAFE_DUNDERS = {"__len__", "__getitem__", "__init__", "__call__", "__name__", "__doc__"}   # what len() and data[a:b] do
MAX_ROUTES = MAX_VALUES   # values one name or field may hold; past it the judge stops following and flags the notebook


@dataclass(frozen=True)
class Rule:
    """What one task's function or class (`task`) may not use; `why` is the hint a student reads."""
    task: str
    names: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    private: bool = False
    needs: tuple[str, ...] = ()
    private_of: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class RuleSet:
    """What a set of rules is about, for reading code once for all of them: the names any rule names or needs
    (`interesting`: a value handed to a library matters when it is one of these, leads to one, `torch` to
    `torch.autograd`, or is reflection: utils/code_flow.py, REFLECTIVE), the methods any rule names, and every task."""
    interesting: tuple[str, ...]
    methods: frozenset[str]
    tasks: tuple[str, ...]

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> RuleSet:
        rules = list(rules)
        return cls(tuple(sorted({n for rule in rules for n in (*rule.names, *rule.needs)})),
                   frozenset(m for rule in rules for m in rule.methods), tuple(sorted({rule.task for rule in rules})))


@dataclass
class Verdict:
    """What the code of a task uses against its rule (`broken`: the rule is broken, the task scores 0), and what the
    judge cannot follow (`dynamic`: a person decides)."""
    broken: list[str]
    dynamic: list[str]

    def message(self, rule: Rule) -> str:
        return f"{rule.task} uses {'; '.join(self.broken[:4])}, which this task rules out\nHint: {rule.why}"


# ---- reading code ------------------------------------------------------------------------------------------------
class Cells(list):
    """The cells that parse as Python, each (ast.Module, the text it was parsed from), how many did not
    (`unreadable`), and for each the number of the cell it came from (`origins`: a %timeit's code is a cell of its
    own, after the cell it is in)."""
    unreadable: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.origins: list[int] = []
        self.hidden: list[str] = []   # magics that run code the judge cannot read (`%run -i a_file.py`)


def parse(cells: Iterable[str]) -> Cells:
    """The cells that parse as Python (IPython's %magics and !shell lines turned into calls first, and the code of
    %time, %timeit and %%capture read as code); the others are counted, never silently dropped: the judge flags a
    notebook that has one."""
    modules = Cells()
    for index, text in enumerate(cells):
        try:
            modules.append(_python_of(text))
            modules.origins.append(index)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            modules.unreadable += 1
            continue
        modules.hidden += _hidden_code_magics(modules[-1][0])
        for inner in _magic_code(modules[-1][0]):
            try:
                modules.append((ast.parse(inner), inner))
                modules.origins.append(index)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                modules.unreadable += 1
    return modules


def _python_of(text: str) -> tuple[ast.Module, str]:
    """(its syntax tree, the code read) of one cell. IPython rewrites only what is not Python (a %magic, a !shell
    line, a `?`, a prompt), and takes off the indent common to every line, which is none where a statement starts at
    the first column, as a cell that parses as Python has (textwrap.dedent's blanking of whitespace-only lines inside
    a string aside: no rule reads a string). So a cell that parses as Python is read as it is: the same tree,
    without IPython's tokenizing pass (12.7 of the 18 ms a 13-cell notebook took to read, exercise 7), and without
    importing IPython at all where no cell needs it (the grader's judge runs in a fresh child per submission, and
    that import took it 0.15 s)."""
    try:
        return ast.parse(text), text
    except SyntaxError:
        code = _ipython_transform()(text)
        return ast.parse(code), code


def _ipython_transform() -> Callable[[str], str]:
    """IPython's rewriting of a cell into Python; outside IPython's reach, none (plain Python only)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return str
    return TransformerManager().transform_cell


CODE_MAGICS = {"time", "timeit", "capture", "prun"}   # magics whose argument is Python code, run in the notebook


# Magics that bind nothing in the notebook beyond what their own code says: the code-running ones (read as code),
# IPython's pages, shells and settings of display. Any other magic may run code the judge never sees: `%run -i f.py`
# of a file the notebook wrote rebinding a task (red team, issue #63), `%load_ext`, `%macro`, `%store -r`, `%config`.
# An allow-list, so a magic nobody listed is flagged for a person, never trusted.
READABLE_MAGICS = CODE_MAGICS | {
    "matplotlib", "pwd", "ls", "cd", "who", "whos", "who_ls", "env", "system", "sx", "bash", "sh", "script",
    "html", "markdown", "latex", "javascript", "js", "svg", "writefile", "pinfo", "pinfo2", "pdef", "pdoc", "psource",
    "pfile", "psearch", "lsmagic", "magic", "precision", "xmode", "colors", "history", "page", "reset",
    "reset_selective", "pip", "conda", "mamba", "killbgscripts", "time", "timeit"}


def _hidden_code_magics(module: ast.Module) -> list[str]:
    """`%name` of each magic in the cell that may run code the judge cannot read (not in READABLE_MAGICS), and
    `get_ipython()` reached any other way than its magics (`get_ipython().run_cell(text)`)."""
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name) and \
                node.func.value.func.id == "get_ipython":
            name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if node.func.attr not in ("run_line_magic", "run_cell_magic", "getoutput", "system"):
                found.append(f"get_ipython().{node.func.attr}")
            elif node.func.attr in ("run_line_magic", "run_cell_magic") and name not in READABLE_MAGICS:
                found.append(f"%{name}" if isinstance(name, str) else "a magic named at run time")
    return found


def _magic_code(module: ast.Module) -> list[str]:
    """The Python code a cell runs through IPython's code-running magics (`%timeit f(x)`), as text to read."""
    found = []
    for node in ast.walk(module):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("run_line_magic", "run_cell_magic") and node.args):
            continue
        words = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(words) == len(node.args):
            name, *texts = words
            if name in CODE_MAGICS:
                body = [texts.pop()] if node.func.attr == "run_cell_magic" and texts else []
                body = [code for code in body if code]
                found += [code for text in texts for code in _after_options(text)] + body
    return found


def _after_options(text: str) -> list[str]:
    """The code in a magic's line: the line itself, or, when it starts with options (`%timeit -n 10 f(x)`,
    `%prun -q w = g`), every tail of it after a space that parses as Python. Each magic parses its options its own
    way (getopt letters, some taking a value), and runs what is left: reading every tail reads that code, and
    perhaps an option's value besides, never less (issue #63: the code of a line with options was not read at all,
    so `%prun -q w2_grad = torch.autograd.grad` bound a task the judge never saw). Options alone leave nothing."""
    if not text.lstrip().startswith("-"):
        return [text]
    tails = [text[space.end():] for space in re.finditer(r"\s+", text)]
    return [tail for tail in tails if tail.strip() and _parses(tail)]


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


class Code:
    """The student's cells, read (utils/code_flow.py): every name, field and return, to a fixed point, following what
    `rules` are about. `entries`: the names the tests call (default: every task of `rules`); `known`: names
    bound outside the cells (a module's globals), by qualified name."""

    def __init__(self, modules: Sequence, context: Sequence = (), known: dict[str, str] | None = None,
                 entries: Iterable[str] | None = None, *, rules: RuleSet):
        self.rules = rules
        self.program = Program(list(modules), list(context), known)
        self.flow = Flow(self.program, interesting=rules.interesting, method_names=rules.methods)
        try:
            self.flow.solve(entries if entries is not None else rules.tasks)
        except RecursionError:
            self.flow.flags.append("code nested deeper than the grader follows")
        self.unfollowed: list[str] = list(self.flow.flags)
        unreadable = getattr(modules, "unreadable", 0) + getattr(context, "unreadable", 0)
        if unreadable:
            self.unfollowed.insert(0, f"{unreadable} cell(s) the grader cannot read")
        for magic in dict.fromkeys(getattr(modules, "hidden", [])):
            self.unfollowed.append(f"{magic}, which runs code the grader cannot read")
        self.origins: list[int] = list(getattr(modules, "origins", range(len(modules))))

    def position(self, cells_before: int | None) -> float:
        """Where a test runs: after `cells_before` of the student's cells (None: after all of them)."""
        starts = self.program.cell_starts
        following = [start for start, origin in zip(starts, self.origins) if cells_before is not None
                     and origin >= cells_before]
        return following[0] - 0.5 if following else len(self.program.statements) + 0.5

    def holds(self, name: str, cells_before: int | None = None) -> set:
        """What the top-level `name` may hold when a test runs after `cells_before` cells."""
        return self.flow.module_read(name, Env(None, self.position(cells_before), True))


# ---- judging -----------------------------------------------------------------------------------------------------
def _under(name: str, prefixes: Iterable[str]) -> str | None:
    return under(name, prefixes)


def judge(rule: Rule, code: Code, stand_ins: Iterable[str] | dict = (), at: int | None = None) -> Verdict:
    """What the task's code (found in `code`) uses against `rule`, the task being what its name holds when its test
    runs (after `at` of the student's cells; None: after all); what the judge could not follow in the notebook is
    `dynamic` for every task (a person looks). `stand_ins`: other tasks (names, or {name: at}), judged as their own
    tasks (`tasks_of`): a later task that calls what an earlier one held at its test is not charged for the earlier
    one's rule."""
    try:
        return _judge(rule, code, stand_ins, at)
    except RecursionError:
        return Verdict([], ["code nested deeper than the grader follows"])


class _Reader:
    """What one task's flow reaches, against its rule (the observer of utils.code_flow.Flow)."""

    def __init__(self, rule: Rule):
        self.rule = rule
        self.broken: list[str] = []
        self.dynamic: list[str] = []
        self.used: set[str] = set()

    def _charge(self, text: str, env, certain: bool = True) -> None:
        path = "" if env.owner in ("", self.rule.task) else f", reached through your `{env.owner}`"
        if certain and env.level == "definite":
            self.broken.append(text + path)
        else:
            self.dynamic.append(f"{text}{path}, reached through code the grader cannot follow")

    def _name(self, name: str, env, certain: bool) -> None:
        """A name from outside the notebook that the task's code holds: one the rule names, one of the rule's
        methods taken from a class or module (`torch.Tensor.view` in a list), a private one."""
        rule = self.rule
        self.used.add(name)
        parts = name.split(".")
        private = any(part.startswith("_") and not part.startswith("__") for part in parts)
        hit = under(name, rule.names) or _reexported(name, rule.names)
        if hit:
            self._charge(hit, env, certain)
        elif under(name, rule.private_of) and private:
            self._charge(name, env, certain)
        elif (parts[-1] in rule.methods or "@" in rule.methods and parts[-1] in ("__matmul__", "__rmatmul__")) and \
                len(parts) > 1 and not under(name, rule.needs):
            self._charge(f".{parts[-1]}", env, certain)
        elif rule.private and private and not under(name, rule.needs):
            self._charge(f"a private attribute (.{next(p for p in parts if p.startswith('_'))})", env, certain)

    def __call__(self, kind: str, node, payload, env) -> None:
        rule = self.rule
        if kind == "value":
            for value in payload:
                certain = value[0] != "q"
                if not certain:
                    value = value[1]
                if value[0] == "d":
                    self.dynamic.append(value[1] if certain else f"{value[1]}, reached through code the grader cannot "
                                                                 "follow")
                elif value[0] == "e":
                    self._name(value[1], env, certain)
        elif kind == "attribute":
            name, bases, outside = payload
            name = "@" if name in ("__matmul__", "__rmatmul__", "__imatmul__") else name
            if not outside:
                return
            certain = any(b[0] != "q" for b in bases)
            allowed = any(b[0] == "e" and under(b[1], rule.needs) for b in bases)   # einops.einsum is einops'
            if name in rule.methods and not allowed:
                self._charge(f".{name}", env, certain)
            elif rule.private and name.startswith("_") and not name.startswith("__"):
                self._charge(f"a private attribute (.{name})", env, certain)
            elif rule.private and name.startswith("__") and name not in SAFE_DUNDERS:
                self.dynamic.append(f"a special method (.{name})")   # __getstate__, __reduce__: the stand-in's insides
        elif kind == "matmul" and "@" in rule.methods:
            if any(v[0] in ("o", "e", "q") for v in payload):
                self._charge("the @ operator", env, any(v[0] in ("o", "e") for v in payload))
        elif kind == "any-attribute" and (rule.methods or rule.private):
            if any(b[0] not in ("i", "c", "f", "x", "n", "s") for b in payload):
                self.dynamic.append("an attribute named at run time")


def _reexported(name: str, names: Iterable[str]) -> str | None:
    """The rule's name that `name` is another path to, the same object kept under its own name by another module of
    the same package (`numpy.core.getlimits.finfo` is numpy.finfo, `torch._tensor.Tensor.view` torch.Tensor.view,
    `utils.earlier.floats` utils.floats): the package and the name's own tail of components, in order."""
    parts = name.split(".")
    for forbidden in names:
        root, *tail = forbidden.split(".")
        if tail and parts[0] == root and any(parts[i:i + len(tail)] == tail for i in range(1, len(parts))):
            return forbidden
    return None


def _judge(rule: Rule, code: Code, stand_ins, at: int | None) -> Verdict:
    entry = code.holds(rule.task, at)
    others = stand_ins.items() if isinstance(stand_ins, dict) else [(name, None) for name in stand_ins]
    stand = {v for name, when in others if name != rule.task for v in code.holds(name, when) if v[0] in ("f", "c")}
    stand -= {v for v in entry if v[0] in ("f", "c")}
    reader = _Reader(rule)
    flow = Flow(code.program, base=code.flow, interesting=code.rules.interesting, observer=reader)
    flow.follow(entry, stand)
    reader(("value"), None, entry, Env(None, 0, True, owner=rule.task))
    dynamic = list(code.unfollowed) + list(flow.flags) + reader.dynamic
    if any(v[0] == "o" for v in entry) and not any(v[0] in ("f", "c", "b", "x") for v in entry):
        dynamic.append(f"{rule.task} is bound to what code outside the notebook returned")
    nodes = [code.program.fns[fid].node for fid in flow.reached] + \
        [code.program.classes[cid].node for cid in flow.classes_alive]
    unanswered = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.dump(n) for s in nodes for n in ast.walk(s))
    broken = list(reader.broken)
    if rule.needs and nodes and not unanswered and not any(under(name, rule.needs) for name in reader.used):
        broken.append(f"none of {', '.join(rule.needs)} (the task asks for them)")
    return Verdict(list(dict.fromkeys(broken)), list(dict.fromkeys(dynamic)))


# ---- in a notebook -------------------------------------------------------------------------------------------------
def notebook_cells(fn: Callable) -> list[str]:
    """The cells run so far in this kernel (IPython's `In`), else the source of `fn` itself."""
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # defined inside IPython only
        cells = [text for text in shell.user_ns.get("In", []) if text]
    except NameError:
        cells = []
    if cells:
        return cells
    try:   # the grader runs cells without history: fn's source, and the notebook's own functions and classes it may call
        own = inspect.unwrap(fn)
        sources = [inspect.getsource(own)]
    except (OSError, TypeError):
        return []
    for value in list(getattr(own, "__globals__", {}).values()):
        if value is not own and (inspect.isfunction(value) or inspect.isclass(value)) and \
                getattr(value, "__module__", None) == "__main__":
            try:
                sources.append(inspect.getsource(value))
            except (OSError, TypeError):
                continue
    return sources


def globals_named(fn: Callable) -> dict[str, str]:
    """What the names of `fn`'s module stand for: modules by their names, functions and classes by where they live
    (for code read without the cells that imported them)."""
    known = {}
    for name, value in getattr(inspect.unwrap(fn), "__globals__", {}).items():
        if isinstance(value, types.ModuleType):
            known[name] = value.__name__
        elif callable(value) and isinstance(getattr(value, "__module__", None), str) and \
                isinstance(getattr(value, "__qualname__", None), str) and value.__module__ != "__main__":
            known[name] = f"{value.__module__}.{value.__qualname__}"
    return known
