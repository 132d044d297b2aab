"""Runs in the grader: what nbgrader keeps of one graded notebook: the autograded notebook, the grade of each graded
cell, and comments.

Our grader runs a plan (plan.py) instead of the submitted notebook; this module turns the plan and its results
back into what `nbgrader autograde` would have produced, so that nbgrader's own tools (formgrader,
generate_feedback, export) read it unchanged:

- the autograded notebook: the source's cells in the source's order (locked cells as the instructor wrote them,
  hidden tests included, as in nbgrader's `autograded/`), the student's answers and added cells in their place,
  each code cell with the outputs and errors of our run; every cell keeps the source's `nbgrader` metadata;
- grades, by `grade_id`: tests score their points or 0; a manually graded answer (markdown or code) that is
  still the released stub, or missing, scores 0 with nbgrader's comment "No response."; any other manual answer
  and every task cell is left for a person (`auto_score` None, which nbgrader shows as "needs manual grading");
- comments on answer cells: "No response.", or why the answer cell failed (a time-out, a syntax error, a crash).

Every text a student reads has ANSI colour codes removed.
"""
from __future__ import annotations

import html
import re
from dataclasses import replace

from autograder.grader.plan import CellRun, Plan, nbgrader_meta, text_of
from autograder.outcome import Autograded, CellKind, Failure
from autograder.source import Role, SourceCell, SourceNotebook, strip_ansi

NO_RESPONSE = "No response."  # nbgrader's own comment for an unchanged answer


# The exception nbgrader's autograded notebook shows for a failure that raised none in the student's code.
_GRADER_ENAMES = {Failure.TIMEOUT: "TimeoutError", Failure.NOT_RUN: "NotRun", Failure.CRASH: "NotebookCrashed"}


def error_parts(error: str, failure: Failure | None, ename: str) -> tuple[str, str]:
    """(ename, evalue) of a failed cell's error, as nbgrader's error outputs hold them: for a time-out, a crash or a
    cell never run, the grader's sentence; otherwise `ename`, what the cell raised (CellRun.ename: the notebook process
    says which), and the message after its line in `error` (the lines after it are its message's own, a test's "Hint:
    ..." line: they stay after it, in order), then where it was raised (the lines before it; for a syntax error, the
    line it is on). Where nothing was raised (a check that broke), "Error" and the error's last line."""
    error = strip_ansi(error).strip()
    if failure is not None and failure in _GRADER_ENAMES:
        return _GRADER_ENAMES[failure], error
    lines = error.splitlines()
    found = _raised_at(lines, ename)
    if found is None:
        ename, evalue, where = ename or "Error", lines[-1] if lines else "", "\n".join(lines[:-1]).strip()
    else:
        at, message = found
        evalue = "\n".join([message, *lines[at + 1:]]).strip()
        where = "\n".join(lines[:at]).strip()
    if failure is Failure.SYNTAX:  # IPython's text points at the line with a caret; one line is enough here
        line = re.findall(r"line (\d+)", where)
        where = f"(line {line[-1]})" if line else ""
    if where:
        evalue = f"{evalue} {where}".strip()
    return ename, evalue


def _raised_at(lines: list[str], ename: str) -> tuple[int, str] | None:
    """(its index, the message on it) of the line of `lines` that names the exception `ename`: the first that starts
    with the name, plain or qualified as Python prints it ("torch.OutOfMemoryError: ..."; the student's code shown
    before it is indented, never at a line's start); None when no line does or `ename` is ''."""
    if not ename:
        return None
    named = re.compile(rf"^(?:[\w.]+\.)?{re.escape(ename)}(?::\s?(.*))?$")
    for at, line in enumerate(lines):
        match = named.match(line)
        if match:
            return at, match.group(1) or ""
    return None


def failure_note(error: str, failure: Failure | None, ename: str) -> str:
    """One line for a student or an instructor: why a cell failed, when the reason is not a plain failed test."""
    ename, evalue = error_parts(error, failure, ename)
    if failure is Failure.TIMEOUT:
        return f"timed out: {evalue}"
    if failure is Failure.CRASH:
        return f"crashed: {evalue}"
    if failure is Failure.NOT_RUN:
        return evalue
    if failure is Failure.SYNTAX:
        return f"syntax error: {ename}: {evalue}"
    return ""


