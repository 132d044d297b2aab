"""Grade every submission of an nbgrader course into its gradebook, nbgrader's way, with our fast sandboxed runner.

    python -m autograder.grade [SUBMITTED_DIR] [--course DIR] [--out DIR] [--assignment NAME ...] [--workers N]
                               [--limit NAME=VALUE ...] [--fresh] [--shard K/N]

The course (default: the current folder when it holds an nbgrader_config.py, else this repository) is an nbgrader
course; SUBMITTED_DIR (default: the course's `submitted/`) is laid out as `<student>/<assignment>/`, as
`nbgrader collect` or `python -m autograder.lms_import` leave it. A run writes
  the gradebook (nbgrader's, the course's `db_url`)  students, submissions with their times, every graded cell's
                                                     automatic score and comment, late penalties; in one transaction
  autograded/<student>/<assignment>/                 nbgrader's layout: notebooks with outputs and metadata (what
                                                     formgrader shows and `nbgrader generate_feedback` renders)
  OUT/grades.csv (default graded/)                   per student and assignment: one row per graded cell and a
                                                     TOTAL row (late penalty taken off); 0 for "no submission"
  OUT/summary.txt                                    what the run could not grade or decide, also printed
  OUT/feedback/<student>/<assignment>/*.html         quick feedback pages (nbgrader's own: generate_feedback)
  OUT/results/<student>/<assignment>.json            one file per graded submission (how a stopped run resumes)

Each notebook runs in its own sandboxed process (see sandbox.py and limits.toml) with the instructor's locked
cells taken from `source/` (see plan.py). Submitted files are only read. A submission that cannot be graded
scores 0 with the reason in the CSV note and its feedback, and grading of the others goes on. Re-running skips
submissions whose files, source and grader are unchanged (use --fresh to grade everything again); manual scores
given in formgrader are kept either way.

While the notebooks run, stderr shows how far it is (progress.py): a bar on a terminal, a plain line every 10 s in
a log, with notebooks done of the total, the rate, the time elapsed and left, and the grader's own failures.

What a run costs, measured with bench/class_of_1000.py on our 2-core x86_64 machine on 2026-11-25 (README, "A large
class, measured"): 1,000 students x the ten assignments, 9,000 notebooks in a realistic mix, took 39 min with 2
workers: 0.52 core-seconds per notebook to run (0.1 to 1.8 s per notebook depending on the exercise, blank work
less), then 116 s to write the 9,000 submissions into the gradebook and 193 s for grades.csv and the feedback
pages, with 1.1 GiB in the grader process. Plan on notebooks x 0.5 core-s / cores, plus about 35 s per 1,000
submissions after the notebooks; the ETA after the first minute tells your own run's. For 10,000 students, shards
on several machines (--shard) over one PostgreSQL gradebook: about 13 core-hours.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from autograder import autograded, checker, database, feedback, gradebook, sandbox, shards
from autograder import plan as plan_module
from autograder.checker import CourseError
from autograder.course import CONFIG_NAME, REPO_ROOT, Course
from autograder.gradebook import TOTAL, GradebookError, Row
from autograder.plan import NotANotebook, make_plan, read_notebook, source_cells
from autograder.progress import Progress
from autograder.runner import KEPT_ENVIRONMENT, readable_paths, run_plan

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
CSV_COLUMNS = ("student", "assignment", "task", "title", "score", "max_score", "late_penalty", "note")
# Files of a submission folder copied to autograded/ beside the notebooks: nbgrader's generate_feedback copies
# them on into feedback/, where release_feedback needs both. Nothing else a student put there is copied.
KEPT_FILES = ("timestamp.txt", "submission_secret.txt")
KEPT_FILE_BYTES = 4096
# Imported before any notebook runs. Some imports rebind attributes of modules the tests rely on (loading
# torch._dynamo, as FlopCounterMode does on first use, replaces torch.manual_seed); doing them here, before the
# guard's record is taken, keeps a correct solution from looking like tampering.
PRELOAD = ("torch", "torch._dynamo", "torch.func", "torch.amp", "torch.utils.flop_counter", "torch.testing",
           "numpy", "numpy.testing", "einops", "jaxtyping", "beartype", "matplotlib", "matplotlib.pyplot",
           "IPython.core.interactiveshell", "traitlets.config")


@dataclass
class Job:
    student: str
    assignment: str
    folder: Path
    key: str


def preload() -> None:
    """Import once, in the grader, what every notebook needs; each notebook process is a fork and starts warm."""
    import importlib
    import matplotlib
    matplotlib.use("Agg")  # not the MPLBACKEND variable: a caller's later subprocesses (kernels) must not inherit it
    for name in PRELOAD:
        importlib.import_module(name)
    import io
    import torch
    torch.save(torch.nn.Parameter(torch.zeros(1)), io.BytesIO())  # first pickling adds caches to torch's classes
    for path in sorted((REPO_ROOT / "utils").glob("*.py")):
        importlib.import_module(f"utils.{path.stem}" if path.stem != "__init__" else "utils")


def default_course() -> Path:
    """The current folder when it is an nbgrader course (holds nbgrader_config.py), else this repository."""
    return Path.cwd() if (Path.cwd() / CONFIG_NAME).is_file() else REPO_ROOT


def find_submissions(submitted: Path) -> tuple[list[tuple[str, str, Path]], list[str]]:
    """(student, assignment, folder) for each submission, and a line for each folder that is not one."""
    found, skipped = [], []
    for student_dir in sorted(p for p in submitted.iterdir() if not p.name.startswith(".")):
        if not student_dir.is_dir() or student_dir.is_symlink() or not SAFE_NAME.match(student_dir.name):
            skipped.append(f"{student_dir.name!r}: not a student folder (letters, digits and _.@+- only)")
            continue
        for assignment_dir in sorted(p for p in student_dir.iterdir() if not p.name.startswith(".")):
            if assignment_dir.is_dir() and not assignment_dir.is_symlink() and SAFE_NAME.match(assignment_dir.name):
                found.append((student_dir.name, assignment_dir.name, assignment_dir))
            else:
                skipped.append(f"{student_dir.name}/{assignment_dir.name}: not an assignment folder")
    return found, skipped


def read_timestamp(folder: Path):
    """(submission time as naive UTC, '') from the folder's timestamp.txt, or (None, why there is none)."""
    from nbgrader.utils import parse_utc
    path = folder / "timestamp.txt"
    if not path.exists() and not path.is_symlink():
        return None, "no timestamp.txt"
    if path.is_symlink() or not path.is_file() or path.stat().st_size > KEPT_FILE_BYTES:
        return None, "timestamp.txt is not a small regular file"
    text = path.read_text(errors="replace").strip()
    if not text:
        return None, "timestamp.txt is empty"
    try:
        return parse_utc(text), ""
    except (ValueError, OverflowError, TypeError):
        return None, f"timestamp.txt is unreadable ({text[:40]!r})"


