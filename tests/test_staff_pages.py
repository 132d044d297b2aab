"""Staff pages no student can script (issue #46), from the student's side and in a real browser.

A small class is graded by ours into a scratch course: mallory's submission carries every payload class of the
issue (tests/submissions.py `staff_page_payloads`: markdown script, event handlers, SVG, iframes, `javascript:`
links, objects, an SVG attachment, markup in file names), and her autograded notebook is then given the rich outputs
nbgrader's own Autograde would keep (HTML, JavaScript, SVG, markdown, a forged image, a widget, markup in tags and
in the notebook's widget state); eve handed in only a file whose name is markup; mallory's name in the gradebook is
markup. `make lab` serves the course, and headless Chromium opens, as the instructor would, each Formgrader page
that shows them. Each payload, if it ran, would set `window.__pwned` and fetch `/canary/<what>`.

The class hub's Formgrader runs the same extension (autograder/staff_pages.py); tests/test_class_hub.py checks the
hub's side (its read-only files, the grader's code out of every web session's reach).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import sys
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import nbformat
import pytest

from autograder import staff_pages
from tests import submissions, warm
from tests.lab_server import REPO, start_lab, stop
from tests.test_browser import CHROMIUM_ARGS, chromium_for_playwright

PWNED_NAME = '<img src=x onerror="window.__pwned=\'name\';fetch(\'/canary/name\')">'
EVE_FILE = '<img src=x onerror="window.__pwned=\'filename\'">.txt'


def rich_outputs() -> nbformat.NotebookNode:
    """A code cell with the outputs nbgrader's own Autograde keeps (ours keeps text only), and markup in its tags."""
    pwn = submissions._pwn
    cell = nbformat.v4.new_code_cell("print('rich')")
    cell.metadata["tags"] = [f'x"><img src=x onerror="{pwn("tag")}">']
    data = [
        {"text/html": f"<script>{pwn('out-html-script')}</script><img src=x onerror=\"{pwn('out-html-img')}\">"},
        {"application/javascript": pwn("out-js")},
        {"image/svg+xml": submissions._SVG.format(pwn("out-svg"))},
        {"text/markdown": f"<img src=x onerror=\"{pwn('out-md')}\">"},
        {"image/png": f'x" onerror="{pwn("out-png")}" x="'},
        {"application/vnd.jupyter.widget-view+json": {"model_id": f"</script><script>{pwn('out-widget')}</script>"}},
        {"text/latex": f"<img src=x onerror=\"{pwn('out-latex')}\">"},
    ]
    cell.outputs = [nbformat.v4.new_output("display_data", data={**d, "text/plain": "x"}) for d in data]
    return cell


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    for name in ("index.ipynb", "nbgrader_config.py"):
        shutil.copy2(REPO / name, course / name)
    for folder in ("release", "source"):
        shutil.copytree(REPO / folder, course / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    submissions.write_submission(course / "submitted", "mallory", "01_floats",
                                 submissions.staff_page_payloads("01_floats"))
    eve = course / "submitted" / "eve" / "01_floats"
    eve.mkdir(parents=True)
    (eve / EVE_FILE).write_text("no notebook here")
    (eve / "timestamp.txt").write_text("2026-01-05 12:00:00.000000 UTC")
    graded = warm.run([sys.executable, "-m", "autograder.grade", "--assignment", "01_floats", "--limit",
                             "cell_seconds=30"], cwd=course, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    autograded = course / "autograded" / "mallory" / "01_floats" / "01_floats.ipynb"
    nb = nbformat.read(autograded, as_version=4)
    nb.cells.append(rich_outputs())
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0,
        "x": f"</script><script>{submissions._pwn('nb-widgets')}</script>"}}
    nbformat.write(nb, autograded)
    for folder in FILE_FOLDERS:   # her files beside her notebook, wherever staff may open them (issue #58)
        (course / folder / "mallory" / "01_floats").mkdir(parents=True, exist_ok=True)
        for name, content in submissions.STAFF_PAGE_FILES.items():
            (course / folder / "mallory" / "01_floats" / name).write_bytes(content)
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_student("mallory", first_name="Mal", last_name=PWNED_NAME)
        ids = {student: gradebook.find_submission_notebook("01_floats", "01_floats", student).id
               for student in ("mallory", "eve")}
    return course, ids


