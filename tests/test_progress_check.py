"""`python -m utils.progress_check` (make progress): per task passed / failed with the hint / not attempted,
from the visible tests, without changing the student's files."""
import hashlib
import json
import re
import sys
from pathlib import Path

import nbformat

from tests import warm
from tests.submissions import REPO, _fill, half_done, release_notebooks, solved, task_points, written_points
from utils.progress_check import (
    FAILED,
    NOT_ATTEMPTED,
    NOT_RUN,
    NOT_WRITTEN,
    PASSED,
    WRITTEN,
    check,
    failure_message,
    find_tasks,
    find_written,
    render,
)

RELEASE = REPO / "release"
ASSIGNMENTS = sorted(p.name for p in RELEASE.iterdir() if p.is_dir())
ROW = re.compile(r"^  (\d+)\s+.*?\s(\d+(?:\.\d+)?)\s+(passed|FAILED|not attempted|not run)$")


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under `folder` (names and contents), to show a run changed nothing and added nothing."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def write(root: Path, assignment: str, notebooks: dict) -> None:
    (root / assignment).mkdir(parents=True, exist_ok=True)
    for name, nb in notebooks.items():
        nbformat.write(nb, root / assignment / f"{name}.ipynb")


def test_tasks_and_points_come_from_the_nbgrader_metadata():
    for assignment in ASSIGNMENTS:
        tasks = [t for nb in release_notebooks(assignment).values() for t in find_tasks(nb)]
        assert [t.points for t in tasks] == task_points(assignment), assignment
        written = [w for nb in release_notebooks(assignment).values() for w in find_written(nb)]
        assert [w.points for w in written] == written_points(assignment) and written, assignment
        assert all(t.answer_cells for t in tasks), assignment
        assert [t.number for t in tasks] == list(range(1, len(tasks) + 1))
    titles = [t.title for t in find_tasks(release_notebooks("01_floats")["01_floats"])]
    assert titles[0] == "decode a bit pattern"  # from "## Task 1: decode a bit pattern (3 points)"


def test_failure_message_is_the_checks_first_line_and_hint():
    outputs = [{"output_type": "stream", "name": "stdout", "text": "hello"},
               {"output_type": "error", "ename": "AssertionError", "traceback": ["..."],
                "evalue": "tensor_nbytes((4, 8), torch.float32): expected 128, got 0\nHint: 32 elements x 4 bytes each."}]
    assert failure_message(outputs) == ("tensor_nbytes((4, 8), torch.float32): expected 128, got 0\n"
                                        "Hint: 32 elements x 4 bytes each.")
    assert failure_message([{"output_type": "error", "ename": "TypeError", "evalue": "bad operand\nmore"}]) \
        == "TypeError: bad operand"
    assert failure_message(outputs[:1]) == ""


def test_blank_release_is_all_not_attempted_and_left_unchanged():
    """The command a student types, on the release as shipped: nothing attempted, no file touched or added."""
    before = snapshot(RELEASE)
    result = warm.run([sys.executable, "-m", "utils.progress_check"], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = [m.groups() for line in result.stdout.splitlines() if (m := ROW.match(line))]
    assert len(rows) == sum(len(task_points(a)) for a in ASSIGNMENTS)
    assert {status for _, _, status in rows} == {NOT_ATTEMPTED}
    assert sorted(float(points) for _, points, _ in rows) == sorted(p for a in ASSIGNMENTS for p in task_points(a))
    assert "0 tasks passed, 0 failed" in result.stdout
    # issue #62: each exercise's written answers are listed, not written yet, with their points, apart from the tests
    written = [line for line in result.stdout.splitlines() if line.endswith(NOT_WRITTEN)]
    assert len(written) == sum(len(written_points(a)) for a in ASSIGNMENTS) >= len(ASSIGNMENTS)
    by_hand = sum(sum(written_points(a)) for a in ASSIGNMENTS)
    assert f"Written answers: 0 of {len(written)} written ({by_hand:g} points). A person grades them" in result.stdout
    assert snapshot(RELEASE) == before


def test_solved_half_done_wrong_and_broken_work_in_a_copy(tmp_path):
    """One run over a class of situations: each notebook's rows say what happened there, and only there."""
    root = tmp_path / "release"
    wrong_third = "def tensor_nbytes(shape, dtype):\n    return 0\n"
    write(root, "01_floats", _fill("01_floats", lambda i, g, solution: wrong_third if i == 2 else solution))
    write(root, "08_training_loop", half_done("08_training_loop"))
    write(root, "07_models_optimizers", release_notebooks("07_models_optimizers"))
    write(root, "09_mixed_precision", solved("09_mixed_precision", written=True))
    (root / "99_broken").mkdir()
    (root / "99_broken" / "99_broken.ipynb").write_text('{"cells": [')
    before = snapshot(root)

    reports = {r.assignment: r for r in check(root, timeout=120)}
    assert snapshot(root) == before, "the progress check changed or added a file"

    floats = reports["01_floats"].tasks
    assert [t.status for t in floats] == [PASSED, PASSED, FAILED] + [PASSED] * (len(floats) - 3)  # then after_cast, napkin
    assert floats[2].message == ("tensor_nbytes((4, 8), torch.float32): expected 128, got 0\n"
                                 "Hint: 32 elements x 4 bytes each.")
    halves = [t.status for t in reports["08_training_loop"].tasks]
    done = len(halves) // 2
    assert halves == [PASSED] * done + [NOT_ATTEMPTED] * (len(halves) - done)
    assert {t.status for t in reports["07_models_optimizers"].tasks} == {NOT_ATTEMPTED}
    assert not reports["07_models_optimizers"].ran  # all stubs: no kernel started
    assert {t.status for t in reports["09_mixed_precision"].tasks} == {PASSED}
    assert [w.written for w in reports["09_mixed_precision"].written] == [True] * len(written_points("09_mixed_precision"))
    assert not any(w.written for w in reports["01_floats"].written)  # left as released: YOUR ANSWER HERE
    assert reports["99_broken"].error.startswith("could not read the notebook")
    assert all(not r.error for name, r in reports.items() if name != "99_broken")

    table = render(list(reports.values()), root)
    assert "Hint: 32 elements x 4 bytes each." in table
    assert "could not check this notebook" in table
    passed = sum(task_points("01_floats")) - 2 + sum(task_points("08_training_loop")[:done]) + \
        sum(task_points("09_mixed_precision"))   # all of exercise 1 but tensor_nbytes's 2 points
    total = sum(sum(task_points(a)) for a in ("01_floats", "08_training_loop", "07_models_optimizers", "09_mixed_precision"))
    assert f"Total: {passed:g} of {total:g} points pass" in table
    assert WRITTEN in table and NOT_WRITTEN in table
    assert NOT_RUN not in {t.status for r in reports.values() for t in r.tasks}


def test_the_landing_page_calls_it():
    nb = json.loads((REPO / "index.ipynb").read_text())
    assert any("utils.progress_check" in "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def test_runs_inside_a_notebook_kernel_as_the_landing_page_does(tmp_path):
    """The landing page's cell calls it from a kernel, whose event loop is already running."""
    from nbclient import NotebookClient
    write(tmp_path / "release", "01_floats", solved("01_floats"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"from utils.progress_check import show\nshow({str(tmp_path / 'release')!r})")])
    NotebookClient(nb, kernel_name="cs336-primitives", timeout=300).execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    total = sum(task_points("01_floats"))
    assert f"01_floats/01_floats.ipynb: {total:g} of {total:g} points pass" in text, nb.cells[0].outputs
