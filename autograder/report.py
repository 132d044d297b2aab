"""Runs as the instructor (`make report`): the class report: who needs a person, and how the class did on each
assignment, as one HTML page with PNG plots, from the gradebook.

    python -m autograder.report [--course DIR] [--out DIR] [--assignment NAME ...]

Writes, after a grading run (`make grade`, or the shards' outputs merged with `autograder.merge`):
  OUT/report.html              first the students who need a person, by name, in one table that sorts by any column
                               (click its heading): no submission, late (hours and penalty), late but not checked
                               (Canvas marked it LATE; its download had no submission time), lateness not checked
                               (no submission time at all, where there is a due date), NOT GRADED (the grader
                               failed on it: the reason), flagged for review in Formgrader (why), answers waiting for
                               manual grading; the run's one summary (merged over shards by autograder.merge); then per
                               assignment: submitted, missing, late; the score distribution; each task's pass rate and
                               most common failure hints, hardest task first, named by its title in the chart and the
                               table alike; when the submissions arrived. Every time says its time zone.
  OUT/report/<assignment>.png  the plots (matplotlib): one histogram bar per point (a bar per few points for large
                               maxima) whose last bar holds full marks alone, so no bar merges 9 and 10
  OUT/report.json              the same numbers, for scripts (tests/test_postgres.py checks them against grades.csv):
                               {"assignments": {name: numbers}, "attention": [{student, assignment, status, detail,
                               score, max_score}], "summary": [the run's summary lines]}
Scores come from nbgrader's gradebook, read the way grades.csv is (gradebook.rows): manual scores, extra credit and
late penalties included. A task "passes" when it earned its full points; a cell still waiting for a person is
counted as waiting, not as failed. Failure hints and NOT GRADED reasons come from the run's output (OUT/results/ and
OUT/grades.csv), so they cover the submissions graded into OUT. nbgrader keeps times in UTC, and so does the report.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import enum
import html
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from autograder import gradebook, strict
from autograder.atomic import write_atomically
from autograder.course import Course
from autograder.errors import GraderError
from autograder.gradebook import TOTAL, Row
from autograder.grades_csv import not_graded
from autograder.late import how_late, points
from autograder.lms_import import marked_late
from autograder.outcome import CellKind, OutcomeError, Status, SubmissionOutcome
from autograder.source import strip_ansi

TOP_HINTS = 3


def failure_hint(error: str) -> str:
    """One line for a failed test: its 'Hint: ...' line when it has one, else the error's last line."""
    lines = [line.strip() for line in strip_ansi(error or "").strip().splitlines() if line.strip()]
    hints = [line for line in lines if line.startswith("Hint:")]
    text = hints[-1] if hints else (lines[-1] if lines else "failed")
    return text if len(text) <= 160 else text[:157] + "..."


def outcome(path: Path) -> SubmissionOutcome | None:
    """The graded submission in a results file (either format), or None when it is missing or not one."""
    try:
        return SubmissionOutcome.from_json(path.read_bytes())
    except (OSError, OutcomeError):
        return None


def hints(out: Path, assignment: str) -> dict[str, collections.Counter]:
    """{test grade_id: Counter of failure hints} from OUT/results/*/<assignment>.json."""
    found: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for path in sorted((out / "results").glob(f"*/{assignment}.json")):
        result = outcome(path)
        for notebook in result.notebooks.values() if result else ():
            for cell in notebook.cells:
                if cell.kind is CellKind.TEST and not cell.ok:
                    found[cell.grade_id][failure_hint(cell.error)] += 1
    return found


def submission_times(course: Course, assignment: str) -> tuple[list[float], datetime.datetime | None, int]:
    """(hours relative to the due date, or to the first submission when there is none; the due date; how many
    submissions were late, extensions counted, as nbgrader computes it)."""
    with gradebook.session(course) as book:
        found = book.find_assignment(assignment)
        due = found.duedate
        stamps = [s.timestamp for s in found.submissions if s.timestamp is not None]
        late = sum(1 for s in found.submissions if (s.total_seconds_late or 0) > 0)
    origin = due or (min(stamps) if stamps else None)
    return [(t - origin).total_seconds() / 3600 for t in stamps], due, late