def _digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.is_file() and not path.is_symlink() else b"<missing>")
    return h.hexdigest()


def grader_digest(limits: sandbox.Limits) -> str:
    """Changes whenever anything a graded run depends on changes, so that results made before are stale: the grader,
    the course's `utils/` (what notebooks import), the instructor's `reference/` (the hidden tests' cases, expected
    results and checks), the limits, the versions of Python, torch and nbgrader, and the CPU dispatch variables."""
    import importlib.metadata
    import platform
    import torch
    code = [p for folder in ("autograder", "utils", "reference") for p in sorted((REPO_ROOT / folder).glob("*.py"))]
    code.append(REPO_ROOT / "autograder" / "limits.toml")
    versions = f"python {platform.python_version()} torch {torch.__version__} nbgrader {importlib.metadata.version('nbgrader')}"
    dispatch = {name: os.environ.get(name, "") for name in KEPT_ENVIRONMENT if name not in ("PATH", "LANG", "LC_ALL", "TZ")}
    return _digest(code, f"{limits!r} {versions} {dispatch}")  # the CPU kernels a notebook's numbers come from too


def job_key(course: Course, assignment: str, folder: Path, grader: str) -> str:
    names = course.notebooks(assignment)
    source = [course.source / assignment / f"{n}.ipynb" for n in names]
    submitted = [folder / f"{n}.ipynb" for n in names]
    return _digest(source + submitted, grader)