@pytest.fixture(scope="module")
def served(hostile_class, tmp_path_factory):
    """`make lab` on the hostile class, for the module's browser tests; the course's files as they were before it."""
    course, ids = hostile_class
    before = digest(course)
    lab = start_lab(tmp_path_factory.mktemp("lab"), root=course)
    try:
        yield course, ids, lab, before
    finally:
        stop(lab.process)


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".nbgrader.log" not in p.name}


def test_no_student_markup_runs_in_formgrader(served):
    course, ids, lab, before = served
    executable = chromium_for_playwright()
    from playwright.sync_api import sync_playwright

    pages = [f"/formgrader/submissions/{ids['mallory']}/", f"/formgrader/submissions/{ids['eve']}/",
             "/formgrader/manage_students", "/formgrader/manage_students/mallory",
             "/formgrader/gradebook/01_floats/01_floats", "/formgrader/manage_submissions/01_floats"]
    requests: list[str] = []
    failed: dict[str, str] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.on("requestfailed", lambda request: failed.setdefault(request.url, request.failure or ""))
        for path in pages:
            response = page.goto(lab.url(path))
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(300)
            assert response.status == 200, path
            policy = response.headers.get("content-security-policy", "")
            assert "script-src 'nonce-" in policy and "unsafe-inline" not in policy.split("style-src")[0], \
                (path, policy)
            assert "'self'" not in script_src(policy), (path, policy)   # no script of hers from this origin
            assert page.evaluate("typeof window.__pwned") == "undefined", (path, page.evaluate("window.__pwned"))
            assert page.locator("a[href^='javascript:' i], iframe[src^='javascript:' i], [onerror], [onload]"
                                ).count() == 0, path
            if "submissions/" in path:   # the page really shows the student's work, as text
                assert ("window.__pwned='md-script'" in page.inner_text("body")
                        if path.endswith(f"{ids['mallory']}/") else "onerror" in page.inner_text("body")), path
            if path.endswith("manage_students"):
                page.wait_for_selector("text=onerror", timeout=30_000)   # her name, shown as text
        browser.close()
    origin = lab.url("/").split("/", 3)[:3]
    assert [url for url in requests if "/canary/" in url] == []
    # nothing leaves the page: a request to another origin (nbconvert's MathJax from a CDN) is refused by the policy
    # before it is sent (this machine has no network, so a request that was sent would fail otherwise)
    elsewhere = [url for url in requests if url.split("/", 3)[:3] != origin and not url.startswith("data:")]
    assert {url: failed.get(url) for url in elsewhere} == {url: "csp" for url in elsewhere}
    after = digest(course)
    assert {k: v for k, v in after.items() if k != "gradebook.db"} == \
           {k: v for k, v in before.items() if k != "gradebook.db"}
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = [g.score for g in gradebook.find_submission_notebook("01_floats", "01_floats", "mallory").grades]
    assert sum(scores) == 0   # what the grader gave her: nothing on the page changed it


FILE_FOLDERS = ("submitted", "autograded", "feedback")
ACTIVE_TYPES = ("text/html", "image/svg+xml", "application/xml", "text/xml", "application/xhtml+xml",
                "application/pdf", "text/javascript", "application/javascript", "application/octet-stream")


def script_src(policy: str) -> str:
    """The script-src directive of the first policy of a Content-Security-Policy header."""
    return next((d.strip() for d in policy.split(",")[0].split(";") if d.strip().startswith("script-src")), "")


class Watched:
    """A Chromium page whose every request (and why it failed) is kept, that opens a URL whether it renders or
    downloads."""

    def __init__(self, browser):
        self.context = browser.new_context(accept_downloads=True)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.failed: dict[str, str] = {}
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.context.on("requestfailed", lambda request: self.failed.setdefault(request.url, request.failure or ""))

    def open(self, url: str):
        """The response, or None when the browser saved it as a download instead of rendering it."""
        try:
            response = self.page.goto(url)
        except Exception as error:   # Playwright: "Download is starting"
            assert "Download is starting" in str(error), (url, error)
            return None
        self.page.wait_for_load_state("networkidle")
        self.page.wait_for_timeout(200)
        return response

    def ran(self) -> list[str]:
        """Canaries a payload fetched, and a payload's mark on the page now open."""
        marked = self.page.evaluate("typeof window.__pwned === 'undefined' ? null : String(window.__pwned)")
        return canaries(self.requests) + ([f"__pwned={marked}"] if marked else [])


