"""Grading on many machines, as docs/clusters.md prints it (issue #33): a real Slurm cluster, and the Kubernetes Job's
pods.

One small class (10 students on the roster, 8 hand-ins of one assignment: solved, another solution, half done, blank,
a comparison trick, two late) is graded three times, each into a gradebook of its own, and the three must agree:
- by one process (`python -m autograder.grade`, its own gradebook.db): the grades every other run is compared with;
- on a one-node Slurm cluster of Debian's slurm-wlm (tests/slurm_cluster.py, started in a scratch folder) into a
  PostgreSQL server (tests/postgres_server.py): the three `bash` blocks of "Grading on a Slurm cluster" as printed
  (the test server's URL put in place of the printed one), the shipped script submitted with no option, tasks 1 and 2
  starting together with no step recording the assignment first, task 2 cancelled while it grades and re-run alone
  with `sbatch --array=2`, then the merge, the report and `nbgrader export`;
- by the Kubernetes kit of deploy/k8s/, simulated: the set-up Job (its environment already built, as on a second
  run), then each index's pod of the grading Job, the container's command run with the environment the manifest gives
  it (GRADER_SHARDS, the memory limit through the downward API, the URL from the Secret, JOB_COMPLETION_INDEX), the
  course volume at its mount path, all pods at once as `parallelism` says, then the merge Job.
Each course folder is laid out as a fresh clone (the grader, utils/, reference/, deploy/, nbgrader_config.py, one
assignment; its .venv is the environment running the tests), its roster and due date put in with nbgrader's commands.

The Slurm part needs root (slurmd starts jobs as their user); `make test` installs Slurm first (tests/ensure_slurm.sh).
Without it that part is skipped, or fails where CI=true or REQUIRE_SLURM=1.
"""
from __future__ import annotations

import csv
import importlib.metadata
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests import postgres_server, slurm_cluster, submissions, warm
from tests.manual import bash_blocks, section

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
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
CLONE = ["autograder", "utils", "reference", "deploy", "nbgrader_config.py", "pyproject.toml", ".gitignore",
         f"source/{A}"]


def blocks() -> list[str]:
    """The section's three bash blocks, as printed."""
    return bash_blocks(section("docs/clusters.md", "## Grading on a Slurm cluster"))


def must_run(skip_reason: str) -> None:
    if os.environ.get("CI") == "true" or os.environ.get("REQUIRE_SLURM") == "1":
        pytest.fail(skip_reason)
    pytest.skip(skip_reason)


def clone(root: Path) -> Path:
    """A course folder as a fresh clone of the repository has it, with .venv the environment running the tests: a git
    repository whose one commit is all of it, so that `git status` afterwards shows what a run left for git."""
    for name in CLONE:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, root / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree else {}))
    (root / ".venv").symlink_to(sys.prefix)
    for command in (["init", "-q"], ["add", "--all"], ["commit", "-q", "-m", "the clone"]):
        subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *command], cwd=root,
                       check=True, capture_output=True)
    return root


def left_for_git(course: Path) -> list[str]:
    """`git status --porcelain` of the course, one line per file: what `git add --all` would take."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=course, capture_output=True,
                          text=True, check=True)
    return done.stdout.splitlines()


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
    """The roster and the due date (in the gradebook that the course's config names in `env`, through nbgrader's
    Gradebook, as `nbgrader db student import` and `nbgrader db assignment add` write them), and the hand-ins."""
    from nbgrader.api import Gradebook

    import autograder.course  # noqa: F401 - puts this environment's bin/ on PATH, where nbgrader finds `alembic`
    url = env.get("GRADEBOOK_URL") or f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(url, "cs336-primitives") as book:
        for student in ROSTER:
            book.update_or_create_student(student, first_name=student.title(), last_name="Test")
        book.update_or_create_assignment(A, duedate=DUE)
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
def shared(tmp_path_factory):
    """The PostgreSQL server, and the one process grading the class (started now, in the background)."""
    try:
        pg = postgres_server.start()
    except postgres_server.PostgresUnavailable as error:
        must_run(f"no PostgreSQL server here: {error}")
    tmp = tmp_path_factory.mktemp("clusters")
    alone = clone(tmp / "one-process")
    enrol(alone, shell_env())
    process = subprocess.Popen([str(BIN / "python"), "-m", "autograder.grade", "--out", "graded"], cwd=alone,
                               env=shell_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    waited = {}

    def reference() -> Path:
        """The one process's course, once it has graded the class and exported its grades."""
        if not waited:
            out, err = process.communicate(timeout=600)
            assert process.returncode == 0, out + err
            bash("nbgrader export", alone, shell_env())
            waited["done"] = True
        return alone
    try:
        yield dict(pg=pg, tmp=tmp, reference=reference)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        pg.stop()


