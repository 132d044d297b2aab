"""One exchange per class, and a loud refusal of another class's (issue #49, item 4), with nbgrader's own commands.

Two classes of this course on one machine (two clones: A and B, so one course id) and one shared exchange folder:
class A releases first, so the exchange's cs336-primitives/ folder is A's (course.txt names A's course, and the
students' file is written beside it). B's instructor's release and release_feedback are refused there, and a student of
B (B's students' file, naming that exchange) is refused by fetch_assignment, submit, fetch_feedback and list, each
saying whose exchange it is, with nothing fetched or submitted. A's student, with the file A's release wrote, fetches
and submits. A student whose own COURSE_EXCHANGE names another folder is refused too.

On a shared machine any account may make the course's exchange folder, or a part of it, before the first release
(docs/security.md, "The exchange on a shared machine"): as root, these tests give such parts to `nobody` and see the
release and every student command refuse them, writing and fetching nothing.

The whole cycle as docs/instructors.md prints it (the one default exchange, the course's exchange/, with no
COURSE_EXCHANGE on either side) is tests/test_readme_commands.py.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import exchange_root
from autograder.exchange import STUDENTS_CONFIG, students_config
from tests import warm

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
    return warm.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True,
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
                feedback_b=feedback_b, outbound=outbound, before=before, released_a=released_a)


def test_the_first_release_marks_the_exchange_as_its_class_and_writes_the_students_file(two_classes):
    folder = two_classes["shared"] / COURSE_ID
    assert (folder / "course.txt").read_text() == f"{two_classes['first']}\n"
    assert (folder / STUDENTS_CONFIG).read_text() == students_config(two_classes["shared"], two_classes["first"])
    assert oct((folder / STUDENTS_CONFIG).stat().st_mode & 0o777) == "0o644"  # every student may read it
    # issue #62: the log says how it reaches the students: the line each runs, where every account can read it;
    # else why not, and the other ways (here the scratch folder of the tests may be closed to other accounts)
    said = two_classes["released_a"].stderr
    from autograder.exchange import closed_to_others
    assert f"mkdir -p ~/.jupyter && cp {folder / STUDENTS_CONFIG} ~/.jupyter/nbgrader_config.py" in said, said
    closed = closed_to_others(folder / STUDENTS_CONFIG)
    assert ("nothing to send" in said) == (not closed) and ("Other accounts cannot read it there" in said) == bool(closed)


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
    """autograder.course.exchange_root reads nbgrader's Exchange.root traitlet (/usr/local/share/nbgrader/exchange
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


# ---- owners: a shared machine's exchange, where any account may make the course's folder first ---------------------

NOBODY = 65534   # `nobody`: a student, as far as files go
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="gives files to another account: needs root")


def tree(root: Path) -> list[tuple]:
    """Everything under `root`, links not followed: (path, owner, mode, a file's bytes or a link's target)."""
    found = []
    for folder, folders, files in os.walk(root):
        for name in sorted(folders + files):
            path = Path(folder) / name
            info = path.lstat()
            what = path.read_bytes() if path.is_file() and not path.is_symlink() else \
                os.readlink(path) if path.is_symlink() else None
            found.append((str(path.relative_to(root)), info.st_uid, info.st_mode, what))
    return sorted(found)


def shared_exchange(tmp: Path) -> tuple[Path, Path, dict]:
    """A class (its course folder), a shared exchange (1777, as nbgrader's default) and its instructor's shell."""
    exchange = tmp / "exchange"
    exchange.mkdir(mode=0o1777)
    exchange.chmod(0o1777)
    return course(tmp / "class").resolve(), exchange, environment(tmp / "home" / "prof",
                                                                  COURSE_EXCHANGE=str(exchange))


def plant(folder: Path, what: str, course_root: Path) -> None:
    """What a student made in the exchange's course folder `folder` before the instructor's first release."""
    if what == "link":   # the course folder, a link to a folder the release would write into
        (folder.parent / "elsewhere").mkdir()
        folder.symlink_to(folder.parent / "elsewhere")
        return
    folder.mkdir(mode=0o1777 if what == "open" else 0o755)
    folder.chmod(0o1777 if what == "open" else 0o755)   # "open": root's (an administrator's), but every account's
    made = {"folder": folder, "marker": folder / "course.txt", "config": folder / STUDENTS_CONFIG,
            "inbound": folder / "inbound", "outbound": folder / "outbound", "feedback": folder / "feedback"}.get(what)
    if made is not None and made != folder:
        if made.name in ("course.txt", STUDENTS_CONFIG):
            made.write_text(f"{course_root}\n" if made.name == "course.txt" else "c = get_config()\n")
        else:
            made.mkdir()
    if made is not None:
        os.chown(made, NOBODY, NOBODY)


