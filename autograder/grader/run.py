"""Runs in the grader: one grading run's own ground. A lock says the course (or this shard of it) is being graded and
by whom; a private work folder holds what the run alone uses; leftovers of a killed run are removed at the start;
the ledger of what earlier runs recorded, which stops a run from writing into a gradebook that has lost it, is
ledger.py's.

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

from autograder.course import Course
from autograder.errors import GraderError
from autograder.grader.ledger import COURSE_LEDGER, temporary_ledgers
from autograder.limits import Limits
from autograder.outcome import Event, EventKind


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
    for path in temporary_ledgers(course):  # `..gradebook-ledger.json-<pid>-<host>.tmp`: it lists student ids
        if alone or owner_gone(path.name.removeprefix(f".{COURSE_LEDGER}-").removesuffix(".tmp")):
            path.unlink(missing_ok=True)
            removed.append(str(path))
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
