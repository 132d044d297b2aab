"""The manual's commands work exactly as printed (issue #24, item 6; issue #35), student data stays out of git
(item 7), and the edges of the Canvas import and the deadlines tool (item 8).

The first test takes every ```bash block of the instructors' page (docs/instructors.md) and runs it as printed, in
order, in a scratch copy of the course (one assignment, 01_floats), with real nbgrader commands: the instructor's
blocks in the course with a scratch HOME and the course's own exchange (the one default), the students' blocks (those
running nbgrader's student commands) in a student's scratch HOME holding the students' file that the release wrote
into the exchange, handed out as the page says, and no COURSE_EXCHANGE, which the page does not print (issue #49,
item 4). The student is whoever runs the test (nbgrader names a submission after the account). A second
student's work comes from a Canvas download. Then the scratch course, a git repository with the course's
.gitignore, must have nothing new for `git add --all`.

Every other ```bash block of README.md and docs/ is run as printed by the test RUN_AS_PRINTED names for its section,
or says in the line above it why no test runs it (`<!-- not run by the tests: ... -->`): the test without a fixture
below checks both.
"""
from __future__ import annotations

import contextlib
import csv
import datetime
import io
import os
import pwd
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from tests import tiny_course, warm
from tests.manual import NOT_RUN, bash_blocks, fenced_bash, pages, read, section

REPO = Path(__file__).resolve().parent.parent
INSTRUCTORS = "docs/instructors.md"  # every bash block of it, run by the fixture `cycle` below
# Which test runs which section's bash blocks as printed: page -> {heading (None: the whole page) -> the test}
RUN_AS_PRINTED = {
    "README.md": {"## Two commands": "tests/lab_server.py"},  # `make lab`; `make test` is CI's own command
    INSTRUCTORS: {None: "tests/test_readme_commands.py"},
    "docs/hub.md": {"## Run a class on one machine": "tests/test_class_hub.py"},
    "docs/clusters.md": {"## Grading on a Slurm cluster": "tests/test_clusters.py"},
}
END_OF_TERM = "## End of term"  # its blocks end the cycle: the last test of this file runs them
STUDENT_COMMANDS = re.compile(r"\bnbgrader (fetch_assignment|submit|fetch_feedback)\b")
A = "01_floats"
COURSE_ID = "cs336-primitives"
# What the scratch course holds: what the manual's commands need, as tracked in the repository.
COURSE_FILES = ["Makefile", "pyproject.toml", "scripts/install_env.py", ".gitignore", "nbgrader_config.py",
                "nbgrader_config_exchange.py", "nbgrader_config_hub.py", f"source/{A}", f"release/{A}"]