@pytest.fixture(scope="module")
def run(shared):
    started = time.monotonic()
    why = slurm_cluster.available()
    if why:
        must_run(why)
    try:
        cluster = slurm_cluster.start()
    except slurm_cluster.SlurmUnavailable as error:
        must_run(str(error))
    try:
        yield cycle(shared["tmp"], cluster, shared["pg"], started, shared["reference"])
    finally:
        cluster.stop()


def cycle(tmp: Path, cluster: slurm_cluster.Cluster, pg: postgres_server.Postgres, started: float, reference) -> dict:
    url = pg.create_database("slurm_class")
    course = clone(tmp / "slurm")
    env = cluster.env(shell_env())
    first, rerun, finish = blocks()
    assert PRINTED_URL in first and first.count("sbatch deploy") == 1 and "--array" not in first, first
    first = first.replace(PRINTED_URL, url)
    server_env = {**env, "GRADEBOOK_URL": url}  # the shell the printed export leaves
    enrol(course, server_env)  # the roster and due date, into the server
    set_up = time.monotonic()
    out_before = (course / "out").exists()  # the logs must land all the same
    # The first block as printed: the switch, the URL, sbatch.
    done = bash(first, course, env)
    job = re.search(r"Submitted batch job (\d+)", done.stdout).group(1)
    submitted = time.monotonic()
    # Tasks 1 and 2 start together (two 2-CPU tasks on the 4-CPU node); neither has a recording step before it.
    wait_for(lambda: cluster.jobs(job).get("1") == "RUNNING" and cluster.jobs(job).get("2") == "RUNNING",
             "tasks 1 and 2 running together", timeout=60)
    together = dict(cluster.jobs(job))
    # Task 2 is cancelled once it is grading (its progress line is in its log); task 1 goes on.
    wait_for(lambda: "grading shard 2/2:" in log_of(course, job, 2), "task 2 grading", timeout=300)
    cluster.command("scancel", f"{job}_2")
    cancelled = time.monotonic()
    cluster.wait(job, timeout=300)
    states = cluster.jobs(job)
    merge_before = bash(finish.splitlines()[0], course, server_env, check=False)
    # The second block: task 2 alone.
    again = bash(rerun, course, server_env)
    job_again = re.search(r"Submitted batch job (\d+)", again.stdout).group(1)
    cluster.wait(job_again, timeout=300)
    rerun_states = cluster.jobs(job_again)
    rerun_done = time.monotonic()
    # The third: merge, report, export.
    bash(finish, course, server_env)
    ended = time.monotonic()
    # What a request that does not fit does (docs/clusters.md): more memory than the node has is refused at once; more CPUs
    # than it has waits with the reason PartitionConfig.
    too_much_memory = bash("sbatch --mem-per-cpu=100G deploy/slurm/grade.sbatch", course, server_env, check=False)
    too_many = bash("sbatch --parsable --cpus-per-task=8 deploy/slurm/grade.sbatch", course, server_env)
    wait_for(lambda: "PartitionConfig" in cluster.command("squeue", "--noheader", "-j", too_many.stdout.strip(),
                                                          "-o", "%r").stdout, "the reason PartitionConfig", timeout=30)
    cluster.command("scancel", too_many.stdout.strip())
    alone = reference()
    timings = {"set-up": set_up - started, "first array until task 2 was cancelled": cancelled - submitted,
               "the rest of the array and the re-run": rerun_done - cancelled,
               "merge, report, export": ended - rerun_done, "whole": time.monotonic() - started}
    print("\nSlurm cycle (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return dict(course=course, alone=alone, job=job, job_again=job_again, together=together, states=states,
                rerun_states=rerun_states, merge_before=merge_before, url=url, cluster=cluster, timings=timings,
                out_before=out_before, too_much_memory=too_much_memory)


def without_notes(rows: list[dict]) -> list[tuple]:
    return sorted(tuple(r[k] for k in ("student", "assignment", "task", "title", "score", "max_score", "late_penalty"))
                  for r in rows)


