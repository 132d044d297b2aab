"""Every route a staff server answers, classified once: what it serves or does, whether a student's bytes can reach
it, and what each staff server does with it (issue #58).

A staff server is one whose pages staff open with their own session: `make lab` (the instructor's JupyterLab on the
course) and the class hub's Formgrader service (run as the grader account, opened by the instructor and the TAs).
Both load `autograder.staff_pages`, which calls `guard` here. At the first request (when every extension has added its
handlers) `guard` walks the server's live handler table (Jupyter Server's, JupyterLab's, nbgrader's, the terminals',
the language servers', JupyterHub's single-user extension's, whatever else is installed) and gives each route the
`Decision` of `ROUTES` for that server:

- SERVE: as it is (pages of the server's own templates, JSON APIs, downloads of its own files);
- CODE: the server's own installed JavaScript: its path is the only place scripts may load from (`script_sources`);
- INERT: it serves a student's files: sandboxed without scripts, never sniffed, and as an attachment unless the
  type cannot be active (staff_pages.StrictPolicy does that with the decision this module marks on the request);
- READ_ONLY: reads only: every other method is refused (403);
- OWN_WORK: refused when the request names a file in a folder of student work (`STUDENT_WORK`);
- OFF: refused (403) with the reason.

A route that is in the live table and not in `ROUTES` is OFF, and is listed as unclassified in the inventory the
server writes into its runtime folder (`staff-routes-<pid>.json`); tests/test_routes.py fails on it, so an upgrade of
nbgrader, JupyterLab or Jupyter Server that adds a route is caught and classified by a person. A route in `ROUTES`
that no server has is harmless (a package not installed).

Written here, not configured: Jupyter Server can switch off whole extensions, but not one route of an extension
(nbgrader's Validate lives beside its version check, JupyterLab's build API beside its pages), and no server can
refuse writes on its settings and configuration APIs while keeping reads.
"""
from __future__ import annotations

import inspect
import json
import os
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from tornado.web import HTTPError, RequestHandler

# The course's folders that hold what students wrote (nbgrader's and ours): a staff server never runs, trusts or
# validates a file in them.
STUDENT_WORK = ("submitted", "autograded", "feedback", "graded", "out", "exchange")
READS = ("GET", "HEAD", "OPTIONS")


class Server(StrEnum):
    """The staff servers: `make lab` (the instructor's JupyterLab) and the class hub's Formgrader service."""
    LAB = "lab"
    FORMGRADER = "formgrader"


class Decision(StrEnum):
    SERVE = "serve"
    CODE = "code"
    INERT = "inert"
    READ_ONLY = "read-only"
    OWN_WORK = "own work only"
    OFF = "off"


@dataclass(frozen=True)
class Route:
    """One route: its URL pattern after the server's base URL, the handler class, what it serves or does, whether a
    student's bytes can reach its response or its action, and each staff server's decision."""
    pattern: str
    handler: str
    serves: str
    student_bytes: bool
    lab: Decision
    formgrader: Decision

    def decision(self, server: Server) -> Decision:
        return self.lab if server is Server.LAB else self.formgrader


SERVE, CODE, INERT, READ_ONLY, OWN_WORK, OFF = (Decision.SERVE, Decision.CODE, Decision.INERT, Decision.READ_ONLY,
                                                Decision.OWN_WORK, Decision.OFF)
_JS, _JL, _NB, _FG = "jupyter_server.", "jupyterlab_server.", "nbgrader.server_extensions.", \
    "nbgrader.server_extensions.formgrader."
CONTENTS_PATH = r"(?P<path>(?:(?:/[^/]+)+|/?))"
KERNEL_ID = r"(?P<kernel_id>\w+-\w+-\w+-\w+-\w+)"