def _outputs(result: CellRun) -> list[dict]:
    outputs: list[dict] = []
    if result.output:
        outputs.append({"output_type": "stream", "name": "stdout", "text": strip_ansi(result.output)})
    if result.tampered:
        outputs.append({"output_type": "error", "ename": "TestToolsChanged",
                        "evalue": "the tests' tools were changed while they ran: " + ", ".join(result.tampered[:5]),
                        "traceback": []})
    elif not result.ok:
        ename, evalue = error_parts(result.error, result.failure, result.ename)
        outputs.append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [f"{ename}: {evalue}"]})
    return outputs


class _Ids:
    """Cell ids, unique within the notebook (nbformat 4.5)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, wanted: object, fallback: str) -> str:
        base = wanted if isinstance(wanted, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", wanted) else fallback
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base[:56]}-{n}"
        self.used.add(candidate)
        return candidate


def _groups(plan: Plan, results: list[CellRun]) -> tuple[list[tuple], list[list[tuple]]]:
    """The plan's (cell, result) pairs split into: cells added above the first source cell, and one group per
    source code cell (that cell, then the cells the student added after it)."""
    top: list[tuple] = []
    groups: list[list[tuple]] = []
    for pair in zip(plan.cells, results):
        if pair[0].kind is CellKind.ADDED:
            (groups[-1] if groups else top).append(pair)
        else:
            groups.append([pair])
    return top, groups


def record(source: SourceNotebook, submitted: dict, plan: Plan, results: list[CellRun], stubs: dict[str, str],
           problem: str = "") -> Autograded:
    """The autograded notebook, grades and comments of one notebook (see the module docstring).

    `stubs`: grade_id -> the released text of each answer cell (nbgrader keeps it in the gradebook's source cells).
    `problem`: why the submitted file could not be used (missing, not a notebook), shown at the top; every graded
    cell then scores 0, as nbgrader does for a missing notebook.
    """
    made = _Autograding(source, submitted, plan, results, stubs).build(problem)
    return replace(made, grades={gid: 0.0 for gid in made.grades}) if problem else made


def _submitted_markdown(known: set[str], submitted: dict) -> tuple[dict[str, str], dict[str, list[str]]]:
    """({grade_id: the student's first markdown cell of that id}, {grade_id: the markdown cells the student added after
    the cell of that id ("": before any)}) of a submitted notebook; ids not in `known` count as added cells."""
    answers: dict[str, str] = {}
    added: dict[str, list[str]] = {}
    anchor = ""
    for cell in submitted.get("cells", []):
        if not isinstance(cell, dict):
            continue
        grade_id = nbgrader_meta(cell).get("grade_id")
        if isinstance(grade_id, str) and grade_id in known:
            anchor = grade_id
            if cell.get("cell_type") == "markdown" and grade_id not in answers:
                answers[grade_id] = text_of(cell.get("source"))
        elif cell.get("cell_type") == "markdown" and text_of(cell.get("source")).strip():
            added.setdefault(anchor, []).append(text_of(cell.get("source")))
    return answers, added


class _Autograding:
    """One notebook's Autograded, built cell by cell in the source's order: each code cell numbered as it comes
    (`count`), every cell given an id unique in the notebook (`ids`), each graded cell its grade and comment."""

    def __init__(self, source: SourceNotebook, submitted: dict, plan: Plan, results: list[CellRun],
                 stubs: dict[str, str]) -> None:
        self.source, self.stubs = source, stubs
        self.ids, self.count = _Ids(), 0
        self.cells: list[dict] = []
        self.grades: dict[str, float | None] = {}
        self.comments: dict[str, str | None] = {}
        self.answers_md, self.added_md = _submitted_markdown({c.grade_id for c in source.cells} - {""}, submitted)
        self.top, self.groups = _groups(plan, results)
        self.answers = {c.grade_id: (c, r) for c, r in zip(plan.cells, results) if c.kind is CellKind.ANSWER}

    def build(self, problem: str) -> Autograded:
        if problem:
            self.cells.append({"cell_type": "markdown", "id": self.ids("grader-note", "grader-note"), "metadata": {},
                               # file names are the student's: text, never markup (issue #46)
                               "source": f"**This notebook could not be graded as submitted:** {html.escape(problem)}"})
        self.added(self.top)
        self.markdown_after("")
        groups = iter(self.groups)
        for source_cell, kept in zip(self.source.node["cells"], self.source.cells):
            if kept.cell_type == "code":
                if not self.code_cell(source_cell, kept, next(groups, [])):
                    continue
            elif kept.cell_type == "markdown":
                self.markdown_cell(source_cell, kept)
            else:
                continue
            self.markdown_after(kept.grade_id)
            self.grade_answer(kept)
        node = self.source.node
        notebook = {"cells": self.cells, "metadata": node.get("metadata", {}), "nbformat": 4,
                    "nbformat_minor": max(int(node.get("nbformat_minor", 5)), 5)}
        return Autograded(notebook, self.grades, self.comments)

    def code(self, text: str, result: CellRun, meta: dict, wanted_id: object, fallback: str) -> None:
        """A code cell with the outputs and errors of its run, numbered after the one before."""
        self.count += 1
        self.cells.append({"cell_type": "code", "id": self.ids(wanted_id, fallback), "metadata": meta,
                           "execution_count": self.count, "source": text, "outputs": _outputs(result)})

    def added(self, pairs: list[tuple]) -> None:
        """The code cells the student added, as they ran."""
        for cell, result in pairs:
            self.code(cell.code, result, {}, None, f"added-{len(self.cells)}")

    def markdown_after(self, grade_id: str) -> None:
        """The markdown cells the student added after the cell `grade_id`."""
        for text in self.added_md.get(grade_id, []):
            self.cells.append({"cell_type": "markdown", "id": self.ids(None, f"added-{len(self.cells)}"),
                               "metadata": {}, "source": text})

    def code_cell(self, source_cell: dict, kept: SourceCell, pairs: list[tuple]) -> bool:
        """A source code cell as it ran (the student's answer, or the instructor's code, hidden tests included), then
        the cells the student added after it; a test scores its points or 0. False when the plan did not run it."""
        if not pairs:
            return False
        cell, result = pairs[0]
        text = cell.code if cell.kind is CellKind.ANSWER else kept.text
        self.code(text, result, _meta(source_cell), source_cell.get("id"), f"cell-{len(self.cells)}")
        self.added(pairs[1:])
        if kept.role is Role.TEST:
            self.grades[kept.grade_id] = cell.points if result.ok else 0.0
        return True

    def markdown_cell(self, source_cell: dict, kept: SourceCell) -> None:
        """A source markdown cell: the student's answer (the released stub when there is none), else the source's."""
        text = self.answers_md.get(kept.grade_id, self.stubs.get(kept.grade_id, "")) if kept.solution else kept.text
        self.cells.append({"cell_type": "markdown", "id": self.ids(source_cell.get("id"), f"cell-{len(self.cells)}"),
                           "metadata": _meta(source_cell), "source": text})

    def grade_answer(self, kept: SourceCell) -> None:
        """An answer cell's comment ("No response." when unchanged or empty, else why it failed, if it did) and, when
        a person grades it, 0 for no response or None (waits for a person); a task cell always waits for a person."""
        grade_id = kept.grade_id
        if kept.solution:
            answer = self.answers.get(grade_id)
            given = answer[0].code if answer else self.answers_md.get(grade_id, "")
            unanswered = given.strip() == self.stubs.get(grade_id, "").strip() or not given.strip()
            note = failure_note(answer[1].error, answer[1].failure, answer[1].ename) if answer and not answer[1].ok \
                else ""
            self.comments[grade_id] = NO_RESPONSE if unanswered else (note or None)
            if kept.role in (Role.MANUAL_CODE, Role.MANUAL_TEXT):
                self.grades[grade_id] = 0.0 if unanswered else None
        if kept.role is Role.TASK:
            self.grades[grade_id] = None
            self.comments[grade_id] = None


def _meta(source_cell: dict) -> dict:
    """The cell's metadata in the autograded notebook: the source's nbgrader metadata, and nothing else."""
    info = nbgrader_meta(source_cell)
    return {"nbgrader": dict(info)} if info else {}