def check_hidden(plan, results: list[dict], expected_dir: Path | None) -> tuple[list[dict], list[str]]:
    """The results with every hidden test's verdict applied (a test cell that ran cleanly fails when the results its
    hidden tests handed in are wrong), and the grader's own faults, if any (checker.py: never the student's)."""
    pending = [(index, key) for index, cell in enumerate(plan.cells) for key in cell.hidden_keys
               if results[index].get("ok")]
    handed = [(key, results[index].get("handed", {}).get(key)) for index, key in pending]
    faults = []
    results = [{k: v for k, v in r.items() if k != "handed"} for r in results]
    for (index, key), verdict in zip(pending, checker.verdicts(handed, expected_dir)):
        if verdict["ok"] or not results[index]["ok"]:
            continue
        cell = plan.cells[index]
        # A wrong result fails on the hidden tests' first line (feedback shows it as a hidden failure, with its hint);
        # the grader's own fault is shown as what it is.
        line = None if verdict["fault"] else cell.hidden_lines.start
        results[index] = {**results[index], "ok": False, "error": verdict["error"], "line": line}
        if verdict["fault"]:
            faults.append(f"{plan.notebook}, {cell.grade_id}: {verdict['error']}")
    return results, faults


def grade_submission(job: Job, course: Course, limits: sandbox.Limits, readable: list[Path], work_root: Path,
                     stubs: dict, cases: dict[str, str], expected_dir: Path | None = None) -> dict:
    """Run every notebook of one submission; the result that goes to results/<student>/<assignment>.json."""
    notebooks, problems, faults = {}, [], []
    for name in course.notebooks(job.assignment):
        path = job.folder / f"{name}.ipynb"
        source = json.loads((course.source / job.assignment / f"{name}.ipynb").read_text())
        problem, submitted = "", {"cells": []}
        if not path.exists():
            present = ", ".join(sorted(p.name for p in job.folder.iterdir())) or "nothing"
            problem = f"missing notebook {name}.ipynb (the folder holds: {present})"
        else:
            try:
                submitted = read_notebook(path)
            except NotANotebook as error:
                problem = f"{name}.ipynb is not a valid notebook: {error}"
        if problem:
            problems.append(problem)
        plan = make_plan(name, source, submitted)
        runnable = not problem and submitted["cells"]
        workdir = work_root / job.student / job.assignment / name
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        if runnable:
            results, own_faults = check_hidden(plan, run_plan(plan, limits, workdir, readable, cases), expected_dir)
            faults += own_faults
            results = [feedback.for_students(cell, result, limits.feedback) for cell, result in zip(plan.cells, results)]
        else:
            results = [{"ok": False, "output": "", "error": "not run", "restored": [], "tampered": []} for _ in plan.cells]
        shutil.rmtree(workdir, ignore_errors=True)
        cells = [dict(kind=c.kind, grade_id=c.grade_id, points=c.points, visible_code=c.visible_code, **r)
                 for c, r in zip(plan.cells, results)]
        own_stubs = {gid: text for (a, nb, gid), text in stubs.items() if a == job.assignment and nb == name}
        record = autograded.record(source, submitted, plan, results, own_stubs, problem)
        if problem:  # as nbgrader does for a missing notebook: every graded cell scores 0
            record["grades"] = {gid: 0.0 for gid in record["grades"]}
        notebooks[name] = {"cells": cells, "flags": plan.flags, "ran": bool(runnable), "problem": problem, **record}
    return {"key": job.key, "student": job.student, "assignment": job.assignment, "problems": problems,
            "notebooks": notebooks, "grader_errors": faults}


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def run_jobs(jobs: list[Job], course: Course, limits: sandbox.Limits, readable: list[Path], out: Path,
             stubs: dict, cases: dict[str, str], expected_dir: Path | None = None,
             progress: Progress | None = None) -> None:
    """Grade `jobs` with up to `limits.workers` at once, each in a forked grader process of its own; `progress`
    advances as each one ends."""
    workers = limits.workers or os.cpu_count() or 1
    running: dict[int, Job] = {}

    def finish_one() -> None:
        pid, status = os.waitpid(-1, os.WNOHANG)
        while not pid:   # no worker done yet: show the progress if it is time, and look again shortly
            if progress is not None:
                progress.tick()
            time.sleep(0.05)
            pid, status = os.waitpid(-1, os.WNOHANG)
        job = running.pop(pid)
        failed = os.waitstatus_to_exitcode(status) != 0
        if progress is not None:
            progress.advance(len(course.notebooks(job.assignment)), failed)
        if failed and not result_path(out, job).exists():
            error = {"key": job.key, "student": job.student, "assignment": job.assignment, "notebooks": {},
                     "problems": [], "grader_errors": ["the grader failed on this submission (its traceback is in "
                                                       "the grader's output); an instructor will look at it"]}
            _write_atomically(result_path(out, job), json.dumps(error))

    for job in jobs:
        while len(running) >= workers:
            finish_one()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                result = grade_submission(job, course, limits, readable, out / "work", stubs, cases, expected_dir)
                _write_atomically(result_path(out, job), json.dumps(result))
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        running[pid] = job
    while running:
        finish_one()


