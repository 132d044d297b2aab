"""What `make test` cost: its own time (set-up and tests), the ten slowest tests, the ten test files that cost the most
CPU, and how busy the machine was.

    python3 scripts/test_times.py --start test-artifacts/timings     at the start: the time and the machine's CPU so far
    python3 scripts/test_times.py test-artifacts/timings             at the end: the report

Printed at the end of every `make test`, so that the next change sees what it costs (the whole suite must stay within
12 minutes, BUDGET_MINUTES, from a fresh clone on 2 cores). A test's time includes its share of fixtures set up for
it. On the 2-core machine both cores are busy the whole run, so the CPU a test costs matters more than its wall time
(a test that sleeps lets the other worker run): each part's pytest writes every test file's CPU (tests/cpu_cost.py),
and 12 minutes on 2 cores is 1,440 CPU seconds for everything, set-up included.
"""
from __future__ import annotations

import collections
import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.suite_cpu import busy_seconds  # the repository's root is on the path only from here

BUDGET_MINUTES = 12  # the developers' guide: the whole test command, from a fresh clone on 2 cores


def slowest(folder: Path, count: int = 10) -> list[tuple[float, str]]:
    """(seconds, part: file::test) of the `count` slowest test cases in the folder's JUnit files."""
    found = []
    for path in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            continue
        for case in root.iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}".replace(".", "/", case.get("classname", "").count("."))
            found.append((float(case.get("time", 0) or 0), f"{path.stem}: {name}"))
    return sorted(found, reverse=True)[:count]


def cpu_by_file(folder: Path) -> dict[str, float]:
    """{"part: file": CPU seconds} from the `<part>.<pid>.cpu` files tests/cpu_cost.py wrote (a file that one part
    ran in two processes counts once, with both)."""
    costs: dict[str, float] = collections.Counter()
    for path in sorted(folder.glob("*.cpu")):
        part = path.name.split(".", 1)[0]
        for line in path.read_text().splitlines():
            seconds, _, file = line.partition("\t")
            try:
                costs[f"{part}: {file}"] += float(seconds)
            except ValueError:
                continue
    return costs


def stamp(folder: Path, name: str) -> float | None:
    try:
        return float((folder / name).read_text())
    except (OSError, ValueError):
        return None


def machine_busy() -> float | None:
    """The machine's busy CPU seconds since boot, or None where there is no /proc/stat (macOS, say)."""
    try:
        return busy_seconds()
    except (OSError, ValueError):
        return None


def start(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "started").write_text(f"{time.time()}\n")
    busy = machine_busy()
    if busy is not None:
        (folder / "busy-started").write_text(f"{busy}\n")


def report(folder: Path) -> None:
    started, set_up, busy = stamp(folder, "started"), stamp(folder, "set-up-done"), stamp(folder, "busy-started")
    now = time.time()
    print("\nmake test: the ten slowest tests (seconds, fixtures included)")
    for seconds, name in slowest(folder):
        print(f"  {seconds:7.1f}  {name}")
    costs = cpu_by_file(folder)
    if costs:
        print("make test: the ten test files that cost the most CPU (seconds: the test's process and what it waited for)")
        for name, seconds in sorted(costs.items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {seconds:7.1f}  {name}")
    if started is not None:
        minutes, seconds = divmod(round(now - started), 60)  # 959.6 s is 16 min 0 s, not 15 min 60 s
        setup = f"; tests/ started after {set_up - started:.0f} s of set-up" if set_up else ""
        print(f"make test took {minutes} min {seconds} s{setup} (budget: {BUDGET_MINUTES} min from a fresh clone on 2 cores)")
    busy_now = machine_busy()
    if started is not None and busy is not None and busy_now is not None:
        machine, cores = busy_now - busy, os.cpu_count() or 1
        parts = collections.Counter()
        for name, seconds in costs.items():
            parts[name.split(":", 1)[0]] += seconds
        counted = ", ".join(f"{part} {seconds:.0f}" for part, seconds in parts.most_common())
        print(f"the machine was busy {machine:.0f} CPU s ({machine / max(now - started, 1):.2f} of its {cores} cores on "
              f"average; {BUDGET_MINUTES} min on 2 cores is {BUDGET_MINUTES * 120}); counted by test file: {sum(costs.values()):.0f} ({counted or 'none'}); "
              "the rest: set-up and servers re-parented to init (bench/suite_cpu.py counts every process)")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--start"]:
        start(Path(args[1] if len(args) > 1 else "test-artifacts/timings"))
    else:
        report(Path(args[0] if args else "test-artifacts/timings"))


if __name__ == "__main__":
    main()
