"""What a call of your code costs, measured by the kernel: peak memory and bytes read from a file (issue #52).

Three tasks of the course have a cost budget as well as a right answer: exercise 3's `sliding_windows` (a view costs
no memory, a copy hundreds of MiB) and exercise 8's `get_batch` (a batch reads a few pages of the file, not all of
it). When your work is graded, the grader measures the call from outside your notebook's process with the kernel's
own counters (autograder/grader/cost.py). The visible tests measure the same quantities here, with your process
measuring itself, so you see the cost beside the budget before you hand in:

- peak memory above the call's start: the kernel's resident high-water mark, `VmHWM` in /proc/self/status, reset
  to the resident size by writing 5 to /proc/self/clear_refs just before the call; bytes;
- bytes read from a file: the resident bytes of every mapping of the file after the call (/proc/self/smaps) plus
  the bytes read by system calls during it (`rchar` in /proc/self/io).

Where this process may not reset its own high-water mark (inside the grader's sandbox), peak memory is left to the
grader and the visible test says so.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

MiB = 2**20

# The budgets (the grader's are the same: reference/strides_views.py and reference/training_loop.py use these).
WINDOWS_LENGTH, WINDOWS_WIDTH = 2**16 + 1023, 1024     # sliding_windows(torch.empty(WINDOWS_LENGTH), WINDOWS_WIDTH)
WINDOWS_PEAK_BYTES = 16 * MiB                          # a view: ~0 bytes; a copy: 256 MiB
BATCH_FILE_TOKENS = 2**24                              # get_batch on a memmap of 2**24 uint16 tokens (32 MiB)
BATCH_SIZE, BATCH_CONTEXT = 8, 64                      # get_batch(data, 8, 64, "cpu", generator)
BATCH_FILE_BYTES = 2 * MiB                             # 8 windows of 65 tokens: at most 32 pages each, mapped
BATCH_FAULTS = 256                                     # page faults the call may take (a full read takes 512 or more)

_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$")


@dataclass(frozen=True)
class Cost:
    """One call's measured cost: peak_bytes (None where this process cannot reset its high-water mark), file_bytes
    (bytes read from the named file), seconds (wall clock)."""
    peak_bytes: int | None
    file_bytes: int
    seconds: float


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset this process's VmHWM to its resident size; False where it may not (a sandbox, not Linux)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _file_resident_bytes(name: str) -> int:
    """Resident bytes of this process's mappings of files whose path ends with `name`."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        header = _MAPPING.match(line)
        if header:
            inside = bool(name) and header.group(1).endswith(name)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1]) * 1024
    return total


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def measure(call: Callable[[], object], file: str = "") -> tuple[object, Cost]:
    """Call `call()` and return (what it returned, its Cost); `file`: the end of the path of the file whose reads
    count (an empty string: none)."""
    resettable = _reset_peak()
    start_rss = _status_bytes("VmRSS")
    mapped, read = _file_resident_bytes(file) if file else 0, _rchar()
    started = time.perf_counter()
    value = call()
    seconds = time.perf_counter() - started
    peak = max(_status_bytes("VmHWM") - start_rss, 0) if resettable else None
    file_bytes = (max(_file_resident_bytes(file) - mapped, 0) + max(_rchar() - read, 0)) if file else 0
    return value, Cost(peak, file_bytes, seconds)


def check_cost(cost: Cost, what: str, hint: str, peak_bytes: int | None = None, file_bytes: int | None = None) -> None:
    """Print the measured cost beside the budget; AssertionError (with `hint`) when it is over."""
    if peak_bytes is not None:
        if cost.peak_bytes is None:
            print(f"{what}: peak memory is measured by the grader here (budget {peak_bytes / MiB:,.1f} MiB)")
        else:
            print(f"{what}: peak memory {cost.peak_bytes / MiB:,.1f} MiB (budget {peak_bytes / MiB:,.1f} MiB)")
            if cost.peak_bytes > peak_bytes:
                raise AssertionError(f"{what} raised this process's peak memory by {cost.peak_bytes / MiB:,.1f} MiB; "
                                     f"the budget is {peak_bytes / MiB:,.1f} MiB\nHint: {hint}")
    if file_bytes is not None:
        print(f"{what}: read {cost.file_bytes / MiB:,.2f} MiB of the file (budget {file_bytes / MiB:,.1f} MiB)")
        if cost.file_bytes > file_bytes:
            raise AssertionError(f"{what} read {cost.file_bytes / MiB:,.2f} MiB of the file; the budget is "
                                 f"{file_bytes / MiB:,.1f} MiB\nHint: {hint}")