def canaries(requests: list[str]) -> list[str]:
    """The requests a payload made: to /canary/<what> (a page's own API call may carry the words in its query)."""
    return [url for url in requests if urllib.parse.urlsplit(url).path.startswith("/canary/")]


def test_her_files_stay_inert_on_the_staff_origin(served):
    """Issue #58: the files mallory handed in beside her notebook (HTML loading her .js, SVG, XML, XHTML, PDF, HTML
    named .png, .txt or without an extension), wherever staff may meet them: opened straight from /files/ in
    submitted/, autograded/ and feedback/, from Formgrader's grading page (its links to them, and the files it serves
    beside the notebook), from nbconvert's export, from Jupyter's /view/, and in JupyterLab's HTML viewer with its
    "Trust HTML" pressed. None runs: an active type is sandboxed without scripts and saved as a download, never
    rendered; a harmless type is shown as what its name says (nosniff); her .js is no script source."""
    course, ids, lab, before = served
    executable = chromium_for_playwright()
    from playwright.sync_api import sync_playwright

    folder = "mallory/01_floats"
    urls = [f"/files/{where}/{folder}/{name}" for where in FILE_FOLDERS for name in submissions.STAFF_PAGE_FILES]
    urls += [f"/formgrader/submissions/{ids['mallory']}/{name}" for name in submissions.STAFF_PAGE_FILES]
    urls += [f"/nbconvert/html/submitted/{folder}/01_floats.ipynb", f"/view/submitted/{folder}/evil.html",
             f"/view/submitted/{folder}/evil.svg"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        staff = Watched(browser)
        for url in urls:
            response = staff.open(lab.url(url))
            assert staff.ran() == [], url
            if response is None:
                continue
            kind = response.headers.get("content-type", "").split(";")[0]
            policy = response.headers["content-security-policy"]
            assert "'self'" not in script_src(policy) and response.headers["x-content-type-options"] == "nosniff", url
            if url.startswith(("/files/", "/nbconvert/")) or "/formgrader/submissions/" in url:
                assert kind not in ACTIVE_TYPES and "; sandbox" in policy.split(",")[0], (url, kind, policy)
        # her links, clicked on Formgrader's grading page of her notebook
        staff.open(lab.url(f"/formgrader/submissions/{ids['mallory']}/"))
        links = [name for name in submissions.STAFF_PAGE_FILES if name != "evil.js"]
        for name in links:
            link = staff.page.locator(f"a[href$='{name}']").first
            with staff.page.context.expect_page(timeout=5000) if link.get_attribute("target") else _nothing():
                try:
                    link.click(timeout=5000)
                except Exception:
                    pass
            staff.page.wait_for_timeout(300)
            assert staff.ran() == [], name
            staff.open(lab.url(f"/formgrader/submissions/{ids['mallory']}/"))
        # JupyterLab's HTML viewer, trusted: her page runs in the lab's own policy, where her script has no source
        staff.open(lab.url(f"/lab/tree/submitted/{folder}/evil.html"))
        staff.page.get_by_text("Trust HTML").first.click(timeout=120_000)
        staff.page.wait_for_timeout(1500)
        assert staff.ran() == []
        browser.close()
    assert canaries(staff.requests) == []
    assert not [url for url, why in staff.failed.items() if url.endswith("/evil.js") and why != "csp"]


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# a value nbgrader's templates put into their own <script> from the URL: ends the string, runs, fetches a canary
REFLECTED = "x\";window.__pwned='url';fetch('/canary/url');//"


def test_a_crafted_formgrader_link_adds_no_code(served):
    """Issue #58: nbgrader's page templates write names from the URL into their own nonced <script>
    (`var notebook_id = "{{ notebook_id }}";`); a link crafted to end that string and add code runs nothing."""
    course, ids, lab, before = served
    executable = chromium_for_playwright()
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    crafted = quote(REFLECTED, safe="")
    pages = [f"/formgrader/gradebook/01_floats/{crafted}", f"/formgrader/gradebook/{crafted}",
             f"/formgrader/manage_submissions/{crafted}", f"/formgrader/manage_students/{crafted}",
             f"/formgrader/manage_students/{crafted}/{crafted}"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        staff = Watched(browser)
        for path in pages:
            staff.open(lab.url(path))
            assert staff.ran() == [], path
        browser.close()


def test_feedback_carries_none_of_the_markup(hostile_class):
    """`nbgrader generate_feedback` (the course's nbgrader_config.py) writes mallory's feedback with her markup as
    text: no script but the template's own, no event handler, no `javascript:` link."""
    course, _ = hostile_class
    done = warm.run([sys.executable, "-m", "nbgrader", "generate_feedback", "01_floats", "--student", "mallory",
                           "--force"], cwd=course, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (course / "feedback" / "mallory" / "01_floats" / "01_floats.html").read_text()
    assert "window.__pwned=&#39;md-script&#39;" in page or "window.__pwned='md-script'" in page   # shown, as text
    found = Markup()
    found.feed(page)
    assert found.scripts and not [body for body in found.scripts if "__pwned" in body]
    assert found.live == []


class Markup(HTMLParser):
    """What a browser would act on: script bodies, and attributes that run code (event handlers, javascript: URLs)."""

    def __init__(self):
        super().__init__()
        self.scripts: list[str] = []
        self.live: list[tuple[str, str, str]] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")
        self.live += [(tag, name, value or "") for name, value in attrs
                      if name.startswith("on") or (value or "").strip().lower().startswith("javascript:")
                      or (tag == "meta" and name == "http-equiv")]   # a refresh navigates: no policy stops it

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    def handle_endtag(self, tag):
        self._in_script = False


def test_the_placeholder_goes_only_into_the_templates_own_scripts():
    loader = staff_pages.NoncedScripts(jinja2.DictLoader({"page": "<script>var a = 1;</script>{{ body }}"}))
    html = jinja2.Environment(loader=loader).get_template("page").render(body="<script>evil()</script>")
    assert html == f'<script nonce="{staff_pages.PLACEHOLDER}">var a = 1;</script><script>evil()</script>'


def test_every_response_gets_a_fresh_nonce_and_fails_closed_before_hardening(monkeypatch):
    page = f'<script nonce="{staff_pages.PLACEHOLDER}">x</script>'.encode()

    def respond(hardened: bool):
        monkeypatch.setitem(staff_pages._state, "hardened", hardened)
        transform = staff_pages.StrictPolicy(request=None)
        headers = {"Content-Type": "text/html; charset=UTF-8", "Content-Length": str(len(page))}
        return transform.transform_first_chunk(200, headers, page, True)

    (status, headers, body), (_, _, second) = respond(True), respond(True)
    nonce = body.split(b'nonce="')[1].split(b'"')[0].decode()
    assert status == 200 and len(body) == len(page) and staff_pages.PLACEHOLDER.encode() not in body
    assert f"'nonce-{nonce}'" in headers["Content-Security-Policy"] and second != body
    status, headers, body = respond(False)
    assert (status, body) == (503, b"")


def test_the_hubs_formgrader_files_are_read_only(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    contents = staff_pages.ReadOnlyContents(root_dir=str(tmp_path))
    model = asyncio.run(contents.get("nbgrader_config.py"))
    assert "get_config" in model["content"]   # staff read the course
    from tornado.web import HTTPError
    attempts = [contents.save({"type": "file", "format": "text", "content": "import os"}, "nbgrader_config.py"),
                contents.save({"type": "file", "format": "text", "content": "x"}, "json.py"),
                contents.rename("nbgrader_config.py", "old.py"), contents.delete("nbgrader_config.py"),
                contents.new_untitled(type="file"), contents.copy("nbgrader_config.py", "")]
    for attempt in attempts:
        with pytest.raises(HTTPError) as refused:
            asyncio.run(attempt)
        assert refused.value.status_code == 403
    with pytest.raises(HTTPError):
        contents.trust_notebook("nbgrader_config.py")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nbgrader_config.py"]
    assert (tmp_path / "nbgrader_config.py").read_text() == "c = get_config()\n"


def test_names_from_the_url_stay_text_in_formgrader_templates(monkeypatch):
    """Layer 2 on its own (issue #58): nbgrader's page templates, hardened as on a staff server, write a name from the
    URL into their own nonced <script> as a JSON string that reads back exactly, and into the page as text. (The
    policy cannot help here: the script is the template's own and carries the nonce.)"""
    from nbgrader.server_extensions.formgrader import handlers
    monkeypatch.setitem(staff_pages._state, "hardened", False)
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(handlers.template_path))
    staff_pages.harden({"nbgrader_jinja2_env": environment})
    names = {"assignment_id": REFLECTED, "notebook_id": REFLECTED, "student_id": REFLECTED}
    pages = ["gradebook_notebook_submissions.tpl", "manage_students_notebook_submissions.tpl",
             "manage_students_assignments.tpl", "manage_submissions.tpl", "gradebook_notebooks.tpl"]
    for template in pages:
        page = environment.get_template(template).render(base_url="/", **names)
        written = re.findall(r"var (assignment_id|notebook_id|student_id) = (.*);\n", page)
        assert written, template
        for name, value in written:
            assert json.loads(value) == REFLECTED, (template, name, value)
        assert "<i>mallory</i>" not in environment.get_template(template).render(
            base_url="/", student_id="<i>mallory</i>", assignment_id="<i>mallory</i>")


def test_a_student_file_is_sent_inert_and_no_script_of_hers_has_a_source():
    """Layer 3 on its own (issue #58): the response of a route that serves a student's file is sandboxed without
    scripts (Jupyter Server's own `sandbox allow-scripts` made stricter, never dropped) and, unless its type cannot be
    active, an attachment; every response's scripts come only from the nonce and the server's own code paths, on the
    origin the browser asked for; a forged Host header gets no script source at all."""
    from tornado.httputil import HTTPHeaders, HTTPServerRequest

    from autograder import routes
    staff_pages._state["script_prefixes"] = ("/static/", "/lab/extensions/")
    inert = routes.Found("/files/(.*)$", "jupyter_server.base.handlers.AuthenticatedFileHandler", routes.INERT, True)
    page = routes.Found("/lab$", "x.LabHandler", routes.SERVE, True)

    def respond(route, kind, host="127.0.0.1:8888", theirs=""):
        request = HTTPServerRequest(method="GET", uri="/x", headers=HTTPHeaders({"Host": "127.0.0.1"}))
        request.host, request.staff_route = host, route   # tornado refuses some bad Hosts itself; not every one
        headers = HTTPHeaders({"Content-Type": kind, **({"Content-Security-Policy": theirs} if theirs else {})})
        return staff_pages.StrictPolicy(request).transform_first_chunk(200, headers, b"x", True)[1]

    for kind in ("text/html", "image/svg+xml", "application/pdf", "text/xml", "application/octet-stream"):
        headers = respond(inert, kind, theirs="frame-ancestors 'self'; sandbox allow-scripts")
        assert headers["Content-Disposition"] == "attachment", kind
        policy = headers["Content-Security-Policy"]
        assert policy.endswith("; sandbox") and "allow-scripts" not in policy, policy
    assert "Content-Disposition" not in respond(inert, "image/png") and "sandbox" in \
        respond(inert, "image/png")["Content-Security-Policy"]
    lab = respond(page, "text/html; charset=UTF-8")
    assert "Content-Disposition" not in lab and "sandbox" not in lab["Content-Security-Policy"]
    sources = script_src(lab["Content-Security-Policy"]).split()
    assert "'self'" not in sources and {"127.0.0.1:8888/static/", "127.0.0.1:8888/lab/extensions/"} <= set(sources)
    forged = script_src(respond(page, "text/html", host="x; script-src *")["Content-Security-Policy"])
    assert "*" not in forged and "/static/" not in forged
    assert "sandbox" in respond(page, "text/html", theirs="sandbox allow-scripts")["Content-Security-Policy"]


def test_the_sanitising_exporter_renders_her_markup_as_text_whatever_the_configuration():
    """The exporter behind Formgrader's pages and the feedback, on one small notebook in this process (the hostile
    class's pages: the tests above): a script in a markdown cell and in an HTML output is not live, an event handler
    is dropped, and a configuration that turns sanitising off changes nothing."""
    from traitlets.config import Config
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Mine\n<script>window.__pwned='md'</script><img src=x onerror=boom()>"),
                nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
                    "display_data", {"text/html": "<b onclick=boom()>bold</b><script>window.__pwned='out'</script>"})])]
    for config in (None, Config({"HTMLExporter": {"sanitize_html": False}})):
        exporter = staff_pages.SanitisingExporter(config=config) if config else staff_pages.SanitisingExporter()
        assert exporter.sanitize_html
        page, _ = exporter.from_notebook_node(nb)
        found = Markup()
        found.feed(page)
        assert not [body for body in found.scripts if "__pwned" in body], config
        assert not [live for live in found.live if "boom" in live[2]], config
        assert "Mine" in page and "bold" in page