@root_only
@pytest.mark.parametrize("what, why", [("folder", "is owned by nobody"), ("marker", "is owned by nobody"),
                                       ("config", "is owned by nobody"), ("inbound", "is owned by nobody"),
                                       ("outbound", "is owned by nobody"), ("feedback", "is owned by nobody"),
                                       ("link", "is a symbolic link"), ("open", "is writable by every account")])
def test_a_release_into_what_another_account_made_is_refused_and_writes_nothing(tmp_path, what, why):
    course_root, exchange, instructor = shared_exchange(tmp_path)
    folder = exchange / COURSE_ID
    plant(folder, what, course_root)
    refused = {"marker": folder / "course.txt", "config": folder / STUDENTS_CONFIG}.get(
        what, folder / what if what in ("inbound", "outbound", "feedback") else folder)
    before = tree(tmp_path / "exchange"), tree(tmp_path / "elsewhere") if what == "link" else []
    done = nbgrader("release_assignment", A, cwd=course_root, env=instructor)
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert f"{refused} {why}" in done.stderr and "Nothing was released" in done.stderr, done.stderr
    assert f"Remove it as root (`sudo rm -rf '{refused}'`), then release again" in done.stderr, done.stderr
    after = tree(tmp_path / "exchange"), tree(tmp_path / "elsewhere") if what == "link" else []
    assert after == before


@root_only
def test_an_exchange_root_a_student_owns_or_anyone_may_rename_in_is_refused_on_both_sides(tmp_path):
    """From a student's side: a student who made the shared exchange's root before anyone owns it, and in a root
    every account may write in without the sticky bit anyone may rename the class's folder away and put their own in
    its place. The release refuses a root another account owns and writes nothing; it gives its own root the sticky
    bit (nbgrader makes and re-modes its root 0777); a class's student is refused by a root a student owns or one that
    lost its sticky bit later."""
    course_root, exchange, instructor = shared_exchange(tmp_path)
    os.chown(exchange, NOBODY, NOBODY)
    before = tree(exchange)
    done = nbgrader("release_assignment", A, cwd=course_root, env=instructor)
    assert done.returncode != 0 and f"the exchange {exchange} is owned by nobody" in done.stderr, done.stderr
    assert f"sudo chown root: '{exchange}' && sudo chmod 1777 '{exchange}'" in done.stderr, done.stderr
    assert tree(exchange) == before
    os.chown(exchange, 0, 0)
    exchange.chmod(0o777)   # as nbgrader leaves a root it made
    assert nbgrader("release_assignment", A, cwd=course_root, env=instructor).returncode == 0
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777
    home = tmp_path / "home" / "student"
    env = student(home, (exchange / COURSE_ID / STUDENTS_CONFIG).read_text())
    for made_by, mode, why in ((NOBODY, 0o1777, "is owned by uid 65534"),
                               (0, 0o777, "is writable by every account without the sticky bit")):
        os.chown(exchange, made_by, made_by)
        exchange.chmod(mode)
        done = nbgrader("fetch_assignment", A, cwd=home, env=env)
        shown = done.stdout + done.stderr
        assert done.returncode != 0 and f"the exchange {exchange} {why}" in shown, shown
        assert "Nothing was fetched or submitted: tell your instructor" in shown, shown
        assert not list(home.glob(f"{COURSE_ID}/**/*"))


@root_only
def test_release_feedback_into_a_feedback_folder_another_account_made_is_refused(tmp_path):
    course_root, exchange, instructor = shared_exchange(tmp_path)
    assert nbgrader("release_assignment", A, cwd=course_root, env=instructor).returncode == 0
    feedback = exchange / COURSE_ID / "feedback"
    feedback.mkdir()
    os.chown(feedback, NOBODY, NOBODY)   # as though a student had made it before the first release_feedback
    (course_root / "feedback" / "someone" / A).mkdir(parents=True)
    before = tree(exchange)
    done = nbgrader("release_feedback", A, cwd=course_root, env=instructor)
    assert done.returncode != 0 and f"{feedback} is owned by nobody" in done.stderr, done.stderr
    assert tree(exchange) == before


