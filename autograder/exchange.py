"""Runs as the instructor (nbgrader's commands): nbgrader's exchange, made safe for a class on one machine, and made to
skip what it cannot deliver.

ReleaseFeedback: feedback reaches a student through the exchange only for a submission made through it: nbgrader
finds the student's copy by a hash of the `submission_secret.txt` that `nbgrader submit` wrote. Stock
`release_feedback` stops at the first student whose feedback folder lacks that file or `timestamp.txt` (a submission
imported from an LMS, or copied in by hand), and releases nobody after them. This subclass, configured as
`ExchangeFactory.release_feedback` in nbgrader_config.py, leaves those students out with a warning (return their
feedback through the LMS) and releases everyone else exactly as nbgrader does.

ReleaseAssignment and the students' file: two classes of this course on one machine (two clones, two sections) share
the course id, so a shared exchange would let one class's students fetch the other's releases and submit into it,
silently. The course's exchange folder `<exchange>/<course id>/` therefore says which class it belongs to: `course.txt`
holds the course root of the class that released into it first. `nbgrader release_assignment` (this
ReleaseAssignment, `ExchangeFactory.release_assignment` in nbgrader_config.py) and `release_feedback` refuse an
exchange folder that names another course root; release_assignment writes `course.txt` when there is none, and beside it
`nbgrader_config_exchange.py`, the students' configuration: the repository's template of that name with the exchange and
the course root filled in, so that students and instructor have one exchange, whatever it is (the course's `exchange/`
unless COURSE_EXCHANGE names another). Each student copies it to ~/.jupyter/nbgrader_config.py; it refuses, in every
student command, an exchange whose course.txt names another class, or none.

Owners (`check_owned`): the exchange's root is writable by every account (nbgrader's 1777), so on a shared machine a
student could make `<exchange>/<course id>/`, its course.txt or students' file, or its inbound, outbound or feedback
folder before the first release, and own it. The release refuses any of those not owned by the releasing account or
root (or a symbolic link, or writable by others where nbgrader does not make it so), and so does every student
command (the students' file checks the same with the releasing account's uid, which the release writes into it).

OwnedCollect: stock `collect` believes the folder name of a submission (`<student>+<assignment>+<time>`), follows
symbolic links while copying, enforces the size limit only on the student's side, and stops the whole class at one
malformed name. On the class hub (scripts/class_hub.py configures it for the grader account only: with one account
for everyone, as in tests/test_nbgrader_workflow.py, owners mean nothing) a submission belongs to the unix account
that owns it, whatever its name says:
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
import logging
import os
import pwd
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect, groupby
from nbgrader.exchange.default.exchange import Exchange
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.utils import parse_utc
from traitlets import Unicode

from autograder.errors import Refused

NEEDED = ("timestamp.txt", "submission_secret.txt")
ENTRY = re.compile(r"^(?P<student>[^+/]+)\+(?P<assignment>[^+/]+)\+(?P<time>[^+/]+)(\+[^+/]*)?$")
CHUNK = 1 << 20          # bytes read at a time while copying
MAX_DEPTH = 16           # folders inside a submission
MAX_FILES = 2_000        # files and folders in one submission
CLAIM_TOLERANCE = 120    # seconds a student's timestamp.txt may differ from the time of arrival without a flag


CLASS_MARK = "course.txt"                          # in <exchange>/<course id>/: the course root of its class
STUDENTS_CONFIG = "nbgrader_config_exchange.py"    # the template at the repository's root; its filled copy beside it
TEMPLATE = Path(__file__).resolve().parent.parent / STUDENTS_CONFIG


class OtherClass(Exception):
    """The course's exchange folder belongs to another class of the same course id; the message says which."""


class Untrusted(Refused):
    """A file or folder of the course's exchange folder that another account made or may change; nothing was
    written there, nor read from it. The message says which, whose it is, and what to do."""


# What check_owned looks at in <exchange>/<course id>/, in this order: name, a folder?, writable by others?
# (nbgrader's own modes: the course folder and outbound 755, feedback 711, inbound 2733: every student drops a
# submission there, and none can list it; the class hub's is 1733.)
EXCHANGE_PARTS = (("", True, False), (CLASS_MARK, False, False), (STUDENTS_CONFIG, False, False),
                  ("outbound", True, False), ("inbound", True, True), ("feedback", True, False))


