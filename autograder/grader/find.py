"""Runs in the grader: finds the submissions, and reads what students wrote (a folder they may have filled with
anything) without ever following a link, blocking on a special file or reading more than a cap.
"""
from __future__ import annotations

import datetime
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_NOTEBOOK_BYTES = 20 * 2**20
KEPT_FILE_BYTES = 4096
# Files of a submission folder copied to autograded/ beside the notebooks: nbgrader's generate_feedback copies
# them on into feedback/, where release_feedback needs both. Nothing else a student put there is copied.
KEPT_FILES = ("timestamp.txt", "submission_secret.txt")


class Unreadable(Exception):
    """A file a student wrote that the grader will not read; the message says why, in one line."""


class Missing(Unreadable):
    """The file is not there."""


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of `path`, a regular file with one name, at most `limit` bytes; Unreadable otherwise. Opens with
    O_NOFOLLOW and O_NONBLOCK (a link, a fifo or a device is refused, never followed or waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Unreadable("a link, not a file") from None
        if error.errno == errno.ENOENT:
            raise Missing("missing") from None
        raise Unreadable(f"cannot be opened ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file")
        if info.st_nlink != 1:
            raise Unreadable("a file with other names (a hard link)")
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size:,} bytes; the limit is {limit:,}")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise Unreadable(f"more than {limit:,} bytes")
        return data
    finally:
        os.close(fd)


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


def read_timestamp(folder: Path) -> tuple[datetime.datetime | None, str]:
    """(submission time as naive UTC, '') from the folder's timestamp.txt, or (None, why there is none)."""
    from nbgrader.utils import parse_utc
    try:
        text = read_capped(folder / "timestamp.txt", KEPT_FILE_BYTES).decode(errors="replace").strip()
    except Missing:
        return None, "no timestamp.txt"
    except Unreadable as why:
        return None, f"timestamp.txt is {why}"
    if not text:
        return None, "timestamp.txt is empty"
    try:
        return parse_utc(text), ""
    except (ValueError, OverflowError, TypeError):
        return None, f"timestamp.txt is unreadable ({text[:40]!r})"


def kept_files(folder: Path) -> dict[str, bytes]:
    """The small files of a submission that go to autograded/ with it (KEPT_FILES), where readable."""
    kept = {}
    for name in KEPT_FILES:
        try:
            kept[name] = read_capped(folder / name, KEPT_FILE_BYTES)
        except Unreadable:
            pass
    return kept


def assignment_files(source: Path, submission: Path | None, ignore: list[str], keep_student: list[str],
                     file_limit: int, total_limit: int) -> tuple[dict[str, bytes], list[str]]:
    """The files a notebook finds beside it, as `nbgrader autograde` gives them: the student's own files of the
    submission (regular files only, each within `file_limit`), then the source folder's files (every one but the
    notebooks and the `ignore` patterns) over them, except the names in `keep_student` (nbgrader's
    Autograde.exclude_overwriting). Returns ({relative path: bytes}, a line for each student file left out)."""
    files, skipped, total = {}, [], 0
    if submission is not None:
        for path, relative in _walk(submission, ignore):
            try:
                data = read_capped(path, file_limit)
            except Unreadable as why:
                skipped.append(f"{relative}: {why}")
                continue
            if total + len(data) > total_limit:
                skipped.append(f"{relative}: the submission's files pass {total_limit:,} bytes")
                continue
            files[relative] = data
            total += len(data)
    for path, relative in _walk(source, ignore):
        if relative not in keep_student or relative not in files:
            files[relative] = path.read_bytes()
    return files, skipped


def _walk(root: Path, ignore: list[str]) -> Iterator[tuple[Path, str]]:
    """(path, relative path) of every file under `root` but notebooks and ignored names; links are not followed."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _ignored(d, ignore) and not Path(folder, d).is_symlink())
        for name in sorted(names):
            if name.endswith(".ipynb") or _ignored(name, ignore):
                continue
            path = Path(folder, name)
            yield path, str(path.relative_to(root))


def _ignored(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
