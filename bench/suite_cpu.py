"""All the CPU a command uses, by program: every process it starts, the daemons it leaves to init included.

    sudo .venv/bin/python -m bench.suite_cpu [--top 25] -- make test

`/usr/bin/time` counts only the processes its command waits for: a daemon (JupyterHub's servers, PostgreSQL, Slurm's
step daemons, Chromium's helpers) is re-parented to init and never counted. The kernel's process accounting (acct(2),
root only) writes one record per process that ends, whatever its parent; this runs the command with it on, then
prints the command's wall time, the CPU of every process that ended meanwhile (user + system seconds), by program name,
and the whole machine's busy CPU over the same interval (/proc/stat) for comparison. A program name ending in `*`
counts forks that never called exec (a forked worker, a notebook process forked from the grader's zygote).
Processes that ended during the run are counted whoever started them, so run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h): 64 bytes per process
TICKS_PER_SECOND = 100                       # AHZ: the unit of the record's times
FORKED_WITHOUT_EXEC = 0x01                   # AFORK


def comp_t(value: int) -> int:
    """acct's 16-bit float: a 13-bit mantissa and a 3-bit exponent of 8."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def read_records(path: Path) -> list[tuple[str, float]]:
    """(program name, CPU seconds) of every process recorded in the accounting file `path`."""
    data = path.read_bytes()
    records = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        flag, version, *_, utime, stime, _mem, _io, _rw, _minflt, _majflt, _swaps, comm = RECORD.unpack_from(data, offset)
        if version & 0x0F != 3:
            raise ValueError(f"{path}: record {offset // RECORD.size} is acct version {version & 0x0F}, not 3")
        name = comm.split(b"\0", 1)[0].decode(errors="replace") + ("*" if flag & FORKED_WITHOUT_EXEC else "")
        records.append((name, (comp_t(utime) + comp_t(stime)) / TICKS_PER_SECOND))
    return records


def busy_seconds() -> float:
    """CPU seconds the machine has spent busy since boot (user, nice, system, irq, softirq), all cores."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def accounting(path: str | None) -> None:
    """Turn the kernel's process accounting on into `path`, or off with None (acct(2))."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path.encode() if path else None) != 0:
        raise OSError(ctypes.get_errno(), f"acct({path}) failed: process accounting needs root and a kernel with "
                                          "CONFIG_BSD_PROCESS_ACCT")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=25, help="programs to list (default 25)")
    parser.add_argument("command", nargs="+", help="the command to measure, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as scratch:
        records = Path(scratch) / "pacct"
        records.touch(mode=0o600)
        accounting(str(records))
        busy, started = busy_seconds(), time.monotonic()
        try:
            status = subprocess.run(args.command).returncode
        finally:
            accounting(None)
        wall, machine = time.monotonic() - started, busy_seconds() - busy
        by_program: dict[str, float] = collections.defaultdict(float)   # CPU-s (a Counter counts ints)
        count: collections.Counter[str] = collections.Counter()
        for name, seconds in read_records(records):
            by_program[name] += seconds
            count[name] += 1
    total = sum(by_program.values())
    print(f"\n{' '.join(args.command)}: exit status {status}, {wall:.0f} s wall, {os.cpu_count()} cores")
    print(f"CPU of the processes that ended: {total:.0f} s; the machine busy: {machine:.0f} s "
          f"({machine / wall:.2f} cores on average)")
    print(f"{'CPU s':>8} {'share':>6} {'processes':>9}  program")
    for name, seconds in sorted(by_program.items(), key=lambda item: item[1], reverse=True)[:args.top]:
        print(f"{seconds:8.1f} {seconds / total:6.1%} {count[name]:9}  {name}")
    sys.exit(status)


if __name__ == "__main__":
    main()
