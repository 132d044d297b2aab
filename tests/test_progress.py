"""The grader's progress (autograder/progress.py): the numbers it shows are the run's, on a terminal and in a log.
A captured run of the real grader is checked in tests/test_postgres.py (each shard its own line, a resumed shard
starting from its reused results)."""
from __future__ import annotations

import io
import re

from autograder.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines_from_the_reused_results_to_the_total():
    log = io.StringIO()
    with Progress(10, reused=4, stream=log, every=3600) as progress:
        for failed in (False, True, False):
            progress.advance(2, failed)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in log.getvalue()   # the first line, then the last; none in between
    assert lines[0].startswith("grading: 4/10 notebooks (40%), ? notebooks/s")
    assert lines[-1].startswith("grading: 10/10 notebooks (100%)") and lines[-1].endswith(", 1 failed")


def test_a_plain_line_comes_every_few_seconds_while_nothing_ends():
    log = io.StringIO()
    progress = Progress(5, stream=log, every=0)
    progress.tick()
    progress.tick()
    assert log.getvalue().count("grading: 0/5 notebooks") == 3


def test_the_rate_and_eta_count_only_the_notebooks_run_now():
    progress = Progress(100, reused=60, stream=io.StringIO(), every=3600)
    progress.started -= 20.0                      # 20 s ago
    progress.advance(10)                          # 10 notebooks run in 20 s: 0.5 per second
    line = progress.line()
    rate = float(re.search(r"([\d.]+) notebooks/s", line).group(1))
    assert rate == 0.5, line
    assert "ETA 01:00" in line, line              # 30 left at 0.5 per second
    assert "70/100" in line and "elapsed 00:20" in line


def test_a_terminal_gets_one_bar_redrawn_in_place():
    screen = Terminal()
    with Progress(6, reused=2, label="grading shard 2/3", stream=screen) as progress:
        progress.advance(4)
    drawn = screen.getvalue()
    assert "\r" in drawn and drawn.endswith("\n") and drawn.count("\n") == 1
    assert drawn.rstrip().split("\r")[-1].startswith("grading shard 2/3: 100%")
    assert "6/6" in drawn and "0 failed" in drawn
