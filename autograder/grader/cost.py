"""Runs in the grader: what a budgeted task's hidden calls cost, measured by the kernel from outside the notebook
process (issues #52, #60), and the verdict against the instructor's budget (reference/hidden.py, CostBudget).

What is measured is what is checked: a budgeted test cell's hidden tests hold a part between `### BEGIN MEASURED` and
`### END MEASURED` (plan.Cell.parts) that calls the student's function on every hidden case, the ones sized so that
the budget means something among them, and keeps the results, which the next part hands in to the checker. The
grader runs the cell as three requests (the visible tests and the hidden inputs; the measured part; the hand-in) and
reads the notebook process's counters in /proc/<pid>/ just before it sends the measured part and just after its
reply (never anything the notebook says):

- new memory: the larger of two figures, bytes. The rise of `VmHWM` (the kernel's resident high-water mark, all
  threads; reset to the resident size by writing 5 to `clear_refs` before the part) above the resident size at the
  part's start; and the pages the process faulted in during the part (`minflt` + `majflt` of `stat`), 4 KiB each
  (the sandbox turns transparent huge pages off, walls.no_huge_pages; a notebook that turns them back on, or maps
  hugetlbfs pages, is not measured). Memory freed during the part does not lower the second figure: a balloon freed
  to make room for a copy leaves the copy's pages counted.
- bytes read from the budget's file: `read_bytes` of /proc/<pid>/io (what the kernel read from storage for the
  process, every thread) during the part, the file lent on a disk with its pages out of the page cache
  (budget_files.py), so that every way of reading it is counted once it reaches the disk.
- CPU seconds: utime + stime of `stat` (all threads), in clock ticks.
- what cannot be measured, which refuses the measurement (the budget fails, and the notebook is flagged for a
  person): work done in a child process (a child alive or a zombie at the end, one reaped during the part: its
  faults and CPU time land in cminflt, cutime; SIGCHLD ignored); transparent huge pages turned back on (THP_enabled)
  or hugetlbfs pages held; a hidden test whose memmap is not of the file the grader lent; a reply to the measured part
  that came before its calls had ended (the notebook's main thread must be waiting for the grader's next request).
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from autograder import cgroups
from autograder.grader.budget_files import Lent
from autograder.grader.plan import Cell, CellRun, Part
from autograder.outcome import CellKind, CostLimits, CostRecord, Failure, Measured
from autograder.protocol import CostBudget

PAGE = os.sysconf("SC_PAGE_SIZE")  # bytes in one page fault (huge pages off: walls.no_huge_pages)
TICKS = os.sysconf("SC_CLK_TCK")
SIGCHLD_BIT = 1 << (17 - 1)  # SIGCHLD is 17 on x86-64 and arm64
READ_SYSCALL = {"x86_64": 0, "aarch64": 63}.get(platform.machine())  # read(2)'s number, for /proc/<pid>/syscall
SETTLE_SECONDS = 10.0  # how long the notebook may take from writing its reply to waiting for the next request


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
    huge_pages: bool       # transparent huge pages are on for the process (THP_enabled: 1)
    hugetlb_bytes: int     # hugetlbfs pages it holds (HugetlbPages)


class NotebookProcess(Protocol):
    """What this module uses of a notebook process: grader/notebooks.py's NotebookProcess, whose module imports this
    one (a Protocol, so that this module imports nothing of it)."""
    pidfd: int | None
    request_w: int        # the grader's end of the notebook's request pipe
    given_back: float     # seconds of wall time given back for waiting on a CPU

    def run(self, kind: CellKind, code: str, seconds: float, cases: dict[str, str] | None = None,
            watch: list[str] | None = None) -> CellRun: ...

    def lend(self, name: str, tokens: int) -> tuple[Lent | None, str]: ...

    def take_back(self, lent: Lent) -> None: ...


def _status(pid: int) -> dict[str, str]:
    return dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)


def _kib(status: dict[str, str], field: str) -> int:
    return int(status.get(field, "0 kB").split()[0]) * 1024


def read_counters(pid: int) -> Counters:
    """The counters of process `pid` now (OSError if it is gone)."""
    status = _status(pid)
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    minflt, cminflt, majflt, cmajflt = (int(fields[i]) for i in (7, 8, 9, 10))
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return Counters(rss_bytes=_kib(status, "VmRSS"), hwm_bytes=_kib(status, "VmHWM"), faults=minflt + majflt,
                    child_faults_and_ticks=cminflt + cmajflt + cutime + cstime, ticks=utime + stime,
                    read_bytes=int(io["read_bytes"]),
                    sigchld_ignored=bool(int(status["SigIgn"].strip(), 16) & SIGCHLD_BIT),
                    huge_pages=status.get("THP_enabled", "0").strip() != "0", hugetlb_bytes=_kib(status, "HugetlbPages"))


def reset_peak(pid: int) -> None:
    """Set the process's memory high-water mark (VmHWM) to its resident size now."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


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