def test_the_script_ran_as_printed_two_tasks_together_and_every_log_landed(run):
    course, job = run["course"], run["job"]
    assert run["together"]["1"] == run["together"]["2"] == "RUNNING"
    assert not run["out_before"]  # out/ did not exist when the tasks started: the logs are in the submit folder
    assert run["states"] == {"1": "COMPLETED", "2": "CANCELLED"}, run["states"]
    assert run["rerun_states"] == {"2": "COMPLETED"}, run["rerun_states"]
    for task in (1, 2):
        log = log_of(course, job, task)
        assert f"shard {task} of 2, from Slurm array task {task} (array 1-2, 2 task(s)), shards counted by " \
               "GRADER_SHARDS=2" in log, log
    assert "CANCELLED" in log_of(course, job, 2)
    logs = [log_of(course, job, task) for task in (1, 2)] + [log_of(course, run["job_again"], 2)]
    recorders = [log for log in logs if "recorded in the gradebook from source/ (nbgrader generate_assignment)" in log]
    # Tasks 1 and 2 started together: one recorded the assignment while the other waited, and found nothing left to
    # record. The recorder may be task 2, cancelled before it printed its summary: at most one says it recorded.
    assert len(recorders) <= 1, logs
    log = log_of(course, run["job_again"], 2)
    assert "shard 2 of 2, from Slurm array task 2 (array 2-2, 1 task(s)), shards counted by GRADER_SHARDS=2" in log, log
    # a notebook keeps its own 3,072 MiB whatever the job (issue #49): 4,096 MiB hold the grader and one of them
    assert ("on this machine: 1 worker(s) (memory for 1 of the 2 wanted); 4096 MiB for the job (SLURM_MEM_PER_CPU=2048 "
            "x 2 CPU(s)), 1024 MiB kept for the grader: 3072 MiB per notebook") in log, log


def test_the_cluster_path_leaves_nothing_for_git(run):
    """Issue #49, item 5: after the Slurm cycle (the switch, two tasks, a cancelled one re-run, the merge, the report,
    the export) the results, summaries, logs, autograded notebooks, grades and the switch are there, and
    `git status --porcelain` shows none of them: student data never goes into git on the cluster path either."""
    course, job = run["course"], run["job"]
    made = ["gradebook-on-server", f"grade-{job}_1.log", f"grade-{run['job_again']}_2.log", "out/shard-1/grades.csv",
            "out/shard-2/summary.txt", "graded/grades.csv", "graded/report.html", "grades.csv",
            f"autograded/alice/{A}", f"submitted/alice/{A}/timestamp.txt"]
    assert [name for name in made if not (course / name).exists()] == []
    assert len(list((course / "out" / "shard-1" / "results").rglob("*.json"))) > 0
    assert left_for_git(course) == []


def test_a_request_that_does_not_fit_fails_at_once_or_says_why_it_waits(run):
    refused = run["too_much_memory"]
    assert refused.returncode != 0 and "Requested node configuration is not available" in refused.stderr, refused.stderr


def test_the_merge_refused_while_task_2_was_missing(run):
    before = run["merge_before"]
    assert before.returncode != 0 and "shard 2 of 2 is missing" in before.stderr, before.stderr
    assert "sbatch --array=2 deploy/slurm/grade.sbatch" in before.stderr


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
    for task in (1, 2):
        assert f"shard {task}/2: graded " in summary, summary
    assert f"no submission: {A}: ivan, kim" in summary, summary
    report = (run["course"] / "graded" / "report.html").read_text()
    for name in ("ivan", "kim", "erin", "frank"):
        assert name in report


# ---- Kubernetes: the Job's pods, each the container's command with the environment the manifest gives it ---------

KIT = REPO / "deploy" / "k8s"
STEPS = ["course.yaml", "setup-job.yaml", "grade-job.yaml", "merge-job.yaml"]  # in the order they are applied
SECRET = "cs336-gradebook"
UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: str) -> float:
    """A Kubernetes resource quantity ('4Gi', '512Mi', '2', '500m') as a number of its base unit."""
    number, unit = re.fullmatch(r"([0-9.]+)(m|[kMGT]i?|)", str(text)).groups()
    return float(number) / 1000 if unit == "m" else float(number) * UNITS[unit]


def expand(text: str, env: dict) -> str:
    """Kubernetes' expansion of command, args and env values: $(NAME) is the variable's value where it is defined
    (left as it is otherwise), and $$ is a plain $."""
    out, i = [], 0
    while i < len(text):
        end = text.find(")", i + 2)
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and end > 0 and text[i + 2:end] in env:
            out.append(env[text[i + 2:end]])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def pod_environment(container: dict, index: int, secrets: dict) -> dict:
    """The variables the kubelet gives the container of index `index`: JOB_COMPLETION_INDEX, then the manifest's
    env in order (plain values, Secret keys, resource fields through the downward API, rounded up to the divisor)."""
    env = {"JOB_COMPLETION_INDEX": str(index)}
    for item in container.get("env", []):
        source = item.get("valueFrom", {})
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
        elif "secretKeyRef" in source:
            env[item["name"]] = secrets[source["secretKeyRef"]["name"]][source["secretKeyRef"]["key"]]
        elif "resourceFieldRef" in source:
            field = source["resourceFieldRef"]
            kind, resource = field["resource"].split(".")
            value = quantity(container["resources"][kind][resource]) / quantity(field.get("divisor", "1"))
            env[item["name"]] = str(math.ceil(value))
        else:
            raise AssertionError(f"the simulation does not know {item}")
    return env


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((KIT / name).read_text()) if d]


