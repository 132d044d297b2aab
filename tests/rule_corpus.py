"""Generated programs for the task rules (issue #59), judged as the grader judges them (utils/rules.py):

- routes: for every rule, every name, method and private name it forbids, reached through composed hidings (aliases,
  containers, `dict(...)`, namespaces, namedtuples, class and instance attributes, partials, lambdas, helpers,
  closures, factories, default arguments, `global` set in a function, `L.append`, `L += [...]`, comprehensions,
  loop, `with` and `except` targets, walrus, `or`, generators, properties, decorators, getattr with a folded or a
  stored name, `eval`, `importlib`, `vars`...) and entered in many ways (a direct call, a default argument, a helper,
  a method of a helper class, the task's name bound to another function, after an honest def, a factory's closure);
  each must be zeroed (the rule broken) or flagged (a person looks);
- honest notebooks: the instructor's solution and the independent variant of every assignment, each task written in
  shapes that once were charged or flagged (wrapped, decorated, made by a factory, kept in a table, redefined, its
  own class with methods named `backward` or `view`, its own namedtuple with a field named `stride`, a local
  variable named like a scratch cell's import), among scratch cells that use what the rules forbid (autograd to
  check, `torch.finfo`, `.view`, FlopCounterMode, AdamW, a variable named `reference`, getattr over a config, %timeit);
  none may be charged, at most 2% flagged.

`python -m tests.rule_corpus [ROUTES_PER_RULE] [HONEST_PER_ASSIGNMENT]` prints the table of precision and recall per
rule kept in docs/security.md; tests/test_rules_corpus.py checks a sample of both in the suite.
"""
from __future__ import annotations

import json
import random
import sys
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from autograder.grader.plan import make_plan
from autograder.grader.rules import verdicts
from autograder.source import read_notebook as read_source
from tests import submissions
from utils.rule_judge import Rule, judge, parse
from utils.rules import RULES, Code, tasks_of

REPO = Path(__file__).resolve().parent.parent
CLASS_TASKS = {"MomentumSGD", "AdaGrad", "AdamW"}


@lru_cache(maxsize=None)
def setup_code(assignment: str) -> tuple[str, ...]:
    """The set-up cells of an assignment's source notebook (the judge's context)."""
    path = next((REPO / "source" / assignment).glob("*.ipynb"))
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("locked") and not meta.get("grade"):
            found.append("".join(cell["source"]))
    return tuple(found)


# ---- routes --------------------------------------------------------------------------------------------------------
@dataclass
class Route:
    """A program that breaks `rule`: cells of the student's; `how`: the atom, hidings and entry, for messages;
    `dynamic`: built at run time (flagging is the right answer, zeroing too)."""
    rule: Rule
    assignment: str
    cells: list[str]
    how: str
    dynamic: bool = False


@dataclass
class Atom:
    """A forbidden thing as an expression: `lines` first (at the top level when `local` is False, else in the task's
    body, where `x` is the task's first argument), then `expr`, which the task calls with `x`."""
    lines: list[str]
    expr: str
    local: bool = False
    dynamic: bool = False
    label: str = ""


def name_atoms(name: str, i: int) -> list[Atom]:
    """Ways to name a qualified name from code."""
    parts = name.split(".")
    top, parent, last = parts[0], ".".join(parts[:-1]), parts[-1]
    atoms = [Atom([f"import {top}"], name, label="dotted")]
    if len(parts) >= 2:
        atoms += [
            Atom([f"from {parent} import {last} as _x{i}"], f"_x{i}", label="from-import"),
            Atom([f"import {parent} as _m{i}"], f"_m{i}.{last}", label="module alias"),
            Atom([f"import {top}"], f"getattr({parent}, {last!r})", label="getattr"),
            Atom([f"import {top}"], f"getattr({parent}, {last[:1]!r} + {last[1:]!r})", label="getattr folded"),
            Atom([f"import {top}", f"_name{i} = {last!r}"], f"getattr({parent}, _name{i})", label="getattr stored"),
            Atom([f"import {top}", f"_p{i} = {parent}"], f"_p{i}.{last}", label="parent alias"),
            Atom([f"import {top}"], f"{top}._internal.{'.'.join(parts[1:])}", label="another path"),
            Atom([], f"eval({name!r})", dynamic=True, label="eval"),
            Atom(["import importlib"], f"getattr(importlib.import_module({parent!r}), {last!r})", dynamic=True,
                 label="importlib"),
            Atom([f"import {top}"], f"vars({parent})[{last!r}]", dynamic=True, label="vars"),
            Atom(["import sys"], f"getattr(sys.modules[{top!r}], {'.'.join(parts[1:2])!r})" +
                 "".join(f".{p}" for p in parts[2:]), dynamic=True, label="sys.modules"),
        ]
    return atoms