def test_the_extension_puts_the_policy_first_and_routes_through_its_decisions(monkeypatch):
    """Loading the extension (as Jupyter Server does) makes StrictPolicy the first transform of every response, before
    compression, and routing go through the hardening step; the served tests above see its effect in Chromium."""
    import logging

    import tornado.web
    from traitlets.config import Config
    monkeypatch.setattr(staff_pages, "_state", dict(staff_pages._state))
    app = tornado.web.Application([], compress_response=True)
    routed = app.find_handler

    class Server:
        web_app, config, log = app, Config(), logging.getLogger("staff-pages-test")

    staff_pages._load_jupyter_server_extension(Server())
    assert app.transforms == [staff_pages.StrictPolicy, tornado.web.GZipContentEncoding]
    assert app.find_handler is not routed and staff_pages._state["settings"] is app.settings


def test_the_first_request_hardens_the_templates_and_enforces_every_route(monkeypatch, tmp_path):
    """`ready`, run at the first request: nbgrader's Jinja environment autoescapes and nonces, and the server's
    routes (here a tornado app with one unknown route) are classified and enforced, the inventory written."""
    import logging

    import tornado.web
    from nbgrader.server_extensions.formgrader import handlers

    from autograder import routes
    monkeypatch.setattr(staff_pages, "_state", dict(staff_pages._state, hardened=False))
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(handlers.template_path))

    class Unknown(tornado.web.RequestHandler):
        pass

    app = tornado.web.Application([(r"/unknown", Unknown)], nbgrader_jinja2_env=environment)

    class Server:
        web_app, base_url, runtime_dir, log = app, "/", str(tmp_path), logging.getLogger("staff-pages-test")

    found = staff_pages.ready(Server(), routes.Server.LAB)
    assert staff_pages._state["hardened"] and environment.autoescape is True
    assert isinstance(environment.loader, staff_pages.NoncedScripts)
    assert any(not one.classified for one in found)


