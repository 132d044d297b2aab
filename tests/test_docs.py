"""The manual stays true to the repository (issue #35): the README is a screen or two that links every page of
docs/; docs/layout.md names every top-level folder and every module under autograder/; every relative link of
README.md and docs/ leads to a file (and heading) that exists; every test the manual cites exists; nothing points to
a file outside the repository (the course's spec is docs/course.md).

Commands as printed: tests/test_readme_commands.py (which test runs which page's `bash` blocks)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.manual import REPO, anchors, outside_fences, pages, read

LAYOUT = REPO / "docs" / "layout.md"
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CITED_TEST = re.compile(r"\b(tests/test_\w+\.py)::(test_\w+)")


def tracked_top_level_folders() -> set[str]:
    """The folders at the root of a clone: what git tracks (or, outside a git checkout, what is there)."""
    done = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if done.returncode == 0 and done.stdout:
        return {line.split("/", 1)[0] for line in done.stdout.splitlines() if "/" in line}
    return {p.name for p in REPO.iterdir() if p.is_dir() and p.name not in {".git", ".venv", "test-artifacts"}
            and not p.name.endswith(".egg-info") and not p.name.startswith((".pytest", ".hyp", "__"))}


def prose(page: Path) -> str:
    """The page without its fenced code blocks, and without inline code (a link in either is not a link)."""
    text = "\n".join(line for _, line in outside_fences(page.read_text()))
    return re.sub(r"`[^`\n]*`", "", text)


def test_the_readme_is_a_screen_or_two_and_links_every_page_of_the_manual():
    readme = read("README.md")
    assert len(readme.splitlines()) <= 150, len(readme.splitlines())
    for command in ("make lab", "make test"):
        assert command in readme, command
    linked = {target.split("#")[0] for target in LINK.findall(prose(REPO / "README.md"))}
    missing = [f"docs/{p.name}" for p in sorted((REPO / "docs").glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"pages of the manual the README does not link: {missing}"


def test_every_top_level_folder_is_in_the_layout():
    layout = LAYOUT.read_text()
    missing = sorted(name for name in tracked_top_level_folders() if f"`{name}/" not in layout)
    assert not missing, f"folders missing from docs/layout.md: {missing}"
    assert "`docs/`" in layout


def test_every_module_of_the_grader_is_in_the_layout():
    """Each module by its path (`autograder/grader/pipeline.py`), each package by its folder; an __init__.py is named
    by its package's folder."""
    layout = LAYOUT.read_text()
    autograder = REPO / "autograder"
    wanted = [f"autograder/{p.relative_to(autograder)}" for p in sorted(autograder.rglob("*.py"))
              if p.name != "__init__.py" and "__pycache__" not in p.parts]
    wanted += [f"autograder/{p.relative_to(autograder)}/" for p in sorted(autograder.rglob("*"))
               if p.is_dir() and p.name != "__pycache__"]
    wanted.append("autograder/limits.toml")
    assert "autograder/trusted/checker.py" in wanted and "autograder/grader/" in wanted
    missing = [name for name in wanted if not re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w.])", layout)]
    assert not missing, f"missing from docs/layout.md: {missing}"


def test_every_helper_of_the_tests_is_in_the_layout():
    """Beside the test_*.py files (docs/tests.md names those), every helper file and folder of tests/ is named in
    docs/layout.md's tests section, by its name (`tiny_course.py`, `variants/`)."""
    section = LAYOUT.read_text().split("## tests/", 1)[1].split("\n## ", 1)[0]
    helpers = [p.name + ("/" if p.is_dir() else "") for p in sorted((REPO / "tests").iterdir())
               if not p.name.startswith(("test_", "__", ".")) and p.name != "__pycache__"]
    assert "tiny_course.py" in helpers and "manual.py" in helpers
    missing = [name for name in helpers if f"`{name}" not in section]
    assert not missing, f"tests/ helpers missing from docs/layout.md: {missing}"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page):
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository, which a clone does not have")
        elif not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert not broken, broken


def test_every_test_the_manual_cites_exists():
    cited = {(file, name) for page in pages() for file, name in CITED_TEST.findall(page.read_text())}
    assert len(cited) >= 30, "docs/security.md names the test behind each protected asset"
    missing = [f"{file}::{name}" for file, name in sorted(cited)
               if not (REPO / file).is_file()
               or not re.search(rf"^(async )?def {name}\(", (REPO / file).read_text(), flags=re.MULTILINE)]
    assert not missing, f"the manual cites tests that do not exist: {missing}"


def test_nothing_points_outside_the_repository_for_the_course_spec():
    done = subprocess.run(["git", "grep", "--untracked", "-l", "shared/COURSE.md"], cwd=REPO, capture_output=True,
                          text=True)
    if done.returncode not in (0, 1):
        pytest.skip("not a git checkout")
    assert set(done.stdout.split()) <= {"tests/test_docs.py"}, done.stdout
    spec = read("docs/course.md")
    for topic in range(1, 11):
        assert re.search(rf"^## {topic}\. ", spec, flags=re.MULTILINE), f"docs/course.md has no section for topic {topic}"


def test_every_picture_the_manual_shows_is_made_by_a_script_or_test():
    """A picture in README.md or docs/ is a file that a benchmark, script or test of the repository writes at that very
    path (its path is in their source), so running it again brings the picture up to date (issue #49, item 12: a
    screenshot of the class report, taken by hand, outlived two changes of the report)."""
    makers = "\n".join(p.read_text() for folder in ("tests", "bench", "scripts") for p in (REPO / folder).rglob("*.py"))
    orphans = []
    for page in pages():
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)", prose(page)) + re.findall(r"<img [^>]*src=\"([^\"]+)\"",
                                                                                     page.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                orphans.append(f"{page.name}: {target} (from outside the repository)")
                continue
            path = str((page.parent / target).resolve().relative_to(REPO))
            if path not in makers:
                orphans.append(f"{page.name}: {path}")
    assert not orphans, f"pictures no script or test of the repository makes: {orphans}"
