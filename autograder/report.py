"""Runs as the instructor (`make report`): the class report: how the class did on each assignment, as one HTML page with
PNG plots, from the gradebook.

    python -m autograder.report [--course DIR] [--out DIR] [--assignment NAME ...]

Writes, after a grading run (`make grade`, or the shards' outputs merged with `autograder.merge`):
  OUT/report.html              per assignment: submitted, missing, late; the score distribution; each task's pass
                               rate and its most common failure hints; when the submissions arrived
  OUT/report/<assignment>.png  the plots (matplotlib)
  OUT/report.json              the same numbers, for scripts (tests/test_postgres.py checks them against grades.csv)
Scores come from nbgrader's gradebook, read the way grades.csv is (gradebook.rows): manual scores, extra credit and
late penalties included. A task "passes" when it earned its full points; a cell still waiting for a person is
counted as waiting, not as failed. Failure hints come from the run's results (OUT/results/<student>/<assignment>.json:
the hint line of a failed test, or its error's last line), so they cover the submissions graded into OUT.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import html
import json
import statistics
import sys
from pathlib import Path

from autograder import gradebook
from autograder.autograded import graded_cells, strip_ansi
from autograder.course import Course
from autograder.gradebook import TOTAL

TOP_HINTS = 3


def failure_hint(error: str) -> str:
    """One line for a failed test: its 'Hint: ...' line when it has one, else the error's last line."""
    lines = [line.strip() for line in strip_ansi(error or "").strip().splitlines() if line.strip()]
    hints = [line for line in lines if line.startswith("Hint:")]
    text = hints[-1] if hints else (lines[-1] if lines else "failed")
    return text if len(text) <= 160 else text[:157] + "..."


