"""Runs in the grader: one grading run, as a short list of named stages.

    start the zygote    the clean parent of every notebook process (a fresh interpreter; autograder/sandboxed/)
    begin               lock the course (or shard) and the output folder, clean up after a killed run (run.py)
    find                the submissions, the roster, the assignments to grade; the gradebook checked and synced
    self-check          the instructor's solutions earn every point, empty notebooks none (selfcheck.py)
    run                 every changed submission's notebooks, sandboxed, several at once (workers.py)
    record              one transaction into the gradebook, then autograded/ (record.py)
    write               grades.csv from the gradebook, feedback pages, the summary (write.py)
"""
from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from autograder import cgroups, database, due_dates, gradebook, shards
from autograder.course import REPO_ROOT, Course, default_course
from autograder.errors import GraderError, Refused
from autograder.gradebook import Row, RunNotes
from autograder.grader import ledger
from autograder.grader import run as run_module
from autograder.grader.find import find_submissions
from autograder.grader.notebooks import NotebookProcess, Zygote
from autograder.grader.plan import source_cells
from autograder.grader.record import install, record, stopped_after_commit
from autograder.grader.selfcheck import digest, self_check
from autograder.grader.workers import Job, Setting, not_graded, read_result, result_path, reusable, run_jobs
from autograder.grader.write import pending_events, write_feedback
from autograder.grades_csv import write_csv, write_summary
from autograder.limits import Limits, fit_to_machine, load_limits
from autograder.outcome import Event, EventKind, Status, SubmissionOutcome, in_order
from autograder.progress import Progress
from autograder.protocol import KEPT_ENVIRONMENT
from autograder.trusted.checker import Checker


