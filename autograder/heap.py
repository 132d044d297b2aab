"""The heap of a process that imports much, then forks many children: its imports with Python's cycle collector
paused, then one collection, then every object left frozen (gc.freeze).

Why: a forked child shares its parent's memory until it writes to it, and Python's collector writes to every object
it examines. A notebook process forked from the zygote (torch, IPython and the course's modules: some 340,000
objects) that reached its first full collection spent about 170 ms examining them and copied every page they live in;
a frozen object is never examined (the permanent generation, which Python's documentation of gc.freeze recommends for
exactly this). Measured on the standard bench (docs/benchmarks.md): a solved notebook of exercise 4 spent 0.22 s in
its first test cell before, 0.04 s after. Pausing the collector while importing saves a sixth of the imports' CPU
(torch and the course's modules: 3.1 s against 2.6 s on the 2-core machine): imports make few cycles to collect.
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