def method_atoms(method: str, i: int) -> list[Atom]:
    """Ways to reach a method of the task's argument `x`."""
    if method == "@":
        return [Atom([], "(lambda y: x @ y)", local=True, label="@"),
                Atom([], "x.__matmul__", local=True, label="__matmul__"),
                Atom(["import torch"], "torch.Tensor.__matmul__", label="Tensor.__matmul__")]
    return [Atom([], f"x.{method}", local=True, label="method"),
            Atom([], f"getattr(x, {method!r})", local=True, label="getattr"),
            Atom([f"_meth{i} = {method!r}"], f"getattr(x, _meth{i})", local=True, label="getattr stored"),
            Atom(["import torch"], f"torch.Tensor.{method}", label="unbound"),
            Atom(["import torch"], f"getattr(torch.Tensor, {method!r})", label="unbound getattr"),
            Atom(["import operator"], f"operator.methodcaller({method!r})", dynamic=True, label="methodcaller"),
            Atom([], f"type(x).{method}", local=True, label="type(x)")]


def private_atoms(i: int) -> list[Atom]:
    return [Atom([], "x._array", local=True, label="private attribute"),
            Atom([], "getattr(x, '_array')", local=True, label="private getattr"),
            Atom([], "x.__getstate__", local=True, dynamic=True, label="special method")]


