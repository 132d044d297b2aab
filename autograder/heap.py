"""The heap of a process that imports much, then forks many children: its imports with Python's cycle collector
paused, then one collection, then every object left frozen (gc.freeze).

Why: a forked child shares its parent's memory until it writes to it, and Python's collector writes to every object
it examines. A notebook process forked from the zygote (torch, IPython and the course's modules: some 340,000
objects) that reached its first full collection spent about 170 ms examining them and copied every page they live in;
a frozen object is never examined (the permanent generation, which Python's documentation of gc.freeze recommends for
exactly this). Measured on the standard bench (docs/benchmarks.md): a solved notebook of exercise 4 spent 0.22 s in
its first test cell before, 0.04 s after. Pausing the collector while importing saves a sixth of the imports' CPU
(torch and the course's modules: 3.1 s against 2.6 s on the 2-core machine): imports make few cycles to collect.

The grader's own process forks a worker per submission, and each worker a child for the rule judge: their parent holds
nbgrader, SQLAlchemy and the run's sources (over 110,000 objects), and the judge's first parse of a notebook reached a
full collection over them (about 90 ms a submission under py-spy, nearly all of the judge's time). `frozen_while`
freezes that heap for the forks, and gives it back to the collector after: 30 solved notebooks of exercise 4 took
14.5 and 15.4 CPU-s to grade, against 18.0 and 19.9 without it (the 2-core machine, alternated, 2026-11-29).
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_after() -> Iterator[None]:
    """Run the block with the collector paused; then collect once, freeze what is left, and let the collector run
    again (a forked child inherits it running, as any Python process has it, over its own objects only)."""
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


@contextmanager
def frozen_while() -> Iterator[None]:
    """Collect once and freeze this process's heap for the block, in which it forks children that do work of their own
    (the grader's workers): a collection in a child then examines the child's objects only. After the block the
    objects are the collector's again (gc.unfreeze), for a process that lives on (pytest, a staff server)."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