def review_reasons(out: Path, key: tuple[str, str], submission) -> list[str]:
    """Why a person should look at a submission nbgrader flags: the grader's flags (OUT/results/), and hand scores
    older than the submission (nbgrader's gradebook: a manual score that needs a manual grade again)."""
    result = outcome(out / "results" / key[0] / f"{key[1]}.json")
    reasons = [f"flagged for review ({name}): {'; '.join(flags)}" for name, flags in result.flagged.items()] \
        if result else []
    if any(g.manual_score is not None and g.needs_manual_grade for nb in submission.notebooks for g in nb.grades):
        reasons.append(gradebook.REGRADED_AFTER_HAND_GRADE)
    return reasons


def utc(moment: datetime.datetime | None) -> str | None:
    """A time nbgrader stored (naive, in UTC) as text that says its time zone: '2026-01-06 12:00 UTC'."""
    if moment is None:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return f"{moment:%Y-%m-%d %H:%M} UTC"


class Attention(enum.Enum):
    """Why a student needs a person, in the order the report lists them; the value is what report.json holds."""
    NOT_GRADED = "NOT GRADED"
    FLAGGED = "flagged"
    WAITS = "waits for a person"
    LATE = "late"
    NO_SUBMISSION = "no submission"
    LATE_UNCHECKED = "late, not checked"  # Canvas marked it LATE, and the download had no submission time
    TIME_UNKNOWN = "lateness not checked"  # no submission time at all (a download without one): nobody checked

    @property
    def rank(self) -> int:
        return list(Attention).index(self)


# ---- the report's numbers: built by `summarize`, read by `plot`, `render` and report.json ----------------------------
@dataclass(frozen=True)
class TaskNumbers:
    """One graded cell of an assignment over the class: `max_score` its points; `scored` submissions with a score,
    `passed` those with full points, `waiting` those still waiting for a person; `pass_rate` passed/scored (a
    fraction, None when none is scored); `mean` points over the scored ones; `hints` its most common failure hints
    with how many submissions each, most common first."""
    task: str
    title: str
    max_score: float
    scored: int
    passed: int
    waiting: int
    pass_rate: float | None
    mean: float | None
    hints: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class AssignmentNumbers:
    """One assignment over the class: students on the `roster`; `submitted`, `missing`, `not_graded` and `late`
    (extensions counted, as nbgrader computes it) submissions; `max_score` points possible; `scores` the handed-in
    submissions' totals in points (late penalty taken off), their `mean` and `median`; `full_marks` how many earned
    max_score; `due` the due date (UTC text, or None); `hours` each submission time in hours after the due date (or
    after the first submission when there is none); `tasks` hardest first."""
    roster: int
    submitted: int
    missing: int
    not_graded: int
    late: int
    max_score: float
    scores: tuple[float, ...]
    mean: float | None
    median: float | None
    full_marks: int
    due: str | None
    hours: tuple[float, ...]
    tasks: tuple[TaskNumbers, ...]


@dataclass(frozen=True)
class AttentionEntry:
    """A student an instructor must act on, for one assignment and one reason: `detail` says what to do or why;
    `score` and `max_score` the assignment's total in points (None: none in grades.csv)."""
    student: str
    assignment: str
    status: Attention
    detail: str
    score: float | None
    max_score: float | None


@dataclass(frozen=True)
class ClassReport:
    """The report: each assignment's numbers (by name, in the course's order), the students who need a person (by
    student, assignment and status), and the grading run's summary lines. report.json is `to_json`, read back by
    `from_json`."""
    assignments: dict[str, AssignmentNumbers]
    attention: tuple[AttentionEntry, ...]
    summary: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self, dict_factory=_json_object), indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "report.json") -> ClassReport:
        """The report in `text`, read strictly (strict.py, as a results file is): exactly the declared fields, each of
        its declared type; OutcomeError naming `where` and the field otherwise."""
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise OutcomeError(f"{where}: not JSON ({error.__class__.__name__})") from None
        return strict.read(obj, cls, where, OutcomeError)