# (pattern, handler, what it serves or does, student bytes?, make lab, hub Formgrader). Reviewed by hand: a new row
# says why its decisions are safe. "Her" is a student; "staff" the instructor and TAs.
_TABLE: list[tuple[str, str, str, bool, Decision, Decision]] = [
    # --- Jupyter Server
    (r"/(robots\.txt)$", _JS + "base.handlers.FileFindHandler", "the server's robots.txt", False, SERVE, SERVE),
    (r"/(favicon\.ico)$", _JS + "base.handlers.FileFindHandler", "the server's icon", False, SERVE, SERVE),
    (r"/static/(.*)$", _JS + "base.handlers.FileFindHandler", "the server's and JupyterLab's installed static files",
     False, CODE, CODE),
    (r"/api/spec.yaml$", _JS + "services.api.handlers.APISpecHandler", "the REST API's description", False, SERVE, SERVE),
    (r"/api/status$", _JS + "services.api.handlers.APIStatusHandler", "activity counts", False, SERVE, SERVE),
    (r"/api/me$", _JS + "services.api.handlers.IdentityHandler", "who is logged in", False, SERVE, SERVE),
    (r"/api/resolvePath$", _JS + "services.api.handlers.PathResolverHandler", "whether a path exists", False, SERVE, SERVE),
    (r"/api/config/(?P<section_name>\w+)$", _JS + "services.config.handlers.ConfigHandler",
     "the front end's settings, written into ~/.jupyter/serverconfig (never read as server configuration); "
     "the grader's home is not staff's to write", False, SERVE, READ_ONLY),
    (r"/api/contents" + CONTENTS_PATH + r"/checkpoints$", _JS + "services.contents.handlers.CheckpointsHandler",
     "checkpoints of a file (her files included, as JSON)", True, SERVE, READ_ONLY),
    (r"/api/contents" + CONTENTS_PATH + r"/checkpoints/(?P<checkpoint_id>[\w-]+)$",
     _JS + "services.contents.handlers.ModifyCheckpointsHandler", "restores or deletes a checkpoint", True, SERVE, READ_ONLY),
    (r"/api/contents" + CONTENTS_PATH + r"/trust$", _JS + "services.contents.handlers.TrustNotebooksHandler",
     "signs a notebook as trusted: its outputs' scripts would then run in staff's JupyterLab", True, OWN_WORK, OFF),
    (r"/api/contents" + CONTENTS_PATH + r"$", _JS + "services.contents.handlers.ContentsHandler",
     "files as JSON (hers included; nosniff, never rendered); writes on Formgrader are refused by its contents "
     "manager too (staff_pages.ReadOnlyContents)", True, SERVE, READ_ONLY),
    (r"/api/notebooks/?(.*)$", _JS + "services.contents.handlers.NotebooksRedirectHandler",
     "redirects to /api/contents", False, SERVE, SERVE),
    (r"/api/kernels$", _JS + "services.kernels.handlers.MainKernelHandler",
     "lists and starts kernels; make lab's kernel manager refuses a kernel in a folder of student work "
     "(no_kernels.OwnWorkKernels), Formgrader's starts none (no_kernels.NoKernels)", True, SERVE, OFF),
    (r"/api/kernels/" + KERNEL_ID + r"$", _JS + "services.kernels.handlers.KernelHandler", "a kernel's model",
     False, SERVE, OFF),
    (r"/api/kernels/" + KERNEL_ID + r"/(?P<action>restart|interrupt)$",
     _JS + "services.kernels.handlers.KernelActionHandler", "restarts or interrupts a kernel", False, SERVE, OFF),
    (r"/api/kernels/" + KERNEL_ID + r"/channels$", _JS + "services.kernels.websocket.KernelWebsocketHandler",
     "talks to a kernel (runs code)", False, SERVE, OFF),
    (r"/kernelspecs/(?P<kernel_name>[\w\.\-%]+)/(?P<path>.*)$", _JS + "kernelspecs.handlers.KernelSpecResourceHandler",
     "an installed kernel's logo", False, SERVE, SERVE),
    (r"/api/kernelspecs$", _JS + "services.kernelspecs.handlers.MainKernelSpecHandler", "installed kernels",
     False, SERVE, SERVE),
    (r"/api/kernelspecs/(?P<kernel_name>[\w\.\-%]+)$", _JS + "services.kernelspecs.handlers.KernelSpecHandler",
     "one installed kernel", False, SERVE, SERVE),
    (r"/nbconvert/(?P<format>\w+)$", _JS + "nbconvert.handlers.NbconvertPostHandler",
     "converts a posted notebook (HTML of it: hers would be)", True, INERT, OFF),
    (r"/nbconvert/(?P<format>\w+)" + CONTENTS_PATH + r"$", _JS + "nbconvert.handlers.NbconvertFileHandler",
     "converts a notebook on disk (hers: her HTML)", True, INERT, OFF),
    (r"/api/nbconvert$", _JS + "services.nbconvert.handlers.NbconvertRootHandler", "the export formats", False, SERVE, SERVE),
    (r"/api/security/csp-report$", _JS + "services.security.handlers.CSPReportHandler",
     "logs the browser's policy reports", False, SERVE, SERVE),
    (r"/api/sessions/(?P<session_id>\w+-\w+-\w+-\w+-\w+)$", _JS + "services.sessions.handlers.SessionHandler",
     "one notebook-kernel session", False, SERVE, OFF),
    (r"/api/sessions$", _JS + "services.sessions.handlers.SessionRootHandler",
     "starts a kernel for a notebook (see /api/kernels)", True, SERVE, OFF),
    (r"/api/shutdown$", _JS + "services.shutdown.ShutdownHandler", "stops the server", False, SERVE, OFF),
    (r"/view" + CONTENTS_PATH + r"$", _JS + "view.handlers.ViewHandler",
     "a page of the server's template that frames /files/ (inert)", False, SERVE, SERVE),
    (r"/api/events$", _JS + "services.events.handlers.EventHandler", "emits a front-end event to the log", False, SERVE, SERVE),
    (r"/api/events/subscribe$", _JS + "services.events.handlers.SubscribeWebsocket", "the server's event stream",
     False, SERVE, SERVE),
    (r"/files/(.*)$", _JS + "base.handlers.AuthenticatedFileHandler", "any file of the course (hers included)", True,
     INERT, INERT),
    (r"/login$", _JS + "auth.login.LoginFormHandler", "the token login form", False, SERVE, SERVE),
    (r"/logout$", _JS + "auth.logout.LogoutHandler", "logs out", False, SERVE, SERVE),
    (r"/.*/$", _JS + "base.handlers.TrailingSlashHandler", "redirects a path ending in /", False, SERVE, SERVE),
    (r"/api$", _JS + "base.handlers.APIVersionHandler", "the server's version", False, SERVE, SERVE),
    (r"/(robots\.txt|favicon\.ico)$", _JS + "base.handlers.PublicStaticFileHandler", "robots.txt, the icon", False,
     SERVE, SERVE),
    (r"/metrics$", _JS + "base.handlers.PrometheusMetricsHandler", "the server's metrics", False, SERVE, SERVE),
    (r"/$", _JS + "base.handlers.MainHandler", "redirects to the default page", False, SERVE, SERVE),
    (r"/?$", _JS + "base.handlers.RedirectWithParams", "redirects the bare base URL to the default page", False,
     SERVE, SERVE),
    (r"(.*)$", _JS + "base.handlers.Template404", "not found", False, SERVE, SERVE),
    # --- the terminals
    (r"/terminals/websocket/(\w+)$", "jupyter_server_terminals.handlers.TermSocket", "a shell", False, SERVE, OFF),
    (r"/api/terminals$", "jupyter_server_terminals.api_handlers.TerminalRootHandler", "starts a shell", False, SERVE, OFF),
    (r"/api/terminals/(\w+)$", "jupyter_server_terminals.api_handlers.TerminalHandler", "one shell", False, SERVE, OFF),
    # --- the language servers (jupyter-lsp: starts one per language as the server's account; none is installed)
    (r"/lsp/status$", "jupyter_lsp.handlers.LanguageServersHandler", "the language servers found", False, SERVE, SERVE),
    (r"/lsp/ws/(?P<language_server>.*)$", "jupyter_lsp.handlers.LanguageServerWebSocketHandler",
     "starts and talks to a language server (reads the files it is shown, hers included)", True, SERVE, OFF),
    # --- JupyterLab
    (r"/lab/api/build$", "jupyterlab.handlers.build_handler.BuildHandler",
     "whether JupyterLab needs a build (GET, which every page asks); a POST rebuilds it (runs node), which the course "
     "never needs from a page", False, READ_ONLY, READ_ONLY),
    (r"/lab/api/extensions$", "jupyterlab.handlers.extension_manager_handler.ExtensionHandler",
     "installs JupyterLab extensions from the package index", False, SERVE, OFF),
    (r"/lab/api/plugins$", "jupyterlab.handlers.plugin_manager_handler.PluginHandler",
     "switches JupyterLab plugins on and off", False, SERVE, READ_ONLY),
    (r"/lab/api/update$", "jupyterlab.handlers.announcements.CheckForUpdateHandler", "asks whether JupyterLab is "
     "current (off in the course's settings)", False, SERVE, SERVE),
    (r"/lab/api/news$", "jupyterlab.handlers.announcements.NewsHandler", "Jupyter's news (off in the course's "
     "settings)", False, SERVE, SERVE),
    (r"/(?P<mode>lab|doc)(?P<workspace>/workspaces/[a-zA-Z0-9\-\_]+)?(?P<tree>/tree/.*)?$",
     _JL + "handlers.LabHandler", "JupyterLab's page (its template)", False, SERVE, SERVE),
    (r"/lab/extensions/(.*)$", _JS + "base.handlers.FileFindHandler", "installed JupyterLab extensions' code", False,
     CODE, CODE),
    (r"/lab/api/settings/?$", _JL + "settings_handler.SettingsHandler", "JupyterLab's settings", False, SERVE, READ_ONLY),
    (r"/lab/api/settings/(?P<schema_name>.+)$", _JL + "settings_handler.SettingsHandler",
     "one plugin's settings, written into ~/.jupyter/lab/user-settings", False, SERVE, READ_ONLY),
    (r"/lab/api/translations/?$", _JL + "translations_handler.TranslationsHandler", "the languages", False, SERVE, SERVE),
    (r"/lab/api/translations/(?P<locale>.*)$", _JL + "translations_handler.TranslationsHandler", "one language",
     False, SERVE, SERVE),
    (r"/lab/api/workspaces/?$", _JL + "workspaces_handler.WorkspacesHandler", "saved layouts", False, SERVE, READ_ONLY),
    (r"/lab/api/workspaces/(?P<space_name>.+)$", _JL + "workspaces_handler.WorkspacesHandler",
     "one saved layout, written into ~/.jupyter/lab/workspaces (open tabs: paths, never code)", False, SERVE, READ_ONLY),
    (r"/lab/api/listings/(.*)$", _JL + "listings_handler.ListingsHandler", "extension allow and block lists",
     False, SERVE, SERVE),
    (r"/lab/api/themes/(.*)$", _JL + "themes_handler.ThemesHandler", "installed themes' CSS", False, SERVE, SERVE),
    (r"/lab/api/licenses/(.*)$", _JL + "licenses_handler.LicensesHandler", "installed packages' licences", False,
     SERVE, SERVE),
    (r"/lab/.*$", _JL + "handlers.NotFoundHandler", "not found", False, SERVE, SERVE),
    (r"/static/lab/(.*)$", _JS + "base.handlers.FileFindHandler", "JupyterLab's own code", False, CODE, CODE),
    # --- Jupyter Notebook 7 (installed with nbgrader): its pages render files in the browser as JupyterLab does
    (r"/tree(.*)$", "notebook.app.TreeHandler", "the file browser page", False, SERVE, SERVE),
    (r"/notebooks(.*)$", "notebook.app.NotebookHandler", "the notebook page", False, SERVE, SERVE),
    (r"/edit(.*)$", "notebook.app.FileHandler", "the editor page", False, SERVE, SERVE),
    (r"/consoles/(.*)$", "notebook.app.ConsoleHandler", "the console page (its kernel: see /api/kernels)", False,
     SERVE, OFF),
    (r"/terminals/(.*)$", "notebook.app.TerminalHandler", "the terminal page (see /api/terminals)", False, SERVE, OFF),
    (r"/custom/custom.css$", "notebook.app.CustomCssHandler", "the server account's custom CSS", False, SERVE, SERVE),
    (r"/static/notebook/(.*)$", _JS + "base.handlers.FileFindHandler", "Notebook 7's own code", False, CODE, CODE),
    # --- nbgrader: the students' side (the Assignments tab: fetch, submit, feedback as the server's account)
    (r"/assignments$", _NB + "assignment_list.handlers.AssignmentListHandler", "released assignments", False, SERVE, OFF),
    (r"/assignments/(?P<action>fetch|submit|fetch_feedback)$", _NB + "assignment_list.handlers.AssignmentActionHandler",
     "fetches, submits or fetches feedback as the server's account", False, SERVE, OFF),
    (r"/courses$", _NB + "assignment_list.handlers.CourseListHandler", "the courses of the exchange", False, SERVE, OFF),
    (r"/nbgrader_version$", _NB + "assignment_list.handlers.NbGraderVersionHandler", "nbgrader's version", False,
     SERVE, SERVE),
    (r"/formgraders$", _NB + "course_list.handlers.CourseListHandler", "the courses' Formgraders", False, SERVE, SERVE),
    (r"/nbgrader_version$", _NB + "course_list.handlers.NbGraderVersionHandler", "nbgrader's version", False, SERVE, SERVE),
    (r"/assignments/validate$", _NB + "validate_assignment.handlers.ValidateAssignmentHandler",
     "runs a notebook (nbgrader's Validator, a kernel of the server's account, no sandbox)", True, OWN_WORK, OFF),
    (r"/nbgrader_version$", _NB + "validate_assignment.handlers.NbGraderVersionHandler", "nbgrader's version", False,
     SERVE, SERVE),
    # --- nbgrader's Formgrader: pages (staff_pages sanitises and escapes them) and its API (JSON)
    (r"/formgrader/?$", _FG + "handlers.FormgraderHandler", "Formgrader's start page", False, SERVE, SERVE),
    (r"/formgrader/manage_assignments/?$", _FG + "handlers.ManageAssignmentsHandler", "the assignments page", False,
     SERVE, SERVE),
    (r"/formgrader/manage_submissions/([^/]+)/?$", _FG + "handlers.ManageSubmissionsHandler",
     "an assignment's submissions (her id and name, escaped)", True, SERVE, SERVE),
    (r"/formgrader/gradebook/?$", _FG + "handlers.GradebookAssignmentsHandler", "the gradebook page", False, SERVE, SERVE),
    (r"/formgrader/gradebook/([^/]+)/?$", _FG + "handlers.GradebookNotebooksHandler",
     "an assignment's notebooks (the URL's names, escaped)", False, SERVE, SERVE),
    (r"/formgrader/gradebook/([^/]+)/([^/]+)/?$", _FG + "handlers.GradebookNotebookSubmissionsHandler",
     "a notebook's submissions (the URL's names, escaped)", True, SERVE, SERVE),
    (r"/formgrader/manage_students/?$", _FG + "handlers.ManageStudentsHandler", "the students (names escaped)", True,
     SERVE, SERVE),
    (r"/formgrader/manage_students/([^/]+)/?$", _FG + "handlers.ManageStudentsAssignmentsHandler",
     "one student's assignments", True, SERVE, SERVE),
    (r"/formgrader/manage_students/([^/]+)/([^/]+)/?$", _FG + "handlers.ManageStudentNotebookSubmissionsHandler",
     "one student's notebooks", True, SERVE, SERVE),
    (r"/formgrader/submissions/components/(.*)$", "tornado.web.StaticFileHandler",
     "the grading page's own code (before the submission's files in the table)", False, CODE, CODE),
    (r"/formgrader/submissions/([^/]+)/?$", _FG + "handlers.SubmissionHandler",
     "her autograded notebook as a grading page (sanitised: staff_pages.StaffExporter)", True, SERVE, SERVE),
    (r"/formgrader/submissions/(?P<submission_id>[^/]+)/(?P<action>next_incorrect|prev_incorrect|next|prev)/?$",
     _FG + "handlers.SubmissionNavigationHandler", "redirects to the next or previous submission", False, SERVE, SERVE),
    (r"/formgrader/submissions/(.*)$", _FG + "handlers.SubmissionFilesHandler",
     "the files she handed in beside her notebook", True, INERT, INERT),
    (r"/formgrader/fonts/(.*)$", "tornado.web.StaticFileHandler", "Formgrader's fonts", False, SERVE, SERVE),
    (r"/formgrader/api/status$", _FG + "apihandlers.StatusHandler", "Formgrader is up", False, SERVE, SERVE),
    (r"/formgrader/api/assignments$", _FG + "apihandlers.AssignmentCollectionHandler", "assignments (JSON)", False,
     SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)$", _FG + "apihandlers.AssignmentHandler", "one assignment; sets its due "
     "date", False, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/assign$", _FG + "apihandlers.AssignHandler",
     "makes the student version from source/ (nbgrader generate_assignment: runs no notebook unless configured)",
     False, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/unrelease$", _FG + "apihandlers.UnReleaseHandler", "takes a release back",
     False, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/release$", _FG + "apihandlers.ReleaseHandler", "releases to the exchange",
     False, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/collect$", _FG + "apihandlers.CollectHandler",
     "collects submissions into submitted/ (copies, never runs)", True, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/generate_feedback$", _FG + "apihandlers.GenerateAllFeedbackHandler",
     "writes feedback pages (nbconvert, sanitised, runs nothing)", True, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/release_feedback$", _FG + "apihandlers.ReleaseAllFeedbackHandler",
     "releases feedback to the exchange", True, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/generate_feedback$", _FG + "apihandlers.GenerateFeedbackHandler",
     "one student's feedback pages", True, SERVE, SERVE),
    (r"/formgrader/api/assignment/([^/]+)/([^/]+)/release_feedback$", _FG + "apihandlers.ReleaseFeedbackHandler",
     "releases one student's feedback", True, SERVE, SERVE),
    (r"/formgrader/api/notebooks/([^/]+)$", _FG + "apihandlers.NotebookCollectionHandler", "notebooks (JSON)", False,
     SERVE, SERVE),
    (r"/formgrader/api/submissions/([^/]+)$", _FG + "apihandlers.SubmissionCollectionHandler", "submissions (JSON)",
     True, SERVE, SERVE),
    (r"/formgrader/api/submission/([^/]+)/([^/]+)$", _FG + "apihandlers.SubmissionHandler", "one submission (JSON)",
     True, SERVE, SERVE),
    (r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde$", _FG + "apihandlers.AutogradeHandler",
     "grades one submission: by the course's sandboxed grader (formgrader_autograde.SandboxedAPI), on both servers",
     True, SERVE, SERVE),
    (r"/formgrader/api/submitted_notebooks/([^/]+)/([^/]+)$", _FG + "apihandlers.SubmittedNotebookCollectionHandler",
     "submitted notebooks (JSON)", True, SERVE, SERVE),
    (r"/formgrader/api/submitted_notebook/([^/]+)/flag$", _FG + "apihandlers.FlagSubmissionHandler",
     "flags a submission", False, SERVE, SERVE),
    (r"/formgrader/api/grades$", _FG + "apihandlers.GradeCollectionHandler", "grades (JSON)", True, SERVE, SERVE),
    (r"/formgrader/api/grade/([^/]+)$", _FG + "apihandlers.GradeHandler", "reads or sets a hand score", True, SERVE, SERVE),
    (r"/formgrader/api/comments$", _FG + "apihandlers.CommentCollectionHandler", "comments (JSON)", True, SERVE, SERVE),
    (r"/formgrader/api/comment/([^/]+)$", _FG + "apihandlers.CommentHandler", "reads or sets a comment", True, SERVE, SERVE),
    (r"/formgrader/api/students$", _FG + "apihandlers.StudentCollectionHandler", "students (JSON)", True, SERVE, SERVE),
    (r"/formgrader/api/student/([^/]+)$", _FG + "apihandlers.StudentHandler", "reads or sets a student's name",
     True, SERVE, SERVE),
    (r"/formgrader/api/student_submissions/([^/]+)$", _FG + "apihandlers.StudentSubmissionCollectionHandler",
     "one student's submissions (JSON)", True, SERVE, SERVE),
    (r"/formgrader/api/student_notebook_submissions/([^/]+)/([^/]+)$",
     _FG + "apihandlers.StudentNotebookSubmissionCollectionHandler", "one student's notebooks (JSON)", True, SERVE, SERVE),
    (r"/formgrader/static/(.*)$", "tornado.web.StaticFileHandler", "Formgrader's own code and styles", False, CODE, CODE),
    (r"/formgrader/.*$", _FG + "handlers.Template404", "not found", False, SERVE, SERVE),
    # --- JupyterHub's single-user extension (the hub's Formgrader only)
    (r"/logout$", "jupyterhub.singleuser.extension.JupyterHubLogoutHandler", "logs out through the hub", False, SERVE, SERVE),
    (r"/oauth_callback$", "jupyterhub.singleuser.extension.JupyterHubOAuthCallbackHandler", "the hub's login",
     False, SERVE, SERVE),
]
ROUTES: dict[tuple[str, str], Route] = {(row[0], row[1]): Route(*row) for row in _TABLE}