def check_owned(course_path: Path, owners: set[int], remedy: str) -> None:
    """Raise Untrusted unless the course's exchange folder `course_path`, and each of EXCHANGE_PARTS in it that
    exists, is owned by one of `owners` (uids), is no symbolic link, is what it should be (a folder or a file), and is
    writable by others only where nbgrader makes it so (inbound). `remedy` ends the message (what to do; {path} in
    it is the path refused).

    Why: the exchange's root is writable by every account, and nbgrader checks no owner but of a folder its release
    makes (and not of course.txt or the students' file, nor in `groupshared` courses, nor on the students' side). A
    student who made one of these before the instructor's first release owns it, and could swap what the others
    fetch, plant a configuration every student's nbgrader runs, read or remove submissions, or write a course.txt
    the students' commands believe. Links are not followed (os.lstat): a link is refused whatever it points to.

    The exchange's root (`course_path`'s parent) must be one of `owners`' too, and, when every account may write in
    it, have the sticky bit (nbgrader's 1777): otherwise whoever owns it, or anyone, could rename the class's folder
    away and put their own in its place (`remedy` is for the parts; the root's own fix is said here)."""
    try:
        top = os.stat(course_path.parent)   # an administrator may link the root elsewhere: its target counts
    except FileNotFoundError:
        return   # no exchange yet: nbgrader makes it (as the releasing account)
    if top.st_uid not in owners:
        why = f"is owned by {account_name(top.st_uid)}, not by {' or '.join(map(account_name, sorted(owners)))}"
    elif top.st_mode & stat.S_IWOTH and not top.st_mode & stat.S_ISVTX:
        why = f"is writable by every account without the sticky bit ({stat.filemode(top.st_mode)})"
    else:
        why = ""
    if why:
        root = course_path.parent
        raise Untrusted(f"the exchange {root} {why}: another account could swap the class's folder in it. Nothing was "
                        f"written. Make it root's, with nbgrader's mode (`sudo chown root: '{root}' && sudo chmod 1777 "
                        f"'{root}'`), then run the command again.")
    for name, folder, others_write in EXCHANGE_PARTS:
        path = course_path / name if name else course_path
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if not name:
                return   # no course folder yet: nothing in it either
            continue
        mode = stat.filemode(info.st_mode)
        if stat.S_ISLNK(info.st_mode):
            why = f"is a symbolic link (to {os.readlink(path)})"
        elif info.st_uid not in owners:
            why = f"is owned by {account_name(info.st_uid)}, not by {' or '.join(map(account_name, sorted(owners)))}"
        elif stat.S_ISDIR(info.st_mode) != folder or not (folder or stat.S_ISREG(info.st_mode)):
            why = f"is not a {'folder' if folder else 'regular file'} ({mode})"
        elif info.st_mode & stat.S_IWOTH and not others_write:
            why = f"is writable by every account ({mode})"
        else:
            continue
        raise Untrusted(f"{path} {why}: another account may have made or changed it, and nothing in the class's "
                        f"exchange folder can be trusted while it is there. {remedy.format(path=path)}")


def seal_root(root: Path) -> None:
    """Give the exchange's root the sticky bit where this account owns it and every account may write in it. nbgrader
    makes its root, and re-modes one it owns, 0777 (`ensure_root`), in which anyone could rename the class's folder
    away (check_owned); with the sticky bit (1777, what docs/instructors.md says to make) only its owner can, and
    nbgrader, which checks only the permission bits, leaves it so."""
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return
    if info.st_uid == os.geteuid() and info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        os.chmod(root, stat.S_IMODE(info.st_mode) | stat.S_ISVTX)


def release_check(course_path: Path) -> None:
    """check_owned for the instructor's release (the exchange's root sealed first, where it is this account's): the
    parts must be the releasing account's, or root's."""
    seal_root(course_path.parent)
    check_owned(course_path, {0, os.geteuid()}, "Nothing was released. Remove it as root (`sudo rm -rf '{path}'`), "
                "then release again.")


def exchange_root(config) -> Path:
    """The exchange folder nbgrader uses with `config`: its Exchange.root, or nbgrader's own default (read from
    nbgrader's traitlet, not restated here)."""
    return Path(Exchange(config=config).root)


def owner_of(course_path: Path) -> str | None:
    """The course root that `course_path`'s course.txt names, or None when it has none."""
    try:
        return (course_path / CLASS_MARK).read_text().strip()
    except FileNotFoundError:
        return None


def check_class(course_path: Path, course_root: Path, doing: str) -> None:
    """Raise OtherClass when the exchange folder `course_path` belongs to another course root than `course_root`."""
    owner = owner_of(course_path)
    if owner is not None and owner != str(course_root):
        raise OtherClass(
            f"The exchange folder {course_path} belongs to another class: its {CLASS_MARK} names the course "
            f"{owner}, and this course is {course_root}. Two classes of one course cannot share an exchange, or each "
            "would collect the other's submissions: give this class an exchange of its own (export "
            "COURSE_EXCHANGE=/some/shared/folder in every instructor shell and `make lab`), or, if that course is "
            f"this one moved, remove {course_path / CLASS_MARK}. Nothing was {doing}.")


