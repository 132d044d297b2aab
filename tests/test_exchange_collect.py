"""autograder/exchange/collect.py's collect by owner, in this process and in milliseconds: which inbound entry is taken
for each student (`OwnedCollect.init_src`: the owner, the student asked for, the latest or the latest before the due
date), what is copied of it within the course's limits (`copy_owned`, `do_copy`: kB as nbgrader's settings say), and
the time it is graded with (`arrival_time`, `_stamp`: a student's own timestamp.txt is kept only as a claim). The
tests that give files to other accounts run as root; the class hub's test collects from real student accounts."""
from __future__ import annotations

import datetime
import logging
import os
import pwd
import time
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.exchange import ExchangeError

from autograder.exchange import OwnedCollect, Skip, arrival_time, copy_owned
from autograder.exchange.collect import CLAIM_TOLERANCE, MAX_FILES
from tests.exchange_apps import exchange_app

A = "03_memory"
ME = os.geteuid()
needs_root = pytest.mark.skipif(ME != 0, reason="gives files to other accounts: needs root")
UTC = datetime.timezone.utc


@pytest.fixture(autouse=True, scope="module")
def _alembic_head_in_process():
    """nbgrader runs the `alembic` command for every Gradebook it opens (a second or more); the grader reads the same
    answer in process (autograder/database.py), and so do these tests."""
    from autograder import database
    database.alembic_head_in_process()


def uid(account: str) -> int:
    return pwd.getpwnam(account).pw_uid


def owned(path: Path, account: str) -> Path:
    for p in [path, *path.rglob("*")]:
        os.chown(p, uid(account), uid(account), follow_symlinks=False)
    return path


def collector(tmp_path: Path, **settings) -> OwnedCollect:
    """OwnedCollect as `nbgrader collect A` makes it, for the course cs336 with its exchange under tmp_path."""
    sections: dict[str, dict[str, object]] = {"OwnedCollect": {}, "CourseDirectory": {}}
    for name, value in settings.items():
        sections["OwnedCollect" if name in ("inboxes", "before_duedate") else "CourseDirectory"][name] = value
    return exchange_app(OwnedCollect, A, tmp_path / "exchange", tmp_path / "course", tmp_path / "gradebook.db",
                        "collect-test", sections)


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "collect-test" and r.levelno == logging.WARNING]


def submission(inbound: Path, name: str, account: str | None = None, files: dict[str, bytes] | None = None) -> Path:
    folder = inbound / name
    folder.mkdir(parents=True)
    for file, content in (files or {"notes.txt": b"mine"}).items():
        (folder / file).write_bytes(content)
    return owned(folder, account) if account else folder


def inbound(tmp_path: Path) -> Path:
    folder = tmp_path / "exchange" / "cs336" / "inbound"
    folder.mkdir(parents=True)
    return folder


def chosen(collect: OwnedCollect) -> dict[str, str]:
    return {r["username"]: os.path.basename(r["filename"]) for r in collect.src_records}


# ---- which entry is taken --------------------------------------------------------------------------------------

@needs_root
def test_each_student_gets_their_latest_own_entry_and_every_other_is_skipped_with_a_line(tmp_path, caplog):
    box = inbound(tmp_path)
    submission(box, f"nobody+{A}+2026-01-01 10:00:00 UTC+a", "nobody")
    submission(box, f"nobody+{A}+2026-01-02 10:00:00 UTC+b", "nobody")
    submission(box, f"daemon+{A}+2026-01-01 09:00:00 UTC+c", "daemon")
    submission(box, f"daemon+{A}+2026-01-03 09:00:00 UTC+d", "nobody")      # nobody's, in daemon's name
    submission(box, "not-a-submission", "nobody")
    submission(box, "nobody+01_floats+2026-01-05 10:00:00 UTC+e", "nobody")  # another assignment: not asked for
    collect = collector(tmp_path)
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collect.init_src()
    assert chosen(collect) == {"nobody": f"nobody+{A}+2026-01-02 10:00:00 UTC+b",
                               "daemon": f"daemon+{A}+2026-01-01 09:00:00 UTC+c"}
    assert all(os.path.isabs(r["filename"]) for r in collect.src_records)   # nbgrader joins it to inbound_path
    said = warnings_of(caplog)
    assert sorted(said[:-1]) == [
        f"Skipped '{f'daemon+{A}+2026-01-03 09:00:00 UTC+d'}': made by nobody, not by daemon (foreign entry)",
        "Skipped 'not-a-submission': not <student>+<assignment>+<time> (malformed name)"]
    assert said[-1] == f"2 inbound entries of {A} skipped (the lines above say why)"
    collect = collector(tmp_path, student_id="daemon")
    collect.init_src()
    assert chosen(collect) == {"daemon": f"daemon+{A}+2026-01-01 09:00:00 UTC+c"}
    collect = collector(tmp_path, student_id="*")
    collect.init_src()
    assert set(chosen(collect)) == {"nobody", "daemon"}