HIDINGS = {   # (expression so far, number, local) -> (lines, new expression)
    "alias": lambda e, i: ([f"_a{i} = {e}"], f"_a{i}"),
    "list": lambda e, i: ([f"_l{i} = [None, {e}]"], f"_l{i}[1]"),
    "tuple": lambda e, i: ([f"_t{i} = ({e},)"], f"_t{i}[0]"),
    "dict": lambda e, i: ([f"_d{i} = {{'k': {e}}}"], f"_d{i}['k']"),
    "dict()": lambda e, i: ([f"_d{i} = dict(k={e})"], f"_d{i}['k']"),
    "list()": lambda e, i: ([f"_l{i} = list([{e}])"], f"_l{i}[0]"),
    "set": lambda e, i: ([f"_s{i} = {{{e}}}"], f"next(iter(_s{i}))"),
    "namespace": lambda e, i: (["import types", f"_n{i} = types.SimpleNamespace(k={e})"], f"_n{i}.k"),
    "namedtuple": lambda e, i: (["import collections", f"_R{i} = collections.namedtuple('_R{i}', 'k')",
                                 f"_r{i} = _R{i}({e})"], f"_r{i}.k"),
    "class attribute": lambda e, i: ([f"class _C{i}:", f"    k = staticmethod({e})"], f"_C{i}.k"),
    "class attribute set": lambda e, i: ([f"class _C{i}:", "    pass", f"_C{i}.k = {e}"], f"_C{i}.k"),
    "instance attribute": lambda e, i: ([f"class _I{i}:", "    def __init__(self, f):", "        self.f = f",
                                         f"_i{i} = _I{i}({e})"], f"_i{i}.f"),
    "partial": lambda e, i: (["import functools", f"_p{i} = functools.partial({e})"], f"_p{i}"),
    "lambda": lambda e, i: ([f"_lam{i} = lambda *a, **k: ({e})(*a, **k)"], f"_lam{i}"),
    "helper": lambda e, i: ([f"def _h{i}(*a, **k):", f"    return ({e})(*a, **k)"], f"_h{i}"),
    "closure": lambda e, i: ([f"def _mk{i}():", f"    f = {e}", "    def inner(*a, **k):", "        return f(*a, **k)",
                              "    return inner", f"_c{i} = _mk{i}()"], f"_c{i}"),
    "default": lambda e, i: ([f"def _dflt{i}(*a, _f={e}, **k):", "    return _f(*a, **k)"], f"_dflt{i}"),
    "global": lambda e, i: ([f"def _set{i}():", f"    global _g{i}", f"    _g{i} = {e}", f"_set{i}()"], f"_g{i}"),
    "append": lambda e, i: ([f"_L{i} = []", f"_L{i}.append({e})"], f"_L{i}[0]"),
    "+=": lambda e, i: ([f"_L{i} = []", f"_L{i} += [{e}]"], f"_L{i}[0]"),
    "update": lambda e, i: ([f"_U{i} = {{}}", f"_U{i}.update(k={e})"], f"_U{i}['k']"),
    "setdefault": lambda e, i: ([f"_S{i} = {{}}", f"_S{i}.setdefault('k', {e})"], f"_S{i}['k']"),
    "comprehension": lambda e, i: ([f"_cp{i} = [f for f in [{e}]]"], f"_cp{i}[0]"),
    "dict comprehension": lambda e, i: ([f"_dc{i} = {{k: f for k, f in [('k', {e})]}}"], f"_dc{i}['k']"),
    "generator": lambda e, i: ([f"def _gen{i}():", f"    yield {e}"], f"next(_gen{i}())"),
    "for target": lambda e, i: ([f"for _f{i} in [{e}]:", "    pass"], f"_f{i}"),
    "walrus": lambda e, i: ([f"_w{i} = [(_z{i} := {e})]"], f"_z{i}"),
    "or": lambda e, i: ([f"_o{i} = None or {e}"], f"_o{i}"),
    "ifexp": lambda e, i: ([f"_ie{i} = {e} if True else None"], f"_ie{i}"),
    "unpack": lambda e, i: ([f"_u{i}, _v{i} = {e}, None"], f"_u{i}"),
    "starred": lambda e, i: ([f"_s{i}, *_rest{i} = [{e}, None]"], f"_s{i}"),
    "next(iter())": lambda e, i: ([f"_it{i} = next(iter([{e}]))"], f"_it{i}"),
    "map": lambda e, i: ([f"_mp{i} = list(map(lambda f: f, [{e}]))"], f"_mp{i}[0]"),
    "sorted": lambda e, i: ([f"_so{i} = sorted([{e}], key=id)"], f"_so{i}[0]"),
    "copy": lambda e, i: (["import copy", f"_cc{i} = copy.copy([{e}])"], f"_cc{i}[0]"),
    "reduce": lambda e, i: (["import functools", f"_rd{i} = functools.reduce(lambda a, b: b, [None, {e}])"], f"_rd{i}"),
    "enumerate": lambda e, i: ([f"_en{i} = list(enumerate([{e}]))"], f"_en{i}[0][1]"),
    "zip": lambda e, i: ([f"_zp{i} = list(zip([{e}], [None]))"], f"_zp{i}[0][0]"),
    "property": lambda e, i: ([f"class _P{i}:", "    @property", "    def f(self):", f"        return {e}"],
                              f"_P{i}().f"),
    "classmethod": lambda e, i: ([f"class _CM{i}:", "    @classmethod", "    def f(cls):", f"        return {e}"],
                                 f"_CM{i}.f()"),
    "decorator": lambda e, i: ([f"def _dec{i}(fn):", f"    return {e}", f"@_dec{i}", f"def _dd{i}():", "    pass"],
                               f"_dd{i}"),
    "with": lambda e, i: (["import contextlib", f"with contextlib.nullcontext({e}) as _wa{i}:", "    pass"], f"_wa{i}"),
    "except": lambda e, i: (["try:", f"    raise ValueError({e})", f"except ValueError as _ex{i}:",
                             f"    _ea{i} = _ex{i}.args[0]"], f"_ea{i}"),
    "super": lambda e, i: ([f"class _B{i}:", "    def f(self):", f"        return {e}", f"class _D{i}(_B{i}):",
                            "    def f(self):", "        return super().f()"], f"_D{i}().f()"),
}
LOCAL_HIDINGS = ("alias", "list", "tuple", "dict", "dict()", "list()", "namespace", "partial", "lambda", "append",
                 "+=", "update", "comprehension", "walrus", "or", "ifexp", "unpack", "starred", "next(iter())", "map",
                 "sorted", "reduce", "enumerate", "zip")
