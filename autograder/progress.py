"""Runs in the grader: how far a grading run is: notebooks done of the total, notebooks per second, time elapsed and
left, and how many submissions the grader failed on so far (jupyter/nbgrader#1456 asks nbgrader for the same).

On a terminal it is one tqdm bar, redrawn in place. Anywhere else (CI, a Slurm or Kubernetes log, `make grade >
log`) a bar's carriage returns would pile up, so it prints the same numbers as one plain line every `every`
seconds, and a last one at the end; tqdm's own `format_meter` writes both, so they read alike. Results reused from
an earlier run count as done at the start (they take no time); the rate and the ETA count only the notebooks run
now. The grader calls `tick()` while it waits for its workers, so the line keeps coming while every worker is busy
with a long notebook: a stuck run's count stops, its elapsed time does not. (No timer thread: the grader forks its
workers, and a fork taken while another thread holds stderr's lock leaves the child stuck on it.)
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm

# the plain line: "grading: 120/900 notebooks (13%), 2.33 notebooks/s, elapsed 00:43, ETA 05:35, 0 failed"
PLAIN = "{desc}: {n_fmt}/{total_fmt} notebooks ({percentage:.0f}%), {rate_noinv_fmt}, elapsed {elapsed}, ETA {remaining}{postfix}"


class Progress:
    """Progress of `total` notebooks, `reused` of them done before the run starts. Call `advance(notebooks,
    failed)` as each submission ends, and `close()` at the end (or use it as a context manager)."""

    def __init__(self, total: int, reused: int = 0, label: str = "grading", stream: TextIO | None = None,
                 every: float = 10.0, terminal: bool | None = None):
        self.total, self.reused, self.label = total, reused, label
        self.stream = stream or sys.stderr
        self.every = every                       # seconds between plain lines
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.done = reused                       # notebooks, reused ones included
        self.failed = 0                          # submissions the grader failed on
        self.started = self._shown = time.monotonic()
        tqdm.monitor_interval = 0   # tqdm's monitor is a thread too; tick() does its job
        self._bar = tqdm(total=total, initial=reused, desc=label, unit="notebook", file=self.stream,
                         dynamic_ncols=True, postfix=self._failures()) if self.terminal else None
        if not self.terminal:
            self._print()

    def _failures(self) -> str:
        return f"{self.failed} failed"

    def line(self) -> str:
        """The current numbers as one line (what the plain output prints)."""
        return tqdm.format_meter(self.done, self.total, time.monotonic() - self.started, prefix=self.label,
                                 unit=" notebooks", initial=self.reused, postfix=self._failures(), bar_format=PLAIN)

    def _print(self) -> None:
        print(self.line(), file=self.stream, flush=True)

    def tick(self) -> None:
        """Show the numbers if it is time: the bar every second, a plain line every `every` seconds."""
        now = time.monotonic()
        if now - self._shown >= (1.0 if self.terminal else self.every):
            self._shown = now
            self._bar.refresh() if self._bar is not None else self._print()

    def advance(self, notebooks: int, failed: bool = False) -> None:
        """One submission ended: its `notebooks` are done; `failed`: the grader failed on it."""
        self.done += notebooks
        self.failed += bool(failed)
        if self._bar is not None:
            self._bar.set_postfix_str(self._failures(), refresh=False)
            self._bar.update(notebooks)
        self.tick()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            self._print()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
