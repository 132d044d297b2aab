"""Reading the manual (README.md and docs/*.md) the way the tests that run its commands need: a section by its heading,
the `bash` blocks in it, every fenced block with the line above it, and the headings' anchors as GitHub makes them.

Used by tests/test_readme_commands.py, tests/test_class_hub.py, tests/test_clusters.py and tests/test_docs.py.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(```|~~~)")
BASH = re.compile(r"^```bash\n(.*?)^```$", flags=re.MULTILINE | re.DOTALL)
# The line just above a ```bash block that no test runs, saying why (a GPU, a Kubernetes cluster, ...).
NOT_RUN = re.compile(r"^<!-- not run by the tests: (.+) -->$")


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def read(page: str | Path) -> str:
    return (REPO / page).read_text()


def outside_fences(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line not inside a fenced code block."""
    lines, inside = [], False
    for number, line in enumerate(text.splitlines()):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            lines.append((number, line))
    return lines


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line number, level, title) of every heading outside code blocks."""
    found = []
    for number, line in outside_fences(text):
        m = re.match(r"^(#{1,6}) (.+?)\s*#*\s*$", line)
        if m:
            found.append((number, len(m.group(1)), m.group(2)))
    return found


def section(page: str | Path, heading: str) -> str:
    """The text of `page` from the line `heading` (such as "## Grading on a Slurm cluster") to the next heading of the
    same or a higher level, or to the end; the heading must be there exactly once."""
    text = read(page)
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    title = heading[level:].strip()
    matches = [(n, lvl) for n, lvl, t in headings(text) if lvl == level and t == title]
    assert len(matches) == 1, f"{page}: {heading!r} is there {len(matches)} times"
    start = matches[0][0]
    end = next((n for n, lvl, _ in headings(text) if n > start and lvl <= level), len(lines))
    return "\n".join(lines[start:end]) + "\n"


def bash_blocks(text: str) -> list[str]:
    """The body of every ```bash block of `text`, in order."""
    return BASH.findall(text)


def fenced_bash(page: str | Path) -> list[tuple[int, str, str]]:
    """(line number, the line above it, body) of every ```bash block of `page`."""
    lines = read(page).splitlines()
    blocks, start = [], None
    for number, line in enumerate(lines):
        if start is None and line == "```bash":
            start = number
        elif start is not None and line == "```":
            blocks.append((start, lines[start - 1] if start else "", "\n".join(lines[start + 1:number]) + "\n"))
            start = None
    return blocks


def slug(title: str) -> str:
    """A heading's anchor as GitHub makes it: links and code marks dropped, lower case, punctuation removed, spaces
    to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: str | Path) -> set[str]:
    """Every anchor of `page`'s headings, with GitHub's -1, -2 ... for repeated ones."""
    seen: dict[str, int] = {}
    found = set()
    for _, _, title in headings(read(page)):
        base = slug(title)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found
