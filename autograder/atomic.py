"""Runs in the grader and in the instructor's tools: a file written whole or not at all, the one way they write one.

The data goes to `.<name>-<pid>-<host>.tmp` beside the file (its writer's, as grader/run.py's `owned_name`: shards on
several machines may share a folder) and is then renamed over it (`write_atomically`) or linked to
its name only if that name is free (`write_new`, which never overwrites). A reader sees the old file or the new one,
never half of one; a run that is killed mid-write leaves only a `.*.tmp` file, which the next run removes
(grader/run.py).
"""
from __future__ import annotations

import errno
import os
import socket
from pathlib import Path


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}-{os.getpid()}-{socket.gethostname()}.tmp")


def _put(temporary: Path, data: str | bytes) -> None:
    temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)  # as given: no newline changed


def write_atomically(path: Path, data: str | bytes) -> None:
    """Write `data` (text as UTF-8) to `path` through a temporary file and a rename, making its folder if needed;
    OSError with the file in its `filename` (the path `path` names, spaces and all) and nothing left behind."""
    temporary = _temporary(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _put(temporary, data)
        os.replace(temporary, path)
    except OSError as error:
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass
        code = error.errno or errno.EIO
        raise OSError(code, os.strerror(code), str(path)) from None


def write_new(path: Path, data: str | bytes) -> bool:
    """Write `data` to `path` only if no file has that name (checked by the link that puts it there, so a file that
    appears meanwhile is never overwritten); False, with nothing written, if one has."""
    temporary = _temporary(path)
    _put(temporary, data)
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink()
