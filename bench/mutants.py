"""Do the tests notice a real mistake? Mutation testing of the modules that grade, protect or charge (issue #63).

    nice -n 10 .venv/bin/python -m bench.mutants [--seed 63] [--per-module 16] [--module PATH ...]
                                                 [--rev REV] [--json mutants.json] [--list] [--check]
    python -m bench.mutants --report mutants.json      # the table of an earlier run

For each module of MODULES, every realistic one-line mistake is generated from its syntax tree (`candidates`): a
comparison flipped (`==`/`!=`, `in`/`not in`, `is`/`is not`) or moved across its boundary (`<`/`<=`, `>`/`>=`), a
`not` dropped, `and`/`or` swapped, an int constant changed by one or a float one four times as large, a cap dropped
(`min(a, b)` or `max(a, b)` reduced to one of its arguments), a statement deleted (a `raise`, an `assert`, a guard
`if` without `else`, a call made for its effect, an augmented assignment), and a procedure returning at its start
(a function that returns no value: a check that now checks nothing). A sample of `--per-module` of them, drawn
with `random.Random(f"{seed}:{path}")` from the candidates in source order, is applied one at a time to a copy of
the repository (git's tracked and untracked, not ignored, files, in a temporary folder), and that module's test files
(TESTS) run against it: `pytest -x -q`, with PYTHONPATH set to the copy so that its code is imported, not the
checkout's, and a time-out of four times the unmutated run plus 30 s. A mutant is caught when the tests fail (or time
out); missed when they pass. The same seed, sample size and source give the same mutants.

Why our own: mutmut 3 rewrites every function into a trampoline and runs the whole `tests/` through its own runner,
cosmic-ray needs a session database and a config per module; both take hours on this course's 1,700 tests. This one
is the issue's own list of mistakes, one file of code, a table from module to its fast tests, and a sample.

The tables are plain data to keep up to date: a module that becomes a package is a folder in MODULES (every .py file
under it is mutated); a path that is gone is reported, not an error. Test files are the fast ones (seconds): a test
that grades a class (minutes) belongs to `make test`, not to a mutation run. docs/tests.md reports the scores.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Module (a file, or a folder whose .py files are all mutated) -> pytest's arguments for its fast tests (files, then
# `-k` to leave out a file's slow tests: a grading run, a server); a file not there yet is left out, with a note.
TESTS: dict[str, list[str]] = {
    "utils/napkin.py": ["tests/test_napkin.py"],
    "utils/rules.py": ["tests/test_rules.py", "-k", "not cannot_follow and not without_importing_torch"],
    "utils/rule_judge.py": ["tests/test_rules.py", "tests/test_rule_judge.py", "-k",
                            "not cannot_follow and not without_importing_torch"],
    "autograder/grader/cost.py": ["tests/test_cost_verdict.py"],
    "autograder/outcome.py": ["tests/test_outcome.py", "-k", "not a_run_writes and not grades_csv_has"],
    "autograder/late.py": ["tests/test_late.py"],
    "autograder/gradebook.py": ["tests/test_gradebook_rows.py"],
    "autograder/canvas.py": ["tests/test_canvas.py", "tests/test_gradebook_rows.py"],
    "autograder/staff_pages.py": ["tests/test_staff_pages.py", "-k",   # not the tests that grade and serve a class
                                  "not no_student_markup_runs and not her_files_stay_inert and not crafted_formgrader"
                                  " and not feedback_carries"],
    "utils/grading.py": ["tests/test_grading_checks.py", "tests/test_task_errors.py", "-k", "not answer_that_raises"],
    "autograder/exchange": ["tests/test_exchange_owned.py", "tests/test_exchange_root.py", "tests/test_exchange_collect.py",
                            "tests/test_exchange_release.py", "tests/test_exchange_students_env.py"],
}
MODULES = list(TESTS)

SEED = 63
PER_MODULE = 10

# Mutants that change nothing a user of the course can see, each with why: (file, change as printed) -> reason. A
# missed one of these is reported as equivalent and left out of the score's denominator; caught, it counts as caught.
EQUIVALENT: dict[tuple[str, str], str] = {
    ("utils/napkin.py", "`abs(log_ratio) < 1` -> `abs(log_ratio) <= 1`"):
        "differs only for an answer exactly 10x or 1/10 off, which only a tolerance of a factor 10 or more allows; "
        "no question has one (the bound keeps 10**log_ratio from overflowing)",
    ("utils/napkin.py", "`1` -> `2` (line: `return tolerance.factor is None and abs(log_rat...`)"):
        "a near miss is at most NEAR x the tolerance off, far inside a factor of 10 for any tolerance under 360%; the "
        "bound only keeps 10**log_ratio from overflowing",
    ("utils/grading.py", "`1e-12` -> `4e-12` (line: `named = _named(value, mistakes, hint, lambda a,...`)"):
        "the floor of the tolerance a known mistake's value is matched to: a float 1e-12 to 4e-12 away from a "
        "mistake's value is that mistake either way",
    ("autograder/grader/cost.py", "`if READ_SYSCALL is None: ...` deleted"):
        "the guard is for a machine whose read(2) number is unknown; on x86_64 and aarch64 (every machine the grader "
        "runs on) it is known",
    ("autograder/grader/cost.py", "`0.01` -> `0.04` (line: `return max(seconds - (time.monotonic() - starte...`)"):
        "the least time a part is given once the cell's time is used up: 10 ms or 40 ms, the part times out either way",
    # judged after the held-out run of docs/tests.md (seed 2026): the polling of /proc/<pid>/syscall
    ("autograder/grader/cost.py", "`0.0005` -> `0.002` (line: `deadline, pause = time.monotonic() + seconds, 0...`)"):
        "the first pause between two looks at what the notebook's main thread does: 0.5 ms or 2 ms, the same answer",
    ("autograder/grader/cost.py", "`min(pause * 2, 0.05)` -> `0.05`"):
        "the pauses between looks grow to 50 ms at once instead of doubling up to it: the same answer, found later",
    ("autograder/grader/cost.py", "`len(call) >= 2` -> `len(call) > 2`"):
        "a thread blocked in read(2) shows its number and six arguments, nine fields; 'running' is one",
    # judged after the held-out runs of utils/rules.py, utils/rule_judge.py and grader/cost.py (seeds 2026 and 7)
    ("autograder/grader/cost.py", "`2` -> `1` (line: `pause = min(pause * 2, 0.05)`)"):
        "the pause between looks stays 0.5 ms instead of doubling up to 50 ms: the same answer, from more looks",
    ("utils/rule_judge.py", "`0` -> `1` (line: `reader((\"value\"), None, entry, Env(None, 0, Tru...`)"):
        "the position of the Env the task's own value is read in: the reader uses only its level and owner",
    ("utils/rule_judge.py", "`0.5` -> `2.0` (line: `return following[0] - 0.5 if following else len...`)"):
        "(the second 0.5 of the line) a test after every cell: any position past the last statement sees the same "
        "bindings; the first 0.5, before the next cell, is tested (tests/test_rule_judge.py)",
    ("utils/rule_judge.py", "`rule.methods or rule.private` -> `rule.methods and rule.private`"):
        "the reader's own flag of an attribute named at run time: the value such a getattr gives is one nobody can "
        "read (utils/code_flow.py, _any_attribute), flagged under every rule (tests/test_rule_judge.py)",
    ("autograder/grader/cost.py", "`if cell.kind is not CellKind.TEST: ...` deleted"):
        "Cell.hidden_keys is empty for a cell that is no test (grader/plan.py), so its budgets are none either way",
    ("autograder/canvas.py", "`max(wanted or 0.0, 0.0)` -> `wanted or 0.0`"):
        "the course's penalty plugin never gives a negative penalty (tests/test_late.py); the clip is nbgrader's rule",
    # judged with the held-out run of 2026-11-29 16:20 (staff pages, the exchange, the gradebook)
    ("autograder/staff_pages.py", "`super().__init__(request)` deleted"):
        "tornado's OutputTransform.__init__ does nothing (`pass`, tornado/web.py)",
    ("autograder/staff_pages.py", "`if PLACEHOLDER.encode() not in chunk: ...` deleted"):
        "a fast path: without the placeholder neither OFF_SITE (whose pattern holds it) nor the replace changes a byte",
    **{("autograder/exchange/collect.py", f"`{a}` -> `{b}` (line: `CHUNK = 1 << 20 # bytes read at a time while co...`)"):
       "how much of a file is read at a time (512 KiB to 4 MiB): the same copy, the same limits"
       for a, b in (("1", "2"), ("20", "19"), ("20", "21"))},
    **{("autograder/exchange/collect.py", change):
       "how much is read at once near the limit: a file past max_file is still read to more than max_file bytes and "
       "left out, one within it copied whole"
       for change in ("`min(CHUNK, max_file + 1 - copied)` -> `CHUNK`",
                      "`min(CHUNK, max_file + 1 - copied)` -> `max_file + 1 - copied`",
                      "`1` -> `2` (line: `while chunk := os.read(fd, min(CHUNK, max_file ...`)")},
    **{("autograder/exchange/students_env.py", f"`120` -> `{b}` (line: `text=True, timeout=120, cwd=\"/\")`)"):
       "the time-out of a check that takes a second: 119 s or 121 s, the same answer" for b in (119, 121)},
    **{("autograder/gradebook.py", change):
       "whether nbgrader's recording runs in this process or in a forked child while the caller goes on: the same "
       "assignments recorded, the same answer (only the overlap with the grader's imports changes)"
       for change in ("`if not todo or not background: ...` deleted",
                      "`not todo or not background` -> `not todo and (not background)`", "`not background` -> `background`")},
    ("autograder/exchange/collect.py", "`if copied > max_file: ...` deleted"):
        "the loop's early stop: without it the chunk past the limit is written too, and the next read asks for 0 "
        "bytes; the file is then over the limit, removed and left out all the same",
    ("autograder/exchange/folder.py", "`if not name: ...` deleted"):
        "a fast path: without the course folder none of its parts exists either, and each is passed over",
    ("autograder/gradebook.py", "`gradebook.db.expire(submission, ['late_submission_penalty'])` deleted"):
        "nbgrader's SubmittedAssignment.late_submission_penalty is a deferred column_property (nbgrader/api.py): "
        "first loaded by the late line itself, after the flush; nothing in a run reads it earlier",
    ("autograder/gradebook.py", "`gradebook.db.flush()` deleted"):
        "nbgrader's session autoflushes (sessionmaker(autoflush=True), nbgrader/api.py): the query that reads a "
        "notebook's score or the submission's penalty back flushes first (both flushes of gradebook.write)",
    ("autograder/gradebook.py", "`if not todo: ...` deleted"):
        "with nothing to record, the lock (the course root's .gradebook-sync.lock, made by any recording) is taken and "
        "nothing is recorded: the same answer",
}
NO_MUTATE = "pragma: no mutate"   # a line marked so is left alone (say why on it)


@dataclass(frozen=True)
class Mutant:
    """One mistake: in `path`, the text from (line, col) to (end_line, end_col) (1-based lines, 0-based byte columns
    as ast gives them) replaced by `replacement`; `change` says it for a person ("`a < b` -> `a <= b`")."""
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str
    kind: str
    change: str

    def apply(self, source: str) -> str:
        """`source` with this mistake made."""
        lines = source.encode().splitlines(keepends=True)
        start = sum(len(text) for text in lines[:self.line - 1]) + self.col
        end = sum(len(text) for text in lines[:self.end_line - 1]) + self.end_col
        data = source.encode()
        return (data[:start] + self.replacement.encode() + data[end:]).decode()


COMPARISONS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
               ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and isinstance(body, list) and bool(body) and body[0] is node)


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether `fn` itself (not a function nested in it) returns a value or yields."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _guards(stmt: ast.If) -> bool:
    """An `if` without `else` that stops or refuses: its body raises, returns, skips or calls a failure."""
    for node in ast.walk(ast.Module(body=stmt.body, type_ignores=[])):
        if isinstance(node, (ast.Raise, ast.Return, ast.Continue, ast.Break)):
            return True
        if isinstance(node, ast.Call) and "fail" in ast.unparse(node.func).lower():
            return True
    return False


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str, source: str):
        self.path, self.source, self.lines = path, source, source.splitlines()
        self.found: list[Mutant] = []
        self.parents: list[ast.AST] = []
        self.skip_depth = 0   # inside an annotation, a docstring or `if TYPE_CHECKING`/`__main__`

    # --- helpers ---
    def _marked(self, node: ast.expr | ast.stmt) -> bool:
        return any(NO_MUTATE in self.lines[n - 1] for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))

    def _add(self, node: ast.expr | ast.stmt, replacement: str, kind: str, change: str) -> None:
        if self.skip_depth or self._marked(node):
            return
        self.found.append(Mutant(self.path, node.lineno, node.col_offset, node.end_lineno or node.lineno,
                                 node.end_col_offset or node.col_offset, replacement, kind, change))

    def _swap(self, node: ast.expr, new: ast.expr, kind: str) -> None:
        before, after = ast.unparse(node), ast.unparse(new)
        self._add(node, f"({after})", kind, f"`{_short(before)}` -> `{_short(after)}`")

    def generic_visit(self, node: ast.AST) -> None:
        self.parents.append(node)
        super().generic_visit(node)
        self.parents.pop()

    def _skipping(self, node: ast.AST) -> None:
        self.skip_depth += 1
        self.generic_visit(node)
        self.skip_depth -= 1

    # --- where nothing is mutated ---
    def visit_arg(self, node: ast.arg) -> None:
        self._skipping(node)   # annotations

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.skip_depth += 1
        self.visit(node.annotation)
        self.skip_depth -= 1
        if node.value is not None:
            self.parents.append(node)
            self.visit(node.value)
            self.parents.pop()

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self.generic_visit(node)

    # --- statements ---
    def visit_If(self, node: ast.If) -> None:
        test = ast.unparse(node.test)
        if test == "TYPE_CHECKING" or "__main__" in test:
            return self._skipping(node)
        if not node.orelse and _guards(node):
            self._add(node, "pass", "delete", f"`if {_short(test, 60)}: ...` deleted")
        self.generic_visit(node)

    def _delete_statement(self, node: ast.stmt) -> None:
        """A `raise`, an `assert` or an augmented assignment (a counter, a total) deleted."""
        self._add(node, "pass", "delete", f"`{_short(ast.unparse(node))}` deleted")
        self.generic_visit(node)

    visit_Raise = visit_Assert = visit_AugAssign = _delete_statement

    def visit_Expr(self, node: ast.Expr) -> None:
        parent = self.parents[-1] if self.parents else None
        if _is_docstring(node, parent):
            return
        if isinstance(node.value, ast.Call):
            self._add(node, "pass", "delete", f"`{_short(ast.unparse(node))}` deleted")
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body = node.body[1:] if node.body and _is_docstring(node.body[0], node) else node.body
        if body and not _returns_value(node) and not self.skip_depth:
            first = body[0]
            if not self._marked(first):
                indent = " " * first.col_offset
                self.found.append(Mutant(self.path, first.lineno, 0, first.lineno, 0, f"{indent}return\n",
                                         "return early", f"`{node.name}` returns at its start"))
        for decorator in node.decorator_list:
            self.parents.append(node)
            self.visit(decorator)
            self.parents.pop()
        self.skip_depth += 1
        if node.returns is not None:
            self.visit(node.returns)
        self.skip_depth -= 1
        self.parents.append(node)
        self.visit(node.args)
        for stmt in node.body:
            self.visit(stmt)
        self.parents.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function(node)

    # --- expressions ---
    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            if type(op) in COMPARISONS:
                new = copy.deepcopy(node)
                new.ops[i] = COMPARISONS[type(op)]()
                self._swap(node, new, "comparison")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._swap(node, node.operand, "not dropped")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._swap(node, new, "and/or")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(node.args) == 2 \
                and not node.keywords:
            for arg in node.args:
                self._swap(node, arg, "cap dropped")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        written = ast.get_source_segment(self.source, node) or repr(value)
        line = _short(self.lines[node.lineno - 1].strip(), 50)
        if type(value) is int:
            base = {"0o": oct, "0x": hex, "0b": bin}.get(written[:2].lower(), repr)   # 0o644 -> 0o645, as written
            for changed in (value + 1, value - 1):
                if changed >= 0 or value < 0:
                    self._add(node, base(changed), "constant", f"`{written}` -> `{base(changed)}` (line: `{line}`)")
        elif type(value) is float and value != 0 and value == value:
            self._add(node, repr(value * 4), "constant", f"`{written}` -> `{value * 4!r}` (line: `{line}`)")


def module_files(module: str, root: Path = ROOT) -> list[Path]:
    """The .py files of `module` (a file, or every .py file under a folder), relative to `root`; [] if gone."""
    path = root / module
    if path.is_dir():
        return sorted(p.relative_to(root) for p in path.rglob("*.py"))
    return [Path(module)] if path.is_file() else []


def candidates(module: str, root: Path = ROOT) -> list[Mutant]:
    """Every mutant of `module`, in source order (file, line, column, kind, change)."""
    found: list[Mutant] = []
    for rel in module_files(module, root):
        source = (root / rel).read_text()
        finder = _Finder(str(rel), source)
        finder.visit(ast.parse(source))
        found.extend(finder.found)
    valid = []
    for mutant in sorted(set(found), key=lambda m: (m.path, m.line, m.col, m.kind, m.change, m.replacement)):
        try:
            ast.parse(mutant.apply((root / mutant.path).read_text()))
        except SyntaxError:   # a replacement that does not fit where it stands (never expected; skipped, not run)
            continue
        valid.append(mutant)
    return valid


def sample(module: str, seed: int, size: int, root: Path = ROOT) -> list[Mutant]:
    """`size` mutants of `module` drawn with the seed (all of them if fewer), in source order."""
    every = candidates(module, root)
    if len(every) <= size:
        return every
    chosen = random.Random(f"{seed}:{module}").sample(range(len(every)), size)
    return [every[i] for i in sorted(chosen)]


def copy_repository(dest: Path, rev: str | None = None) -> None:
    """Git's tracked and untracked (not ignored) files of the checkout, copied (never linked) into `dest`; with `rev`,
    the files of that commit instead (a score before a change: `--rev main`)."""
    if rev is not None:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@dataclass
class Run:
    """One pytest run: 'passed', 'failed' or 'timeout', and its wall time in seconds."""
    outcome: str
    seconds: float
    tail: str


def run_tests(copy_root: Path, tests: list[str], timeout: float) -> Run:
    """The module's tests, `pytest -x -q`, against the code in `copy_root`."""
    env = dict(os.environ, PYTHONPATH=str(copy_root), PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", *tests],
                              cwd=copy_root, env=env, capture_output=True, text=True, timeout=timeout,
                              start_new_session=True)
    except subprocess.TimeoutExpired as expired:
        return Run("timeout", time.monotonic() - start, str(expired.stdout or "")[-400:])
    outcome = "passed" if done.returncode == 0 else "failed"
    return Run(outcome, time.monotonic() - start, (done.stdout + done.stderr)[-400:])


