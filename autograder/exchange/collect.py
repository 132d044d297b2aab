"""Runs as the instructor (`nbgrader collect`, configured as `ExchangeFactory.collect` for the class hub's grader
account in jupyterhub/nbgrader_config_grader.py): collect by owner.

Stock `collect` believes the folder name of a submission (`<student>+<assignment>+<time>`), follows symbolic links
while copying, enforces the size limit only on the student's side, and stops the whole class at one malformed name. On
the class hub (scripts/class_hub.py configures it for the grader account only: with one account for everyone, as in
tests/test_nbgrader_workflow.py, owners mean nothing) a submission belongs to the unix account that owns it, whatever
its name says:
- an entry is taken only when its folder, and every file copied from it, is owned by the account its name gives;
- only directories and regular files are copied, each opened without following links (O_NOFOLLOW, no path
  re-resolved between the check and the copy); a symbolic link, FIFO, socket or device is left out;
- a file over `CourseDirectory.max_file_size`, or a submission over `max_dir_size` (both kB), is left out;
- a malformed, foreign or unreadable entry is skipped; each thing left out is one line of the log (Formgrader's
  Collect shows it), and collecting goes on for everyone else.
nbgrader has no hook for any of this (its `check_owner` only warns, and then copies), hence the subclass.
"""
from __future__ import annotations

import datetime
import fnmatch
import glob
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.utils import parse_utc
from traitlets import Unicode

from autograder.exchange.folder import account_name

ENTRY = re.compile(r"^(?P<student>[^+/]+)\+(?P<assignment>[^+/]+)\+(?P<time>[^+/]+)(\+[^+/]*)?$")
CHUNK = 1 << 20          # bytes read at a time while copying
MAX_DEPTH = 16           # folders inside a submission
MAX_FILES = 2_000        # files and folders in one submission
CLAIM_TOLERANCE = 120    # seconds a student's timestamp.txt may differ from the time of arrival without a flag


class Skip(Exception):
    """Something of a submission that is not collected; the message says what and why."""


@dataclass
class Budget:
    """What one submission may still bring: bytes (all files together) and entries (files and folders)."""
    bytes_left: int
    entries_left: int = MAX_FILES


def read_entry(path: str, assignment: str, student: str | None) -> dict:
    """The record of one inbound entry (student, filename, timestamp, uid), or Skip: a name that is not
    `<student>+<assignment>+<time>[+random]`, a time that does not parse, a link or anything not a folder, or a
    folder owned by another account than the one its name gives."""
    name = os.path.basename(path)
    match = ENTRY.match(name)
    if not match:
        raise Skip(f"{name!r}: not <student>+<assignment>+<time> (malformed name)")
    if match["assignment"] != assignment or (student and match["student"] != student):
        raise Skip("")   # another assignment or student: not asked for, nothing to say
    try:
        timestamp = parse_utc(match["time"])
    except Exception:   # nbgrader's parser raises whatever dateutil raises
        raise Skip(f"{name!r}: {match['time']!r} is not a time (malformed name)") from None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise Skip(f"{name!r}: not a folder (a link or a file)")
    owner = account_name(info.st_uid)
    if owner != match["student"]:
        raise Skip(f"{name!r}: made by {owner}, not by {match['student']} (foreign entry)")
    return {"username": match["student"], "filename": name, "timestamp": timestamp, "uid": info.st_uid,
            "path": path}


def copy_owned(source: str, dest: str, uid: int, max_file: int, max_total: int, ignore: list[str]) -> list[str]:
    """Copy the folder `source` to `dest` (created), taking only folders and regular files owned by `uid`, none
    over `max_file` bytes, at most `max_total` bytes in all. Nothing is followed: each entry is opened relative to
    its folder's descriptor with O_NOFOLLOW and checked on the open descriptor. Returns a line for each thing left
    out; raises Skip when the submission as a whole is over `max_total` bytes or MAX_FILES entries."""
    top = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if os.fstat(top).st_uid != uid:
            raise Skip(f"{os.path.basename(source)!r}: owned by {account_name(os.fstat(top).st_uid)} (foreign entry)")
        left_out: list[str] = []
        os.makedirs(dest)
        _copy_folder(top, Path(dest), "", uid, max_file, Budget(max_total), ignore, left_out, depth=0)
        return left_out
    finally:
        os.close(top)