def grade(submitted: Path | None, out: Path, *, names: list[str] | None = None, limits: Limits | None = None,
          fresh: bool = False, shard: tuple[int, int] = (1, 1), course: Course | None = None,
          start_over: bool = False, re_record: tuple[str, ...] = ()) -> list[Row]:
    """Grade every submission under `submitted` into the course's gradebook and `out`; return the rows of
    `out/grades.csv`. Raises GradebookError (nothing written to the gradebook; StoppedAfterCommit, its subclass:
    the commit went through, and the message says what the gradebook holds and what was not written), RunLocked
    (another run is on), CourseError (the self-check failed: nobody graded) or OSError naming a file the run could
    not write (before its commit: nothing written to the gradebook). `start_over` and `re_record`: ledger.check."""
    course = course or Course.load(default_course())
    submitted = (submitted or course.folder("submitted")).resolve()
    out = out.resolve()
    _check_folders(course, submitted, out)
    limits, fitted = fit_to_machine(course_limits(course, limits or load_limits()))  # MemoryTooSmall: stop now
    shards.check_output(out, shard)  # an output folder holds one shard's grades, never another's
    started = time.monotonic()
    database.check(course.db_url)  # a gradebook that cannot be used stops the run before anything is written
    accepted = ledger.check(course, out, start_over, re_record)  # and so does one that lost what runs recorded
    memory = cgroups.memory_events()  # the kernel's OOM kills during the run are named in its summary (issue #62)
    private = [submitted, out, course.root, course.folder("autograded"), REPO_ROOT]
    zygote, setting = None, None
    try:
        with run_module.begin(course, submitted, out, limits, shard) as run:
            run.summary.append(Event(EventKind.MACHINE, f"on this machine: {fitted}"))
            run.summary += [Event(EventKind.LEDGER, note) for note in accepted.notes]
            # A fresh interpreter (exec'd, given no descriptor but its socket): it never holds what this process
            # reads, so it starts now, while the submissions are found, and is stopped if there is nothing to grade.
            zygote = Zygote(walled=private, preload=course.imports())
            found = find(run, names)
            planned = plan_jobs(run, found, fresh)
            names, jobs, todo = found.names, planned.jobs, planned.todo
            if todo:
                import utils.rules  # noqa: F401 - what each worker needs, imported once (without torch)
            else:
                zygote.close()
                zygote = None
            stubs = synced(run, found)
            setting = prepare(run, zygote, names, stubs, hidden=bool(todo))
            if zygote is not None:  # there is work (todo)
                run.summary.append(Event(EventKind.MACHINE,
                                         f"sandbox on this machine: {', '.join(walls(zygote, setting.limits))}"))
            checked = self_check(setting, sorted({j.assignment for j in todo}), grader_digest(limits),
                                 run.work / "self-check") if todo else []
            if checked:
                run.summary.append(Event(EventKind.SELF_CHECK, "self-check passed (solutions full marks, empty "
                                         f"notebooks 0): {', '.join(checked)}"))
            unwritten = run_notebooks(run, setting, jobs, todo)
            run.summary.append(Event(EventKind.GRADED, f"graded {len(todo)} submission(s) in "
                                     f"{time.monotonic() - started:.1f} s ({len(jobs) - len(todo)} unchanged, reused)"))
            recording = time.monotonic()
            results = [unwritten.get((j.student, j.assignment)) or read_result(result_path(out, j))
                       or not_graded(j, f"its result file {result_path(out, j)} could not be read back")
                       for j in jobs]
            try:
                recorded = record(run, jobs, results, course.autograde().create_student)
            except database.GradebookError as error:  # nothing written: say what the notebooks' run left
                raise database.GradebookError(f"{error}{kept_for_a_rerun(run, todo, unwritten, error.results_kept)}",
                                              results_kept=error.results_kept or bool(todo)) from None
            step = 0  # after the commit: each step that fails is named, with what the gradebook holds (issue #62)
            try:
                install(run, recorded)
                step = 1
                ledger.write(course, out)
                run.summary.append(Event(EventKind.RECORDED, f"recorded {recorded.count} submission(s) in the "
                                         f"gradebook and autograded/ in {time.monotonic() - recording:.1f} s"))
                step = 2
                rows = write(run, found, jobs, results, recorded.notes, planned.extra_rows, memory)
                step = 3
                shards.write_output_record(out, shard, sorted(found.mine))  # last: the shard's output is complete
            except (database.GradebookError, OSError) as error:
                raise stopped_after_commit(run, recorded, len(jobs), step, error) from None
            return rows
    finally:
        if setting is not None and setting.checker is not None:
            setting.checker.close()
        if zygote is not None:
            zygote.close()


def kept_for_a_rerun(run: run_module.Run, todo: list, unwritten: dict, said_already: bool) -> str:
    """What a run that ran its notebooks but could not write the gradebook leaves for the next (issue #49); nothing
    when the gradebook's error already said it (`GradebookError.results_kept`)."""
    if not todo or said_already:
        return ""
    kept = len(todo) - len(unwritten)
    return (f" The {kept} submission(s) this run graded are kept in {run.out / 'results'}: a re-run only writes them "
            "into the gradebook, and no notebook runs again" + (f" ({len(unwritten)} whose result file could not be "
                                                                  "written are graded again)" if unwritten else "") + ".")


def _check_folders(course: Course, submitted: Path, out: Path) -> None:
    autograded_root = course.folder("autograded")
    for a, b, what in ((out, submitted, "the output folder and the submissions folder"),
                       (autograded_root, submitted, "the autograded folder and the submissions folder")):
        if a.is_relative_to(b) or b.is_relative_to(a):
            raise Refused(f"{what} must not contain one another ({a}, {b})")


