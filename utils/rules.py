"""What a task may not use, checked on the task's code itself rather than by running it.

Reading the code means the check does not depend on anything the code does when it runs, so it holds where the code
cannot reach: the grader reads the submitted cells and decides outside the student's process, and the visible tests
run the same check in the notebook (`check_rule`), so that a student sees at once what grading will say.

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

Judged from the text here: every rule in `RULES` (what a task may call or reach). Measured by the kernel at run time
instead, by the grader from outside the student's process, against budgets the instructor declares beside the
hidden tests:
what a task's code costs: exercise 3's `sliding_windows` (peak memory: a view, not a copy), exercise 8's
`get_batch` (bytes read of a real memmap file: only the batch's pages; this replaced the text rule's only run-time
stand-in, a counting array-like whose insides a student could open) and exercise 9's `mlp_activation_bytes` (an MLP
forward pass's peak memory against the student's own prediction).
"""
from __future__ import annotations

import ast
import inspect
import types
from dataclasses import dataclass
from typing import Callable, Iterable

DYNAMIC_CALLS = {"getattr", "setattr", "delattr", "vars", "globals", "locals", "eval", "exec", "compile", "__import__"}
DYNAMIC_NAMES = ("importlib", "operator.attrgetter", "operator.methodcaller", "sys.modules", "builtins", "ctypes", "gc",
                 "inspect")
MAX_ROUTES = 256   # qualified names one name may stand for; past it the judge stops following and flags the notebook
SAFE_DUNDERS = {"__len__", "__getitem__", "__init__", "__call__", "__name__", "__doc__"}   # what len() and data[a:b] do
CODE_BUILDERS = {"exec", "eval", "compile", "__import__"}
DYNAMIC_ATTRIBUTES = {"__dict__", "__getattribute__", "__getattr__", "__globals__", "__builtins__", "__subclasses__",
                      "__closure__", "__code__", "__class__", "__bases__", "__mro__", "__self__", "__func__",
                      "__array__", "__setattr__", "__wrapped__"}


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


@dataclass
class Verdict:
    """What the code of a task uses against its rule (`broken`: the rule is broken, the task scores 0), and what it
    reaches by names built at run time (`dynamic`: a person decides)."""
    broken: list[str]
    dynamic: list[str]

    def message(self, rule: Rule) -> str:
        return f"{rule.task} uses {'; '.join(self.broken[:4])}, which this task rules out\nHint: {rule.why}"


# ---- reading code ------------------------------------------------------------------------------------------------
class Cells(list):
    """The cells that parse as Python (ast.Module each), and how many did not (`unreadable`)."""
    unreadable: int = 0


