"""Runs in the grader: the tasks' rules (utils/rules.py: what a task may not use), judged on the submitted code,
outside the student's process, where nothing the student's code does at run time can change the verdict.

A broken rule fails that task's test cell with the rule's message (the task scores 0); code that reaches names built
at run time, which cannot be judged from the text, flags the notebook for a person (nbgrader's flag, in Formgrader).
"""
from __future__ import annotations

import os
import resource

from autograder.forked import ChildFailed, call_in_child
from autograder.grader.plan import Cell, CellRun, Plan
from autograder.outcome import CellKind, Failure


def verdicts(assignment: str, plan: Plan) -> dict:
    """{test grade_id: (rule, verdict)} for every test cell of `plan` that has a rule. Each task is judged as its
    name stands when its test cell runs (after the student's cells above it), and charged for its own code only,
    once: another rule-bound task, as it stood at its own test, is a stand-in."""
    from utils.rules import RULES, Code, judge, parse  # imported by the grader before its workers fork
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
    from utils.rules import RULES, Verdict

    def work() -> dict:
        _cap_memory(JUDGE_MEMORY)
        return {gid: [verdict.broken, verdict.dynamic] for gid, (_, verdict) in verdicts(assignment, plan).items()}
    try:
        answer: dict = call_in_child(work, JUDGE_SECONDS)   # type: ignore[assignment]  # work's own answer
    except ChildFailed as why:
        reason = "MemoryError" if why.raised == "MemoryError" else str(why).strip().splitlines()[-1][:120]
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
    return result.failing(f"AssertionError: {verdict.message(rule)}", Failure.RULE)


def flags(judged: dict) -> list[str]:
    """One flag per task whose rule the code cannot decide (names built at run time, a cell the grader cannot read,
    code built outside a function...): a person checks its rule."""
    return [f"the grader cannot judge {rule.task}'s rule from its code ({', '.join(verdict.dynamic[:3])})"
            for rule, verdict in judged.values() if verdict.dynamic and not verdict.broken]
