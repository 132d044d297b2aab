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
   A value a template writes inside its own `<script>` (nbgrader's `var notebook_id = "{{ notebook_id }}";`, taken
   from the URL) is written as a JSON string (`NoncedScripts`), so no URL can end the string and add code.
3. **A strict Content-Security-Policy on every response** (`policy`): a script runs only when it carries this
   response's nonce or comes from a path of the server's own installed code (autograder/routes.py's CODE routes:
   `/static/`, `/lab/extensions/`, Formgrader's static folders), never from anywhere else on the origin, so a
   student's own `.js` beside her notebook is refused wherever it is linked from. The nonce is written into the
   `<script>` tags of the templates' own source as each template loads (`NoncedScripts`), never into what a template
   renders, so nothing a student wrote can carry it; inline event handlers, `javascript:` URLs, plugins, and
   requests, frames or forms to any other origin are refused by the browser even if something slipped past the
   first two layers. A response that serves a student's file (routes.Decision.INERT: `/files/`, Formgrader's
   submission files, nbconvert) is sandboxed without scripts and sent as an attachment unless its type cannot be
   active; Jupyter Server's own `sandbox` is kept (made stricter, never dropped).

Every route the server answers is classified in autograder/routes.py, which this extension enforces: a route switched
off on this server (Validate, kernels and terminals on the hub's Formgrader, ...), read-only, refused for student
work, or never classified is refused.

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
from traitlets import Enum
from traitlets.config import Configurable

from autograder import routes

# Stands in the templates' sources for the per-response nonce; random per process, so a student cannot write it.
# Same length as a nonce, so a response's Content-Length stays right when one replaces it.
PLACEHOLDER = secrets.token_urlsafe(16)
TEMPLATE_SCRIPT = re.compile(r"<script\b", re.IGNORECASE)
SCRIPT_BLOCK = re.compile(r"(<script\b[^>]*>)(.*?)(</script>)", re.IGNORECASE | re.DOTALL)
AS_JSON = r"{{ (\2)|default('')|string|tojson }}"   # what the value printed before, as a JSON string
QUOTED_VALUE = re.compile(r"""(["'])\{\{-?\s*(.+?)\s*-?\}\}\1""")
# A template's own script that loads from another site (nbconvert's MathJax from a CDN, its URL a template variable):
# with the nonce it would run whatever that site serves, so it loses the nonce and the policy refuses it.
OFF_SITE = re.compile(rb'<script nonce="' + PLACEHOLDER.encode() + rb'"(?=[^>]*\bsrc=["\']?(?:https?:)?//)')
_state: dict = {"hardened": False}   # and "settings", "script_prefixes": the server's, once this extension has loaded


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


def policy(nonce: str, script_sources: tuple[str, ...] = (), sandbox: bool = False) -> str:
    """The Content-Security-Policy of every response of a staff server (header value). `script_sources`: where the
    server's own code is (host and path, from routes.script_sources); `sandbox`: the response serves a student's
    file (or Jupyter Server sandboxed it): no script, no form, an origin of its own."""
    directives = [
        "default-src 'self'",
        # JupyterLab compiles its settings' JSON schemas with `new Function` (ajv): eval, not inline script. No
        # 'self': a student's own .js, served by /files/ on this origin, must never load
        f"script-src 'nonce-{nonce}' 'unsafe-eval' 'unsafe-hashes' {HANDLER_HASHES} {' '.join(script_sources)}".strip(),
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
    ]
    return "; ".join(directives + (["sandbox"] if sandbox else []))


# A host the browser named (the Host header): letters, digits, dots, dashes, an IPv6 literal's brackets and a port.
# Anything else (a forged header) gets no script source at all: its page fails closed.
HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
# Types a browser never runs script in, shown inline when a student's file has one; every other type of hers is
# sent as an attachment (saved, never rendered on the staff origin)
INLINE_SAFE = {"text/plain", "image/png", "image/jpeg", "image/gif", "image/webp", "application/json"}


class NoncedScripts(jinja2.BaseLoader):
    """A Jinja loader that gives every `<script` tag in a template's own source the nonce placeholder, and writes
    every quoted value inside a script (`"{{ notebook_id }}"`) as a JSON string (`{{ (notebook_id)|...|tojson }}`,
    the same text as before):
    HTML escaping does not protect a script, where a backslash or a line break in a URL's name would end the
    string; JSON does, and Jinja's `tojson` also escapes `<`, `>`, `&` and `'`."""

    def __init__(self, inner: jinja2.BaseLoader):
        self.inner = inner

    def get_source(self, environment, template):
        source, filename, uptodate = self.inner.get_source(environment, template)
        source = SCRIPT_BLOCK.sub(lambda block: block.group(1) + QUOTED_VALUE.sub(AS_JSON, block.group(2))
                                  + block.group(3), source)
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
    """Sets the policy with a fresh nonce on every response and swaps the placeholder for it (layer 3); a response
    of an INERT route (a student's file) is sandboxed and, unless its type cannot be active, an attachment. Should
    the server's templates not be hardened it answers every page with 503: fail closed, never a page without them."""

    def __init__(self, request):
        super().__init__(request)
        self.request = request   # routing marks its route on it before the response starts (find_handler below)

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        self.nonce = secrets.token_urlsafe(16).encode()
        route = getattr(self.request, "staff_route", None)
        inert = route is not None and route.decision is routes.Decision.INERT
        # Jupyter Server's own policy for a file or an export says `sandbox allow-scripts`: kept as a sandbox, and
        # made stricter (no scripts, no same origin), never dropped
        sandbox = inert or "sandbox" in headers.get("Content-Security-Policy", "")
        headers["Content-Security-Policy"] = policy(self.nonce.decode(), self.script_sources(), sandbox)
        headers["X-Content-Type-Options"] = "nosniff"
        if inert and headers.get("Content-Type", "").split(";")[0].strip().lower() not in INLINE_SAFE:
            disposition = headers.get("Content-Disposition", "")
            headers["Content-Disposition"] = "attachment" + (disposition[disposition.index(";"):]
                                                             if ";" in disposition else "")
        if not _state["hardened"] and "html" in headers.get("Content-Type", ""):
            headers["Content-Length"] = "0"
            return 503, headers, b""
        return status_code, headers, self.transform_chunk(chunk, finishing)

    def script_sources(self) -> tuple[str, ...]:
        """This server's code paths on the origin the browser asked for (scheme-less: the page's own scheme)."""
        host = getattr(self.request, "host", None) or ""
        if not HOST.match(host):
            return ()
        return tuple(f"{host}{prefix}" for prefix in _state.get("script_prefixes", ()))

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


class StaffPages(Configurable):
    """Which staff server this is, for autograder/routes.py's decisions: `make lab` (the default) or the class hub's
    Formgrader (its jupyter_server_config.json, written by scripts/class_hub.py, says `formgrader`)."""
    server = Enum([server.value for server in routes.Server], default_value=routes.Server.LAB.value,
                  help="lab: the instructor's make lab; formgrader: the class hub's Formgrader service").tag(config=True)


def ready(serverapp, server: routes.Server) -> list[routes.Found]:
    """At the first request, when every extension has added its handlers and templates: the templates hardened
    (layers 1 and 2), every route given its decision, the code paths noted for the policy, the inventory written."""
    harden(serverapp.web_app.settings)
    found = routes.enforce(serverapp.web_app, server, serverapp.base_url)
    _state["script_prefixes"] = tuple(routes.script_sources(found, serverapp.base_url))
    inventory = routes.write_inventory(found, server, serverapp.runtime_dir)
    for one in found:
        if not one.classified:
            serverapp.log.error(f"staff pages: {one.pattern} ({one.handler}) is in no review of this server's routes "
                                f"(autograder/routes.py): refused")
    serverapp.log.info(f"staff pages: {len(found)} routes of this {server.value} server classified and enforced "
                       f"({inventory})")
    return found


def _jupyter_server_extension_points():
    return [{"module": "autograder.staff_pages"}]


def _load_jupyter_server_extension(serverapp):
    web_app = serverapp.web_app
    web_app.transforms.insert(0, StrictPolicy)     # before compression, so it sees the page itself
    _state["settings"] = web_app.settings
    server = routes.Server(StaffPages(config=serverapp.config).server)
    route = web_app.find_handler

    def find_handler(request, **kwargs):
        """tornado's routing, after `ready` at the first request; the route found is marked on the request for
        StrictPolicy (its decision)."""
        if not _state["hardened"]:
            ready(serverapp, server)
        delegate = route(request, **kwargs)
        request.staff_route = getattr(getattr(delegate, "handler_class", None), "staff_route", None)
        return delegate

    web_app.find_handler = find_handler
    serverapp.log.info(f"staff pages ({server.value}): sanitised submissions, escaped templates, a strict CSP, "
                       "every route classified (autograder/staff_pages.py, autograder/routes.py)")