@needs_root
def test_before_the_due_date_takes_the_latest_entry_up_to_it_else_the_latest(tmp_path):
    box = inbound(tmp_path)
    submission(box, f"nobody+{A}+2026-01-01 10:00:00 UTC+a", "nobody")
    submission(box, f"nobody+{A}+2026-01-01 12:00:00 UTC+b", "nobody")       # at the due date itself: in time
    submission(box, f"nobody+{A}+2026-01-02 10:00:00 UTC+c", "nobody")
    submission(box, f"daemon+{A}+2026-01-03 10:00:00 UTC+d", "daemon")       # only late ones
    assert chosen(_run(tmp_path, before_duedate=True)) == {   # no due date in the gradebook: the latest
        "nobody": f"nobody+{A}+2026-01-02 10:00:00 UTC+c", "daemon": f"daemon+{A}+2026-01-03 10:00:00 UTC+d"}
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "cs336") as book:
        book.update_or_create_assignment(A, duedate="2026-01-01 12:00:00 UTC")
    assert chosen(_run(tmp_path, before_duedate=True)) == {
        "nobody": f"nobody+{A}+2026-01-01 12:00:00 UTC+b", "daemon": f"daemon+{A}+2026-01-03 10:00:00 UTC+d"}
    assert chosen(_run(tmp_path)) == {
        "nobody": f"nobody+{A}+2026-01-02 10:00:00 UTC+c", "daemon": f"daemon+{A}+2026-01-03 10:00:00 UTC+d"}


def _run(tmp_path: Path, **settings) -> OwnedCollect:
    collect = collector(tmp_path, **settings)
    collect.init_src()
    return collect


@needs_root
def test_each_students_own_inbox_is_read_and_an_unreadable_one_is_said(tmp_path, caplog):
    inbound(tmp_path)
    disks = tmp_path / "disks"
    submission(disks / "nobody" / "inbound", f"nobody+{A}+2026-01-01 10:00:00 UTC+a", "nobody")
    (disks / "broken").mkdir(parents=True)
    (disks / "broken" / "inbound").write_text("a file, not a folder")
    collect = collector(tmp_path, inboxes=str(disks / "*" / "inbound"))
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collect.init_src()
    assert chosen(collect) == {"nobody": f"nobody+{A}+2026-01-01 10:00:00 UTC+a"}
    assert warnings_of(caplog) == [f"Skipped the inbound folder {disks / 'broken' / 'inbound'}: Not a directory"]


def test_collect_refuses_a_course_without_an_id(tmp_path):
    inbound(tmp_path)
    with pytest.raises(ExchangeError, match="No course id specified"):
        collector(tmp_path, course_id="").init_src()
    collector(tmp_path).init_src()   # the same course with its id: nothing to refuse


# ---- what is copied, and its time ------------------------------------------------------------------------------

@needs_root
def test_a_submission_is_copied_within_the_courses_kilobytes_and_stamped_with_its_arrival(tmp_path, caplog):
    """max_file_size 1 and max_dir_size 2 (kB, nbgrader's settings): a file of exactly 1000 bytes and 2000 bytes in
    all are taken, a file of 1001 is left out (one line), a submission over 2000 bytes is skipped whole (nothing of
    it stays); the timestamp is the time of arrival, the student's own kept as a claim."""
    box = inbound(tmp_path)
    claim = b"2020-01-01 00:00:00.000000 UTC"
    ok = submission(box, f"nobody+{A}+2026-01-01 10:00:00 UTC+a", "nobody", {
        f"{A}.ipynb": b"n" * 1000, "timestamp.txt": claim, "pad.txt": b"p" * (1000 - len(claim)),
        "big.bin": b"b" * 1001})
    over = submission(box, f"daemon+{A}+2026-01-01 10:00:00 UTC+b", "daemon",
                      {"a.txt": b"a" * 900, "b.txt": b"b" * 900, "c.txt": b"c" * 900})
    collect = collector(tmp_path, max_file_size=1, max_dir_size=2)
    collect.init_src()
    dest = tmp_path / "course" / "submitted"
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collect.do_copy(str(ok), str(dest / "nobody"))
        collect.do_copy(str(over), str(dest / "daemon"))
    assert sorted(p.name for p in (dest / "nobody").iterdir()) == [
        f"{A}.ipynb", "pad.txt", "timestamp-claimed.txt", "timestamp.txt"]
    assert (dest / "nobody" / f"{A}.ipynb").read_bytes() == b"n" * 1000
    assert (dest / "nobody" / "timestamp-claimed.txt").read_bytes() == claim
    stamped = datetime.datetime.strptime((dest / "nobody" / "timestamp.txt").read_text(), "%Y-%m-%d %H:%M:%S.%f UTC")
    assert stamped.replace(tzinfo=UTC) == arrival_time(str(ok))
    assert not (dest / "daemon").exists()
    said = warnings_of(caplog)
    assert said[0] == "Left out of nobody's submission: big.bin: 0.0 MB, over the 0 MB limit for a file"
    assert said[1].startswith("nobody's timestamp.txt says '2020-01-01 00:00:00.000000 UTC', but the submission")
    assert said[2] == f"Skipped {over.name} of daemon: over the 0 MB left for the whole submission"
    assert len(said) == 3


