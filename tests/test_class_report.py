"""The class report an instructor acts on, and the final scores into Canvas (issue #33), on one graded class.

The class (tests/tiny_course.py: one automatic task of 2 points, 12 points graded by hand) is graded by our grader,
graded by hand through nbgrader's Gradebook API (as Formgrader saves a score), and graded again, as
docs/instructors.md says:
  ada   on time, every task right, graded by hand: 14
  ben   late by 45 h (two started days: 20% off), graded by hand: 12 less 2.4
  cy    on the roster, never handed in: 0
  dee   handed in, but the grader could not write its result (a file in the way): NOT GRADED
  eve   a wrong answer graded by hand, then handed in again fixed: flagged ("resubmitted after a hand grade")
  fay   on time, every task right, its answers still waiting for a person (and carrying script: nothing of it runs)
  gus   from a Canvas download marked LATE, without a time: late, not checked
  hal   from a Canvas download without a time or a LATE mark: lateness not checked
Then `autograder.report` names each of them in its table, sorted in headless Chromium as an instructor would click it
(screenshot: test-artifacts/report/class_report.png), and `autograder.canvas` writes the CSV for Canvas's gradebook
import, checked against the rules of Canvas's importer (canvas_rules below).
"""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import canvas, lms_import, report
from autograder.course import Course
from autograder.grade import grade
from autograder.limits import load_limits
from tests import tiny_course, warm

A = tiny_course.ASSIGNMENT
REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ARTIFACTS = Path(os.environ.get("PYTEST_ARTIFACTS", REPO / "test-artifacts")) / "report"
LIMITS = load_limits(overrides=["cell_seconds=10", "notebook_seconds=60", "memory_mib=1024"])
DUE = "2026-01-06 12:00:00 UTC"
ON_TIME = "2026-01-05 12:00:00.000000 UTC"
LATE = "2026-01-08 09:00:00.000000 UTC"      # 45 h late: two started days, 20% off
AGAIN = "2026-01-06 10:00:00.000000 UTC"     # eve's second hand-in, still on time
BY_HAND = {"ada": (4, 3, 5), "ben": (2, 3, 5), "eve": (4, 3, 5)}  # explain, plot, style
ROSTER = ("id,first_name,last_name,email,lms_user_id,sis_user_id,sis_login_id,section\n"
          "ada,Ada,Lovelace,ada@example.org,1001,S-1001,ada,CS336-01\n"
          "ben,Ben,Bitdiddle,ben@example.org,1002,S-1002,ben,CS336-01\n"
          "cy,Cy,Young,cy@example.org,1003,,cy,CS336-02\n"
          "dee,Dee,Dee,dee@example.org,1004,S-1004,,CS336-02\n"
          "eve,Eve,Hacker,eve@example.org,1005,S-1005,eve,CS336-01\n"
          "fay,Fay,Wray,fay@example.org,,,fay,CS336-02\n"
          "gus,Gus,Grissom,gus@example.org,1007,S-1007,gus,CS336-02\n"
          "hal,Hal,Abelson,hal@example.org,1008,S-1008,hal,CS336-01\n")
CANVAS_ID = "4021"
# fay's answers carry script: what staff open (the report, her feedback page) must show it as text and run none of it
PWN = "<script>window.__pwned = 'script'</script><img src=x onerror=\"window.__pwned = 'img'\">"


def hand_in(root: Path, release, student: str, filled: dict, stamp: str) -> None:
    folder = root / "submitted" / student / A
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(tiny_course.submission(release, filled), folder / f"{A}.ipynb")
    (folder / "timestamp.txt").write_text(stamp)


def grade_by_hand(course: Course, student: str, points: tuple[int, int, int]) -> None:
    from nbgrader.api import Gradebook
    with Gradebook(course.db_url, course.course_id) as book:
        for cell, score in zip(("explain", "plot", "style"), points):
            found = book.find_grade(cell, A, A, student)
            found.manual_score = score
            found.needs_manual_grade = False  # as Formgrader's grade API does when a person gives a score
        book.db.commit()