def bash(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"in {cwd}:\n{script}\nexited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def addable(course: Path) -> set[str]:
    """What `git add --all` would add in the course (a git repository): every path git does not ignore."""
    done = subprocess.run(["git", "add", "--all", "--dry-run"], cwd=course, capture_output=True, text=True, check=True)
    return {line.split(" ", 1)[1].strip("'") for line in done.stdout.splitlines()}


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    if not (Path(sys.prefix) / "bin" / "activate").is_file():
        pytest.skip(f"the environment {sys.prefix} has no bin/activate (the manual's instructions assume a venv)")
    tmp = tmp_path_factory.mktemp("readme")
    course = tmp / "course"
    for name in COURSE_FILES:
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2  # copy2 keeps times: make sees no change
        copy(REPO / name, course / name)
    (course / ".venv").symlink_to(sys.prefix)  # the environment running the tests, as `make install` makes .venv
    stale = subprocess.run(["make", "-q", ".venv/.installed"], cwd=course, capture_output=True)
    if stale.returncode != 0:  # make would reinstall into the environment: not in a test
        pytest.fail("the environment is older than pyproject.toml: run `make install` first")
    subprocess.run(["git", "init", "-q"], cwd=course, check=True)
    tracked = addable(course)

    me = pwd.getpwuid(os.getuid()).pw_name  # nbgrader names a submission after the account that submits it
    (course / "students.csv").write_text(  # with the columns Canvas needs (docs/instructors.md: 8. Export)
        "id,first_name,last_name,email,lms_user_id,sis_user_id,sis_login_id,section\n"
        "alice,Alice,Smith,alice@example.org,1001,S-1001,alice,CS336-01\n"
        "bob,Bob,Jones,bob@example.org,1002,S-1002,bob,CS336-01\n"
        f"{me},Student,Account,{me}@example.org,1003,S-1003,{me},CS336-02\n")
    release = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4)
    with zipfile.ZipFile(course / "submissions.zip", "w") as canvas:  # bob's, downloaded twice by the browser
        canvas.writestr(f"jonesbob_LATE_1002_2002_{A} (1).ipynb", nbformat.writes(release))  # bob's Canvas id

    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith(("JUPYTER", "VIRTUAL_ENV", "COURSE_EXCHANGE", "NBGRADER", "PYTHONPATH"))}
    bin_dir = str(Path(sys.prefix) / "bin")
    inherited["PATH"] = os.pathsep.join(p for p in inherited.get("PATH", "").split(os.pathsep)
                                        if p and Path(p).resolve() != Path(bin_dir).resolve())
    instructor = {**inherited, "HOME": str(tmp / "home" / "instructor")}
    student_home = tmp / "home" / me
    student = {**inherited, "HOME": str(student_home),
               "PATH": os.pathsep.join([bin_dir, inherited["PATH"]])}  # the student's own environment with nbgrader
    for home in (Path(instructor["HOME"]), student_home):
        home.mkdir(parents=True)
    handed_out = course / "exchange" / COURSE_ID / "nbgrader_config_exchange.py"  # written by release_assignment

    # The hub's blocks (docs/hub.md) and the Slurm cluster's (docs/clusters.md) are run by tests of their own.
    blocks = bash_blocks(read(INSTRUCTORS))
    end_of_term = bash_blocks(section(INSTRUCTORS, END_OF_TERM))  # run last, by the last test of this file
    activate, steps = blocks[0], [block for block in blocks[1:] if block not in end_of_term]
    assert activate.strip().startswith("source .venv/bin/activate"), activate
    ran = []
    for block in steps:
        if STUDENT_COMMANDS.search(block):
            if not (student_home / handed_out.name).exists():  # the instructor hands out the release's file
                shutil.copy2(handed_out, student_home)
            ran.append(("student", block, bash(block, student_home, student)))
        else:
            ran.append(("instructor", block, bash(activate + block, course, instructor)))
    return dict(course=course, tracked=tracked, ran=ran, me=me, home=student_home, end_of_term=end_of_term,
                activate=activate, instructor=instructor, student=student)


def test_the_manual_prints_the_whole_cycle(cycle):
    kinds = [kind for kind, _, _ in cycle["ran"]]
    assert kinds == ["instructor", "student", "instructor", "instructor", "student"], kinds
    text = "\n".join(block for _, block, _ in cycle["ran"])
    for command in ("nbgrader db student import", "nbgrader db assignment add", "autograder.deadlines extend",
                    "nbgrader release_assignment", "nbgrader collect", "make lms-import", "make grade",
                    "nbgrader generate_feedback", "nbgrader release_feedback", "nbgrader export"):
        assert command in text, command
    assert "--config=" not in read(INSTRUCTORS)  # nbgrader 0.9.6 ignores it ("Unrecognized alias")