def result_path(out: Path, job: Job) -> Path:
    return out / "results" / job.student / f"{job.assignment}.json"


def task_notes(notebook: dict) -> dict[str, str]:
    """Why each test cell of a graded notebook lost its points, where the reason is more than a failed check:
    the test or an answer cell before it timed out, crashed, was not run, or had a syntax error."""
    notes, pending = {}, []
    for cell in notebook["cells"]:
        if cell["kind"] in ("answer", "added") and not cell["ok"]:
            note = autograded.failure_note(cell["error"])
            if note:
                name = f"answer cell {cell['grade_id']!r}" if cell["kind"] == "answer" else "a cell you added"
                pending.append(f"{name}: {note}")
        if cell["kind"] == "test":
            if not cell["ok"]:
                own = autograded.failure_note(cell["error"])
                if cell["tampered"]:
                    own = "the tests' tools were changed while they ran: " + ", ".join(cell["tampered"][:5])
                if own or pending:
                    notes[cell["grade_id"]] = "; ".join(([f"the test {own}"] if own else []) + pending)
            pending = []
    return notes


def submission_notes(result: dict) -> tuple[list[str], dict[str, str]]:
    """(notes on the whole submission, notes per graded cell) of one result."""
    overall = list(result["problems"])
    per_cell = {}
    for name, notebook in result["notebooks"].items():
        if notebook["flags"]:
            overall.append(f"flagged for review: {name} uses {', '.join(notebook['flags'])}")
        tampered = sorted({t for c in notebook["cells"] for t in c["tampered"]})
        if tampered:
            overall.append(f"tests failed because the test tools were changed while they ran: {', '.join(tampered[:5])}")
        per_cell.update(task_notes(notebook))
    return overall, per_cell


def write_feedback(result: dict, out: Path, titles: dict) -> None:
    """Our quick HTML feedback for one graded submission (nbgrader's own is `nbgrader generate_feedback`)."""
    student, assignment = result["student"], result["assignment"]
    folder = out / "feedback" / student / assignment
    shutil.rmtree(folder, ignore_errors=True)
    overall, per_cell = submission_notes(result)
    for name, notebook in result["notebooks"].items():
        if notebook["ran"]:
            own_titles = {gid: title for (a, gid), title in titles.items() if a == assignment}
            feedback.write(folder / f"{name}.html", feedback.render(
                student, assignment, name, notebook["cells"], overall, own_titles, per_cell))
    if result["problems"]:
        feedback.write(folder / "problems.html", feedback.render_problems(student, assignment, result["problems"]))


def _stage_autograded(result: dict, folder: Path, staging: Path) -> None:
    """Write one submission's autograded notebooks (and its timestamp and secret) under `staging`."""
    import nbformat
    staging.mkdir(parents=True)
    for name, notebook in result["notebooks"].items():
        if "notebook" in notebook:
            node = nbformat.from_dict(notebook["notebook"])
            (staging / f"{name}.ipynb").write_text(nbformat.writes(node, version=4))
    for kept in KEPT_FILES:
        path = folder / kept
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= KEPT_FILE_BYTES:
            shutil.copyfile(path, staging / kept)