# ---- fast, in this process: each layer's behaviour at its edges (issue #63: bench/mutants.py runs these) ----------

def test_every_write_of_the_hubs_formgrader_contents_is_refused_and_changes_nothing(tmp_path):
    """Each of the contents manager's writes (files and checkpoints, and trusting a notebook), called as Jupyter
    Server's handlers call them, answers 403 and leaves the course and its checkpoints as they were."""
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from tornado.web import HTTPError
    (tmp_path / "grade.py").write_text("POINTS = 1\n")
    checkpoint = asyncio.run(AsyncLargeFileManager(root_dir=str(tmp_path)).create_checkpoint("grade.py"))
    (tmp_path / "grade.py").write_text("POINTS = 2\n")
    before = digest(tmp_path)
    contents = staff_pages.ReadOnlyContents(root_dir=str(tmp_path))
    model = {"type": "file", "format": "text", "content": "POINTS = 99\n"}
    writes = {
        "save": lambda: contents.save(model, "grade.py"),
        "delete_file": lambda: contents.delete_file("grade.py"),
        "rename_file": lambda: contents.rename_file("grade.py", "moved.py"),
        "new": lambda: contents.new(model, "planted.py"),
        "new_untitled": lambda: contents.new_untitled(type="file"),
        "copy": lambda: contents.copy("grade.py", ""),
        "create_checkpoint": lambda: contents.create_checkpoint("grade.py"),
        "restore_checkpoint": lambda: contents.restore_checkpoint(checkpoint["id"], "grade.py"),
        "delete_checkpoint": lambda: contents.delete_checkpoint(checkpoint["id"], "grade.py"),
    }
    for name, write in writes.items():
        with pytest.raises(HTTPError) as refused:
            asyncio.run(write())
        assert refused.value.status_code == 403 and "read-only" in refused.value.log_message, name
    with pytest.raises(HTTPError) as refused:
        contents.trust_notebook("grade.py")
    assert refused.value.status_code == 403
    assert digest(tmp_path) == before and (tmp_path / "grade.py").read_text() == "POINTS = 2\n"


