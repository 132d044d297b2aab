"""What `make test` cost: its own time (set-up and tests) and the ten slowest tests, from the JUnit XML each part wrote.

    python scripts/test_times.py test-artifacts/timings

Printed at the end of every `make test`, so that the next change sees what it costs (the whole suite must stay within
8 minutes from a fresh clone on 2 cores). A test's time includes its share of fixtures set up for it.
"""
from __future__ import annotations

import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path


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


def stamp(folder: Path, name: str) -> float | None:
    try:
        return float((folder / name).read_text())
    except (OSError, ValueError):
        return None


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "test-artifacts/timings")
    started, set_up = stamp(folder, "started"), stamp(folder, "set-up-done")
    now = time.time()
    print("\nmake test: the ten slowest tests (seconds, fixtures included)")
    for seconds, name in slowest(folder):
        print(f"  {seconds:7.1f}  {name}")
    if started is not None:
        minutes, seconds = divmod(round(now - started), 60)  # 959.6 s is 16 min 0 s, not 15 min 60 s
        setup = f"; tests/ started after {set_up - started:.0f} s of set-up" if set_up else ""
        print(f"make test took {minutes} min {seconds} s{setup} (budget: 8 min from a fresh clone on 2 cores)")


if __name__ == "__main__":
    main()