def _install(staged: Path, target: Path) -> None:
    """Put a staged autograded folder in place of the old one (each step a rename on the same file system)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    os.replace(staged, target)
    shutil.rmtree(old, ignore_errors=True)


def plan_jobs(course: Course, found: list, names: list[str], on_roster: set[str], create: bool, grader: str,
              out: Path, fresh: bool, summary: list[str]) -> tuple[list[Job], list[Job], list[Row]]:
    """(every submission of the run, those to run again, CSV rows for folders of unknown assignments)."""
    known = course.assignments()
    jobs, todo, extra_rows = [], [], []
    newcomers, refused = set(), set()
    for student, assignment, folder in found:
        if assignment not in known:
            problem = f"unknown assignment {assignment!r} (known: {', '.join(known)})"
            feedback.write(out / "feedback" / student / assignment / "problems.html",
                           feedback.render_problems(student, assignment, [problem]))
            extra_rows.append(Row(student, assignment, "-", "", 0.0, 0.0, None, problem))
            summary.append(f"not graded: {student}/{assignment}: {problem}")
            continue
        if assignment not in names:
            continue
        if student not in on_roster:
            (newcomers if create else refused).add(student)
            if not create:
                continue
        job = Job(student, assignment, folder, job_key(course, assignment, folder, grader))
        jobs.append(job)
        path = result_path(out, job)
        if fresh or not path.exists() or not reusable(json.loads(path.read_text()), job.key):
            path.unlink(missing_ok=True)
            todo.append(job)
    if newcomers:
        summary.append(f"not on the roster, added to the gradebook: {', '.join(sorted(newcomers))}")
    if refused:
        summary.append(f"not on the roster, not graded (Autograde.create_student is False): {', '.join(sorted(refused))}")
    return jobs, todo, extra_rows


def self_check_cache() -> Path:
    """Where passed self-checks are remembered (by a digest of everything they depended on)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cs336-primitives" / "self-check"


def self_check(course: Course, names: list[str], limits: sandbox.Limits, readable: list[Path], stubs: dict,
               cases: dict[str, str], grader: str, work: Path, expected_dir: Path | None = None) -> list[str]:
    """Grade the instructor's own solutions (source/) and an empty submission of each assignment exactly as a
    student's, before anyone's: CourseError naming the task and the error if a solution falls short of full marks
    or an empty notebook earns a point (a test that cannot fail). Returns the assignments checked (a check passed
    before, with the same source, references, grader, limits and versions, is remembered and not run again)."""
    cache = self_check_cache()
    todo = []
    for assignment in names:
        files = [course.source / assignment / f"{n}.ipynb" for n in course.notebooks(assignment)]
        key = _digest(files, f"{grader} {assignment}")
        if not (cache / key).exists():
            todo.append((assignment, key))
    jobs = []
    for assignment, key in todo:
        for who in ("solution", "blank"):
            folder = work / "submitted" / who / assignment
            folder.mkdir(parents=True, exist_ok=True)
            for name in course.notebooks(assignment):
                notebook = json.loads((course.source / assignment / f"{name}.ipynb").read_text())
                if who == "blank":
                    for cell in notebook["cells"]:
                        if plan_module.nbgrader_meta(cell).get("solution"):
                            cell["source"] = ""
                (folder / f"{name}.ipynb").write_text(json.dumps(notebook))
            jobs.append(Job(who, assignment, folder, key))
    run_jobs(jobs, course, limits, readable, work, stubs, cases, expected_dir)
    for job in jobs:
        result = json.loads(result_path(work, job).read_text())
        if result.get("grader_errors"):
            raise CourseError(f"{job.assignment}: grading the instructor's {job.student} failed: "
                              f"{'; '.join(result['grader_errors'])}")
        for name, notebook in result["notebooks"].items():
            for cell in notebook["cells"]:
                if cell["kind"] != "test":
                    continue
                if job.student == "solution" and not cell["ok"]:
                    raise CourseError(f"{job.assignment}: the instructor's solution fails {cell['grade_id']} in "
                                      f"{name}.ipynb: {cell.get('error_full') or cell['error']}")
                if job.student == "blank" and cell["ok"]:
                    raise CourseError(f"{job.assignment}: an empty submission passes {cell['grade_id']} in "
                                      f"{name}.ipynb: a test that cannot fail")
    cache.mkdir(parents=True, exist_ok=True)
    for assignment, key in todo:
        (cache / key).write_text(f"{assignment}: the solution earns every point, an empty notebook none\n")
    return [assignment for assignment, _ in todo]