def course_limits(course: Course, limits: Limits) -> Limits:
    """The limits, with the course's own nbgrader execution time-out (c.Execute.timeout) as the per-cell limit when
    the course sets one and the command line did not give cell_seconds (`--limit cell_seconds=...` wins, whatever
    its value). Only a time-out the course sets counts, not nbgrader's default: hence the `in config` check."""
    if "cell_seconds" in limits.overridden:
        return limits
    for section in ("Execute", "ExecutePreprocessor"):
        timeout = course.config[section].get("timeout") if section in course.config else None
        if isinstance(timeout, (int, float)) and timeout > 0:
            return replace(limits, cell_seconds=float(timeout), notebook_seconds=max(limits.notebook_seconds, timeout))
    return limits


# ---- find ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Found:
    """What a run grades (`find`): its shard's submissions, (student, assignment, folder) each; the assignments it
    grades (`names`); the roster; the students of its shard (`mine`: on the roster or with a submission); and the
    gradebook's sync of those assignments, begun (gradebook.start_sync; `synced` finishes it)."""
    submissions: list[tuple[str, str, Path]]
    names: list[str]
    on_roster: frozenset[str]
    mine: frozenset[str]
    sync: Callable[[], tuple[list[str], dict]]


def find(run: run_module.Run, names: list[str] | None) -> Found:
    """The submissions, assignments and students of this run (see Found); the gradebook's sync begun."""
    known = run.course.assignments()
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise Refused(f"no such assignment in {run.course.source}: {', '.join(unknown)}")
    on_roster = frozenset(gradebook.roster(run.course))
    found, skipped = find_submissions(run.submitted)
    run.summary += [Event(EventKind.SKIPPED, f"skipped {line}") for line in skipped]
    # Only released work counts: the assignments named, else those someone submitted, given a due date or released
    # through the exchange. An assignment never handed out gets no "no submission" zeros.
    handed_out = {a for _, a, _ in found} | gradebook.scheduled(run.course) | gradebook.released(run.course)
    names = names or [a for a in known if a in handed_out]
    index, count = run.shard
    everyone = sorted(on_roster | {s for s, _, _ in found})
    mine = frozenset(shards.members(everyone, index, count))
    return Found([f for f in found if f[0] in mine], names, on_roster, mine, gradebook.start_sync(run.course, names))


def synced(run: run_module.Run, found: Found) -> dict:
    """Finish recording the run's assignments in the gradebook (`found.sync`, said in the summary when it recorded
    any); the answer cells' released text, (assignment, notebook, grade_id) -> text."""
    recorded, stubs = found.sync()
    if recorded:
        run.summary.append(Event(EventKind.SYNCED, "recorded in the gradebook from source/ (nbgrader "
                                 f"generate_assignment): {', '.join(recorded)}"))
    return stubs


def grader_digest(limits: Limits) -> str:
    """Changes whenever anything a graded result depends on changes, so that results made before are stale: the
    grader, the course's `utils/` (what notebooks import), the instructor's `reference/` (the hidden tests' cases,
    expected results and checks), the limits (not the number of workers), the versions of Python, torch and
    nbgrader, and the CPU dispatch variables."""
    import importlib.metadata
    code = sorted((REPO_ROOT / "autograder").rglob("*.py")) + [REPO_ROOT / "autograder" / "limits.toml"]
    code += [p for folder in ("utils", "reference") for p in sorted((REPO_ROOT / folder).glob("*.py"))]
    versions = (f"python {platform.python_version()} torch {importlib.metadata.version('torch')} "
                f"nbgrader {importlib.metadata.version('nbgrader')}")
    dispatch = {name: os.environ.get(name, "") for name in KEPT_ENVIRONMENT if name not in ("PATH", "LANG", "LC_ALL", "TZ")}
    return digest(code, f"{replace(limits, workers=0)!r} {versions} {dispatch}")


def job_key(run: run_module.Run, assignment: str, folder: Path, grader: str) -> str:
    """What a submission's grade depends on: the grader, the assignment's source folder, the submission's files."""
    def files(root: Path) -> list[Path]:
        return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and ".ipynb_checkpoints" not in p.parts)
    return digest(files(run.course.source / assignment) + files(folder), grader)