def test_the_commands_did_what_the_manual_says(cycle):
    course, me = cycle["course"], cycle["me"]
    assert (course / "exchange" / COURSE_ID / "outbound" / A / f"{A}.ipynb").is_file()  # the course's own exchange
    assert (course / "exchange" / COURSE_ID / "course.txt").read_text() == f"{course.resolve()}\n"  # this class's
    assert (course / "submitted" / me / A / "timestamp.txt").is_file()                  # collected from the exchange
    record = (course / "submitted" / "bob" / A / "lms_import.txt").read_text()          # from the Canvas download
    assert f"jonesbob_LATE_1002_2002_{A} (1).ipynb" in record and "Canvas marked it LATE" in record
    graded = (course / "graded" / "grades.csv").read_text()
    assert f"{me},{A},TOTAL" in graded and f"bob,{A},TOTAL" in graded
    exported = (course / "grades.csv").read_text()  # nbgrader export
    assert all(f",{student}," in exported for student in ("alice", "bob", me))  # a row each, alice's without work
    with open(course / "canvas-grades.csv", newline="") as f:  # autograder.canvas, for Canvas's gradebook import
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A} (4021)"], canvas[0]
    assert canvas[1][0] == "Points Possible" and {row[1] for row in canvas[2:]} == {"1001", "1002", "1003"}
    assert next(row for row in canvas if row[1] == "1001")[5] == "0"  # alice handed in nothing
    # released through the exchange and fetched where nbgrader puts it and the page says: feedback/<submission time>/
    submitted_at = (course / "submitted" / me / A / "timestamp.txt").read_text().strip()
    feedback = list((cycle["home"] / COURSE_ID / A / "feedback").rglob("*.html"))
    assert feedback == [cycle["home"] / COURSE_ID / A / "feedback" / submitted_at / f"{A}.html"], feedback
    assert f"# into {COURSE_ID}/{A}/feedback/<submission time>/" in read(INSTRUCTORS)
    assert f"`{COURSE_ID}/{A}/feedback/<submission time>/{A}.html`" in read("docs/students.md")
    shown = "\n".join(done.stdout for _, _, done in cycle["ran"])
    # the page's due date is two weeks from the day it runs (a fixed one passes, and then every submission is late)
    today = datetime.datetime.now(datetime.timezone.utc).date()
    due = [today + datetime.timedelta(days=14 + 2 - late) for late in (0, 1)]  # (the page ran before a midnight)
    assert any(f"alice 01_floats: extension 2 days, 0:00:00; due {day.isoformat()} 17:00:00 UTC" in shown
               for day in due), shown
    said = "\n".join(done.stdout + done.stderr for _, _, done in cycle["ran"])
    assert "WARNING: the due date" not in said and "WARNING: all" not in said  # a date to come: no warning


def test_no_student_data_is_left_for_git(cycle):
    """The roster, the Canvas download, the exchange, submissions, the gradebook, autograded notebooks, feedback
    and both grade exports exist now; `git add --all` would add none of them."""
    course = cycle["course"]
    for made in ("students.csv", "submissions.zip", "grades.csv", "canvas-grades.csv", "gradebook.db", "exchange", "submitted",
                 "autograded", "feedback", "graded"):
        assert (course / made).exists(), made
    assert addable(course) == cycle["tracked"], sorted(addable(course) - cycle["tracked"])


def test_every_command_of_the_manual_is_run_by_a_test_or_says_why_not():
    """Each ```bash block of README.md and docs/ lies in a section RUN_AS_PRINTED names, whose test reads that very
    section (its source names the page and the heading), or has `<!-- not run by the tests: why -->` above it."""
    unaccounted, sections = [], 0
    for page in pages():
        name = str(page.relative_to(REPO))
        run = {block for heading in RUN_AS_PRINTED.get(name, {})
               for block in bash_blocks(read(name) if heading is None else section(name, heading))}
        for number, above, body in fenced_bash(name):
            why = NOT_RUN.match(above)
            assert not (why and body in run), f"{name}:{number + 1} is run by a test, yet says it is not"
            if not why and body not in run:
                unaccounted.append(f"{name}:{number + 1}:\n{body}")
    assert not unaccounted, "bash blocks no test runs, without a line saying why:\n" + "\n".join(unaccounted)
    for name, runs in RUN_AS_PRINTED.items():
        for heading, runner in runs.items():
            blocks = bash_blocks(read(name) if heading is None else section(name, heading))
            assert blocks, f"{name} {heading}: no bash block to run"
            sections += 1
            source = (REPO / runner).read_text()
            if name == "README.md":  # make lab, run by tests/lab_server.py; make test, by CI
                commands = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
                assert commands == ["make lab", "make test"], commands
                assert '["make", "lab"' in source
                assert (REPO / ".ci" / "run").read_text().strip().splitlines()[-1] == "make test"
            else:
                assert name in source and (heading is None or f'"{heading}"' in source), (runner, name, heading)
    assert sections == 4