def counted_assignments(course: Course, known: list[str], found: list[tuple[str, str, Path]]) -> list[str]:
    """The assignments a run without --assignment grades: submitted by someone, given a due date, or released."""
    handed_out = {a for _, a, _ in found} | gradebook.scheduled(course) | gradebook.released(course)
    return [a for a in known if a in handed_out]


def reusable(result: dict, key: str) -> bool:
    """An earlier result counts again only when everything it depended on is unchanged and the grader did not fail."""
    return result.get("key") == key and "grader_errors" in result and not result["grader_errors"]


def hidden_keys(course: Course, names: list[str]) -> list[str]:
    """The keys of every hidden test in the source notebooks of these assignments."""
    return list(dict.fromkeys(key for a in names for nb in course.notebooks(a)
                              for cell in source_cells(json.loads((course.source / a / f"{nb}.ipynb").read_text()))
                              for key in cell.hidden_keys))


def record(course: Course, jobs: list[Job], results: list[dict], create: bool, summary: list[str]) -> dict:
    """Write the run into the gradebook (one transaction) and then autograded/; return the CSV notes
    {(student, assignment, grade_id or TOTAL): text}. On GradebookError nothing is written anywhere."""
    autograded_root = course.folder("autograded")
    staging = autograded_root / f".staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    graded, notes, staged = [], {}, []
    try:
        for job, result in zip(jobs, results):
            if result.get("grader_errors"):  # never the student's fault, never scored: the gradebook keeps what it had
                summary += [f"NOT GRADED, the grader's fault (not the student's): {job.student}/{job.assignment}: {e}"
                            for e in result["grader_errors"]]
                notes[(job.student, job.assignment, TOTAL)] = "not graded: the grader failed; an instructor will look at it"
                continue
            timestamp, missing = read_timestamp(job.folder)
            overall, per_cell = submission_notes(result)
            if missing:
                summary.append(f"no submission time for {job.student}/{job.assignment} ({missing}): lateness not checked")
                overall.append(f"{missing}: lateness not checked")
            notes.update({(job.student, job.assignment, gid): text for gid, text in per_cell.items()})
            notes[(job.student, job.assignment, TOTAL)] = "; ".join(overall)
            summary += [f"could not grade part of {job.student}/{job.assignment}: {p}" for p in result["problems"]]
            summary += [f"{job.student}/{job.assignment}: {n}" for n in overall
                        if n.startswith(("flagged for review", "tests failed because"))]
            graded.append(gradebook.Graded(job.student, job.assignment, timestamp,
                                           {n: {"grades": nb.get("grades", {}), "comments": nb.get("comments", {})}
                                            for n, nb in result["notebooks"].items()},
                                           {n: ", ".join(nb["flags"]) for n, nb in result["notebooks"].items()
                                            if nb.get("flags")}))
            _stage_autograded(result, job.folder, staging / job.student / job.assignment)
            staged.append(job)
        lines, resubmitted = gradebook.write(course, graded, create)
        summary += lines
        for student, assignment in resubmitted:
            total = (student, assignment, TOTAL)
            notes[total] = "; ".join(filter(None, [gradebook.REGRADED_AFTER_HAND_GRADE, notes.get(total, "")]))
        for job in staged:
            _install(staging / job.student / job.assignment, course.folder("autograded", job.student, job.assignment))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return notes