def export(course: Path, out: Path) -> subprocess.CompletedProcess:
    return warm.run([str(BIN / "python"), "-m", "autograder.canvas", "--roster", "students.csv", "--assignment",
                           f"{A}={CANVAS_ID}", "--out", str(out)], cwd=course, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    started = time.monotonic()
    root = tiny_course.make_course(tmp_path_factory.mktemp("class"))
    course = Course.load(root)
    assert course.api().generate_assignment(A, force=True, create=True)["success"]
    release = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
    (root / "students.csv").write_text(ROSTER)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    warm.run([str(BIN / "nbgrader"), "db", "student", "import", "students.csv"], cwd=root, env=env, check=True,
                   capture_output=True)
    warm.run([str(BIN / "nbgrader"), "db", "assignment", "add", A, f"--duedate={DUE}"], cwd=root, env=env,
                   check=True, capture_output=True)
    from autograder import deadlines
    deadlines.extend(course, A, "cy", days=1)  # a submission record without a time, for one who hands in nothing
    right, wrong = tiny_course.answers(), tiny_course.answers(double="return 3 * x")
    hostile = tiny_course.answers(explain=f"Because of exponent bits. {PWN}", plot=f"print({PWN!r})")  # still right
    for student, filled, stamp in (("ada", right, ON_TIME), ("ben", right, LATE), ("dee", right, ON_TIME),
                                   ("eve", wrong, ON_TIME), ("fay", hostile, ON_TIME)):
        hand_in(root, release, student, filled, stamp)
    download = root / "canvas-download"  # gus's work came from Canvas, marked LATE, under his full Canvas name
    download.mkdir()
    nbformat.write(tiny_course.submission(release, right), download / f"grissomgusivan_LATE_1007_5001_{A}.ipynb")
    nbformat.write(tiny_course.submission(release, right), download / f"abelsonhal_1008_5002_{A}.ipynb")  # not late
    imported = lms_import.import_download(course, download, root / "submitted", A)
    assert sorted(imported.imported) == [f"gus/{A}/{A}.ipynb <- grissomgusivan_LATE_1007_5001_{A}.ipynb",
                                         f"hal/{A}/{A}.ipynb <- abelsonhal_1008_5002_{A}.ipynb"], imported.lines()
    (root / "graded" / "results").mkdir(parents=True)
    (root / "graded" / "results" / "dee").write_text("in the way")  # dee's result cannot be written: NOT GRADED
    grade(None, root / "graded", limits=LIMITS, course=course)
    for student, points in BY_HAND.items():
        grade_by_hand(course, student, points)
    (root / "too-early.csv").write_text("an earlier export, from before the hand scores\n")
    before_regrade = export(root, root / "too-early.csv")
    hand_in(root, release, "eve", right, AGAIN)
    rows = grade(None, root / "graded", limits=LIMITS, course=course)
    graded_at = time.monotonic()
    numbers = report.build(course, root / "graded")
    reported = time.monotonic()
    exported = export(root, root / "canvas-grades.csv")
    print(f"\nclass: graded twice in {graded_at - started:.1f} s, report {reported - graded_at:.1f} s, "
          f"Canvas export {time.monotonic() - reported:.1f} s")
    return dict(root=root, course=course, rows=rows, numbers=numbers, before_regrade=before_regrade,
                exported=exported)


def people(graded) -> dict[tuple[str, str], str]:
    return {(p.student, p.status.value): p.detail for p in graded["numbers"].attention}


def test_the_report_names_every_student_who_needs_a_person(graded):
    found = people(graded)
    assert found[("cy", "no submission")] == "nothing handed in: 0 points"
    assert found[("ben", "late")] == "45.0 h after the due date: penalty 2.4 points"
    assert "could not write" in found[("dee", "NOT GRADED")] and "results/dee" in found[("dee", "NOT GRADED")]
    assert "resubmitted after a hand grade" in found[("eve", "flagged")]
    assert found[("fay", "waits for a person")] == "3 answer(s) to grade in Formgrader"
    assert not any(student == "ada" for student, _ in found)  # nothing to do for ada
    # issue #49 item 9: Canvas marked gus LATE, and his download has no time: lateness was not checked
    assert "Canvas marked it LATE" in found[("gus", "late, not checked")]
    assert ("ben", "late, not checked") not in found and ("gus", "late") not in found
    # issue #62: hal's download has no time either, and no LATE mark: nobody checked his lateness, and the report
    # says so (an extension's record of one who handed nothing in is no submission, and is not listed so)
    assert "lateness was not checked" in found[("hal", "lateness not checked")]
    assert ("gus", "lateness not checked") not in found and ("cy", "lateness not checked") not in found
    written = (graded["root"] / "graded" / "report.json").read_text()
    assert "" not in json.loads(written)  # issue #62: keys named
    assert report.ClassReport.from_json(written) == graded["numbers"]  # issue #63: report.json is the typed report


def test_the_report_sorts_tasks_by_difficulty_with_one_label_and_says_its_time_zone(graded):
    numbers = graded["numbers"].assignments[A]
    rates = [t.pass_rate for t in numbers.tasks if t.pass_rate is not None]
    assert rates == sorted(rates)  # hardest first
    page = (graded["root"] / "graded" / "report.html").read_text()
    for task in numbers.tasks:
        assert f">{task.title}</td>" in page  # the title is the label, in the table as in the chart
    assert numbers.due == "2026-01-06 12:00 UTC" and "2026-01-06 12:00 UTC" in page
    assert re.search(r"made \d{4}-\d\d-\d\d \d\d:\d\d UTC", page)
    assert numbers.not_graded == 1 and numbers.missing == 1


def a_report() -> report.ClassReport:
    task = report.TaskNumbers("test_double", "Task 1", 2.0, 3, 2, 1, 2 / 3, 4 / 3, (("Hint: double it", 1),))
    numbers = report.AssignmentNumbers(8, 3, 5, 0, 1, 2.0, (2.0, 2.0, 0.0), 4 / 3, 2.0, 2, "2026-01-06 12:00 UTC",
                                       (-1.5, 2.0), (task,))
    entry = report.AttentionEntry("cy", A, report.Attention.NO_SUBMISSION, "nothing handed in: 0 points", 0.0, 2.0)
    return report.ClassReport({A: numbers}, (entry,), ("graded 3 submission(s) in 1.0 s",))


MALFORMED = [  # (what a script or a stray edit did to report.json, the place the error must name)
    (lambda r: r.update(extra=1), "report.json: missing [], unexpected ['extra']"),
    (lambda r: r.pop("attention"), "report.json: missing ['attention']"),
    (lambda r: r["assignments"][A].update(late="1"), f"report.json.assignments['{A}'].late"),
    (lambda r: r["assignments"][A].update(late=True), f"report.json.assignments['{A}'].late"),
    (lambda r: r["assignments"][A]["tasks"][0].update(pass_rate="67%"), f"report.json.assignments['{A}'].tasks[0]"),
    (lambda r: r["assignments"][A]["tasks"][0].update(hints=[["Hint: double it", "1"]]), "tasks[0].hints"),
    (lambda r: r["assignments"][A].update(tasks={}), f"report.json.assignments['{A}'].tasks"),
    (lambda r: r["attention"][0].update(status="overdue"), "report.json.attention[0].status"),
    (lambda r: r["attention"][0].pop("detail"), "report.json.attention[0]: missing ['detail']"),
    (lambda r: r.update(summary="one line"), "report.json.summary"),
]


@pytest.mark.parametrize("change, where", MALFORMED)
def test_report_json_is_read_back_strictly(change, where):
    """report.json is the typed report (issue #63): it reads back equal to what was written, and a file with a field
    missing, added or of another type is refused with an error that names the field, never half read."""
    from autograder.outcome import OutcomeError
    written = a_report()
    assert report.ClassReport.from_json(written.to_json()) == written
    obj = json.loads(written.to_json())
    change(obj)
    with pytest.raises(OutcomeError) as refused:
        report.ClassReport.from_json(json.dumps(obj))
    assert where in str(refused.value), str(refused.value)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), st.data())
