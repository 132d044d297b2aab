"""End to end: submissions graded by `python -m autograder.grade` get exactly the points their work earns."""
import csv
import hashlib
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from autograder.course import assignments
from tests import submissions

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENTS = assignments()


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade one class: per assignment a solved, blank, half-done and two trick submissions, plus broken ones."""
    root = tmp_path_factory.mktemp("class")
    submitted, out = root / "submitted", root / "graded"
    for a in ASSIGNMENTS:
        submissions.write_submission(submitted, "solved", a, submissions.solved(a))
        submissions.write_submission(submitted, "blank", a, submissions.release_notebooks(a))
        submissions.write_submission(submitted, "noisy", a, submissions.noisy(a))
        submissions.write_submission(submitted, "half", a, submissions.half_done(a))
        submissions.write_submission(submitted, "alwaysequal", a, submissions.always_equal(a))
        submissions.write_submission(submitted, "patcher", a, submissions.patched_comparisons(a))
        broken = submissions.write_submission(submitted, "notjson", a, submissions.solved(a))
        for nb in broken.glob("*.ipynb"):
            nb.write_text('{"cells": [ this is not json')
        renamed = submissions.write_submission(submitted, "wrongname", a, submissions.solved(a))
        for nb in renamed.glob("*.ipynb"):
            nb.rename(nb.with_name("my_" + nb.name))
    submissions.write_submission(submitted, "solved", "99_no_such_assignment", {})
    before = digest(submitted)
    run = subprocess.run([sys.executable, "-m", "autograder.grade", str(submitted), "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    totals = defaultdict(lambda: [0.0, 0.0])
    notes = defaultdict(str)
    with open(out / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        key = (row["student"], row["assignment"])
        totals[key][0] += float(row["score"])
        totals[key][1] += float(row["max_score"])
        notes[key] = row["note"]
    return dict(totals=totals, notes=notes, rows=rows, out=out, unchanged=before == digest(submitted), stdout=run.stdout)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_full_solution_scores_full_marks(graded, assignment):
    score, max_score = graded["totals"][("solved", assignment)]
    assert max_score > 0 and score == max_score


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_warnings_on_stderr_from_correct_code_cost_nothing(graded, assignment):
    score, max_score = graded["totals"][("noisy", assignment)]
    assert max_score > 0 and score == max_score
    for path in (graded["out"] / "course" / "autograded" / "noisy" / assignment).glob("*.ipynb"):
        outputs = [o for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])]
        assert not [o for o in outputs if o.get("name") == "stderr"]  # dropped before scoring (IgnorePattern)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_release_scores_zero(graded, assignment):
    assert graded["totals"][("blank", assignment)][0] == 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_half_done_scores_in_between(graded, assignment):
    score, max_score = graded["totals"][("half", assignment)]
    assert 0 < score < max_score


@pytest.mark.parametrize("student", ["alwaysequal", "patcher"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_tricks_score_zero(graded, student, assignment):
    score, max_score = graded["totals"][(student, assignment)]
    assert max_score > 0 and score == 0


@pytest.mark.parametrize("student, reason", [("notjson", "is not a valid notebook"), ("wrongname", "missing notebook")])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_broken_submissions_score_zero_with_a_reason(graded, student, reason, assignment):
    score, max_score = graded["totals"][(student, assignment)]
    assert max_score > 0 and score == 0
    assert reason in graded["notes"][(student, assignment)]
    problems = graded["out"] / "feedback" / student / assignment / "problems.html"
    assert reason in problems.read_text()


def test_unknown_assignment_is_reported_not_fatal(graded):
    assert "unknown assignment" in graded["notes"][("solved", "99_no_such_assignment")]


def test_csv_has_a_row_per_task(graded):
    for row in graded["rows"]:
        assert set(row) == {"student", "assignment", "task", "score", "max_score", "note"}
    solved_tasks = [r["task"] for r in graded["rows"] if r["student"] == "solved" and r["assignment"] in ASSIGNMENTS]
    assert len(solved_tasks) >= 4 * len(ASSIGNMENTS)


def test_feedback_is_written_and_hides_hidden_tests(graded):
    for assignment in ASSIGNMENTS:
        pages = list((graded["out"] / "feedback" / "half" / assignment).glob("*.html"))
        assert pages, f"no feedback for half/{assignment}"
        text = pages[0].read_text()
        assert "visible tests passed" in text and "BEGIN HIDDEN TESTS" not in text
        assert "reference = utils." not in text  # hidden test code stays hidden


def test_submitted_files_are_never_modified(graded):
    assert graded["unchanged"]