def _drop_bytecode(copy_root: Path, rel: str) -> None:
    cache = (copy_root / rel).parent / "__pycache__"
    for pyc in cache.glob(Path(rel).stem + ".*.pyc") if cache.is_dir() else []:
        pyc.unlink()


def _is_file(arg: str) -> bool:
    return ".py" in arg and not arg.startswith("-")


def present(args: list[str], root: Path) -> list[str]:
    """pytest's arguments without the test files not (yet) in `root`."""
    return [arg for arg in args if not _is_file(arg) or (root / arg.split("::")[0]).exists()]


@dataclass
class Score:
    module: str
    tests: list[str]
    baseline_s: float
    caught: int
    mutants: int
    missed: list[dict]
    note: str = ""
    equivalent: int = 0   # of the missed, those in EQUIVALENT


def score_module(module: str, copy_root: Path, seed: int, size: int, log, lines: set[int] | None = None) -> Score:
    """Run the sample of `module`'s mutants against its tests in `copy_root`."""
    tests = present(TESTS[module], copy_root)
    if not module_files(module, copy_root):
        return Score(module, tests, 0.0, 0, 0, [], "module not found: update TESTS in bench/mutants.py")
    if not any(_is_file(arg) for arg in tests):
        return Score(module, tests, 0.0, 0, 0, [], "no fast test file")
    base = run_tests(copy_root, tests, timeout=600)
    if base.outcome != "passed":
        return Score(module, tests, base.seconds, 0, 0, [], f"the tests fail unmutated: {base.tail}")
    timeout = 4 * base.seconds + 30
    mutants = (sample(module, seed, size, copy_root) if lines is None
               else [m for m in candidates(module, copy_root) if m.line in lines])
    caught, missed = 0, []
    for i, mutant in enumerate(mutants, 1):
        target = copy_root / mutant.path
        original = target.read_text()
        target.write_text(mutant.apply(original))
        _drop_bytecode(copy_root, mutant.path)
        try:
            run = run_tests(copy_root, tests, timeout)
        finally:
            target.write_text(original)
            _drop_bytecode(copy_root, mutant.path)
        if run.outcome == "passed":
            missed.append({"where": f"{mutant.path}:{mutant.line}", "kind": mutant.kind, "change": mutant.change,
                           "equivalent": EQUIVALENT.get((mutant.path, mutant.change), "")})
        else:
            caught += 1
        log(f"  [{i}/{len(mutants)}] {run.outcome:7} {run.seconds:5.1f}s {mutant.path}:{mutant.line} {mutant.change}")
    return Score(module, tests, base.seconds, caught, len(mutants), missed,
                 equivalent=sum(1 for m in missed if m["equivalent"]))