# Item 7 elsewhere: the names the manual gives student data, in the repository itself.
@pytest.mark.parametrize("path", ["students.csv", "grades.csv", "export.csv", "submissions.zip",
                                  "submissions (1).zip", "exchange/cs336-primitives/inbound/x", "gradebook.db",
                                  "roster/students-2026.csv", "graded/grades.csv", "submitted/a/b/c.ipynb",
                                  "out/shard-2/results/alice/01_floats.json", "grade-17_2.log",
                                  "gradebook-on-server"])
def test_the_repository_ignores_student_data(path, tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # the repository's .gitignore, wherever it runs
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    done = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=tmp_path)
    assert done.returncode == 0, f"{path} is not git-ignored"


# ---- The Canvas import and the deadlines tool (item 8), on tests/tiny_course.py's course -------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from nbgrader.api import Gradebook

    from autograder.course import Course
    root = tiny_course.make_course(tmp_path_factory.mktemp("edges") / "course")
    course = Course.load(root)
    with Gradebook(course.db_url, course.course_id) as gb:
        for sid, first, last in (("jsmith", "Jane", "Smith"), ("bob", "Bob", "Jones")):
            gb.update_or_create_student(sid, first_name=first, last_name=last, email=f"{sid}@example.org")
    return dict(root=root, course=course, notebook=tiny_course.source_notebook())


