"""release/ is exactly what nbgrader generates from source/, and leaks no solution, hidden test or rubric."""
import json
from pathlib import Path

import pytest

from autograder.course import assignments
from autograder.release import release

REPO = Path(__file__).resolve().parent.parent
LEAKS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME",
         "END MARK SCHEME")


def notebook_files(folder: Path) -> dict[str, dict]:
    return {str(p.relative_to(folder)): json.loads(p.read_text()) for p in sorted(folder.rglob("*.ipynb"))}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    into = tmp_path_factory.mktemp("release")
    release(assignments(), into)
    return into


def test_every_assignment_is_released():
    assert assignments() and [p.name for p in sorted((REPO / "release").iterdir())] == assignments()


@pytest.mark.parametrize("assignment", assignments())
def test_committed_release_matches_a_fresh_generation(regenerated, assignment):
    committed = notebook_files(REPO / "release" / assignment)
    fresh = notebook_files(regenerated / assignment)
    assert committed.keys() == fresh.keys()
    for name in fresh:
        assert committed[name] == fresh[name], f"release/{assignment}/{name} differs from source/: run `make release`"


@pytest.mark.parametrize("path", sorted((REPO / "release").rglob("*.ipynb")), ids=str)
def test_release_holds_no_solution_or_hidden_test(path):
    text = path.read_text()
    for marker in LEAKS:
        assert marker not in text, f"{path} contains {marker!r}"
    for cell in json.loads(text)["cells"]:
        assert not cell.get("outputs"), f"{path} has stored outputs"


@pytest.mark.parametrize("assignment", assignments())
def test_source_has_graded_tasks_with_points_and_hidden_tests(assignment):
    for path in (REPO / "source" / assignment).glob("*.ipynb"):
        cells = json.loads(path.read_text())["cells"]
        tests = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"]
        assert len(tests) >= 4 and all(c["metadata"]["nbgrader"]["points"] > 0 for c in tests)
        assert all("BEGIN HIDDEN TESTS" in "".join(c["source"]) for c in tests)
        solutions = [c for c in cells if c["metadata"].get("nbgrader", {}).get("solution") and c["cell_type"] == "code"]
        assert len(solutions) >= 4


@pytest.mark.parametrize("assignment", assignments())
def test_each_exercise_asks_a_written_question_a_person_grades_with_a_rubric(assignment):
    """Issue #62 item 3: at least one written answer per exercise, an nbgrader manually graded answer (a markdown
    solution cell with points, its model answer in a solution region), right after its question: a read-only cell
    whose rubric, between BEGIN and END MARK SCHEME, the release drops. The question's heading states its points."""
    import re
    for path in (REPO / "source" / assignment).glob("*.ipynb"):
        cells = json.loads(path.read_text())["cells"]
        written = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                   and c["metadata"].get("nbgrader", {}).get("grade") and c["metadata"]["nbgrader"].get("solution")]
        assert written, f"{path}: no written answer graded by a person"
        for i in written:
            answer, question = cells[i], cells[i - 1]
            points = answer["metadata"]["nbgrader"]["points"]
            text, asked = "".join(answer["source"]), "".join(question["source"])
            assert points > 0 and re.fullmatch(r"### BEGIN SOLUTION\n.+\n### END SOLUTION", text, re.S), text
            assert question["metadata"]["nbgrader"]["locked"] and not question["metadata"]["nbgrader"]["grade"]
            assert re.search(rf"^## Task \d+: in words: .* \({points:g} points\)$", asked, re.M), asked
            assert re.search(r"^### BEGIN MARK SCHEME\n.*Rubric.*\n### END MARK SCHEME$", asked, re.S | re.M), asked
        released = json.loads((REPO / "release" / assignment / path.name).read_text())["cells"]
        by_id = {c["metadata"]["nbgrader"]["grade_id"]: c for c in released if "nbgrader" in c["metadata"]}
        for i in written:
            assert "".join(by_id[cells[i]["metadata"]["nbgrader"]["grade_id"]]["source"]) == "YOUR ANSWER HERE"
            assert "Rubric" not in "".join(by_id[cells[i - 1]["metadata"]["nbgrader"]["grade_id"]]["source"])


def test_blank_release_fails_every_test_cell(tmp_path):
    """What a student's Validate button reports on an untouched notebook: every graded test fails. nbgrader's
    Validator runs here on the first release; tests/test_autograde.py shows the same for every assignment from the
    blank notebooks it grades (each fails above its hidden tests), without a kernel per notebook."""
    from nbgrader.validator import Validator

    path = sorted((REPO / "release").rglob("*.ipynb"))[0]
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    results = Validator(invert=True).validate(str(copy))
    assert not results.get("passed"), f"test cells pass without any work: {results['passed']}"
