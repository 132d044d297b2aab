"""What a call of your code costs, measured by the kernel: peak memory and bytes read from a file (issue #52).

Three tasks of the course have a cost budget as well as a right answer: exercise 3's `sliding_windows` (a view costs
no memory, a copy hundreds of MiB), exercise 8's `get_batch` (a batch reads a few pages of the file, not all of it)
and exercise 9's `mlp_activation_bytes` (the forward pass of an MLP block must raise the peak memory by what the
function predicts, within 10%). When your work is graded, the grader measures the call from outside your notebook's process with the kernel's
own counters. The visible tests measure the same quantities here, with your process
measuring itself, so you see the cost beside the budget before you hand in:

- peak memory above the call's start: the kernel's resident high-water mark, `VmHWM` in /proc/self/status, reset
  to the resident size by writing 5 to /proc/self/clear_refs just before the call; bytes;
- bytes read from a file: the resident bytes of every mapping of the file after the call (/proc/self/smaps). (The
  grader also counts the bytes read by system calls and the page faults; a Jupyter kernel's own threads read its
  sockets, which makes those counters too noisy to check here.)

Where this process may not reset its own high-water mark (inside the grader's sandbox), peak memory is left to the
grader and the visible test says so.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

MiB = 2**20

# The budgets (the grader checks the same ones).
WINDOWS_LENGTH, WINDOWS_WIDTH = 2**16 + 1023, 1024     # sliding_windows(torch.empty(WINDOWS_LENGTH), WINDOWS_WIDTH)
WINDOWS_PEAK_BYTES = 16 * MiB                          # a view: ~0 bytes; a copy: 256 MiB
BATCH_FILE_TOKENS = 2**24                              # get_batch on a memmap of 2**24 uint16 tokens (32 MiB)
BATCH_SIZE, BATCH_CONTEXT = 8, 64                      # get_batch(data, 8, 64, "cpu", generator)
BATCH_FILE_BYTES = 2 * MiB                             # 8 windows of 65 tokens: at most 32 pages each, mapped
BATCH_FAULTS = 256                                     # page faults the call may take (a full read takes 512 or more)
MLP_SHAPE = (8, 256, 64, 4096)     # (batch, seq, dim, hidden) of exercise 9's measured MLP forward: its two hidden
                                   # activations are 32 MiB each, which malloc always maps afresh (its largest
                                   # threshold), so the kernel sees each one whole; a small dim keeps the matmuls quick
MLP_TOLERANCE = 0.10                                   # its peak must match mlp_activation_bytes within 10%, either way

_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$")


@dataclass(frozen=True)
class Cost:
    """One call's measured cost: peak_bytes (None where this process cannot reset its high-water mark), file_bytes
    (bytes read from the named file; None where /proc is missing), seconds (wall clock)."""
    peak_bytes: int | None
    file_bytes: int | None
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


def file_resident_bytes(name: str, pid: int | str = "self") -> int:
    """Resident bytes of the mappings of files whose path ends with `name`, in process `pid` (this one by default;
    the grader reads the notebook's from outside with the same parser)."""
    total, inside = 0, False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        header = _MAPPING.match(line)
        if header:
            inside = bool(name) and header.group(1).endswith(name)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1]) * 1024
    return total