@root_only
@pytest.mark.parametrize("what, command, why", [
    ("folder", ["fetch_assignment", A], "is owned by uid 65534, not by your instructor (uid 0) or root"),
    ("marker", ["list"], "is owned by uid 65534"), ("config", ["fetch_assignment", A], "is owned by uid 65534"),
    ("inbound", ["submit", A], "is owned by uid 65534"), ("link", ["fetch_assignment", A], "is a symbolic link")])
def test_a_student_command_refuses_an_exchange_another_account_made(tmp_path, what, command, why):
    """The class's own release, then the folder swapped (a root without the sticky bit), a marker, the students' file
    or inbound given to another account, or the course folder replaced by a link to a copy: the class's student,
    with the file the release handed out, is refused, told to tell the instructor, with nothing fetched or
    submitted."""
    course_root, exchange, instructor = shared_exchange(tmp_path)
    assert nbgrader("release_assignment", A, cwd=course_root, env=instructor).returncode == 0
    folder = exchange / COURSE_ID
    home = tmp_path / "home" / "student"
    env = student(home, (folder / STUDENTS_CONFIG).read_text())
    if command[0] == "submit":   # the student's work, fetched before
        (home / COURSE_ID / A).mkdir(parents=True)
        (home / COURSE_ID / A / f"{A}.ipynb").write_bytes((folder / "outbound" / A / f"{A}.ipynb").read_bytes())
    if what == "link":
        folder.rename(exchange / "copy")
        folder.symlink_to(exchange / "copy")
        refused = folder
    else:
        refused = {"folder": folder, "marker": folder / "course.txt", "config": folder / STUDENTS_CONFIG,
                   "inbound": folder / "inbound"}[what]
        os.chown(refused, NOBODY, NOBODY)
    before = tree(exchange)
    done = nbgrader(*command, cwd=home, env=env)
    shown = done.stdout + done.stderr
    assert done.returncode != 0, shown
    assert f"{refused} {why}" in shown and "Nothing was fetched or submitted: tell your instructor" in shown, shown
    assert tree(exchange) == before
    fetched = sorted(str(p.relative_to(home)) for p in home.glob(f"{COURSE_ID}/**/*"))
    assert fetched == ([f"{COURSE_ID}/{A}", f"{COURSE_ID}/{A}/{A}.ipynb"] if command[0] == "submit" else []), fetched


@root_only
def test_the_students_file_checks_as_the_release_does(tmp_path):
    """The students' file repeats autograder.exchange.check_owned (students have nothing else of the instructor's):
    both accept and refuse the same course folders."""
    from traitlets.config import Config

    from autograder.exchange import Untrusted, check_owned
    config = {"get_config": Config}
    exec(students_config(tmp_path, tmp_path, instructor=0), config)
    cases = ["fine", "folder", "marker", "config", "inbound", "outbound", "feedback", "link", "open", "kind"]
    for case in cases:
        folder = tmp_path / case / COURSE_ID
        folder.parent.mkdir()
        if case == "kind":   # course.txt a folder
            folder.mkdir()
            (folder / "course.txt").mkdir()
        elif case != "fine":
            plant(folder, case, tmp_path)
        try:
            check_owned(folder, {0}, "")
            release = None
        except Untrusted as error:
            release = str(error)
        assert (release is None) == (config["untrusted"](str(folder)) is None) == (case == "fine"), (case, release)


@root_only
def test_the_class_hubs_exchange_passes_both_checks(tmp_path):
    """The course folder scripts/class_hub.py makes as the grader's (inbound 1733: writable by every student), with the
    grader's course.txt and students' file in it, is trusted by the release (run as the grader) and by the students;
    not by a release run as another account."""
    from types import SimpleNamespace

    from traitlets.config import Config

    from autograder.exchange import Untrusted, check_owned
    from scripts.class_hub import create_exchange
    create_exchange(SimpleNamespace(exchange=str(tmp_path / "exchange"), grader="nobody"))
    folder = tmp_path / "exchange" / COURSE_ID
    for name in ("course.txt", STUDENTS_CONFIG):
        (folder / name).write_text("made by the grader's release\n")
        (folder / name).chmod(0o644)
        os.chown(folder / name, NOBODY, NOBODY)
    check_owned(folder, {0, NOBODY}, "")
    config = {"get_config": Config}
    exec(students_config(tmp_path / "exchange", tmp_path, instructor=NOBODY), config)
    assert config["untrusted"](str(folder)) is None
    with pytest.raises(Untrusted, match=f"{folder} is owned by nobody, not by root"):
        check_owned(folder, {0}, "")