def run_main(main, argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """A module's main() in this process (no interpreter start): exit status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.argv = ["prog", *argv]
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    return status, out.getvalue(), err.getvalue()


def test_canvas_import_takes_browser_names_keeps_late_marks_and_fails_when_it_skipped(tiny, tmp_path):
    from autograder import lms_import
    A0 = tiny_course.ASSIGNMENT
    notebook = nbformat.writes(tiny["notebook"])
    download = tmp_path / "download"
    download.mkdir()
    files = {f"smithjane_LATE_12345_67890_{A0} (1).ipynb": notebook,   # browser's second download, Canvas LATE
             f"jonesbob_222_333_{A0}-1 (2).ipynb": notebook,           # a re-upload, downloaded three times
             f"mallory_1_2_{A0}.ipynb": notebook}                      # on no roster
    for name, text in files.items():
        (download / name).write_text(text)
    submitted = tmp_path / "submitted"
    args = [str(download), "--assignment", A0, "--course", str(tiny["root"]), "--submitted", str(submitted)]
    status, out, err = run_main(lms_import.main, args, tiny["root"])
    assert status == 1, (out, err)  # one file skipped: `make lms-import` fails, after importing the others
    assert "'mallory' matches no student on the roster" in out and "1 file(s) not imported" in err
    assert (submitted / "jsmith" / A0 / f"{A0}.ipynb").read_text() == notebook
    assert (submitted / "bob" / A0 / f"{A0}.ipynb").read_text() == notebook
    assert (submitted / "jsmith" / A0 / "lms_import.txt").read_text() == (
        f"{A0}.ipynb <- smithjane_LATE_12345_67890_{A0} (1).ipynb\nCanvas marked it LATE\n")
    assert "LATE" not in (submitted / "bob" / A0 / "lms_import.txt").read_text()
    assert "Canvas marked these LATE" in out and f"jsmith/{A0}" in out
    assert not (submitted / "jsmith" / A0 / "timestamp.txt").exists()

    (download / f"mallory_1_2_{A0}.ipynb").unlink()  # the instructor deals with it; the rest is already there
    status, out, err = run_main(lms_import.main, args, tiny["root"])
    assert status == 0 and "imported 0 file(s)" in out and out.count("already there, unchanged") == 2, (out, err)

    changed = notebook.replace("A tiny exercise", "A changed exercise")
    (download / f"jonesbob_222_333_{A0}-1 (2).ipynb").write_text(changed)
    status, out, err = run_main(lms_import.main, args, tiny["root"])  # a different file: never overwritten
    assert status == 1 and "NOT imported, a different file is already in submitted/" in out
    assert (submitted / "bob" / A0 / f"{A0}.ipynb").read_text() == notebook


def test_deadlines_refuse_a_negative_extension(tiny):
    from autograder import deadlines
    from autograder.gradebook import GradebookError
    A0 = tiny_course.ASSIGNMENT
    for argv in (["--days", "-1"], ["--hours", "2", "--minutes", "-30"], ["--days", "nan"]):
        status, out, err = run_main(deadlines.main, ["extend", A0, "jsmith", *argv, "--course", str(tiny["root"])],
                                    tiny["root"])
        assert status == 2 and "cannot be negative" in err, (argv, err)
    with pytest.raises(GradebookError, match="must be zero or more"):
        deadlines.extend(tiny["course"], A0, "jsmith", days=-2)
    status, out, err = run_main(deadlines.main, ["extend", A0, "jsmith", "--days", "1.5", "--course",
                                                 str(tiny["root"])], tiny["root"])
    assert status == 0 and "extension 1 day, 12:00:00" in out, (out, err)
    status, out, err = run_main(deadlines.main, ["show"], tiny["root"])  # as the manual prints it, in the course
    assert status == 0 and "jsmith: extension 1 day, 12:00:00" in out, (out, err)


def test_deadlines_usage_lines_parse_as_printed():
    """Each usage line of the module's docstring, with its placeholders filled in, is accepted by its parser."""
    from autograder import deadlines
    usage = [line.strip() for line in deadlines.__doc__.splitlines() if "python -m autograder.deadlines" in line]
    assert len(usage) == 2
    values = {"ASSIGNMENT": "01_floats", "STUDENT": "alice", "D": "2", "H": "3", "M": "30", "DIR": "/tmp/course"}
    for line in usage:
        words = line.split()[3:]
        filled = [values.get(w.strip("[]"), w.strip("[]")) for w in words]
        args = deadlines.parser().parse_args(filled)
        assert str(args.course) == "/tmp/course" and args.assignment == "01_floats", (line, args)
    assert deadlines.parser().parse_args(["show"]).course is None


def test_without_activating_the_environment_nbgrader_finds_its_alembic(monkeypatch):
    """`.venv/bin/nbgrader db ...` (or `.venv/bin/python -m nbgrader db ...`) from the course: nbgrader runs `alembic`
    by name when it makes a gradebook; the course's nbgrader_config.py puts the environment's bin/ first on PATH."""
    from traitlets.config.loader import PyFileConfigLoader
    environ = dict(os.environ, PATH="/usr/bin:/bin")
    monkeypatch.setattr(os, "environ", environ)
    PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    found = shutil.which("alembic", path=environ["PATH"])
    assert found and Path(found).parent == Path(sys.executable).parent


def test_the_hub_config_gives_the_course_the_shared_exchange(monkeypatch):
    """On the instructor's hub server nbgrader reads /etc/jupyter/nbgrader_config.py (nbgrader_config_hub.py) and
    then the course's nbgrader_config.py: the course keeps the hub's exchange, not its own exchange/. The students'
    template (nbgrader_config_exchange.py as the repository has it) names no exchange and refuses to be used."""
    from traitlets.config.loader import PyFileConfigLoader
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k != "COURSE_EXCHANGE"})
    alone = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    assert alone.Exchange.root == str(REPO / "exchange")
    merged = PyFileConfigLoader("nbgrader_config_hub.py", path=str(REPO)).load_config()
    merged.merge(PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config())
    assert merged.Exchange.root == "/srv/nbgrader/exchange" and merged.CourseDirectory.root == str(REPO)
    with pytest.raises(SystemExit, match="is the template of the students' file and names no exchange"):
        PyFileConfigLoader("nbgrader_config_exchange.py", path=str(REPO)).load_config()


