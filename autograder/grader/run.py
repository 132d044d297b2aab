"""Runs in the grader: one grading run's own ground. A lock says the course (or this shard of it) is being graded and
by whom; a private work folder holds what the run alone uses; leftovers of a killed run are removed at the start;
and a ledger of what earlier runs recorded stops a run from writing into a gradebook that has lost it.

Locks (flock, released by the kernel when the run ends however it ends):
    <course>/.grading.lock                    a whole-class run holds it alone; shards hold it shared
    <course>/.grading-shard-K-of-N.lock       one run per shard
    <out>/.lock                               one run per output folder
Each holder writes who it is and since when into the lock file it holds alone; a run that finds a lock taken stops at
once with that, and nothing is written.
"""
from __future__ import annotations

import datetime
import fcntl
import getpass
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.course import Course
from autograder.database import GradebookError, explain, safe_url
from autograder.errors import GraderError
from autograder.limits import Limits
from autograder.outcome import Event, EventKind

LEDGER = "gradebook-ledger.json"               # where runs before issue #49 kept it: in the output folder
COURSE_LEDGER = ".gradebook-ledger.json"        # where it is kept now: in the course folder, with the gradebook


class RunLocked(GraderError):
    """Another run grades this course, shard or output folder now; the message says who and since when."""


def _holder() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "user": getpass.getuser(),
            "since": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:300]}


def _describe(path: Path) -> str:
    try:
        who = json.loads(path.read_text() or "{}")
        return (f"{who['user']}@{who['host']} (pid {who['pid']}) since {who['since']}: {who['command']}"
                if who else "a run that has not said who it is yet")
    except (OSError, ValueError, KeyError, TypeError):
        return "a run that did not say who it is"


def _lock(stack: ExitStack, path: Path, shared: bool = False) -> bool:
    """Take the flock on `path` (shared or alone) for the run; False when another run holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    stack.callback(os.close, fd)
    if not shared:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder()).encode(), 0)
    return True


def _held_shards(root: Path) -> list[str]:
    """Who holds each shard lock of the course now."""
    held = []
    for path in sorted(root.glob(".grading-shard-*.lock")):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            held.append(f"{path.name}: {_describe(path)}")
        finally:
            os.close(fd)
    return held


@dataclass
class Run:
    """One grading run: its course, folders, limits and shard, its private work folder, and the lines of its
    summary."""
    course: Course
    submitted: Path
    out: Path
    limits: Limits
    shard: tuple[int, int]
    work: Path
    summary: list[Event] = field(default_factory=list)  # summary.txt and summary.json (outcome.in_order)
    mine: set[str] = field(default_factory=set)  # the students of this run's shard


@contextmanager
def begin(course: Course, submitted: Path, out: Path, limits: Limits, shard: tuple[int, int]) -> Iterator[Run]:
    """The run, locked and on clean ground; its work folder is removed at the end, whatever happens."""
    out.mkdir(parents=True, exist_ok=True)
    root = course.root
    index, count = shard
    with ExitStack() as stack:
        course_lock = root / ".grading.lock"
        if not _lock(stack, course_lock, shared=(index, count) != (1, 1)):
            raise RunLocked(f"the course at {root} is being graded now by {_describe(course_lock)}; one run at a time "
                            "(wait for it, or stop it; its lock goes when it ends)")
        if (index, count) == (1, 1):
            held = _held_shards(root)
            if held:  # a whole-class run after shards: they still run
                raise RunLocked(f"shards of the course at {root} are being graded now: {'; '.join(held)}")
        else:
            shard_lock = root / f".grading-shard-{index}-of-{count}.lock"
            if not _lock(stack, shard_lock):
                raise RunLocked(f"shard {index} of {count} is being graded now by {_describe(shard_lock)}")
        if not _lock(stack, out / ".lock"):
            raise RunLocked(f"the output folder {out} is in use by {_describe(out / '.lock')}; give each run its own --out")
        removed = clean_leftovers(course, out, alone=(index, count) == (1, 1))
        work = Path(tempfile.mkdtemp(prefix=owned_name("cs336-grading") + "-"))  # private (0700), on no course disk
        stack.callback(shutil.rmtree, work, True)
        run = Run(course, submitted, out, limits, shard, work)
        if removed:
            run.summary.append(Event(EventKind.CLEANED, f"removed what a stopped run had left: {', '.join(removed[:5])}"
                                     f"{f' and {len(removed) - 5} more' if len(removed) > 5 else ''}"))
        yield run


def clean_leftovers(course: Course, out: Path, alone: bool) -> list[str]:
    """Remove what a killed run left: half-written files in `out` (this run holds its lock), the work folders of runs
    of this machine no longer alive, and the autograded/ staging folders of runs no longer alive (all of them when this
    run grades the whole class alone)."""
    removed = []
    for path in sorted(Path(tempfile.gettempdir()).glob("cs336-grading-*")):
        if owner_gone(path.name.removeprefix("cs336-grading").rsplit("-", 1)[0]):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    for path in sorted(out.rglob(".*.tmp")):
        path.unlink(missing_ok=True)
        removed.append(str(path.relative_to(out)))
    autograded = course.folder("autograded")
    for path in sorted(autograded.glob(".staging-*")) + sorted(autograded.glob("*/.*.old-*")):
        if alone or owner_gone(path.name):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


def owned_name(prefix: str) -> str:
    """A name for something this run writes and removes: `prefix-<pid>-<host>`, so that a later run can tell whether
    its owner is gone."""
    return f"{prefix}-{os.getpid()}-{socket.gethostname()}"


def owner_gone(name: str) -> bool:
    """True when `name` (from owned_name) belongs to a run on this machine that is no longer alive."""
    pid, _, host = name.rsplit(".old", 1)[-1].removeprefix(".staging").removeprefix("-").partition("-")
    return host == socket.gethostname() and pid.isdigit() and not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


# ---- the ledger: what earlier runs recorded -----------------------------------------------------------------------
# It lives with the gradebook, not with a run's output (issue #49: after `make clean`, or with a fresh --out, an
# emptied gradebook was taken as new and every late penalty vanished): in the course folder, beside the default
# sqlite gradebook and nbgrader_config.py, one per course whatever the gradebook (sqlite or PostgreSQL), naming the
# gradebook it describes. It carries its own digest, so a ledger cut short is told from a whole one and refused.
LEDGER_VERSION = 2


def ledger_path(course: Course) -> Path:
    """Where the course's ledger lives: `<course>/.gradebook-ledger.json`."""
    return course.root / COURSE_LEDGER


