"""Grading on a real Slurm cluster, as the README prints it (issue #33).

A one-node cluster of Debian's slurm-wlm (tests/slurm_cluster.py, started in a scratch folder) and a PostgreSQL server
(tests/postgres_server.py) hold a small class: a course folder laid out as a fresh clone (the grader, utils/,
reference/, deploy/, nbgrader_config.py, one assignment; its .venv is the environment running the tests), its roster
and due date put into the gradebook with nbgrader's own commands. Then the README's three `bash` blocks of "Grading on
a Slurm cluster" run as printed (the URL of the test's server put in place of the printed one): the shipped script
submitted with no option, tasks 1 and 2 starting together with no step recording the assignments first, task 3
cancelled while it grades, re-run alone with `sbatch --array=3`, then the merge, the report and `nbgrader export`.
Everything is compared with one process grading the same class into a gradebook of its own.

Needs root (slurmd starts jobs as their user); `make test` installs Slurm first (tests/ensure_slurm.sh). Without it the
test is skipped, or fails where CI=true or REQUIRE_SLURM=1.
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import postgres_server, slurm_cluster, submissions

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
README = (REPO / "README.md").read_text()
A = "10_accounting_a_training_run"  # the quickest assignment to grade
PRINTED_URL = "postgresql+psycopg://grader:PASSWORD@db.example.org/cs336?connect_timeout=10"
DUE = "2026-01-06 12:00:00 UTC"
ON_TIME, LATE = "2026-01-05 12:00:00.000000 UTC", "2026-01-07 09:00:00.000000 UTC"
# student -> (what they hand in, when); "ivan" and "kim" are on the roster and hand in nothing.
CLASS = {"alice": ("solved", ON_TIME), "bob": ("half", ON_TIME), "carol": ("variant", ON_TIME),
         "dave": ("blank", ON_TIME), "erin": ("solved", LATE), "frank": ("half", LATE),
         "grace": ("solved", ON_TIME), "heidi": ("alwaysequal", ON_TIME)}
ROSTER = sorted([*CLASS, "ivan", "kim"])
MAKERS = {"solved": submissions.solved, "variant": submissions.variant, "half": submissions.half_done,
          "blank": submissions.release_notebooks, "alwaysequal": submissions.always_equal}
# What a clone of the repository holds that grading needs (tests/ and the other assignments are left out).
CLONE = ["autograder", "utils", "reference", "deploy", "nbgrader_config.py", f"source/{A}"]


def slurm_section() -> str:
    start = README.index("\n### Grading on a Slurm cluster\n")
    return README[start:README.index("\n## ", start)]


def blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```$", slurm_section(), flags=re.MULTILINE | re.DOTALL)


def must_run(skip_reason: str) -> None:
    if os.environ.get("CI") == "true" or os.environ.get("REQUIRE_SLURM") == "1":
        pytest.fail(skip_reason)
    pytest.skip(skip_reason)


def clone(root: Path) -> Path:
    """A course folder as a fresh clone of the repository has it, with .venv the environment running the tests."""
    for name in CLONE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, root / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}))
    (root / ".venv").symlink_to(sys.prefix)
    return root


def shell_env(**extra: str) -> dict:
    """An instructor's shell with the course's environment active (`source .venv/bin/activate`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GRADER_", "GRADEBOOK_"))}
    return {**env, "PATH": f"{BIN}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": sys.prefix, **extra}


def bash(script: str, cwd: Path, env: dict, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"in {cwd}:\n{script}\nexited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def enrol(course: Path, env: dict) -> None:
    """The roster, the due date and the hand-ins, with nbgrader's own commands (README: Instructors)."""
    (course / "students.csv").write_text("id,first_name,last_name,email\n" + "".join(
        f"{s},{s.title()},Test,{s}@example.org\n" for s in ROSTER))
    bash(f'nbgrader db student import students.csv && nbgrader db assignment add {A} --duedate="{DUE}"', course, env)
    made = {kind: maker(A) for kind, maker in MAKERS.items()}
    for student, (kind, stamp) in CLASS.items():
        folder = submissions.write_submission(course / "submitted", student, A, made[kind])
        (folder / "timestamp.txt").write_text(stamp)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def log_of(course: Path, job: str, task: int) -> str:
    path = course / f"grade-{job}_{task}.log"
    return path.read_text(errors="replace") if path.exists() else ""


def wait_for(predicate, what: str, timeout: float = 240, every: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not after {timeout:.0f} s"
        time.sleep(every)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    started = time.monotonic()
    why = slurm_cluster.available()
    if why:
        must_run(why)
    try:
        pg = postgres_server.start()
    except postgres_server.PostgresUnavailable as error:
        must_run(f"no PostgreSQL server here: {error}")
    try:
        cluster = slurm_cluster.start()
    except slurm_cluster.SlurmUnavailable as error:
        pg.stop()
        must_run(str(error))
    try:
        yield cycle(tmp_path_factory.mktemp("slurm"), cluster, pg, started)
    finally:
        cluster.stop()
        pg.stop()


def cycle(tmp: Path, cluster: slurm_cluster.Cluster, pg: postgres_server.Postgres, started: float) -> dict:
    url = pg.create_database("slurm_class")
    course = clone(tmp / "course")
    env = cluster.env(shell_env())
    first, rerun, finish = blocks()
    assert PRINTED_URL in first and first.count("sbatch deploy") == 1 and "--array" not in first, first
    first = first.replace(PRINTED_URL, url)
    # The one process to compare with: the same class in a course of its own, its gradebook.db (no server).
    alone = clone(tmp / "one-process")
    enrol(alone, shell_env())
    reference = subprocess.Popen([str(BIN / "python"), "-m", "autograder.grade", "--out", "graded"], cwd=alone,
                                 env=shell_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server_env = {**env, "GRADEBOOK_URL": url}  # the shell the README's export leaves
    enrol(course, server_env)  # the roster and due date, into the server
    # The README's first block as printed: the switch, the URL, sbatch.
    set_up = time.monotonic()
    done = bash(first, course, env)
    job = re.search(r"Submitted batch job (\d+)", done.stdout).group(1)
    submitted = time.monotonic()
    # Tasks 1 and 2 start together (two 2-CPU tasks on the 4-CPU node); neither has a recording step before it.
    wait_for(lambda: cluster.jobs(job).get("1") == "RUNNING" and cluster.jobs(job).get("2") == "RUNNING",
             "tasks 1 and 2 running together", timeout=60)
    together = dict(cluster.jobs(job))
    # Task 3 starts when a CPU pair is free: cancelled once it is grading (its progress line is in its log).
    wait_for(lambda: "grading shard 3/4:" in log_of(course, job, 3), "task 3 grading", timeout=240)
    cluster.command("scancel", f"{job}_3")
    cancelled = time.monotonic()
    cluster.wait(job, timeout=300)
    states = cluster.jobs(job)
    merge_before = bash(finish.splitlines()[0], course, server_env, check=False)
    # The README's second block: task 3 alone.
    again = bash(rerun, course, server_env)
    job_again = re.search(r"Submitted batch job (\d+)", again.stdout).group(1)
    cluster.wait(job_again, timeout=300)
    rerun_states = cluster.jobs(job_again)
    rerun_done = time.monotonic()
    # The third: merge, report, export.
    bash(finish, course, server_env)
    ended = time.monotonic()
    out, err = reference.communicate(timeout=300)
    assert reference.returncode == 0, out + err
    bash("nbgrader export", alone, shell_env())
    timings = {"set-up": set_up - started, "first array": cancelled - submitted,
               "to the end of the first array": rerun_done - cancelled, "merge, report, export": ended - rerun_done,
               "whole": time.monotonic() - started}
    print("\nSlurm cycle (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return dict(course=course, alone=alone, job=job, job_again=job_again, together=together, states=states,
                rerun_states=rerun_states, merge_before=merge_before, url=url, cluster=cluster, timings=timings)


def without_notes(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[k] for k in ("student", "assignment", "task", "title", "score", "max_score", "late_penalty"))
                  for r in rows)


def test_the_script_ran_as_printed_two_tasks_together_and_every_log_landed(run):
    course, job = run["course"], run["job"]
    assert run["together"]["1"] == run["together"]["2"] == "RUNNING"
    assert run["states"] == {"1": "COMPLETED", "2": "COMPLETED", "3": "CANCELLED", "4": "COMPLETED"}, run["states"]
    assert run["rerun_states"] == {"3": "COMPLETED"}, run["rerun_states"]
    for task in (1, 2, 3, 4):
        log = log_of(course, job, task)
        assert f"shard {task} of 4, from Slurm array task {task} (array 1-4, 4 task(s)), shards counted by " \
               "GRADER_SHARDS=4" in log, log
    logs = [log_of(course, job, task) for task in (1, 2, 3, 4)] + [log_of(course, run["job_again"], 3)]
    recorders = [log for log in logs if "recorded in the gradebook from source/ (nbgrader generate_assignment)" in log]
    assert len(recorders) == 1, logs  # tasks 1 and 2 started together: one recorded the assignment, the other waited
    log = log_of(course, run["job_again"], 3)
    assert "shard 3 of 4, from Slurm array task 3 (array 3-3, 1 task(s)), shards counted by GRADER_SHARDS=4" in log, log
    assert ("on this machine: 2 worker(s) (2 usable CPU(s)); 4096 MiB for the job (SLURM_MEM_PER_CPU=2048 x 2 CPU(s)), "
            "1024 MiB kept for the grader: 1536 MiB per notebook") in log, log


def test_the_merge_refused_while_task_3_was_missing(run):
    before = run["merge_before"]
    assert before.returncode != 0 and "shard 3 of 4 is missing" in before.stderr, before.stderr


def test_shards_started_together_lost_no_student_and_recorded_the_assignment_once(run):
    from sqlalchemy import create_engine, text
    engine = create_engine(run["url"])
    with engine.connect() as c:
        per_student = dict(c.execute(text("SELECT student_id, count(*) FROM submitted_assignment GROUP BY 1")).all())
        assignments = c.execute(text("SELECT count(*) FROM assignment")).scalar()
        notebooks = c.execute(text("SELECT count(*) FROM notebook")).scalar()
    engine.dispose()
    assert per_student == {s: 1 for s in CLASS} and assignments == 1
    assert notebooks == len(list((REPO / "source" / A).glob("*.ipynb")))


def test_the_merged_grades_and_the_export_equal_one_process(run):
    merged = read_csv(run["course"] / "graded" / "grades.csv")
    alone = read_csv(run["alone"] / "graded" / "grades.csv")
    assert sorted({r["student"] for r in merged}) == ROSTER
    assert without_notes(merged) == without_notes(alone)
    exported = {r["student_id"]: r for r in read_csv(run["course"] / "grades.csv")}
    reference = {r["student_id"]: r for r in read_csv(run["alone"] / "grades.csv")}
    columns = ("assignment", "student_id", "raw_score", "late_submission_penalty", "score", "max_score")
    assert {s: tuple(r[c] for c in columns) for s, r in exported.items()} == \
        {s: tuple(r[c] for c in columns) for s, r in reference.items()}
    assert float(exported["erin"]["late_submission_penalty"]) > 0 and float(exported["ivan"]["score"]) == 0


def test_one_summary_and_one_report_for_the_sharded_run(run):
    summary = (run["course"] / "graded" / "summary.txt").read_text()
    for task in (1, 2, 3, 4):
        assert f"shard {task}/4: graded " in summary, summary
    assert f"no submission: {A}: ivan, kim" in summary, summary
    report = (run["course"] / "graded" / "report.html").read_text()
    for name in ("ivan", "kim", "erin", "frank"):
        assert name in report
