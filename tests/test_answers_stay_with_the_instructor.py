"""Nothing a student receives answers an exercise: no solution region of `source/` is found, line for line, in the
student edition (lectures, `utils/`, released notebooks, everything `make student-edition` ships).

For each solution region, the share of its non-trivial lines (whitespace-normalised; not blank, not a comment, not an
import, not bare syntax such as `else:`) that appear anywhere in the edition. A region at 50% or more fails.

    .venv/bin/python -m tests.test_answers_stay_with_the_instructor      (prints the table)
"""
from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT = 0.5
REGION = re.compile(r"### BEGIN (SOLUTION|MARK SCHEME)\n(.*?)### END \1", re.DOTALL)  # answers, and rubrics
BARE = re.compile(r"^(else:|try:|finally:|pass|break|continue|return|return None|[\]\)\}:,]+|\"\"\"|''')$")


def normalised(line: str) -> str:
    return " ".join(line.split())


def meaningful(line: str) -> bool:
    """A line that says something of its own: not blank, a comment, an import or bare syntax."""
    line = normalised(line)
    return bool(line) and not line.startswith("#") and not re.match(r"(import|from) \S+", line) \
        and not BARE.match(line)


def text_lines(path: Path) -> list[str]:
    """Every line a student can read in a file: a notebook's cell sources and text outputs, or a text file."""
    if path.suffix == ".ipynb":
        lines = []
        for cell in json.loads(path.read_text())["cells"]:
            lines += "".join(cell["source"]).splitlines()
            for output in cell.get("outputs", []):
                lines += "".join(output.get("text", "")).splitlines()
                lines += "".join(output.get("data", {}).get("text/plain", "")).splitlines()
        return lines
    try:
        return path.read_text().splitlines()
    except (UnicodeDecodeError, OSError):
        return []


def edition_lines(edition: Path) -> set[str]:
    return {normalised(line) for path in edition.rglob("*") if path.is_file() for line in text_lines(path)}


def solution_regions() -> list[tuple[str, str, list[str]]]:
    """(assignment, grade_id, meaningful lines) for every solution region in `source/`, and every rubric (a mark
    scheme region, in a written question)."""
    regions = []
    for path in sorted(REPO.glob("source/*/*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "?")
            for _, body in REGION.findall("".join(cell["source"])):
                regions.append((path.parent.name, grade_id, [normalised(line) for line in body.splitlines() if meaningful(line)]))
    return regions


def overlap_table(edition: Path) -> list[tuple[str, str, int, int]]:
    """(assignment, grade_id, lines found in the edition, meaningful lines) per solution region."""
    shipped = edition_lines(edition)
    return [(a, g, sum(line in shipped for line in lines), len(lines)) for a, g, lines in solution_regions()]


def format_table(rows: list[tuple[str, str, int, int]]) -> str:
    shares = [found / total if total else 0.0 for _, _, found, total in rows]
    lines = [f"{'assignment':22} {'task':28} {'found':>5} {'lines':>5} {'share':>6}"]
    lines += [f"{a:22} {g:28} {found:5} {total:5} {share:6.0%}" for (a, g, found, total), share in zip(rows, shares)]
    lines.append(f"{len(rows)} regions; at or above {LIMIT:.0%}: {sum(s >= LIMIT for s in shares)}; "
                 f"max {max(shares):.0%}; median {statistics.median(shares):.0%}")
    return "\n".join(lines)


def build_edition(out: Path) -> Path:
    from autograder.student_edition import build
    return build(out)


def test_no_solution_region_ships_with_the_student_edition(tmp_path):
    rows = overlap_table(build_edition(tmp_path / "edition"))
    assert len(rows) >= 40
    table = format_table(rows)
    print(table)
    leaks = [(a, g) for a, g, found, total in rows if total and found / total >= LIMIT]
    assert not leaks, f"solution regions that students can read in their edition:\n{table}"


def test_the_measure_finds_a_copied_answer(tmp_path):
    """The measure itself: a solution pasted into a shipped module is found."""
    edition = build_edition(tmp_path / "edition")
    assignment, grade_id, lines = max(solution_regions(), key=lambda region: len(region[2]))
    (edition / "utils" / "copied.py").write_text("\n".join(lines))
    row = next(r for r in overlap_table(edition) if r[:2] == (assignment, grade_id))
    assert row[2] == row[3]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        print(format_table(overlap_table(build_edition(Path(scratch) / "edition"))))
    sys.exit(0)
