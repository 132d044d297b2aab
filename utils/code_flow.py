"""What a notebook's code can hold, reach and call, read from its text: the analysis under the task rules
(utils/rule_judge.py), torch-free so that the grader can run it outside the student's process.

Why an analysis of its own rather than a linter's: the question is not "which names does this function mention" but
"what can each expression evaluate to", however the value travelled (an alias, a default argument, a container, a
closure, a class attribute, a namespace, a factory's return). That is a points-to analysis: an inclusion-based
(Andersen) one over abstract values, flow-insensitive inside functions, context-insensitive, with one abstract object
per allocation site (a list literal, a `dict(...)` call, a class instance). It is *sound by construction*: every
expression kind has a rule; one the analysis has no rule for evaluates to `DYN` (a value nobody can read), and so does
anything built at run time (`getattr(m, "a" + b)`, `eval`, `vars()`, `__dict__`), so that a use of it flags the task
for a person instead of passing it.

Values (tuples, so that they hash):
    ("e", "torch.autograd.grad")    something outside the notebook, by its qualified name (a module, function, class)
    ("o",)                          data from outside (an argument from the tests, what a library call returned)
    ("s", "text")                   a string constant (getattr(x, name) with a known name is read exactly)
    ("f", fid) ("c", cid) ("i", cid) a function, class, instance of the student's (fid, cid: index in Program)
    ("b", fid, self)                a method bound to `self`
    ("x", site)                     a container made at one site: list, tuple, dict, set, namespace, partial, generator
    ("n", site)                     a namedtuple class made at one site
    ("w", name)                     a decorator known to hand back what it is given (functools.wraps, torch.no_grad())
    ("u", cid, self)                super() in a method of class cid
    ("d", why)                      a value built at run time, which no reading of the text can tell
    ("q", value)                    `value`, but reached only through code outside the notebook (a library call that
                                    may have kept it): what it leads to is flagged, never charged

Scopes are Python's, from the stdlib's `symtable` (function locals, closures, class bodies, comprehensions, global
and nonlocal), mapped onto the syntax tree. Top-level names follow the notebook's order: a read at the top level sees
the bindings before it (a later `def` of the same name in a cell that cannot fail first replaces an earlier one), and a
function sees every binding from its own definition on, since it may be called at any time after.
"""
from __future__ import annotations

import ast
import builtins
import re
import symtable
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

Value = tuple
OPAQUE: Value = ("o",)
OUTPUTS: Value = ("x", ("IPython's Out",))
QSTAR: Value = ("q*",)  # anything the notebook handed to code outside it, handed back
MAX_VALUES = 256       # values one name or field may hold; past it the notebook is flagged (dead code that doubles)
MAX_DEPTH = 12         # components of a qualified name (torch.a.b...); deeper is a value nobody can read
KEPT_DEPTH = 5          # names under a rule's module (torch, numpy, utils) are followed this deep, whatever they are
MAX_ROUNDS = 400       # rounds to a fixed point; a notebook that needs more is flagged
SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
               ast.DictComp, ast.GeneratorExp)
COMPREHENSIONS = {ast.ListComp: "listcomp", ast.SetComp: "setcomp", ast.DictComp: "dictcomp", ast.GeneratorExp: "genexpr"}
Comprehension = ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda

# What runs code or binds names from text at run time: anywhere in a notebook, the judge cannot read the notebook.
CODE_BUILDERS = {"builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__", "builtins.breakpoint",
                 "builtins.globals", "builtins.locals", "builtins.vars"}
# Names whose values are reflection: what they give is a value built at run time.
REFLECTIVE = ("importlib", "operator.attrgetter", "operator.methodcaller", "sys.modules", "sys._getframe",
              "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.meta_path",
              "sys.path_hooks", "sys.exc_info", "sys.exception", "sys.last_value", "sys.last_traceback",
              "sys.monitoring", "builtins.__dict__", "ctypes", "gc",
              "inspect", "types.FunctionType", "types.CodeType", "types.ModuleType", "types.LambdaType", "marshal",
              "pickle", "copyreg", "runpy", "code", "codeop", "__main__", "IPython", "torch.overrides", "torch.compile",
              "torch._dynamo", "torch.fx", "torch.jit", "torch.library", "torch.package", "torch.hub", "torch.ops",
              "builtins.get_ipython", "dill", "cloudpickle", "pydoc", "zipimport", "pkgutil", "site", "threading",
              "multiprocessing", "concurrent", "subprocess", "os.system", "os.exec", "os.fork", "signal", "atexit",
              "weakref", "builtins.type.__getattribute__", "builtins.object.__getattribute__",
              # names as strings turned into objects, and threads the watch does not follow (red team, 2026-11-30)
              "logging.config", "unittest.mock", "asyncio", "_thread", "sched")
# Modules a notebook may import whose code the judge need not read (the course's libraries and the standard library);
# any other import is code the judge never saw (a file the notebook wrote, say), and flags the notebook.
KNOWN_MODULES = set(sys.stdlib_module_names) | {
    "torch", "numpy", "einops", "jaxtyping", "beartype", "typeguard", "utils", "matplotlib", "IPython", "scipy",
    "pandas", "tqdm", "nbformat", "PIL", "sympy", "mpmath", "tabulate", "rich", "pytest", "hypothesis"}
# Calls that read their arguments and keep none of them (nothing escapes into them), and return plain data.
PURE = {f"builtins.{n}" for n in (
    "len isinstance issubclass print repr str int float bool abs round hash id format chr ord bin hex oct divmod pow "
    "callable ascii hasattr any all range slice complex bytes bytearray memoryview open input dir help").split()}
PURE |= {"math." + n for n in dir(__import__("math"))} | {"time.perf_counter", "time.time", "time.monotonic",
                                                           "time.sleep", "time.process_time"}
# Calls that make a container of what they are given (their contents are the arguments' contents).
CONTAINERS = {f"builtins.{n}" for n in "list tuple set frozenset iter reversed sorted enumerate zip filter map dict "
              "min max sum next".split()} | {
    "collections.OrderedDict", "collections.defaultdict", "collections.deque", "collections.ChainMap",
    "collections.Counter", "copy.copy", "copy.deepcopy", "itertools.chain", "itertools.chain.from_iterable",
    "itertools.cycle", "itertools.repeat", "itertools.product", "itertools.permutations", "itertools.combinations",
    "itertools.islice", "itertools.accumulate", "itertools.starmap", "itertools.zip_longest", "itertools.tee",
    "itertools.groupby", "itertools.compress", "itertools.dropwhile", "itertools.takewhile", "itertools.pairwise",
    "itertools.filterfalse", "functools.reduce", "heapq.nlargest", "heapq.nsmallest", "operator.getitem",
    "builtins.dict.fromkeys", "types.MappingProxyType"}
TUPLES_OF = {"builtins.zip", "builtins.enumerate", "itertools.product", "itertools.zip_longest", "itertools.pairwise",
             "itertools.combinations", "itertools.permutations", "itertools.groupby",
             "itertools.combinations_with_replacement"}
CALLS_ITS_FUNCTIONS = {"builtins.map", "builtins.filter", "builtins.sorted", "builtins.min", "builtins.max",
                       "functools.reduce", "itertools.accumulate", "itertools.starmap", "itertools.groupby",
                       "itertools.dropwhile", "itertools.takewhile", "itertools.filterfalse"}
# Decorators (and what makes them) that hand back the function they are given, or one that calls it.
IDENTITY_DECORATORS = {"functools.wraps", "functools.lru_cache", "functools.cache", "functools.cached_property",
                       "functools.total_ordering", "functools.singledispatch", "dataclasses.dataclass",
                       "builtins.staticmethod", "builtins.classmethod", "builtins.property", "abc.abstractmethod",
                       "typing.overload", "typing.final", "typing.no_type_check", "typing.runtime_checkable",
                       "contextlib.contextmanager", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
                       "torch.set_grad_enabled", "torch.autograd.grad_mode.no_grad", "jaxtyping.jaxtyped",
                       "beartype.beartype", "typeguard.typechecked"}
DECORATOR_FACTORIES = {"functools.wraps", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
                       "torch.set_grad_enabled", "torch.autograd.grad_mode.no_grad", "jaxtyping.jaxtyped"}
CALLS_AND_FORGETS = {"timeit.timeit", "timeit.repeat", "timeit.Timer"}
NAMESPACES = {"builtins.globals", "builtins.locals", "builtins.vars"}   # read-only use is no flag; writing is
NAMESPACE_VALUES = {"globals()", "locals()", "vars()"}
# Attributes an annotation may read that surely exist (a def whose annotation raises does not bind: a later
# honest def replaces an earlier one only when its header cannot raise).
KNOWN_ATTRIBUTES = {"torch": {"Tensor", "dtype", "device", "Size", "Generator", "nn.Module", "nn.Parameter",
                              "optim.Optimizer", "float32", "float16", "bfloat16", "float64"},
                    "numpy": {"ndarray", "dtype", "float32", "float64", "int64"},
                    "typing": {"Any", "Callable", "Optional", "Sequence", "Iterable", "Iterator", "Union"}}
PROPERTY_DECORATORS = {"property", "cached_property", "setter", "getter", "deleter"}
BUILTIN_NAMES = set(dir(builtins))


class Unscopable(Exception):
    """A cell whose scopes the judge could not map (symtable and the syntax tree disagree)."""


# ---- the program: cells, scopes, functions, classes ---------------------------------------------------------------
@dataclass
class Scope:
    key: int
    kind: str                     # "module", "function", "class"
    table: symtable.SymbolTable | None
    parent: "Scope | None"
    node: ast.AST | None
    pos: int                      # the top-level statement it was defined in (its order in the notebook)
    owner: str                    # the top-level name it belongs to, for messages
    fid: int | None = None
    cid: int | None = None


@dataclass
class Fn:
    fid: int
    node: FunctionNode
    scope: Scope
    positional: list[str]
    vararg: str | None
    kwonly: list[str]
    kwarg: str | None
    generator: bool
    is_async: bool
    kind: str                     # "function", "method", "static", "class", "property"
    cid: int | None               # the class it is a method of


@dataclass
class Cls:
    cid: int
    node: ast.ClassDef
    scope: Scope
    name: str