ENTRIES = ("direct", "default", "helper", "method", "assigned", "after honest def", "factory", "redefined later",
           "table")


def _body(atom_lines: list[str], steps: list[tuple[str, int]], atom: Atom, indent: str) -> tuple[list[str], str]:
    lines, expression = list(atom_lines), atom.expr
    for name, number in steps:
        more, expression = HIDINGS[name](expression, number)
        lines += more
    return [indent + line for line in lines], expression


def compose(rule: Rule, assignment: str, atom: Atom, steps: list[tuple[str, int]], entry: str) -> Route:
    """The program: the atom, hidden by `steps`, used by the task through `entry`."""
    task = rule.task
    needs = "    import einops\n    einops.rearrange(x, '... -> ...')\n" if rule.needs else ""
    local = atom.local or entry == "method"
    cells: list[str] = []
    if local:
        inner, expression = _body(atom.lines, [s for s in steps if s[0] in LOCAL_HIDINGS], atom, "    ")
        use = "\n".join(inner) + f"\n    return ({expression})(x)\n"
        module_lines: list[str] = []
    else:
        module_lines, expression = _body(atom.lines, steps, atom, "")
        use = f"    return ({expression})(x)\n"
    top = "\n".join(module_lines) + "\n" if module_lines else ""
    if task in CLASS_TASKS:
        body = f"class {task}(torch.optim.Optimizer):\n    def step(self, closure=None):\n        x = self\n" + \
            textwrap.indent(needs + use, "    ")
        cells.append(top + body if entry != "assigned" else top + body.replace(f"class {task}(", "class _Impl(") +
                     f"{task} = _Impl\n")
        return Route(rule, assignment, cells, f"{atom.label} / {'+'.join(s for s, _ in steps)} / class {entry}",
                     atom.dynamic)
    signature = "(x, *args, **kwargs)"
    if entry == "direct" or local:
        cells.append(top + f"def {task}{signature}:\n" + needs + use)
    elif entry == "default":
        cells.append(top + f"def {task}(x, *args, _f={expression}, **kwargs):\n" + needs + "    return _f(x)\n")
    elif entry == "helper":
        cells.append(top + f"def _helper(x):\n    return ({expression})(x)\n"
                           f"def {task}{signature}:\n" + needs + "    return _helper(x)\n")
    elif entry == "method":  # unreachable: local
        cells.append(top + f"def {task}{signature}:\n" + needs + use)
    elif entry == "assigned":
        cells.append(top + f"def _impl{signature}:\n" + needs + use + f"{task} = _impl\n")
    elif entry == "after honest def":
        cells += [f"def {task}{signature}:\n    return x\n", top + f"def _impl{signature}:\n" + needs + use +
                  f"{task} = _impl\n"]
    elif entry == "factory":
        cells.append(top + "def _make():\n" + f"    def inner{signature}:\n" + textwrap.indent(needs + use, "    ") +
                     f"    return inner\n{task} = _make()\n")
    elif entry == "redefined later":
        cells += [f"def {task}{signature}:\n    return x\n", top + f"def {task}{signature}:\n" + needs + use]
    elif entry == "table":
        cells.append(top + f"def _impl{signature}:\n" + needs + use + f"_TASKS = {{'t': _impl}}\n{task} = _TASKS['t']\n")
    if entry == "method" and not local:
        pass
    return Route(rule, assignment, cells, f"{atom.label} / {'+'.join(s for s, _ in steps)} / {entry}", atom.dynamic)