def maps_file(pid: int, lent: Lent) -> bool:
    """True when process `pid` maps the lent file now: a mapping of its path, or of its device and inode."""
    major, minor = os.major(lent.device), os.minor(lent.device)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6:
            continue
        device, inode, path = fields[3], fields[4], fields[5].removesuffix(" (deleted)")
        if path == str(lent.link) or (inode == str(lent.inode) and device == f"{major:02x}:{minor:02x}"):
            return True
    return False


def waiting_for_request(process: NotebookProcess, pid: int, seconds: float = SETTLE_SECONDS) -> bool:
    """True once the notebook's main thread is blocked reading the grader's request pipe, as the notebook's loop is
    after it has written a reply; False when it is still busy after `seconds` (a reply written before the measured
    part ended). True where this machine's read(2) number is unknown here (no check)."""
    if READ_SYSCALL is None:
        return True
    pipe = f"pipe:[{os.fstat(process.request_w).st_ino}]"
    ends = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == pipe:
                ends.add(int(fd))
        except OSError:
            continue
    deadline, pause = time.monotonic() + seconds, 0.0005
    while True:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        if len(call) >= 2 and call[0] == str(READ_SYSCALL) and int(call[1], 16) in ends:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class Meter:
    """Measures one part run in process `pid`: `start()` before the grader sends it, `stop()` after its reply."""

    def __init__(self, pid: int):
        self.pid = pid
        self.before: Counters | None = None

    def start(self) -> None:
        reset_peak(self.pid)
        self.before = read_counters(self.pid)

    def stop(self, lent: Lent | None = None) -> Measured:
        assert self.before is not None, "Meter.stop before start"
        after, before = read_counters(self.pid), self.before
        elsewhere = []
        kids = children(self.pid)
        if kids:
            elsewhere.append(f"{len(kids)} child process(es) still there after the calls")
        if after.child_faults_and_ticks != before.child_faults_and_ticks:
            elsewhere.append("a child process ran and was waited for during the calls")
        if after.sigchld_ignored:
            elsewhere.append("SIGCHLD is ignored (children would vanish unaccounted)")
        if after.huge_pages:
            elsewhere.append("transparent huge pages were turned back on (a page fault is no longer one 4 KiB page)")
        if after.hugetlb_bytes:
            elsewhere.append(f"it holds {after.hugetlb_bytes:,} bytes of hugetlbfs pages (not counted as resident)")
        if lent is not None and not maps_file(self.pid, lent):
            elsewhere.append("the hidden test's data was not the file the grader lent it (its path was changed)")
        high_water = max(after.hwm_bytes - before.rss_bytes, 0)
        new_pages = (after.faults - before.faults) * PAGE
        return Measured(peak_bytes=max(high_water, new_pages), high_water_bytes=high_water, new_page_bytes=new_pages,
                        file_bytes=max(after.read_bytes - before.read_bytes, 0), faults=after.faults - before.faults,
                        cpu_seconds=(after.ticks - before.ticks) / TICKS, elsewhere=tuple(elsewhere))


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
    lines = [f"Measured by the grader (the kernel's counters of your notebook process, during the hidden tests' calls) "
             f"for {budget.what} (in each bar, # is what was measured, | the limits):"]
    if budget.peak_bytes is not None:
        lines.append(f"  new memory: {mib(measured.peak_bytes)} (budget {mib(budget.peak_bytes)})")
        lines.append(bar(measured.peak_bytes, budget.peak_bytes))
    if budget.predicted_case is not None and measured.predicted_bytes is not None:
        lines.append(f"  new memory: {mib(measured.peak_bytes)} (your prediction {mib(measured.predicted_bytes)}, which "
                     f"it must match within {budget.tolerance:.0%})")
        lines.append(bar(measured.peak_bytes, measured.predicted_bytes * (1 + budget.tolerance),
                         measured.predicted_bytes * (1 - budget.tolerance)))
    if budget.file_bytes is not None:
        lines.append(f"  bytes read from storage (the file {budget.file}): {mib(measured.file_bytes)} "
                     f"(budget {mib(budget.file_bytes)})")
        lines.append(bar(measured.file_bytes, budget.file_bytes))
    if budget.cpu_seconds is not None:
        lines.append(f"  CPU time: {measured.cpu_seconds:.2f} s (budget {budget.cpu_seconds:g} s)")
    return "\n".join(lines)


