"""The README's main command serves JupyterLab on the course, with the course kernel available."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOKEN = "course-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status, response.read()


def test_make_lab_serves_lab_and_lists_the_course_kernel(tmp_path):
    port = free_port()
    args = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
            f"--IdentityProvider.token={TOKEN}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    server = subprocess.Popen(["make", "lab", f"LAB_ARGS={args}"], cwd=REPO, env=env, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                status, page = get(f"{base}/lab?token={TOKEN}")
                break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode()
                assert time.monotonic() < deadline, "JupyterLab did not answer within 120 s"
                time.sleep(0.5)
        assert status == 200 and b"JupyterLab" in page
        status, body = get(f"{base}/api/kernelspecs?token={TOKEN}")
        kernels = json.loads(body)["kernelspecs"]
        assert "cs336-primitives" in kernels
        assert kernels["cs336-primitives"]["spec"]["display_name"] == "Python (cs336 primitives)"
        status, body = get(f"{base}/api/contents/notebooks?token={TOKEN}")
        assert "01_floats.ipynb" in {item["name"] for item in json.loads(body)["content"]}
    finally:
        stop(server)


def stop(server: subprocess.Popen) -> None:
    """Stop make and the JupyterLab it started (they share a process group)."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)
            server.wait(timeout=wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
