"""`make test`'s report of what it cost (scripts/test_times.py) counts each test file's CPU where it was spent
(tests/cpu_cost.py): in the test's own process and in the processes it started and waited for."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scripts import test_times

REPO = Path(__file__).resolve().parent.parent
BURN = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"


def test_each_file_is_charged_its_own_cpu_and_its_childrens(tmp_path):
    """One file burns a second of CPU in a child process, another half a second in the test itself, a third sleeps:
    the report charges each its own, not its wall time."""
    (tmp_path / "test_child.py").write_text(
        "import subprocess, sys\n"
        f"def test_child():\n    subprocess.run([sys.executable, '-c', {BURN.format(seconds=1.0)!r}], check=True)\n")
    (tmp_path / "test_self.py").write_text(
        f"def test_self():\n    exec({BURN.format(seconds=0.5)!r})\n")
    (tmp_path / "test_sleep.py").write_text("import time\ndef test_sleep():\n    time.sleep(1.0)\n")
    timings = tmp_path / "timings"
    subprocess.run([sys.executable, "scripts/test_times.py", "--start", str(timings)], cwd=REPO, check=True)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.cpu_cost",
                          "--cpu-log", str(timings / "units"), "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    by_file = test_times.cpu_by_file(timings)
    assert all(name.startswith("units: ") for name in by_file), by_file
    costs = {name.split(": ", 1)[1].rsplit("/", 1)[-1]: seconds for name, seconds in by_file.items()}
    assert set(costs) == {"test_child.py", "test_self.py", "test_sleep.py"}, costs
    assert 1.0 <= costs["test_child.py"] < 3.0, costs  # the child's second (and its interpreter's start)
    assert 0.5 <= costs["test_self.py"] < 1.5, costs
    assert costs["test_sleep.py"] < 0.5, costs          # a second of wall time, almost no CPU
    report = subprocess.run([sys.executable, "scripts/test_times.py", str(timings)], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout
    assert "the ten test files that cost the most CPU" in report and "test_child.py" in report, report
    assert "the machine was busy" in report and "counted by test file" in report, report


def test_without_proc_stat_the_report_leaves_out_the_machine_line(tmp_path, monkeypatch, capsys):
    """On a machine without /proc/stat (macOS) `make test` still starts and reports, without the machine's CPU."""

    def no_proc():
        raise FileNotFoundError("/proc/stat")
    monkeypatch.setattr(test_times, "busy_seconds", no_proc)
    test_times.start(tmp_path)
    test_times.report(tmp_path)
    printed = capsys.readouterr().out
    assert "make test took" in printed and "the machine was busy" not in printed, printed