def test_a_submission_gone_before_its_copy_is_skipped_with_a_line(tmp_path, caplog):
    box = inbound(tmp_path)
    gone = submission(box, f"{pwd.getpwuid(ME).pw_name}+{A}+2026-01-01 10:00:00 UTC+a")
    collect = collector(tmp_path)
    collect.init_src()
    (gone / "notes.txt").unlink()
    gone.rmdir()
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collect.do_copy(str(gone), str(tmp_path / "dest"))
    assert not (tmp_path / "dest").exists()
    assert len(warnings_of(caplog)) == 1 and warnings_of(caplog)[0].startswith(f"Skipped {gone.name} of ")


@pytest.mark.parametrize("claimed, kept", [
    ("", None),                                          # none written: nothing to keep
    ("2026-01-05 12:00:00.000000 UTC", None),            # the time of arrival itself
    ("2026-01-05 12:02:00.000000 UTC", None),            # CLAIM_TOLERANCE off: within it
    ("2026-01-05 11:58:00.000000 UTC", None),
    ("2026-01-05 12:02:01.000000 UTC", "2026-01-05 12:02:01.000000 UTC"),   # a second more
    ("2026-01-05 11:57:59.000000 UTC", "2026-01-05 11:57:59.000000 UTC"),
    ("yesterday, honest" + "!" * 300, "yesterday, honest" + "!" * 183),      # not a time: kept, cut to 200
])
def test_a_students_timestamp_is_kept_as_a_claim_only_when_it_disagrees(tmp_path, caplog, claimed, kept):
    assert CLAIM_TOLERANCE == 120
    dest = tmp_path / "submitted"
    dest.mkdir()
    if claimed:
        (dest / "timestamp.txt").write_text(claimed)
    arrived = datetime.datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
    with caplog.at_level(logging.WARNING, logger="collect-test"):
        collector(tmp_path)._stamp(dest, arrived, "ada")
    assert (dest / "timestamp.txt").read_text() == "2026-01-05 12:00:00.000000 UTC"
    claim = dest / "timestamp-claimed.txt"
    assert (claim.read_text() if claim.exists() else None) == kept
    said = warnings_of(caplog)
    if kept is None:
        assert said == []
    else:
        assert len(said) == 1 and said[0].startswith(f"ada's timestamp.txt says {claimed[:60]!r}, but the submission "
                                                     "reached the exchange at 2026-01-05 12:00:00 UTC")


def test_the_arrival_is_the_latest_change_of_anything_in_the_submission(tmp_path):
    folder = tmp_path / "entry"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "late.txt").write_text("x")
    (folder / "early.txt").write_text("x")
    (folder / "z.txt").write_text("x")
    time.sleep(0.02)
    os.chmod(folder / "early.txt", 0o600)     # a change of one file only: its ctime, not its folder's
    latest = os.lstat(folder / "early.txt").st_ctime
    assert latest > max(os.lstat(p).st_ctime for p in (folder, folder / "sub", folder / "sub" / "late.txt"))
    assert arrival_time(str(folder)) == datetime.datetime.fromtimestamp(latest, UTC)


# ---- copy_owned's limits, on files of this account -------------------------------------------------------------