def atoms_of(rule: Rule, i: int) -> list[Atom]:
    """Every forbidden atom of a rule: its names (and a private torch name for private_of), methods, private
    attributes."""
    found = []
    for name in rule.names:
        found += name_atoms(name, i)
    for method in rule.methods:
        found += method_atoms(method, i)
    for owner in rule.private_of:
        found += name_atoms(f"{owner}._fused_adamw_", i) + name_atoms(f"{owner}._foreach_add_", i)
    if rule.private:
        found += private_atoms(i)
    return found


def routes(rule: Rule, assignment: str, count: int, seed: int, every_atom: bool = True) -> list[Route]:
    """`count` routes around `rule`: (with `every_atom`) each of its atoms once, alone, entered directly; then random
    compositions of up to four hidings and an entry."""
    generator = random.Random(f"{seed}-{assignment}-{rule.task}")
    atoms = atoms_of(rule, 0)
    made = [compose(rule, assignment, atom, [], "direct") for atom in atoms] if every_atom else []
    names = sorted(HIDINGS)
    while len(made) < (max(count, len(atoms)) if every_atom else count):
        atom = generator.choice(atoms)
        steps = [(generator.choice(names), n) for n in range(generator.randint(0, 4))]
        made.append(compose(rule, assignment, atom, steps, generator.choice(ENTRIES)))
    return made


def judge_route(route: Route):
    """The verdict on a route, as the grader's judge gives it (the assignment's set-up as context)."""
    code = Code(parse(route.cells), context=parse(setup_code(route.assignment)),
                entries=tasks_of(route.assignment) | {route.rule.task})
    return judge(route.rule, code, tasks_of(route.assignment))


# ---- honest notebooks ----------------------------------------------------------------------------------------------
NOISE = [
    "from torch.autograd import grad\n_x = torch.randn(3, requires_grad=True)\nprint(grad((_x ** 2).sum(), _x))",
    "print(torch.finfo(torch.float32).eps, torch.finfo(torch.bfloat16).max)",
    "import numpy as np\nprint(np.finfo(np.float16).max)",
    "_t = torch.arange(12).view(3, 4)\nprint(_t.stride(), _t.permute(1, 0).is_contiguous(), _t.reshape(4, 3).shape)",
    "import torch.utils.flop_counter\nwith torch.utils.flop_counter.FlopCounterMode(display=False) as _counter:\n"
    "    torch.ones(4, 4) @ torch.ones(4, 4)\nprint(_counter.get_total_flops())",
    "_opt = torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))], lr=0.1)\nprint(_opt)",
    "reference = torch.ones(2, 3)\nprint(reference.T.shape, reference.sum())",
    "import types\nconfig = types.SimpleNamespace(d_model=64, n_layers=2)\n"
    "print({f: getattr(config, f) for f in ('d_model', 'n_layers')})",
    "import collections\nMeta = collections.namedtuple('Meta', 'shape stride offset')\nm = Meta((2, 3), (3, 1), 0)\n"
    "print(m.stride, m.shape)",
    "%timeit -n 1 -r 1 torch.ones(3).sum()",
    "import timeit\nprint(timeit.timeit(lambda: torch.ones(3).sum(), number=3))",
    "grad = None  # a name reused",
    "x = torch.randn(2, 3, requires_grad=True)\n(x ** 2).sum().backward()\nprint(x.grad)",
    "def check(fn, *args):\n    return fn(*args)\nprint(check(torch.matmul, torch.ones(2, 2), torch.ones(2, 2)))",
    "_scratch = [torch.autograd.grad, torch.finfo]\nprint(len(_scratch))",
    "print(torch.autograd.grad, torch.einsum)",
    "import einops\nprint(torch.einsum('ij->ji', torch.ones(2, 3)).shape, einops.rearrange(torch.ones(2, 3), 'a b -> b a').shape)",
    "import math\nfor _name in ('sqrt', 'log2'):\n    print(getattr(math, _name)(16.0))",
    "results = {}\nfor _i in range(3):\n    results[_i] = torch.ones(_i + 1).sum().item()\nprint(results)",
    "_ops = {'mm': torch.matmul, 'add': torch.add}\nprint(_ops['mm'](torch.ones(2, 2), torch.ones(2, 2)))",
    "torch.autograd.grad   # its signature, shown by the notebook",
    "help(torch.finfo)",
    "for _ in range(2):\n    _ = torch.ones(2).sum()",
]
OWN_METHODS = ("backward", "view", "stride", "permute", "grad", "finfo", "step", "reshape", "einsum")


