"""The exchange's own checks of who owns what (autograder/exchange.py's check_owned and seal_root), run directly on
folders this account owns: the exchange's root without the sticky bit, a part made by another account, a link, a
folder that is a file, a part others may write. The tests that release and collect run as root, whose exchange
nbgrader makes itself; these run as any account, in a second."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from autograder.exchange import CLASS_MARK, Untrusted, check_owned, seal_root

ME = os.geteuid()
REMEDY = "Remove {path}."


def exchange(tmp_path: Path, mode: int) -> Path:
    root = tmp_path / "exchange"
    root.mkdir()
    os.chmod(root, mode)
    return root


@pytest.mark.parametrize("mode", [0o777, 0o773, 0o3777])   # writable by every account, without the sticky bit
def test_a_root_every_account_may_write_in_needs_the_sticky_bit(tmp_path, mode):
    root = exchange(tmp_path, mode & ~stat.S_ISVTX)
    with pytest.raises(Untrusted, match=rf"the exchange {root} is writable by every account without the sticky bit "
                                        rf"\({stat.filemode(os.stat(root).st_mode)}\).*chmod 1777"):
        check_owned(root / "cs336", {ME}, REMEDY)


@pytest.mark.parametrize("mode", [0o1777, 0o755, 0o1733])
def test_a_sticky_or_private_root_of_ours_is_trusted(tmp_path, mode):
    root = exchange(tmp_path, mode)
    check_owned(root / "cs336", {ME}, REMEDY)                  # no course folder yet
    (root / "cs336").mkdir(mode=0o755)
    (root / "cs336" / "inbound").mkdir()
    os.chmod(root / "cs336" / "inbound", 0o2733)               # every student drops a submission there
    check_owned(root / "cs336", {ME}, REMEDY)


def test_a_root_of_another_account_is_refused(tmp_path):
    root = exchange(tmp_path, 0o1777)
    with pytest.raises(Untrusted, match=f"the exchange {root} is owned by .*, not by"):
        check_owned(root / "cs336", {ME + 1}, REMEDY)


def test_no_exchange_yet_is_nothing_to_refuse(tmp_path):
    check_owned(tmp_path / "none" / "cs336", {ME}, REMEDY)


@pytest.mark.parametrize("make, why", [
    (lambda course: (course / "outbound").mkdir(mode=0o777) or os.chmod(course / "outbound", 0o777),
     r"outbound is writable by every account \(drwxrwxrwx\)"),
    (lambda course: (course / "inbound").write_text("x") and os.chmod(course / "inbound", 0o644),
     r"inbound is not a folder \(-rw-r--r--\)"),
    (lambda course: (course / CLASS_MARK).mkdir(mode=0o755), rf"{CLASS_MARK} is not a regular file \(drwxr-xr-x\)"),
    (lambda course: (course / "feedback").symlink_to("/tmp"), r"feedback is a symbolic link \(to /tmp\)"),
])
def test_a_part_of_the_class_folder_others_could_have_made_is_refused(tmp_path, make, why):
    course = exchange(tmp_path, 0o1777) / "cs336"
    course.mkdir(mode=0o755)
    make(course)
    with pytest.raises(Untrusted, match=why + r": another account may have made or changed it.* Remove "):
        check_owned(course, {ME}, REMEDY)


def test_a_course_folder_that_is_a_link_is_refused(tmp_path):
    root = exchange(tmp_path, 0o1777)
    (tmp_path / "elsewhere").mkdir()
    (root / "cs336").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(Untrusted, match="cs336 is a symbolic link"):
        check_owned(root / "cs336", {ME}, REMEDY)


@pytest.mark.parametrize("before, after", [(0o777, 0o1777), (0o1777, 0o1777), (0o755, 0o755), (0o773, 0o1773)])
def test_seal_root_adds_the_sticky_bit_only_where_everyone_may_write(tmp_path, before, after):
    root = exchange(tmp_path, before)
    seal_root(root)
    assert stat.S_IMODE(os.stat(root).st_mode) == after
    seal_root(tmp_path / "none")                                # no root yet: nothing to do
