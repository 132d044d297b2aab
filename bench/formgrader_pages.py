"""Formgrader's pages at class size, timed in headless Chromium, with the gradebook on PostgreSQL and on SQLite.

    .venv/bin/python -m bench.class_of_1000 --students 1000 --keep-class /var/tmp/class-of-1000    first, once
    .venv/bin/python -m bench.formgrader_pages /var/tmp/class-of-1000 [--assignment 07_models_optimizers]

The class that bench/class_of_1000.py graded and kept (its course folder and gradebook.pgdump) is served the way an
instructor serves it, `make lab` in the course folder (tests/lab_server.py), once with its gradebook restored into a
PostgreSQL server (pg_restore) and once copied into SQLite (gradebook.db, table by table through nbgrader's own
schema), each with its planner statistics fresh, as the grader leaves them (gradebook.refresh_statistics); and
once more on PostgreSQL without them, as a bulk write leaves them until autovacuum gets to it. Four pages a TA
opens, each loaded `--repeat` times in a fresh browser page, timed from the request to the
moment the page's own script says its data is in (Formgrader's `models.loaded`, or the grades and comments of the
submission page): Manage Assignments, Manage Submissions of one assignment, the Manual Grading list of its notebook,
and one submission. Beside each page, the JSON request behind it alone (urllib), which is nbgrader's query time
without the browser. A benchmark, not a test: it prints, asserts nothing.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import postgres_server  # noqa: E402
from tests.lab_server import get, start_lab, stop  # noqa: E402
from tests.test_browser import CHROMIUM_ARGS, chromium_path  # noqa: E402

COURSE_ID = "cs336-primitives"
MODELS_LOADED = "() => typeof models !== 'undefined' && models.loaded === true"
SUBMISSION_LOADED = ("() => typeof formgrader !== 'undefined' && !!formgrader.grades && formgrader.grades.loaded === true"
                     " && !!formgrader.comments && formgrader.comments.loaded === true")


def restore_postgres(server: postgres_server.Postgres, dump: Path, analyze: bool = True, name: str = "formgrader") -> str:
    """A new database on `server` with the kept gradebook in it, its statistics fresh (`analyze`) or as pg_restore
    leaves them, none: as right after a grading run's write until autovacuum gets to it; its URL."""
    url = server.create_database(name)
    subprocess.run([str(postgres_server.binaries() / "pg_restore"), "--no-owner", "--role", postgres_server.USER,
                    "--host", str(server.folder), "--port", str(server.port), "--username", "postgres",
                    "--dbname", name, str(dump)], check=True)
    if analyze:   # what the grader does after writing the class (gradebook.refresh_statistics)
        from nbgrader.api import Gradebook

        from autograder.gradebook import refresh_statistics
        with Gradebook(url, COURSE_ID) as gb:
            refresh_statistics(gb)
    return url


def copy_to_sqlite(source_url: str, path: Path) -> str:
    """The gradebook at `source_url` copied into a new SQLite file, every table of nbgrader's schema row for row
    (nbgrader has no command for it); its URL."""
    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine, select
    url = f"sqlite:///{path}"
    Gradebook(url, COURSE_ID).close()   # nbgrader's schema, stamped with its revision
    source, target = create_engine(source_url), create_engine(url)
    with source.connect() as read, target.begin() as write:
        for table in reversed(Base.metadata.sorted_tables):   # what Gradebook() put in (its course row)
            write.execute(table.delete())
        for table in Base.metadata.sorted_tables:   # parents before children
            rows = [dict(r) for r in read.execute(select(table)).mappings()]
            if rows:
                write.execute(table.insert(), rows)
    source.dispose()
    target.dispose()
    from autograder.gradebook import refresh_statistics
    with Gradebook(url, COURSE_ID) as gb:
        refresh_statistics(gb)   # as the grader leaves it
    return url


def point_at(course: Path, db_url: str) -> None:
    """Make the course's nbgrader_config.py use `db_url`."""
    config = course / "nbgrader_config.py"
    text = re.sub(r"c\.CourseDirectory\.db_url = .*", f"c.CourseDirectory.db_url = {db_url!r}", config.read_text())
    config.write_text(text)


