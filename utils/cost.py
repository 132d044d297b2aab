"""What a call of your code costs, measured by the kernel: new memory and bytes read from a file (issues #52, #60).

Three tasks of the course have a cost budget as well as a right answer: exercise 3's `sliding_windows` (a view costs
no memory, a copy hundreds of MiB), exercise 8's `get_batch` (a batch reads a few pages of the file, not all of it)
and exercise 9's `mlp_activation_bytes` (the forward pass of an MLP block must take the new memory the function
predicts, within 10%). When your work is graded, the grader measures its hidden tests' own calls from outside your
notebook's process with the kernel's counters (docs/security.md says how). The visible tests measure the same
quantities here, with your process measuring itself, so you see the cost against the budget before you hand in:

- new memory during the call: the larger of the rise of the kernel's resident high-water mark (`VmHWM` in
  /proc/self/status, reset to the resident size by writing 5 to /proc/self/clear_refs just before the call) and the
  memory of the pages the call faulted in (getrusage's page faults, 4 KiB each): memory freed during the call does
  not make room for a copy; bytes;
- bytes read from a file: the resident bytes of every mapping of the file after the call (/proc/self/smaps). (The
  grader counts the bytes the kernel reads from the disk for any read of the file, however it is read.)

Where this process may not reset its own high-water mark (inside the grader's sandbox), the page faults alone count
(the sandbox turns transparent huge pages off, so a page fault is one 4 KiB page).

The visible tests print only whether a cost is within its budget, never the measured figure (it differs from one
machine to the next): a cost over its budget fails with the figure.
"""
from __future__ import annotations

import atexit
import contextlib
import mmap
import os
import re
import shutil
import tempfile
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    import numpy as np

MiB = 2**20
PAGE = 4096  # bytes in one page fault where huge pages are off (the grader's sandbox)

# The budgets (the grader checks the same ones).
WINDOWS_LENGTH, WINDOWS_WIDTH = 2**16 + 1023, 1024     # sliding_windows(torch.empty(WINDOWS_LENGTH), WINDOWS_WIDTH)
WINDOWS_PEAK_BYTES = 16 * MiB                          # a view: ~0 bytes; a copy: 256 MiB
BATCH_FILE_TOKENS = 2**24                              # get_batch on a memmap of 2**24 uint16 tokens (32 MiB)
BATCH_SIZE, BATCH_CONTEXT = 8, 64                      # get_batch(data, 8, 64, "cpu", generator)
BATCH_FILE_BYTES = 2 * MiB                             # 8 windows of 65 tokens: a few pages each; a full read: 32 MiB
BATCH_FILE = "cost-tokens.bin"                         # the name of the file the grader lends the hidden test
MLP_SHAPE = (8, 256, 16, 4096)     # (batch, seq, dim, hidden) of exercise 9's measured MLP forward: its two hidden
                                   # activations are 32 MiB each, which malloc always maps afresh (its largest
                                   # threshold), so the kernel sees each one whole; a small dim keeps the matmuls quick
                                   # (a forward pass: 66 ms on one core, against 112 ms at dim 64)
MLP_TOLERANCE = 0.10                                   # its new memory must match mlp_activation_bytes within 10%

_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$")
GRADER_FILES = "CS336_GRADER_FILES"  # where the grader's sandbox says its lent files are (sandboxed/zygote.py)


@dataclass(frozen=True)
class Cost:
    """One call's measured cost: peak_bytes (new memory; None where nothing here can count it), file_bytes (bytes
    read from the named file; None where /proc is missing), seconds (wall clock)."""
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


