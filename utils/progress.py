"""A text progress bar for long loops (training, sweeps, benchmarks), written to stdout, not stderr.

stdout keeps it out of nbgrader's and our notebooks' "no stderr" rule; cells that show one are tagged
`nbval-ignore-output` because the rate it prints changes from run to run.
"""
from __future__ import annotations

import sys
from typing import Iterable, TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(items: Iterable[T], description: str, total: int | None = None) -> Iterable[T]:
    """Iterate over `items` while drawing a bar labelled `description`."""
    return tqdm(items, desc=description, total=total, file=sys.stdout, ncols=80, mininterval=0.5)