# ---- The end of term, as printed: the last test of this file, since it ends the cycle's class ----------------------

def test_the_end_of_term_archives_the_class_clears_the_exchange_and_runs_again(cycle):
    """Issue #62 item 4: the page's end of term, run as printed after the whole cycle: the archive holds the gradebook
    with its ledger and export, the term's work and the class's exchange folder, every file readable; the exchange
    folder and the term's data are gone, `source/` and `release/` stay; the student who still has the class's file
    is named, and their `nbgrader` refuses, saying to remove it; run again, it has nothing to do."""
    course, me, home = cycle["course"], cycle["me"], cycle["home"]
    assert cycle["end_of_term"] and (home / ".jupyter" / "nbgrader_config.py").is_file()
    done = [bash(cycle["activate"] + block, course, cycle["instructor"]) for block in cycle["end_of_term"]]
    said = "\n".join(d.stdout + d.stderr for d in done)
    archives = list((Path(cycle["instructor"]["HOME"]) / "cs336-primitives-archive").glob(f"{COURSE_ID}-*.tar.gz"))
    assert len(archives) == 1 and archives[0].stat().st_mode & 0o777 == 0o600, (archives, said)
    import tarfile
    with tarfile.open(archives[0]) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    for name in ("gradebook.db", ".gradebook-ledger.json", "gradebook-export.csv", "students.csv", "submissions.zip",
                 f"submitted/{me}/{A}/{A}.ipynb", f"autograded/{me}/{A}/{A}.ipynb", "graded/grades.csv",
                 f"exchange/{COURSE_ID}/course.txt", f"exchange/{COURSE_ID}/nbgrader_config_exchange.py",
                 f"exchange/{COURSE_ID}/outbound/{A}/{A}.ipynb"):
        assert f"{COURSE_ID}/{name}" in names, (name, sorted(names))
    assert any(n.startswith(f"{COURSE_ID}/exchange/{COURSE_ID}/inbound/{me}+{A}+") for n in names), sorted(names)
    for gone in ("gradebook.db", ".gradebook-ledger.json", "submitted", "autograded", "feedback", "graded",
                 f"exchange/{COURSE_ID}", "students.csv"):
        assert not (course / gone).exists(), gone
    assert (course / "source" / A).is_dir() and (course / "release" / A).is_dir()
    assert f"Still pinned to this class (their ~/.jupyter/nbgrader_config.py names it): {me}" in said, said
    assert "rm ~/.jupyter/nbgrader_config.py" in said
    fetch = warm.run(["nbgrader", "fetch_assignment", A], cwd=home, env=cycle["student"], capture_output=True,
                           text=True, timeout=300)
    assert fetch.returncode != 0 and "remove this file, ~/.jupyter/nbgrader_config.py" in fetch.stdout + fetch.stderr
    again = [bash(cycle["activate"] + block, course, cycle["instructor"]) for block in cycle["end_of_term"]]
    assert "nothing to do" in "\n".join(d.stdout for d in again)
    assert len(list(archives[0].parent.glob("*.tar.gz"))) == 1  # no second archive
    assert addable(course) == cycle["tracked"]