def measure(call: Callable[[], object], file: str = "") -> tuple[object, Cost]:
    """Call `call()` and return (what it returned, its Cost); `file`: the end of the path of the file whose reads
    count (an empty string: none)."""
    if not Path("/proc/self/smaps").exists():  # not Linux: nothing to measure with; the grader measures
        started = time.perf_counter()
        value = call()
        return value, Cost(None, None, time.perf_counter() - started)
    resettable = _reset_peak()
    start_rss = _status_bytes("VmRSS")
    mapped = file_resident_bytes(file) if file else 0
    started = time.perf_counter()
    value = call()
    seconds = time.perf_counter() - started
    peak = max(_status_bytes("VmHWM") - start_rss, 0) if resettable else None
    file_bytes = max(file_resident_bytes(file) - mapped, 0) if file else 0
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
    if file_bytes is not None and cost.file_bytes is None:
        print(f"{what}: bytes read are measured by the grader here (budget {file_bytes / MiB:,.1f} MiB)")
    elif file_bytes is not None:
        print(f"{what}: read {cost.file_bytes / MiB:,.2f} MiB of the file (budget {file_bytes / MiB:,.1f} MiB)")
        if cost.file_bytes > file_bytes:
            raise AssertionError(f"{what} read {cost.file_bytes / MiB:,.2f} MiB of the file; the budget is "
                                 f"{file_bytes / MiB:,.1f} MiB\nHint: {hint}")


@contextlib.contextmanager
def token_memmap(tokens: int, folder: str | Path | None = None) -> Iterator[np.memmap]:
    """A read-only np.memmap of `tokens` uint16 token ids (0, 1, 2, ... wrapping at 65536) in a file named
    `cost-tokens.bin`, deleted afterwards. The file goes to /dev/shm where this process may write there (a tmpfs,
    mapped in 4 KiB pages like the grader's), else to `folder` (or the temporary folder)."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(folder or tempfile.gettempdir())
    try:
        where = Path(tempfile.mkdtemp(dir=base))
    except OSError:
        where = Path(tempfile.mkdtemp(dir=folder))
    path = where / "cost-tokens.bin"
    try:
        np.arange(tokens, dtype=np.uint16).tofile(path)
        data = np.memmap(path, dtype=np.uint16, mode="r")
        yield data
        del data
    finally:
        shutil.rmtree(where, ignore_errors=True)


def touch_bytes(path: str | Path) -> int:
    """Bytes of `path` that reading one element in its middle maps into this process (4 KiB on tmpfs; a whole large
    folio, up to 2 MiB, on file systems that cache files in large folios); 0 where /proc is missing."""
    try:
        before = file_resident_bytes(str(path))
        again = np.memmap(path, dtype=np.uint8, mode="r")
        int(again[len(again) // 2])
        touched = file_resident_bytes(str(path)) - before
        del again
        return max(touched, 0)
    except OSError:
        return 0


def file_budget(path: str | Path, budget: int, windows: int) -> int:
    """`budget` (bytes), or more where one touch of `path` maps more than the kernel's usual 64 KiB around a fault:
    at most two touches per window, each of `touch_bytes(path)` (said in a printed line)."""
    touch = touch_bytes(path)
    if touch <= 64 * 1024:
        return budget
    loosened = max(budget, 2 * windows * touch)
    print(f"(here one read maps {touch / MiB:,.1f} MiB of the file, so this check allows {loosened / MiB:,.1f} MiB; the "
          f"grader counts 4 KiB pages)")
    return loosened


def check_prediction(cost: Cost, predicted: int, tolerance: float, what: str, hint: str) -> None:
    """Print the measured peak beside `predicted` (bytes); AssertionError (with `hint`) when they differ by more than
    `tolerance` (a fraction of `predicted`), either way."""
    if cost.peak_bytes is None:
        print(f"{what}: peak memory is measured by the grader here (your prediction {predicted / MiB:,.1f} MiB)")
        return
    off = (cost.peak_bytes - predicted) / max(abs(predicted), 1)
    print(f"{what}: peak memory {cost.peak_bytes / MiB:,.1f} MiB; your prediction {predicted / MiB:,.1f} MiB "
          f"({off:+.1%}, within {tolerance:.0%} asked)")
    if abs(off) > tolerance:
        raise AssertionError(f"{what} raised this process's peak memory by {cost.peak_bytes / MiB:,.1f} MiB, "
                             f"{off:+.0%} from your prediction of {predicted / MiB:,.1f} MiB\nHint: {hint}")
