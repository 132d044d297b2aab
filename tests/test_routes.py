"""The staff servers' route table (autograder/routes.py, issue #58): reviewed rows, enforced on the live handler table.

The live tables themselves are read where the servers run as users get them: tests/test_lab.py (`make lab`) and
tests/test_class_hub.py (the hub's Formgrader service) assert that every route they found is in the table.
"""
from __future__ import annotations

import asyncio
import re
import socket

from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from tornado.httpserver import HTTPServer
from tornado.web import Application, RequestHandler

from autograder import routes

# Handlers that run code as the server's account (a kernel, a shell, a language server, nbgrader's Validator) or
# start a process: none may be on for a student's file on any staff server, and none at all on Formgrader.
RUNS_CODE = {"MainKernelHandler", "KernelWebsocketHandler", "KernelActionHandler", "SessionRootHandler",
             "TermSocket", "TerminalRootHandler", "LanguageServerWebSocketHandler", "ValidateAssignmentHandler",
             "ExtensionHandler", "TrustNotebooksHandler", "ConsoleHandler"}
# Handlers whose reads report and whose writes run something: read-only at most, everywhere
WRITES_RUN = {"BuildHandler"}


def test_the_table_is_one_row_per_route_and_every_decision_is_safe():
    keys = [(row[0], row[1]) for row in routes._TABLE]
    assert len(keys) == len(set(keys)), "a route is classified twice"
    for route in routes.ROUTES.values():
        re.compile(route.pattern)
        for server in routes.Server:
            decision = route.decision(server)
            # code comes only from the servers' own installed files; a student's file is never code
            assert not (route.student_bytes and decision is routes.CODE), route
            if route.handler.rsplit(".", 1)[1] in WRITES_RUN:
                assert decision in (routes.READ_ONLY, routes.OFF), (server, route)
            if route.handler.rsplit(".", 1)[1] in RUNS_CODE:
                assert decision is routes.OFF if server is routes.Server.FORMGRADER else \
                    decision in (routes.SERVE, routes.OWN_WORK, routes.OFF), (server, route)
        # every route that serves a student's file as it is (not JSON, not a page of the server's own template) is
        # inert on both servers
        if route.handler.endswith(("AuthenticatedFileHandler", "SubmissionFilesHandler", "NbconvertFileHandler")):
            assert {route.lab, route.formgrader} <= {routes.INERT, routes.OFF}, route


def test_student_work_is_named_by_its_folder_however_the_path_is_written():
    for path in ("submitted/a/b.ipynb", "/submitted/a", "./autograded/x/y", "feedback", "exchange/c/inbound/x",
                 "graded\\x", "out/results/a"):
        assert routes.names_student_work(path), path
    for path in ("source/01/01.ipynb", "release/x", "notebooks/submitted.ipynb", "", "mine/submitted/x"):
        assert not routes.names_student_work(path), path


class Hello(RequestHandler):
    def get(self, *args):
        self.write("hello")

    def put(self, *args):
        self.write("written")


def _serve(app: Application, requests: list[tuple[str, str]]) -> list[int]:
    """Status codes of `requests` (method, path) against `app` on a loopback port."""
    async def run() -> list[int]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = HTTPServer(app)
        server.listen(port, "127.0.0.1")
        client, codes = AsyncHTTPClient(), []
        for method, path in requests:
            try:
                answer = await client.fetch(f"http://127.0.0.1:{port}{path}", method=method,
                                            body=b"{}" if method in ("PUT", "POST") else None)
                codes.append(answer.code)
            except HTTPClientError as error:
                codes.append(error.code)
        server.stop()
        return codes
    return asyncio.run(run())


def test_a_route_nobody_classified_is_refused_and_named():
    """An extension that adds a route after the review (here: /brand-new) gets 403 until a person classifies it; a
    read-only route keeps its reads and loses its writes; the rest answer as before."""
    settings = type("SettingsHandler", (Hello,), {"__module__": "jupyterlab_server.settings_handler"})
    status = type("APIStatusHandler", (Hello,), {"__module__": "jupyter_server.services.api.handlers"})
    app = Application([(r"/brand-new$", Hello), (r"/lab/api/settings/?$", settings), (r"/api/status$", status)])
    found = routes.enforce(app, routes.Server.FORMGRADER, "/")
    assert [(one.pattern, one.classified, one.decision) for one in found] == [
        ("/brand-new$", False, routes.OFF), ("/lab/api/settings/?$", True, routes.READ_ONLY),
        ("/api/status$", True, routes.SERVE)]
    assert _serve(app, [("GET", "/brand-new"), ("PUT", "/lab/api/settings"), ("GET", "/lab/api/settings"),
                        ("GET", "/api/status"), ("PUT", "/api/status")]) == [403, 403, 200, 200, 200]


def test_code_comes_only_from_the_servers_own_paths():
    found = [routes.Found(r"/static/(.*)$", "x", routes.CODE, True), routes.Found(r"/files/(.*)$", "x", routes.INERT, True),
             routes.Found(r"/lab/extensions/(.*)$", "x", routes.CODE, True)]
    assert routes.script_sources(found, "/services/cs336-primitives/") == [
        "/services/cs336-primitives/lab/extensions/", "/services/cs336-primitives/static/"]


def test_the_docs_show_the_table_as_it_is():
    """docs/security.md holds the table exactly as `python -m autograder.routes` prints it."""
    from tests.lab_server import REPO
    docs = (REPO / "docs" / "security.md").read_text()
    assert routes.markdown() in docs, "docs/security.md: paste `python -m autograder.routes` between its markers"


def test_a_pattern_is_read_after_the_base_url_however_it_is_written():
    base = "/services/cs336-primitives/"
    for pattern in ("/services/cs336-primitives/static/(.*)$", "/services/cs336\\-primitives/static/(.*)$"):
        assert routes._relative(pattern, base) == "/static/(.*)$"
    assert routes._relative("(.*)$", base) == "(.*)$"
