"""autograder/exchange/students_env.py: can every student's account run the course's nbgrader? On stand-in
environments (a shell script as the interpreter, in a folder every account may enter), so each answer takes
milliseconds: a missing nbgrader, an interpreter that cannot import it, a file closed to others, and, as root, what
`nobody` gets when it runs it. tests/test_exchange_class.py checks a real environment against a real student."""
from __future__ import annotations

import os
import runpy
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.exchange import closed_to_others, main, students_nbgrader

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="runs the script as `nobody`: needs root")

# Stands in for an environment's python: as `-c "import nbgrader..."` it prints where its nbgrader is (or, with a
# file `import.fails` beside it, says that file and exits 3); as a script's interpreter it runs the script's
# `--version`, failing as any account but root when `nobody.fails` is beside it.
INTERPRETER = """#!/bin/sh
here=$(dirname "$0")
if [ "$1" = "-c" ]; then
  if [ -f "$here/import.fails" ]; then cat "$here/import.fails" >&2; exit 3; fi
  echo "$here/../lib/nbgrader/__init__.py"; exit 0
fi
if [ "$(id -u)" != 0 ] && [ -f "$here/nobody.fails" ]; then cat "$here/nobody.fails" >&2; exit 1; fi
echo 0.9.5
"""


@pytest.fixture
def shared():
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="students-env-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


def environment(root: Path, python: str = "python3.12", shebang: bool = True) -> Path:
    """A stand-in environment at root/env: bin/nbgrader run by bin/`python`, lib/nbgrader/__init__.py; all open."""
    env = root / "env"
    (env / "bin").mkdir(parents=True)
    (env / "lib" / "nbgrader").mkdir(parents=True)
    (env / "lib" / "nbgrader" / "__init__.py").write_text("")
    (env / "bin" / python).write_text(INTERPRETER)
    (env / "bin" / "nbgrader").write_text(f"#!{env / 'bin' / python}\nimport sys\n" if shebang
                                           else "true\n")   # no interpreter line: a launcher any shell runs
    for path in (env, env / "bin", env / "lib", env / "lib" / "nbgrader"):
        os.chmod(path, 0o755)
    for path, mode in ((env / "bin" / python, 0o755), (env / "bin" / "nbgrader", 0o755),
                       (env / "lib" / "nbgrader" / "__init__.py", 0o644)):
        os.chmod(path, mode)
    return env


def test_an_environment_every_account_can_run_has_no_obstacle(shared, capsys):
    env = environment(shared)
    assert students_nbgrader(env) == []
    assert main(["check-students-env", str(env)]) == 0
    assert capsys.readouterr().out == f"every account can run {env / 'bin' / 'nbgrader'}\n"


def test_a_script_without_its_own_interpreter_line_is_run_by_the_environments_python(shared):
    env = environment(shared, python="python", shebang=False)
    assert students_nbgrader(env) == []
    (env / "bin" / "python").chmod(0o700)      # the interpreter it falls back on, closed to others
    assert students_nbgrader(env) == [f"{env / 'bin' / 'python'} (mode -rwx------) is closed to other accounts"]


def test_a_folder_without_nbgrader_is_no_environment(shared, capsys, monkeypatch):
    script = shared / "bin" / "nbgrader"
    assert students_nbgrader(shared) == [f"{script} does not exist: {shared} is not an environment with nbgrader"]
    assert main(["check-students-env", str(shared)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"error: students cannot use {script}:\n  {script} does not exist") and "--prefix" in out
    monkeypatch.setattr(sys, "argv", ["python -m autograder.exchange", "check-students-env", str(shared)])
    with pytest.raises(SystemExit) as exited:   # `python -m autograder.exchange check-students-env ENV`
        runpy.run_module("autograder.exchange", run_name="__main__")
    assert exited.value.code == 1


@pytest.mark.parametrize("says, why", [("ModuleNotFoundError: No module named 'nbgrader'\n",
                                        "ModuleNotFoundError: No module named 'nbgrader'"),
                                       ("", "exit status 3")])
def test_an_interpreter_that_cannot_import_nbgrader_says_its_last_word(shared, says, why):
    env = environment(shared)
    (env / "bin" / "import.fails").write_text(f"Traceback (most recent call last):\n  ...\n{says}" if says else "")
    python = env / "bin" / "python3.12"
    assert students_nbgrader(env) == [f"{python} (the interpreter of {env / 'bin' / 'nbgrader'}) cannot import "
                                      f"nbgrader: {why}"]


def test_a_file_closed_to_others_is_named_and_nothing_is_run_as_nobody(shared):
    env = environment(shared)
    (env / "lib" / "nbgrader" / "__init__.py").chmod(0o600)
    (env / "bin" / "nobody.fails").write_text("would fail\n")
    assert students_nbgrader(env) == [
        f"{env / 'lib' / 'nbgrader' / '__init__.py'} (mode -rw-------) is closed to other accounts"]


@needs_root
@pytest.mark.parametrize("says, why", [("nbgrader: Permission denied\n", "nbgrader: Permission denied"),
                                       ("", "exit status 1")])
def test_as_root_nobody_runs_the_script_and_its_failure_is_told(shared, says, why):
    env = environment(shared)
    (env / "bin" / "nobody.fails").write_text(says)
    assert students_nbgrader(env) == [f"`runuser -u nobody -- {env / 'bin' / 'nbgrader'} --version` failed: {why}"]


def test_links_are_followed_to_their_target_and_a_loop_ends(shared):
    (shared / "a").symlink_to(shared / "b")
    (shared / "b").symlink_to(shared / "a")
    assert closed_to_others(shared / "a") == []
    (shared / "closed").mkdir(mode=0o700)
    os.chmod(shared / "closed", 0o700)
    (shared / "closed" / "x").write_text("x")
    (shared / "to-closed").symlink_to(shared / "closed" / "x")
    assert closed_to_others(shared / "to-closed") == [
        f"{shared / 'closed'} (mode drwx------) does not let other accounts in"]
