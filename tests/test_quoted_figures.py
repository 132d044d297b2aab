"""The figures the manual quotes from the lectures' stored outputs are the figures those outputs hold (issue #50).

docs/benchmarks.md quotes a lecture where it says so: a sentence (or a table's cell) that names `lecture N` and says
it stores (store, stores, stored) quotes that lecture from each `lecture N` it names to the next, and the tables of a section that says
"stored in lecture N" quote lecture N in every column but "margin". Each number there must be a number of lecture N's
stored outputs, as printed or rounded to the digits quoted (and in thousandths or thousands: 726.2 TFLOP/s is
726186.0 GFLOP/s).

docs/course.md quotes lectures as benchmarks.md does, and rates: each number before TFLOP/s, GFLOP/s, GB/s, TB/s or B/s (a range's ends included) must be
a data-sheet figure of utils/hardware.py, or a rate that docs/benchmarks.md or a lecture's stored output gives (a
number before one of those units there), matched as above.

Dates, versions and commit ids are not figures; an exponent (the 3 of 8192^3) and a lecture's own number are left out.
"""
from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path

import pytest

from tests.manual import REPO, headings, outside_fences
from tests.test_notebook_provenance import output_text

LECTURES = {int(p.name[:2]): p for p in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
NOT_FIGURES = re.compile(r"\d{4}-\d{2}-\d{2}"                   # dates
                         r"|\b\d+\.\d+\.\d+[\w+.]*"               # versions: 2.11.0+cu130
                         r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")  # commit ids: f8616b3, 4ffa454
NUMBER = re.compile(r"(?<![\w.^])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\w.^,])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\d.]\d)")
LECTURE = re.compile(r"\b[Ll]ecture (\d{1,2})\b")
STORES = re.compile(r"\bstor(e|es|ed)\b")
RATE = re.compile(r"((?:\d[\d,.]*(?:e\d+)?\s*(?:to|-|/)\s*)*\d[\d,.]*(?:e\d+)?)\s*(TFLOP/s|GFLOP/s|GB/s|TB/s|(?<!\w)B/s)")


def numbers(text: str) -> list[str]:
    """The numbers of `text` as written (1,109 or 726.2 or 3.35e12), dates, versions and commit ids left out."""
    return NUMBER.findall(NOT_FIGURES.sub(" ", text))


def value(number: str) -> Decimal:
    return Decimal(number.replace(",", ""))


def holds(held: list[Decimal], quoted: str) -> bool:
    """Whether a number of `held` is `quoted`, as printed or rounded to its digits, or in thousandths or thousands."""
    target = value(quoted)
    exponent = target.as_tuple().exponent if "e" not in quoted else None
    with localcontext() as context:
        context.prec = 100  # outputs print numbers up to 1e38 (a format's max), rounded here to units
        for number in held:
            for scale in (Decimal(1), Decimal("0.001"), Decimal(1000)):
                scaled = number * scale
                if exponent is None:
                    if scaled == target:
                        return True
                elif scaled.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_UP) == target:
                    return True
    return False


def stored_numbers(path: Path) -> list[Decimal]:
    cells = json.loads(path.read_text())["cells"]
    return [value(n) for cell in cells if cell["cell_type"] == "code" for n in numbers(output_text(cell))]


def paragraphs(text: str) -> list[tuple[str, str]]:
    """(section heading, paragraph or list item) of a page, tables and code left out; lines joined by spaces."""
    blocks, current, heading = [], [], ""
    for _, line in outside_fences(text) + [(0, "")]:
        starts = not line.strip() or line.startswith(("#", "|", "- ", "  - ", "* ")) or re.match(r"^\d+\. ", line)
        if starts and current:
            blocks.append((heading, " ".join(current)))
            current = []
        if line.startswith("#"):
            heading = line
        elif line.strip() and not line.startswith("|"):
            current.append(line.strip().lstrip("-* ").strip())
    return blocks


def sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=[.;!?])\s+(?=[A-Z(*`\[])", paragraph)


def lecture_quotes(text: str) -> list[tuple[int, str]]:
    """(lecture, the text that quotes it) of a page: see the module's docstring."""
    quotes = []
    cells = [cell for _, line in outside_fences(text) if line.startswith("|") for cell in line.strip("|").split("|")]
    for paragraph in [paragraph for _, paragraph in paragraphs(text)] + cells:
        for sentence in sentences(paragraph):
            mentions = list(LECTURE.finditer(sentence))
            if not mentions or not STORES.search(sentence):
                continue
            for mention, following in zip(mentions, mentions[1:] + [None]):
                end = following.start() if following else len(sentence)
                quotes.append((int(mention.group(1)), sentence[mention.end():end]))
    lines = text.splitlines()
    marks = headings(text) + [(len(lines), 0, "")]
    for (start, _, _), (end, _, _) in zip(marks, marks[1:]):
        body = "\n".join(lines[start + 1:end])
        stored = re.search(r"[Ss]tored in lecture (\d{1,2})", body)
        rows = [line for line in body.splitlines() if line.startswith("|")]
        if not stored or len(rows) < 3:
            continue
        header = [cell.strip() for cell in rows[0].strip("|").split("|")]
        for row in rows[2:]:
            cells = [cell.strip() for cell in row.strip("|").split("|")]
            quotes += [(int(stored.group(1)), cell) for name, cell in zip(header, cells) if name != "margin"]
    return quotes


def quote_problems(text: str) -> list[str]:
    problems, stored = [], {}
    for lecture, quote in lecture_quotes(text):
        if lecture not in LECTURES:
            problems.append(f"lecture {lecture} does not exist: {quote!r}")
            continue
        held = stored.setdefault(lecture, stored_numbers(LECTURES[lecture]))
        problems += [f"lecture {lecture} stores no {number}: {quote.strip()!r}" for number in numbers(quote)
                     if not holds(held, number)]
    return problems


def data_sheet() -> list[Decimal]:
    """utils/hardware.py's peaks in FLOP/s and TFLOP/s, and memory bandwidths in B/s, GB/s and TB/s."""
    from utils.hardware import MEMORY_BANDWIDTH, PEAK_FLOPS
    peaks = [Decimal(str(peak)) / scale for table in PEAK_FLOPS.values() for peak in table.values()
             for scale in (Decimal(1), Decimal(10**12))]
    bandwidths = [Decimal(str(b)) for b in MEMORY_BANDWIDTH.values()]
    return peaks + bandwidths + [b / Decimal(10**9) for b in bandwidths] + [b / Decimal(10**12) for b in bandwidths]


def rate_problems(text: str, held: list[Decimal]) -> list[str]:
    prose = "\n".join(line for _, line in outside_fences(text))
    return [f"{number} {match.group(2)} is neither a data-sheet figure nor a stored or benchmarked one: "
            f"{match.group(0)!r}" for match in RATE.finditer(NOT_FIGURES.sub(" ", prose))
            for number in numbers(match.group(1)) if not holds(held, number)]


def rates(text: str) -> list[Decimal]:
    """The numbers of `text` that give a rate (before TFLOP/s, GFLOP/s, GB/s, TB/s or B/s)."""
    return [value(n) for match in RATE.finditer(NOT_FIGURES.sub(" ", text)) for n in numbers(match.group(1))]


@pytest.fixture(scope="module")
def everything_held() -> list[Decimal]:
    """The rates course.md may quote: the data sheet's, benchmarks.md's and those of the lectures' stored outputs."""
    benchmarks = rates((REPO / "docs" / "benchmarks.md").read_text())
    lectures = [n for path in LECTURES.values() for cell in json.loads(path.read_text())["cells"]
                if cell["cell_type"] == "code" for n in rates(output_text(cell))]
    return data_sheet() + benchmarks + lectures


def test_benchmarks_quote_what_the_lectures_store():
    text = (REPO / "docs" / "benchmarks.md").read_text()
    quoted = {lecture for lecture, _ in lecture_quotes(text)}
    assert {2, 5, 9, 10} <= quoted, f"the quotes of lectures 2, 5, 9 and 10 were not found: {sorted(quoted)}"
    assert quote_problems(text) == []


def test_the_course_quotes_only_held_rates(everything_held):
    text = (REPO / "docs" / "course.md").read_text()
    assert len(RATE.findall(text)) >= 3, "course.md quotes data-sheet peaks and measured rates"
    assert rate_problems(text, everything_held) == []


def test_the_course_quotes_what_the_lectures_store():
    """docs/course.md's quotes of a lecture's stored output hold too (the TA's U4: the cold first call, 2,750x)."""
    text = (REPO / "docs" / "course.md").read_text()
    assert 5 in {lecture for lecture, _ in lecture_quotes(text)}
    assert quote_problems(text) == []
    assert quote_problems(text.replace("2,750x", "27,500x")) == [
        "lecture 5 stores no 27,500: 'stores 112 ms against 0.041 ms warm, 27,500x, for a 512x512 bf16 matmul on the H100): "
        "always warm up before timing.'"]


# The checks must be able to fail: the pages with one figure changed, and a stale quote of an earlier run.
def test_a_changed_figure_in_a_quote_fails():
    text = (REPO / "docs" / "benchmarks.md").read_text()
    assert "1413.9 GB/s" in text and "| 5.20 ms | 16.20 ms |" in text
    for wrong in (text.replace("1413.9 GB/s", "1431.9 GB/s"), text.replace("| 5.20 ms | 16.20 ms |", "| 8.6 ms | 22.3 ms |")):
        problems = quote_problems(wrong)
        assert len(problems) >= 1 and all("stores no" in p for p in problems), problems


def test_a_quote_of_an_earlier_run_fails():
    """As docs/benchmarks.md quoted the lectures' H100 run of 2026-11-23 after the run of 2026-11-26 replaced it."""
    stale = ("The six lectures store one run: for example lecture 5 stores 8192^3 bf16 / fp32 matmuls at 771.4 / 51.25 "
             "TFLOP/s, and lecture 9 stores a 4096^3 fp8 matmul at 978 TFLOP/s.\n\n"
             "| 4096^3 bf16 / fp8 matmul | 710-725 / 1118-1140 TFLOP/s | not the run lecture 9 stores: its cells print "
             "707 / 978 TFLOP/s |\n")
    assert sorted(p.split(":")[0] for p in quote_problems(stale)) == [
        "lecture 5 stores no 51.25", "lecture 5 stores no 771.4", "lecture 9 stores no 707", "lecture 9 stores no 978",
        "lecture 9 stores no 978"]


def test_a_rate_nothing_holds_fails(everything_held):
    text = (REPO / "docs" / "course.md").read_text()
    assert "726 to 784 TFLOP/s" in text
    problems = rate_problems(text.replace("726 to 784 TFLOP/s", "750 to 800 TFLOP/s"), everything_held)
    assert len(problems) == 2 and "750 TFLOP/s" in problems[0] and "800 TFLOP/s" in problems[1], problems


def test_numbers_are_read_as_written():
    assert numbers("2026-11-26, torch 2.11.0+cu130 at f8616b3: 1,109M, 8192^3, 1.5x, 3.35e12 B/s, 777-784") == [
        "1,109", "8192", "1.5", "3.35e12", "777", "784"]
    held = [Decimal("726186.0"), Decimal("50970.9"), Decimal("0.23")]
    assert holds(held, "726.2") and holds(held, "726") and holds(held, "51.0") and holds(held, "0.23")
    assert not holds(held, "726.3") and not holds(held, "51.25") and not holds(held, "0.3")


def test_the_course_says_the_two_weeks_figure_is_a_peak():
    """The TA's U3: 8 H100s' two weeks, computed from utils/hardware.py's dense bf16 peak, said at the peak and at
    MFU 0.5 (lecture 5, section 8 insists on the difference; exercise 5 asks for the MFU 0.5 figure)."""
    import torch

    from utils.hardware import PEAK_FLOPS
    peak = 8 * PEAK_FLOPS["H100 SXM"][torch.bfloat16] * 14 * 86400
    text = " ".join((REPO / "docs" / "course.md").read_text().split())
    assert f"8 H100s deliver {peak:.2e} FLOPs in two weeks at their peak (MFU 1), {peak / 2:.2e} at MFU 0.5" \
        .replace("e+", "e") in text