@dataclass(frozen=True)
class Found:
    """One route of a live server, as the guard classified it."""
    pattern: str
    handler: str
    decision: Decision
    classified: bool


def qualified(handler: type) -> str:
    return f"{handler.__module__}.{handler.__qualname__}"


def _relative(pattern: str, base_url: str) -> str:
    """The pattern after the server's base URL (/services/cs336-primitives/ on the hub, / in make lab)."""
    base = base_url.rstrip("/")
    for written in (base, re.escape(base)):   # Jupyter Server escapes the base URL in some patterns, not in others
        if written and pattern.startswith(written + "/"):
            return pattern[len(written):]
    return pattern


def names_student_work(path: str) -> bool:
    """True when `path` (relative to the server's root, any slashes) lies in a folder of student work."""
    parts = [part for part in path.replace("\\", "/").split("/") if part not in ("", ".")]
    return bool(parts) and parts[0] in STUDENT_WORK


def _paths_of(handler: RequestHandler) -> list[str]:
    """Every path a request names: in the URL (the route's groups) and in a JSON body's `path`."""
    named = [value for value in [*handler.path_args, *handler.path_kwargs.values()] if isinstance(value, str)]
    if handler.request.body:
        try:
            body = json.loads(handler.request.body)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("path"), str):
            named.append(body["path"])
    return named


