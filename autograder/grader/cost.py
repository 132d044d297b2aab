"""Runs in the grader: what one call of the student's code costs, measured by the kernel from outside the notebook
process (issue #52), and the verdict against the instructor's budget (reference/hidden.py, CostBudget).

What is measured, and how (all read by the grader from /proc/<pid>/..., never from anything the notebook says):
- peak memory above the call's baseline: `VmHWM` (the kernel's resident high-water mark of the process's memory,
  all threads) after writing 5 to `clear_refs` (which resets it to the resident size then); bytes. Freeing memory
  afterwards (in a signal handler or anywhere) cannot lower a high-water mark, and the notebook cannot reset it
  itself: Landlock gives it no write access to /proc.
- bytes read from a named file: the resident pages of every mapping of that file at the end of the call (`smaps`,
  `Rss`), plus the bytes the process read through system calls (`/proc/<pid>/io` `rchar`, less the grader's own
  request). A mapping made and dropped inside the call leaves no `Rss`, but each of its pages was a page fault:
  faults (`/proc/<pid>/stat` minflt + majflt) past the budget's allowance fail the call too.
- CPU seconds: utime + stime of `/proc/<pid>/stat` (all threads), in clock ticks.
- work done elsewhere: a child process's memory and faults are not the notebook's. A child alive or a zombie at the
  end (the process's `children`), a child reaped during the call (its faults and CPU time land in the notebook's
  cminflt, cutime: a forked Python process always faults), or SIGCHLD ignored (`SigIgn`: children then vanish
  unaccounted) each refuse the measurement: the call fails its budget and the notebook is flagged for a person.

The notebook's working folder is a tmpfs, so the file's pages are always in memory and `mincore` on the file cannot
tell a read page from an unread one; the process's own mappings and counters can.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import cgroups
from autograder.outcome import CellKind, Failure
from autograder.protocol import CostBudget

if TYPE_CHECKING:  # notebooks.py imports this module
    from autograder.grader.notebooks import NotebookProcess
    from autograder.grader.plan import Cell, CellRun

PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")
SIGCHLD_BIT = 1 << (17 - 1)  # SIGCHLD is 17 on x86-64 and arm64
PREDICTION = "__cost_prediction__"  # the line a budget's prepare cell prints with the student's prediction


@dataclass(frozen=True)
class Counters:
    """One reading of the notebook process's counters. Bytes, clock ticks and counts."""
    rss_bytes: int
    hwm_bytes: int
    faults: int
    child_faults_and_ticks: int
    ticks: int
    read_bytes: int
    sigchld_ignored: bool


@dataclass(frozen=True)
class Measured:
    """What one call cost: peak memory above its baseline and bytes read from the budget's file (bytes), page faults,
    CPU seconds; `elsewhere`: why the call did work outside the process (empty when it did none)."""
    peak_bytes: int
    file_bytes: int
    faults: int
    cpu_seconds: float
    elsewhere: tuple[str, ...] = ()
    predicted_bytes: int | None = None  # the student's own prediction of peak_bytes, where the budget asks for one

    def as_dict(self) -> dict:
        return {**asdict(self), "elsewhere": list(self.elsewhere)}


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)


def read_counters(pid: int) -> Counters:
    """The counters of process `pid` now (OSError if it is gone)."""
    status = _status(pid)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    minflt, cminflt, majflt, cmajflt = (int(fields[i]) for i in (7, 8, 9, 10))
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return Counters(rss_bytes=int(status["VmRSS"].split()[0]) * 1024, hwm_bytes=int(status["VmHWM"].split()[0]) * 1024,
                    faults=minflt + majflt, child_faults_and_ticks=cminflt + cmajflt + cutime + cstime,
                    ticks=utime + stime, read_bytes=int(io["rchar"]),
                    sigchld_ignored=bool(int(status["SigIgn"].strip(), 16) & SIGCHLD_BIT))


def reset_peak(pid: int) -> None:
    """Set the process's memory high-water mark (VmHWM) to its resident size now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def file_resident_bytes(pid: int, name: str) -> int:
    """Bytes of every mapping of a file whose path ends with `name` that are in the process's page tables now (the
    students' own parser of /proc/<pid>/smaps, utils.cost, read from outside; imported here, not at start-up, where
    numpy would cost every worker)."""
    from utils.cost import file_resident_bytes as resident
    return resident(name, pid)


def children(pid: int) -> list[int]:
    """Every descendant of `pid` that exists now, zombies included."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                kids = [int(k) for k in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


