"""A class submitting at once on the class hub: every student account runs `nbgrader submit` as itself, a bounded
number at a time, while the grader account runs `nbgrader collect` in the middle and again at the end; then every
submission must be collected with its own timestamp and its own content (none missing, truncated or mixed).

    sudo .venv/bin/python -m bench.hub_load --students 200 [--workers 8]      a scratch class, removed afterwards

Run it from a clone only root can read (`make hub` refuses another, and so does this). It sets up its own class
(scripts/class_hub.py) in a scratch folder with that many accounts, each confined as on the hub, starts the hub, runs
the load, restarts the hub in the middle, prints submissions per second and collect times, and removes the
accounts. tests/test_class_hub.py runs the same `submit_class` with 30 accounts in `make test`.

No students' servers are started: the load goes through nbgrader's exchange as those users, which is what a
deadline puts on a hub (two or three real servers are driven in a browser by the test).
"""
from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from scripts.class_hub import ClassHub, as_user, grader_env, student_env
from tests.lab_server import free_low_port

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENT = "07_models_optimizers"


@dataclass
class Load:
    """What a class-sized submission run did, and what came out of it."""
    submitted: dict[str, str] = field(default_factory=dict)   # student -> the marker in their last submission
    submit_seconds: float = 0.0                               # from the first submit to the last
    collect_seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return len(self.submitted) / self.submit_seconds if self.submit_seconds else 0.0


def marked_notebook(student: str, marker: str) -> str:
    """The released notebook with one more cell naming its author: what the collected copy is checked against."""
    notebook = nbformat.read(REPO / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(f"submitted by {student}: {marker}"))
    return nbformat.writes(notebook)


def place_work(hub: ClassHub, student: str, marker: str) -> None:
    """Put the student's work where nbgrader fetches it (~/release/<assignment>/), written as the student."""
    folder = f"release/{ASSIGNMENT}"
    as_user(student, ["sh", "-c", f"mkdir -p {folder} && cat > {folder}/{ASSIGNMENT}.ipynb"], student_env(hub),
            input=marked_notebook(student, marker), hub=hub)


def submit(hub: ClassHub, student: str) -> str:
    """`nbgrader submit` as the student, from their home (the Assignments tab's Submit does the same)."""
    done = as_user(student, [str(hub.env / "bin" / "nbgrader"), "submit", ASSIGNMENT], student_env(hub),
                   cwd=Path(hub.homes) / student, check=False, timeout=300, hub=hub)
    return "" if done.returncode == 0 else f"{student}: submit failed ({done.returncode}): {done.stderr[-500:]}"


def collect(hub: ClassHub, update: bool = False) -> float:
    """`nbgrader collect` as the grader account in its course; its seconds."""
    started = time.monotonic()
    as_user(hub.grader, [str(hub.env / "bin" / "nbgrader"), "collect", ASSIGNMENT] + (["--update"] if update else []),
            grader_env(hub), cwd=hub.course, timeout=600)
    return time.monotonic() - started


def submit_class(hub: ClassHub, students: list[str], workers: int = 8, twice: int = 1,
                 in_the_middle=None) -> Load:
    """Every student submits (the first `twice` of them twice, with new content the second time), `workers` at a
    time; when half have submitted, `nbgrader collect` runs beside the rest, then `in_the_middle()` (the test
    restarts the hub there); at the end `nbgrader collect --update`. Then `check_collected`."""
    load = Load()
    for student in students:
        load.submitted[student] = secrets.token_hex(8)
        place_work(hub, student, load.submitted[student])
    jobs = students + students[:twice]
    half = len(jobs) // 2
    done_count, lock, middle = 0, threading.Lock(), threading.Event()

    def one(index_student):
        nonlocal done_count
        index, student = index_student
        if index >= len(students):   # the second submission: new content, and it must be the one collected
            load.submitted[student] = secrets.token_hex(8)
            place_work(hub, student, load.submitted[student])
            time.sleep(1.1)          # nbgrader's timestamps have 1 s resolution in folder names
        problem = submit(hub, student)
        with lock:
            done_count += 1
            if problem:
                load.problems.append(problem)
            if done_count == half:
                middle.set()

    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(one, pair) for pair in enumerate(jobs[:len(students)])]
        middle.wait()
        load.collect_seconds.append(collect(hub))      # while the others are still submitting
        if in_the_middle:
            in_the_middle()
        for future in futures:
            future.result()
        for pair in list(enumerate(jobs))[len(students):]:
            pool.submit(one, pair).result()
    load.submit_seconds = time.monotonic() - started
    load.collect_seconds.append(collect(hub, update=True))
    load.problems += check_collected(hub, load.submitted)
    return load