def grade(submitted: Path | None, out: Path, names: list[str] | None = None, limits: sandbox.Limits | None = None,
          fresh: bool = False, shard: tuple[int, int] = (1, 1), course: Course | None = None) -> list[Row]:
    """Grade every submission under `submitted` into the course's gradebook and `out`; return the rows of
    `out/grades.csv`. Raises GradebookError, with nothing written to the gradebook, if it cannot be used."""
    course = course or Course.load(default_course())
    submitted = (submitted or course.folder("submitted")).resolve()
    out = out.resolve()
    autograded_root = course.folder("autograded")
    for a, b, what in ((out, submitted, "the output folder and the submissions folder"),
                       (autograded_root, submitted, "the autograded folder and the submissions folder")):
        if a.is_relative_to(b) or b.is_relative_to(a):
            raise ValueError(f"{what} must not contain one another ({a}, {b})")
    limits = limits or sandbox.load_limits()
    known = course.assignments()
    unknown_names = [n for n in names or [] if n not in known]
    if unknown_names:
        raise ValueError(f"no such assignment in {course.source}: {', '.join(unknown_names)}")
    summary: list[str] = []
    started = time.monotonic()
    # 1. The gradebook first: a locked or unreadable one stops the run before any notebook runs.
    on_roster = set(gradebook.roster(course))
    found, skipped = find_submissions(submitted)
    summary += [f"skipped {line}" for line in skipped]
    # 2. Only released work counts: the assignments named, else those someone submitted, given a due date or
    #    released through the exchange. An assignment never handed out gets no "no submission" zeros.
    names = names or counted_assignments(course, known, found)
    # Recording new or changed assignments in the gradebook (nbgrader's generate_assignment) goes on while the
    # grader imports torch.
    finish_sync = gradebook.start_sync(course, names)
    create = bool(course.config.Autograde.get("create_student", True))
    # 3. The submissions of this run (a shard takes every N-th student of the roster and the submitters).
    index, count = shard
    everyone = sorted(on_roster | {s for s, _, _ in found})
    mine = set(shards.members(everyone, index, count))
    found = [f for f in found if f[0] in mine]
    preload()
    synced, stubs = finish_sync()
    if synced:
        summary.append(f"recorded in the gradebook from source/ (nbgrader generate_assignment): {', '.join(synced)}")
    jobs, todo, extra_rows = plan_jobs(course, found, names, on_roster, create, grader_digest(limits), out, fresh,
                                       summary)
    # The hidden tests' cases, made in a trusted child process (checker.py): the grader never imports `reference`.
    expected_dir = out / "work" / ".expected"  # the expected results, pickled once by checker.py; no notebook reads it
    cases = checker.cases_for(hidden_keys(course, names), expected_dir) if todo else {}
    private = [submitted, out, course.root, autograded_root, self_check_cache()]
    readable = readable_paths(REPO_ROOT, private)
    # 4. The grader checks itself first: the instructor's solutions earn every point, empty notebooks none.
    checked = self_check(course, sorted({job.assignment for job in todo}), limits, readable, stubs, cases,
                         grader_digest(limits), out / "work" / "self-check", expected_dir) if todo else []
    if checked:
        summary.append(f"self-check passed (solutions full marks, empty notebooks 0): {', '.join(checked)}")
    # 5. Run the notebooks (forked, sandboxed workers); each result is a file, so a stopped run resumes. Progress
    #    on stderr: a bar on a terminal, a plain line every few seconds in a log (progress.py).
    def notebooks(some: list[Job]) -> int:
        return sum(len(course.notebooks(job.assignment)) for job in some)
    label = "grading" if (index, count) == (1, 1) else f"grading shard {index}/{count}"
    with Progress(notebooks(jobs), reused=notebooks(jobs) - notebooks(todo), label=label) as progress:
        run_jobs(todo, course, limits, readable, out, stubs, cases, expected_dir, progress)
    shutil.rmtree(out / "work", ignore_errors=True)
    ran = time.monotonic()
    summary.insert(0, f"graded {len(todo)} submission(s) in {ran - started:.1f} s "
                      f"({len(jobs) - len(todo)} unchanged, reused)")
    # 6. One transaction into the gradebook; autograded notebooks staged, and put in place only once it is written.
    results = [json.loads(result_path(out, job).read_text()) for job in jobs]
    notes = record(course, jobs, results, create, summary)
    summary.insert(1, f"recorded {len(jobs)} submission(s) in the gradebook and autograded/ in {time.monotonic() - ran:.1f} s")
    titles = {(a, c["grade_id"]): c["title"] for a in names for nb in course.notebooks(a)
              for c in autograded.graded_cells(json.loads((course.source / a / f"{nb}.ipynb").read_text()))}
    # 7. grades.csv from the gradebook (manual scores and penalties included), feedback pages, the summary.
    students = sorted((on_roster | {j.student for j in jobs}) & mine)
    rows = gradebook.rows(course, students, names, {(j.student, j.assignment) for j in jobs}, titles, notes)
    rows += extra_rows
    for result in results:
        write_feedback(result, out, titles)
    summary += pending_lines(rows)
    summary += [f"no submission: {a}: {', '.join(r.student for r in rows if r.assignment == a and r.note == 'no submission')}"
                for a in names if any(r.assignment == a and r.note == "no submission" for r in rows)]
    write_csv(rows, out / "grades.csv")
    _write_atomically(out / "summary.txt", "\n".join(summary) + "\n")
    for line in summary:
        print(line, file=sys.stderr)
    return rows