def test_a_template_scripts_quoted_values_become_json_and_its_tag_keeps_its_attributes():
    loader = staff_pages.NoncedScripts(jinja2.DictLoader({"page": (
        '<p>{{ name }}</p><SCRIPT type="text/javascript">var a = "{{ name }}"; var b = \'{{ other }}\';</SCRIPT>')}))
    assert loader.list_templates() == ["page"]
    name = 'x";alert(1);//</script>\n\\'
    html = jinja2.Environment(loader=loader, autoescape=True).get_template("page").render(name=name, other="o'k")
    head, script = html.split(f'<script nonce="{staff_pages.PLACEHOLDER}" type="text/javascript">')
    assert head == "<p>x&#34;;alert(1);//&lt;/script&gt;\n\\</p>"
    body, end = script.split("</SCRIPT>")
    assert end == "" and "</script>" not in body.lower()
    a, b = re.fullmatch(r"var a = (.*); var b = (.*);", body).groups()
    assert (json.loads(a), json.loads(b)) == (name, "o'k")


def test_the_exporter_escapes_the_names_it_is_given():
    """nbgrader passes the submission's names to the template as resources: escaped (layer 1), other values kept."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("<script>window.__pwned='att'</script>![x](attachment:missing.png)")]
    page, resources = staff_pages.SanitisingExporter().from_notebook_node(
        nb, {"student_id": "<b onclick=boom()>mallory</b>", "index": 3})
    assert resources["student_id"] == "&lt;b onclick=boom()&gt;mallory&lt;/b&gt;" and resources["index"] == 3
    assert "&lt;script&gt;window.__pwned=" in page
    found = Markup()
    found.feed(page)
    assert not [body for body in found.scripts if "__pwned" in body]


def test_the_policy_allows_nbgraders_own_inline_handlers_by_hash_and_nothing_else_inline():
    import base64
    handlers = staff_pages.template_handlers()
    assert "toggle_name(true);" in handlers and all(len(code) > 2 for code in handlers), handlers
    digest_of = "'sha256-{}'".format(base64.b64encode(hashlib.sha256(b"toggle_name(true);").digest()).decode())
    sources = script_src(staff_pages.policy("n0nce")).split()
    assert digest_of in sources and "'nonce-n0nce'" in sources and "'unsafe-inline'" not in sources


def transformed(kind: str, body: bytes = b"x", route=None, hardened: bool = True, **headers: str):
    """StrictPolicy's first chunk of one response (status, headers, body) to a request for `route` (None: no route
    marked, as for tornado's own error pages)."""
    from tornado.httputil import HTTPHeaders, HTTPServerRequest
    request = HTTPServerRequest(method="GET", uri="/x", headers=HTTPHeaders({"Host": "127.0.0.1:8888"}))
    if route is not None:
        request.staff_route = route
    previous = staff_pages._state["hardened"]
    staff_pages._state["hardened"] = hardened
    try:
        return staff_pages.StrictPolicy(request).transform_first_chunk(
            200, HTTPHeaders({"Content-Type": kind, "Content-Length": str(len(body)), **headers}), body, True)
    finally:
        staff_pages._state["hardened"] = previous


