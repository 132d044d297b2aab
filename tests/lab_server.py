"""Start `make lab` (the README's command) on a free loopback port, for tests that talk to JupyterLab.

Used by tests/test_lab.py (the server answers, the kernel is listed) and tests/test_browser.py (a student's
session in headless Chromium).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from scripts import process_group
from scripts.class_hub import BROWSER_BLOCKED_PORTS

REPO = Path(__file__).resolve().parent.parent
TOKEN = "course-test-token"


def free_port() -> int:
    """A free loopback TCP port the kernel picks, one a browser will open."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in BROWSER_BLOCKED_PORTS:
            return port


def free_low_port(taken: set[int] = frozenset()) -> int:
    """A free loopback TCP port below 1024 (only root can bind one), not in `taken`: a random one of 600-999,
    where nothing of ours listens by default, leaving out those browsers refuse to open (601, 636, ...)."""
    import random
    for port in random.sample(range(600, 1000), 400):
        if port in taken or port in BROWSER_BLOCKED_PORTS:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise OSError("no free port in 600-999")


def get(url: str, timeout: float = 60) -> tuple[int, bytes]:
    """GET `url`: (HTTP status, body). The timeout is generous because `make test` runs this beside the notebooks
    on two loaded cores, where a first request that does real work (Formgrader making its gradebook) can take
    tens of seconds; a server that does not answer still fails the test."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read()


@dataclass
class Lab:
    process: subprocess.Popen
    base: str  # http://127.0.0.1:<port>
    log: Path  # what make and JupyterLab printed
    token: str = TOKEN

    def url(self, path: str) -> str:
        """`path` on this server, with the token (`path` starts with '/')."""
        return f"{self.base}{path}{'&' if '?' in path else '?'}token={self.token}"


def start_lab(scratch: Path, root: Path | None = None, extra_args: str = "", timeout: float = 120) -> Lab:
    """Run `make lab` in the repository with a token and a port of its own, and wait until it answers.

    Jupyter's runtime files and JupyterLab's workspaces and settings go under `scratch`, so a test neither reads
    nor changes the user's own (open tabs of a test must not reappear in the user's next `make lab`).
    `root` serves another folder than the repository (LAB_ROOT); `extra_args` go after the test's flags in LAB_ARGS.
    """
    port = free_port()
    args = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
            f"--IdentityProvider.token={TOKEN} {extra_args}").strip()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
           "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
           "JUPYTERLAB_SETTINGS_DIR": str(scratch / "settings")}
    scratch.mkdir(parents=True, exist_ok=True)
    log = scratch / "lab.log"  # a file, not a pipe: a pipe nobody reads would stop the server once it is full
    # VENV: the environment running these tests (.venv, or the one `make test-gpu VENV=... TORCH=system` named)
    command = ["make", "lab", f"LAB_ARGS={args}", f"VENV={sys.prefix}"] + ([f"LAB_ROOT={root}"] if root else [])
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True,
                                   stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, page = get(lab.url("/lab"), timeout=5)
            if status == 200 and b"JupyterLab" in page:
                return lab
        except OSError:
            pass
        if process.poll() is not None:
            raise AssertionError(f"make lab exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        if time.monotonic() > deadline:
            stop(process)
            raise AssertionError(f"JupyterLab did not answer within {timeout:.0f} s:\n{log.read_text(errors='replace')}")
        time.sleep(0.5)


def stop(server: subprocess.Popen) -> None:
    """Stop make and the JupyterLab it started (they share a process group)."""
    process_group.stop(server)