def students_config(exchange: Path, course_root: Path, instructor: int | None = None) -> str:
    """The students' nbgrader configuration for this class: the template with its exchange, course and the uid of
    the releasing account (`instructor`, this process's by default) filled in."""
    text = TEMPLATE.read_text()
    uid = os.geteuid() if instructor is None else instructor
    for name, value in (("EXCHANGE", str(exchange)), ("COURSE", str(course_root)), ("INSTRUCTOR_UID", uid)):
        blank = f"{name} = None"
        assert text.count(blank) == 1, f"{TEMPLATE} has no single line {blank!r}"
        text = text.replace(blank, f"{name} = {value!r}")
    return text


def hand_out(course_path: Path, exchange: Path, course_root: Path) -> Path:
    """Mark `course_path` as this class's (unless it is) and write the students' file beside it; return its path."""
    release_check(course_path)
    check_class(course_path, course_root, "released")
    if owner_of(course_path) is None:
        (course_path / CLASS_MARK).write_text(f"{course_root}\n")
        (course_path / CLASS_MARK).chmod(0o644)
    handed = course_path / STUDENTS_CONFIG
    text = students_config(exchange, course_root)
    if not handed.is_file() or handed.read_text() != text:
        handed.write_text(text)
        handed.chmod(0o644)
    return handed


def handing_out(handed: Path) -> str:
    """How the students' file at `handed` reaches each student (the release's log says it): where every account can
    read it, the command each student runs once; where some folder on the way is closed to other accounts (the
    course's own exchange/ in the instructor's home), that, and the other ways."""
    copy = f"mkdir -p ~/.jupyter && cp {handed} ~/.jupyter/nbgrader_config.py"
    closed = closed_to_others(handed)
    if not closed:
        return (f"Students' file of this class: {handed}. Every account can read it there, so there is nothing to "
                f"send: tell each student to run, once, in their own account: {copy}")
    return (f"Students' file of this class: {handed}. Other accounts cannot read it there ({'; '.join(closed[:2])}): "
            "send it to each student (it holds no secret: by e-mail or the LMS) to save as "
            "~/.jupyter/nbgrader_config.py, or give the class a shared exchange (COURSE_EXCHANGE, docs/instructors.md) "
            f"that every account reads, where each student runs: {copy}")


class ReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release, into this class's exchange folder only; it hands out the students' file beside it."""

    def init_dest(self) -> None:
        course_path = Path(self.root) / self.coursedir.course_id
        course_root = Path(self.coursedir.root).resolve()
        try:
            release_check(course_path)   # before nbgrader makes a folder; hand_out checks again before writing
            check_class(course_path, course_root, "released")
            super().init_dest()
            handed = hand_out(course_path, Path(self.root), course_root)
        except (OtherClass, Untrusted) as error:
            self.fail(str(error))
        self.log.info("%s", handing_out(handed))
        from autograder.deadlines import release_warning  # issue #49: a due date already past for everyone
        warning = release_warning(self.coursedir.db_url, self.coursedir.course_id, self.coursedir.assignment_id)
        if warning:
            self.log.warning(warning)


class ReleaseFeedback(ExchangeReleaseFeedback):

    def init_dest(self) -> None:
        course_path = Path(self.root) / self.coursedir.course_id
        try:
            release_check(course_path)
            check_class(course_path, Path(self.coursedir.root).resolve(), "released")
            super().init_dest()
            release_check(course_path)   # the feedback folder nbgrader found or made
        except (OtherClass, Untrusted) as error:
            self.fail(str(error))

    def copy_files(self) -> None:
        pattern = os.path.normpath(self.coursedir.format_path(self.coursedir.feedback_directory, "*",
                                                              self.coursedir.assignment_id))
        student_at = pattern.split(os.sep).index("*")  # where the student's id is in each folder's path
        cannot = sorted(os.path.normpath(folder).split(os.sep)[student_at] for folder in glob.glob(pattern)
                        if not all(os.path.isfile(os.path.join(folder, name)) for name in NEEDED))
        if cannot:
            self.log.warning("Not released (no %s: not submitted through the exchange; return these through the "
                             "LMS): %s", " or ".join(NEEDED), ", ".join(cannot))
            excluded = [s for s in self.coursedir.student_id_exclude.split(",") if s]
            self.coursedir.student_id_exclude = ",".join(excluded + cannot)
        named = FinalName()
        self.log.addFilter(named)
        try:
            super().copy_files()
        finally:
            self.log.removeFilter(named)


class FinalName(logging.Filter):
    """nbgrader's release_feedback (0.9) copies each page to `<hash>-tmp.html`, moves it to `<hash>.html`, and then
    logs "Feedback released to: <hash>-tmp.html", a name that no longer exists (issue #62). This filter gives that
    line the name the page has: the rest of nbgrader's copy_files is kept as it is, not copied here."""
    TEMPORARY = "-tmp.html"

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("Feedback released to: ") and text.endswith(self.TEMPORARY):
            record.msg, record.args = text[:-len(self.TEMPORARY)] + ".html", None
        return True


class Skip(Exception):
    """Something of a submission that is not collected; the message says what and why."""


@dataclass
class Budget:
    """What one submission may still bring: bytes (all files together) and entries (files and folders)."""
    bytes_left: int
    entries_left: int = MAX_FILES


def account_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid} (no account)"


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