def test_histogram_bins_are_honest(top, data):
    """Each score lands in exactly one bar; full marks stand alone in the last bar; neighbouring whole scores below
    30 points are never in one bar (9 and 10 of 10 are two bars)."""
    import numpy
    edges = report.score_bins(top)
    assert edges[0] == 0 and edges[-2] == top and all(b > a for a, b in zip(edges, edges[1:]))
    score = data.draw(st.integers(0, top))
    counts, _ = numpy.histogram([score], bins=edges)
    assert counts.sum() == 1 and (counts[-1] == 1) == (score == top)
    if top <= 30 and score < top:
        assert numpy.histogram([score + 1], bins=edges)[0].argmax() != counts.argmax()


def test_the_report_in_chromium_as_an_instructor_reads_it(graded):
    """The page in headless Chromium: the table of names is there, a click on 'student' sorts it by name, the plot
    loads; the screenshot is ARTIFACTS/class_report.png. No script runs there, nor in the feedback page of fay, whose
    answers print script and an event handler."""
    from tests.test_browser import CHROMIUM_ARGS, chromium_for_playwright
    executable = chromium_for_playwright()
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto((graded["root"] / "graded" / "report.html").as_uri())
            table = page.locator("#people")
            shown = [row.inner_text().split("\t")[:3] for row in table.locator("tbody tr").all()]
            assert shown[0][2] == "NOT GRADED"  # the most urgent first
            table.locator("th", has_text="student").click()
            names = [row.locator("td").first.inner_text() for row in table.locator("tbody tr").all()]
            assert names == sorted(names) and {"ben", "cy", "dee", "eve", "fay"} <= set(names)
            assert table.locator("th", has_text="student").get_attribute("aria-sort") == "ascending"
            page.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
            page.screenshot(path=str(ARTIFACTS / "class_report.png"), full_page=True)
            assert page.evaluate("window.__pwned") is None
            page.goto((graded["root"] / "graded" / "feedback" / "fay" / A / f"{A}.html").as_uri())
            page.wait_for_load_state("load")
            assert PWN in page.locator("body").inner_text()   # shown, as text
            assert page.evaluate("window.__pwned") is None     # and nothing of it ran
        finally:
            browser.close()
    print(f"\nreport in Chromium: {time.monotonic() - started:.1f} s; {ARTIFACTS / 'class_report.png'}")


