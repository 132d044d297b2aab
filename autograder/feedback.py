"""The feedback page a student gets for one notebook: their cells, the visible tests, what each printed or raised,
and the points per task. Hidden test code is never shown (only that hidden tests ran)."""
from __future__ import annotations

import html
from pathlib import Path

STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;border-radius:4px;font-size:.85rem}
.cell{border-left:4px solid #ccc;margin:1rem 0;padding-left:.8rem}.pass{border-color:#2da44e}.fail{border-color:#cf222e}
.err{background:#fff0f0}.note{color:#555}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .6rem}"""


def _block(text: str, css: str = "") -> str:
    return f'<pre class="{css}">{html.escape(text)}</pre>' if text else ""


def render(student: str, assignment: str, notebook: str, cells: list[dict], notes: list[str]) -> str:
    """One HTML page. Each cell dict: kind, grade_id, points, visible_code, ok, output, error, restored."""
    tests = [c for c in cells if c["kind"] == "test"]
    earned = sum(c["points"] for c in tests if c["ok"])
    total = sum(c["points"] for c in tests)
    rows = "".join(f"<tr><td>{html.escape(c['grade_id'])}</td><td>{c['points'] if c['ok'] else 0:g} / {c['points']:g}</td>"
                   f"<td>{'passed' if c['ok'] else 'failed'}</td></tr>" for c in tests)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(assignment)}: {html.escape(notebook)}"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(assignment)} / {html.escape(notebook)}</h1>",
             f"<p>Student: <b>{html.escape(student)}</b>. Score: <b>{earned:g} / {total:g}</b></p>",
             f"<table><tr><th>task</th><th>points</th><th>result</th></tr>{rows}</table>"]
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    for cell in cells:
        css = "" if cell["kind"] != "test" else ("pass" if cell["ok"] else "fail")
        title = {"setup": "set-up (locked)", "answer": f"your answer: {cell['grade_id']}", "added": "a cell you added",
                 "test": f"tests: {cell['grade_id']} ({cell['points']:g} points)"}[cell["kind"]]
        parts.append(f"<div class='cell {css}'><h3>{html.escape(title)}</h3>{_block(cell['visible_code'])}"
                     f"{_block(cell['output'])}{_block(cell['error'], 'err')}")
        if cell.get("restored"):
            parts.append(f"<p class='note'>Before these tests the grader put back what earlier cells had changed: "
                         f"{html.escape(', '.join(cell['restored'][:10]))}</p>")
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