def pages(course: Path, db_url: str, assignment: str) -> list[tuple[str, str, str, str]]:
    """(name, page path, the JSON request behind it, when it is loaded) for the four pages."""
    from nbgrader.api import Gradebook
    notebook = assignment
    with Gradebook(db_url, COURSE_ID) as gb:
        submission = min(gb.notebook_submissions(notebook, assignment), key=lambda s: s.student.id)
        submission_id, student = submission.id, submission.student.id
    return [
        ("Manage Assignments", "/formgrader/manage_assignments", "/formgrader/api/assignments", MODELS_LOADED),
        (f"Manage Submissions ({assignment})", f"/formgrader/manage_submissions/{assignment}",
         f"/formgrader/api/submissions/{assignment}", MODELS_LOADED),
        (f"Manual Grading list ({notebook})", f"/formgrader/gradebook/{assignment}/{notebook}",
         f"/formgrader/api/submitted_notebooks/{assignment}/{notebook}", MODELS_LOADED),
        (f"one submission ({student}'s)", f"/formgrader/submissions/{submission_id}/",
         f"/formgrader/api/grades?submission_id={submission_id}", SUBMISSION_LOADED),
    ]


def time_pages(lab, listed, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per load of each page in Chromium, and of its JSON request alone."""
    from playwright.sync_api import sync_playwright
    times: dict[str, dict[str, list[float]]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        warm = context.new_page()
        warm.goto(lab.url("/formgrader"))   # logs in (the token sets a cookie) and opens the gradebook once
        warm.close()
        for name, path, api, loaded in listed:
            times[name] = {"page": [], "api": []}
            for _ in range(repeat):
                page = context.new_page()
                page.set_default_timeout(600_000)
                start = time.perf_counter()
                page.goto(lab.url(path))
                page.wait_for_function(loaded, polling=50)
                times[name]["page"].append(time.perf_counter() - start)
                page.close()
                start = time.perf_counter()
                status, body = get(lab.url(api), timeout=600)
                times[name]["api"].append(time.perf_counter() - start)
                assert status == 200, (api, status)
            if api.startswith("/formgrader/api/submissions/"):   # what the page lists: graded, or to autograde
                listed_rows = json.loads(body)
                print(f"  Manage Submissions lists {len(listed_rows)} rows, "
                      f"{sum(1 for r in listed_rows if r['autograded'])} autograded, "
                      f"{sum(1 for r in listed_rows if r['submitted'])} submitted")
        browser.close()
    return times


def measure(course: Path, db_url: str, assignment: str, repeat: int, scratch: Path) -> dict:
    point_at(course, db_url)
    listed = pages(course, db_url, assignment)
    lab = start_lab(scratch, root=course, timeout=300)
    try:
        return time_pages(lab, listed, repeat)
    finally:
        stop(lab.process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("course", type=Path, help="a class kept by bench.class_of_1000 --keep-class")
    parser.add_argument("--assignment", default="07_models_optimizers")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    course = args.course.resolve()
    if not (course / "gradebook.pgdump").exists():
        raise SystemExit(f"{course} holds no gradebook.pgdump: keep a class with bench.class_of_1000 --keep-class")
    students = len([p for p in (course / "submitted").iterdir() if p.is_dir()])
    print(f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z} on {platform.node()}: {os.cpu_count()} cores "
          f"({platform.machine()}); the class in {course}: {students} students who submitted something")
    server = postgres_server.start()
    results: dict[str, dict] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="formgrader-pages-") as scratch:
            start = time.perf_counter()
            stale_url = restore_postgres(server, course / "gradebook.pgdump", analyze=False, name="stale")
            print(f"gradebook restored into PostgreSQL in {time.perf_counter() - start:.1f} s")
            pg_url = restore_postgres(server, course / "gradebook.pgdump", name="analyzed")
            sqlite_path = course / "gradebook.db"
            sqlite_path.unlink(missing_ok=True)
            start = time.perf_counter()
            sqlite_url = copy_to_sqlite(pg_url, sqlite_path)
            print(f"gradebook copied into SQLite ({sqlite_path.stat().st_size / 2**20:.0f} MiB) in "
                  f"{time.perf_counter() - start:.1f} s")
            backends = (("PostgreSQL, no statistics yet", stale_url), ("PostgreSQL", pg_url), ("SQLite", sqlite_url))
            for backend, url in backends:
                print(f"{backend}:")
                results[backend] = measure(course, url, args.assignment, args.repeat, Path(scratch) / f"server-{len(results)}")
    finally:
        server.stop()
    print(f"\nseconds per load (median of {args.repeat}; first load in brackets), page in Chromium until its data is "
          f"in / its JSON request alone:")
    for backend, times in results.items():
        print(f"  {backend}")
        for name, t in times.items():
            print(f"    {name:45s} {statistics.median(t['page']):6.2f} ({t['page'][0]:.2f}) / "
                  f"{statistics.median(t['api']):6.2f}")


if __name__ == "__main__":
    main()
