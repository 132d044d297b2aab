"""What can be checked mechanically about the text students read (issue #14): the stored notebooks hold no progress
bars, nothing sends a student to a file their edition lacks, stubs are quoted as they are, and every lecture cites its
sources."""
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LECTURES = sorted(REPO.glob("notebooks/*.ipynb"))
NOTEBOOKS = LECTURES + [REPO / "index.ipynb"] + sorted(REPO.glob("source/*/*.ipynb")) + sorted(REPO.glob("release/*/*.ipynb"))
PROGRESS_BAR = re.compile(r"\d+%\|[^|\n]*\|\s*\d+/\d+|\d+(\.\d+)?it/s\]")
INSTRUCTORS_ONLY = re.compile(r"(?<![\w./-])(source|reference|autograder)/")


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def markdown(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_progress_bar_is_stored(path):
    for index, cell in enumerate(cells(path)):
        text = json.dumps(cell.get("outputs", []), ensure_ascii=False)
        assert not PROGRESS_BAR.search(text), f"cell {index} stores a progress bar"


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    from autograder.student_edition import build
    return build(tmp_path_factory.mktemp("edition") / "student-edition")


def test_nothing_in_the_student_edition_points_to_instructors_files(edition):
    found = []
    for path in sorted(edition.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".ipynb":  # what a student reads: the cells' text, not the metadata
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        found += [f"{path.relative_to(edition)}: ...{text[max(m.start() - 40, 0):m.end() + 20]}..."
                  for m in INSTRUCTORS_ONLY.finditer(text)]
    assert not found, "\n".join(found)


def test_the_landing_page_quotes_the_stub_students_see():
    stub = re.search(r'code_stub = \{"python": "(.*?)"\}', (REPO / "nbgrader_config.py").read_text()).group(1)
    first_line = stub.encode().decode("unicode_escape").splitlines()[-1]
    assert first_line.startswith("raise NotImplementedError(")
    for text in (markdown(REPO / "index.ipynb"), (REPO / "autograder" / "student" / "README.md").read_text()):
        assert "NotImplementedError()" not in text


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.name)
def test_every_lecture_cites_its_sources(path):
    text = markdown(path)
    assert re.search(r"^#+ .*Sources", text, re.MULTILINE), "a 'Sources' section"
    assert "cs336" in text.lower() and len(re.findall(r"\]\(https?://", text)) >= 2


def test_every_task_title_fits_the_progress_table():
    """The TA's U5: a title longer than the progress table's column is cut ("how long one pass over the data ..."), on
    the landing page a student opens first. Every task's title fits."""
    from utils.progress_check import TASK_HEADING, TITLE_WIDTH
    titles = [(path.parent.name, match.group(2)) for path in sorted(REPO.glob("source/*/*.ipynb"))
              for match in TASK_HEADING.finditer(markdown(path))]
    assert len(titles) >= 60 and [t for t in titles if len(t[1]) > TITLE_WIDTH] == []
