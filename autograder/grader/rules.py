"""Runs in the grader: the tasks' rules (utils/rules.py: what a task may not use), judged on the submitted code,
outside the student's process, where nothing the student's code does at run time can change the verdict.

A broken rule fails that task's test cell with the rule's message (the task scores 0); code that reaches names built
at run time, which cannot be judged from the text, flags the notebook for a person (nbgrader's flag, in Formgrader).
"""
from __future__ import annotations



def verdicts(assignment: str, plan) -> dict:
    """{test grade_id: (rule, verdict)} for every test cell of `plan` that has a rule."""
    from utils.rules import RULES, Code, judge, parse, tasks_of  # imported by the grader before its workers fork
    tests = [c for c in plan.cells if c.kind == "test" and (assignment, c.grade_id) in RULES]
    if not tests:
        return {}
    code = Code(parse(c.code for c in plan.cells if c.kind in ("answer", "added")),
                context=parse(c.code for c in plan.cells if c.kind == "setup"))
    others = tasks_of(assignment)   # each task is charged for its own code only, once
    return {c.grade_id: (RULES[(assignment, c.grade_id)], judge(RULES[(assignment, c.grade_id)], code, others))
            for c in tests}


def apply(cell, result: dict, judged: dict) -> dict:
    """`result` of one cell, failed with the rule's message when its task broke its rule (whatever else happened in
    it: the broken rule is the verdict a student should read)."""
    if cell.kind != "test" or cell.grade_id not in judged:
        return result
    rule, verdict = judged[cell.grade_id]
    if not verdict.broken:
        return result
    return {**result, "ok": False, "error": f"AssertionError: {verdict.message(rule)}", "line": None}


def flags(judged: dict) -> list[str]:
    """One flag per task whose rule the code cannot decide (names built at run time, a cell the grader cannot read,
    code built outside a function...): a person checks its rule."""
    return [f"the grader cannot judge {rule.task}'s rule from its code ({', '.join(verdict.dynamic[:3])})"
            for rule, verdict in judged.values() if verdict.dynamic and not verdict.broken]
