"""A hint points to the idea and the lecture's section, not the line to type (issue #50): no hint a student can read
contains an expression of a task's solution.

The hints are the strings given as `hint=`, the values of `mistakes=` and of the pattern tables that errors_named
and task_errors use, and what follows "Hint:" in a message: in the exercises' test cells (visible and hidden
parts), in the shared checkers (utils/grading.py, utils/optimizer_checks.py, utils/shapes.py,
utils/progress_check.py) and in the hidden tests' trusted checks (reference/*.py). The solutions' expressions are
every call, arithmetic, comparison, subscript, assignment and return in the answer cells' solution blocks, compared
without spaces. Left out, since naming them points to a thing rather than handing over a line: short ones (under 12
characters, such as `x.T`), bare names and attributes, calls with no arguments (`optimizer.step()`), calls of the
exercise's own tasks, plain lookups (`self.state[p]`) and what the answer cell's template shows. A task's text may
spell out a call the reference's exactness needs (exercise 8's `torch.randint(...)`); a hint must not repeat it.
About 3 s."""
import ast
import re
import textwrap

import pytest

from autograder.course import assignments
from tests.exercise_cells import REPO, cells

SHARED = ["utils/grading.py", "utils/optimizer_checks.py", "utils/shapes.py", "utils/progress_check.py",
          *sorted(str(path.relative_to(REPO)) for path in (REPO / "reference").glob("*.py"))]
SHORTEST = 12   # characters, spaces left out
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _points_to_a_thing(node: ast.AST, tasks: set[str]) -> bool:
    """A call with no arguments (`optimizer.step()`), a call of one of the exercise's own tasks (`param_count(shape)`)
    or a plain lookup (`self.state[p]`, `checkpoint["model"]`): naming it says where to look, not what to write."""
    if isinstance(node, ast.Call):
        return (not node.args and not node.keywords) or (isinstance(node.func, ast.Name) and node.func.id in tasks)
    return isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Name, ast.Constant))


def solution_expressions(assignment: str) -> set[str]:
    """The expressions of every solution block of the exercise, without spaces, less those that point to a thing
    (_points_to_a_thing) and those the answer cell's own template shows."""
    tasks = {grade_id for kind, grade_id, _ in cells(assignment) if kind == "answer"}
    template = _bare("\n".join(SOLUTION.sub("", code) for kind, _, code in cells(assignment) if kind == "answer"))
    found = set()
    for kind, _, code in cells(assignment):
        for block in SOLUTION.findall(code) if kind == "answer" else []:
            for node in ast.walk(ast.parse(textwrap.dedent(block))):
                if isinstance(node, (ast.Call, ast.BinOp, ast.Compare, ast.BoolOp, ast.Subscript, ast.Assign,
                                     ast.AugAssign, ast.Return)) and not _points_to_a_thing(node, tasks):
                    text = _bare(ast.unparse(node))
                    if len(text) >= SHORTEST and re.search(r"[(+\-*/=<>\[]", text) and text not in template:
                        found.add(text)
    return found


def _strings(node: ast.AST) -> list[str]:
    """The text of every string in `node` (the constant parts of f-strings)."""
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def hints(tree: ast.AST) -> list[str]:
    """The hints in a module or cell: hint= and mistakes= arguments, string values of dicts (the pattern -> hint tables
    of errors_named and task_errors) and whatever follows "Hint:"."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in ("hint", "mistakes"):
            found += _strings(node.value)
        elif isinstance(node, ast.Dict):
            found += [text for value in node.values if value is not None for text in _strings(value)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "Hint:" in node.value:
            found.append(node.value.split("Hint:", 1)[1])
        elif isinstance(node, ast.JoinedStr):
            parts = _strings(node)
            joined = "".join(parts)
            if "Hint:" in joined:
                found.append(joined.split("Hint:", 1)[1])
    return found


def _exercise_hints(assignment: str) -> list[tuple[str, str]]:
    return [(grade_id, hint) for kind, grade_id, code in cells(assignment) if kind == "test"
            for hint in hints(ast.parse(code))]


def _shared_hints() -> list[tuple[str, str]]:
    return [(path, hint) for path in SHARED for hint in hints(ast.parse((REPO / path).read_text()))]


def solution_lines_in(hints_found: list[tuple[str, str]], expressions: set[str]) -> list[str]:
    return [f"{where}: {hint.strip()[:160]!r} contains `{expression}`"
            for where, hint in hints_found for expression in sorted(expressions) if expression in _bare(hint)]


@pytest.mark.parametrize("assignment", assignments())
def test_no_hint_contains_a_solution_expression(assignment):
    expressions = solution_expressions(assignment)
    assert expressions, f"{assignment}: no solution expressions found"
    assert solution_lines_in(_exercise_hints(assignment) + _shared_hints(), expressions) == []


def test_the_guard_finds_a_fixing_line():
    """The fixing lines issue #50 found, put back into a hint, are caught."""
    expressions = solution_expressions("09_mixed_precision") | solution_expressions("08_training_loop")
    planted = [("test", hint) for hint in hints(ast.parse(
        'check(x, hint="copy the master back with param.copy_(master) under torch.no_grad().")\n'
        'AssertionError("seeded wrong\\nHint: call random.seed(seed) and np.random.seed(seed).")\n'
        'errors_named("get_batch", {r"x": "use torch.randint(0, len(data) - context_length, (batch_size,), '
        'generator=generator)"})'))]
    found = solution_lines_in(planted, expressions)
    assert len(found) >= 3 and any("param.copy_(master)" in line for line in found), found
    assert solution_lines_in([("test", "the master gets its model parameter's gradient")], expressions) == []