def _json_object(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """A dataclass's fields as JSON (asdict's dict_factory): an enum by its value."""
    return {name: value.value if isinstance(value, enum.Enum) else value for name, value in items}


# ---- who needs a person ------------------------------------------------------------------------------------------
Reason = tuple[tuple[str, str], Attention, str]  # ((student, assignment), why, what to do or why)


def attention(course: Course, names: list[str], rows: list[Row], out: Path) -> tuple[AttentionEntry, ...]:
    """The students an instructor must act on, one entry per student, assignment and reason, sorted by student,
    assignment and status."""
    totals = {(r.student, r.assignment): r for r in rows if r.task == TOTAL}
    found = [*_unsubmitted(totals), *_failed(out, names), *_waiting(rows), *_from_gradebook(course, names, totals, out)]
    entries = [_entry(totals.get(key), key, status, detail) for key, status, detail in found]
    return tuple(sorted(entries, key=lambda e: (e.student, e.assignment, e.status.value)))


def _entry(total: Row | None, key: tuple[str, str], status: Attention, detail: str) -> AttentionEntry:
    return AttentionEntry(key[0], key[1], status, detail, None if total is None else total.score,
                          None if total is None else total.max_score)


def _unsubmitted(totals: dict[tuple[str, str], Row]) -> list[Reason]:
    return [(key, Attention.NO_SUBMISSION, "nothing handed in: 0 points")
            for key, total in sorted(totals.items()) if total.status is Status.NO_SUBMISSION]


def _failed(out: Path, names: list[str]) -> list[Reason]:
    """NOT GRADED submissions of the named assignments, with grades.csv's note shown as it is."""
    return [(key, Attention.NOT_GRADED, why) for key, why in sorted(not_graded(out).items()) if key[1] in names]


def _waiting(rows: list[Row]) -> list[Reason]:
    waiting = collections.Counter((r.student, r.assignment) for r in rows if r.task != TOTAL and r.score is None)
    return [(key, Attention.WAITS, f"{count} answer(s) to grade in Formgrader") for key, count in sorted(waiting.items())]


def _from_gradebook(course: Course, names: list[str], totals: dict[tuple[str, str], Row], out: Path) -> list[Reason]:
    """Late, unchecked and flagged submissions, from nbgrader's record of each."""
    found: list[Reason] = []
    with gradebook.session(course) as book:
        for name in names:
            assignment = book.find_assignment(name)
            for submission in assignment.submissions:
                key = (submission.student.id, name)
                found += _submission_reasons(course, out, key, assignment.duedate, submission, totals)
    return found


def _submission_reasons(course: Course, out: Path, key: tuple[str, str], due: datetime.datetime | None, submission,
                        totals: dict[tuple[str, str], Row]) -> list[Reason]:
    """Why the submission `key` (student, assignment), nbgrader's `submission`, needs a person: no time to check
    lateness by, late, flagged."""
    found: list[Reason] = []
    handed_in = key in totals and totals[key].status is not Status.NO_SUBMISSION  # not an extension's record
    if submission.timestamp is None and handed_in:
        if marked_late(course.folder("submitted", key[0], key[1])):
            found.append((key, Attention.LATE_UNCHECKED, "Canvas marked it LATE; its download has no submission "
                                                         "time, so the grader took no penalty: check it, and grant "
                                                         "an extension or not"))
        elif due is not None:
            found.append((key, Attention.TIME_UNKNOWN, "no submission time (an LMS download without one, or no "
                                                       "readable timestamp.txt), so lateness was not checked and no "
                                                       "penalty taken: check when it was handed in"))
    seconds = submission.total_seconds_late or 0
    if seconds > 0:
        extension = " (with an extension)" if submission.extension else ""
        found.append((key, Attention.LATE, f"{how_late(seconds)} after the due date{extension}: penalty "
                                           f"{points(float(submission.late_submission_penalty or 0))}"))
    flagged = [nb.name for nb in submission.notebooks if nb.flagged]
    if flagged:
        reasons = review_reasons(out, key, submission)
        found.append((key, Attention.FLAGGED, "; ".join(reasons) or f"flagged in Formgrader: {', '.join(flagged)}"))
    return found


# ---- each assignment's numbers -------------------------------------------------------------------------------------
def summarize(course: Course, names: list[str], out: Path) -> ClassReport:
    """The report's numbers: each named assignment with grades (`AssignmentNumbers`), the students who need a person
    (`attention`), and the run's summary lines (OUT/summary.txt)."""
    students = gradebook.roster(course)
    titles = gradebook.titles(course, names)
    rows = gradebook.rows(course, students, names, gradebook.RunNotes(not_graded=not_graded(out)))
    report = {}
    for a in names:
        mine = [r for r in rows if r.assignment == a]
        if any(r.task == TOTAL for r in mine):
            report[a] = _assignment(course, a, mine, len(students), titles, hints(out, a))
    summary = out / "summary.txt"
    return ClassReport(report, attention(course, list(report), rows, out),
                       tuple(summary.read_text().splitlines() if summary.is_file() else []))


def _assignment(course: Course, a: str, mine: list[Row], roster: int, titles: dict[tuple[str, str], str],
                failures: dict[str, collections.Counter]) -> AssignmentNumbers:
    """One assignment's numbers from its grades.csv rows (`mine`, with TOTAL rows)."""
    totals = [r for r in mine if r.task == TOTAL]
    scores = tuple(r.score for r in totals if r.status is not Status.NO_SUBMISSION and r.score is not None)
    hours, due, late = submission_times(course, a)
    tasks = [_task(task, [r for r in mine if r.task == task], titles.get((a, task), task), failures)
             for task in dict.fromkeys(r.task for r in mine if r.task != TOTAL)]
    tasks.sort(key=lambda t: (2.0 if t.pass_rate is None else t.pass_rate, t.title))  # hardest first
    top = totals[0].max_score
    return AssignmentNumbers(
        roster=roster, submitted=sum(1 for r in totals if r.status is not Status.NO_SUBMISSION),
        missing=sum(1 for r in totals if r.status is Status.NO_SUBMISSION),
        not_graded=sum(1 for r in totals if r.status is Status.NOT_GRADED), late=late, max_score=top, scores=scores,
        mean=statistics.fmean(scores) if scores else None, median=statistics.median(scores) if scores else None,
        full_marks=sum(1 for s in scores if s >= top), due=utc(due), hours=tuple(hours), tasks=tuple(tasks))


def _task(task: str, cells: list[Row], title: str, failures: dict[str, collections.Counter]) -> TaskNumbers:
    """One task's numbers from its grades.csv rows (one per submission)."""
    scored = [r.score for r in cells if r.score is not None]
    passed = sum(1 for r in cells if r.score is not None and r.score >= r.max_score)
    return TaskNumbers(task=task, title=title, max_score=cells[0].max_score, scored=len(scored), passed=passed,
                       waiting=len(cells) - len(scored), pass_rate=passed / len(scored) if scored else None,
                       mean=statistics.fmean(scored) if scored else None,
                       hints=tuple(failures.get(task, collections.Counter()).most_common(TOP_HINTS)))


def score_bins(top: float, highest: float | None = None) -> list[float]:
    """Histogram edges for scores from 0 to `top` points: bars one point wide (wider, a whole number of points, when
    there are more than 30 points), each holding `edge <= score < next edge`, and a last bar that starts at `top`, so
    that full marks stand alone and never share a bar with the score below (9 and 10 of 10 are two bars).
    `highest` (extra credit above `top`) widens the range to include it."""
    width = max(1, math.ceil(top / 30))
    edges = [float(k) for k in range(0, math.ceil(top / width) * width, width)]
    edges = [e for e in edges if e < top] + [float(top)]
    end = max(top, highest or top)
    while edges[-1] <= end:
        edges.append(edges[-1] + width)
    return edges


def plot(assignment: str, numbers: AssignmentNumbers, path: Path) -> None:
    """The assignment's PNG at `path`: its score distribution, each task's pass rate, when the submissions arrived."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tasks = numbers.tasks
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(16, max(4, 0.35 * len(tasks) + 1.5)),
                                              constrained_layout=True, gridspec_kw={"width_ratios": [1, 1.3, 1]})
    top = numbers.max_score or 1
    scores = list(numbers.scores)
    edges = score_bins(top, max(scores) if scores else None)
    left.hist(scores, bins=edges, color="#4c72b0", edgecolor="white")
    step = max(1, (len(edges) - 1) // 10)
    left.set_xticks(edges[:-1:step] + ([edges[-2]] if (len(edges) - 2) % step else []))
    fig.suptitle(assignment)
    left.set_title(f"score distribution ({len(scores)} scored)")
    width = edges[1] - edges[0]
    left.set_xlabel(f"score of {top:g} (bar from k to below k+{width:g}; late penalty taken off)")
    left.set_ylabel("students")
    from matplotlib.ticker import MaxNLocator
    for axes in (left, right):
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # students and submissions are whole numbers
    labels = [t.title for t in tasks]
    rates = [100 * (t.pass_rate or 0) for t in tasks]
    middle.barh(range(len(tasks)), rates, color="#55a868")
    middle.set_yticks(range(len(tasks)), [_short(label) for label in labels], fontsize=8)
    middle.invert_yaxis()
    middle.set_xlim(0, 100)
    middle.set_title("each task's pass rate (full points), hardest first")
    middle.set_xlabel("% of scored submissions")
    hours = list(numbers.hours)
    if hours:
        low, high = min(hours + [0.0]) - 1, max(hours + [0.0]) + 1  # the due date always in view
        right.hist(hours, bins=24, range=(low, high), color="#c44e52", edgecolor="white")
    if numbers.due:
        right.axvline(0, color="black", linestyle="--", label=f"due {numbers.due}")
        right.legend()
    right.set_title(f"hand-in times ({numbers.late} late, {numbers.missing} missing)")
    right.set_xlabel(f"hours after the due date ({numbers.due})" if numbers.due
                     else "hours after the first submission (UTC)")
    right.set_ylabel("submissions")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _short(label: str, limit: int = 48) -> str:
    return label if len(label) <= limit else label[:limit - 1] + "…"


def _number(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


SORTING = """<script>
// Click a column heading to sort its table by that column; click again to reverse.
document.querySelectorAll('table.sortable').forEach(table => {
  table.querySelectorAll('th').forEach((th, column) => th.addEventListener('click', () => {
    const body = table.tBodies[0], ascending = th.getAttribute('aria-sort') !== 'ascending';
    const key = row => row.cells[column].dataset.sort ?? row.cells[column].textContent.trim().toLowerCase();
    const rows = [...body.rows].sort((a, b) => {
      const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
      const order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return ascending ? order : -order;
    });
    table.querySelectorAll('th').forEach(other => other.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    rows.forEach(row => body.appendChild(row));
  }));
});
</script>"""

def render_attention(people: tuple[AttentionEntry, ...]) -> list[str]:
    """The report's table of the students who need a person, by status (in Attention's order), student, assignment."""
    e = html.escape
    parts = ["<h2 id='attention'>Students who need a person</h2>"]
    if not people:
        return parts + ["<p>Nobody: every student handed in on time, was graded, and nothing waits or is flagged.</p>"]
    counts = collections.Counter(p.status for p in people)
    parts.append("<p>" + ", ".join(f"{counts[s]} {e(s.value)}" for s in sorted(counts, key=lambda s: s.rank)) +
                 ". Click a column heading to sort by it.</p>")
    parts.append("<table class='sortable' id='people'><thead><tr><th>student</th><th>assignment</th><th>status</th>"
                 "<th>score</th><th>what to do or why</th></tr></thead><tbody>")
    for p in sorted(people, key=lambda p: (p.status.rank, p.student, p.assignment)):
        score = "–" if p.score is None else f"{p.score:g} / {p.max_score:g}"
        parts.append(f"<tr class='status-{p.status.name.lower().replace('_', '-')}'><td>{e(p.student)}</td>"
                     f"<td>{e(p.assignment)}</td><td data-sort='{p.status.rank}'>"
                     f"{e(p.status.value)}</td><td class='n' data-sort='{-1 if p.score is None else p.score}'>"
                     f"{score}</td><td>{e(p.detail)}</td></tr>")
    parts.append("</tbody></table>")
    return parts


STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1400px} table{border-collapse:collapse;margin:1em 0}"
         "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top} th{background:#f3f3f3}"
         "table.sortable th{cursor:pointer} th[aria-sort=ascending]::after{content:' ▲'}"
         "th[aria-sort=descending]::after{content:' ▼'} tr.status-not-graded td:nth-child(3){color:#b00;font-weight:bold}"
         "tr.status-flagged td:nth-child(3){color:#b60} td.n{text-align:right} img{max-width:100%}"
         ".hint{font-family:monospace;font-size:90%} pre{white-space:pre-wrap;font-size:90%}")


def render(course: Course, report: ClassReport) -> str:
    """report.html: who needs a person, the run's summary, then each assignment's numbers, plots and tasks."""
    e = html.escape
    made = datetime.datetime.now(datetime.timezone.utc)
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Class report</title><style>", STYLE,
             "</style></head><body>",
             f"<h1>Class report: {e(course.course_id)}</h1>",
             f"<p>From the gradebook ({e(_safe(course.db_url))}), manual scores and late penalties included; "
             f"made {made:%Y-%m-%d %H:%M} UTC. Times are in UTC, as nbgrader keeps them.</p>"]
    parts += render_attention(report.attention)
    if report.summary:
        parts.append(f"<details><summary>The grading run's summary ({len(report.summary)} lines; one for the "
                     "whole class when shards were merged)</summary><pre>" + e("\n".join(report.summary)) +
                     "</pre></details>")
    for a, n in report.assignments.items():
        parts += render_assignment(a, n)
    if not report.assignments:
        parts.append("<p>No assignment with grades in the gradebook yet.</p>")
    parts.append(SORTING)
    parts.append("</body></html>")
    return "\n".join(parts)


def render_assignment(a: str, n: AssignmentNumbers) -> list[str]:
    """One assignment's part of report.html: its numbers, its plot, its tasks (hardest first)."""
    e = html.escape
    return [f"<h2 id='{e(a)}'>{e(a)}</h2>",
            "<table><tr><th>on the roster</th><th>submitted</th><th>missing</th><th>late</th>"
            "<th>not graded</th><th>mean</th><th>median</th><th>full marks</th><th>max</th><th>due</th></tr>"
            f"<tr><td class='n'>{n.roster}</td><td class='n'>{n.submitted}</td>"
            f"<td class='n'>{n.missing}</td><td class='n'>{n.late}</td>"
            f"<td class='n'>{n.not_graded}</td>"
            f"<td class='n'>{_number(n.mean)}</td><td class='n'>{_number(n.median)}</td>"
            f"<td class='n'>{n.full_marks}</td><td class='n'>{n.max_score:g}</td>"
            f"<td>{e(n.due or 'none')}</td></tr></table>",
            f"<img src='report/{e(a)}.png' alt='{e(a)}: score distribution, pass rates, submission times'>",
            "<p>Tasks, hardest first (lowest pass rate):</p><table class='sortable'><thead><tr><th>task</th>"
            "<th>points</th><th>pass rate</th><th>mean</th><th>waiting for a person</th><th>most common "
            "failure hints (count)</th></tr></thead><tbody>",
            *(render_task(t) for t in n.tasks),
            "</tbody></table>"]


def render_task(t: TaskNumbers) -> str:
    """One task's row of an assignment's table: points, pass rate (%), mean points, waiting, failure hints."""
    e = html.escape
    rate = "–" if t.pass_rate is None else f"{100 * t.pass_rate:.0f}% ({t.passed}/{t.scored})"
    hint_html = "<br>".join(f"<span class='hint'>{e(h)}</span> ({c})" for h, c in t.hints) or ""
    sort_rate = -1 if t.pass_rate is None else t.pass_rate
    return (f"<tr><td title='{e(t.task)}'>{e(t.title)}</td>"
            f"<td class='n'>{t.max_score:g}</td><td class='n' data-sort='{sort_rate}'>{rate}</td>"
            f"<td class='n'>{_number(t.mean, 2)}</td><td class='n'>{t.waiting}</td>"
            f"<td>{hint_html}</td></tr>")


def _safe(url: str) -> str:
    from autograder.database import safe_url
    return safe_url(url)


def build(course: Course, out: Path, names: list[str] | None = None) -> ClassReport:
    """Write OUT/report.html, OUT/report/*.png and OUT/report.json (each whole or not at all); return the numbers."""
    names = names or [a for a in course.assignments() if a in _recorded(course)]
    report = summarize(course, names, out)
    for a, numbers in report.assignments.items():
        plot(a, numbers, out / "report" / f"{a}.png")
    write_atomically(out / "report.json", report.to_json())
    write_atomically(out / "report.html", render(course, report))
    return report


def _recorded(course: Course) -> set[str]:
    return gradebook.recorded_assignments(course)


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
    except GraderError as error:  # the gradebook, an old grades.csv
        print(f"error: {error.explain()}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    print(f"wrote {args.out / 'report.html'} ({len(report.assignments)} assignment(s), {len(report.attention)} student entries that "
          f"need a person) with its plots in {args.out / 'report'}/")


if __name__ == "__main__":
    main()
