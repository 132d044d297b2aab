"""Stopping a server: one started in a process group of its own (`start_new_session=True`: JupyterHub with its
services, `make lab` with its JupyterLab), or one known only by its pid file (JupyterHub's proxy, which runs in a
session of its own). One place for the tests, the benches and scripts/class_hub.py."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def stop(process: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM to the whole group, as systemd stops a service; SIGKILL if it is not gone after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def stop_pid_file(pid_file: Path, command_has: str) -> None:
    """Stop the process whose pid `pid_file` holds, if it still runs and its command line has `command_has` (a pid
    that now belongs to something else is left alone): SIGTERM, then SIGKILL after 5 s."""
    try:
        pid = int(pid_file.read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return   # no pid file, or the process is gone
    if command_has.encode() not in command:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                return
            time.sleep(0.1)
