"""Where the gradebook is (issue #33): nbgrader_config.py takes the URL from GRADEBOOK_URL, and where the course says its
gradebook is on a server (GRADEBOOK_ON_SERVER = True), a command run without the variable stops and says what to
set: never an empty local gradebook.db, an empty grades.csv and exit status 0."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from autograder.course import Course
from tests import warm

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def course(root: Path, on_server: bool, by_file: bool = False) -> Path:
    """A course whose gradebook is on a server when `on_server`: by the switch in its nbgrader_config.py, or, with
    `by_file`, by the empty file `gradebook-on-server` beside it (docs/clusters.md: git never sees that switch)."""
    shutil.copytree(REPO / "source" / "01_floats", root / "source" / "01_floats")
    (root / "submitted").mkdir()
    text = (REPO / "nbgrader_config.py").read_text()
    assert "GRADEBOOK_ON_SERVER = False\n" in text
    if by_file:
        (root / "nbgrader_config.py").write_text(text)
        if on_server:
            (root / "gradebook-on-server").touch()
    else:
        (root / "nbgrader_config.py").write_text(text.replace("GRADEBOOK_ON_SERVER = False",
                                                              f"GRADEBOOK_ON_SERVER = {on_server}"))
    return root


def environment(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GRADEBOOK_URL"}
    return {**env, "PATH": f"{BIN}{os.pathsep}{env['PATH']}", "PYTHONPATH": str(REPO), **extra}


@pytest.mark.parametrize("command", [
    ["nbgrader", "export"],
    ["python", "-m", "autograder.grade", "--out", "graded"],
    ["python", "-m", "autograder.report", "--out", "graded"],
])
@pytest.mark.parametrize("by_file", [False, True], ids=["switch", "file"])
def test_a_command_without_the_url_stops_and_says_what_to_set(tmp_path, command, by_file):
    root = course(tmp_path, on_server=True, by_file=by_file)
    done = warm.run([str(BIN / command[0]), *command[1:]], cwd=root, env=environment(), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode != 0, done.stdout + done.stderr
    switch = f"the file {root / 'gradebook-on-server'} is there" if by_file else "GRADEBOOK_ON_SERVER = True"
    assert switch in done.stderr and "the environment variable GRADEBOOK_URL is not set" in \
        done.stderr and "export GRADEBOOK_URL='postgresql+psycopg://" in done.stderr, done.stderr
    if command[0] == "python" and "autograder.grade" in command:
        assert done.returncode == 2  # the grader's "could not start"
    assert not (root / "gradebook.db").exists() and not (root / "grades.csv").exists()
    assert not (root / "graded").exists()


def test_the_url_comes_from_the_environment_and_the_default_stays_local(tmp_path, monkeypatch):
    root = course(tmp_path, on_server=False)
    monkeypatch.delenv("GRADEBOOK_URL", raising=False)
    assert Course.load(root).db_url == f"sqlite:///{root / 'gradebook.db'}"
    monkeypatch.setenv("GRADEBOOK_URL", "postgresql+psycopg://grader:secret@db.example.org/cs336")
    assert Course.load(root).db_url == "postgresql+psycopg://grader:secret@db.example.org/cs336"