@dataclass(frozen=True)
class Planned:
    """The run's work (`plan_jobs`): every submission it records (`jobs`), those whose notebooks run again (`todo`;
    the others' earlier results are reused), and grades.csv's rows for folders named after no assignment."""
    jobs: list[Job]
    todo: list[Job]
    extra_rows: list[Row]


def plan_jobs(run: run_module.Run, found: Found, fresh: bool) -> Planned:
    """The run's jobs (see Planned); with `fresh`, no earlier result is reused."""
    known = run.course.assignments()
    create = run.course.autograde().create_student
    grader = grader_digest(run.limits)
    jobs: list[Job] = []
    todo: list[Job] = []
    extra_rows: list[Row] = []
    newcomers: set[str] = set()
    refused: set[str] = set()
    for student, assignment, folder in found.submissions:
        if assignment not in known:
            extra_rows.append(unknown_assignment(run, student, assignment, known))
            continue
        if assignment not in found.names:
            continue
        if student not in found.on_roster:
            (newcomers if create else refused).add(student)
            if not create:
                continue
        job = Job(student, assignment, folder, job_key(run, assignment, folder, grader))
        jobs.append(job)
        if not reused(run, job, fresh):
            todo.append(job)
    if newcomers:
        run.summary.append(Event.new_students(sorted(newcomers)))
    if refused:
        run.summary.append(Event(EventKind.SUBMISSION, "not on the roster, not graded (Autograde.create_student is "
                                 f"False): {', '.join(sorted(refused))}"))
    return Planned(jobs, todo, extra_rows)


def unknown_assignment(run: run_module.Run, student: str, assignment: str, known: list[str]) -> Row:
    """A submitted folder named after no assignment of the course: its problems page, its summary line, and its
    grades.csv row."""
    from autograder.grader import feedback
    problem = f"unknown assignment {assignment!r} (known: {', '.join(known)})"
    feedback.write(run.out / "feedback" / student / assignment / "problems.html",
                   feedback.render_problems(student, assignment, [problem]))
    run.summary.append(Event(EventKind.SUBMISSION, f"not graded: {student}/{assignment}: {problem}"))
    return Row(student, assignment, "-", "", 0.0, 0.0, None, problem, Status.UNKNOWN_ASSIGNMENT)


def reused(run: run_module.Run, job: Job, fresh: bool) -> bool:
    """Whether the job's earlier result counts again (`workers.reusable`; never with `fresh`); when it does not, its
    file is removed, and an earlier result that could not be read is said in the summary."""
    path = result_path(run.out, job)
    earlier = None if fresh else read_result(path)
    if path.exists() and earlier is None and not fresh:
        run.summary.append(Event(EventKind.UNREADABLE_RESULT,
                                 f"an earlier result could not be read and is graded again: {path}"))
    if reusable(earlier, job.key):
        return True
    try:
        path.unlink(missing_ok=True)
    except OSError:  # its folder is not one (the write will say so, for this submission only)
        pass
    return False


def prepare(run: run_module.Run, zygote: Zygote | None, names: list[str], stubs: dict, hidden: bool) -> Setting:
    """What every worker shares: the assignments' source notebooks (read once, here), the run's trusted checker
    (which makes the hidden tests' cases and expected results once; only when notebooks run: `hidden`), the course's
    files and limits."""
    sources = {a: run.course.sources(a) for a in names}
    keys = list(dict.fromkeys(key for a in names for notebook in sources[a].values()
                              for cell in source_cells(notebook) for key in cell.hidden_keys)) if hidden else []
    coursedir = run.course.coursedir
    checker = Checker(keys, forker=zygote) if keys else None   # forked from the zygote's preload, where there is one
    return Setting(run.course.source, sources, run.limits, zygote, stubs, checker,
                   ignore=list(coursedir.ignore), keep_student=dict(run.course.autograde().exclude_overwriting),
                   file_limit=int(coursedir.max_file_size) * 1000)


