"""Runs in the grader: the tasks' rules (utils/rules.py: what a task may not use), judged on the submitted code,
outside the student's process, where nothing the student's code does at run time can change the verdict.

A broken rule fails that task's test cell with the rule's message (the task scores 0); code that reaches names built
at run time, which cannot be judged from the text, flags the notebook for a person (nbgrader's flag, in Formgrader).
"""
from __future__ import annotations

import os
import resource
from typing import Any

from autograder.forked import ChildFailed, call_in_child
from autograder.grader.plan import Cell, CellRun, Plan
from autograder.outcome import CellKind, Failure


def verdicts(assignment: str, plan: Plan) -> dict:
    """{test grade_id: (rule, verdict)} for every test cell of `plan` that has a rule. Each task is judged as its
    name stands when its test cell runs (after the student's cells above it), and charged for its own code only,
    once: another rule-bound task, as it stood at its own test, is a stand-in."""
    from utils.rule_judge import judge, parse  # imported by the grader before its workers fork
    from utils.rules import RULES, Code
    tests = [c for c in plan.cells if c.kind is CellKind.TEST and (assignment, c.grade_id) in RULES]
    if not tests:
        return {}
    student = [c for c in plan.cells if c.kind in (CellKind.ANSWER, CellKind.ADDED)]
    code = Code(parse(c.code for c in student), context=parse(c.code for c in plan.cells if c.kind is CellKind.SETUP),
                entries=_called_by_tests(plan))
    before: dict[str, int] = {}
    count = 0
    for cell in plan.cells:
        if cell.kind in (CellKind.ANSWER, CellKind.ADDED):
            count += 1
        elif cell.kind is CellKind.TEST:
            before[cell.grade_id] = count
    stand_ins = {RULES[(assignment, c.grade_id)].task: before[c.grade_id] for c in tests}
    return {c.grade_id: (RULES[(assignment, c.grade_id)],
                         judge(RULES[(assignment, c.grade_id)], code, stand_ins, at=before[c.grade_id]))
            for c in tests}


def _called_by_tests(plan: Plan) -> set[str]:
    """The names the instructor's test cells read: what the tests may call, with anything."""
    import ast
    names = set()
    for cell in plan.cells:
        if cell.kind is CellKind.TEST:
            try:
                names |= {n.id for n in ast.walk(ast.parse(cell.code)) if isinstance(n, ast.Name)}
            except (SyntaxError, ValueError, RecursionError):
                continue
    return names


JUDGE_SECONDS = 60.0       # wall-clock seconds for one notebook's judgement
JUDGE_MEMORY = 1 << 30     # bytes the judge may map beyond what the worker had mapped


def bounded_verdicts(assignment: str, plan: Plan) -> dict:
    """`verdicts`, judged in a child of its own with a time and a memory cap, as a notebook has (issue #48: twelve
    lines of dead code once made the judge take 2.26 GB and 47 s): a judgement that runs out of either flags every
    rule-bound task of the notebook for a person, and the run goes on."""
    from utils.rule_judge import Verdict
    from utils.rules import RULES

    def work() -> dict:
        _cap_memory(JUDGE_MEMORY)
        return {gid: [verdict.broken, verdict.dynamic] for gid, (_, verdict) in verdicts(assignment, plan).items()}
    try:
        answer: dict = call_in_child(work, JUDGE_SECONDS)   # type: ignore[assignment]  # work's own answer
    except ChildFailed as why:
        reason = "MemoryError" if why.raised_a(MemoryError) else str(why).strip().splitlines()[-1][:120]
        tests = [c.grade_id for c in plan.cells if c.kind is CellKind.TEST and (assignment, c.grade_id) in RULES]
        return {gid: (RULES[(assignment, gid)], Verdict([], [f"the judge could not finish ({reason})"]))
                for gid in tests}
    return {gid: (RULES[(assignment, gid)], Verdict(*pair)) for gid, pair in answer.items()}


def _cap_memory(extra: int) -> None:
    """RLIMIT_AS at what this process maps now plus `extra` bytes (where /proc tells what it maps)."""
    try:
        mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return
    resource.setrlimit(resource.RLIMIT_AS, (mapped + extra, mapped + extra))


def apply(cell: Cell, result: CellRun, judged: dict) -> CellRun:
    """`result` of one cell, failed with the rule's message when its task broke its rule (whatever else happened in
    it: the broken rule is the verdict a student should read)."""
    if cell.kind is not CellKind.TEST or cell.grade_id not in judged:
        return result
    rule, verdict = judged[cell.grade_id]
    if not verdict.broken:
        return result
    return result.failing(f"AssertionError: {verdict.message(rule)}", Failure.RULE, ename="AssertionError")


def flags(judged: dict, cells: list[Cell] | None = None, results: list[CellRun] | None = None) -> list[str]:
    """One flag per task whose rule the code cannot decide (names built at run time, a cell the grader cannot read,
    code built outside a function...), and per task whose watch saw it run what its rule forbids though the judge
    did not charge it, or saw the watch tampered with (issue #59): a person checks its rule."""
    found = [f"the grader cannot judge {rule.task}'s rule from its code ({', '.join(verdict.dynamic[:3])})"
             for rule, verdict in judged.values() if verdict.dynamic and not verdict.broken]
    for cell, result in zip(cells or [], results or []):
        if cell.grade_id not in judged or not result.ran:
            continue
        rule, verdict = judged[cell.grade_id]
        tampering = [r.removeprefix("tampering: ") for r in result.ran if r.startswith("tampering: ")]
        seen = [r for r in result.ran if not r.startswith("tampering: ")]
        if seen and not verdict.broken:
            found.append(f"{rule.task} was seen running what its rule forbids, which its code as the grader reads it "
                         f"does not show ({'; '.join(seen[:3])})")
        if tampering:
            found.append(f"{rule.task}'s tests ran with the grader's watch tampered with ({'; '.join(tampering[:3])})")
    return found


def watch_lines(rule: Any, stand_ins: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """What the notebook process's watch looks for while a task's tests call it (autograder/sandboxed/watch.py);
    `stand_ins`: the other rule-bound tasks, judged on their own (the tests may call a correct one in their place)."""
    lines = [f"task:{rule.task}", *(f"name:{n}" for n in rule.names), *(f"method:{m}" for m in rule.methods),
             *(f"private_of:{p}" for p in rule.private_of), *(f"needs:{n}" for n in rule.needs),
             *(f"stand_in:{t}" for t in sorted(stand_ins - {rule.task}))]
    if any(n == "torch.autograd" or n.startswith("torch.autograd.") for n in rule.names):
        lines.append("engine")
    return lines


def watches(assignment: str, plan: Plan) -> dict[str, list[str]]:
    """{test grade_id: its watch} for the rule-bound test cells of `plan`."""
    from utils.rules import RULES, tasks_of
    return {c.grade_id: watch_lines(RULES[(assignment, c.grade_id)], tasks_of(assignment)) for c in plan.cells
            if c.kind is CellKind.TEST and (assignment, c.grade_id) in RULES}
