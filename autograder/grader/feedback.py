"""Runs in the grader: the quick feedback page a student gets for one notebook: the tasks by their titles with points
and, where a task lost points for more than a failed check, why (a time-out, a crash, a syntax error); then their
cells, the visible tests, and what each printed or raised. Hidden test code is never shown (only that hidden tests
ran), and ANSI colour codes are removed from everything printed. (nbgrader's own feedback, `nbgrader
generate_feedback`, renders the autograded notebook instead.)"""
from __future__ import annotations

import html
import re
from dataclasses import replace
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.grader.autograded import error_parts, strip_ansi
from autograder.grader.plan import HIDDEN, Cell, CellRun
from autograder.outcome import CellKind, CellOutcome, Failure

STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;border-radius:4px;font-size:.85rem}
.cell{border-left:4px solid #ccc;margin:1rem 0;padding-left:.8rem}.pass{border-color:#2da44e}.fail{border-color:#cf222e}
.err{background:#fff0f0}.note{color:#555}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem}"""


DEFAULT_HINT = ("Hint: your code passes the visible tests but not every case; try other shapes, sizes, dtypes and "
                "edge cases.")


def hidden_failure_lines(error: str) -> str:
    """What a student reads of a failed hidden check's message: what its diagnosis found in the wrong value (its
    "Found: ..." lines, utils/diagnosis.py: the case's own quantities, never an expected value) and its hint (the
    last "Hint: ..." line, or DEFAULT_HINT); the first line, with the hidden case's inputs and expected value, stays
    with the instructor."""
    lines = [line for line in error.strip().splitlines()]
    found = [line for line in lines if line.startswith("Found: ")]
    hint = lines[-1] if lines and lines[-1].startswith("Hint:") else DEFAULT_HINT
    return "\n".join(found + [hint])


def for_students(cell: Cell, result: CellRun, detail: str) -> CellRun:
    """`result` (one cell's) as a student may see it. With detail "hints", a test cell that failed in its hidden
    part keeps only the kind of failure, what the check's diagnosis found and its hint (hidden_failure_lines); the
    whole message moves to `error_full` (instructors only). A visible check, a time-out or a crash is shown as it is."""
    if detail == "full" or not cell.failed_in_hidden_tests(result):
        return result
    error = result.error
    # What the student's code raised is the cell's `ename` (the notebook process says which): a failed check raised
    # AssertionError (the grader's own checks of a hidden test's results too); any other exception, StopIteration,
    # KeyboardInterrupt or a warning turned into an error included, is named as what their code raised.
    ename = result.ename or "AssertionError"
    shown = ("a hidden test failed; the grader does not show its inputs or expected values" if ename == "AssertionError"
             else f"your code raised {ename} in a hidden test (a case the visible tests do not try)")
    return replace(result, error=f"{ename}: {shown}\n{hidden_failure_lines(error)}", error_full=error, ename=ename)


HIDDEN_LINE = "[a line of the hidden tests]"


def hidden_code(cells: list[Cell]) -> list[str]:
    """The lines of the hidden tests of `cells` that a student's output could only hold by copying them (stripped,
    12 characters or more, the markers left out), longest first."""
    lines = set()
    for cell in cells:
        for match in HIDDEN.finditer(cell.code) if cell.kind is CellKind.TEST else ():
            lines |= {line.strip() for line in match.group(0).splitlines()
                      if len(line.strip()) >= 12 and "HIDDEN TESTS" not in line}
    return sorted(lines, key=len, reverse=True)


def without_hidden_code(result: CellRun, lines: list[str]) -> CellRun:
    """`result` with every copy of a hidden test's line cut from what a student reads (its output and error): however
    a notebook came by the code (its frames' constants, a traceback it formatted, memory), it never reaches the
    feedback (issue #59)."""
    output, error = result.output, result.error
    for line in lines:
        if line in output or line in error:
            output, error = output.replace(line, HIDDEN_LINE), error.replace(line, HIDDEN_LINE)
    return result if (output, error) == (result.output, result.error) else replace(result, output=output, error=error)


def _block(text: str, css: str = "") -> str:
    text = strip_ansi(text)
    return f'<pre class="{css}">{html.escape(text)}</pre>' if text else ""


HEADING_POINTS = re.compile(r"\s*\(\s*[\d.]+\s+points?\s*\)\s*$")  # a task heading's "(1 point)"


def _points(points: float) -> str:
    """"1 point", "2 points", "0.5 points"."""
    return f"{points:g} point{'' if points == 1 else 's'}"


def _task_title(titles: dict[str, str], grade_id: str) -> str:
    """A task's heading without the points it states, which the page gives beside it."""
    return HEADING_POINTS.sub("", titles.get(grade_id, grade_id)) or grade_id


def _error(cell: CellOutcome) -> str:
    """A failed cell's error as a student reads it: 'ename: evalue', with timeouts and crashes said in words."""
    if not cell.error:
        return ""
    ename, evalue = error_parts(cell.error, cell.failure, cell.ename)
    return evalue if cell.failure in (Failure.TIMEOUT, Failure.CRASH, Failure.NOT_RUN) else f"{ename}: {evalue}"


def render(student: str, assignment: str, notebook: str, cells: tuple[CellOutcome, ...], notes: list[str],
           titles: dict[str, str] | None = None, task_notes: dict[str, str] | None = None,
           by_hand: list[tuple[str, float, float | None]] | None = None) -> str:
    """One HTML page of a notebook's cells. `titles`: grade_id -> the task's title (its heading in the notebook);
    `task_notes`: grade_id -> why it failed; `by_hand`: (title, points, the grader's score: 0 for an answer left as
    released, None while it waits for a person) of each cell a person grades, such as a written answer."""
    titles, task_notes, by_hand = titles or {}, task_notes or {}, by_hand or []
    tests = [c for c in cells if c.kind is CellKind.TEST]
    earned = sum(c.points for c in tests if c.ok)
    total = sum(c.points for c in tests)
    rows = "".join(f"<tr><td>{html.escape(_task_title(titles, c.grade_id))}</td>"
                   f"<td>{c.points if c.ok else 0:g} / {c.points:g}</td>"
                   f"<td>{'passed' if c.ok else 'failed'}</td>"
                   f"<td>{html.escape(task_notes.get(c.grade_id, ''))}</td></tr>" for c in tests)
    rows += "".join(f"<tr><td>{html.escape(title)}</td><td>{'–' if score is None else f'{score:g}'} / {points:g}</td>"
                    f"<td>{'waits for a person' if score is None else 'no response'}</td><td>graded by a person, with a "
                    f"rubric{'' if score is None else ': you left the answer as released'}</td></tr>"
                    for title, points, score in by_hand)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(assignment)}: {html.escape(notebook)}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(assignment)} / {html.escape(notebook)}</h1>",
             f"<p>Student: <b>{html.escape(student)}</b>. Score: <b>{earned:g} / {total:g}</b> (automatically graded "
             f"tasks; answers graded by hand and late penalties are in your final grade"
             + (f", which waits for a person's score of {sum(p for _, p, s in by_hand if s is None):g} points"
                if any(s is None for _, _, s in by_hand) else "") + ")</p>",
             f"<table><tr><th>task</th><th>points</th><th>result</th><th>note</th></tr>{rows}</table>"]
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    for cell in cells:
        css = "" if cell.kind is not CellKind.TEST else ("pass" if cell.ok else "fail")
        task = _task_title(titles, cell.grade_id)
        title = {CellKind.SETUP: "set-up (locked)", CellKind.ANSWER: f"your answer: {cell.grade_id}",
                 CellKind.ADDED: "a cell you added", CellKind.TEST: f"tests of {task} ({_points(cell.points)})"}[cell.kind]
        parts.append(f"<div class='cell {css}'><h3>{html.escape(title)}</h3>{_block(cell.visible_code)}"
                     f"{_block(cell.output)}{_block(_error(cell), 'err')}")
        if cell.tampered:
            parts.append(f"<p class='note'>These tests failed because the tests' tools were changed while they ran: "
                         f"{html.escape(', '.join(cell.tampered[:10]))}</p>")
        if cell.restored:
            parts.append(f"<p class='note'>Before these tests the grader put back what earlier cells had changed: "
                         f"{html.escape(', '.join(cell.restored[:10]))}</p>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_problems(student: str, assignment: str, problems: list[str]) -> str:
    """A page saying why (part of) a submission could not be graded."""
    items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
            f"<h1>{html.escape(assignment)}: grading problems for {html.escape(student)}</h1>"
            f"<p>These parts scored 0:</p><ul>{items}</ul></body></html>")


def write(path: Path, text: str) -> None:
    """Write a feedback page whole or not at all, an error naming it (a full disk fails at the write, after the
    open, where a plain write_text's error would name no file)."""
    write_atomically(path, text)
