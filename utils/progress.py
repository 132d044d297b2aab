"""A progress line for long loops (training, sweeps, benchmarks) that leaves nothing behind.

In a notebook the line "description: 3/6" updates in place and is blanked when the loop ends, so a stored notebook
keeps no progress bar (a reader only sees the results); in a terminal it is drawn on stderr; anywhere else (the
grader, a pipe) nothing is drawn. Updates come at most every half second, so the line costs nothing measurable.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sized
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
SECONDS_BETWEEN_UPDATES = 0.5


def _notebook_display() -> Callable[[str], None] | None:
    """A function that replaces one output line of the running notebook cell, or None outside a Jupyter kernel."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    handle = display({"text/plain": ""}, raw=True, display_id=True)
    return lambda text: handle.update({"text/plain": text}, raw=True)


def _terminal_display() -> Callable[[str], None] | None:
    if not sys.stderr.isatty():
        return None
    return lambda text: print(f"\r{text:<79}", end="" if text else "\r", file=sys.stderr, flush=True)


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over `items` while showing `description: done/total` (total from len(items) when it has one)."""
    total = total if total is not None else (len(items) if isinstance(items, Sized) else None)
    show = _notebook_display() or _terminal_display()
    last = 0.0
    for done, item in enumerate(items):
        if show and time.monotonic() - last >= SECONDS_BETWEEN_UPDATES:
            show(f"{description}: {done}/{total}" if total is not None else f"{description}: {done}")
            last = time.monotonic()
        yield item
    if show:
        show("")