def _copy_folder(folder: int, dest: Path, where: str, uid: int, max_file: int, budget: Budget, ignore: list[str],
                 left_out: list[str], depth: int) -> None:
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name, shown = entry.name, f"{where}{entry.name}"
        if any(fnmatch.fnmatch(name, pattern) for pattern in ignore):
            continue
        budget.entries_left -= 1
        if budget.entries_left < 0:
            raise Skip(f"more than {MAX_FILES} files and folders")
        try:
            kind = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(kind):
                if depth >= MAX_DEPTH:
                    raise Skip(f"folders nested deeper than {MAX_DEPTH}")
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                try:
                    _check_owner(os.fstat(inner), uid)
                    (dest / name).mkdir()
                    _copy_folder(inner, dest / name, f"{shown}/", uid, max_file, budget, ignore, left_out, depth + 1)
                finally:
                    os.close(inner)
            elif stat.S_ISREG(kind):
                _copy_file(folder, name, dest / name, uid, max_file, budget)
            else:
                raise LeftOut("a symbolic link" if stat.S_ISLNK(kind) else "not a regular file (a FIFO, socket or device)")
        except LeftOut as why:
            left_out.append(f"{shown}: {why}")
        except OSError as error:   # changed or removed while we looked (O_NOFOLLOW on a new link: ELOOP)
            left_out.append(f"{shown}: unreadable ({error.strerror})")


class LeftOut(Exception):
    """One file or folder of a submission that is not copied; the rest is."""


def _check_owner(info: os.stat_result, uid: int) -> None:
    if info.st_uid != uid:
        raise LeftOut(f"owned by {account_name(info.st_uid)}, not the submitter")