# ---- run -------------------------------------------------------------------------------------------------------
def run_notebooks(run: run_module.Run, setting: Setting, jobs: list[Job], todo: list[Job]) -> dict:
    """Every changed submission, several at once; progress on stderr (a bar on a terminal, a line every 10 s in a
    log). Returns the results that could not be written to their files."""
    def notebooks(some: list[Job]) -> int:
        return sum(len(setting.sources[job.assignment]) for job in some)
    index, count = run.shard
    label = "grading" if (index, count) == (1, 1) else f"grading shard {index}/{count}"
    with Progress(notebooks(jobs), reused=notebooks(jobs) - notebooks(todo), label=label) as progress:
        return run_jobs(todo, setting, run.out, progress)


# ---- write -----------------------------------------------------------------------------------------------------
def write(run: run_module.Run, found: Found, jobs: list[Job], results: list[SubmissionOutcome], notes: RunNotes,
          extra_rows: list[Row], memory: cgroups.MemoryEvents) -> list[Row]:
    """grades.csv from the gradebook (manual scores and penalties included) and the run's `notes`, feedback pages,
    the summary (with the kernel's OOM kills since `memory`, read at the run's start, when there were any)."""
    course, names = run.course, found.names
    titles = gradebook.titles(course, names)
    students = sorted((found.on_roster | {j.student for j in jobs}) & found.mine)
    rows = gradebook.rows(course, students, names, notes)
    rows += extra_rows
    for result in results:
        if result.status is Status.GRADED:
            write_feedback(result, run.out, titles, course.sources(result.assignment))
    run.summary += pending_events(rows)
    missing = {a: [r.student for r in rows if r.assignment == a and r.status is Status.NO_SUBMISSION] for a in names}
    run.summary += [Event.no_submission(a, students) for a, students in missing.items() if students]
    run.summary += [Event(EventKind.SUBMISSION, line) for line in due_dates.grading_warnings(course, names)]
    killed = cgroups.grader_oom_kills_since(memory)
    if killed:  # "no memory limit" above is the job's limit; the machine may still have run out (issue #62)
        run.summary.append(Event(EventKind.MACHINE, f"out of memory during this run: {killed}; a submission whose "
                                 "grading it stopped is NOT GRADED above, and the next run grades it again"))
    write_csv(rows, run.out / "grades.csv")
    summary = in_order(run.summary)
    write_summary(run.out, summary)
    for event in summary:
        print(event.text, file=sys.stderr)
    return rows


LANDLOCK_FILES = "landlock files"  # the wall a notebook process names when Landlock guards the files (sandboxed/zygote.py)


class WeakSandbox(GraderError):
    """This machine cannot build the walls that keep the course's files from a notebook; the message says which."""


def walls(zygote: Zygote, limits: Limits) -> list[str]:
    """The walls of a notebook process started now; WeakSandbox when Landlock is missing and limits require it."""
    process = NotebookProcess(zygote, 0, limits)
    built = process.walls
    process.kill()
    if LANDLOCK_FILES not in built:
        if limits.require_landlock:
            raise WeakSandbox(f"this kernel ({platform.release()}) has no Landlock, so a student's notebook could read "
                              "the course's files (source/, reference/, other submissions); nobody was graded. Grade "
                              "on Linux 5.13 or newer, or, for a run of your own that no student's code is in, "
                              "--limit require_landlock=false")
        built.append("NO LANDLOCK: a notebook can read every file its uid can (require_landlock = false)")
    return built


def probe(limits: Limits | None = None) -> list[str]:
    """The walls a notebook process gets on this machine: one started through a zygote, asked, and stopped."""
    limits = limits or load_limits()
    zygote = Zygote(walled=[REPO_ROOT], preload=[])
    try:
        process = NotebookProcess(zygote, 0, limits)
        walls = process.walls
        process.kill()
        return walls
    finally:
        zygote.close()