def _ledger_digest(body: dict) -> str:
    import hashlib
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class DamagedLedger(GradebookError):
    """The ledger exists but cannot be read whole: it cannot say whether the gradebook lost records."""


def read_ledger(path: Path) -> tuple[set[tuple[str, str]], set[str]] | None:
    """(submissions, assignments with a due date) the ledger at `path` says the gradebook held; None when there is
    no ledger; DamagedLedger when it is there but not whole (cut short, edited, not a ledger)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DamagedLedger(_damaged(path, error.strerror or str(error))) from None
    try:
        ledger = json.loads(text)
        body = {k: v for k, v in ledger.items() if k != "sha256"}
        if ledger.get("version") == LEDGER_VERSION and ledger.get("sha256") != _ledger_digest(body):
            raise ValueError("its digest does not match its contents")
        return {tuple(s) for s in ledger["submissions"]}, set(ledger["due"])
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DamagedLedger(_damaged(path, str(error)[:200])) from None


def _damaged(path: Path, why: str) -> str:
    return (f"the gradebook's ledger {path} is damaged ({why}), so nothing can tell whether the gradebook lost what "
            "earlier runs recorded (submissions, due dates: late penalties). Nothing was written. Check the gradebook "
            "(python -m autograder.deadlines show; nbgrader db assignment list); when it is whole, run again with "
            "--start-over, which takes the gradebook as it is and writes a new ledger")


def check_ledger(course: Course, out: Path, start_over: bool) -> None:
    """GradebookError when the gradebook lacks what the course's ledger (and an older run's OUT/gradebook-ledger.json,
    where one is left) says earlier runs recorded (submissions, due dates), or when a ledger is damaged; unless
    `start_over`. Runs before the gradebook is opened for writing."""
    if start_over:
        return
    for path in (ledger_path(course), out / LEDGER):
        found = read_ledger(path)
        if found is not None:
            _compare(course, path, *found)


def _compare(course: Course, path: Path, submissions: set[tuple[str, str]], due: set[str]) -> None:
    """GradebookError when the gradebook lacks any of `submissions` or of the due dates of `due`."""
    shown = safe_url(course.db_url)
    from sqlalchemy.engine import make_url
    url = make_url(course.db_url)
    if url.drivername.startswith("sqlite") and url.database and (submissions or due):
        file = Path(url.database)
        if not file.is_file() or file.stat().st_size == 0:
            raise GradebookError(_lost(shown, f"the gradebook file {file} is {'missing' if not file.exists() else 'empty'}",
                                       len(submissions), path))
    if (submissions or due) and not _has_tables(course.db_url):  # read only: opening it would create them
        raise GradebookError(_lost(shown, "the gradebook's database holds no gradebook (no nbgrader tables: new or "
                                   "emptied)", len(submissions), path))
    from autograder import gradebook
    have, scheduled = gradebook.recorded(course)
    lost, lost_due = submissions - have, due - scheduled
    if lost or lost_due:
        what = []
        if lost:
            example = ", ".join(f"{s}/{a}" for s, a in sorted(lost)[:3])
            what.append(f"{len(lost)} of the {len(submissions)} submissions earlier runs recorded are gone ({example})")
        if lost_due:
            what.append(f"the due dates of {', '.join(sorted(lost_due))} are gone (late penalties would vanish)")
        raise GradebookError(_lost(shown, "; ".join(what), len(submissions), path))


def _has_tables(db_url: str) -> bool:
    """True when the gradebook's database holds nbgrader's tables (read only; sqlite and PostgreSQL alike)."""
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.exc import SQLAlchemyError
    engine = create_engine(db_url, future=True)
    try:
        with engine.connect() as connection:
            return inspect(connection).has_table("submitted_assignment")
    except SQLAlchemyError as error:
        raise GradebookError(explain(error, safe_url(db_url))) from None
    finally:
        engine.dispose()


def _lost(shown: str, what: str, count: int, ledger: Path) -> str:
    return (f"the gradebook ({shown}) has lost what earlier runs recorded: {what}. Nothing was written. Restore the "
            f"gradebook from its backup, or point c.CourseDirectory.db_url at the right one; to start over with a new "
            f"gradebook on purpose (every submission is recorded again, without the old manual scores, extensions "
            f"and due dates), run again with --start-over. (What earlier runs recorded: {ledger}, {count} "
            "submissions.)")


def write_ledger(run: Run) -> None:
    """Remember, with the gradebook, what it now holds, for the next run's check (an older run's ledger in the output
    folder is removed: this one replaces it)."""
    from autograder import gradebook
    have, scheduled = gradebook.recorded(run.course)
    body = {"version": LEDGER_VERSION, "gradebook": safe_url(run.course.db_url), "submissions": sorted(have),
            "due": sorted(scheduled)}
    write_atomically(ledger_path(run.course), json.dumps({**body, "sha256": _ledger_digest(body)}))
    (run.out / LEDGER).unlink(missing_ok=True)