def job_of(name: str) -> dict:
    return next(d for d in documents(name) if d["kind"] == "Job")


def start_pod(job: dict, index: int, course: Path, secrets: dict) -> subprocess.Popen:
    """One pod of a Job (of index `index`, for an Indexed Job): the container's command and args, expanded, with the
    course volume's mount path standing for `course`, run in its working folder with the pod's environment."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    mount = container["volumeMounts"][0]["mountPath"]
    env = pod_environment(container, index, secrets)
    command = [expand(part, env).replace(mount, str(course)) for part in container["command"] + container["args"]]
    workdir = Path(container["workingDir"].replace(mount, str(course)))
    return subprocess.Popen(command, cwd=workdir, env={**shell_env(), **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def run_pod(job: dict, course: Path, secrets: dict) -> tuple[int, str]:
    """The one pod of a plain Job, to its end: its exit status and log."""
    pod = start_pod(job, 0, course, secrets)
    log = pod.communicate(timeout=600)[0]
    return pod.returncode, log


@pytest.fixture(scope="module")
def kubernetes(shared):
    started = time.monotonic()
    url = shared["pg"].create_database("k8s_class")
    course = clone(shared["tmp"] / "k8s")  # the volume, once the course is copied in (step 1)
    secrets = {SECRET: {"db_url": url}}
    # Step 2, the set-up, with the environment already built from this pyproject.toml (as on a second run: the test
    # does not install into the environment it runs in); it puts the gradebook on the server.
    (course / ".venv.pyproject.toml").write_bytes((course / "pyproject.toml").read_bytes())
    setup = run_pod(job_of("setup-job.yaml"), course, secrets)
    enrol(course, shell_env(GRADEBOOK_URL=url))
    job = job_of("grade-job.yaml")
    spec = job["spec"]
    begun = time.monotonic()
    pending, running, logs = list(range(spec["completions"])), {}, {}
    while pending or running:
        while pending and len(running) < spec["parallelism"]:
            index = pending.pop(0)
            running[index] = start_pod(job, index, course, secrets)
        for index, pod in list(running.items()):
            if pod.poll() is not None:
                logs[index] = pod.communicate()[0]
                assert pod.returncode == 0, f"pod {index} exited {pod.returncode}:\n{logs[index]}"
                del running[index]
        time.sleep(0.2)
    pods = time.monotonic()
    merged = run_pod(job_of("merge-job.yaml"), course, secrets)  # step 4
    without = warm.run([str(BIN / "nbgrader"), "export", "--to", "without-url.csv"], cwd=course,
                             env=shell_env(), capture_output=True, text=True, timeout=120)
    alone = shared["reference"]()
    timings = {"set-up": begun - started, "pods": pods - begun, "whole": time.monotonic() - started}
    print("\nKubernetes simulation (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return dict(course=course, alone=alone, job=job, logs=logs, merged=merged, without=without, url=url, setup=setup)


def test_the_kubernetes_kit_fits_the_api_schema_of_kubernetes_1_25_and_1_37():
    """Strict: a field the API does not have there (such as backoffLimitPerIndex before 1.28) fails."""
    import kubernetes_validate
    assert sorted(p.name for p in KIT.glob("*.yaml")) == sorted(STEPS)
    for name in STEPS:
        for version in ("1.25.0", "1.37.0"):
            for document in documents(name):
                kubernetes_validate.validate(document, version, strict=True)
    job = job_of("grade-job.yaml")
    spec = job["spec"]
    container = spec["template"]["spec"]["containers"][0]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == spec["completions"]
    assert pod_environment(container, 0, {SECRET: {"db_url": "x"}})["GRADER_SHARDS"] == str(spec["completions"])
    assert quantity(container["resources"]["limits"]["cpu"]) <= 2 and quantity(container["resources"]["limits"]["memory"]) <= 4 * 2**30


def test_the_kubernetes_pods_grade_the_class_once(kubernetes):
    logs = kubernetes["logs"]
    assert sorted(logs) == [0, 1]
    for index, log in logs.items():
        assert f"shard {index + 1} of 2, from Kubernetes Indexed Job, JOB_COMPLETION_INDEX={index} of 2" in log, log
        assert "4096 MiB for the job (GRADER_MEMORY_MIB=4096), 1024 MiB kept for the grader: 3072 MiB per notebook" \
            in log, log
        assert f"out/shard-{index + 1}/grades.csv" in log
    recorders = [log for log in logs.values() if "recorded in the gradebook from source/" in log]
    assert len(recorders) == 1  # the pods start at once, no step before them: one recorded the assignment
    merged = read_csv(kubernetes["course"] / "graded" / "grades.csv")
    alone = read_csv(kubernetes["alone"] / "graded" / "grades.csv")
    assert without_notes(merged) == without_notes(alone)
    from sqlalchemy import create_engine, text
    engine = create_engine(kubernetes["url"])
    with engine.connect() as c:
        per_student = dict(c.execute(text("SELECT student_id, count(*) FROM submitted_assignment GROUP BY 1")).all())
    engine.dispose()
    assert per_student == {s: 1 for s in CLASS}


def test_a_command_without_the_url_stops_where_the_config_asks_for_a_server(kubernetes):
    """GRADEBOOK_ON_SERVER = True in the volume's nbgrader_config.py: nbgrader run without GRADEBOOK_URL says what to
    set and exits non-zero; no empty gradebook.db, no grades."""
    done, course = kubernetes["without"], kubernetes["course"]
    assert done.returncode != 0 and "the environment variable GRADEBOOK_URL is not set" in done.stderr, done.stderr
    assert not (course / "gradebook.db").exists() and not (course / "without-url.csv").exists()


def test_the_kubernetes_kit_is_whole():
    """Issue #49, item 6: a namespace that allows the grader's privileged pods, one ReadWriteMany volume claim that
    every step mounts, the set-up that builds the environment on it and switches the gradebook to the server, the
    grading pods privileged (the sandbox's namespaces, mounts and Landlock), the merge, and the note that a Job is
    deleted before it is applied again; each manifest says which step it is, and the docs apply them in that order."""
    course = documents("course.yaml")
    namespace = next(d for d in course if d["kind"] == "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    claim = next(d for d in course if d["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert quantity(claim["spec"]["resources"]["requests"]["storage"]) >= 10 * 2**30
    pods = [next(d for d in course if d["kind"] == "Pod")["spec"]] + [job_of(n)["spec"]["template"]["spec"]
                                                                    for n in STEPS[1:]]
    for spec in pods:
        assert [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]] == [claim["metadata"]["name"]]
        assert {c["image"] for c in spec["containers"]} == {"python:3.11-slim"}
    for number, name in enumerate(STEPS, 1):
        text = (KIT / name).read_text()
        assert f"step {number} of 4" in text, name
        assert {d["metadata"].get("namespace") for d in documents(name) if d["kind"] != "Namespace"} == \
            {namespace["metadata"]["name"]}
    setup = job_of("setup-job.yaml")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "python -m venv .venv" in setup and "scripts/install_env.py --torch cpu" in setup
    assert "touch gradebook-on-server" in setup
    grader = job_of("grade-job.yaml")["spec"]["template"]["spec"]["containers"][0]
    assert grader["securityContext"] == {"privileged": True}
    merge = job_of("merge-job.yaml")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "autograder.merge out/shard-* --out graded" in merge and "autograder.report --out graded" in merge
    text = section("docs/clusters.md", "## Grading on Kubernetes")
    applied = re.findall(r"kubectl apply -f deploy/k8s/([\w-]+\.yaml)", bash_blocks(text)[0])
    assert applied == STEPS, applied
    assert "kubectl -n cs336 delete job cs336-grade" in (KIT / "grade-job.yaml").read_text()
    assert "kubectl -n cs336 delete job cs336-grade cs336-merge" in text


def test_the_kubernetes_set_up_and_merge_ran_as_their_manifests_say(kubernetes):
    status, log = kubernetes["setup"]
    assert status == 0 and f"the course environment on the volume is ready: Python {platform.python_version()}, " \
        f"nbgrader {importlib.metadata.version('nbgrader')}\n" in log, log
    assert (kubernetes["course"] / "gradebook-on-server").is_file()
    status, log = kubernetes["merged"]
    assert status == 0, log
    assert (kubernetes["course"] / "graded" / "report.html").is_file() and (kubernetes["course"] / "grades.csv").is_file()
    assert left_for_git(kubernetes["course"]) == []  # the kit's outputs, the switch and the stamp: all git-ignored