def test_fail_closed_holds_back_pages_only_and_says_so_with_503():
    status, headers, body = transformed("text/html; charset=UTF-8", b"<p>page</p>", hardened=False)
    assert (status, headers["Content-Length"], body) == (503, "0", b"")
    status, headers, body = transformed("application/json", b'{"ok": 1}', hardened=False)   # an API call, no page
    assert (status, headers["Content-Length"], body) == (200, "9", b'{"ok": 1}')
    assert "script-src 'nonce-" in headers["Content-Security-Policy"]


def test_a_student_file_keeps_its_name_as_an_attachment_and_a_harmless_type_with_parameters_shows_inline():
    from autograder import routes
    inert = routes.Found("/files/(.*)$", "jupyter_server.base.handlers.AuthenticatedFileHandler", routes.INERT, True)
    _, headers, _ = transformed("text/html", route=inert, **{"Content-Disposition": 'inline; filename="evil.html"'})
    assert headers["Content-Disposition"] == 'attachment; filename="evil.html"'
    _, headers, _ = transformed("text/plain; charset=UTF-8", route=inert)
    assert "Content-Disposition" not in headers and headers["Content-Security-Policy"].endswith("; sandbox")
    _, headers, _ = transformed("text/html")   # no route marked: a page of the server's own, not sandboxed
    assert "Content-Disposition" not in headers and "sandbox" not in headers["Content-Security-Policy"]