class Refused(RequestHandler):
    """What an OFF route, or one nobody classified, answers: 403 with the reason, for every method."""
    reason = ""

    def initialize(self, **kwargs: Any) -> None:
        pass

    def prepare(self) -> None:
        raise HTTPError(403, self.reason)


def _guarded(target: type[RequestHandler], found: Found, route: Route | None) -> type:
    """The handler class that answers this route from now on (a subclass of `target` that knows its decision, or
    Refused)."""
    decision = found.decision
    if decision is Decision.OFF:
        reason = (f"{found.pattern}: {route.serves} (switched off on this staff server: autograder/routes.py)"
                  if route else f"{found.pattern} ({found.handler}) is in no review of this server's routes "
                                f"(autograder/routes.py): refused until someone classifies it")
        return type("Refused", (Refused,), {"reason": reason, "staff_route": found})
    refuse = None
    if decision is Decision.READ_ONLY:
        def refuse(handler: RequestHandler) -> None:
            if handler.request.method not in READS:
                raise HTTPError(403, f"{found.pattern} is read-only on this staff server (autograder/routes.py)")
    elif decision is Decision.OWN_WORK:
        def refuse(handler: RequestHandler) -> None:
            if any(names_student_work(path) for path in _paths_of(handler)):
                raise HTTPError(403, f"{route.serves if route else found.pattern}: refused for a file in a folder "
                                     f"of student work ({', '.join(STUDENT_WORK)}); grade with the sandboxed grader "
                                     f"(make grade, Autograde)")
    namespace: dict[str, Any] = {"staff_route": found}
    if refuse is not None:
        own_prepare = target.prepare

        async def prepare(self: RequestHandler) -> None:
            result = own_prepare(self)      # the server's own checks first: who is asking, the XSRF token
            if inspect.isawaitable(result):
                await result
            if not self._finished:
                refuse(self)
        namespace["prepare"] = prepare
    return type(target.__name__, (target,), namespace)


