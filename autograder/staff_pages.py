"""Formgrader's pages, safe for the instructor and TAs to open on a hostile submission (issue #46).

Formgrader renders a student's autograded notebook into the staff member's own page (nbconvert's HTMLExporter with
nbgrader's `formgrade` template), in the server that holds the gradebook and the course. nbconvert sanitises
nothing by default, nbgrader's template never sanitises markdown cells, nbgrader's own page templates are rendered
without autoescape, and neither sends a Content-Security-Policy: a `<script>` in a student's markdown cell ran with
the TA's session. This Jupyter server extension, enabled in `make lab` (the Makefile's `lab`) and in the class hub's
Formgrader service (scripts/class_hub.py), adds three independent layers:

1. **Sanitised content.** Formgrader's exporter becomes `StaffExporter`: nbconvert's `sanitize_html` on (its bleach
   cleaner on HTML and markdown outputs; JavaScript and widget outputs are dropped), every markdown cell's HTML
   through the same cleaner, and the names and ids nbgrader passes to the template escaped.
2. **Escaped pages.** nbgrader's own page templates (the gradebook, the student lists) render with Jinja's
   autoescape, so a student id or name with markup is shown as text.
3. **A strict Content-Security-Policy on every response** (`policy`): a script runs only when it comes from this
   server or carries this response's nonce. The nonce is written into the `<script>` tags of the templates' own
   source as each template loads (`NoncedScripts`), never into what a template renders, so nothing a student wrote
   can carry it; inline event handlers, `javascript:` URLs, plugins, and requests, frames or forms to any other
   origin are refused by the browser even if something slipped past the first two layers.

Written here, not configured: nbgrader builds its exporter and Jinja environment in code (no setting reaches the
formgrade template's markdown cells or the environment's autoescape), and neither Jupyter server nor nbgrader has a
per-response nonce. tests/test_staff_pages.py opens a submission carrying each payload class in Chromium.
"""
from __future__ import annotations

import base64
import hashlib
import re
import secrets
from pathlib import Path

import jinja2
import markupsafe
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from nbconvert.exporters import HTMLExporter
from nbconvert.filters import clean_html
from nbconvert.filters.markdown_mistune import InvalidNotebook
from tornado.web import HTTPError, OutputTransform

# Stands in the templates' sources for the per-response nonce; random per process, so a student cannot write it.
# Same length as a nonce, so a response's Content-Length stays right when one replaces it.
PLACEHOLDER = secrets.token_urlsafe(16)
TEMPLATE_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)
# A template's own script that loads from another site (nbconvert's MathJax from a CDN, its URL a template variable):
# with the nonce it would run whatever that site serves, so it loses the nonce and the policy refuses it.
OFF_SITE = re.compile(rb'<script nonce="' + PLACEHOLDER.encode() + rb'"(?=[^>]*\bsrc=["\']?(?:https?:)?//)')
_state: dict = {"hardened": False}   # and "settings": the server's, once this extension has loaded


def template_handlers() -> list[str]:
    """The code of every inline event handler in nbgrader's own page templates (the add-assignment and add-student
    links, the show/hide-names eyes), read from the installed templates: the policy allows exactly these, by hash.
    The same code written by a student would do no more than nbgrader's link does."""
    from nbgrader.server_extensions.formgrader import handlers
    attribute = re.compile(r"""\bon[a-z]+=(["'])(.*?)\1""", re.IGNORECASE)
    return sorted({match.group(2) for path in Path(handlers.template_path).rglob("*") if path.is_file()
                   for match in attribute.finditer(path.read_text())})


HANDLER_HASHES = " ".join("'sha256-{}'".format(base64.b64encode(hashlib.sha256(code.encode()).digest()).decode())
                          for code in template_handlers())


def policy(nonce: str) -> str:
    """The Content-Security-Policy of every response of a staff server (header value)."""
    return "; ".join([
        "default-src 'self'",
        # JupyterLab compiles its settings' JSON schemas with `new Function` (ajv): eval, not inline script
        f"script-src 'self' 'nonce-{nonce}' 'unsafe-eval' 'unsafe-hashes' {HANDLER_HASHES}",
        "style-src 'self' 'unsafe-inline'",      # JupyterLab and nbconvert style elements inline; no script
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",                # Formgrader's tab is a frame of this same server
    ])


class NoncedScripts(jinja2.BaseLoader):
    """A Jinja loader that gives every `<script` tag in a template's own source the nonce placeholder."""

    def __init__(self, inner: jinja2.BaseLoader):
        self.inner = inner

    def get_source(self, environment, template):
        source, filename, uptodate = self.inner.get_source(environment, template)
        return TEMPLATE_SCRIPT.sub(f'<script nonce="{PLACEHOLDER}"', source), filename, uptodate

    def list_templates(self):
        return self.inner.list_templates()