def test_an_off_site_script_of_a_template_loses_the_nonce_and_the_page_keeps_its_length():
    placeholder = staff_pages.PLACEHOLDER
    page = (f'<script nonce="{placeholder}" src="https://cdn.example.org/mathjax.js"></script>'
            f'<script nonce="{placeholder}" src="/static/app.js"></script><p>{placeholder[:5]}</p>').encode()
    status, headers, body = transformed("text/html", page)
    nonce = re.search(r"'nonce-([^']+)'", headers["Content-Security-Policy"]).group(1)
    assert status == 200 and len(body) == len(page) and placeholder.encode() not in body
    off_site, own = body.split(b"</script>")[:2]
    assert off_site.startswith(b"<script ") and b"nonce" not in off_site and b'src="https://cdn.example.org' in off_site
    assert own == f'<script nonce="{nonce}" src="/static/app.js">'.encode()


def test_hardening_wraps_every_template_environment_and_replaces_nbgraders_exporter(monkeypatch):
    from nbconvert.exporters import HTMLExporter
    from traitlets.config import Config
    monkeypatch.setattr(staff_pages, "_state", dict(staff_pages._state, hardened=False))
    pages = jinja2.Environment(loader=jinja2.DictLoader({"p": "<script>x</script>"}))
    bare = jinja2.Environment()
    config = Config({"HTMLExporter": {"exclude_input_prompt": True}})
    settings = {"lab_jinja2_env": pages, "bare_jinja2_env": bare, "odd_jinja2_env": "not an environment",
                "nbgrader_exporter": HTMLExporter(config=config)}
    staff_pages.harden(settings)
    assert isinstance(pages.loader, staff_pages.NoncedScripts) and bare.loader is None and staff_pages._state["hardened"]
    assert pages.get_template("p").render() == f'<script nonce="{staff_pages.PLACEHOLDER}">x</script>'
    exporter = settings["nbgrader_exporter"]
    assert isinstance(exporter, staff_pages.StaffExporter) and exporter.exclude_input_prompt and exporter.sanitize_html
    assert settings["odd_jinja2_env"] == "not an environment" and "nbgrader_jinja2_env" not in settings


def test_the_first_request_routes_through_ready_and_logs_each_unclassified_route(monkeypatch, tmp_path, caplog):
    """The extension loaded as Jupyter Server loads it: the first request hardens and enforces (once), its route is
    marked on the request for StrictPolicy, and the log names the extension, each unclassified route (refused) and
    the inventory."""
    import logging

    import tornado.web
    from tornado.httputil import HTTPHeaders, HTTPServerRequest
    from traitlets.config import Config

    from autograder import routes
    monkeypatch.setattr(staff_pages, "_state", dict(staff_pages._state, hardened=False))

    class Unknown(tornado.web.RequestHandler):
        pass

    from jupyter_server.base.handlers import FileFindHandler
    app = tornado.web.Application([(r"/unknown", Unknown), (r"/static/(.*)", FileFindHandler, {"path": [str(tmp_path)]})])

    class Server:
        web_app, config, base_url, runtime_dir = app, Config(), "/", str(tmp_path)
        log = logging.getLogger("staff-pages-test")

    calls = []
    real_ready = staff_pages.ready
    monkeypatch.setattr(staff_pages, "ready", lambda *args: calls.append(args) or real_ready(*args))
    with caplog.at_level(logging.INFO, logger="staff-pages-test"):
        staff_pages._load_jupyter_server_extension(Server())
        assert not staff_pages._state["hardened"] and calls == []
        for _ in range(2):
            request = HTTPServerRequest(method="GET", uri="/unknown", headers=HTTPHeaders({"Host": "127.0.0.1"}))
            app.find_handler(request)
    assert len(calls) == 1 and staff_pages._state["hardened"]
    assert request.staff_route.pattern.startswith("/unknown") and request.staff_route.decision is routes.Decision.OFF
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "/unknown" in errors[0] and "refused" in errors[0], errors
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert said[0].startswith("staff pages (lab): sanitised submissions"), said
    assert "routes of this lab server classified and enforced" in said[-1] and str(tmp_path) in said[-1], said
