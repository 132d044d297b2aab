"""One exchange per class, and a loud refusal of another class's (issue #49, item 4), with nbgrader's own commands.

Two classes of this course on one machine (two clones: A and B, so one course id) and one shared exchange folder:
class A releases first, so the exchange's cs336-primitives/ folder is A's (course.txt names A's course, and the
students' file is written beside it). B's instructor's release and release_feedback are refused there, and a student of
B (B's students' file, naming that exchange) is refused by fetch_assignment, submit, fetch_feedback and list, each
saying whose exchange it is, with nothing fetched or submitted. A's student, with the file A's release wrote, fetches
and submits. A student whose own COURSE_EXCHANGE names another folder is refused too.

The whole cycle as docs/instructors.md prints it (the one default exchange, the course's exchange/, with no
COURSE_EXCHANGE on either side) is tests/test_readme_commands.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.exchange import STUDENTS_CONFIG, exchange_root, students_config

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
A = "01_floats"
COURSE_ID = "cs336-primitives"


def course(root: Path) -> Path:
    for name in ("nbgrader_config.py", f"source/{A}", f"release/{A}"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, root / name)
    return root


def environment(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "COURSE_EXCHANGE", "NBGRADER"))}
    home.mkdir(parents=True, exist_ok=True)
    return {**env, "HOME": str(home), "PATH": f"{BIN}{os.pathsep}{env['PATH']}", **extra}


def nbgrader(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


def student(home: Path, config_text: str) -> dict:
    """A student's account: the handed-out file as ~/.jupyter/nbgrader_config.py."""
    (home / ".jupyter").mkdir(parents=True)
    (home / ".jupyter" / "nbgrader_config.py").write_text(config_text)
    return environment(home)


@pytest.fixture(scope="module")
def two_classes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("two-classes")
    shared = tmp / "srv-exchange"
    shared.mkdir(mode=0o1777)
    first, second = course(tmp / "class-a"), course(tmp / "class-b")
    instructor = environment(tmp / "home" / "prof", COURSE_EXCHANGE=str(shared))
    released_a = nbgrader("release_assignment", A, cwd=first, env=instructor)
    assert released_a.returncode == 0, released_a.stderr
    outbound = shared / COURSE_ID / "outbound" / A / f"{A}.ipynb"
    before = outbound.read_bytes()
    released_b = nbgrader("release_assignment", A, "--force", cwd=second, env=instructor)
    (second / "feedback" / "someone" / A).mkdir(parents=True)
    feedback_b = nbgrader("release_feedback", A, cwd=second, env=instructor)
    return dict(tmp=tmp, shared=shared, first=first.resolve(), second=second.resolve(), released_b=released_b,
                feedback_b=feedback_b, outbound=outbound, before=before)


def test_the_first_release_marks_the_exchange_as_its_class_and_writes_the_students_file(two_classes):
    folder = two_classes["shared"] / COURSE_ID
    assert (folder / "course.txt").read_text() == f"{two_classes['first']}\n"
    assert (folder / STUDENTS_CONFIG).read_text() == students_config(two_classes["shared"], two_classes["first"])
    assert oct((folder / STUDENTS_CONFIG).stat().st_mode & 0o777) == "0o644"  # every student may read it


def test_another_class_cannot_release_into_it(two_classes):
    for done, what in ((two_classes["released_b"], "release_assignment"), (two_classes["feedback_b"],
                                                                          "release_feedback")):
        assert done.returncode != 0, (what, done.stdout, done.stderr)
        assert "belongs to another class" in done.stderr and str(two_classes["first"]) in done.stderr, done.stderr
        assert "Nothing was released" in done.stderr
    assert two_classes["outbound"].read_bytes() == two_classes["before"]  # A's release as it was
    assert not (two_classes["shared"] / COURSE_ID / "feedback").exists()


@pytest.mark.parametrize("command", [["fetch_assignment", A], ["submit", A], ["fetch_feedback", A], ["list"]])
def test_a_student_of_the_other_class_is_refused_loudly(two_classes, command):
    """B's students' file names the shared exchange (as B's release would have written it there): every student
    command stops, naming both classes; nothing is fetched or submitted."""
    home = two_classes["tmp"] / "home" / f"b-{command[0]}"
    env = student(home, students_config(two_classes["shared"], two_classes["second"]))
    (home / COURSE_ID / A).mkdir(parents=True)
    (home / COURSE_ID / A / f"{A}.ipynb").write_bytes(two_classes["before"])
    inbound = sorted((two_classes["shared"] / COURSE_ID / "inbound").iterdir())
    done = nbgrader(*command, cwd=home, env=env)
    assert done.returncode != 0, (done.stdout, done.stderr)
    shown = done.stdout + done.stderr
    assert "belongs to another class of cs336-primitives" in shown and str(two_classes["first"]) in shown, shown
    assert str(two_classes["second"]) in shown and "Nothing was fetched or submitted" in shown
    assert sorted((two_classes["shared"] / COURSE_ID / "inbound").iterdir()) == inbound
    assert sorted(p.name for p in (home / COURSE_ID / A).iterdir()) == [f"{A}.ipynb"]