def honest_shape(task: str, solution: str, shape: str, generator: random.Random) -> str:
    """The task's solution cell rewritten in `shape`, still the task's own honest code."""
    if shape == "identity":
        return solution
    if task in CLASS_TASKS:
        if shape in ("wrapped", "decorated", "factory"):
            return solution + f"\n_Base_{task} = {task}\nclass {task}(_Base_{task}):\n    pass\n"
        if shape == "table":
            return solution + f"\n_TABLE = {{'t': {task}}}\n{task} = _TABLE['t']\n"
        return f"class {task}:\n    pass\n\n" + solution
    if shape == "wrapped":
        return solution + f"\n_impl_{task} = {task}\ndef {task}(*args, **kwargs):\n    return _impl_{task}(*args, **kwargs)\n"
    if shape == "decorated":
        return ("import functools\ndef _passthrough(fn):\n    @functools.wraps(fn)\n    def inner(*args, **kwargs):\n"
                "        return fn(*args, **kwargs)\n    return inner\n" + solution + f"\n{task} = _passthrough({task})\n")
    if shape == "factory":
        return f"def _make_{task}():\n" + textwrap.indent(solution, "    ") + f"\n    return {task}\n{task} = _make_{task}()\n"
    if shape == "table":
        return solution + f"\n_TABLE = {{'t': {task}}}\n{task} = _TABLE['t']\n"
    if shape == "redefined":
        return f"def {task}(*args, **kwargs):\n    raise NotImplementedError('replace this line')\n\n" + solution
    method = generator.choice(OWN_METHODS)
    if shape == "own methods":
        return (solution + f"\nclass _Own:\n    def __init__(self, fn):\n        self.fn = fn\n"
                f"    def {method}(self, *args, **kwargs):\n        return self.fn(*args, **kwargs)\n"
                f"_own_{task} = _Own({task})\ndef {task}(*args, **kwargs):\n    return _own_{task}.{method}(*args, **kwargs)\n")
    if shape == "own namedtuple":
        return (solution + f"\nimport collections\n_Rec = collections.namedtuple('_Rec', ['{method}', 'value'])\n"
                f"_rec_{task} = _Rec({method}={task}, value=1)\n"
                f"def {task}(*args, **kwargs):\n    return _rec_{task}.{method}(*args, **kwargs)\n")
    if shape == "local shadow":
        return (solution + f"\n_impl_{task} = {task}\ndef {task}(*args, **kwargs):\n"
                f"    {method} = _impl_{task}(*args, **kwargs)\n    return {method}\n")
    raise KeyError(shape)


SHAPES = ("identity", "wrapped", "decorated", "factory", "table", "redefined", "own methods", "own namedtuple",
          "local shadow")


@dataclass
class Honest:
    assignment: str
    notebooks: dict = field(default_factory=dict)
    how: str = ""


def honest_notebooks(assignment: str, count: int, seed: int) -> list[Honest]:
    """`count` honest notebooks of an assignment: the solution or the variant, each rule-bound task in a random
    shape, and up to four scratch cells anywhere."""
    generator = random.Random(f"{seed}-{assignment}")
    return [_honest(assignment, number, generator) for number in range(count)]


def _honest(assignment: str, number: int, generator: random.Random) -> Honest:
    import nbformat
    tasks = tasks_of(assignment)
    shapes: dict[str, str] = {}
    variants = __import__(f"tests.variants.{assignment}", fromlist=["VARIANTS"]).VARIANTS
    solved = number % 2 == 0

    def pick(i: int, grade_id: str, solution: str) -> str:
        solution = solution if solved else variants[grade_id].strip("\n") + "\n"
        if grade_id not in tasks:
            return solution
        shapes[grade_id] = generator.choice(SHAPES)
        return honest_shape(grade_id, solution, shapes[grade_id], generator)
    notebooks = submissions._fill(assignment, pick)
    noise = generator.sample(range(len(NOISE)), generator.randint(0, 4))
    for notebook in notebooks.values():
        for index in noise:
            notebook.cells.insert(generator.randint(1, len(notebook.cells)), nbformat.v4.new_code_cell(NOISE[index]))
    return Honest(assignment, notebooks, f"{'solution' if solved else 'variant'}; shapes {shapes}; scratch {noise}")


