"""tests/warm.py: a command forked warm answers exactly what the same command run by `subprocess.run` answers."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests import warm

BIN = warm.BIN
# A module of "another checkout" (a package named autograder in the command's own folder, first on its path as for
# `python -m`): what it saw, said and how it ended.
PROBE = """
import atexit, json, os, sys, threading, time
atexit.register(lambda: print("atexit ran", flush=True))
late = threading.Thread(target=lambda: (time.sleep(0.3), print("thread joined", flush=True)))
late.start()
print(json.dumps({"argv": sys.argv[1:], "main": sys.argv[0], "cwd": os.getcwd(), "path0": sys.path[0],
                  "mine": os.environ.get("MINE"), "umask": oct(os.umask(0o22)), "stdin": sys.stdin.read(),
                  "name": __name__}))
print("to stderr", file=sys.stderr)
how = sys.argv[1]
if how == "raise":
    raise ValueError("a problem")
if how == "interrupt":
    raise KeyboardInterrupt
sys.exit(int(how))
"""


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "autograder").mkdir()
    (tmp_path / "autograder" / "__init__.py").write_text("")
    (tmp_path / "autograder" / "probe.py").write_text(PROBE)
    return tmp_path


@pytest.mark.parametrize("how", ["0", "3", "raise", "interrupt"])
def test_a_module_run_warm_answers_as_a_subprocess_does(probe, how):
    command = [sys.executable, "-m", "autograder.probe", how]
    env = {**os.environ, "MINE": "yes"}
    old = os.umask(0o027)
    try:
        plain = subprocess.run(command, cwd=probe, env=env, input="given", capture_output=True, text=True, timeout=60)
        forked = warm.run(command, cwd=probe, env=env, input="given", capture_output=True, text=True, timeout=60)
    finally:
        os.umask(old)
    assert warm.target(command, env) == ("module", "autograder.probe")
    assert (forked.returncode, forked.stdout) == (plain.returncode, plain.stdout), (forked, plain)
    assert forked.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1], (forked.stderr, plain.stderr)
    assert '"mine": "yes"' in plain.stdout and '"umask": "0o27"' in plain.stdout and "atexit ran" in plain.stdout
    assert "thread joined" in plain.stdout and '"stdin": "given"' in plain.stdout


def test_nbgrader_run_warm_answers_as_its_command_does(tmp_path):
    command = [str(BIN / "nbgrader"), "list"]   # no course here: a warning and an error, exit status 1
    plain = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    counted = warm.forked_cpu_seconds()
    forked = warm.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert warm.target(command, None) == ("nbgrader", "")
    assert warm.forked_cpu_seconds() > counted, "its CPU counts for the test file that ran it (tests/cpu_cost.py)"
    assert (forked.returncode, forked.stdout, forked.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_a_command_past_its_time_is_killed_and_raises_as_subprocess_does(probe):
    (probe / "autograder" / "slow.py").write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as raised:
        warm.run([sys.executable, "-m", "autograder.slow"], cwd=probe, capture_output=True, timeout=3)
    assert time.monotonic() - started < 30
    pid = int(raised.value.stdout)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_anything_else_runs_as_a_plain_subprocess():
    for command, env in [([sys.executable, "-c", "pass"], None), (["runuser", "-u", "nobody", "--", "nbgrader"], None),
                         (["python3", "-m", "autograder.grade"], {"PATH": "/usr/bin"}), (["git", "status"], None),
                         ([sys.executable, "-I", "-m", "autograder.grade"], None)]:
        assert warm.target(command, env) is None, command