# ---- Canvas ----------------------------------------------------------------------------------------------------

def canvas_rules(path: Path) -> dict:
    """Read a gradebook CSV the way Canvas's importer does (instructure/canvas-lms, app/models/gradebook_importer.rb
    and Assignment.title_and_id), and fail where it would fail or guess: the header's student columns ("Student",
    "ID", then "SIS User ID" and "SIS Login ID", ending with "Section"), assignment columns "title (id)", the
    "Points Possible" row, and each student found by an id (never by name). Returns {"assignments": {id: title},
    "points": {id: text}, "students": [{"ID", "SIS User ID", "SIS Login ID", "grades": {id: text}}]}."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = [row for row in csv.reader(f) if not re.fullmatch(r"[;, ]*", ",".join(row))]
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], header  # row_has_student_headers?
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]), header
    assert "Section" in header[4], header  # the last student column must be Section, or the header is invalid
    assignments = {}
    for column in header[5:]:
        match = re.fullmatch(r"(.*)\s\((\d+)\)", column)  # Assignment.title_and_id
        assert match, f"{column!r}: without '(id)' Canvas matches by title or makes a new assignment"
        assignments[match.group(2)] = match.group(1)
    found = {"assignments": assignments, "points": {}, "students": []}
    for row in rows[1:]:
        assert len(row) == len(header), row
        if "Points Possible" in row[0]:
            found["points"] = dict(zip(assignments, row[5:]))
            continue
        assert row[1].strip() or row[2].strip() or row[3].strip(), f"{row}: Canvas would look this student up by name"
        assert not row[1].strip() or row[1].strip().isdigit(), row  # Canvas's user ID is a number
        grades = dict(zip(assignments, (cell.strip() for cell in row[5:])))
        for cell in grades.values():
            assert cell == "" or re.fullmatch(r"-?\d+(\.\d+)?", cell), cell  # a number, or blank: no change
        found["students"].append({"name": row[0], "ID": row[1], "SIS User ID": row[2], "SIS Login ID": row[3],
                                  "Section": row[4], "grades": grades})
    return found


def test_canvas_gets_the_final_scores_with_late_penalties_and_manual_grades(graded):
    done = graded["exported"]
    assert done.returncode == 0, done.stderr
    read = canvas_rules(graded["root"] / "canvas-grades.csv")
    assert read["assignments"] == {CANVAS_ID: A} and read["points"] == {CANVAS_ID: "14"}
    by_login = {s["SIS Login ID"] or s["SIS User ID"]: s for s in read["students"]}
    scores = {who: s["grades"][CANVAS_ID] for who, s in by_login.items()}
    # eve resubmitted after her hand grade: nbgrader flags those cells again, so her old hand scores are held back
    # (issue #49 item 3); gus's written answers wait for a person
    assert scores == {"ada": "14", "ben": "9.6", "cy": "0", "S-1004": "", "eve": "", "fay": "", "gus": "", "hal": ""}, \
        scores
    assert by_login["ada"]["ID"] == "1001" and by_login["ada"]["name"] == "Lovelace, Ada"
    assert by_login["ada"]["Section"] == "CS336-01"
    # the same final scores as nbgrader's own export and our grades.csv
    totals = {r.student: r.score for r in graded["rows"] if r.task == "TOTAL"}
    assert totals["ben"] == pytest.approx(9.6) and totals["eve"] == 14 and totals["cy"] == 0  # eve's stale total
    assert "held back (blank in the CSV, Canvas keeps what it has): dee/00_tiny: NOT GRADED" in done.stderr
    assert "held back (blank in the CSV, Canvas keeps what it has): fay/00_tiny: answers wait for manual grading" \
        in done.stderr
    assert ("held back (blank in the CSV, Canvas keeps what it has): eve/00_tiny: nbgrader flags explain, plot, "
            "style for manual grading") in done.stderr


def test_a_canvas_export_before_the_penalties_are_final_is_refused(graded):
    """After manual grading the late penalties are a run old; the export says to grade again, and writes nothing."""
    early = graded["before_regrade"]
    assert early.returncode == 2 and "ben/00_tiny" in early.stderr and "run `make grade` again" in early.stderr
    # issue #62: the earlier file is not left ready to upload; it is set aside, and the message says so
    assert not (graded["root"] / "too-early.csv").exists()
    assert (graded["root"] / "too-early.csv.stale").read_text() == "an earlier export, from before the hand scores\n"
    assert "was renamed too-early.csv.stale, so that it is not uploaded by mistake" in early.stderr, early.stderr


def test_a_student_canvas_cannot_find_stops_the_export(graded, tmp_path):
    root = graded["root"]
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER.replace("fay,Fay,Wray,fay@example.org,,,fay,", "fay,Fay,Wray,fay@example.org,,,,"))
    with pytest.raises(canvas.ExportError, match="no Canvas id for fay"):
        canvas.export(graded["course"], roster, [f"{A}={CANVAS_ID}"], tmp_path / "out.csv", root / "graded")
    with pytest.raises(canvas.ExportError, match="numeric assignment id"):
        canvas.export(graded["course"], root / "students.csv", [A], tmp_path / "out.csv", root / "graded")
    assert not (tmp_path / "out.csv").exists()
    assert report.ClassReport.from_json((root / "graded" / "report.json").read_text()).assignments[A].late == 1