class SanitisingExporter(HTMLExporter):
    """nbconvert's HTML exporter with a student's content sanitised (layer 1): Formgrader's pages, and the feedback
    `nbgrader generate_feedback` writes (the course's nbgrader_config.py: `GenerateFeedback.exporter_class`)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sanitize_html = True     # forced: a course's configuration cannot turn it off for staff pages

    @jinja2.pass_context
    def markdown2html(self, context, source: str) -> str:
        """nbconvert's markdown rendering, then its bleach cleaner (nbgrader's template applies none). A cell that
        nbconvert cannot render (an image of a missing attachment raises) is shown as its text, not a page error."""
        try:
            return clean_html(super().markdown2html(context, source))
        except InvalidNotebook as error:
            return f"<pre>{markupsafe.escape(source)}</pre><p><em>{markupsafe.escape(error)}</em></p>"

    def from_notebook_node(self, nb, resources=None, **kw):
        resources = {key: markupsafe.escape(value) if isinstance(value, str) else value
                     for key, value in (resources or {}).items()}
        return super().from_notebook_node(nb, resources, **kw)


class StaffExporter(SanitisingExporter):
    """Formgrader's exporter: sanitised content, and the nonce placeholder in its templates' own scripts."""

    def _create_environment(self):
        environment = super()._create_environment()
        environment.loader = NoncedScripts(environment.loader)
        return environment


class StrictPolicy(OutputTransform):
    """Sets the policy with a fresh nonce on every response and swaps the placeholder for it (layer 3). Should the
    server's templates not be hardened it answers every page with 503: fail closed, never a page without them."""

    def __init__(self, request):
        super().__init__(request)
        if not _state["hardened"] and "settings" in _state:
            harden(_state["settings"])   # at the first request: every extension has loaded by then

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        self.nonce = secrets.token_urlsafe(16).encode()
        headers["Content-Security-Policy"] = policy(self.nonce.decode())
        headers["X-Content-Type-Options"] = "nosniff"
        if not _state["hardened"] and "html" in headers.get("Content-Type", ""):
            headers["Content-Length"] = "0"
            return 503, headers, b""
        return status_code, headers, self.transform_chunk(chunk, finishing)

    def transform_chunk(self, chunk, finishing):
        if PLACEHOLDER.encode() not in chunk:
            return chunk
        # the off-site script loses its attribute: pad the tag so that the page keeps its Content-Length
        chunk = OFF_SITE.sub(lambda m: b"<script" + b" " * (len(m.group(0)) - len(b"<script")), chunk)
        return chunk.replace(PLACEHOLDER.encode(), self.nonce)


def harden(settings: dict) -> None:
    """Layers 1 and 2, and the nonce in every template environment of the server: run at the first request, once
    every extension has set up its own (nbgrader's exporter and Jinja environment are made when its extension
    loads, after this one)."""
    for key, value in list(settings.items()):
        if key.endswith("jinja2_env") and isinstance(value, jinja2.Environment) and value.loader is not None:
            value.loader = NoncedScripts(value.loader)
    if "nbgrader_jinja2_env" in settings:
        settings["nbgrader_jinja2_env"].autoescape = True
    if "nbgrader_exporter" in settings:
        settings["nbgrader_exporter"] = StaffExporter(config=settings["nbgrader_exporter"].config)
    _state["hardened"] = True


class ReadOnlyContents(AsyncLargeFileManager):
    """The class hub's Formgrader serves the grader account's course read-only: staff read it (the solutions and
    references included, to grade), and write grades and comments only through Formgrader's grading API, never a
    file. So no web session, the instructor's included, can change the code, configuration or references that
    grade (`autograder/`, `utils/`, `reference/`, `nbgrader_config.py`, ...), nor plant a module on the grader's
    Python path. nbgrader's own steps (release, collect, autograde, feedback) write through nbgrader, not this."""

    def _refuse(self, *args, **kwargs):
        raise HTTPError(403, "Formgrader's files are read-only: grades and comments go through Formgrader")

    async def save(self, model, path=""):
        self._refuse()

    async def delete_file(self, path):
        self._refuse()

    async def rename_file(self, old_path, new_path):
        self._refuse()

    async def new(self, model=None, path=""):
        self._refuse()

    async def new_untitled(self, path="", type="", ext=""):
        self._refuse()

    async def copy(self, from_path, to_path=None):
        self._refuse()

    def trust_notebook(self, path):   # a trusted notebook's scripts would run in the staff member's JupyterLab
        self._refuse()

    async def create_checkpoint(self, path):
        self._refuse()

    async def restore_checkpoint(self, checkpoint_id, path):
        self._refuse()

    async def delete_checkpoint(self, checkpoint_id, path):
        self._refuse()


def _jupyter_server_extension_points():
    return [{"module": "autograder.staff_pages"}]


def _load_jupyter_server_extension(serverapp):
    web_app = serverapp.web_app
    web_app.transforms.insert(0, StrictPolicy)     # before compression, so it sees the page itself
    _state["settings"] = web_app.settings
    serverapp.log.info("staff pages: sanitised submissions, escaped templates, a strict CSP (autograder/staff_pages.py)")