def files(folder: Path, sizes: dict[str, int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        (folder / name).write_bytes(bytes([len(name)]) * size)
    return folder


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_files_at_the_limits_are_copied_whole_and_one_byte_over_is_left_out_or_refuses(tmp_path):
    before = open_descriptors()
    source = files(tmp_path / "src", {"a.bin": 1_500_000, "b.txt": 500_000, "big.bin": 3_000_001})
    left = copy_owned(str(source), str(tmp_path / "dest"), ME, max_file=2_000_000, max_total=2_000_000, ignore=[])
    assert left == ["big.bin: 3.0 MB, over the 2 MB limit for a file"]
    for name in ("a.bin", "b.txt"):
        assert (tmp_path / "dest" / name).read_bytes() == (source / name).read_bytes()
    files(source, {"c.bin": 1_500_000})   # 3.5 MB in all: c.bin meets 0 bytes left
    with pytest.raises(Skip, match="^over the 0 MB left for the whole submission$"):
        copy_owned(str(source), str(tmp_path / "dest2"), ME, max_file=2_000_000, max_total=2_500_000, ignore=[])
    with pytest.raises(Skip, match="^over the 1 MB left for the whole submission$"):
        copy_owned(str(source), str(tmp_path / "dest3"), ME, max_file=2_000_000, max_total=3_000_000, ignore=[])
    assert open_descriptors() == before


def test_a_file_that_grows_while_it_is_copied_is_left_out_not_cut(tmp_path, monkeypatch):
    """The size is checked on the open file; a file growing past the limit after that check is read to one byte over
    the limit and left out (its partial copy removed), never copied cut short."""
    source = files(tmp_path / "src", {"grows.bin": 2_000_001, "ok.txt": 10})
    real = os.fstat

    def before_it_grew(fd):
        info = real(fd)
        if info.st_size == 2_000_001:   # seen at its check as it was a moment before: at the limit
            return os.stat_result((*info[:6], 2_000_000, *info[7:]))
        return info
    monkeypatch.setattr(os, "fstat", before_it_grew)
    before = open_descriptors()
    left = copy_owned(str(source), str(tmp_path / "dest"), ME, max_file=2_000_000, max_total=10_000_000, ignore=[])
    assert left == ["grows.bin: over the 2 MB limit for a file"]
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["ok.txt"]
    assert open_descriptors() == before


@pytest.fixture
def in_memory(tmp_path):
    """A scratch folder in memory where there is one (/dev/shm): thousands of small files in a tenth of a second
    (seconds on this machine's disk)."""
    import shutil
    import tempfile
    if not os.path.isdir("/dev/shm"):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="exchange-collect-"))
    yield folder
    shutil.rmtree(folder)


def test_a_submission_of_max_files_entries_is_copied_and_one_more_refuses_it(in_memory):
    tmp_path = in_memory
    source = tmp_path / "src"
    (source / "folder").mkdir(parents=True)
    for i in range(MAX_FILES - 2):
        (source / "folder" / f"{i}.txt").touch()
    (source / "last.txt").touch()                                  # MAX_FILES entries, files and folders
    files(source / ".ipynb_checkpoints", {"x.ipynb": 1, "y.ipynb": 1})   # ignored: not counted, not copied
    assert copy_owned(str(source), str(tmp_path / "dest"), ME, 1000, 10_000, [".ipynb_checkpoints"]) == []
    assert len(list((tmp_path / "dest").rglob("*"))) == MAX_FILES and not (tmp_path / "dest" / ".ipynb_checkpoints").exists()
    (source / "one-more.txt").touch()
    with pytest.raises(Skip, match=f"more than {MAX_FILES} files and folders"):
        copy_owned(str(source), str(tmp_path / "dest2"), ME, 1000, 10_000, [".ipynb_checkpoints"])


@needs_root
def test_a_folder_or_a_submission_of_another_account_is_not_copied(tmp_path):
    source = files(tmp_path / "src", {"mine.txt": 3})
    files(source / "theirs", {"planted.py": 3})
    owned(source, "nobody")
    owned(source / "theirs", "daemon")
    left = copy_owned(str(source), str(tmp_path / "dest"), uid("nobody"), 1000, 10_000, [])
    assert left == ["theirs: owned by daemon, not the submitter"]
    assert sorted(p.name for p in (tmp_path / "dest").rglob("*")) == ["mine.txt"]
    with pytest.raises(Skip, match="^'src': owned by nobody \\(foreign entry\\)$"):
        copy_owned(str(source), str(tmp_path / "dest2"), uid("daemon"), 1000, 10_000, [])
    assert not (tmp_path / "dest2").exists()


def test_a_fifo_swapped_in_after_the_listing_is_left_out_not_copied_empty(tmp_path):
    """The copy checks what it opened, not what the folder's listing said: a FIFO in a regular file's place (opened
    without blocking) is left out."""
    from autograder.exchange.collect import Budget, LeftOut, _copy_file
    os.mkfifo(tmp_path / "notes.txt")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(LeftOut, match="not a regular file"):
            _copy_file(folder, "notes.txt", tmp_path / "copy.txt", ME, 1000, Budget(10_000))
    finally:
        os.close(folder)
    assert not (tmp_path / "copy.txt").exists()