def _page_faults() -> int:
    """Page faults this process has taken (all its threads), minor and major."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_minflt + usage.ru_majflt


def _huge_pages_off() -> bool:
    """True when this process's memory comes in 4 KiB pages only (the sandbox's prctl; THP_enabled: 0)."""
    try:
        return any(line.split() == ["THP_enabled:", "0"] for line in Path("/proc/self/status").read_text().splitlines())
    except OSError:
        return False


def file_resident_bytes(name: str, pid: int | str = "self") -> int:
    """Resident bytes of the mappings of files whose path ends with `name`, in process `pid` (this one by default)."""
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
    resettable, pages = _reset_peak(), _huge_pages_off()
    start_rss = _status_bytes("VmRSS")
    mapped = file_resident_bytes(file) if file else 0
    faults = _page_faults()
    started = time.perf_counter()
    value = call()
    seconds = time.perf_counter() - started
    new_pages = (_page_faults() - faults) * PAGE
    high_water = max(_status_bytes("VmHWM") - start_rss, 0) if resettable else None
    peak = max(high_water or 0, new_pages) if resettable or pages else None
    file_bytes = max(file_resident_bytes(file) - mapped, 0) if file else 0
    return value, Cost(peak, file_bytes, seconds)


def check_cost(cost: Cost, what: str, hint: str, peak_bytes: int | None = None, file_bytes: int | None = None) -> None:
    """Print whether the measured cost is within its budget (the figure only when it is not: it differs from one
    machine to the next); AssertionError (with `hint`) when it is over."""
    if peak_bytes is not None:
        if cost.peak_bytes is None:
            print(f"{what}: new memory is measured by the grader here (budget {peak_bytes / MiB:,.1f} MiB)")
        elif cost.peak_bytes > peak_bytes:
            raise AssertionError(f"{what} took {cost.peak_bytes / MiB:,.1f} MiB of new memory; the budget is "
                                 f"{peak_bytes / MiB:,.1f} MiB\nHint: {hint}")
        else:
            print(f"{what}: new memory within its budget of {peak_bytes / MiB:,.1f} MiB")
    if file_bytes is not None and cost.file_bytes is None:
        print(f"{what}: bytes read are measured by the grader here (budget {file_bytes / MiB:,.1f} MiB)")
    elif file_bytes is not None and cost.file_bytes is not None:
        if cost.file_bytes > file_bytes:
            raise AssertionError(f"{what} read {cost.file_bytes / MiB:,.2f} MiB of the file; the budget is "
                                 f"{file_bytes / MiB:,.1f} MiB\nHint: {hint}")
        print(f"{what}: bytes read from the file within their budget of {file_bytes / MiB:,.1f} MiB")


def check_prediction(cost: Cost, predicted: int, tolerance: float, what: str, hint: str) -> None:
    """Print whether the measured new memory is within `tolerance` (a fraction) of `predicted` (bytes), either way;
    AssertionError (with the figures and `hint`) when it is not."""
    if cost.peak_bytes is None:
        print(f"{what}: new memory is measured by the grader here (your prediction {predicted / MiB:,.1f} MiB)")
        return
    off = (cost.peak_bytes - predicted) / max(abs(predicted), 1)
    if abs(off) > tolerance:
        raise AssertionError(f"{what} took {cost.peak_bytes / MiB:,.1f} MiB of new memory, {off:+.0%} from your "
                             f"prediction of {predicted / MiB:,.1f} MiB\nHint: {hint}")
    print(f"{what}: new memory within {tolerance:.0%} of your prediction of {predicted / MiB:,.1f} MiB")


# ---- token files ------------------------------------------------------------------------------------------------
def token_bytes(tokens: int) -> bytes:
    """The bytes of a file of `tokens` uint16 token ids 0, 1, 2, ... wrapping at 65536, in this machine's byte order
    (numpy's uint16): what `token_memmap` writes, and the file the grader lends a budgeted hidden test."""
    block = array("H", range(65536)).tobytes()
    whole, rest = divmod(tokens, 65536)
    return block * whole + block[:2 * rest]


@contextlib.contextmanager
def token_memmap(tokens: int, folder: str | Path | None = None) -> Iterator[np.memmap]:
    """A read-only np.memmap of `tokens` uint16 token ids (the bytes of token_bytes) in a file named `cost-tokens.bin`, deleted
    afterwards. The file goes to /dev/shm where this process may write there (a tmpfs, mapped in 4 KiB pages), else to
    `folder` (or the temporary folder)."""
    import numpy as np
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(folder or tempfile.gettempdir())
    try:
        where = Path(tempfile.mkdtemp(dir=base))
    except OSError:
        where = Path(tempfile.mkdtemp(dir=folder))
    path = where / BATCH_FILE
    try:
        np.arange(tokens, dtype=np.uint16).tofile(path)  # token_bytes(tokens), without a copy of them in a bytes object
        data = np.memmap(path, dtype=np.uint16, mode="r")
        yield data
        del data
    finally:
        shutil.rmtree(where, ignore_errors=True)


_made: dict[tuple[str, int], Path] = {}


def grader_tokens(name: str, tokens: int) -> np.memmap:
    """A hidden test's memmap of the file of `tokens` uint16 tokens (token_bytes) named `name`: under the grader, the
    file it lends this notebook for a measured part (on a disk, its pages out of memory, so that the kernel counts
    every byte read from it, docs/security.md); elsewhere (an instructor's own run), one made here. Read at random
    (MADV_RANDOM): a page fault reads that page, not the device's read-ahead around it."""
    import numpy as np
    folder = os.environ.get(GRADER_FILES)
    if folder:
        path = Path(folder) / name
    else:
        path = _made.get((name, tokens)) or Path(tempfile.mkdtemp()) / name
        if not path.exists():
            path.write_bytes(token_bytes(tokens))
            _made[(name, tokens)] = path
            atexit.register(shutil.rmtree, path.parent, True)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    mapping = getattr(data, "_mmap", None)   # numpy's own mmap.mmap of the file (private: numpy's stubs omit it)
    if hasattr(mmap, "MADV_RANDOM") and isinstance(mapping, mmap.mmap):
        mapping.madvise(mmap.MADV_RANDOM)
    return data


def touch_bytes(path: str | Path) -> int:
    """Bytes of `path` that reading one element in its middle maps into this process (4 KiB on tmpfs; a whole large
    folio, up to 2 MiB, on file systems that cache files in large folios); 0 where /proc is missing."""
    import numpy as np
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