def _copy_file(folder: int, name: str, dest: Path, uid: int, max_file: int, budget: Budget) -> None:
    """Copy one regular file, checked on its open descriptor (O_NONBLOCK: a FIFO swapped in does not block)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LeftOut("not a regular file")
        _check_owner(info, uid)
        if info.st_size > max_file:
            raise LeftOut(f"{info.st_size / 1e6:.1f} MB, over the {max_file / 1e6:.0f} MB limit for a file")
        if info.st_size > budget.bytes_left:
            raise Skip(f"over the {budget.bytes_left / 1e6:.0f} MB left for the whole submission")
        copied = 0
        with open(dest, "wb") as out:
            while chunk := os.read(fd, min(CHUNK, max_file + 1 - copied)):
                copied += len(chunk)
                if copied > max_file:   # grew while we copied
                    break
                out.write(chunk)
        if copied > max_file:
            dest.unlink()
            raise LeftOut(f"over the {max_file / 1e6:.0f} MB limit for a file")
        budget.bytes_left -= copied
    finally:
        os.close(fd)


def arrival_time(path: str) -> datetime.datetime:
    """When the submission at `path` last changed, by the kernel's clock: the latest status-change time (ctime) of
    its folder and everything in it, links not followed. Nobody but root can set a ctime, and any change makes it
    now, so the student can make this later (by changing the submission), never earlier."""
    latest = os.lstat(path).st_ctime
    for folder, folders, files in os.walk(path):
        for name in folders + files:
            latest = max(latest, os.lstat(os.path.join(folder, name)).st_ctime)
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc)


class OwnedCollect(ExchangeCollect):
    """nbgrader's collect, taking a submission only from the account it names (see the module's docstring). The
    submission's time is the exchange's, not the student's: its `timestamp.txt` is written from `arrival_time`, and a
    `timestamp.txt` the student wrote that says otherwise (by more than `CLAIM_TOLERANCE`) is kept beside it as
    `timestamp-claimed.txt` and named in the log. Late penalties read `timestamp.txt`, so they use the time of
    arrival (docs/hub.md)."""

    inboxes = Unicode("", help="A glob of further inbound folders, one per student (the class hub's "
                               "<prefix>/disks/*/inbound, where each student's submissions land); '' for none").tag(config=True)

    def _entries(self) -> list[str]:
        folders = [self.inbound_path] + (sorted(glob.glob(self.inboxes)) if self.inboxes else [])
        paths = []
        for folder in folders:
            try:
                paths += [os.path.join(folder, name) for name in os.listdir(folder)]
            except OSError as error:
                self.log.warning("Skipped the inbound folder %s: %s", folder, error.strerror)
        return paths

    def init_src(self) -> None:
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        student = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        records, skipped = [], 0
        for path in self._entries():
            try:
                records.append(read_entry(path, self.coursedir.assignment_id, student))
            except Skip as why:
                if str(why):
                    skipped += 1
                    self.log.warning("Skipped %s", why)
            except OSError as error:
                skipped += 1
                self.log.warning("Skipped %r: %s", os.path.basename(path), error.strerror)
        self._by_path = {r["path"]: r for r in records}
        self.src_records = self._latest(records)
        if skipped:
            self.log.warning("%d inbound entries of %s skipped (the lines above say why)", skipped,
                             self.coursedir.assignment_id)

    def _latest(self, records: list[dict]) -> list[dict]:
        """nbgrader's choice per student: the latest, or with `before_duedate` the latest before the due date."""
        self.duedate = None
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                pass
        chosen = []
        for group in groupby(records, lambda r: r["username"]).values():
            group = self._sort_by_timestamp(group)
            if self.duedate is not None and self.before_duedate:
                group = [r for r in group if r["timestamp"] <= self.duedate] or group
            chosen.append(group[0])
        for record in chosen:   # nbgrader's copy_files joins inbound_path and filename: give it the full path
            record["filename"] = record["path"]
        return chosen

    def do_copy(self, src: str, dest: str, log=None) -> None:
        record = self._by_path[src]
        try:
            arrived = arrival_time(src)
        except OSError as why:
            self.log.warning("Skipped %s of %s: %s", os.path.basename(src), record["username"], why)
            return
        max_file = self.coursedir.max_file_size * 1000
        max_total = self.coursedir.max_dir_size * 1000
        try:
            left_out = copy_owned(src, dest, record["uid"], max_file, max_total, list(self.coursedir.ignore))
        except (Skip, OSError) as why:
            if os.path.isdir(dest):
                shutil.rmtree(dest)
            self.log.warning("Skipped %s of %s: %s", os.path.basename(src), record["username"], why)
            return
        for line in left_out:
            self.log.warning("Left out of %s's submission: %s", record["username"], line)
        self._stamp(Path(dest), arrived, record["username"])

    def _stamp(self, dest: Path, arrived: datetime.datetime, student: str) -> None:
        """timestamp.txt from the time of arrival; the student's own, when it disagrees, kept as
        timestamp-claimed.txt with a line in the log."""
        stamp = dest / "timestamp.txt"
        claimed = stamp.read_text(errors="replace").strip() if stamp.is_file() else ""
        stamp.write_text(arrived.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
        try:
            off = abs((parse_utc(claimed) - arrived.replace(tzinfo=None)).total_seconds()) if claimed else None
        except Exception:   # nbgrader's parser raises whatever dateutil raises
            off = float("inf")
        if off is not None and off > CLAIM_TOLERANCE:
            (dest / "timestamp-claimed.txt").write_text(claimed[:200])
            self.log.warning("%s's timestamp.txt says %r, but the submission reached the exchange at %s UTC: graded "
                             "with the time of arrival (the claim is kept as timestamp-claimed.txt)",
                             student, claimed[:60], arrived.strftime("%Y-%m-%d %H:%M:%S"))