def check_module(module: str, copy_root: Path) -> str:
    """That the tests import the copy's module: a module that raises on import must fail them."""
    rel = module_files(module, copy_root)
    if not rel:
        return "module not found"
    target = copy_root / rel[0]
    original = target.read_text()
    target.write_text("raise RuntimeError('bench.mutants: poisoned')\n" + original)
    _drop_bytecode(copy_root, str(rel[0]))
    try:
        run = run_tests(copy_root, present(TESTS[module], copy_root), timeout=600)
    finally:
        target.write_text(original)
        _drop_bytecode(copy_root, str(rel[0]))
    return "ok: a poisoned module fails its tests" if run.outcome != "passed" else "NOT IMPORTED from the copy"


def report(scores: list[Score], seed: int, size: int) -> str:
    """The table of scores and the missed mutants, as Markdown: caught of all, and of those not equivalent."""
    lines = [f"seed {seed}, up to {size} mutants per module", "",
             "| module | caught | equivalent (missed) | caught of the rest | tests | unmutated run |",
             "|---|---|---|---|---|---|"]
    caught = total = equivalent = 0
    for s in scores:
        rest = s.mutants - s.equivalent
        percent = f"{100 * s.caught / rest:.0f}%" if rest else "-"
        lines.append(f"| `{s.module}` | {s.caught} / {s.mutants} | {s.equivalent} | {percent} | {' '.join(s.tests)} | "
                     f"{s.baseline_s:.1f} s |" + (f" {s.note}" if s.note else ""))
        caught, total, equivalent = caught + s.caught, total + s.mutants, equivalent + s.equivalent
    if total:
        lines.append(f"| all | {caught} / {total} | {equivalent} | {100 * caught / (total - equivalent):.0f}% | | |")
    for s in scores:
        for m in s.missed:
            why = f" (equivalent: {m['equivalent']})" if m.get("equivalent") else ""
            lines.append(f"- missed: {m['where']} ({m['kind']}) {m['change']}{why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--per-module", type=int, default=PER_MODULE)
    parser.add_argument("--module", action="append", help="a module of TESTS (default: all)")
    parser.add_argument("--rev", help="score the code and tests of this commit (default: the checkout as it is)")
    parser.add_argument("--json", type=Path, help="write the scores here too")
    parser.add_argument("--lines", type=int, nargs="+", help="with one --module: every mutant of these lines, no sample")
    parser.add_argument("--report", type=Path, help="print the table of an earlier run's --json (EQUIVALENT as now)")
    parser.add_argument("--list", action="store_true", help="list the sampled mutants; run nothing")
    parser.add_argument("--check", action="store_true", help="check each module's tests import the copy; no mutants")
    args = parser.parse_args(argv)
    if args.report:
        scores = [Score(**s) for s in json.loads(args.report.read_text())]
        for score in scores:
            for m in score.missed:
                m["equivalent"] = EQUIVALENT.get((m["where"].rsplit(":", 1)[0], m["change"]), "")
            score.equivalent = sum(1 for m in score.missed if m["equivalent"])
        print(report(scores, args.seed, args.per_module))
        return 0
    modules = args.module or MODULES
    if args.lines and len(modules) != 1:
        parser.error("--lines needs exactly one --module")
    unknown = [m for m in modules if m not in TESTS]
    if unknown:
        parser.error(f"not in TESTS: {unknown}")
    if args.list:
        for module in modules:
            every = candidates(module)
            chosen = sample(module, args.seed, args.per_module)
            print(f"{module}: {len(chosen)} of {len(every)} candidates")
            for mutant in chosen:
                print(f"  {mutant.path}:{mutant.line} ({mutant.kind}) {mutant.change}")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # killed: the copy is removed, the pytest run killed
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        copy_root = Path(tmp)
        copy_repository(copy_root, args.rev)
        if args.check:
            for module in modules:
                print(f"{module}: {check_module(module, copy_root)}", flush=True)
            return 0
        scores = []
        for module in modules:
            print(f"{module} ({', '.join(TESTS[module])})", flush=True)
            scores.append(score_module(module, copy_root, args.seed, args.per_module,
                                       lambda line: print(line, flush=True), set(args.lines) if args.lines else None))
    print()
    print(report(scores, args.seed, args.per_module))
    print(f"\n{time.monotonic() - start:.0f} s of wall")
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in scores], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