def _leaves(router: Any):
    """Every (rule, handler class) of a tornado router, through nested routers."""
    for rule in getattr(router, "rules", []):
        if hasattr(rule.target, "rules"):
            yield from _leaves(rule.target)
        elif isinstance(rule.target, type) and issubclass(rule.target, RequestHandler):
            yield rule, rule.target


def enforce(web_app: Any, server: Server, base_url: str) -> list[Found]:
    """Give every route of the live `web_app` its decision on `server` (see the module's docstring); what was found."""
    found = []
    for rule, target in _leaves(web_app.default_router):
        pattern = _relative(rule.matcher.regex.pattern if hasattr(rule.matcher, "regex") else str(rule.matcher),
                            base_url)
        route = ROUTES.get((pattern, qualified(target)))
        one = Found(pattern, qualified(target), route.decision(server) if route else Decision.OFF, route is not None)
        rule.target = _guarded(target, one, route)
        found.append(one)
    return found


def script_sources(found: list[Found], base_url: str) -> list[str]:
    """The URL path prefixes of the server's own installed code (CODE routes): the only places a script may load
    from. Each is the literal start of its pattern, so a file under it can only be served by that route."""
    prefixes = set()
    for one in found:
        if one.decision is Decision.CODE:
            literal = one.pattern.split("(", 1)[0].split(".*", 1)[0]
            prefixes.add(base_url.rstrip("/") + literal)
    return sorted(prefixes)


def write_inventory(found: list[Found], server: Server, runtime_dir: str) -> Path:
    """The server's classified routes, as JSON in its runtime folder (tests and `docs/security.md` read it)."""
    path = Path(runtime_dir) / f"staff-routes-{os.getpid()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"server": server.value, "routes": [asdict(one) for one in found]}, indent=1))
    return path


MARKERS = ("<!-- routes: generated by `python -m autograder.routes` -->", "<!-- /routes -->")


def markdown() -> str:
    """The table as docs/security.md shows it (tests/test_routes.py checks that the docs hold exactly this)."""
    lines = ["| route (after the base URL) | handler | what it serves or does | her bytes | make lab | Formgrader |",
             "|---|---|---|---|---|---|"]
    for route in ROUTES.values():
        pattern = route.pattern.replace("|", "\\|")
        lines.append(f"| `{pattern}` | `{route.handler.rsplit('.', 1)[1]}` | {route.serves} | "
                     f"{'yes' if route.student_bytes else ''} | {route.lab} | {route.formgrader} |")
    return "\n".join([MARKERS[0], *lines, MARKERS[1]])


if __name__ == "__main__":
    print(markdown())
