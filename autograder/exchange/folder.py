"""Runs as the instructor and in every student's nbgrader (through the students' file, which repeats its check): the
class's folder in nbgrader's exchange, `<exchange>/<course id>/`: what is in it, and who may own each part.

Owners (`check_owned`): the exchange's root is writable by every account (nbgrader's 1777), so on a shared machine a
student could make `<exchange>/<course id>/`, its course.txt or students' file, or its inbound, outbound or feedback
folder before the first release, and own it. The release refuses any of those not owned by the releasing account or
root (or a symbolic link, or writable by others where nbgrader does not make it so), and so does every student
command (the students' file checks the same with the releasing account's uid, which the release writes into it).
"""
from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from autograder.errors import Refused

CLASS_MARK = "course.txt"                          # in <exchange>/<course id>/: the course root of its class
STUDENTS_CONFIG = "nbgrader_config_exchange.py"    # the template at the repository's root; its filled copy beside it


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


def account_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid} (no account)"
