"""An instructor's own plain nbgrader assignment, graded by our grader and by `nbgrader autograde` side by side (issue
#30): files beside the notebook (a data file, a helper module), the course's `c.Execute.timeout`, the
NBGRADER_EXECUTION variable nbgrader sets, and plain asserts; each submission must get the same score from both."""
from __future__ import annotations

import csv
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from tests import warm

REPO = Path(__file__).resolve().parent.parent
A = "00_plain"


def meta(grade_id: str, **flags) -> dict:
    info = {"grade": False, "grade_id": grade_id, "locked": False, "schema_version": 3, "solution": False, "task": False}
    info.update(flags)
    return {"nbgrader": info}


def source() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"display_name": "Python (cs336 primitives)", "language": "python", "name": "cs336-primitives"}
    new = nbformat.v4
    nb.cells = [
        new.new_code_cell("import os\nfrom helper import scale\nwith open('data.txt') as f:\n    numbers = [int(line) for line in f]",
                          metadata=meta("setup", locked=True)),
        new.new_code_cell("def total():\n    ### BEGIN SOLUTION\n    return scale * sum(numbers)\n    ### END SOLUTION",
                          metadata=meta("total", solution=True)),
        new.new_code_cell("assert total() == 2 * (1 + 2 + 3)\nprint('ran under', os.environ.get('NBGRADER_EXECUTION'))",
                          metadata=meta("test_total", grade=True, locked=True, points=2)),
        new.new_code_cell("def wait():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                          metadata=meta("wait", solution=True)),
        new.new_code_cell("assert wait() == 1", metadata=meta("test_wait", grade=True, locked=True, points=1)),
    ]
    return nb


WORK = {"right": {"total": "def total():\n    return scale * sum(numbers)", "wait": "def wait():\n    return 1"},
        "wrong": {"total": "def total():\n    return sum(numbers)", "wait": "def wait():\n    return 1"},
        "slow": {"total": "def total():\n    return scale * sum(numbers)",
                 "wait": "import time\ntime.sleep(30)\ndef wait():\n    return 1"}}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    scores = {}
    for grader in ("ours", "nbgrader"):
        root = tmp_path_factory.mktemp(grader)
        folder = root / "source" / A
        folder.mkdir(parents=True)
        nbformat.write(source(), folder / f"{A}.ipynb")
        (folder / "data.txt").write_text("1\n2\n3\n")
        (folder / "helper.py").write_text("scale = 2\n")
        (root / "nbgrader_config.py").write_text(
            f"c = get_config()\nload_subconfig({str(REPO / 'nbgrader_config.py')!r})\n"
            f"c.CourseDirectory.root = {str(root)!r}\nc.CourseDirectory.db_url = 'sqlite:///{root / 'gradebook.db'}'\n"
            "c.Execute.timeout = 5\n")
        course = Course.load(root)
        assert course.api().generate_assignment(A, force=True, create=True)["success"]
        release = nbformat.read(root / "release" / A / f"{A}.ipynb", as_version=4)
        for student, answers in WORK.items():
            nb = nbformat.from_dict(release)
            for cell in nb.cells:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id")
                if gid in answers:
                    cell.source = answers[gid]
            target = root / "submitted" / student / A
            target.mkdir(parents=True)
            nbformat.write(nb, target / f"{A}.ipynb")
            for extra in ("data.txt", "helper.py"):  # as nbgrader's release gave them to the student
                shutil.copy(root / "release" / A / extra, target / extra)
        if grader == "ours":
            run = warm.run([sys.executable, "-m", "autograder.grade", "--course", str(root), "--out",
                                  str(root / "graded")], cwd=REPO, capture_output=True, text=True, timeout=600)
            assert run.returncode == 0, run.stdout + run.stderr
            with open(root / "graded" / "grades.csv") as f:
                rows = list(csv.DictReader(f))
            scores[grader] = {(r["student"], r["task"]): float(r["score"]) for r in rows if r["task"] != "TOTAL"
                              and r["score"]}
            results = {s: (root / "graded" / "results" / s / f"{A}.json").read_text() for s in WORK}
        else:
            api = course.api()
            for student in WORK:
                assert api.autograde(A, student, force=True, create=True)["success"]
            from nbgrader.api import Gradebook
            with Gradebook(course.db_url, course.course_id) as gradebook:
                scores[grader] = {(s.student.id, g.name): float(g.score) for nb in gradebook.find_assignment(A).notebooks
                                  for s in nb.submissions for g in s.grades}
    return scores, results


def test_both_graders_agree(both):
    scores, _ = both
    assert scores["ours"] == scores["nbgrader"]
    assert scores["ours"][("right", "test_total")] == 2 and scores["ours"][("wrong", "test_total")] == 0


def test_the_assignments_files_are_beside_the_notebook(both):
    _, results = both
    assert "ran under autograde" in results["right"]  # data.txt read, helper imported, NBGRADER_EXECUTION set


def test_the_courses_execute_timeout_is_the_cell_limit(both):
    scores, results = both
    assert scores["ours"][("slow", "test_wait")] == 0 and scores["ours"][("slow", "test_total")] == 2
    assert "longer than 5 s" in results["slow"]