def verdict(budget: CostBudget, measured: Measured) -> str:
    """'' when `measured` is within `budget`, else the failure message (with the budget's hint)."""
    if measured.elsewhere:
        return (f"{budget.what}: the cost of its calls cannot be measured ({'; '.join(measured.elsewhere)}), so they "
                f"do not meet their budget; your instructor will look.\n"
                f"Hint: do the work in the call itself, without starting processes or changing how memory is paged.")
    over = []
    if budget.peak_bytes is not None and measured.peak_bytes > budget.peak_bytes:
        over.append(f"they took {mib(measured.peak_bytes)} of new memory, over the budget of {mib(budget.peak_bytes)}")
    if budget.file_bytes is not None and measured.file_bytes > budget.file_bytes:
        over.append(f"they read {mib(measured.file_bytes)} of {budget.file}, over the budget of {mib(budget.file_bytes)}")
    if budget.predicted_case is not None:
        predicted = measured.predicted_bytes
        if predicted is None:
            over.append("your prediction of their new memory could not be read (it is no int)")
        elif abs(measured.peak_bytes - predicted) > budget.tolerance * abs(predicted):
            off = (measured.peak_bytes - predicted) / max(abs(predicted), 1)
            over.append(f"they took {mib(measured.peak_bytes)} of new memory, {off:+.0%} from your prediction of "
                        f"{mib(predicted)} (within {budget.tolerance:.0%} was asked)")
    if budget.cpu_seconds is not None and measured.cpu_seconds > budget.cpu_seconds:
        over.append(f"they used {measured.cpu_seconds:.2f} s of CPU, over the budget of {budget.cpu_seconds:g} s")
    if not over:
        return ""
    return f"{budget.what}: {'; '.join(over)}.\nHint: {budget.hint}"


def budgets_of(cell: Cell, budgets: dict[str, list[CostBudget]]) -> list[CostBudget]:
    """The cost budgets of a test cell, by its hidden tests' keys; `budgets`: the run's, from the trusted checker (the
    grader never imports `reference`)."""
    if cell.kind is not CellKind.TEST:
        return []
    return [budget for key in cell.hidden_keys for budget in budgets.get(key, [])]


def prediction(handed: str | None, case: int) -> int | None:
    """The int the student's function returned for hidden case number `case`, read from what the hidden test handed
    in (utils.handin's JSON of a list, whose ints are plain JSON ints); None when it is anything else. The checker
    checks the same result against the reference."""
    try:
        results = json.loads(handed) if handed is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(results, list) or not 0 <= case < len(results) or type(results[case]) is not int:
        return None
    return results[case]


def run_measured(process: NotebookProcess, cell: Cell, budgets: list[CostBudget], seconds: float,
                 cases: dict[str, str], watch: list[str] | None = None) -> CellRun:
    """Run a budgeted test cell in `process` as its three parts, the second measured from outside (module docstring),
    within `seconds` for the whole cell, each part under the task rule's `watch` (grader/rules.py); the cell's result, with what was measured (`costs`), the measured cost
    beside each budget added to its output, and failed with the verdict when one is over. Raises Died as
    `process.run` does; GraderFault when a lent file cannot be written."""
    parts = cell.parts()
    if parts is None:  # the course's mistake (tests/test_hidden_tests.py): nothing measured, a person looks
        result = process.run(CellKind.TEST, cell.code, seconds, cases, watch)
        for budget in budgets:
            result = _with_cost(result, CostRecord(budget.what, True, unmeasured="its test cell has no measured part"),
                                f"(the grader could not measure {budget.what} here)")
        return result
    started, given = time.monotonic(), process.given_back

    def left() -> float:
        return max(seconds - (time.monotonic() - started) + (process.given_back - given), 0.01)
    before, measured_part, after = parts
    runs = [(process.run(CellKind.TEST, before.code, left(), cases, watch), before)]
    if not runs[0][0].ok:
        return merge(runs)
    measured, unmeasured = _measure(process, budgets, measured_part, left, cases, watch, runs)
    if runs[-1][0].ok:
        runs.append((process.run(CellKind.TEST, after.code, left(), cases, watch), after))
    result = merge(runs)
    return apply_budgets(result, budgets, measured, unmeasured)