class Meter:
    """Measures one call in process `pid`: `start()` before the grader sends the cell, `stop()` after its reply."""

    def __init__(self, pid: int, file_name: str = "", request_bytes: int = 0):
        self.pid, self.file_name, self.request_bytes = pid, file_name, request_bytes
        self.before: Counters | None = None
        self.file_before = 0

    def start(self) -> None:
        reset_peak(self.pid)
        self.file_before = file_resident_bytes(self.pid, self.file_name)
        self.before = read_counters(self.pid)

    def stop(self) -> Measured:
        assert self.before is not None, "Meter.stop before start"
        after, before = read_counters(self.pid), self.before
        elsewhere = []
        kids = children(self.pid)
        if kids:
            elsewhere.append(f"{len(kids)} child process(es) still there after the call")
        if after.child_faults_and_ticks != before.child_faults_and_ticks:
            elsewhere.append("a child process ran and was waited for during the call")
        if after.sigchld_ignored:
            elsewhere.append("SIGCHLD is ignored (children would vanish unaccounted)")
        mapped = max(file_resident_bytes(self.pid, self.file_name) - self.file_before, 0)
        read = max(after.read_bytes - before.read_bytes - self.request_bytes, 0)
        return Measured(peak_bytes=max(after.hwm_bytes - before.rss_bytes, 0),
                        file_bytes=mapped + read if self.file_name else 0,
                        faults=after.faults - before.faults, cpu_seconds=(after.ticks - before.ticks) / TICKS,
                        elsewhere=tuple(elsewhere))


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def bar(value: float, high: float, low: float | None = None, width: int = 40) -> str:
    """A one-line picture of `value` against its allowed range: '#' up to the value, '|' at the budget `high` (and at
    `low`, where the value must also stay above one), '.' for the rest of the scale (0 to the larger of both)."""
    scale = max(value, high, 1e-9)
    cells = ["#" if (i + 0.5) * scale / width <= value else "." for i in range(width)]
    for limit in (high, low):
        if limit is not None:
            cells[min(int(limit / scale * width), width - 1)] = "|"
    return "    [" + "".join(cells) + "]"


def describe(budget: CostBudget, measured: Measured) -> str:
    """Per budgeted quantity, the measured cost beside the budget and a bar of the two (shown to the student)."""
    lines = [f"Measured by the grader (the kernel's counters of your notebook process) for {budget.what} "
             f"(in each bar, # is what was measured, | the limits):"]
    if budget.peak_bytes is not None:
        lines.append(f"  peak memory above the call's start: {mib(measured.peak_bytes)} (budget {mib(budget.peak_bytes)})")
        lines.append(bar(measured.peak_bytes, budget.peak_bytes))
    if budget.predicted and measured.predicted_bytes is not None:
        lines.append(f"  peak memory above the call's start: {mib(measured.peak_bytes)} (your prediction "
                     f"{mib(measured.predicted_bytes)}, which it must match within {budget.tolerance:.0%})")
        lines.append(bar(measured.peak_bytes, measured.predicted_bytes * (1 + budget.tolerance),
                         measured.predicted_bytes * (1 - budget.tolerance)))
    if budget.file_bytes is not None:
        lines.append(f"  bytes read from {budget.file}: {mib(measured.file_bytes)} (budget {mib(budget.file_bytes)}); "
                     f"page faults {measured.faults:,} (budget {budget.faults:,})")
        lines.append(bar(measured.file_bytes, budget.file_bytes))
    if budget.cpu_seconds is not None:
        lines.append(f"  CPU time: {measured.cpu_seconds:.2f} s (budget {budget.cpu_seconds:g} s)")
    return "\n".join(lines)


def verdict(budget: CostBudget, measured: Measured) -> str:
    """'' when `measured` is within `budget`, else the failure message (with the budget's hint)."""
    if measured.elsewhere:
        return (f"{budget.what} did work outside the notebook process ({'; '.join(measured.elsewhere)}): its cost "
                f"cannot be measured, so it does not meet its budget; your instructor will look.\n"
                f"Hint: do the work in the call itself, without starting processes.")
    over = []
    if budget.peak_bytes is not None and measured.peak_bytes > budget.peak_bytes:
        over.append(f"its peak memory was {mib(measured.peak_bytes)}, over the budget of {mib(budget.peak_bytes)}")
    if budget.file_bytes is not None and measured.file_bytes > budget.file_bytes:
        over.append(f"it read {mib(measured.file_bytes)} of {budget.file}, over the budget of {mib(budget.file_bytes)}")
    if budget.file_bytes is not None and measured.faults > budget.faults:
        over.append(f"it took {measured.faults:,} page faults, over the budget of {budget.faults:,} (a mapping "
                    f"read and dropped within the call still faults once per page it maps)")
    if budget.predicted and measured.predicted_bytes is not None and \
            abs(measured.peak_bytes - measured.predicted_bytes) > budget.tolerance * abs(measured.predicted_bytes):
        off = (measured.peak_bytes - measured.predicted_bytes) / max(abs(measured.predicted_bytes), 1)
        over.append(f"its peak memory was {mib(measured.peak_bytes)}, {off:+.0%} from your prediction of "
                    f"{mib(measured.predicted_bytes)} (within {budget.tolerance:.0%} was asked)")
    if budget.cpu_seconds is not None and measured.cpu_seconds > budget.cpu_seconds:
        over.append(f"it used {measured.cpu_seconds:.2f} s of CPU, over the budget of {budget.cpu_seconds:g} s")
    if not over:
        return ""
    return f"{budget.what}: {'; '.join(over)}.\nHint: {budget.hint}"