def pending_lines(rows: list[Row]) -> list[str]:
    """A line per assignment with cells waiting for a person (manual grading in formgrader)."""
    lines = []
    for assignment in sorted({r.assignment for r in rows}):
        waiting = [r for r in rows if r.assignment == assignment and r.task != TOTAL and r.score is None]
        if waiting:
            cells = sorted({r.task for r in waiting})
            lines.append(f"needs manual grading (formgrader): {assignment}: {len(waiting)} answer(s) in "
                         f"{len({r.student for r in waiting})} submission(s), cells {', '.join(cells)}")
    return lines


def write_csv(rows: list[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:g}"

    with open(temporary, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            writer.writerow((r.student, r.assignment, r.task, r.title, number(r.score), number(r.max_score),
                             number(r.late_penalty), r.note))
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submitted", type=Path, nargs="?", help="folder of <student>/<assignment>/ submissions "
                        "(default: the course's submitted/)")
    parser.add_argument("--course", type=Path, help="the nbgrader course folder (default: the current folder if it "
                        "holds nbgrader_config.py, else this repository)")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="where grades.csv, the summary and feedback go")
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    parser.add_argument("--workers", type=int, help="submissions graded at once (default: limits.toml, 0 = all cores)")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="override a limit of limits.toml")
    parser.add_argument("--fresh", action="store_true", help="run every notebook again, ignoring earlier results")
    parser.add_argument("--shard", default="1/1", metavar="K/N", help="grade only the K-th of N equal slices of the "
                        "class; 'auto': from a Slurm array's or a Kubernetes Indexed Job's environment (shards.py)")
    parser.add_argument("--shard-count", type=int, metavar="N", help="with --shard auto under Kubernetes: how many "
                        "shards (default: the GRADER_SHARDS variable)")
    args = parser.parse_args()
    course_root = args.course or default_course()
    if not (course_root / "source").is_dir():
        parser.error(f"{course_root} is not a course folder (it has no source/)")
    course = Course.load(course_root)
    submitted = args.submitted or course.folder("submitted")
    if not submitted.is_dir():
        parser.error(f"{submitted} is not a folder")
    overrides = args.limit + ([f"workers={args.workers}"] if args.workers is not None else [])
    try:
        limits = sandbox.load_limits(overrides=overrides)
        index, count, shard_from = shards.resolve(args.shard, args.shard_count, os.environ)
    except ValueError as error:  # shards.ShardError says what was read and what to do
        parser.error(str(error))
    if (index, count) != (1, 1) or args.shard != "1/1":
        print(f"shard {index} of {count}, from {shard_from}", file=sys.stderr)
    print(f"sandbox on this machine: {', '.join(sandbox.probe(limits))}", file=sys.stderr)
    try:
        rows = grade(submitted, args.out, args.assignment, limits, args.fresh, (index, count), course)
    except (GradebookError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2)
    except CourseError as error:
        print(f"error: the course's hidden tests are broken; nobody was graded.\n{error}", file=sys.stderr)
        raise SystemExit(2)
    for r in rows:
        if r.task in (TOTAL, "-"):
            print(f"{r.student:20s} {r.assignment:24s} {r.score:g} / {r.max_score:g}"
                  f"{f'  (late penalty {r.late_penalty:g})' if r.late_penalty else ''}{f'  {r.note}' if r.note else ''}")
    print(f"Wrote the gradebook ({database.safe_url(course.db_url)}), {course.folder('autograded')}/, {args.out / 'grades.csv'} "
          f"and {args.out / 'summary.txt'}")
    failed = [r for r in rows if r.task == TOTAL and r.note.startswith("not graded: the grader failed")]
    if failed:
        print(f"error: the grader failed on {len(failed)} submission(s), which were not graded (summary.txt says why)",
              file=sys.stderr)
        raise SystemExit(3)


if __name__ == "__main__":
    main()