def test_the_class_student_fetches_and_submits_with_the_handed_out_file(two_classes):
    home = two_classes["tmp"] / "home" / "a-student"
    env = student(home, (two_classes["shared"] / COURSE_ID / STUDENTS_CONFIG).read_text())
    fetched = nbgrader("fetch_assignment", A, cwd=home, env=env)
    assert fetched.returncode == 0 and (home / COURSE_ID / A / f"{A}.ipynb").is_file(), fetched.stderr
    submitted = nbgrader("submit", A, cwd=home, env=env)
    assert submitted.returncode == 0, submitted.stderr
    assert len(list((two_classes["shared"] / COURSE_ID / "inbound").glob(f"*+{A}+*"))) == 1


def test_a_students_own_course_exchange_naming_another_folder_is_refused(two_classes):
    home = two_classes["tmp"] / "home" / "a-stray"
    env = student(home, (two_classes["shared"] / COURSE_ID / STUDENTS_CONFIG).read_text())
    done = nbgrader("fetch_assignment", A, cwd=home, env={**env, "COURSE_EXCHANGE": "/srv/nbgrader/exchange"})
    assert done.returncode != 0 and "COURSE_EXCHANGE is /srv/nbgrader/exchange, but your class's exchange is " \
        f"{two_classes['shared']}" in done.stdout + done.stderr, done.stderr
    assert not (home / COURSE_ID).exists()


def test_the_exchange_root_is_nbgraders_own_default_where_nothing_names_one():
    """autograder.exchange.exchange_root reads nbgrader's Exchange.root traitlet (/usr/local/share/nbgrader/exchange
    since nbgrader 0.8) rather than restating a path; the course's config names its exchange/ (or COURSE_EXCHANGE)."""
    from nbgrader.exchange.default.exchange import Exchange
    from traitlets.config import Config
    assert exchange_root(Config()) == Path(Exchange.class_traits()["root"].default_value)
    assert exchange_root(Config({"Exchange": {"root": "/x/y"}})) == Path("/x/y")


# ---- the students' nbgrader (issue #49, item 11) -------------------------------------------------------------------

def as_nobody(script: Path) -> bool:
    """Whether the account `nobody` (a student, as far as files go) can run `script --version`."""
    return subprocess.run(["runuser", "-u", "nobody", "--", str(script), "--version"], capture_output=True,
                          timeout=120, cwd="/").returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="runs nbgrader as another account (runuser): needs root")
def test_the_check_of_the_students_environment_agrees_with_a_student_account(tmp_path):
    """`python -m autograder.exchange check-students-env ENV` (docs/instructors.md) says what `nobody` finds: the
    environment running these tests (the course's .venv; here its Python lives under /root, closed to others), the
    class hub's environment where `make hub-test-env` built it (readable by every account), and that same environment
    reached through a folder closed to others."""
    from autograder.exchange import main, students_nbgrader
    own = Path(sys.prefix)
    assert (students_nbgrader(own) == []) == as_nobody(own / "bin" / "nbgrader"), students_nbgrader(own)
    hub = Path(os.environ.get("HUB_TEST_PREFIX", "/var/tmp/cs336-hub-test")) / "env"
    if not (hub / "bin" / "nbgrader").is_file():
        pytest.skip(f"no class hub environment at {hub} (make hub-test-env builds it)")
    assert students_nbgrader(hub) == [] and as_nobody(hub / "bin" / "nbgrader")
    assert main(["check-students-env", str(hub)]) == 0
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    (closed / "env").symlink_to(hub)
    obstacles = students_nbgrader(closed / "env")
    assert any(f"{closed} (mode drwx------) does not let other accounts in" in line for line in obstacles), obstacles
    assert not as_nobody(closed / "env" / "bin" / "nbgrader")
    assert main(["check-students-env", str(closed / "env")]) == 1
