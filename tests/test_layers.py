"""The import graph of autograder/ and utils/ (issue #63 item 4): no circles, and no module imports one of a higher
layer unless UPWARD below names the import and says why (and the importing line says so too).

The graph is read from the source with `ast`, never by importing: every `import` and `from ... import` statement,
at module level or inside a function (a late import is still an arrow), relative ones resolved. An import of a name
from a package (`from autograder import gradebook`) is an arrow to that submodule; of a name defined in a package's
`__init__.py` (`from autograder.exchange import OwnedCollect`), to the package.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("autograder", "utils")

# Lowest first: a module may import its own layer and those below. Each module is in the layer of the longest prefix
# of its name listed here; a module in none fails test_every_module_has_a_layer (place it when you add it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the course's library, shared with the students' notebooks", ("utils",)),
    ("the building blocks: errors, the border's messages and limits, the course, its sources, the gradebook's "
     "database, the results' model", (
        "autograder", "autograder.errors", "autograder.atomic", "autograder.protocol", "autograder.limits",
        "autograder.cgroups", "autograder.forked", "autograder.handed_socket", "autograder.source",
        "autograder.outcome", "autograder.late", "autograder.database", "autograder.shards", "autograder.progress",
        "autograder.course")),
    ("the two sides of the sandbox: the student's (sandboxed/) and the hidden tests' (trusted/)", (
        "autograder.sandboxed", "autograder.trusted")),
    ("the record every tool shares: the gradebook, the run's tables (grades.csv, the summary), due dates", (
        "autograder.gradebook", "autograder.grades_csv", "autograder.due_dates")),
    ("the grader", ("autograder.grader",)),
    ("the instructor's commands and the staff servers' pages", (
        "autograder.canvas", "autograder.deadlines", "autograder.end_term", "autograder.exchange",
        "autograder.formgrader_autograde", "autograder.grade", "autograder.lms_import", "autograder.merge",
        "autograder.no_kernels", "autograder.release", "autograder.report", "autograder.routes",
        "autograder.staff_pages", "autograder.student_edition")),
)

# (importer, imported): why the arrow goes up. The importing line says the same in a comment.
UPWARD: dict[tuple[str, str], str] = {}

# The instructor's commands read the grader's outputs through the shared layers (grades_csv.py, gradebook.py), not
# through the grader's package: (command, grader module) each with why. The importing line says the same.
COMMANDS_INTO_THE_GRADER: dict[tuple[str, str], str] = {
    ("autograder.grade", "autograder.grader.pipeline"): "grade.py is the grader's command line: it runs the grader",
    ("autograder.grade", "autograder.grader.record"): "StoppedAfterCommit: the grader's stop, which grade.py reports",
    ("autograder.end_term", "autograder.grader.ledger"): "COURSE_LEDGER: the grader's ledger file, archived with "
                                                          "the gradebook",
    ("autograder.lms_import", "autograder.grader.find"): "SAFE_NAME, MAX_NOTEBOOK_BYTES: a submission imported from "
                                                         "the LMS must pass what the grader finds in submitted/",
}

# The student's side of the sandbox imports only the border, its limits, the hand-in channel and the heap's freezing, and nothing imports
# it: it runs as its own program (`python -m autograder.sandboxed.zygote`), never in the grader's process.
SANDBOXED = "autograder.sandboxed"
SANDBOXED_MAY_IMPORT = {"autograder.protocol", "autograder.limits", "utils.handin",
                        "autograder.heap"}   # the standard library's gc only: how a forking parent keeps its heap

# An import the zygote makes only in a child it forks, after the fork, which becomes the run's trusted checker: the
# zygote itself, and every notebook process forked from it, never holds the module (tests/test_grader_parts.py checks
# that in a notebook process). Each names why, on its line too.
SANDBOXED_AFTER_FORK = {("autograder.sandboxed.zygote", "autograder.trusted.checker"):
                        "the checker forked from the zygote's preload, so torch is imported once a run, not twice"}

# Circles known and being broken elsewhere: each names who breaks it.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}   # none: a circle someone must allow names its reason here


def modules(root: Path = REPO) -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package's __init__)} of every module of PACKAGES under `root`."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def imported(name: str, tree: ast.Module, is_package: bool) -> set[str]:
    """Every dotted name module `name` imports: `import a.b` gives a.b; `from a import b` gives a.b (a submodule, or
    a name defined in a); relative imports resolved."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def graph(root: Path = REPO) -> dict[str, set[str]]:
    """{module: the modules of PACKAGES it imports}, itself left out. A dotted name is the module it names, or the
    module that defines it (`autograder.course.Course` is autograder.course)."""
    found = modules(root)

    def owner(dotted: str) -> str:
        while dotted and dotted not in found:
            dotted = dotted.rpartition(".")[0]
        return dotted

    edges = {}
    for name, (path, is_package) in found.items():
        targets = {owner(each) for each in imported(name, ast.parse(path.read_text(), str(path)), is_package)}
        edges[name] = targets - {"", name}
    return edges