@dataclass
class Def:
    """One top-level binding of a name: at statement `pos`; `certain`: it runs whenever its cell runs and replaces what
    came before; `anytime`: bound inside a function (`global`), so at any time."""
    key: tuple
    pos: float
    certain: bool
    anytime: bool = False
    star: str | None = None       # `from star import *`: may bind any name as star.<name>


class Program:
    """The notebook's cells read once: every scope, function and class, and each top-level statement's position."""

    def __init__(self, cells: list[tuple[ast.Module, str]], context: list[tuple[ast.Module, str]],
                 known: dict[str, str] | None = None):
        self.scopes: list[Scope] = []
        self.fns: list[Fn] = []
        self.classes: list[Cls] = []
        self.scope_of: dict[int, Scope] = {}      # id(node) -> the scope a function/class/lambda/comprehension opens
        self.statements: list[tuple[ast.stmt, Scope, bool, int]] = []   # (statement, module scope, certain, cell)
        self.problems: list[str] = []
        self.known = dict(known or {})
        self.cell_starts: list[int] = []          # position of each student cell's first statement
        self.context_end = 0
        for index, (module, text) in enumerate([*context, *cells]):
            if index == len(context):
                self.context_end = len(self.statements)
            if index >= len(context):
                self.cell_starts.append(len(self.statements))
            self._add_cell(module, text, from_context=index < len(context))
        if not cells:
            self.context_end = len(self.statements)
        self.student_stores = self._student_stores(cells)
        self.student_bound = set().union(*(_bound_names(s) for s, _, ctx, _ in self.statements if not ctx)) | {
            name for module, _ in cells for node in ast.walk(module) if isinstance(node, ast.Global)
            for name in node.names}
        self.context_bound = set(self.known) | set().union(*(_bound_names(s) for s, _, ctx, _ in self.statements if ctx))
        self.context_modules = {alias.asname or alias.name: alias.name for s, _, ctx, _ in self.statements if ctx
                                and isinstance(s, ast.Import) for alias in s.names if "." not in alias.name}
        self.certain = {pos: self._certain(pos) for pos in range(len(self.statements))}
        self.scope_fn: dict[int, int] = {}       # scope key -> the function (fid) whose call runs it
        for scope in self.scopes:
            owner: Scope | None = scope
            while owner is not None and owner.fid is None and owner.kind == "function":
                owner = owner.parent
            if owner is not None and owner.fid is not None:
                self.scope_fn[scope.key] = owner.fid

    def _add_cell(self, module: ast.Module, text: str, from_context: bool) -> None:
        try:
            table = symtable.symtable(text, "<cell>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.problems.append("a cell whose names the grader cannot place")
            return
        scope = self._scope("module", table, None, None, len(self.statements), "")
        try:
            self._map(scope, module.body, table)
        except Unscopable as why:
            self.problems.append(f"a cell whose names the grader cannot place ({why})")
            return
        except RecursionError:
            self.problems.append("code nested deeper than the grader follows")
            return
        for statement in module.body:
            self.statements.append((statement, scope, from_context, len(self.cell_starts)))
            self._reposition(statement, len(self.statements) - 1)

    def fn_of(self, node: ast.AST) -> Fn:
        """The function a `def` or `lambda` node defines."""
        fid = self.scope_of[id(node)].fid
        if fid is None:
            raise ValueError(f"{type(node).__name__} defines no function")
        return self.fns[fid]

    def _reposition(self, statement: ast.AST, pos: int) -> None:
        """Give every scope opened inside a top-level statement that statement's position and top-level name."""
        owner = _top_name(statement)
        for node in ast.walk(statement):
            scope = self.scope_of.get(id(node))
            if scope is not None:
                scope.pos, scope.owner = pos, owner or scope.owner

    def _scope(self, kind: str, table, parent, node, pos: int, owner: str) -> Scope:
        scope = Scope(len(self.scopes), kind, table, parent, node, pos, owner)
        self.scopes.append(scope)
        if node is not None:
            self.scope_of[id(node)] = scope
        return scope

    def _map(self, scope: Scope, body: Sequence[ast.AST], table: symtable.SymbolTable) -> None:
        """Pair each scope-opening node under `body` with its symbol table, in the order symtable made them (CPython's
        visitor order: defaults, annotations and decorators before a function's own table; a comprehension's first
        iterable in the enclosing scope)."""
        nodes = list(_child_scopes(body))
        children = table.get_children()
        groups: dict[tuple, list] = {}
        for child in children:
            groups.setdefault((child.get_name(), child.get_lineno()), []).append(child)
        for node in nodes:
            name = getattr(node, "name", None) or ("lambda" if isinstance(node, ast.Lambda) else COMPREHENSIONS[type(node)])
            line = getattr(node, "lineno", None)   # every scope-opening node is a statement or an expression
            pending = groups.get((name, line))
            if not pending:
                raise Unscopable(f"{name} on line {line}")
            child = pending.pop(0)
            self._open(scope, node, child)
        if any(groups.values()):
            raise Unscopable("a scope the syntax tree does not show")

    def _open(self, parent: Scope, node: ast.AST, table: symtable.SymbolTable) -> None:
        if isinstance(node, ast.ClassDef):
            scope = self._scope("class", table, parent, node, parent.pos, parent.owner or node.name)
            scope.cid = len(self.classes)
            self.classes.append(Cls(scope.cid, node, scope, node.name))
            self._map(scope, node.body, table)
            return
        scope = self._scope("function", table, parent, node, parent.pos,
                            parent.owner or getattr(node, "name", "") or "")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            self._function(scope, node, parent)
            body: Sequence[ast.AST] = node.body if isinstance(node.body, list) else [node.body]
            self._map(scope, body, table)
        elif isinstance(node, Comprehension):  # everything but its first iterable is its own
            first, *rest = node.generators
            inner: list[ast.AST] = [first.target, *first.ifs]
            for generator in rest:
                inner += [generator.target, generator.iter, *generator.ifs]
            inner += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            self._map(scope, inner, table)

    def _function(self, scope: Scope, node: FunctionNode, parent: Scope) -> None:
        args = node.args
        kind = "function"
        cid = parent.cid if parent.kind == "class" else None
        if cid is not None:
            kind = "method"
            for decorator in getattr(node, "decorator_list", []):
                name = _dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
                last = name.rsplit(".", 1)[-1]
                if last == "staticmethod":
                    kind = "static"
                elif last == "classmethod":
                    kind = "class"
                elif last in PROPERTY_DECORATORS:
                    kind = "property"
        own = list(_own_nodes(node.body if isinstance(node.body, list) else [node.body]))
        fn = Fn(len(self.fns), node, scope, [a.arg for a in args.posonlyargs + args.args],
                args.vararg.arg if args.vararg else None, [a.arg for a in args.kwonlyargs],
                args.kwarg.arg if args.kwarg else None,
                any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own),
                isinstance(node, ast.AsyncFunctionDef), kind, cid)
        scope.fid = fn.fid
        self.fns.append(fn)

    def _student_stores(self, cells) -> set[str]:
        """Attribute names the student's code stores or deletes anywhere, and whether it sets attributes by a name
        built at run time ("?"): an annotation reading such an attribute may fail."""
        stored = set()
        for module, _ in cells:
            for node in ast.walk(module):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    stored.add(node.attr)
                elif isinstance(node, ast.Call) and _dotted(node.func) in ("setattr", "delattr"):
                    stored.add("?")
        return stored

    def _certain(self, pos: int) -> bool:
        """Whether top-level statement `pos` surely runs when its cell does and surely binds: the set-up's
        statements, or a student's def, class, import or plain assignment whose parts cannot raise, after only such
        statements in its cell (a cell stops at its first error: what follows it never binds)."""
        statement, _, from_context, cell = self.statements[pos]
        if from_context:
            return True
        start = self.cell_starts[cell - 1] if cell else 0
        bound: set[str] = set()
        for earlier, *_ in self.statements[start:pos + 1]:
            if not self._inert_statement(earlier, bound):
                return False
            bound |= _bound_names(earlier)
        return isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.Assign))

    def _inert_statement(self, statement: ast.stmt, bound: set[str]) -> bool:
        if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
            return True
        if isinstance(statement, ast.Import):
            return all(alias.name.split(".")[0] in ("torch", "numpy", "math", "einops", "functools", "itertools",
                                                      "collections", "typing", "dataclasses") and "." not in alias.name
                       for alias in statement.names)
        if isinstance(statement, ast.Assign):
            return all(isinstance(t, ast.Name) for t in statement.targets) and self._inert(statement.value, bound)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = statement.args
            header = [*args.defaults, *[d for d in args.kw_defaults if d is not None], *statement.decorator_list,
                      *[a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                               *[x for x in (args.vararg, args.kwarg) if x]] if a.annotation]]
            if statement.returns is not None:
                header.append(statement.returns)
            return all(self._inert(e, bound) for e in header)
        if isinstance(statement, ast.ClassDef):
            return not statement.decorator_list and not statement.keywords and \
                all(self._inert(b, bound) for b in statement.bases) and \
                all(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Pass)) and self._inert_statement(s, bound)
                    or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) for s in statement.body)
        return False

    def _inert(self, node: ast.AST | None, bound: set[str]) -> bool:
        """An expression that cannot raise here: constants, names bound surely before it in its cell, the set-up's
        names and attributes the student never stores, builtin generics (`list[int]`), literals of such."""
        if node is None or isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return node.id in bound or node.id in ("int", "float", "str", "bool", "bytes", "list", "tuple", "dict",
                                                   "set", "frozenset", "type", "object", "complex") and \
                not self._student_binds(node.id) or self._context_binds(node.id) and not self._student_binds(node.id)
        if isinstance(node, ast.Attribute):   # torch.Tensor: a module of the set-up's, a class it surely has
            dotted = _dotted(node)
            base = dotted.split(".")[0] if dotted else ""
            return dotted is not None and dotted.split(".", 1)[1] in KNOWN_ATTRIBUTES.get(self.context_modules.get(base, ""), ()) \
                and base not in bound and not self._student_binds(base) and "?" not in self.student_stores and \
                not set(dotted.split(".")[1:]) & self.student_stores
        if isinstance(node, ast.Subscript):
            return isinstance(node.value, ast.Name) and node.value.id in ("list", "tuple", "dict", "set", "type",
                                                                          "frozenset") \
                and self._inert(node.value, bound) and self._inert(node.slice, bound)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self._inert(e, bound) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is not None and self._inert(k, bound) for k in node.keys) and \
                all(self._inert(v, bound) for v in node.values)
        return False

    def _student_binds(self, name: str) -> bool:
        return name in self.student_bound

    def _context_binds(self, name: str) -> bool:
        return name in self.context_bound