def budgets_of(cell: Cell, budgets: dict[str, list[CostBudget]]) -> list[CostBudget]:
    """The cost budgets that follow a test cell, by its hidden tests' keys; `budgets`: the run's, from the trusted
    checker (the grader never imports `reference`)."""
    if cell.kind is not CellKind.TEST:
        return []
    return [budget for key in cell.hidden_keys for budget in budgets.get(key, [])]


def measure_call(process: NotebookProcess, budget: CostBudget) -> tuple[Measured | None, str]:
    """Prepare the inputs of `budget` in `process` (a NotebookProcess), then run its call measured from outside:
    (what it cost, '') or (None or what it cost, why the measurement failed). Raises Died as `process.run` does."""
    from autograder.protocol import CellRequest
    prepare = budget.prepare + (f"\nprint({PREDICTION!r}, int({budget.predicted}))" if budget.predicted else "")
    prepared = process.run(CellKind.TEST, prepare, budget.seconds)
    if not prepared.ok:  # the notebook's state broke the inputs' making (a full disk, a rebound name)
        return None, f"the grader could not make the inputs of {budget.what} to measure its cost: {prepared.error}"
    assert process.pidfd is not None, "a notebook process that has just run a cell holds its pidfd"
    pid = cgroups.pid_of(process.pidfd)
    if pid is None:
        raise OSError("no Pid in the pidfd's fdinfo")
    meter = Meter(pid, budget.file, len(CellRequest("0" * 16, CellKind.TEST, budget.call, {}).to_line()))
    meter.start()  # OSError where the grader may not read the process's /proc: run_budgets says so, never the student
    called = process.run(CellKind.TEST, budget.call, budget.seconds)
    measured = meter.stop()
    if not called.ok:
        return measured, f"{budget.what} failed when the grader measured its cost: {called.error}"
    if budget.predicted:
        measured = dataclasses.replace(measured, predicted_bytes=prediction(prepared.output))
        if measured.predicted_bytes is None:
            return measured, f"your prediction for {budget.what} could not be read: it is no int"
    return measured, ""


def run_budgets(process: NotebookProcess, cell: Cell, result: CellRun, budgets: dict[str, list[CostBudget]]) -> CellRun:
    """After a passed test cell: run each of its budgets' calls in `process` (a NotebookProcess), measured from
    outside; `result` with what was measured (`costs`), its output gaining the measured cost beside the budget, and
    failed with the verdict when one is over. Raises Died (notebooks.py) as `run` does."""
    if not result.ok:
        return result
    for budget in budgets_of(cell, budgets):
        try:
            measured, failure = measure_call(process, budget)
        except OSError as error:  # the grader's own limit (a /proc it may not read), never the student's fault
            result = _with_cost(result, {"what": budget.what, "unmeasured": str(error), "ok": True},
                                f"(the grader could not measure {budget.what} here)")
            continue
        if measured is not None:
            failure = failure or verdict(budget, measured)
            result = _with_cost(result, {"what": budget.what, **measured.as_dict(), "ok": not failure,
                                         "budget": {k: getattr(budget, k) for k in ("peak_bytes", "file", "file_bytes",
                                                                                    "faults", "cpu_seconds", "tolerance")}},
                                describe(budget, measured))
        if failure:
            return result.failing(f"AssertionError: {failure}", Failure.ERROR)
    return result


def _with_cost(result: CellRun, measured: dict, line: str) -> CellRun:
    """`result` with one more measured cost, and its line added to what the cell printed."""
    return dataclasses.replace(result, costs=(*(result.costs or ()), measured), output=result.output + line + "\n")


def prediction(output: str) -> int | None:
    """The prediction the prepare cell printed last (`PREDICTION <int>`), or None."""
    found = [line.split()[1] for line in output.splitlines() if line.startswith(PREDICTION + " ")
             and len(line.split()) == 2]
    return int(found[-1]) if found and re.fullmatch(r"-?\d{1,30}", found[-1]) else None


def flags(results: list[CellRun]) -> list[str]:
    """A flag for a person per measured call that did work outside the notebook process, or that the grader could not
    measure."""
    return [f"cost: {cost['what']} did work outside the notebook process ({'; '.join(cost['elsewhere'])})"
            for result in results for cost in result.costs or () if cost.get("elsewhere")] + \
        [f"cost: the grader could not measure {cost['what']} ({cost['unmeasured']}): a person checks its budget"
         for result in results for cost in result.costs or () if cost.get("unmeasured")]