# ---- the students' nbgrader on one machine --------------------------------------------------------------------
def closed_to_others(path: Path) -> list[str]:
    """Why another account cannot use `path` (every folder on the way must let others in, x; the file itself must let
    them read it, and run it where it is a program): one line per obstacle, [] when there is none. Symbolic links
    are followed, each link's target checked in turn."""
    obstacles: list[str] = []
    seen: set[Path] = set()
    todo = [Path(os.path.abspath(path))]
    while todo:
        target = todo.pop()
        if target in seen:
            continue
        seen.add(target)
        for folder in reversed(target.parents):
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                obstacles.append(f"{folder} (mode {stat.filemode(mode)}) does not let other accounts in")
        if target.is_symlink():
            todo.append(Path(os.path.normpath(target.parent / os.readlink(target))))
            continue
        mode = target.stat().st_mode
        wanted = stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR and not stat.S_ISDIR(mode) else 0)
        if mode & wanted != wanted:
            obstacles.append(f"{target} (mode {stat.filemode(mode)}) is closed to other accounts")
    return sorted(set(obstacles))


def students_nbgrader(env: Path) -> list[str]:
    """Why a student's account could not run `env`/bin/nbgrader (its script, its interpreter, its packages); []
    when every file it needs is open to other accounts, and, run here as root, when `nobody` runs it."""
    script = env / "bin" / "nbgrader"
    if not script.is_file():
        return [f"{script} does not exist: {env} is not an environment with nbgrader"]
    import subprocess
    first = script.read_text(errors="replace").splitlines()[0] if script.stat().st_size else ""
    interpreter = Path(first[2:].strip().split()[0]) if first.startswith("#!") else env / "bin" / "python"
    found = subprocess.run([str(interpreter), "-c", "import nbgrader; print(nbgrader.__file__)"], capture_output=True,
                           text=True, timeout=120, cwd="/")
    if found.returncode != 0:
        return [f"{interpreter} (the interpreter of {script}) cannot import nbgrader: "
                f"{(found.stderr.strip().splitlines() or ['exit status ' + str(found.returncode)])[-1]}"]
    needed = [script, interpreter, Path(found.stdout.strip())]
    obstacles = [line for path in needed for line in closed_to_others(path)]
    if not obstacles and os.geteuid() == 0:
        ran = subprocess.run(["runuser", "-u", "nobody", "--", str(script), "--version"], capture_output=True,
                             text=True, timeout=120, cwd="/")
        if ran.returncode != 0:
            obstacles.append(f"`runuser -u nobody -- {script} --version` failed: "
                             f"{(ran.stderr.strip().splitlines() or ['exit status ' + str(ran.returncode)])[-1]}")
    return obstacles


def main(argv: list[str] | None = None) -> int:
    """`python -m autograder.exchange check-students-env ENV`: can every account run ENV's nbgrader?"""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m autograder.exchange", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check-students-env", help="can a student's account run ENV/bin/nbgrader?")
    check.add_argument("env", type=Path, help="the Python environment students are to use (its folder)")
    args = parser.parse_args(argv)
    obstacles = students_nbgrader(Path(os.path.abspath(args.env)))  # not resolved: the way to it counts too
    if obstacles:
        print(f"error: students cannot use {args.env / 'bin' / 'nbgrader'}:\n  " + "\n  ".join(obstacles) +
              "\nGive them an environment every account can run (docs/students.md, 'Handing in'): `sudo python3 "
              "scripts/class_hub.py prepare --prefix /opt/cs336-hub` installs one in /opt/cs336-hub/env (the prefix "
              "a class hub on this machine uses too; another --prefix keeps them apart).")
        return 1
    print(f"every account can run {args.env / 'bin' / 'nbgrader'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
