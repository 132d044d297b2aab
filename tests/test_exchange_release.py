"""autograder/exchange/release_assignment.py and release_feedback.py, run in this process as `nbgrader
release_assignment` and `nbgrader release_feedback` run them (their `start`), on a scratch course and exchange: what
a release writes (the assignment, course.txt, the students' file, modes that hold under any umask), what it says
(how the students' file reaches them, a due date already past), and that a refused release writes nothing, not even
nbgrader's own folders. The whole cycle with students' commands is tests/test_exchange_class.py."""
from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.exchange import ExchangeError
from nbgrader.utils import notebook_hash

from autograder.exchange import CLASS_MARK, STUDENTS_CONFIG, FinalName, ReleaseAssignment, ReleaseFeedback
from tests.exchange_apps import exchange_app

A = "03_memory"
LOG = "release-test"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="gives files to other accounts: needs root")


@pytest.fixture(autouse=True, scope="module")
def _alembic_head_in_process():
    """nbgrader runs the `alembic` command for every Gradebook it opens (a second or more); the grader reads the same
    answer in process (autograder/database.py), and so do these tests."""
    from autograder import database
    database.alembic_head_in_process()


@pytest.fixture
def shared():
    """A folder every account may enter (pytest's own folder is its owner's only), for the exchange and the course."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="exchange-release-"))
    os.chmod(folder, 0o755)
    (folder / "course" / "release" / A).mkdir(parents=True)
    (folder / "course" / "release" / A / f"{A}.ipynb").write_text("{}")
    yield folder
    shutil.rmtree(folder)


def app(cls, shared: Path, **settings):
    return exchange_app(cls, A, shared / "exchange", shared / "course", shared / "course" / "gradebook.db", LOG,
                        {"CourseDirectory": settings})


def said(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOG and r.levelno == level]


def test_a_release_hands_out_the_students_file_and_warns_of_a_due_date_past_for_everyone(shared, caplog):
    course = shared / "course"
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "cs336") as book:
        book.update_or_create_assignment(A, duedate="2020-01-01 00:00:00 UTC")
    umask = os.umask(0o077)      # an instructor who keeps their files to themselves: what students need stays open
    try:
        with caplog.at_level(logging.INFO, logger=LOG):
            app(ReleaseAssignment, shared).start()
    finally:
        os.umask(umask)
    folder = shared / "exchange" / "cs336"
    assert (folder / "outbound" / A / f"{A}.ipynb").read_text() == "{}"
    assert (folder / CLASS_MARK).read_text() == f"{course.resolve()}\n"
    handed = folder / STUDENTS_CONFIG
    assert f"EXCHANGE = {str(shared / 'exchange')!r}" in handed.read_text()
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in (handed, folder / CLASS_MARK)} == {0o644}
    assert stat.S_IMODE(os.stat(shared / "exchange").st_mode) == 0o1777   # sealed
    info = said(caplog, logging.INFO)
    assert any(line.startswith(f"Students' file of this class: {handed}. Every account can read it") for line in info)
    warned = [line for line in said(caplog, logging.WARNING) if "due date" in line]
    assert len(warned) == 1 and warned[0].startswith(f"WARNING: the due date of {A}, 2020-01-01 00:00:00 UTC"), warned
    # a students' file gone stale (another template, a hand edit) is written again at the next release, open again
    handed.write_text("EXCHANGE = '/elsewhere'\n")
    handed.chmod(0o600)
    release = app(ReleaseAssignment, shared)
    release.force = True
    release.start()
    assert f"EXCHANGE = {str(shared / 'exchange')!r}" in handed.read_text() and stat.S_IMODE(handed.stat().st_mode) == 0o644


def test_a_release_into_another_classs_folder_is_refused_and_makes_nothing_there(shared):
    folder = shared / "exchange" / "cs336"
    folder.mkdir(parents=True)
    os.chmod(shared / "exchange", 0o1777)
    (folder / CLASS_MARK).write_text("/srv/another-class\n")
    for cls in (ReleaseAssignment, ReleaseFeedback):
        with pytest.raises(ExchangeError, match="belongs to another class: its course.txt names the course "
                                                "/srv/another-class.*Nothing was released"):
            app(cls, shared).start()
        assert sorted(os.listdir(folder)) == [CLASS_MARK]   # not even nbgrader's outbound, inbound or feedback


@needs_root
@pytest.mark.parametrize("cls", [ReleaseAssignment, ReleaseFeedback])
def test_a_release_into_a_course_folder_a_student_made_is_refused_and_makes_nothing_there(shared, cls):
    folder = shared / "exchange" / "cs336"
    folder.mkdir(parents=True)
    os.chmod(shared / "exchange", 0o1777)
    nobody = 65534
    os.chown(folder, nobody, nobody)
    with pytest.raises(ExchangeError, match=f"{folder} is owned by nobody.*Nothing was released"):
        app(cls, shared).start()
    assert os.listdir(folder) == []


def test_a_gradebook_that_cannot_be_read_stops_the_release_with_why(shared):
    (shared / "course" / "gradebook.db").write_text("not a database")
    with pytest.raises(ExchangeError, match="gradebook"):
        app(ReleaseAssignment, shared).start()


def test_feedback_is_released_to_each_student_who_submitted_through_the_exchange_and_the_rest_are_named(shared, caplog):
    course = shared / "course"
    (shared / "exchange").mkdir(mode=0o1777)   # made by the assignment's release, as nbgrader does
    os.chmod(shared / "exchange", 0o1777)
    for student, needed in (("ada", ("timestamp.txt", "submission_secret.txt")), ("bob", ("timestamp.txt",)),
                            ("cy", ("timestamp.txt", "submission_secret.txt"))):
        folder = course / "feedback" / student / A
        folder.mkdir(parents=True)
        (folder / f"{A}.html").write_text(f"<p>{student}'s feedback</p>")
        for name in needed:
            (folder / name).write_text(f"{student}-{name}")
    release = app(ReleaseFeedback, shared, student_id_exclude="cy")
    with caplog.at_level(logging.INFO, logger=LOG):
        release.start()
    released = shared / "exchange" / "cs336" / "feedback"
    page = f"{notebook_hash(secret='ada-submission_secret.txt', notebook_id=A)}.html"
    assert os.listdir(released) == [page] and (released / page).read_text() == "<p>ada's feedback</p>"
    assert said(caplog, logging.WARNING) == [
        "Not released (no timestamp.txt or submission_secret.txt: not submitted through the exchange; return these "
        "through the LMS): bob"]
    assert release.coursedir.student_id_exclude == "cy,bob"
    assert [line for line in said(caplog, logging.INFO) if line.startswith("Feedback released to")] == [
        f"Feedback released to: {released / page}"]
    assert logging.getLogger(LOG).filters == []   # the name is mended for this release's lines only


def test_the_final_name_mends_only_nbgraders_released_to_line():
    def through(text: str) -> str:
        record = logging.LogRecord(LOG, logging.INFO, __file__, 1, "%s", (text,), None)
        assert FinalName().filter(record)
        return record.getMessage()
    assert through("Feedback released to: /x/abc-tmp.html") == "Feedback released to: /x/abc.html"
    assert through("Copied /x/abc-tmp.html") == "Copied /x/abc-tmp.html"
    assert through("Feedback released to: /x/abc.html") == "Feedback released to: /x/abc.html"


@needs_root
def test_a_feedback_folder_that_is_another_accounts_once_nbgrader_found_it_is_refused(shared, monkeypatch):
    """The check runs again on the feedback folder nbgrader found or made (another account may have made it between
    the first check and nbgrader's look): stood in for by a folder that is nobody's once nbgrader has it."""
    from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
    made = ExchangeReleaseFeedback.init_dest

    def then_nobodys(self):
        made(self)
        os.chown(self.outbound_feedback_path, 65534, 65534)
    monkeypatch.setattr(ExchangeReleaseFeedback, "init_dest", then_nobodys)
    (shared / "exchange").mkdir(mode=0o1777)
    os.chmod(shared / "exchange", 0o1777)
    with pytest.raises(ExchangeError, match="feedback is owned by nobody.*Nothing was released"):
        app(ReleaseFeedback, shared).start()


def test_the_students_file_names_the_releasing_account_or_the_one_given(tmp_path):
    from autograder.exchange import students_config
    mine = students_config(tmp_path / "exchange", tmp_path / "course")
    assert f"INSTRUCTOR_UID = {os.geteuid()!r}" in mine and f"COURSE = {str(tmp_path / 'course')!r}" in mine
    assert "INSTRUCTOR_UID = 4321" in students_config(tmp_path / "exchange", tmp_path / "course", instructor=4321)