def parse(cells: Iterable[str]) -> Cells:
    """The cells that parse as Python (IPython's %magics and !shell lines turned into calls first); the others are
    counted, never silently dropped: the judge flags a notebook that has one."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        transform = TransformerManager().transform_cell
    except ImportError:  # outside IPython's reach: plain Python only
        def transform(text: str) -> str:
            return text
    modules = Cells()
    for text in cells:
        try:
            modules.append(ast.parse(transform(text)))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            modules.unreadable += 1
    return modules


class Code:
    """The student's cells, read: the last definition of each top-level name, and what each name may stand for."""

    def __init__(self, modules: list[ast.Module], context: list[ast.Module] = (), known: dict[str, str] | None = None):
        self.definitions: dict[str, list[ast.AST]] = {}
        for module in modules:
            defined: dict[str, list[ast.AST]] = {}
            for statement in module.body:
                for name in _defined_names(statement):
                    defined.setdefault(name, []).append(statement)
            self.definitions.update(defined)  # a later cell's definition replaces an earlier one
        self.aliases: dict[str, set[str]] = {name: {value} for name, value in (known or {}).items()}
        self.attribute_aliases: dict[str, set[str]] = {}
        self.star_imports: list[str] = []
        self.built: set[str] = set()   # names (and qualified names) bound to something built at run time
        # what the judge could not follow, for every task of the notebook: cells it cannot read, code built at run
        # time outside any function, names with more routes than MAX_ROUTES
        self.unfollowed: list[str] = []
        if getattr(modules, "unreadable", 0):
            self.unfollowed.append(f"{modules.unreadable} cell(s) the grader cannot read")
        try:
            for module in list(context) + list(modules):
                for node in ast.walk(module):
                    self._learn(node)
            for _ in range(3):  # x = torch; y = x.autograd; z = y.grad: a few rounds reach through such chains
                for node in (n for m in list(context) + list(modules) for n in ast.walk(m)):
                    self._learn(node)
        except RecursionError:
            self.unfollowed.append("code nested deeper than the grader follows")
        builders = sorted({n.func.id for m in modules for n in _top_level_calls(m)
                           if isinstance(n.func, ast.Name) and n.func.id in CODE_BUILDERS})
        if builders:
            self.unfollowed.append(f"code built at run time outside a function ({', '.join(builders)})")
        if any(len(found) > MAX_ROUTES for found in [*self.aliases.values(), *self.attribute_aliases.values()]):
            self.unfollowed.append(f"names aliased more than {MAX_ROUTES} ways")

    def _add(self, table: dict[str, set[str]], name: str, values: set[str]) -> None:
        """Learn that `name` may stand for `values`, up to MAX_ROUTES + 1 of them (past that, flagged, not followed)."""
        found = table.setdefault(name, set())
        for value in values:
            if len(found) > MAX_ROUTES:
                return
            found.add(value)

    def _learn(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases.setdefault(alias.asname, set()).add(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.aliases.setdefault(top, set()).add(top)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    self.star_imports.append(node.module)
                else:
                    self.aliases.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            values = self.qualified(node.value)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self._bind(target, node.value, values)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
            for argument, default in pairs:
                self._add(self.aliases, argument.arg, self.qualified(default))

    def _bind(self, target: ast.AST, value: ast.AST, values: set[str]) -> None:
        """Learn what `target = value` binds: a name, an attribute, or each name of an unpacking (element by element
        when both sides are as long, else each may hold any of the values)."""
        if isinstance(target, ast.Name):
            self._add(self.aliases, target.id, values)
            if self._built_at_run_time(value):
                self.built.add(target.id)
        elif isinstance(target, ast.Attribute):
            for name in self.qualified(target):
                self._add(self.attribute_aliases, name, values)
                if self._built_at_run_time(value):
                    self.built.add(name)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value, values)
        elif isinstance(target, (ast.Tuple, ast.List)):
            paired = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and \
                not any(isinstance(e, ast.Starred) for e in [*value.elts, *target.elts])
            for index, element in enumerate(target.elts):
                if paired:
                    self._bind(element, value.elts[index], self.qualified(value.elts[index]))
                else:
                    self._bind(element, value, values)

    def _built_at_run_time(self, value: ast.AST) -> bool:
        """Whether an assigned value holds a name built at run time (`getattr(m, "a" + "b")`, `eval`, `vars(m)[...]`,
        `__dict__`) or a name already bound to one: whatever is bound to it cannot be read from the code."""
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_CALLS \
                    and _literal_getattr(node) is None and node.func.id not in self.definitions:
                return True
            if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRIBUTES:
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and ({getattr(node, "id", None)} | self.qualified(node)) & self.built:
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and any(_under(n, DYNAMIC_NAMES) for n in self.qualified(node)):
                return True
        return False

    def qualified(self, node: ast.AST) -> set[str]:
        """The qualified names an expression may stand for (empty when it is not a name the code can place)."""
        if isinstance(node, ast.Name):
            found = set(self.aliases.get(node.id, ()))
        elif isinstance(node, ast.Attribute):
            found = {f"{base}.{node.attr}" for base in self.qualified(node.value)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            found = {f"{base}.{node.args[1].value}" for base in self.qualified(node.args[0])}
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):   # a container stands for what it holds
            found = {name for element in node.elts for name in self.qualified(element)}
        elif isinstance(node, ast.Dict):
            found = {name for value in node.values for name in self.qualified(value)}
        elif isinstance(node, (ast.Subscript, ast.Starred)):     # and an element of it for the same
            found = self.qualified(node.value)
        elif isinstance(node, ast.Call) and node.args and \
                any(_under(name, ("functools.partial",)) for name in self.qualified(node.func)):
            found = self.qualified(node.args[0])                 # partial(f, ...) stands for f
        else:
            return set()
        for name in list(found):
            found |= self.attribute_aliases.get(name, set())
        return set(sorted(found)[:MAX_ROUTES + 1])

    def reachable(self, task: str, stand_ins: Iterable[str] = ()) -> list[tuple[str, ast.AST]]:
        """(the name it defines, a definition) for `task` and for every top-level function or class of the student's
        it refers to, but the other tasks' own (`stand_ins`): each is judged as its own task, so a rule it breaks
        costs its points once."""
        todo, seen, nodes = [task], set(stand_ins) - {task}, []
        while todo:
            name = todo.pop()
            if name in seen or name not in self.definitions:
                continue
            seen.add(name)
            for statement in self.definitions[name]:
                nodes.append((name, statement))
                todo += [n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and n.id in self.definitions]
        return nodes


def _top_level_calls(module: ast.Module) -> list[ast.Call]:
    """The calls a cell makes outside any function or class body (what runs when the cell runs)."""
    calls, todo = [], list(module.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            calls.append(node)
        todo += list(ast.iter_child_nodes(node))
    return calls


def _defined_names(statement: ast.AST) -> list[str]:
    """The names a top-level statement defines as code: functions, classes, and names bound to lambdas (a plain value
    is followed through the aliases instead; a notebook's `x = torch.arange(3).view(1, 3)` is no task's code)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    holds_code = isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None and \
        any(isinstance(node, ast.Lambda) for node in ast.walk(statement.value))
    if holds_code and isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)]
    if holds_code and isinstance(statement.target, ast.Name):
        return [statement.target.id]
    return []


# ---- judging -----------------------------------------------------------------------------------------------------
def _under(name: str, prefixes: Iterable[str]) -> str | None:
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def judge(rule: Rule, code: Code, stand_ins: Iterable[str] = ()) -> Verdict:
    """What the task's code (found in `code`) uses against `rule`; what the judge could not follow in the notebook
    is `dynamic` for every task (a person looks). `stand_ins`: other tasks' functions, judged as their own tasks
    (`tasks_of`): a later task that calls an earlier one is not charged for the earlier one's rule."""
    try:
        return _judge(rule, code, stand_ins)
    except RecursionError:
        return Verdict([], ["code nested deeper than the grader follows"])


def _judge(rule: Rule, code: Code, stand_ins: Iterable[str]) -> Verdict:
    owned = code.reachable(rule.task, stand_ins)
    nodes = [statement for _, statement in owned]
    broken, dynamic, used = [], list(code.unfollowed), set()
    for owner, node in ((o, n) for o, statement in owned for n in ast.walk(statement)):
        path = "" if owner == rule.task else f", reached through your `{owner}`"   # the message names the route
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            for name in code.qualified(node):
                used.add(name)
                hit = _under(name, rule.names)
                if hit:
                    broken.append(hit + path)
                elif _under(name, rule.private_of) and any(part.startswith("_") and not part.startswith("__")
                                                           for part in name.split(".")):
                    broken.append(name + path)
                if _under(name, DYNAMIC_NAMES):
                    dynamic.append(name)
            built = ({node.id} if isinstance(node, ast.Name) else set()) | code.qualified(node)
            if built & code.built:
                dynamic.append(f"{sorted(built & code.built)[0]} (bound to a name built at run time)")
        attribute = node.attr if isinstance(node, ast.Attribute) else _literal_getattr(node)
        if attribute is not None:
            base = node.value if isinstance(node, ast.Attribute) else node.args[0]
            allowed = any(_under(name, rule.needs) for name in code.qualified(base))  # einops.einsum is einops'
            if attribute in rule.methods and not allowed:
                broken.append(f".{attribute}{path}")
            elif rule.private and attribute.startswith("_") and not attribute.startswith("__"):
                broken.append(f"a private attribute (.{attribute}){path}")
            elif rule.private and attribute.startswith("__") and attribute not in SAFE_DUNDERS:
                dynamic.append(f"a special method (.{attribute})")   # __getstate__, __reduce__: the stand-in's insides
            elif attribute in DYNAMIC_ATTRIBUTES:
                dynamic.append(f".{attribute}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_CALLS \
                and _literal_getattr(node) is None and node.func.id not in code.definitions:
            dynamic.append(f"{node.func.id}()")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and "@" in rule.methods:
            broken.append(f"the @ operator{path}")
    dynamic += [f"from {m} import *" for m in code.star_imports]
    unanswered = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.dump(n) for s in nodes for n in ast.walk(s))
    if rule.needs and nodes and not unanswered and not any(_under(name, rule.needs) for name in used):
        broken.append(f"none of {', '.join(rule.needs)} (the task asks for them)")
    return Verdict(list(dict.fromkeys(broken)), list(dict.fromkeys(dynamic)))


def _literal_getattr(node: ast.AST) -> str | None:
    """The attribute of `getattr(x, "name")` (a literal name), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr", "delattr") \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return node.args[1].value
    return None


# ---- in a notebook -----------------------------------------------------------------------------------------------
def _notebook_cells(fn: Callable) -> list[str]:
    """The cells run so far in this kernel (IPython's `In`), else the source of `fn` itself."""
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # defined inside IPython only
        cells = [text for text in shell.user_ns.get("In", []) if text]
    except NameError:
        cells = []
    if cells:
        return cells
    try:
        return [inspect.getsource(inspect.unwrap(fn))]
    except (OSError, TypeError):
        return []


def _globals_named(fn: Callable) -> dict[str, str]:
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


def check_rule(assignment: str, test: str, fn: Callable) -> None:
    """The visible side of a task's rule: AssertionError with the rule it breaks, as grading will decide; a warning
    printed when the code reaches names built at run time (grading flags those for a person)."""
    rule = RULES.get((assignment, test))
    if rule is None:
        return
    verdict = judge(rule, Code(parse(_notebook_cells(fn)), known=_globals_named(fn)), tasks_of(assignment))
    if verdict.broken:
        raise AssertionError(verdict.message(rule))
    if verdict.dynamic:
        print(f"Note: {rule.task} reaches {', '.join(verdict.dynamic[:3])}, which grading cannot read from the code: "
              "it will be flagged for your instructor to look at.")


# ---- the rules ----------------------------------------------------------------------------------------------------
# What each exercise's text says a task may not use (the exercise's intro and the task's own text say it to students).
LAYOUT_ORACLES = ("torch.Tensor.stride", "torch.Tensor.storage_offset", "torch.Tensor.is_contiguous", "torch.Tensor.view",
                  "torch.Tensor.reshape", "torch.Tensor.as_strided", "torch.Tensor.set_", "torch.as_strided",
                  "torch.empty_strided", "torch._prims_common", "utils.strides")
LAYOUT_METHODS = ("stride", "storage_offset", "is_contiguous", "view", "reshape", "as_strided", "set_")
FLOP_COUNTERS = ("torch.utils.flop_counter", "utils.flops.FlopCounterMode", "utils.flops.count_flops")
AUTOGRAD = ("torch.autograd", "torch.func", "utils.gradients.autograd_linear_grads",
            "utils.gradients.autograd_two_layer_grads", "utils.gradients.autograd_linear_stack_grads",
            "utils.gradients.autograd_linear_stack_activation_grads")
READY_OPTIMIZERS = ("torch.optim.SGD", "torch.optim.Adagrad", "torch.optim.Adam", "torch.optim.AdamW",
                    "torch.optim.RMSprop", "torch.optim.Adamax", "torch.optim.NAdam", "torch.optim.RAdam",
                    "torch.optim.ASGD", "torch.optim.Rprop", "torch.optim.LBFGS", "torch.optim.Adadelta",
                    "torch.optim.SparseAdam", "torch.optim.sgd", "torch.optim.adagrad", "torch.optim.adam",
                    "torch.optim.adamw", "torch.optim.rmsprop", "torch.optim._functional", "utils.optimizers",
                    "utils.optimizer_checks")
EINOPS_ONLY = ("view", "reshape", "permute", "transpose", "movedim", "moveaxis", "swapaxes", "swapdims", "flatten",
               "unflatten", "einsum", "matmul", "bmm", "mm", "T", "mT", "@")
AUTOCASTS = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode", "torch.cpu.amp.autocast",
             "torch.cuda.amp.autocast", "torch.set_autocast_enabled")
GRAD_SCALERS = ("torch.amp.GradScaler", "torch.amp.grad_scaler", "torch.cuda.amp.GradScaler", "torch.cpu.amp.GradScaler",
                "torch._amp_foreach_non_finite_check_and_unscale_", "torch._amp_update_scale_")
FLOAT_ORACLES = ("torch.finfo", "numpy.finfo", "utils.floats")
MACHINE_QUERIES = ("torch.cuda", "torch.backends", "torch.accelerator", "torch.mps", "utils.device", "utils.transfer",
                   "utils.units")
GRADIENT_COUNTERS = ("utils.gradients.count_two_layer_flops", "utils.gradients.count_linear_stack_flops")
_FROM_THE_SHAPE = (("torch.nn", "torch.utils.flop_counter", "utils.models", "utils.gpt", "utils.flops", "utils.planning"),
                   ("parameters", "named_parameters"))

_YOURSELF = "this task asks you to work it out yourself; the lecture shows how."
_FROM_BITS = "work it out from the format's bits, as the lecture's sections on the formats do."
_ARGUMENTS = "work it out from the arguments you are given, not by asking this machine or the course's helpers."
_SHAPE = "count from the shape, as the lecture's accounting does: no model to build, no counter to run."
_LAYOUT = "work the layout out yourself, in plain Python (the lecture's sections on strides show how)."
_OWN_UPDATE = "write the update rule yourself, in a subclass of torch.optim.Optimizer (the lecture's SGD shows the shape)."
_BY_HAND = "write the gradient by hand, as the lecture's backward pass does; autograd is for checking, in a scratch cell."
_EINOPS = "this task is einops only: do the rearranging and the products with rearrange, reduce or einsum."
RULES: dict[tuple[str, str], Rule] = {
    ("01_floats", "test_decode"): Rule("decode", FLOAT_ORACLES, why=_FROM_BITS),
    ("01_floats", "test_limits"): Rule("limits", FLOAT_ORACLES, why=_FROM_BITS),
    ("01_floats", "test_tensor_nbytes"): Rule("tensor_nbytes", ("utils.units",), why=_YOURSELF),
    ("01_floats", "test_after_cast"): Rule("after_cast", FLOAT_ORACLES, why=_FROM_BITS),
    ("02_tensors_on_gpu", "test_pick_device"): Rule("pick_device", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_allocated_bytes"): Rule("allocated_bytes", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_to_copies"): Rule("to_copies", MACHINE_QUERIES, why=_ARGUMENTS),
    ("02_tensors_on_gpu", "test_copy_gb_per_s"): Rule("copy_gb_per_s", ("utils.timing.time_it",
                                                                        "utils.transfer.copy_bandwidth"),
                                                       why="time the copies yourself with the clock you are given."),
    ("03_strides_views", "test_storage_index"): Rule("storage_index", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_row_major_strides"): Rule("row_major_strides", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_is_contiguous"): Rule("is_contiguous", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_slice_metadata"): Rule("slice_metadata", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("03_strides_views", "test_sliding_windows"): Rule("sliding_windows", ("torch.Tensor.unfold",), ("unfold",),
                                                       why="build the view with as_strided, from x's own stride and offset."),
    ("03_strides_views", "test_can_view"): Rule("can_view", LAYOUT_ORACLES, LAYOUT_METHODS, why=_LAYOUT),
    ("04_einops_jaxtyping", "test_split_qkv"): Rule("split_qkv", ("torch.einsum", "torch.functional"), EINOPS_ONLY,
                                                     needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_merge_heads"): Rule("merge_heads", ("torch.einsum", "torch.functional"), EINOPS_ONLY,
                                                       needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_attention_scores"): Rule("attention_scores", ("torch.einsum", "torch.functional",
                                                                                "torch.nn.functional"), EINOPS_ONLY,
                                                           needs=("einops",), why=_EINOPS),
    ("04_einops_jaxtyping", "test_checked_masked_mean"): Rule("checked_masked_mean", ("torch.einsum", "torch.functional",
                                                                                      "torch.mean", "torch.sum"),
                                                              EINOPS_ONLY + ("mean", "sum"), needs=("einops",), why=_EINOPS),
    ("05_flops_mfu", "test_matmul_flop_count"): Rule("matmul_flop_count", FLOP_COUNTERS + ("utils.flops.matmul_flops",),
                                                      why="count the multiply-adds from the shapes yourself."),
    ("05_flops_mfu", "test_linear_model_flops"): Rule("linear_model_flops", FLOP_COUNTERS + (
        "utils.flops.matmul_flops", "utils.flops.linear_flops"), why="count from the shapes, with your matmul_flop_count."),
    ("05_flops_mfu", "test_matmul_intensity"): Rule("matmul_intensity", FLOP_COUNTERS,
                                                     why="FLOPs from your matmul_flop_count, bytes from the shapes."),
    ("06_gradients", "test_w2_grad"): Rule("w2_grad", AUTOGRAD, ("backward",), why=_BY_HAND),
    ("06_gradients", "test_h1_grad"): Rule("h1_grad", AUTOGRAD, ("backward",), why=_BY_HAND),
    ("06_gradients", "test_two_layer_grads"): Rule("two_layer_grads", AUTOGRAD, ("backward",), why=_BY_HAND),
    ("06_gradients", "test_two_layer_flops"): Rule("two_layer_flops", FLOP_COUNTERS + GRADIENT_COUNTERS,
                                                    why="count the matmuls of the forward and backward passes yourself."),
    ("06_gradients", "test_stack_grads"): Rule("stack_grads", AUTOGRAD, ("backward",), why=_BY_HAND),
    ("06_gradients", "test_stack_flops"): Rule("stack_flops", FLOP_COUNTERS + GRADIENT_COUNTERS,
                                                why="count the matmuls of the forward and backward passes yourself."),
    ("07_models_optimizers", "test_MomentumSGD"): Rule("MomentumSGD", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_AdaGrad"): Rule("AdaGrad", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_AdamW"): Rule("AdamW", READY_OPTIMIZERS, private_of=("torch",), why=_OWN_UPDATE),
    ("07_models_optimizers", "test_state_bytes"): Rule("state_bytes", ("utils.memory",), why=_YOURSELF),
    ("07_models_optimizers", "test_largest_model"): Rule("largest_model", ("utils.memory",), why=_YOURSELF),
    ("08_training_loop", "test_get_batch"): Rule("get_batch", ("utils.training",), private=True,
                                                  why="read the windows through len(data) and data[a:b] only, as a "
                                                      "memmap is read."),
    ("08_training_loop", "test_train"): Rule("train", ("utils.training",), why="write the loop yourself."),
    ("08_training_loop", "test_save_checkpoint"): Rule("save_checkpoint", ("utils.training",), why=_YOURSELF),
    ("08_training_loop", "test_load_checkpoint"): Rule("load_checkpoint", ("utils.training",), why=_YOURSELF),
    ("09_mixed_precision", "test_master_weight_step"): Rule("master_weight_step", ("utils.mixed_precision",),
                                                             why=_YOURSELF),
    ("09_mixed_precision", "test_loss_scaled_step"): Rule("loss_scaled_step", ("utils.mixed_precision",) + GRAD_SCALERS,
                                                           why="scale, unscale and look for inf yourself, without GradScaler."),
    ("09_mixed_precision", "test_next_loss_scale"): Rule("next_loss_scale", ("utils.mixed_precision",) + GRAD_SCALERS,
                                                          why="follow GradScaler's rule yourself, without GradScaler."),
    ("09_mixed_precision", "test_mlp_activation_bytes"): Rule("mlp_activation_bytes", ("utils.mixed_precision",),
                                                               why="count the saved tensors' bytes yourself."),
    ("09_mixed_precision", "test_autocast_dtype"): Rule("autocast_dtype", ("utils.mixed_precision",) + AUTOCASTS,
                                                         why="answer from autocast's rules (the lecture's table), "
                                                             "without running autocast."),
    ("10_accounting_a_training_run", "test_param_count"): Rule("param_count", *_FROM_THE_SHAPE, why=_SHAPE),
    ("10_accounting_a_training_run", "test_training_flops_per_token"): Rule("training_flops_per_token", *_FROM_THE_SHAPE,
                                                                            why=_SHAPE),
    ("10_accounting_a_training_run", "test_memory_per_gpu"): Rule("memory_per_gpu", *_FROM_THE_SHAPE, why=_SHAPE),
    ("10_accounting_a_training_run", "test_training_days"): Rule("training_days", *_FROM_THE_SHAPE, why=_SHAPE),
}


def tasks_of(assignment: str) -> set[str]:
    """The functions of an assignment's rule-bound tasks: in one task's judgement, the others' are stand-ins."""
    return {rule.task for (name, _), rule in RULES.items() if name == assignment}