def judge_honest(honest: Honest) -> dict:
    """{test grade_id: verdict} as the grader judges the honest notebook."""
    found = {}
    for name, notebook in honest.notebooks.items():
        source = read_source(REPO / "source" / honest.assignment / f"{name}.ipynb")
        plan = make_plan(name, source, json.loads(json.dumps(notebook)))
        found.update({gid: v for gid, (_, v) in verdicts(honest.assignment, plan).items()})
    return found


# ---- the table -------------------------------------------------------------------------------------------------------
def measure(routes_per_rule: int, honest_per_assignment: int, seed: int = 59, every_atom: bool = True) -> dict:
    """Per rule: routes (zeroed, flagged, missed) and honest samples (charged, flagged); with the misses, charges and
    flags themselves for a person to read."""
    table: dict = {}
    for (assignment, test), rule in sorted(RULES.items()):
        row = table.setdefault(test, {"assignment": assignment, "task": rule.task, "routes": 0, "zeroed": 0,
                                      "flagged": 0, "missed": [], "honest": 0, "charged": [], "honest_flagged": []})
        for route in routes(rule, assignment, routes_per_rule, seed, every_atom):
            verdict = judge_route(route)
            row["routes"] += 1
            if verdict.broken:
                row["zeroed"] += 1
            elif verdict.dynamic:
                row["flagged"] += 1
            else:
                row["missed"].append((route.how, route.cells))
    for assignment in sorted({a for a, _ in RULES}):
        for honest in honest_notebooks(assignment, honest_per_assignment, seed):
            for test, verdict in judge_honest(honest).items():
                row = table[test]
                row["honest"] += 1
                if verdict.broken:
                    row["charged"].append((honest.how, verdict.broken))
                elif verdict.dynamic:
                    row["honest_flagged"].append((honest.how, verdict.dynamic))
    return table


def markdown(table: dict) -> str:
    """The table for docs/security.md."""
    lines = ["| exercise | task | routes | zeroed | flagged | missed | recall | honest | charged | flagged | precision |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    totals = [0] * 6
    for row in table.values():
        missed, charged, flagged = len(row["missed"]), len(row["charged"]), len(row["honest_flagged"])
        recall = (row["zeroed"] + row["flagged"]) / row["routes"]
        precision = 1.0 if not row["zeroed"] + charged else row["zeroed"] / (row["zeroed"] + charged)
        lines.append(f"| {row['assignment'][:2]} | `{row['task']}` | {row['routes']} | {row['zeroed']} | "
                     f"{row['flagged']} | {missed} | {recall:.0%} | {row['honest']} | {charged} | {flagged} | "
                     f"{precision:.0%} |")
        for index, value in enumerate((row["routes"], row["zeroed"], row["flagged"], missed, row["honest"], charged)):
            totals[index] += value
    flagged_honest = sum(len(r["honest_flagged"]) for r in table.values())
    lines.append(f"| all | | {totals[0]} | {totals[1]} | {totals[2]} | {totals[3]} | "
                 f"{(totals[1] + totals[2]) / totals[0]:.1%} | {totals[4]} | {totals[5]} | {flagged_honest} "
                 f"({flagged_honest / max(totals[4], 1):.1%}) | |")
    return "\n".join(lines)


if __name__ == "__main__":
    per_rule = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    per_assignment = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    measured = measure(per_rule, per_assignment)
    print(markdown(measured))
    for test, row in measured.items():
        for how, cells in row["missed"][:3]:
            print(f"MISSED {test}: {how}\n" + "\n---\n".join(cells))
        for how, broken in row["charged"][:3]:
            print(f"CHARGED {test}: {how}: {broken}")
        for how, dynamic in row["honest_flagged"][:3]:
            print(f"FLAGGED {test}: {how}: {dynamic}")
