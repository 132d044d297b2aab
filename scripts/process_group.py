"""Stopping a server started in a process group of its own (`start_new_session=True`): JupyterHub with its proxy
and services, `make lab` with its JupyterLab. One place for the tests, the benches and scripts/class_hub.py."""
from __future__ import annotations

import os
import signal
import subprocess


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
