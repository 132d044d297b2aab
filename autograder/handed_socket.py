"""The class hub's Formgrader listens on a socket root bound for it, and holds no privilege at all (issue #58).

Every listener of the hub is on a port below 1024, which only root may bind, so that no account can stand in for one
while the hub restarts. Formgrader runs as the grader account; it used to keep one capability for that (binding such a
port, ambient, so inherited by everything it started), and a process it started outlived the hub with it, took port
80 while the hub restarted and read a student's password from the login form. Now root binds Formgrader's port
(jupyterhub/formgrader_launch.py), hands the listening socket down as an inherited file descriptor named by
FORMGRADER_LISTEN_FD, and starts Formgrader as the grader with no capability in any set.

Written here, not configured: Jupyter Server can listen on a port or a unix socket it binds itself, but cannot take a
listening socket from its parent (there is no socket activation), and JupyterHub's services must be http(s) on TCP.
This server extension replaces the server's binding step (two methods of the ServerApp instance, before they run:
extensions load before the server binds) with `add_sockets` on the inherited socket; tests/test_class_hub.py checks
the running Formgrader's capabilities and listener.
"""
from __future__ import annotations

import os
import socket

ENVIRONMENT = "FORMGRADER_LISTEN_FD"


def inherited() -> socket.socket | None:
    """The listening socket root handed down, or None when this server was started another way."""
    fd = os.environ.get(ENVIRONMENT)
    if fd is None:
        return None
    listening = socket.socket(fileno=int(fd))
    if listening.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) != 1:
        raise RuntimeError(f"{ENVIRONMENT}={fd} is no listening socket")
    return listening


def _jupyter_server_extension_points():
    return [{"module": "autograder.handed_socket"}]


def _load_jupyter_server_extension(serverapp) -> None:
    listening = inherited()
    if listening is None:
        return
    host, port = listening.getsockname()[:2]

    def find_port() -> None:         # the port is the handed socket's: nothing to probe (the grader may bind none)
        serverapp.port = port

    def bind() -> bool:
        listening.setblocking(False)
        serverapp.http_server.add_sockets([listening])
        return True

    serverapp._find_http_port = find_port
    serverapp._bind_http_server_tcp = bind
    serverapp.log.info(f"Formgrader listens on {host}:{port}, bound by root and handed down "
                       "(autograder/handed_socket.py)")