@functools.cache
def repository_graph() -> dict[str, set[str]]:
    """graph() of this repository, read once for the tests below."""
    return graph()


def layer_of(name: str) -> int | None:
    """The index in LAYERS of the longest listed prefix of `name`."""
    best, where = "", None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > len(best):
                best, where = prefix, index
    return where


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def upward(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every (importer, imported) whose imported module is in a higher layer than its importer."""
    return {(a, b) for a, targets in edges.items() for b in targets
            if (layer_of(a) or 0) < (layer_of(b) or 0)}


def test_every_module_has_a_layer():
    missing = sorted(name for name in modules() if layer_of(name) is None)
    assert not missing, f"place each in LAYERS of {__file__}: {missing}"


def test_no_circles():
    found = circles(repository_graph())
    new = [c for c in found if c not in KNOWN_CIRCLES]
    assert not new, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in new)
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"KNOWN_CIRCLES lists circles that are broken now (remove them): {gone}"


def test_no_upward_import_without_a_reason():
    edges = repository_graph()
    unexplained = sorted(upward(edges) - set(UPWARD))
    assert not unexplained, ("imports of a higher layer (move what is imported down, or list it in UPWARD with why, "
                             "and say why on the line): " + "; ".join(f"{a} -> {b}" for a, b in unexplained))
    stale = sorted(set(UPWARD) - upward(edges))
    assert not stale, f"UPWARD lists arrows that are gone: {stale}"


def test_the_commands_read_the_grader_through_the_shared_layers():
    edges = repository_graph()
    used = {(a, b) for a, targets in edges.items() if layer_of(a) == len(LAYERS) - 1
            for b in targets if b.startswith("autograder.grader")}
    unexplained = sorted(used - set(COMMANDS_INTO_THE_GRADER))
    assert not unexplained, ("an instructor's command imports the grader's package (take it from a shared module, "
                             "such as grades_csv.py, or list it in COMMANDS_INTO_THE_GRADER with why): "
                             + "; ".join(f"{a} -> {b}" for a, b in unexplained))
    assert not set(COMMANDS_INTO_THE_GRADER) - used, set(COMMANDS_INTO_THE_GRADER) - used


def test_the_student_side_stays_apart():
    edges = repository_graph()
    inside = {name for name in edges if name == SANDBOXED or name.startswith(SANDBOXED + ".")}
    out_of_it = sorted((a, b) for a in inside for b in edges[a] - inside - SANDBOXED_MAY_IMPORT
                       if (a, b) not in SANDBOXED_AFTER_FORK)
    into_it = sorted((a, b) for a in edges.keys() - inside for b in edges[a] & inside)
    assert not out_of_it, f"sandboxed/ imports beyond the border: {out_of_it}"
    assert not into_it, f"imports of the student's side (sandboxed/) from outside it: {into_it}"


def test_each_reason_is_said_where_the_import_is():
    """Each import UPWARD or COMMANDS_INTO_THE_GRADER allows carries a comment on its line (the reader of the code
    sees why too)."""
    found = modules()
    for (importer, target), why in {**UPWARD, **COMMANDS_INTO_THE_GRADER, **SANDBOXED_AFTER_FORK}.items():
        assert why.strip(), (importer, target)
        path = found[importer][0]
        lines = [line for line in path.read_text().splitlines()
                 if "import" in line and target.rpartition(".")[2] in line]
        assert any("#" in line for line in lines), f"{path}: the import of {target} says no reason on its line"


@pytest.mark.parametrize("case", ["circle", "upward", "late import", "relative"])
def test_the_checks_see_what_they_should(case, tmp_path):
    """The graph is read right: a planted circle, a planted upward import, an import inside a function, a relative
    import, each found (this is what keeps the three tests above from passing on a graph read wrong)."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "autograder" / "grader").mkdir()
    (tmp_path / "autograder" / "grader" / "__init__.py").write_text("")
    source = {"circle": ("from autograder import course\n", "from autograder.errors import X\n"),
              "upward": ("from autograder.grader.plan import Plan\n", ""),
              "late import": ("def f():\n    from autograder.grader import plan\n", ""),
              "relative": ("from .grader.plan import Plan\n", "")}[case]
    (tmp_path / "autograder" / "errors.py").write_text(source[0])
    (tmp_path / "autograder" / "course.py").write_text(source[1])
    (tmp_path / "autograder" / "grader" / "plan.py").write_text("Plan = 1\n")
    edges = graph(tmp_path)
    if case == "circle":
        assert circles(edges) == [frozenset({"autograder.errors", "autograder.course"})]
    else:
        assert upward(edges) == {("autograder.errors", "autograder.grader.plan")}, edges