def _measure(process: NotebookProcess, budgets: list[CostBudget], part: Part, left: Callable[[], float],
             cases: dict[str, str], watch: list[str] | None, runs: list) -> tuple[Measured | None, str]:
    """Run the measured `part` (appended to `runs`); (what it cost, '') or (None, why it could not be measured)."""
    assert process.pidfd is not None, "a notebook process that has just run a cell holds its pidfd"
    pid = cgroups.pid_of(process.pidfd)
    filed = next((budget for budget in budgets if budget.file), None)
    lent, unmeasured = None, ""
    try:
        if filed is not None:
            lent, unmeasured = process.lend(filed.file, filed.file_tokens)
        meter = Meter(pid) if pid is not None else None
        if meter is not None:
            meter.start()
    except OSError as error:  # the grader may not read the process's /proc here: the grader's limit, a person looks
        meter, unmeasured = None, unmeasured or str(error)
    try:
        runs.append((process.run(CellKind.TEST, part.code, left(), cases, watch), part))
        if meter is None or pid is None:
            return None, unmeasured or "the notebook process's id is unknown"
        settled = waiting_for_request(process, pid)
        measured = meter.stop(lent)
    except OSError as error:
        return None, unmeasured or str(error)
    finally:
        if lent is not None:
            process.take_back(lent)
    if not settled:
        measured = dataclasses.replace(measured, elsewhere=measured.elsewhere + (
            "the notebook answered before the measured calls had ended (its main thread was still busy)",))
    return measured, unmeasured


def apply_budgets(result: CellRun, budgets: list[CostBudget], measured: Measured | None, unmeasured: str) -> CellRun:
    """`result` with each budget's measurement and verdict: failed with the first verdict over its budget."""
    failure = ""
    for budget in budgets:
        if measured is None or (unmeasured and budget.file):
            why = unmeasured or "the measured part did not run"
            if result.ok:
                result = _with_cost(result, CostRecord(budget.what, True, unmeasured=why),
                                    f"(the grader could not measure {budget.what} here)")
            continue
        own = measured
        if budget.predicted_case is not None:
            own = dataclasses.replace(measured, predicted_bytes=prediction(result.handed.get(budget.key),
                                                                           budget.predicted_case))
        said = verdict(budget, own) if result.ok else ""
        result = _with_cost(result, CostRecord(budget.what, not said, own, budget=CostLimits.of(budget)),
                            describe(budget, own) if result.ok else "")
        failure = failure or said
    if failure:
        return result.failing(f"AssertionError: {failure}", Failure.ERROR, ename="AssertionError")
    return result


def merge(runs: list[tuple[CellRun, Part]]) -> CellRun:
    """One cell's result from its parts' (each with the part it ran): every output in order, the first failure with
    its line counted in the whole cell, what each restored or found tampered with, what each handed in, what the watch
    saw each run."""
    failed = next(((run, part) for run, part in runs if not run.ok), None)
    merged = CellRun(ok=failed is None, output="".join(run.output for run, _ in runs),
                     restored=tuple(dict.fromkeys(name for run, _ in runs for name in run.restored)),
                     tampered=tuple(dict.fromkeys(name for run, _ in runs for name in run.tampered)),
                     handed={key: text for run, _ in runs for key, text in run.handed.items()},
                     ran=tuple(dict.fromkeys(seen for run, _ in runs for seen in run.ran)))
    if failed is not None:
        run, part = failed
        line = None if run.line is None else run.line + part.first_line - 1
        merged = dataclasses.replace(merged, error=run.error, line=line, failure=run.failure, ename=run.ename)
    return merged


def _with_cost(result: CellRun, record: CostRecord, line: str) -> CellRun:
    """`result` with one more measured cost, and its line added to what the cell printed."""
    return dataclasses.replace(result, costs=(*(result.costs or ()), record),
                               output=result.output + (line + "\n" if line else ""))


def flags(results: list[CellRun]) -> list[str]:
    """A flag for a person per measured part whose cost could not be measured: work outside the notebook process or
    the kernel's counting, or the grader's own limit."""
    records = [record for result in results for record in result.costs or ()]
    return [f"cost: {record.what} could not be measured ({'; '.join(record.measured.elsewhere)})"
            for record in records if record.measured is not None and record.measured.elsewhere] + \
        [f"cost: the grader could not measure {record.what} ({record.unmeasured}): a person checks its budget"
         for record in records if record.unmeasured]

