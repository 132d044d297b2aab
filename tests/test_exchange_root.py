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


@pytest.fixture
def shared(tmp_path_factory):
    """A folder every account may enter (pytest's own folder is its owner's only)."""
    import shutil
    import tempfile
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="exchange-root-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


def test_a_release_marks_the_class_and_hands_out_a_file_every_student_can_read(shared):
    from autograder.exchange import STUDENTS_CONFIG, OtherClass, hand_out, handing_out, owner_of
    root = exchange(shared, 0o777)
    course = root / "cs336"
    course.mkdir(mode=0o755)
    os.chmod(course, 0o755)
    handed = hand_out(course, root, Path("/srv/course"))
    assert handed == course / STUDENTS_CONFIG and stat.S_IMODE(os.stat(root).st_mode) == 0o1777   # sealed first
    assert stat.S_IMODE(os.stat(handed).st_mode) == 0o644 and stat.S_IMODE(os.stat(course / CLASS_MARK).st_mode) == 0o644
    assert owner_of(course) == "/srv/course" and f"EXCHANGE = {str(root)!r}" in handed.read_text()
    said = handing_out(handed)
    assert said.startswith(f"Students' file of this class: {handed}. Every account can read it there")
    with pytest.raises(OtherClass, match="belongs to another class: its course.txt names the course /srv/course"):
        hand_out(course, root, Path("/srv/other"))


def test_a_path_closed_to_other_accounts_says_where(shared):
    from autograder.exchange import closed_to_others, handing_out
    (shared / "open").write_text("x")
    os.chmod(shared / "open", 0o644)
    assert closed_to_others(shared / "open") == []
    (shared / "run").write_text("#!/bin/sh\n")
    os.chmod(shared / "run", 0o744)                              # a program others may read but not run
    assert closed_to_others(shared / "run") == [f"{shared / 'run'} (mode -rwxr--r--) is closed to other accounts"]
    os.chmod(shared / "run", 0o755)
    assert closed_to_others(shared / "run") == []
    (shared / "home").mkdir()
    os.chmod(shared / "home", 0o700)
    (shared / "home" / "config.py").write_text("x")
    (shared / "link").symlink_to(shared / "home" / "config.py")  # a link is followed to its target
    assert closed_to_others(shared / "link") == [
        f"{shared / 'home'} (mode drwx------) does not let other accounts in"]
    said = handing_out(shared / "home" / "config.py")
    assert "Other accounts cannot read it there" in said and "does not let other accounts in" in said


def test_the_release_log_names_at_most_two_obstacles(shared):
    from autograder.exchange import handing_out
    deep = shared / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "config.py").write_text("x")
    for folder in (shared / "a", shared / "a" / "b", deep):
        os.chmod(folder, 0o700)
    try:
        said = handing_out(deep / "config.py")
        assert said.count("does not let other accounts in") == 2 and f"{deep} (mode" not in said
    finally:
        for folder in (shared / "a", shared / "a" / "b", deep):
            os.chmod(folder, 0o755)


def test_a_submission_is_copied_down_to_the_depth_limit_and_leaves_no_descriptor_open(tmp_path):
    """collect's copy (copy_owned), on files of this account: MAX_DEPTH nested folders are copied, one more refuses
    the submission; neither leaves a descriptor open (a class of a thousand is collected by one process)."""
    from autograder.exchange.collect import MAX_DEPTH, Skip, copy_owned
    open_before = len(os.listdir("/proc/self/fd"))
    for depth, copied in ((MAX_DEPTH, True), (MAX_DEPTH + 1, False)):
        source = tmp_path / f"nested-{depth}"
        deepest = source.joinpath(*[f"d{i}" for i in range(depth)])
        deepest.mkdir(parents=True)
        (deepest / "notes.txt").write_text("ok")
        dest = tmp_path / f"copy-{depth}"
        if copied:
            assert copy_owned(str(source), str(dest), ME, 1000, 10_000, []) == []
            assert (dest.joinpath(*[f"d{i}" for i in range(depth)]) / "notes.txt").read_text() == "ok"
        else:
            with pytest.raises(Skip, match=f"folders nested deeper than {MAX_DEPTH}"):
                copy_owned(str(source), str(dest), ME, 1000, 10_000, [])
        assert len(os.listdir("/proc/self/fd")) == open_before


def test_collect_refuses_a_course_without_an_inbound_folder(tmp_path):
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError
    from traitlets.config import Config

    from autograder.exchange import OwnedCollect
    config = Config()
    config.Exchange.root = str(tmp_path / "exchange")
    config.CourseDirectory.course_id, config.CourseDirectory.assignment_id = "cs336", "01_floats"
    config.CourseDirectory.root = str(tmp_path / "course")
    config.CourseDirectory.db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    collect = OwnedCollect(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                           config=config)
    with pytest.raises(ExchangeError, match=f"Course not found: {tmp_path / 'exchange' / 'cs336' / 'inbound'}"):
        collect.init_src()