def check_collected(hub: ClassHub, expected: dict[str, str]) -> list[str]:
    """Each student's collected notebook is whole (valid JSON), has their own last marker and nobody else's, and
    a timestamp of its own."""
    problems = []
    submitted = hub.course / "submitted"
    markers = set(expected.values())
    for student, marker in expected.items():
        folder = submitted / student / ASSIGNMENT
        path = folder / f"{ASSIGNMENT}.ipynb"
        if not path.exists():
            problems.append(f"{student}: not collected")
            continue
        try:
            notebook = json.loads(path.read_text())
        except ValueError as error:
            problems.append(f"{student}: collected notebook is not whole JSON ({error})")
            continue
        found = {m for cell in notebook["cells"] for m in markers if m in "".join(cell["source"])}
        if found != {marker}:
            problems.append(f"{student}: collected markers {sorted(found)}, expected only their own {marker}")
        if not (folder / "timestamp.txt").exists():
            problems.append(f"{student}: no timestamp.txt")
    return problems


def main(argv: list[str] | None = None) -> int:
    from scripts.class_hub import HubProcess, remove_accounts, setup
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--workers", type=int, default=8, help="submits at a time (default 8)")
    parser.add_argument("--prefix", default="/var/tmp/cs336-hub-bench", help="the hub's prefix (env/ is kept)")
    args = parser.parse_args(argv)
    Path(args.prefix).mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="hub-load-", dir=args.prefix))   # not /tmp: each student has their own
    scratch.chmod(0o755)
    roster = scratch / "roster.csv"
    students = [f"load{i:04d}" for i in range(args.students)]
    roster.write_text("id\n" + "".join(f"{s}\n" for s in students))
    (scratch / "home").mkdir(mode=0o755)
    ports: list[int] = []
    for _ in range(4):   # loopback, below 1024: the hub, its API, the proxy's API, Formgrader
        ports.append(free_low_port(set(ports)))
    hub = ClassHub(prefix=args.prefix, students=students, staff=[], instructor="loadprof",
                   homes=str(scratch / "home"), exchange=str(scratch / "exchange"), ip="127.0.0.1", port=ports[0],
                   hub_port=ports[1], proxy_api_port=ports[2], service_port=ports[3])
    started = time.monotonic()
    setup(hub, roster)
    print(f"{args.students} accounts and the class set up in {time.monotonic() - started:.1f} s", flush=True)
    server = HubProcess(hub, scratch / "hub.log")
    try:
        server.start()
        as_user(hub.grader, [str(hub.env / "bin" / "nbgrader"), "release_assignment", ASSIGNMENT, "--force"],
                grader_env(hub), cwd=hub.course)
        load = submit_class(hub, students, workers=args.workers,
                            in_the_middle=server.restart)
    finally:
        server.stop()
        remove_accounts(hub)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(load.submitted)} students, {len(load.submitted) + 1} submissions ({args.workers} at a time): "
          f"{load.submit_seconds:.1f} s, {load.per_second:.2f} submissions/s; nbgrader collect "
          f"{load.collect_seconds[0]:.1f} s in the middle, {load.collect_seconds[1]:.1f} s at the end (--update)")
    for problem in load.problems:
        print("PROBLEM:", problem)
    return 1 if load.problems else 0


if __name__ == "__main__":
    sys.exit(main())