def hints(out: Path, assignment: str) -> dict[str, collections.Counter]:
    """{test grade_id: Counter of failure hints} from OUT/results/*/<assignment>.json."""
    found: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted((out / "results").glob(f"*/{assignment}.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for notebook in result.get("notebooks", {}).values():
            for cell in notebook.get("cells", []):
                if cell.get("kind") == "test" and not cell.get("ok"):
                    found[cell["grade_id"]][failure_hint(cell.get("error", ""))] += 1
    return found


def submission_times(course: Course, assignment: str) -> tuple[list[float], datetime.datetime | None, int]:
    """(hours relative to the due date, or to the first submission when there is none; the due date; how many
    submissions were late, extensions counted, as nbgrader computes it)."""
    book = gradebook.open_gradebook(course)
    try:
        found = book.find_assignment(assignment)
        due = found.duedate
        stamps = [s.timestamp for s in found.submissions if s.timestamp is not None]
        late = sum(1 for s in found.submissions if (s.total_seconds_late or 0) > 0)
    finally:
        book.close()
    origin = due or (min(stamps) if stamps else None)
    return [(t - origin).total_seconds() / 3600 for t in stamps], due, late


def summarize(course: Course, names: list[str], out: Path) -> dict:
    """The report's numbers: {assignment: {...}} (see the module docstring)."""
    students = gradebook.roster(course)
    titles = {(a, c["grade_id"]): c["title"] for a in names for nb in course.notebooks(a)
              for c in graded_cells(json.loads((course.source / a / f"{nb}.ipynb").read_text()))}
    rows = gradebook.rows(course, students, names, set(), titles, {})
    report = {}
    for a in names:
        mine = [r for r in rows if r.assignment == a]
        totals = [r for r in mine if r.task == TOTAL]
        if not totals:
            continue
        handed_in = [r for r in totals if r.note != "no submission"]
        scores = [r.score for r in handed_in]
        hours, due, late = submission_times(course, a)
        tasks = []
        failures = hints(out, a)
        for task in dict.fromkeys(r.task for r in mine if r.task != TOTAL):
            cells = [r for r in mine if r.task == task]
            scored = [r for r in cells if r.score is not None]
            passed = sum(1 for r in scored if r.score >= r.max_score)
            tasks.append({
                "task": task, "title": titles.get((a, task), task), "max_score": cells[0].max_score,
                "scored": len(scored), "passed": passed, "waiting": len(cells) - len(scored),
                "pass_rate": passed / len(scored) if scored else None,
                "mean": statistics.fmean(r.score for r in scored) if scored else None,
                "hints": failures.get(task, collections.Counter()).most_common(TOP_HINTS)})
        report[a] = {
            "roster": len(students), "submitted": len(handed_in), "missing": len(totals) - len(handed_in),
            "late": late,
            "max_score": totals[0].max_score, "scores": scores,
            "mean": statistics.fmean(scores) if scores else None,
            "median": statistics.median(scores) if scores else None,
            "full_marks": sum(1 for s in scores if s >= totals[0].max_score),
            "due": due.isoformat() if due else None, "hours": hours, "tasks": tasks}
    return report


def plot(assignment: str, numbers: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4), constrained_layout=True)
    top = numbers["max_score"] or 1
    left.hist(numbers["scores"], bins=min(20, max(5, int(top))), range=(0, top), color="#4c72b0", edgecolor="white")
    fig.suptitle(assignment)
    left.set_title(f"score distribution ({numbers['submitted']} submitted)")
    left.set_xlabel(f"score (of {top:g}, late penalty taken off)")
    left.set_ylabel("students")
    tasks = numbers["tasks"]
    labels = [t["task"] for t in tasks]
    rates = [100 * (t["pass_rate"] or 0) for t in tasks]
    middle.barh(range(len(tasks)), rates, color="#55a868")
    middle.set_yticks(range(len(tasks)), labels, fontsize=8)
    middle.invert_yaxis()
    middle.set_xlim(0, 100)
    middle.set_title("each task's pass rate (full points)")
    middle.set_xlabel("% of scored submissions")
    middle.set_ylabel("task")
    hours = numbers["hours"]
    if hours:
        low, high = min(hours + [0.0]) - 1, max(hours + [0.0]) + 1  # the due date always in view
        right.hist(hours, bins=24, range=(low, high), color="#c44e52", edgecolor="white")
    if numbers["due"]:
        right.axvline(0, color="black", linestyle="--", label="due")
        right.legend()
    right.set_title(f"when submissions arrived ({numbers['late']} late, {numbers['missing']} missing)")
    right.set_xlabel("hours after the due date" if numbers["due"] else "hours after the first submission")
    right.set_ylabel("submissions")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _number(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def render(course: Course, report: dict) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Class report</title><style>",
             "body{font-family:sans-serif;margin:2em;max-width:1300px} table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top} th{background:#f3f3f3}"
             "td.n{text-align:right} img{max-width:100%} .hint{font-family:monospace;font-size:90%}",
             "</style></head><body>",
             f"<h1>Class report: {e(course.course_id)}</h1>",
             f"<p>From the gradebook ({e(_safe(course.db_url))}), manual scores and late penalties included; "
             f"made {datetime.datetime.now():%Y-%m-%d %H:%M}.</p>"]
    for a, n in report.items():
        parts.append(f"<h2 id='{e(a)}'>{e(a)}</h2>")
        parts.append("<table><tr><th>on the roster</th><th>submitted</th><th>missing</th><th>late</th>"
                     "<th>mean</th><th>median</th><th>full marks</th><th>max</th><th>due</th></tr>"
                     f"<tr><td class='n'>{n['roster']}</td><td class='n'>{n['submitted']}</td>"
                     f"<td class='n'>{n['missing']}</td><td class='n'>{n['late']}</td>"
                     f"<td class='n'>{_number(n['mean'])}</td><td class='n'>{_number(n['median'])}</td>"
                     f"<td class='n'>{n['full_marks']}</td><td class='n'>{n['max_score']:g}</td>"
                     f"<td>{e(n['due'] or 'none')}</td></tr></table>")
        parts.append(f"<img src='report/{e(a)}.png' alt='{e(a)}: score distribution, pass rates, submission times'>")
        parts.append("<table><tr><th>task</th><th>points</th><th>pass rate</th><th>mean</th><th>waiting for a "
                     "person</th><th>most common failure hints (count)</th></tr>")
        for t in n["tasks"]:
            rate = "–" if t["pass_rate"] is None else f"{100 * t['pass_rate']:.0f}% ({t['passed']}/{t['scored']})"
            hint_html = "<br>".join(f"<span class='hint'>{e(h)}</span> ({c})" for h, c in t["hints"]) or ""
            parts.append(f"<tr><td>{e(t['title'])}<br><small>{e(t['task'])}</small></td>"
                         f"<td class='n'>{t['max_score']:g}</td><td class='n'>{rate}</td>"
                         f"<td class='n'>{_number(t['mean'], 2)}</td><td class='n'>{t['waiting']}</td>"
                         f"<td>{hint_html}</td></tr>")
        parts.append("</table>")
    if not report:
        parts.append("<p>No assignment with grades in the gradebook yet.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _safe(url: str) -> str:
    from autograder.database import safe_url
    return safe_url(url)


def build(course: Course, out: Path, names: list[str] | None = None) -> dict:
    """Write OUT/report.html, OUT/report/*.png and OUT/report.json; return the numbers."""
    names = names or [a for a in course.assignments() if a in _recorded(course)]
    report = summarize(course, names, out)
    for a, numbers in report.items():
        plot(a, numbers, out / "report" / f"{a}.png")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "report.html").write_text(render(course, report))
    return report


def _recorded(course: Course) -> set[str]:
    book = gradebook.open_gradebook(course)
    try:
        return {a.name for a in book.assignments}
    finally:
        book.close()


def main() -> None:
    from autograder.course import default_course
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--course", type=Path, help="the nbgrader course folder (default: as autograder.grade)")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="the grading run's output folder")
    parser.add_argument("--assignment", action="append", help="only this assignment (repeatable)")
    args = parser.parse_args()
    course = Course.load(args.course or default_course())
    try:
        report = build(course, args.out, args.assignment)
    except gradebook.GradebookError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2)
    print(f"wrote {args.out / 'report.html'} ({len(report)} assignment(s)) with its plots in {args.out / 'report'}/")


if __name__ == "__main__":
    main()