def _top_name(statement: ast.AST) -> str:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return statement.name
    if isinstance(statement, ast.Assign) and statement.targets and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return statement.target.id
    return ""


def _bound_names(statement: ast.AST) -> set[str]:
    """Names a top-level statement may bind at the top level (not inside the functions or classes it defines)."""
    names = set()
    for node in _own_nodes([statement]):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _own_nodes(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """The nodes of `body`, not descending into the scopes it opens (a nested function's header is still walked)."""
    todo = list(body)
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            todo += [*a.defaults, *[d for d in a.kw_defaults if d], *node.decorator_list]
        elif isinstance(node, ast.ClassDef):
            todo += [*node.bases, *[k.value for k in node.keywords], *node.decorator_list]
        elif isinstance(node, ast.Lambda):
            todo += [*node.args.defaults, *[d for d in node.args.kw_defaults if d]]
        elif isinstance(node, Comprehension):
            todo.append(node.generators[0].iter)
        else:
            todo += list(ast.iter_child_nodes(node))


def _child_scopes(body: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """The scope-opening nodes directly under `body`, in the order CPython's symtable visits them."""
    for node in body:
        yield from _visit(node)


def _visit(node: ast.AST | None) -> Iterator[ast.AST]:
    if node is None:
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        for d in a.defaults:
            yield from _visit(d)
        for kw_default in a.kw_defaults:
            yield from _visit(kw_default)
        if not isinstance(node, ast.Lambda):
            for arg in [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else []),
                        *a.kwonlyargs]:
                yield from _visit(arg.annotation)
            yield from _visit(node.returns)
            for d in node.decorator_list:
                yield from _visit(d)
        yield node
    elif isinstance(node, ast.ClassDef):
        for b in node.bases:
            yield from _visit(b)
        for k in node.keywords:
            yield from _visit(k.value)
        for d in node.decorator_list:
            yield from _visit(d)
        yield node
    elif isinstance(node, Comprehension):
        yield from _visit(node.generators[0].iter)
        yield node
    elif isinstance(node, ast.Dict):
        for key in node.keys:
            yield from _visit(key)
        for v in node.values:
            yield from _visit(v)
    elif isinstance(node, ast.Assign):
        yield from _visit(node.value)
        for t in node.targets:
            yield from _visit(t)
    elif isinstance(node, ast.NamedExpr):
        yield from _visit(node.value)
        yield from _visit(node.target)
    elif isinstance(node, ast.AugAssign):
        yield from _visit(node.target)
        yield from _visit(node.value)
    elif isinstance(node, ast.AnnAssign):
        yield from _visit(node.target)
        yield from _visit(node.annotation)
        yield from _visit(node.value)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _visit(child)


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` for an expression spelled so, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def under(name: str, prefixes: Iterable[str]) -> str | None:
    """The prefix of `prefixes` that qualified name `name` is, or is under (`torch.autograd.grad` under
    `torch.autograd`), else None."""
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


# ---- the analysis -------------------------------------------------------------------------------------------------
@dataclass
class Env:
    scope: Scope | None            # None: the notebook's top level as a test sees it, after every cell
    pos: float                     # the top-level statement being run, or the defining one for a function's body (x.5:
                                   # between two statements, where a test runs)
    top: bool                      # running at the top level (module or a top-level class body), not in a function
    level: str = "definite"        # "escape": reached only through code outside the notebook
    owner: str = ""

    @property
    def running(self) -> Scope:
        """The scope whose code runs here (every env has one but a test's view of the top level, which runs none)."""
        if self.scope is None:
            raise ValueError("a test's view of the top level runs no code")
        return self.scope


class Flow:
    """The fixed point of what every name, field and return may hold. `Flow(program)` reads the whole notebook (every
    function, as if anything may call it); `Flow(program, base=flow, ...)` then follows one task from its entry,
    sharing the notebook's fields and top-level names, and records what the task's own code reaches."""

    def __init__(self, program: Program, base: "Flow | None" = None, interesting: tuple[str, ...] = (),
                 observer=None, method_names: Iterable[str] = ()):
        self.p = program
        self.base = base
        self.own: dict[tuple, set] = {}
        self.store: dict[tuple, set] = base.store if base else self.own
        self.changed = False
        self.flags: list[str] = list(program.problems) if base is None else []
        self.observer = observer          # called with (kind, node, values, env) while recording
        self.recording = False
        self.reached: dict[int, str] = {}       # fid -> level, in a task's flow
        self.classes_alive: dict[int, str] = {}
        self.interesting = interesting
        self.roots: set[str] = {n.split(".")[0] for n in interesting} if base is None else base.roots
        self.method_names: set[str] = (set(method_names) | {"__matmul__", "__rmatmul__"} if base is None
                                       else base.method_names)
        self.defs: dict[str, list[Def]] = base.defs if base else {}
        self.stand_ins: set[Value] = set()
        self.entry_points: set[Value] = set()
        self.entry_names: tuple[str, ...] = ()
        self.overflowed = False
        self._all: set = set()
        self._calling: set = set()
        self._def_keys: set = set()
        self._kept_names: dict[str, bool] = base._kept_names if base else {}
        self.fields_of: dict[Value, set[str]] = base.fields_of if base else {}

    # -- the store --------------------------------------------------------------------------------------------------
    def _local(self, key: tuple) -> bool:
        """In a task's flow, what the task's own calls decide: the returns, and the locals of the functions it reaches
        (a closure's cell in a function it never calls, a factory's, keeps what the notebook's flow found)."""
        if self.base is None:
            return False
        if key[0] == "r":
            return True
        return key[0] == "v" and self.p.scope_fn.get(key[1]) in self.reached

    def get(self, key: tuple) -> set:
        table = self.own if self._local(key) else self.store
        return table.get(key, set())

    def add(self, key: tuple, values: Iterable[Value]) -> None:
        if self.base is not None and not self._local(key):
            return                         # a task's flow reads the notebook's fields, which already hold all it adds
        if key not in self.store and key[0] == "h":
            self.fields_of.setdefault(key[1], set()).add(key[2])
        found = self.own.setdefault(key, set()) if self._local(key) else self.store.setdefault(key, set())
        before = len(found)
        for value in values:
            if len(found) > MAX_VALUES:
                if not self.overflowed:
                    self.overflowed = True
                    self._flag(f"names aliased more than {MAX_VALUES} ways")
                break
            found.add(value)
        if len(found) != before:
            self.changed = True
            if key[0] == "h" and key[1] in self.store.get(("E",), ()):   # what an escaped object holds escapes too
                self.escape(set(values), None)

    def _flag(self, why: str) -> None:
        target = self.base.flags if self.base is not None else self.flags
        if why not in target:
            target.append(why)

    # -- solving ----------------------------------------------------------------------------------------------------
    def solve(self, entries: Iterable[str] = ()) -> "Flow":
        """Run every unit until nothing grows (the notebook's flow). `entries`: the names the tests call (with
        anything); Python calls special methods of the student's classes itself, with anything too."""
        self.entry_names = tuple(entries)
        for fn in self.p.fns:
            if fn.cid is not None and getattr(fn.node, "name", "").startswith("__"):   # a lambda has no name
                self._enter(fn, OPAQUE_ONLY, ("i", fn.cid))
        end = Env(None, len(self.p.statements) + 0.5, True)
        for _ in range(MAX_ROUNDS):
            self.changed = False
            for name in self.entry_names:
                for value in self.module_read(name, end):
                    self._enter_value(value)
            for pos, (statement, scope, _, _) in enumerate(self.p.statements):
                self.stmt(statement, Env(scope, pos, True, owner=_top_name(statement)), pos)
            for fn in self.p.fns:
                self.body(fn, "definite")
            if not self.changed:
                return self
        self._flag(f"aliases chained deeper than the grader follows ({MAX_ROUNDS} rounds)")
        return self

    def follow(self, entry: set[Value], stand_ins: set[Value]) -> "Flow":
        """A task's flow from `entry` (what the task's name holds when its test runs), to a fixed point, then once
        more recording."""
        self.stand_ins = stand_ins
        self.entry_points = set(entry)
        for _ in range(MAX_ROUNDS):
            self.changed = False
            self._run_entry()
            if not self.changed:
                break
        else:
            self._flag(f"aliases chained deeper than the grader follows ({MAX_ROUNDS} rounds)")
        self.recording = True
        self._run_entry()
        self.recording = False
        return self

    def _enter_value(self, value: Value) -> None:
        """In the notebook's flow: `value` may be called by code outside the notebook, with anything."""
        if value[0] == "q":
            value = value[1]
        if value[0] in ("f", "b"):
            self._enter(self.p.fns[value[1]], OPAQUE_ONLY)
        elif value[0] in ("c", "i"):
            for fn in self.p.fns:
                if fn.cid == value[1]:
                    self._enter(fn, OPAQUE_ONLY, ("i", value[1]))
        elif value[0] == "x":
            for held in self.get(("h", value, "func")):
                if held != value:
                    self._enter_value(held)

    def _run_entry(self) -> None:
        entry_env = Env(self.p.scopes[0] if self.p.scopes else None, len(self.p.statements), True)
        for value in list(self.entry_points):
            self.reach_value(value, entry_env, called=True)
        for fid, level in list(self.reached.items()):
            fn = self.p.fns[fid]
            self.header(fn, level)
            self.body(fn, level)
        for cid, level in list(self.classes_alive.items()):
            self.class_header(cid, level)

    def reach_value(self, value: Value, env: Env, called: bool) -> None:
        """In a task's flow: `value` is called (or held) by the task's tests or by code outside the notebook."""
        kind = value[0]
        if kind == "q":
            self.reach_value(value[1], replace_level(env, "escape"), called)
        elif kind == "f" and called:
            self._reach_fn(value[1], env.level)
            self._enter(self.p.fns[value[1]], OPAQUE_ONLY)
        elif kind in ("c", "i"):
            self._alive(value[1], env.level, all_methods=True)
        elif kind == "b" and called:
            self._reach_fn(value[1], env.level)
            self._enter(self.p.fns[value[1]], OPAQUE_ONLY)
        elif kind == "x" and called:
            for held in self.get(("h", value, "func")):
                self.reach_value(held, env, True)

    def _reach_fn(self, fid: int, level: str) -> None:
        if ("f", fid) in self.stand_ins:
            return
        if self.reached.get(fid) != "definite" and self.reached.get(fid) != level:
            self.reached[fid] = "definite" if "definite" in (level, self.reached.get(fid)) else level
            self.changed = True

    def _alive(self, cid: int, level: str, all_methods: bool = False) -> None:
        """A class of the student's is used by the task: its body and bases are the task's code, its special methods
        (and, when code outside the notebook holds it, every method) may be called with anything."""
        if self.base is None or ("c", cid) in self.stand_ins:
            return
        key = (cid, all_methods)
        previous = self.classes_alive.get(cid)
        if previous is None or (previous == "escape" and level == "definite") or (all_methods and key not in self._all):
            self.classes_alive[cid] = "definite" if "definite" in (level, previous) else level
            self.changed = True
        if all_methods:
            self._all.add(key)
        for fn in self.p.fns:
            # a lambda in the class body has no name of its own: the body may bind it to a special method (`__eq__ =
            # lambda self, other: True`), so it is reached as one is
            name = None if isinstance(fn.node, ast.Lambda) else fn.node.name
            if fn.cid == cid and (all_methods or name is None or name.startswith("__")):
                self._reach_fn(fn.fid, self.classes_alive[cid])
                self._enter(fn, OPAQUE_ONLY, self_value=("i", cid))
        for base in self._bases(cid):
            if base[0] == "c":
                self._alive(base[1], level, all_methods)

    def header(self, fn: Fn, level: str) -> None:
        """A top-level function's defaults, annotations and decorators, run where it is defined, as the task's code."""
        node = fn.node
        if fn.scope.parent is None or fn.scope.parent.kind != "module":
            return
        env = Env(fn.scope.parent, fn.scope.pos, True, level, fn.scope.owner)
        self._defaults(fn, self._header_values(node, env))

    def class_header(self, cid: int, level: str) -> None:
        cls = self.p.classes[cid]
        parent = cls.scope.parent
        at_top = parent is not None and parent.kind == "module"
        env = Env(parent, cls.scope.pos, at_top, level, cls.scope.owner)
        for expression in [*cls.node.bases, *[k.value for k in cls.node.keywords], *cls.node.decorator_list]:
            for value in self.ev(expression, env):      # a metaclass or base of the student's: all of it runs
                if value[0] == "c":
                    self._alive(value[1], level, all_methods=True)
        inner = Env(cls.scope, cls.scope.pos, at_top, level, cls.scope.owner)
        for statement in cls.node.body:
            if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.stmt(statement, inner, cls.scope.pos)
            elif not isinstance(statement, ast.ClassDef):
                self._header_values(statement, inner)

    def _header_values(self, node: FunctionNode, env: Env) -> set:
        args = node.args
        values = set()
        for default in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            values |= self.ev(default, env)
        if not isinstance(node, ast.Lambda):
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, *[x for x in (args.vararg, args.kwarg) if x]]:
                if arg.annotation is not None:
                    self.ev(arg.annotation, env)
            if node.returns is not None:
                self.ev(node.returns, env)
            for decorator in node.decorator_list:
                self.ev(decorator, env)
        return values

    def body(self, fn: Fn, level: str) -> None:
        env = Env(fn.scope, fn.scope.pos, False, level, fn.scope.owner)
        if isinstance(fn.node, ast.Lambda):
            self.add(("r", fn.fid), self.ev(fn.node.body, env))
            return
        for statement in fn.node.body:
            self.stmt(statement, env, fn.scope.pos)

    def _enter(self, fn: Fn, args, self_value: Value | None = None) -> None:
        """`fn` called by code that passes anything (the tests, a library): every parameter may hold data from
        outside; a method's first parameter its instance."""
        names = [*fn.positional, *fn.kwonly]
        first = 0
        if fn.kind in ("method", "property", "class") and fn.positional:
            if self_value is not None:
                self.add(("v", fn.scope.key, fn.positional[0]),
                         {("c", self_value[1]) if fn.kind == "class" else self_value})
            first = 1
        for name in names[first:]:
            self.add(("v", fn.scope.key, name), args)
        for packed in (fn.vararg, fn.kwarg):
            if packed:
                box = ("x", ("args", fn.fid, packed))
                self.add(("v", fn.scope.key, packed), {box})
                self.add(("h", box, "*"), args)

    # -- statements -------------------------------------------------------------------------------------------------
    def stmt(self, s: ast.stmt, env: Env, pos: int) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = self.p.fn_of(s)
            defaults = self._header_values(s, env)
            self._defaults(fn, defaults)
            value = self._decorate({("f", fn.fid)}, s.decorator_list, env, fn)
            self.bind(s.name, value, env, s)
        elif isinstance(s, ast.ClassDef):
            scope = self.p.scope_of[id(s)]
            bases = set()
            for base in s.bases:
                bases |= self.ev(base, env)
            for keyword in s.keywords:
                self.ev(keyword.value, env)
            self.add(("cb", scope.cid), bases)
            inner = Env(scope, env.pos, env.top, env.level, env.owner)
            for statement in s.body:
                self.stmt(statement, inner, pos)
            self.bind(s.name, self._decorate({("c", scope.cid)}, s.decorator_list, env, None), env, s)
        elif isinstance(s, ast.Return):
            if s.value is not None and env.running.fid is not None:
                self.add(("r", env.running.fid), self.ev(s.value, env))
        elif isinstance(s, ast.Assign):
            values = self.ev(s.value, env)
            for target in s.targets:
                self.assign(target, values, env, s.value)
        elif isinstance(s, ast.AugAssign):
            current = self.ev(s.target, env) if not isinstance(s.target, ast.Name) else self.load(s.target.id, env, s.target)
            added = self.ev(s.value, env)
            if isinstance(s.op, (ast.Add, ast.BitOr)):              # L += [f], d |= {...}: in place, for every alias
                for box in (v for v in current if v[0] == "x"):
                    self.add(("h", box, "*"), self.contents(added, env))
            inplace = {ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__", ast.MatMult: "__imatmul__",
                       ast.BitOr: "__ior__"}.get(type(s.op))
            result = self.binop(current, added, s.op, env)
            if inplace:
                result |= self.method_call({v for v in current if v[0] in ("i", "q")}, inplace, [added], env, data=True)
            self.assign(s.target, result, env, None)
        elif isinstance(s, ast.AnnAssign):
            if env.top or env.running.kind == "class":
                self.ev(s.annotation, env)
            if s.value is not None:
                self.assign(s.target, self.ev(s.value, env), env, s.value)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.assign(s.target, self.contents(self.ev(s.iter, env), env), env, None)
            self.block(s.body + s.orelse, env, pos)
        elif isinstance(s, (ast.While, ast.If)):
            self.ev(s.test, env)
            self.block(s.body + s.orelse, env, pos)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                manager = self.ev(item.context_expr, env)
                entered = self.method_call(manager, "__enter__", [], env) | self.method_call(manager, "__aenter__", [], env)
                self.method_call(manager, "__exit__", [set(OPAQUE_ONLY)] * 3, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, entered, env, None)
            self.block(s.body, env, pos)
        elif isinstance(s, (ast.Try, ast.TryStar)):
            self.block(s.body, env, pos)
            for handler in s.handlers:
                if handler.type is not None:
                    self.ev(handler.type, env)
                if handler.name:
                    self.bind(handler.name, self.from_outside(env), env, handler)
                self.block(handler.body, env, pos)
            self.block(s.orelse + s.finalbody, env, pos)
        elif isinstance(s, ast.Raise):
            for part in (s.exc, s.cause):
                if part is not None:
                    self.escape(self.ev(part, env), env)
        elif isinstance(s, ast.Assert):
            self.ev(s.test, env)
            if s.msg is not None:
                self.ev(s.msg, env)
        elif isinstance(s, ast.Expr):
            values = self.ev(s.value, env)
            if env.top and env.running.kind == "module" and self.base is None:   # a cell's last line: IPython keeps it
                self.add(("OUT",), values)                                      # in _, __, Out[n], _n
                self.add(("h", OUTPUTS, "*"), values)
        elif isinstance(s, ast.Import):
            for alias in s.names:
                self._import(alias.name, env)
                if alias.asname:
                    self.bind(alias.asname, {self.ext(alias.name)}, env, s)
                else:
                    top = alias.name.split(".")[0]
                    self.bind(top, {self.ext(top)}, env, s)
        elif isinstance(s, ast.ImportFrom):
            if s.level or not s.module:
                self._flag("a relative import")
                return
            self._import(s.module, env)
            for alias in s.names:
                if alias.name == "*":
                    self._star(s.module, env, s)
                else:
                    self.bind(alias.asname or alias.name, {self.ext(f"{s.module}.{alias.name}")}, env, s)
        elif isinstance(s, ast.Delete):
            for target in s.targets:
                if not isinstance(target, ast.Name):
                    self.ev(target.value, env) if hasattr(target, "value") else None
        elif isinstance(s, (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)):
            pass
        elif isinstance(s, ast.Match):
            subject = self.ev(s.subject, env)
            captured = subject | self.contents(subject, env) | self.from_outside(env)
            for case in s.cases:
                for node in ast.walk(case.pattern):
                    for name in (getattr(node, "name", None), getattr(node, "rest", None)):
                        if isinstance(name, str):
                            self.bind(name, captured, env, node)
                    if isinstance(node, ast.MatchValue):
                        self.ev(node.value, env)
                    if isinstance(node, ast.MatchClass):
                        self.ev(node.cls, env)
                if case.guard is not None:
                    self.ev(case.guard, env)
                self.block(case.body, env, pos)
        else:
            self._dynamic(f"a statement the grader does not read ({type(s).__name__})", env, s)

    def block(self, statements: list[ast.stmt], env: Env, pos: int) -> None:
        for statement in statements:
            self.stmt(statement, env, pos)

    def _import(self, module: str, env: Env) -> None:
        if module.split(".")[0] not in KNOWN_MODULES:
            self._flag(f"an import of {module[:60]}, code the grader has not read")

    def _star(self, module: str, env: Env, node: ast.AST) -> None:
        if env.top and env.running.kind == "module" and self.base is None:
            key = ("m*", module, env.pos)
            found = self.defs.setdefault("*", [])
            if not any(d.key == key for d in found):
                found.append(Def(key, env.pos, False, star=module))
        else:
            self._flag(f"from {module} import * outside the top level")

    def _defaults(self, fn: Fn, defaults: set) -> None:
        """A function's default values may reach every parameter that has one."""
        args = fn.node.args
        positional = args.posonlyargs + args.args
        with_default = [a.arg for a in positional[len(positional) - len(args.defaults):]]
        with_default += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        for name in with_default:
            self.add(("v", fn.scope.key, name), defaults)

    def _decorate(self, value: set, decorators: list[ast.expr], env: Env, fn: Fn | None) -> set:
        """What a decorated definition binds: the decorators' results, applied innermost first, and the definition
        itself (a decorator that wraps calls what it wraps)."""
        result = set(value)
        for decorator in reversed(decorators):
            applied = self.call(self.ev(decorator, env), [(result, False)], [], env, decorator)
            result = applied | value
        return result

    # -- names ------------------------------------------------------------------------------------------------------
    def where(self, name: str, scope: Scope) -> tuple:
        """Where `name`, read or written in `scope`, lives: ("v", scope key) for a function's local or a closure's
        cell, ("class", scope) for a class body's own name, ("module",) for a top-level name."""
        if scope.kind == "module" or scope.table is None:
            return ("module",)
        try:
            symbol = scope.table.lookup(name)
        except KeyError:
            return ("module",)
        if scope.kind == "class":
            if symbol.is_local() and not symbol.is_global():
                return ("class", scope)
            if symbol.is_free():
                return self._enclosing(name, scope.parent)
            return ("module",)
        if symbol.is_global() or symbol.is_declared_global():
            return ("module",)
        if symbol.is_local() and not symbol.is_free():
            return ("v", scope.key)
        if symbol.is_free() or symbol.is_nonlocal():
            return self._enclosing(name, scope.parent)
        return ("module",)

    def _enclosing(self, name: str, scope: Scope | None) -> tuple:
        while scope is not None and scope.kind != "module":
            if scope.kind == "function" and scope.table is not None:   # a function's scope always has its table
                try:
                    symbol = scope.table.lookup(name)
                except KeyError:
                    symbol = None
                if symbol is not None and symbol.is_local() and not symbol.is_global():
                    return ("v", scope.key)
            scope = scope.parent
        return ("module",)

    def load(self, name: str, env: Env, node: ast.AST | None = None) -> set:
        place = self.where(name, env.running)
        if place[0] == "v":
            return set(self.get(("v", place[1], name)))
        if place[0] == "class":
            return self.get(("h", ("c", place[1].cid), name)) | self.module_read(name, env)
        return self.module_read(name, env)

    def bind(self, name: str, values: set, env: Env, node: ast.AST) -> None:
        place = self.where(name, env.running)
        if place[0] == "v":
            self.add(("v", place[1], name), values)
        elif place[0] == "class":
            self.add(("h", ("c", place[1].cid), name), values)
        elif env.top and env.running.kind == "module":
            self._module_def(name, values, env, node, anytime=False)
        else:
            self._module_def(name, values, env, node, anytime=True)

    def _module_def(self, name: str, values: set, env: Env, node: ast.AST, anytime: bool) -> None:
        if self.base is not None:
            return
        key = ("m", name, id(node), env.pos, anytime)
        found = self.defs.setdefault(name, [])
        if key not in self._def_keys:
            self._def_keys.add(key)
            at = int(env.pos)   # a binding runs in a statement: a whole position (a test's view, x.5, binds nothing)
            statement = self.p.statements[at][0] if 0 <= at < len(self.p.statements) else None
            direct = statement is node or isinstance(statement, ast.Assign) and any(t is node for t in statement.targets) \
                or isinstance(statement, ast.Import)
            certain = not anytime and direct and self.p.certain.get(at, False)
            found.append(Def(key, env.pos, certain, anytime))
            found.sort(key=lambda d: d.pos)
            self.changed = True
        self.add(key, values)

    def module_read(self, name: str, env: Env) -> set:
        """A top-level name: at the top level, the bindings that reach this statement (those of the statement itself
        too: a loop may run it again); in a function, every binding from the function's definition on (it may be
        called at any time after). A binding that surely replaces what came before (`Def.certain`) ends the search."""
        values: set = set()
        killed = False
        for d in reversed(self.defs.get(name, [])):
            if d.anytime or d.pos == env.pos or (not env.top and d.pos > env.pos):
                values |= self.store.get(d.key, set())
            elif d.pos < env.pos and not killed:
                values |= self.store.get(d.key, set())
                killed = d.certain
        if not killed and name in self.p.known:
            values.add(self.ext(self.p.known[name]))
            killed = True
        if not killed:
            for d in self.defs.get("*", []):      # may or may not be the module's: what it leads to is flagged
                if d.pos < env.pos or not env.top:
                    star = self.ext(f"{d.star}.{name}")
                    values.add(("q", star) if star[0] == "e" else star)
            if name in BUILTIN_NAMES:
                values.add(self.ext(f"builtins.{name}"))
            elif name in ("get_ipython", "__builtins__"):
                values.add(("d", f"IPython's {name}"))
            elif name in ("_", "__", "___") or re.fullmatch(r"_\d+", name):     # IPython's output cache: what
                values |= self.store.get(("OUT",), set())                          # cells' last lines evaluated to
            elif name in ("Out", "_oh"):
                values.add(OUTPUTS)
            elif name in ("In", "_ih", "_i", "_ii", "_iii", "exit", "quit", "display") or re.fullmatch(r"_i\d+", name):
                values.add(OPAQUE)
        return values

    def ext(self, name: str) -> Value:
        """Something outside the notebook by its qualified name; one that leads to no name any rule or model of this
        module is about (`torch.zeros`, `np.float32`) is plain data from outside, whatever is done with it."""
        if not self._kept(name):
            return OPAQUE
        if name.count(".") >= MAX_DEPTH:
            return ("d", "a name deeper than the grader follows")
        return ("e", name)

    def _kept(self, name: str) -> bool:
        found = self._kept_names.get(name)
        if found is None:
            found = self._interesting(name) or name in MODELED_PREFIXES or under(name, ("builtins",)) is not None \
                and name.count(".") <= 2 or name.rsplit(".", 1)[-1] in self.method_names or \
                name.count(".") < KEPT_DEPTH and name.split(".")[0] in self.roots   # numpy.core.getlimits.finfo
            self._kept_names[name] = found
        return found

    # -- expressions ------------------------------------------------------------------------------------------------
    def ev(self, node: ast.AST, env: Env) -> set:
        try:
            values = self._ev(node, env)
        except RecursionError:
            self._flag("code nested deeper than the grader follows")
            return {("d", "code nested deeper than the grader follows")}
        if self.base is not None:            # an object of the student's class in the task's hands: Python may call
            for value in values:             # its special methods (a descriptor's __get__, __eq__, __float__...)
                if value[0] in ("i", "c") and self.classes_alive.get(value[1]) not in ("definite", env.level):
                    self._alive(value[1], env.level)
        if self.recording and self.observer is not None:
            self.observer("value", node, values, env)
        return values

    def _ev(self, node: ast.AST, env: Env) -> set:
        if isinstance(node, ast.Constant):
            return {("s", node.value)} if isinstance(node.value, str) and len(node.value) < 200 else set(OPAQUE_ONLY)
        if isinstance(node, ast.Name):
            return self.load(node.id, env, node)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.ev(node.value, env), node.attr, env, node)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value, env)
            self.ev(node.slice, env)
            return self.item(base, env)
        if isinstance(node, ast.Call):
            return self.call_node(node, env)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            box = ("x", ("lit", id(node)))
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    self.add(("h", box, "*"), self.contents(self.ev(element.value, env), env))
                else:
                    self.add(("h", box, "*"), self.ev(element, env))
            return {box}
        if isinstance(node, ast.Dict):
            box = ("x", ("lit", id(node)))
            for key, value in zip(node.keys, node.values):
                if key is None:
                    self.add(("h", box, "*"), self.contents(self.ev(value, env), env))
                else:
                    self.add(("h", box, "*"), self.ev(key, env) | self.ev(value, env))
            return {box}
        if isinstance(node, Comprehension):
            return self.comprehension(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self.ev(node.left, env), self.ev(node.right, env)
            if isinstance(node.op, ast.MatMult) and self.recording and self.observer is not None:
                self.observer("matmul", node, left | right, env)
            return self.binop(left, right, node.op, env)
        if isinstance(node, ast.UnaryOp):
            operand = self.ev(node.operand, env)
            return self.method_call(operand, {ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__",
                                              ast.Not: "__bool__"}[type(node.op)], [], env, data=True)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.ev(v, env) for v in node.values))
        if isinstance(node, ast.Compare):
            operands = [self.ev(node.left, env)] + [self.ev(c, env) for c in node.comparators]
            for values in operands:
                self.method_call(values, "__eq__", [set(OPAQUE_ONLY)], env, data=True)
            return set(OPAQUE_ONLY)
        if isinstance(node, ast.IfExp):
            self.ev(node.test, env)
            return self.ev(node.body, env) | self.ev(node.orelse, env)
        if isinstance(node, ast.Lambda):
            fn = self.p.fn_of(node)
            self._defaults(fn, self._header_values(node, env))
            return {("f", fn.fid)}
        if isinstance(node, ast.NamedExpr):
            values = self.ev(node.value, env)
            self.assign(node.target, values, env, node.value)
            return values
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            constant = True
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    self.ev(value, env)
                    constant = False
            if constant and sum(map(len, parts)) < 200:
                return {("s", "".join(parts))}
            return set(OPAQUE_ONLY)
        if isinstance(node, ast.FormattedValue):
            self.ev(node.value, env)
            if node.format_spec is not None:
                self.ev(node.format_spec, env)
            return set(OPAQUE_ONLY)
        if isinstance(node, ast.Await):
            return self.contents(self.ev(node.value, env), env) | self.from_outside(env)
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            if node.value is not None:
                values = self.ev(node.value, env)
                if isinstance(node, ast.YieldFrom):
                    values = self.contents(values, env)
                if env.running.fid is not None:
                    self.add(("h", ("x", ("gen", env.running.fid)), "*"), values)
            return self.from_outside(env)
        if isinstance(node, ast.Starred):
            return self.contents(self.ev(node.value, env), env)
        if isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.ev(part, env)
            return set(OPAQUE_ONLY)
        return {self._dynamic(f"an expression the grader does not read ({type(node).__name__})", env, node)}

    def _dynamic(self, why: str, env: Env, node: ast.AST) -> Value:
        value = ("d", why)
        if self.recording and self.observer is not None:
            self.observer("value", node, {value}, env)
        return value

    def from_outside(self, env: Env) -> set:
        """What code outside the notebook may hand back: data, and (QSTAR) anything the notebook gave it to keep."""
        return {OPAQUE, QSTAR} if self.store.get(("E",)) else set(OPAQUE_ONLY)

    def escape(self, values: set, env: Env | None) -> None:
        """`values` handed to code outside the notebook, which may keep them, give them back or call them. What a
        container or object of the student's holds goes with it (the pool ("E",) is flat: callables and names)."""
        todo = list(values)
        pool = self.store.get(("E",), set())
        kept = set()
        seen = set()
        while todo:
            value = todo.pop()
            if value in seen:
                continue
            seen.add(value)
            kind = value[0]
            if kind in ("o", "s") or value == QSTAR:
                continue
            if kind == "d" and value[1] in NAMESPACE_VALUES and env is not None and env.pos >= self.p.context_end:
                self._flag(f"names bound at run time through {value[1]}")      # a namespace handed to a library
            if kind == "q":
                todo.append(value[1])
                continue
            if kind == "e" and not (self._interesting(value[1]) or value[1].rsplit(".", 1)[-1] in self.method_names):
                continue
            if value in pool and self.base is None:
                continue
            kept.add(value)
            if kind == "b":
                todo += [("f", value[1]), value[2]]
            elif kind == "u":
                todo.append(value[2])
            elif kind in ("x", "i", "c", "f", "n"):
                for name in self.fields_of.get(value, ()):
                    todo += list(self.store.get(("h", value, name), ()))
        if not kept:
            return
        self.add(("E",), kept)
        for value in kept:
            if self.base is not None and env is not None:   # outside code may call it during the call, unseen
                self.reach_value(value, replace_level(env, "escape"), called=True)
            elif self.base is None:
                self._enter_value(value)

    def _interesting(self, name: str) -> bool:
        """Whether a name handed to a library matters: one of the rules' names, an ancestor of one, or reflection."""
        return any(name == p or name.startswith(p + ".") or p.startswith(name + ".") for p in self.interesting) or \
            any(name == p or name.startswith(p + ".") or p.startswith(name + ".") for p in REFLECTIVE) or \
            any(part.startswith("_") and not part.startswith("__") for part in name.split("."))

    def assign(self, target: ast.AST, values: set, env: Env, source: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, values, env, target)
        elif isinstance(target, ast.Attribute):
            self.store_attribute(self.ev(target.value, env), target.attr, values, env)
        elif isinstance(target, ast.Subscript):
            base = self.ev(target.value, env)
            self.ev(target.slice, env)
            self.store_item(base, values, env)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(source, (ast.Tuple, ast.List)) and len(source.elts) == len(target.elts) and \
                    not any(isinstance(e, ast.Starred) for e in [*source.elts, *target.elts]):
                for element, value in zip(target.elts, source.elts):
                    self.assign(element, self.ev(value, env), env, value)
                return
            inner = self.contents(values, env)
            for element in target.elts:
                if isinstance(element, ast.Starred):
                    box = ("x", ("lit", id(element)))
                    self.add(("h", box, "*"), inner)
                    self.assign(element.value, {box}, env, None)
                else:
                    self.assign(element, inner, env, None)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, values, env, None)
        else:
            self._flag(f"a binding the grader does not read ({type(target).__name__})")

    def store_attribute(self, bases: set, name: str, values: set, env: Env) -> None:
        for base in bases:
            kind = base[0]
            if kind == "q":
                self.store_attribute({base[1]}, name, values, env)
            elif kind in ("i", "c", "f", "x", "n"):
                self.add(("h", base, name), values)
            elif kind == "d":
                self._flag("a name bound through a value built at run time")
            elif kind in ("e", "o", "u", "b", "w", "q*"):
                self.add(("xa", name), values)
                self.escape(values, env)

    def store_item(self, bases: set, values: set, env: Env) -> None:
        for base in bases:
            kind = base[0]
            if kind == "q":
                self.store_item({base[1]}, values, env)
            elif kind in ("x", "f", "c"):
                self.add(("h", base, "*"), values)
            elif kind == "i":
                self.method_call({base}, "__setitem__", [set(OPAQUE_ONLY), values], env)
                self.add(("h", base, "*"), values)
            elif kind == "d":
                self._flag("a name bound through a value built at run time")
            elif kind in ("e", "o", "u", "b", "w", "n", "q*"):
                self.add(("xe",), values)
                self.escape(values, env)

    def attribute(self, bases: set, name: str, env: Env, node: ast.AST | None) -> set:
        found: set = set()
        outside = False
        for base in bases:
            kind = base[0]
            if kind == "q":
                inner, _ = self._attribute_of(base[1], name, env)
                found |= {v if v[0] == "q" else ("q", v) for v in inner}
                outside = True
            else:
                inner, from_outside = self._attribute_of(base, name, env)
                found |= inner
                outside |= from_outside
        if self.recording and self.observer is not None and node is not None:
            self.observer("attribute", node, (name, bases, outside), env)
        return found

    def _attribute_of(self, base: Value, name: str, env: Env) -> tuple[set, bool]:
        """(what `base.name` may be, whether it comes from outside the notebook's own objects)."""
        kind = base[0]
        if base == QSTAR:
            names = {("q", self.ext(f"{v[1]}.{name}")) for v in self.store.get(("E",), ()) if v[0] == "e"}
            return {QSTAR} | {v for v in names if v[1][0] != "o"} | self.store.get(("xa", name), set()), True
        if name in ("__dict__", "__globals__", "__builtins__", "__code__", "__closure__", "__subclasses__",
                    "__getattribute__", "__getattr__", "__setattr__", "__mro__", "__bases__", "__self__", "__func__",
                    "__wrapped__", "__reduce__", "__reduce_ex__", "__getstate__", "__init_subclass__", "__defaults__",
                    "__kwdefaults__", "__array__", "f_globals", "f_locals", "f_back", "gi_frame", "cr_frame",
                    "tb_frame", "__objclass__", "__module__"):
            if name == "__module__":
                return set(OPAQUE_ONLY), kind in ("e", "o")
            return {("d", f"the attribute .{name}")}, True
        if kind == "e":
            return {self.ext(f"{base[1]}.{name}")} | self.store.get(("xa", name), set()) | \
                self.store.get(("xa", "?"), set()), True
        if kind == "o":
            return self.from_outside(env) | self.store.get(("xa", name), set()) | self.store.get(("xa", "?"), set()), True
        if kind == "s":
            return set(OPAQUE_ONLY), True
        if kind == "d":
            if base[1] in NAMESPACE_VALUES and env.pos >= self.p.context_end:   # globals().update(...): names bound
                self._flag(f"names bound at run time through {base[1]}")        # by a namespace's own methods
            return {base}, True
        if kind in ("i", "c"):
            if name == "__class__":
                return {("c", base[1])}, False
            return self._class_attribute(base, base[1], name, env, skip_own=False)
        if kind == "u":
            return self._class_attribute(base[2], base[1], name, env, skip_own=True)
        if kind in ("f", "x", "n"):
            held = self.get(("h", base, name)) | self.get(("h", base, "?"))
            if kind == "x" and name in ("func", "args", "keywords"):
                held |= self.get(("h", base, "*")) | self.get(("h", base, "func"))
            if kind == "x" and not held and name not in ("append", "extend", "insert", "update", "setdefault", "add"):
                held = self.get(("h", base, "*")) if name in ("get", "pop", "popitem", "values", "items", "keys",
                                                                "copy", "__getitem__", "_asdict", "_replace") else set()
            return held | {("m", base, name)}, False
        if kind == "b":
            return self._attribute_of(("f", base[1]), name, env)
        if kind == "w":
            return {("w", f"{base[1]}.{name}")}, True
        if kind == "m":
            return set(OPAQUE_ONLY), False
        return {("d", "an attribute the grader does not read")}, True

    def _class_attribute(self, instance: Value, cid: int, name: str, env: Env, skip_own: bool) -> tuple[set, bool]:
        """`instance.name` for an instance (or class) of the student's class `cid`: the instance's own field, then
        the classes in order; a class from outside among the bases answers for the rest."""
        found: set = set()
        if instance[0] == "i" and not skip_own:
            found |= self.get(("h", instance, name)) | self.get(("h", instance, "?"))
        outside = False
        for klass in self._mro(cid)[1 if skip_own else 0:]:
            if klass[0] == "c":
                for value in self.get(("h", klass, name)) | self.get(("h", klass, "?")):
                    found |= self._bind_method(value, instance, env)
            elif klass[0] in ("e", "o", "q", "d") and not found:
                inner, _ = self._attribute_of(klass if klass[0] != "q" else klass[1], name, env)
                found |= inner
                outside = True
                if not self.recording:
                    self.escape({instance if instance[0] in ("i", "c") else ("i", cid)}, env)
        if instance[0] == "i" and not found:
            found |= self.get(("h", instance, "?"))
        return found, outside

    def _bind_method(self, value: Value, instance: Value, env: Env) -> set:
        if value[0] != "f" or instance[0] not in ("i", "c"):
            return {value}
        fn = self.p.fns[value[1]]
        if fn.kind == "static":
            return {value}
        if fn.kind == "class":
            return {("b", fn.fid, ("c", instance[1]))}
        if instance[0] == "c":
            return {value}
        if fn.kind == "property":
            return self.call({("b", fn.fid, instance)}, [], [], env, None)
        return {("b", fn.fid, instance)}

    def _bases(self, cid: int) -> set:
        return self.get(("cb", cid)) if self.base is None else self.store.get(("cb", cid), set())

    def _mro(self, cid: int) -> list[Value]:
        order, todo, seen = [], [("c", cid)], set()
        while todo:
            klass = todo.pop(0)
            if klass in seen:
                continue
            seen.add(klass)
            order.append(klass)
            if klass[0] == "c":
                todo += sorted(self._bases(klass[1]), key=repr)
        return order

    def item(self, bases: set, env: Env) -> set:
        found: set = set()
        for base in bases:
            kind = base[0]
            if kind == "q":
                found |= {v if v[0] == "q" else ("q", v) for v in self.item({base[1]}, env)}
            elif kind in ("x", "f", "c", "n"):
                found |= self.get(("h", base, "*"))
                if kind in ("c", "n"):
                    found.add(OPAQUE)
            elif kind == "i":
                found |= self.method_call({base}, "__getitem__", [set(OPAQUE_ONLY)], env) | self.get(("h", base, "*"))
            elif base == QSTAR:
                found |= {QSTAR} | self.store.get(("xe",), set())
            elif kind == "e" and under(base[1], REFLECTIVE):
                found.add(("d", f"an item of {base[1]}"))
            elif kind in ("o", "e"):
                found |= self.from_outside(env) | self.store.get(("xe",), set())
            elif kind == "s":
                found.add(OPAQUE)
            elif kind == "d":
                found.add(base)
            else:
                found.add(OPAQUE)
        return found

    def contents(self, values: set, env: Env) -> set:
        """What iterating over `values` gives."""
        found: set = set()
        for value in values:
            kind = value[0]
            if kind == "i":
                iterator = self.method_call({value}, "__iter__", [], env)
                found |= self.contents(iterator - {value}, env) | self.method_call(iterator, "__next__", [], env)
                found |= self.method_call({value}, "__getitem__", [set(OPAQUE_ONLY)], env) | self.get(("h", value, "*"))
            else:
                found |= self.item({value}, env)
        return found

    def binop(self, left: set, right: set, op: ast.operator, env: Env) -> set:
        found: set = set()
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul", ast.Div: "truediv",
                 ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
                 ast.BitOr: "or", ast.BitXor: "xor", ast.BitAnd: "and"}
        method = names[type(op)]
        boxes = {v for v in left | right if v[0] in ("x", "q")}
        if boxes and isinstance(op, (ast.Add, ast.Mult, ast.BitOr)):       # [f] + [g], [f] * 3, {..} | {..}
            box = ("x", ("op", id(op), env.running.key))
            self.add(("h", box, "*"), self.contents(boxes, env))
            found.add(box)
            found |= {v for v in left if v[0] == "x"} if isinstance(op, ast.Add) else set()
        if isinstance(op, ast.Add):
            strings = [(a[1], b[1]) for a in left if a[0] == "s" for b in right if b[0] == "s"]
            for a, b in strings[:MAX_VALUES]:
                if len(a) + len(b) < 200:
                    found.add(("s", a + b))
        found |= self.method_call(left, f"__{method}__", [right], env, data=True)
        found |= self.method_call(right, f"__r{method}__", [left], env, data=True)
        if any(v[0] == "d" for v in left | right):
            found |= {v for v in left | right if v[0] == "d"}
        return found or set(OPAQUE_ONLY)

    def method_call(self, receivers: set, name: str, args: list[set], env: Env, data: bool = False) -> set:
        """`receiver.name(*args)` for the student's objects (special methods Python calls itself); plain data for
        anything else."""
        found: set = set()
        for receiver in receivers:
            if data and receiver[0] not in ("i", "c"):
                continue                       # an operator on data: data (escaped objects' methods are entered)
            if receiver[0] in ("i", "c") or (receiver[0] == "q" and receiver[1][0] in ("i", "c")):
                methods = self.attribute({receiver}, name, env, None)
                found |= self.call(methods, [(a, False) for a in args], [], env, None)
            elif receiver[0] in ("o", "e", "q*") or (receiver[0] == "q"):
                if not data:
                    found |= self.from_outside(env)
                for a in args:
                    if not data:
                        self.escape(a, env)
        if data:
            found.add(OPAQUE)
        return found

    def comprehension(self, node: Comprehension, env: Env) -> set:
        scope = self.p.scope_of[id(node)]
        inner = Env(scope, env.pos, env.top, env.level, env.owner)
        first, *rest = node.generators
        self.assign(first.target, self.contents(self.ev(first.iter, env), env), inner, None)
        for condition in first.ifs:
            self.ev(condition, inner)
        for generator in rest:
            self.assign(generator.target, self.contents(self.ev(generator.iter, inner), inner), inner, None)
            for condition in generator.ifs:
                self.ev(condition, inner)
        box = ("x", ("lit", id(node)))
        if isinstance(node, ast.DictComp):
            self.add(("h", box, "*"), self.ev(node.key, inner) | self.ev(node.value, inner))
        else:
            self.add(("h", box, "*"), self.ev(node.elt, inner))
        return {box}

    # -- calls ------------------------------------------------------------------------------------------------------
    def call_node(self, node: ast.Call, env: Env) -> set:
        callees = self.ev(node.func, env)
        args = [(self.ev(a.value, env), True) if isinstance(a, ast.Starred) else (self.ev(a, env), False)
                for a in node.args]
        kwargs = [(k.arg, self.ev(k.value, env)) for k in node.keywords]
        if ("e", "builtins.super") in callees:          # super() and super(C, self): the student's bases' methods
            callees = callees - {("e", "builtins.super")}
            supers = self._super(env) if not args else \
                {("u", c[1], s) for c in args[0][0] if c[0] == "c" for s in (args[1][0] if len(args) > 1 else {("i", c[1])})
                 if s[0] in ("i", "c")} | ({OPAQUE} if any(c[0] != "c" for c in args[0][0]) else set())
            return supers | self.call(callees, args, kwargs, env, node)
        return self.call(callees, args, kwargs, env, node)

    def _super(self, env: Env) -> set:
        scope = env.scope
        while scope is not None and scope.fid is None:
            scope = scope.parent
        if scope is None or scope.fid is None or self.p.fns[scope.fid].cid is None:
            return {("d", "super() outside a method")}
        fn = self.p.fns[scope.fid]
        selves = self.get(("v", scope.key, fn.positional[0])) if fn.positional else set()
        return {("u", fn.cid, s) for s in selves if s[0] in ("i", "c")} or {("u", fn.cid, ("i", fn.cid))}

    def call(self, callees: set, args: list[tuple[set, bool]], kwargs: list[tuple[str | None, set]], env: Env,
             node: ast.AST | None) -> set:
        found: set = set()
        for callee in callees:
            if callee in self._calling:        # a call already under way (an instance whose __call__ is itself):
                continue                       # its effects are those of the outer call
            self._calling.add(callee)
            try:
                found |= self._call_one(callee, args, kwargs, env, node)
            finally:
                self._calling.discard(callee)
        return found

    def _call_one(self, callee: Value, args, kwargs, env: Env, node) -> set:
        kind = callee[0]
        if kind == "f":
            return self._call_fn(callee[1], None, args, kwargs, env)
        if kind == "b":
            return self._call_fn(callee[1], callee[2], args, kwargs, env)
        if kind == "c":
            instance = ("i", callee[1])
            if self.base is not None:
                self._alive(callee[1], env.level)
            init = self.attribute({instance}, "__init__", env, None)
            own = {v for v in init if v[0] == "b"}
            result = {instance}
            if own:
                self.call(own, args, kwargs, env, None)
            else:
                self._outside_call(args, kwargs, env)
            new = self.attribute({("c", callee[1])}, "__new__", env, None)
            result |= self.call({v for v in new if v[0] in ("f", "b")}, [({("c", callee[1])}, False), *args],
                                kwargs, env, None)
            return result
        if kind == "i":
            if self.base is not None:
                self._alive(callee[1], env.level)
            return self.call(self.attribute({callee}, "__call__", env, None), args, kwargs, env, None)
        if kind == "e":
            return self._call_ext(callee[1], args, kwargs, env, node)
        if kind == "o":
            self._outside_call(args, kwargs, env)
            return self.from_outside(env)
        if callee == QSTAR:                    # may call anything handed out
            self._outside_call(args, kwargs, env)
            if self.base is not None:
                escaped = replace_level(env, "escape")
                for value in self.store.get(("E",), ()):
                    self.reach_value(value, escaped, called=True)
                if self.recording and self.observer is not None:
                    self.observer("value", node, {("q", v) for v in self.store.get(("E",), ()) if v[0] in ("e", "d")},
                                  env)
            return self.from_outside(env)
        if kind == "q":
            escaped = replace_level(env, "escape")
            if self.base is not None:
                self.reach_value(callee[1], escaped, called=True)
            return {v if v[0] == "q" else ("q", v) for v in self._call_one(callee[1], args, kwargs, escaped, node)}
        if kind == "x":
            held = self.get(("h", callee, "func"))
            if held and self.recording and self.observer is not None:
                self.observer("value", node, held, env)       # what a partial holds is what it calls
            if held:
                stored = self.get(("h", callee, "*"))
                return self.call(held, [(stored, True), *args], kwargs, env, None)
            return set()
        if kind == "n":
            box = ("x", ("nt", id(node), env.running.key))
            fields = self.store.get(("ntf", callee), set())
            values = set().union(*(a for a, _ in args), *(v for _, v in kwargs)) if args or kwargs else set()
            positional = sorted(fields, key=lambda f: f[0])
            for index, (arg, starred) in enumerate(args):
                for number, name in positional:
                    if starred or number == index:
                        self.add(("h", box, name), arg)
            for name, value in kwargs:
                self.add(("h", box, name if name else "?"), value)
            self.add(("h", box, "*"), values)
            return {box}
        if kind == "w":
            return set().union(*(a for a, _ in args[:1])) if args else {("w", callee[1] + "()")}
        if kind == "m":                                   # a container's own method
            return self._container_method(callee[1], callee[2], args, kwargs, env)
        if kind == "d":
            return {callee}
        if kind == "u":
            return set()
        return set(OPAQUE_ONLY)

    def _container_method(self, box: Value, name: str, args, kwargs, env: Env) -> set:
        everything = set().union(*(a for a, _ in args), *(v for _, v in kwargs)) if args or kwargs else set()
        if name in ("append", "add", "insert", "setdefault", "__setitem__"):
            self.add(("h", box, "*"), everything)
        elif name in ("extend", "update", "__iadd__", "__ior__"):
            self.add(("h", box, "*"), self.contents(everything, env) | {v for _, values in kwargs for v in values})
        elif name in ("_replace",):
            for key, value in kwargs:
                self.add(("h", box, key or "?"), value)
            return {box}
        if name in ("get", "pop", "popitem", "setdefault", "__getitem__", "values", "items", "keys", "copy", "_asdict",
                    "__iter__", "__next__", "index", "count", "fromkeys"):
            found = self.get(("h", box, "*"))
            if name in ("get", "pop", "setdefault"):
                found |= everything
            if name == "items":                        # (key, value) tuples of what it holds
                pair = ("x", ("items", box))
                self.add(("h", pair, "*"), found)
                listed = ("x", ("items-of", box))
                self.add(("h", listed, "*"), found | {pair})
                return {listed}
            if name in ("values", "keys", "copy", "_asdict", "__iter__", "fromkeys"):
                return {box}
            return found
        return set(OPAQUE_ONLY)

    def _call_fn(self, fid: int, self_value: Value | None, args, kwargs, env: Env) -> set:
        fn = self.p.fns[fid]
        if self.base is not None:
            if ("f", fid) in self.stand_ins:
                return self.base.store.get(("r", fid), set()) | self._generator(fn)
            self._reach_fn(fid, env.level)
        names = [*fn.positional]
        shift = 0
        if self_value is not None and names:
            self.add(("v", fn.scope.key, names[0]), {self_value})
            shift = 1
        anywhere: set = set()
        index = shift
        for values, starred in args:
            if starred:
                inner = self.contents(values, env)
                anywhere |= inner
                continue
            if index < len(names):
                self.add(("v", fn.scope.key, names[index]), values)
            elif fn.vararg:
                self.add(("h", ("x", ("args", fid, fn.vararg)), "*"), values)
            index += 1
        for name, values in kwargs:
            if name is None:
                anywhere |= self.contents(values, env)
            elif name in names or name in fn.kwonly:
                self.add(("v", fn.scope.key, name), values)
            elif fn.kwarg:
                self.add(("h", ("x", ("args", fid, fn.kwarg)), "*"), values)
        if anywhere:
            for name in names[shift:] + fn.kwonly:
                self.add(("v", fn.scope.key, name), anywhere)
            for name in (fn.vararg, fn.kwarg):
                if name:
                    self.add(("h", ("x", ("args", fid, name)), "*"), anywhere)
        for name in (fn.vararg, fn.kwarg):
            if name:
                self.add(("v", fn.scope.key, name), {("x", ("args", fid, name))})
        return self._generator(fn) or set(self.get(("r", fid)))

    def _generator(self, fn: Fn) -> set:
        if fn.generator:
            return {("x", ("gen", fn.fid))}
        if fn.is_async:
            box = ("x", ("coro", fn.fid))
            self.add(("h", box, "*"), self.get(("r", fn.fid)))
            return {box}
        return set()

    def _outside_call(self, args, kwargs, env: Env) -> None:
        for values, _ in args:
            self.escape(values, env)
        for _, values in kwargs:
            self.escape(values, env)

    def _call_ext(self, name: str, args, kwargs, env: Env, node) -> set:
        """A call of something outside the notebook, by what it is known to do with its arguments."""
        everything = set().union(*(a for a, _ in args), *(v for _, v in kwargs)) if args or kwargs else set()
        if name in CODE_BUILDERS:
            if env.pos >= self.p.context_end and name not in NAMESPACES:   # the set-up may; the student's code is
                self._flag(f"code built or names read at run time ({name.removeprefix('builtins.')})")   # flagged
            return {("d", f"{name.removeprefix('builtins.')}()")}
        if under(name, REFLECTIVE):
            self.escape(everything, env)
            return {("d", f"what {name} returns")}
        if name in ("builtins.getattr", "builtins.setattr", "builtins.delattr"):
            return self._reflective_attribute(name, args, env)
        if name == "builtins.type":
            if len(args) == 1:
                return {("c", v[1]) for v in args[0][0] if v[0] == "i"} | \
                    ({OPAQUE} if any(v[0] != "i" for v in args[0][0]) else set())
            self._flag("a class built at run time (type(name, bases, namespace))")
            return {("d", "a class built at run time")}
        if name in PURE:
            return set(OPAQUE_ONLY)
        if name in CALLS_AND_FORGETS:                 # timeit.timeit(lambda: ...): calls it, keeps nothing
            functions = {v for values, _ in args for v in values if v[0] in ("f", "b", "x", "c", "i", "q")} | \
                {v for key, values in kwargs if key in ("stmt", "setup") for v in values if v[0] != "s"}
            self.call(functions, [], [], env, node)
            return set(OPAQUE_ONLY)
        if name in ("functools.partial", "functools.partialmethod", "types.MethodType"):
            box = ("x", ("partial", id(node), env.running.key))
            if args:
                self.add(("h", box, "func"), args[0][0])
                self.add(("h", box, "*"), set().union(*(a for a, _ in args[1:])) | {v for _, vs in kwargs for v in vs})
            return {box}
        if name == "types.SimpleNamespace" or name == "argparse.Namespace":
            box = ("x", ("ns", id(node), env.running.key))
            for key, values in kwargs:
                if key is None:
                    self.add(("h", box, "?"), self.contents(values, env))
                else:
                    self.add(("h", box, key), values)
            for values, _ in args:
                self.add(("h", box, "?"), self.contents(values, env))
            return {box}
        if name in ("collections.namedtuple", "typing.NamedTuple"):
            site = ("n", ("nt", id(node), env.running.key))
            fields = set()
            names_arg = args[1][0] if len(args) > 1 else next((v for k, v in kwargs if k == "field_names"), set())
            for value in names_arg:
                if value[0] == "s":
                    fields |= {(i, f) for i, f in enumerate(value[1].replace(",", " ").split())}
            for value in self.contents(names_arg, env):
                if value[0] == "s":
                    fields.add((len(fields), value[1]))
            self.add(("ntf", site), fields)
            return {site}
        if name in IDENTITY_DECORATORS or under(name, ("torch.no_grad", "torch.enable_grad", "torch.inference_mode")):
            if args and not kwargs and name not in DECORATOR_FACTORIES:
                return set(args[0][0])                # staticmethod(f), functools.cache(f): f
            return {("w", name)}                      # torch.no_grad(), functools.wraps(f): a decorator
        if name == "functools.update_wrapper":
            return set(args[0][0]) | (set(args[1][0]) if len(args) > 1 else set()) if args else set()
        if name in CONTAINERS:
            box = ("x", ("call", id(node), env.running.key))
            inner = self.contents(everything, env)
            if name in ("builtins.dict", "collections.OrderedDict", "collections.defaultdict", "collections.ChainMap",
                        "builtins.dict.fromkeys"):
                inner |= self.contents(inner, env) | {v for _, vs in kwargs for v in vs}
            if name in ("copy.copy", "copy.deepcopy", "builtins.min", "builtins.max", "builtins.sum",
                        "builtins.next", "functools.reduce", "operator.getitem"):
                inner |= everything
            if name in CALLS_ITS_FUNCTIONS:
                functions = set().union(*(a for a, _ in args)) | {v for k, vs in kwargs if k == "key" for v in vs}
                called = {v for v in functions if v[0] not in ("o", "s")}
                results = self.call(called, [(inner, True)], [], env, None)
                if name in ("builtins.map", "itertools.starmap", "functools.reduce", "itertools.accumulate"):
                    inner |= results
            if name in TUPLES_OF:                      # zip(a, b): tuples of what a and b hold
                pair = ("x", ("tuple", id(node), env.running.key))
                self.add(("h", pair, "*"), inner)
                inner = inner | {pair}
            self.add(("h", box, "*"), inner)
            if name in ("builtins.next", "builtins.min", "builtins.max", "builtins.sum", "functools.reduce",
                        "operator.getitem", "copy.copy", "copy.deepcopy"):
                return inner | ({v for v in everything if v[0] == "x"} if name.startswith("copy.") else set())
            return {box}
        # anything else: data, and whatever was handed to code outside the notebook, which it may call
        self.escape(everything, env)
        return self.from_outside(env)

    def _reflective_attribute(self, name: str, args, env: Env) -> set:
        if len(args) < 2:
            return {("d", f"{name.removeprefix('builtins.')}() with a name built at run time")}
        bases, names = args[0][0], args[1][0]
        known = {v[1] for v in names if v[0] == "s"}
        unknown = any(v[0] != "s" for v in names) or args[1][1] or args[0][1]
        if name == "builtins.getattr":
            found: set = set()
            for attribute in known:
                found |= self.attribute(bases, attribute, env, None)
                if self.recording and self.observer is not None:
                    self.observer("attribute", None, (attribute, bases, True), env)
            if len(args) > 2:
                found |= args[2][0]
            if unknown:
                found |= self._any_attribute(bases, env)
            return found
        if name == "builtins.setattr" and len(args) > 2:
            for attribute in known:
                self.store_attribute(bases, attribute, args[2][0], env)
            if unknown:
                self.store_attribute(bases, "?", args[2][0], env)
        return set(OPAQUE_ONLY)

    def _any_attribute(self, bases: set, env: Env) -> set:
        """`getattr(base, name)` for a name built at run time: any field of the student's own objects; of a module,
        class or data from outside, anything."""
        found: set = set()
        for base in bases:
            if base[0] in ("i", "c", "f", "x", "n"):
                holders = [base] + (self._mro(base[1]) if base[0] in ("i", "c") else [])
                for holder in holders:
                    for name in self.fields_of.get(holder, ()):
                        found |= self.store.get(("h", holder, name), set())
                    if holder[0] not in ("i", "c", "f", "x", "n"):
                        found.add(("d", "an attribute named at run time"))
            elif base[0] == "s":
                found.add(OPAQUE)
            else:
                found.add(("d", "an attribute named at run time"))
        if self.recording and self.observer is not None:
            self.observer("any-attribute", None, bases, env)
        return found


OPAQUE_ONLY = frozenset({OPAQUE})
# Every name this module gives a meaning to, and its ancestors (`functools` for `functools.partial`).
MODELED_PREFIXES = {".".join(name.split(".")[:i]) for name in
                    (PURE | CONTAINERS | IDENTITY_DECORATORS | CODE_BUILDERS | CALLS_ITS_FUNCTIONS | CALLS_AND_FORGETS |
                     DECORATOR_FACTORIES | TUPLES_OF |
                     {"functools.partial", "functools.partialmethod", "types.MethodType", "types.SimpleNamespace",
                      "argparse.Namespace", "collections.namedtuple", "typing.NamedTuple", "functools.update_wrapper",
                      "builtins.getattr", "builtins.setattr", "builtins.delattr", "builtins.type", "builtins.super"})
                    for i in range(1, name.count(".") + 2)}


def replace_level(env: Env, level: str) -> Env:
    return Env(env.scope, env.pos, env.top, level, env.owner)
