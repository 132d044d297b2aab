"""Runs in the grader: the files a cost budget's reads are counted on (issue #60), lent to a notebook for the measured
part of its test cell only.

Every way a process can read a file's bytes (read, pread, readv, splice, sendfile, copy_file_range, a mapping's page
faults, io_uring, /proc/self/mem, O_DIRECT) meets in one place: the file's pages in the kernel's page cache. On a
file system that keeps the file on a disk, a page that is not in the cache is read from the disk, and the kernel
counts those bytes for the process whose read brought them in (`read_bytes` of /proc/<pid>/io, every thread of
it). So the grader keeps one such file per worker slot in a folder of its own (`private/`, which no notebook may
read), and for a measured part:

    lend      drops the file's pages from the page cache (posix_fadvise DONTNEED) and checks that none is left
              (cachestat), then links the file into the slot's folder, the one folder of the grader's that the
              slot's notebook may read (Landlock, and `Spawn.files`);
    take back removes that link after the part: before and after it the notebook cannot open the file, so a read made
              outside the measured part (to keep the bytes in memory for later) is impossible.

The folder is in the grader's cache folder (`$XDG_CACHE_HOME` or ~/.cache, then `cs336-primitives/budget-files/`),
one per zygote (named after the grader's process, so a later run removes what a killed one left), and removed
with the zygote. Where that folder is on a file system whose reads are not counted as reads from a disk (a tmpfs),
each lend says so and the budget is left to a person (cost.py's `unmeasured`).
"""
from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from utils.cost import token_bytes

_CACHESTAT = 451  # cachestat(2), Linux 6.5+, the same number on x86-64 and arm64


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [("nr_cache", ctypes.c_uint64), ("nr_dirty", ctypes.c_uint64), ("nr_writeback", ctypes.c_uint64),
                ("nr_evicted", ctypes.c_uint64), ("nr_recently_evicted", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)


def cached_pages(fd: int) -> int | None:
    """Pages of the open file `fd` in the page cache now (cachestat(2)); None where the kernel has no cachestat."""
    stat = _Stat()
    if _libc.syscall(_CACHESTAT, ctypes.c_uint(fd), ctypes.byref(_Range(0, 0)), ctypes.byref(stat), ctypes.c_uint(0)):
        return None
    return int(stat.nr_cache)


def own_read_bytes() -> int:
    """Bytes this process has read from storage (`read_bytes` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    raise OSError("no read_bytes in /proc/self/io")


def _dropped(fd: int, path: Path, tokens: int) -> str:
    """Drop the open file's pages from the page cache: '' when none is left and a read of it is counted as a read
    from the disk (a probe: one page read here), else why not."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    left = cached_pages(fd)
    if left:  # mapped by a process still alive, or dirty: reads of those pages would not reach the disk
        return f"{left} page(s) of {path} stayed in the page cache after posix_fadvise(DONTNEED)"
    before = own_read_bytes()
    os.pread(fd, 1, tokens)  # one byte of the middle: its page comes from the disk
    counted = own_read_bytes() - before > 0
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    if not counted:
        return (f"reads of {path} are not counted as reads from a disk (a file system that keeps files in memory, a "
                "tmpfs?, or pages a process still maps): set XDG_CACHE_HOME to a folder on a disk")
    return ""


@dataclass(frozen=True)
class Lent:
    """A file lent for one measured part: the link the notebook opens, and the identity of the file (to find its
    mappings in /proc/<pid>/maps)."""
    link: Path
    device: int
    inode: int


def _base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cs336-primitives" / "budget-files"


def _owner_gone(name: str) -> bool:
    """True when `name` (BudgetFiles' `<pid>-<token>-<host>`) belongs to a process of this machine no longer alive."""
    pid, _, rest = name.partition("-")
    host = rest.partition("-")[2]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
        return False
    except ProcessLookupError:
        return True
    except PermissionError:
        return False


class BudgetFiles:
    """One grading run's lent files (see the module docstring): its folder is made here, in the grader before it forks
    its workers, and removed by `close`. Where it cannot be made, `broken` says why and nothing is lent."""

    def __init__(self, base: Path | None = None):
        self.owner = os.getpid()
        self.root: Path | None = None
        self.broken = ""
        base = base or _base()
        try:
            base.mkdir(parents=True, exist_ok=True)
            for old in base.iterdir():  # what a killed run left
                if _owner_gone(old.name):
                    shutil.rmtree(old, ignore_errors=True)
            root = base / f"{os.getpid()}-{secrets.token_hex(4)}-{socket.gethostname()}"
            (root / "private").mkdir(mode=0o700, parents=True)
            root.chmod(0o755)
            self.root = root
        except OSError as error:
            self.broken = f"the grader's folder for the files it lends ({base}) could not be made: {error}"

    def folder(self, slot: int) -> Path | None:
        """The folder the notebook of `slot` may read (made now if need be); None where there is none."""
        if self.root is None:
            return None
        folder = self.root / f"slot-{slot}"
        try:
            folder.mkdir(mode=0o755, exist_ok=True)
            folder.chmod(0o755)
        except OSError as error:
            self.broken = f"the grader's folder {folder} could not be made: {error}"
            return None
        return folder

    def _file(self, slot: int, tokens: int) -> Path:
        """The slot's private file of `tokens` tokens, written (and synced to the disk) if it is not there yet."""
        assert self.root is not None, "a file is lent to a notebook that was started, which made the folder"
        path = self.root / "private" / f"slot-{slot}-{tokens}.bin"
        if not path.exists() or path.stat().st_size != 2 * tokens:
            partial = path.with_suffix(".part")
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                view = memoryview(token_bytes(tokens))
                while view:
                    view = view[os.write(fd, view):]
                os.fdatasync(fd)  # written pages must be clean for posix_fadvise to drop them
            finally:
                os.close(fd)
            partial.replace(path)
        return path

    def lend(self, slot: int, name: str, tokens: int) -> tuple[Lent, str]:
        """Link the slot's file of `tokens` tokens as `name` in the slot's folder, none of its pages in the page cache:
        (the lent file, '' or why reads of it are not counted here, the grader's limit). OSError where the file
        cannot be written or linked."""
        folder = self.folder(slot)
        if folder is None:
            raise OSError(self.broken)
        path = self._file(slot, tokens)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            problem = _dropped(fd, path, tokens)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        link = folder / name
        link.unlink(missing_ok=True)
        os.link(path, link)
        return Lent(link, stat.st_dev, stat.st_ino), problem

    @staticmethod
    def take_back(lent: Lent) -> None:
        lent.link.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove this run's folder (only the process that made the object; a forked worker leaves it)."""
        if self.root is not None and os.getpid() == self.owner:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
