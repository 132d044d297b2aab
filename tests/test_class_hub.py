"""A class on a real JupyterHub (scripts/class_hub.py, `make hub`): real unix accounts from a roster, PAM logins,
each user's server started as that user by LocalProcessSpawner through configurable-http-proxy, Formgrader as a
JupyterHub service run by the grader account, nbgrader's exchange in one folder.

The hub is set up and started once for this file, in scratch folders (the accounts' homes, the exchange, the hub's
state; the shared environment and the proxy are kept in HUB_TEST_PREFIX between runs, rebuilt when the course's
pins change; `make test` builds them beside the course's own install, before the tests start), and everything is
removed afterwards: servers, the proxy, accounts, homes. It needs root (it creates accounts); without root it is
skipped with the reason, and under CI=true that skip is a failure.

1. The whole cycle in headless Chromium through the hub's URL (screenshots in test-artifacts/class-hub/), with a
   TA's click on Formgrader's Autograde grading by the course's sandboxed grader.
2. Every way in that a student must not have, tried as that student, each refused with the error seen; every
   attack on the exchange (issue #32) tried as a student would, each failing.
3. One student exhausting their memory, tasks and disk while the others' servers, submissions and grading go on.
4. A class of 30 accounts submitting at once while the grader collects and the hub restarts, a student trying to
   take its ports while it is stopped: nothing lost, nothing taken (bench/hub_load.py runs the load with 200).
5. The end of term: an archive, then nothing of the class left.

Everything a student runs here (`as_user(..., hub=hub)`) is confined exactly as their server is
(scripts/student_jail.py): their cgroup, a mount namespace with only their own disk writable.
"""
from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from bench.hub_load import ASSIGNMENT, submit_class
from scripts import process_group
from scripts.class_hub import (
    ClassError,
    ClassHub,
    HubProcess,
    account_exists,
    as_user,
    check_clone_private,
    grader_env,
    is_class_account,
    read_roster,
    remove_account,
    student_env,
    tcp_listeners,
)
from tests import submissions
from tests.lab_server import free_low_port
from tests.manual import bash_blocks, section
from tests.test_browser import CHROMIUM_ARGS, chromium_for_playwright

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("PYTEST_ARTIFACTS", REPO / "test-artifacts")) / "class-hub"
PREFIX = os.environ.get("HUB_TEST_PREFIX", "/var/tmp/cs336-hub-test")
LOAD_STUDENTS = 30
# each student's caps in this test: enough for JupyterLab and a kernel, small enough to exhaust in a second
LIMITS = "memory=768M,tasks=200,disk=200M,shm=16M"
RIGHT, HALF = "hubt-ada", "hubt-ben"
SECTION = section("docs/hub.md", "## Run a class on one machine")   # its two bash blocks, run as printed
SETUP_BLOCK, GRADER_BLOCK = bash_blocks(SECTION)
HUB_COMMAND = SETUP_BLOCK.splitlines()[-1]                   # make hub ROSTER=students.csv STAFF=... INSTRUCTOR=...
STAFF = re.search(r"STAFF=([\w,-]+)", HUB_COMMAND).group(1).split(",")
TA = STAFF[0]
PROF = re.search(r"INSTRUCTOR=(\w+)", HUB_COMMAND).group(1)
GRADING = GRADER_BLOCK.splitlines()                          # cd course, then the nbgrader and make commands


def required(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the class hub test must run on CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def running():
    """A class of LOAD_STUDENTS accounts (two of them for the browser), a TA and the instructor, with the hub up and
    07_models_optimizers released; torn down to nothing afterwards."""
    if os.geteuid() != 0:
        required("the class hub needs root (it creates unix accounts): run `make test` as root, as CI does")
    for tool in ("runuser", "useradd", "node", "npm"):
        if not shutil.which(tool):
            required(f"{tool} is missing (Node.js and npm: apt-get install -y nodejs npm)")
    Path(PREFIX).mkdir(parents=True, exist_ok=True)
    # the accounts' homes and the exchange live below it; not under /tmp, which is each student's own /tmp
    scratch = Path(tempfile.mkdtemp(prefix="class-hub-", dir=PREFIX))
    scratch.chmod(0o755)
    (scratch / "home").mkdir(mode=0o755)
    students = [RIGHT, HALF] + [f"hubt-{i:03d}" for i in range(LOAD_STUDENTS - 2)]
    roster = scratch / "roster.csv"
    roster.write_text("id,first_name,last_name,email\n" + "".join(f"{s},{s[5:]},Test,{s}@example.org\n" for s in students))
    ports = {}
    for name in ("port", "hub_port", "proxy_api_port", "service_port"):   # below 1024: only root can bind them
        ports[name] = free_low_port(set(ports.values()))
    hub = ClassHub(prefix=PREFIX, students=students, staff=STAFF, instructor=PROF, homes=str(scratch / "home"),
                   exchange=str(scratch / "exchange"), ip="127.0.0.1", **ports)
    leftover_class(hub, students)
    mode = REPO.stat().st_mode & 0o777
    # The manual's commands exactly as printed, as root in the repository; only where things go differs, through
    # the Makefile's variables: a scratch prefix, homes, exchange and free ports. The roster is students.csv.
    csv = REPO / "students.csv"
    kept = csv.read_bytes() if csv.exists() else None
    csv.write_text(roster.read_text())
    os.environ.update(HUB_PREFIX=PREFIX, HUB_ARGS=(
        f"--homes {hub.homes} --exchange {hub.exchange} --ip 127.0.0.1 --port {hub.port} "
        f"--internal-ports {hub.hub_port},{hub.proxy_api_port},{hub.service_port} --limits {LIMITS}"))
    started = time.monotonic()
    server = None
    try:
        installed = subprocess.run(["bash", "-e", "-c", "\n".join(SETUP_BLOCK.splitlines()[:-1])], capture_output=True, text=True,
                                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=600)
        assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
        if not clone_is_private():   # a clone others can read: `make hub` refuses it, saying how to fix it; fixed
            refused_clone = subprocess.run(["bash", "-c", HUB_COMMAND], cwd=REPO, capture_output=True, text=True,
                                           timeout=300)
            assert refused_clone.returncode != 0 and f"chmod 700 {REPO}" in refused_clone.stderr, refused_clone.stderr
            assert not any(account_exists(s) for s in students), "nothing is created before the refusal"
            REPO.chmod(0o700)
        server = HubProcess(hub, scratch / "hub.log").start(command=["bash", "-e", "-c", HUB_COMMAND], cwd=REPO,
                                                            timeout=900)
        hub = ClassHub.load(PREFIX)
        server.hub = hub
        printed = (scratch / "hub.log").read_text()
        assert f"class ready: {LOAD_STUDENTS} students, {len(STAFF)} TAs, instructor {PROF}" in printed, printed[-3000:]
        assert "JupyterHub for cs336-primitives at" in printed
        print(f"\nclass hub set up and started by `{HUB_COMMAND}` in {time.monotonic() - started:.1f} s")
        grade(hub, GRADING[1])   # nbgrader release_assignment 07_models_optimizers
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        yield hub, server
    finally:
        REPO.chmod(mode)
        if kept is None:
            csv.unlink(missing_ok=True)
        else:
            csv.write_bytes(kept)
        for name in ("HUB_PREFIX", "HUB_ARGS"):
            os.environ.pop(name, None)
        left = None
        if server:
            server.stop()
            left = subprocess.run(["pgrep", "-f", f"configurable-http-proxy .*--port {hub.port}( |$)"], capture_output=True)
        removed = leftover_class(hub, students)   # none when the end-of-term test ran
        if (scratch / "hub.log").exists():
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copy2(scratch / "hub.log", ARTIFACTS / "hub.log")
        shutil.rmtree(scratch, ignore_errors=True)
        for kept_out in ("course", "student-config", "grader-config", "course-start.sh", "archive"):
            path = Path(PREFIX) / kept_out
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        print(f"class hub: {len(removed)} accounts left over and removed; {time.monotonic() - started:.1f} s in all")
        assert left is None or left.returncode != 0, f"the hub's proxy is still running: {left.stdout.decode()}"


def clone_is_private() -> bool:
    try:
        check_clone_private(REPO)
        return True
    except ClassError:
        return False


def leftover_class(hub: ClassHub, students: list[str]) -> list[str]:
    """Remove what a class of this test left (an earlier run killed before its clean-up, or this run's when the
    end-of-term test did not run): students' cgroups and disks, class accounts (never another account), the
    hub's state; the accounts removed."""
    removed = []
    for name in students + STAFF + [PROF, hub.grader]:
        if name in students:
            hub.cgroup(name).remove()
            hub.disk(name).remove()
        if is_class_account(name):
            remove_account(name)
            removed.append(name)
    for leftover in ("state", "course", "disks"):
        shutil.rmtree(Path(PREFIX) / leftover, ignore_errors=True)
    return removed


def grade(hub: ClassHub, line: str) -> subprocess.CompletedProcess:
    """One line of the manual's grading block, exactly as printed, in a login shell of the grader account in its
    course (the block's first line is `cd course`)."""
    assert GRADING[0] == "cd course" and line in GRADING[1:], line
    done = subprocess.run(["su", "-", hub.grader, "-c", f"cd course && {line}"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{line}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def password(hub: ClassHub, user: str) -> str:
    """The unix password `make hub` set for a new account (state/passwords.csv, for the instructor to hand out)."""
    rows = dict(line.split(",", 1) for line in (hub.state / "passwords.csv").read_text().splitlines())
    return rows[user]


# --- bad input ---------------------------------------------------------------------------------------------------

def test_a_bad_roster_is_refused_with_every_problem_named(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name\nada,Ada\nBen Smith,Ben\nada,Again\n")
    with pytest.raises(ClassError) as refused:
        read_roster(roster)
    assert "line 3: 'Ben Smith' is not a valid unix account name" in str(refused.value)
    assert "line 4: 'ada' appears twice" in str(refused.value)
    roster.write_text("name,email\nada,a@x\n")
    with pytest.raises(ClassError, match="no `id` column"):
        read_roster(roster)
    with pytest.raises(ClassError, match="not found"):
        read_roster(tmp_path / "missing.csv")


# --- helpers for the browser and HTTP ----------------------------------------------------------------------------

def login(browser, hub: ClassHub, user: str):
    """A new browser context logged in as `user` (PAM, the account's unix password); the page after the spawn."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.hub_homes = hub.homes
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{hub.public_url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", password(hub, user))
    page.click("#login_submit")
    return page


def wait_for_lab(page, user: str) -> None:
    page.wait_for_url(re.compile(f"/user/{re.escape(user)}/lab"), timeout=180_000)
    page.locator(".jp-DirListing-item").first.wait_for()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / name))


@dataclass
class Answer:
    status: int
    body: str

    def text(self) -> str:
        return self.body

    def json(self):
        return json.loads(self.body)


def api(page, method: str, path: str, data=None) -> Answer:
    """A request from the page itself, with its session (its cookies and the server's XSRF token), as the UI makes
    them; `path` on the page's own origin (each server has its own, JupyterHub's subdomains)."""
    answer = page.evaluate("""async ([method, path, body]) => {
        const xsrf = (document.cookie.match(/(?:^|; )(?:__Host-)?_xsrf=([^;]*)/) || [])[1] || "";
        const response = await fetch(path, {method, body, headers: {"X-XSRFToken": decodeURIComponent(xsrf),
                                                                  "Content-Type": "application/json"}});
        return [response.status, await response.text()];
    }""", [method, path, json.dumps(data) if data is not None else None])
    return Answer(*answer)


def at(hub: ClassHub, path: str) -> str:
    """The URL of `path` on the origin that serves it (the hub's, a user's server's, Formgrader's)."""
    return hub.origin(path) + path


def open_assignments(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Nbgrader$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Assignment List$")).click()
    page.locator("#released_assignments_list, #fetched_assignments_list").first.wait_for()


def put_notebook(page, user: str, notebook: nbformat.NotebookNode) -> None:
    """Save the student's answers into their fetched copy through their server's contents API (what typing and
    saving in JupyterLab ends in)."""
    path = f"release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    answer = api(page, "PUT", f"/user/{user}/api/contents/{path}",
                 {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(notebook))})
    found = subprocess.run(["find", str(Path(page.context.hub_homes) / user / "release")], capture_output=True, text=True)
    assert answer.status in (200, 201), answer.text() + found.stdout


def fetch_submit(page, hub: ClassHub, user: str, notebook: nbformat.NotebookNode) -> str:
    """Fetch in the Assignments tab, fill in, Validate, Submit; the validation's message."""
    open_assignments(page)
    released = page.locator("#released_assignments_list .list_item", has_text=ASSIGNMENT)
    released.locator("button", has_text="Fetch").click()
    fetched = page.locator("#fetched_assignments_list .list_item", has_text=ASSIGNMENT).first
    fetched.wait_for()
    shot(page, f"2-{user}-fetched.png")
    put_notebook(page, user, notebook)
    page.locator("#fetched_assignments_list a", has_text=ASSIGNMENT).first.click()   # show its notebooks
    page.locator("#fetched_assignments_list button", has_text="Validate").first.click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=300_000)
    message = dialog.inner_text()
    shot(page, f"3-{user}-validated.png")
    dialog.locator("button").last.click()
    page.locator("#fetched_assignments_list button", has_text="Submit").first.click()
    page.locator("#submitted_assignments_list .list_item", has_text=ASSIGNMENT).first.wait_for()
    shot(page, f"4-{user}-submitted.png")
    return message


# --- 1. the whole cycle in a browser ------------------------------------------------------------------------------

def test_the_whole_cycle_in_a_browser(running):
    hub, server = running
    executable = chromium_for_playwright(missing=required)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        students = {RIGHT: submissions.solved(ASSIGNMENT, written=True), HALF: submissions.half_done(ASSIGNMENT)}
        pages = {}
        for user in students:    # both log in and their servers start side by side
            pages[user] = login(browser, hub, user)
        for user, page in pages.items():
            try:
                wait_for_lab(page, user)
                page.locator(".jp-Notebook").first.wait_for()        # the landing page, index.ipynb
                time.sleep(2)   # a news pop-up, if any, shows within a second of the first start
                assert "official Jupyter news" not in page.inner_text("body")
                names = page.locator(".jp-DirListing-itemText").all_inner_texts()
                assert "index.ipynb" in names and "notebooks" in names, names
                assert not [n for n in names if n.endswith(".egg-info") or n in ("test-artifacts", "source",
                                                                                 "reference", "autograder")], names
                shot(page, f"1-{user}-landing-page.png")
                message = fetch_submit(page, hub, user, students[user][ASSIGNMENT])
                if user == RIGHT:
                    assert "Success" in message or "passed" in message.lower(), message
                else:
                    assert "failed" in message.lower() or "error" in message.lower(), message
            except BaseException:
                shot(page, f"failure-{user}.png")
                raise

        ta = login(browser, hub, TA)
        blocked: list[str] = []   # what the strict policy of Formgrader's pages refused: nothing of their own
        ta.on("console", lambda m: blocked.append(f"{m.location}: {m.text[:60]}") if "Content Security Policy" in m.text else None)
        try:
            wait_for_lab(ta, TA)
            ta.goto(at(hub, "/services/cs336-primitives/lab?formgrader=true"))
            frame = ta.frame_locator("#formgrader-iframe iframe")
            frame.locator("text=Manage Assignments").first.wait_for(timeout=120_000)
            frame.locator(f"text={ASSIGNMENT}").first.wait_for(timeout=60_000)
            shot(ta, "5-ta-formgrader-in-jupyterlab.png")
            assert blocked == [], blocked
            # the grader's JupyterLab runs no code: no kernel to start, no terminal to open
            specs = api(ta, "GET", "/services/cs336-primitives/api/kernelspecs")
            assert specs.status == 200 and not specs.json()["kernelspecs"], specs.text()
            started = api(ta, "POST", "/services/cs336-primitives/api/kernels", {"name": "cs336-primitives"})
            assert started.status >= 400 and "xsrf" not in started.text().lower(), started.text()
            terminal = api(ta, "POST", "/services/cs336-primitives/api/terminals")
            assert terminal.status >= 400 and "xsrf" not in terminal.text().lower(), terminal.text()
        except BaseException:
            shot(ta, "failure-ta.png")
            print("refused by the policy:", blocked)
            raise

        env = grader_env(hub)
        submit_hostile(hub, HOSTILE)
        grade(hub, f"nbgrader collect {ASSIGNMENT}")
        graded = grade(hub, "make grade")
        (ARTIFACTS / "make-grade.log").write_text(graded.stdout + graded.stderr)
        autograde_in_formgrader(ta, hub, HOSTILE)
        hostile = as_user(hub.grader, ["python", "-c", (
            "from nbgrader.api import Gradebook\n"
            "with Gradebook('sqlite:///gradebook.db') as gb:\n"
            f"    print(gb.find_submission_notebook('{ASSIGNMENT}', '{ASSIGNMENT}', '{HOSTILE}').id)")],
            env, cwd=hub.course).stdout.strip()
        users = who_may_do_what(hub)
        prof = login(browser, hub, PROF)
        wait_for_lab(prof, PROF)
        for staff in (ta, prof):   # the TA and the instructor open the hostile submission for manual grading
            opened_safely(staff, at(hub, f"/services/cs336-primitives/formgrader/submissions/{hostile}/"))
        prof.context.close()
        assert who_may_do_what(hub) == users, "the hub's users or their roles changed"

        comment = "Good work on the optimizer state; see the note on task 4."
        submission = as_user(hub.grader, ["python", "-c", (
            "from nbgrader.api import Gradebook\n"
            "with Gradebook('sqlite:///gradebook.db') as gb:\n"
            f"    print(gb.find_submission_notebook('{ASSIGNMENT}', '{ASSIGNMENT}', '{HALF}').id)")],
            env, cwd=hub.course).stdout.strip()
        try:
            ta.goto(at(hub, f"/services/cs336-primitives/formgrader/submissions/{submission}/"))
            ta.wait_for_load_state("networkidle")   # its grades and comments loaded: the boxes save what is typed
            box = ta.locator("textarea.comment").first
            box.fill(comment)
            box.press("Tab")
            ta.locator(".comment-saved").first.wait_for(state="visible", timeout=30_000)
            shot(ta, "6-ta-manual-comment.png")
        except BaseException:
            shot(ta, "failure-ta-comment.png")
            raise

        grade(hub, f"nbgrader generate_feedback {ASSIGNMENT}")
        grade(hub, f"nbgrader release_feedback {ASSIGNMENT}")
        for user, page in pages.items():
            page.reload()
            wait_for_lab(page, user)
            open_assignments(page)
            page.locator("#submitted_assignments_list button", has_text="Fetch Feedback").first.click()
            page.locator("#submitted_assignments_list a", has_text="view feedback").first.wait_for()
            shot(page, f"7-{user}-feedback.png")
            feedback = list((Path(hub.homes) / user / "release" / ASSIGNMENT / "feedback").rglob("*.html"))
            assert len(feedback) == 1, feedback
            html = feedback[0].read_text()
            assert (comment in html) == (user == HALF)
        browser.close()


HOSTILE = f"hubt-{LOAD_STUDENTS - 3:03d}"   # the last load student, who first submits a notebook that attacks its grader
PWNED = "pwned-by-a-student"
ATTACK = f"""import os, pathlib, shutil
for target in (pathlib.Path({{course!r}}) / {PWNED!r}, pathlib.Path("/tmp") / {PWNED!r}):
    try:
        target.write_text(os.popen("id").read())
    except Exception as error:
        print("refused:", target, error)
try:
    shutil.copytree(pathlib.Path({{course!r}}) / "source", pathlib.Path("/tmp") / ({PWNED!r} + "-source"))
except Exception as error:
    print("refused: copying source/", error)
"""


def who_may_do_what(hub: ClassHub) -> dict[str, tuple]:
    """Each user of the hub: admin or not, roles, groups."""
    users = json.loads(hub_request(hub, "/hub/api/users?limit=500", hub.admin_token)[1])
    return {u["name"]: (u["admin"], sorted(u["roles"]), sorted(u["groups"])) for u in users}


def opened_safely(page, url: str) -> None:
    """Open `url` (a submission carrying staff_page_payloads): the payloads are on the page as text, none ran, none
    fetched its canary."""
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url))
    try:
        page.goto(url)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(500)
        assert "window.__pwned='md-script'" in page.inner_text("body"), "the submission's markdown is on the page"
        assert page.evaluate("typeof window.__pwned") == "undefined", page.evaluate("window.__pwned")
        assert [u for u in sent if "/canary/" in u] == []
    except BaseException:
        shot(page, "failure-hostile-submission.png")
        raise


def submit_hostile(hub: ClassHub, student: str) -> None:
    """The student submits exercise 7 solved, its first answer cell starting with ATTACK (write into the course
    and /tmp as whoever runs it, copy source/ out), and every payload class of tests/submissions.py's
    `staff_page_payloads` added for whoever opens it in Formgrader."""
    notebook = submissions._first_task_only(ASSIGNMENT, ATTACK.format(course=str(hub.course)))[ASSIGNMENT]
    payloads = submissions.staff_page_payloads(ASSIGNMENT)[ASSIGNMENT]   # and markup for staff to open (issue #46)
    notebook.cells += payloads.cells[len(notebook.cells):]
    folder = f"release/{ASSIGNMENT}"
    as_user(student, ["sh", "-c", f"mkdir -p {folder} && cat > {folder}/{ASSIGNMENT}.ipynb"], student_env(hub),
            input=nbformat.writes(notebook), hub=hub)
    for name, content in submissions.STAFF_PAGE_FILES.items():   # her files beside it, for staff to open (#58)
        as_user(student, ["sh", "-c", f"cat > {folder}/{name}"], student_env(hub), input=content.decode("latin-1"),
                hub=hub)
    as_user(student, ["nbgrader", "submit", ASSIGNMENT], student_env(hub), hub=hub)


def autograde_in_formgrader(ta, hub: ClassHub, student: str) -> None:
    """The TA clicks Autograde on the student's row in Formgrader's Manage Submissions: the course's sandboxed
    grader grades it (its log says so), and the attack in it wrote nothing and copied nothing."""
    try:
        ta.goto(at(hub, f"/services/cs336-primitives/formgrader/manage_submissions/{ASSIGNMENT}"))
        row = ta.locator("tr", has=ta.locator("td.student-id", has_text=re.compile(f"^{student}$")))
        row.locator("td.autograde a").click()
        modal = ta.locator("#success-modal, #error-modal")
        modal.wait_for(timeout=600_000)
        shot(ta, "6-ta-autograde.png")
        text = modal.inner_text()
    except BaseException:
        shot(ta, "failure-ta-autograde.png")
        raise
    assert ta.locator("#success-modal").count() == 1, text
    assert "python -m autograder.grade" in text, text
    for path in (hub.course / PWNED, Path("/tmp") / PWNED, Path("/tmp") / f"{PWNED}-source"):
        assert not path.exists(), f"the student's code wrote {path} when the TA clicked Autograde"
    ta.locator(".modal-footer button").first.click()


# --- 2. nobody gets in where they don't belong ---------------------------------------------------------------------

def hub_request(hub: ClassHub, path: str, token: str, method: str = "GET", body: dict | None = None) -> tuple[int, str]:
    # to the hub's listener, named as the origin that serves `path` (this machine resolves no *.localhost)
    request = urllib.request.Request(hub.url + path, method=method, headers={
                                         "Authorization": f"token {token}", "Host": hub.origin(path).split("://")[1]},
                                     data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def token_of(hub: ClassHub, user: str) -> str:
    """An API token of `user` (the hub's admin API, as an instructor would issue one): it carries that user's
    own permissions, nothing more."""
    status, body = hub_request(hub, f"/hub/api/users/{user}/tokens", hub.admin_token, "POST", {"note": "access test"})
    assert status in (200, 201), body
    return json.loads(body)["token"]


def refused(hub: ClassHub, user: str, shell: str) -> str:
    """Run `shell` as `user`; it must fail, and what it printed is returned (the error seen)."""
    done = as_user(user, ["sh", "-c", shell], student_env(hub), check=False, hub=hub)
    assert done.returncode != 0, f"as {user}, `{shell}` succeeded:\n{done.stdout}"
    return done.stderr + done.stdout


def in_her_server(hub: ClassHub, user: str, command: list[str]) -> subprocess.CompletedProcess:
    """`command` run as `user` inside her server's namespaces (mount, PID), as her terminal would run it (her server
    started first if it is not running)."""
    if hub_request(hub, f"/hub/api/users/{user}/server", hub.admin_token, "POST")[0] in (201, 202):
        wait_for_server(hub, user, running=True)

    def init_of_her_namespace() -> int | None:
        for pid in hub.cgroup(user).pids():
            try:
                ids = Path(f"/proc/{pid}/status").read_text().split("NSpid:")[1].splitlines()[0].split()
            except (OSError, IndexError):
                continue
            if len(ids) > 1 and ids[-1] == "1" and b"tini" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        return None
    init = init_of_her_namespace()
    assert init, f"no server of {user} runs: {hub.cgroup(user).pids()}"
    account = pwd.getpwnam(user)
    return subprocess.run(["nsenter", f"--target={init}", "--mount", "--pid", f"--setuid={account.pw_uid}",
                           f"--setgid={account.pw_gid}", "--", *command], capture_output=True, text=True, timeout=60)


def test_nobody_gets_in_where_they_do_not_belong(running):
    hub, server = running
    # her own processes, and only those, in ps and top (her server's /proc is her PID namespace's, issue #58)
    listed = in_her_server(hub, RIGHT, ["ps", "-eww", "-o", "pid,user,args"])
    assert listed.returncode == 0, listed.stderr
    assert "jupyterhub-singleuser" in listed.stdout and "configurable-http-proxy" not in listed.stdout and \
        HALF not in listed.stdout, listed.stdout
    assert in_her_server(hub, RIGHT, ["top", "-b", "-n", "1"]).returncode == 0
    other = Path(hub.homes) / HALF
    exchange = Path(hub.exchange) / "cs336-primitives"
    # somebody else's work: their home, their notebook
    q = shlex.quote   # nbgrader's submission folders have spaces in their names
    assert "Permission denied" in refused(hub, RIGHT, f"ls {q(str(other))}")
    assert "Permission denied" in refused(hub, RIGHT, f"cat {q(f'{other}/release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb')}")
    # the exchange: a student's inbound folder is their own disk's; another's can be neither listed nor reached,
    # and a known submission neither overwritten nor deleted
    mine = as_user(RIGHT, ["ls", "-a", str(exchange / "inbound")], student_env(hub), hub=hub).stdout.splitlines()
    assert mine and all(name in (".", "..") or name.startswith(RIGHT + "+") for name in mine), mine
    assert "Permission denied" in refused(hub, RIGHT, f"ls {q(str(hub.disk(HALF).inbound))}")
    theirs = sorted(p for p in hub.disk(HALF).inbound.iterdir() if p.name.startswith(HALF + "+"))
    assert theirs, "the browser test's submission of the half-done student is on their disk"
    notebook = theirs[-1] / f"{ASSIGNMENT}.ipynb"
    before = notebook.read_bytes()
    assert "Permission denied" in refused(hub, RIGHT, f"echo stolen > {q(str(notebook))}")
    assert "Permission denied" in refused(hub, RIGHT, f"rm -rf {q(str(theirs[-1]))}")
    assert notebook.read_bytes() == before
    assert "Permission denied" in refused(hub, RIGHT, f"ls {q(str(exchange / 'feedback'))}")
    # their feedback: nbgrader finds feedback by the hash of the submitter's own secret, so asking for another
    # student's brings nothing of theirs
    as_user(RIGHT, ["nbgrader", "fetch_feedback", ASSIGNMENT, f"--student={HALF}"], student_env(hub), check=False,
            hub=hub)
    mine = Path(hub.homes) / RIGHT / "release" / ASSIGNMENT / "feedback"
    assert not any("see the note on task 4" in p.read_text() for p in mine.rglob("*.html"))
    # the shared environment every account runs (the grader and Formgrader included): no .pth file planted in it,
    # no package removed from it with the installer it was built by (uv, beside pip)
    site = next((hub.env / "lib").glob("python3*/site-packages"))
    refused(hub, RIGHT, f"echo 'import os' > {q(str(site / 'zz-planted.pth'))}")
    refused(hub, RIGHT, f"{q(str(hub.env / 'bin' / 'python'))} -m uv pip uninstall --no-cache --python "
                        f"{q(str(hub.env / 'bin' / 'python'))} einops")
    assert (site / "einops").is_dir() and not (site / "zz-planted.pth").exists()
    # the instructor's course
    for inside in ("source", "reference", "autograded", "gradebook.db", "submitted"):
        assert "Permission denied" in refused(hub, RIGHT, f"ls {q(str(hub.course / inside))}")
    # the hub: Formgrader, the admin API, somebody else's server (running) through the proxy
    status, _ = hub_request(hub, f"/hub/api/users/{HALF}/server", hub.admin_token, "POST")
    assert status in (201, 202, 400), status   # 400: already running
    token = token_of(hub, RIGHT)
    assert hub_request(hub, f"/user/{RIGHT}/api/status", token)[0] == 200, "the student's own token works"
    for path in ("/services/cs336-primitives/formgrader", "/services/cs336-primitives/api/contents",
                 "/hub/api/users", f"/hub/api/users/{HALF}", f"/user/{HALF}/api/contents/release"):
        status, body = hub_request(hub, path, token)
        assert status in (403, 404), f"{RIGHT} reached {path}: {status} {body[:200]}"
        assert status == 403 or "services" not in path, (path, status)


def test_staff_sessions_cannot_rewrite_what_grades(running):
    """Issue #46: through Formgrader's file API a TA's session (and the instructor's) reads the course but writes
    nothing: not the configuration nbgrader runs, not the grader's code, no module planted on its Python path. The
    grader account itself cannot change them either (they are root's), so no later nbgrader command or Autograde
    runs anything a web session wrote. Every Formgrader page carries the strict policy (autograder/staff_pages.py)."""
    hub, server = running
    guarded = {name: (hub.course / name).read_bytes() for name in ("nbgrader_config.py", "autograder/__init__.py",
                                                                   "Makefile", "autograder/limits.toml")}
    contents = "/services/cs336-primitives/api/contents"
    for who in (STAFF[0], PROF):
        token = token_of(hub, who)
        status, body = hub_request(hub, f"{contents}/nbgrader_config.py", token)
        assert status == 200 and "get_config" in body, (who, status, body[:200])   # staff may read the course
        file = {"type": "file", "format": "text", "content": "import os; os.system('id > /tmp/pwned')\n"}
        for method, path, data in [("PUT", "nbgrader_config.py", file), ("PUT", "autograder/__init__.py", file),
                                   ("PUT", "json.py", file), ("PATCH", "Makefile", {"path": "Makefile.old"}),
                                   ("DELETE", "autograder/limits.toml", None), ("POST", "", {"type": "file"})]:
            status, body = hub_request(hub, f"{contents}/{path}", token, method, data)
            assert status == 403, f"{who}: {method} {path}: {status} {body[:200]}"
        page = "/services/cs336-primitives/formgrader/manage_students"
        request = urllib.request.Request(hub.url + page, headers={"Authorization": f"token {token}",
                                                                  "Host": hub.origin(page).split("://")[1]})
        with urllib.request.urlopen(request, timeout=60) as answer:
            policy = answer.headers["Content-Security-Policy"]
        assert "script-src 'nonce-" in policy and "'unsafe-inline'" not in policy.split("style-src")[0], policy
    q = shlex.quote
    for shell in (f"echo 'import os' >> {q(str(hub.course / 'nbgrader_config.py'))}",
                  f"echo 'import os' > {q(str(hub.course / 'autograder' / '__init__.py'))}",
                  f"mv {q(str(hub.course / 'autograder'))} {q(str(hub.course / 'moved'))}",
                  f"rm -f {q(str(hub.course / 'Makefile'))}"):
        done = as_user(hub.grader, ["sh", "-c", shell], grader_env(hub), check=False)
        assert done.returncode != 0, f"the grader account could: {shell}"
    assert {name: (hub.course / name).read_bytes() for name in guarded} == guarded
    assert not (hub.course / "json.py").exists() and not Path("/tmp/pwned").exists()


FORMGRADER = "/services/cs336-primitives"
# What no staff session may do on Formgrader, each tried with a TA's token (issue #58): run code, change the grader's
# settings or configuration, open her files as active content
OFF_ON_FORMGRADER = [
    ("POST", "/assignments/validate", {"path": f"submitted/{HOSTILE}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"}),
    ("POST", "/api/kernels", {"name": "cs336-primitives"}), ("POST", "/api/sessions", {
        "path": f"submitted/{HOSTILE}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", "type": "notebook", "name": "",
        "kernel": {"name": "cs336-primitives"}}),
    ("POST", "/api/terminals", None), ("GET", f"/nbconvert/html/submitted/{HOSTILE}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", None),
    ("POST", f"/api/contents/submitted/{HOSTILE}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb/trust", None),
    ("PUT", "/lab/api/settings/@jupyterlab/apputils-extension:themes", {"raw": "{}"}),
    ("PUT", "/lab/api/workspaces/pwned", {"data": {}, "metadata": {"id": "pwned"}}),
    ("PUT", "/api/config/notebook", {"load_extensions": {"pwned": True}}),
    ("POST", "/lab/api/extensions", {"cmd": "install", "extension_name": "pwned"}),
    ("POST", "/api/shutdown", None), ("GET", "/lsp/ws/pylsp", None),
]


def capabilities(pid: int) -> dict[str, str]:
    status = Path(f"/proc/{pid}/status").read_text()
    return {key: value.strip() for key, value in (line.split(":", 1) for line in status.splitlines())
            if key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Uid")}


def test_formgrader_runs_and_serves_nothing_a_student_wrote(running):
    """Issue #58, on the hub: Formgrader's live route table is classified whole; every route that would run code or
    change the grader's settings is refused to a TA; her files come as inert downloads; Formgrader and everything in
    its cgroup hold no capability; the grader account can neither move the course away nor plant code that the course
    would run, and a process it starts does not outlive the hub."""
    hub, server = running
    runtime = Path(hub.homes) / hub.grader / ".local" / "share" / "jupyter" / "runtime"
    inventory = json.loads(max(runtime.glob("staff-routes-*.json"), key=lambda p: p.stat().st_mtime).read_text())
    (ARTIFACTS / "formgrader-routes.json").write_text(json.dumps(inventory, indent=1))
    assert inventory["server"] == "formgrader" and len(inventory["routes"]) > 100
    assert [route for route in inventory["routes"] if not route["classified"]] == []
    token = token_of(hub, TA)
    for method, path, body in OFF_ON_FORMGRADER:
        status, text = hub_request(hub, FORMGRADER + path, token, method, body)
        assert status in (403, 404), (method, path, status, text[:300])
    written = Path(hub.homes) / hub.grader / ".jupyter"
    assert not any(written.rglob("*")) and not (Path(hub.prefix) / "grader-config" / "lab").exists()
    # her files, collected beside her notebook: downloads, sandboxed, never a script source
    for name in ("evil.html", "evil.svg", "evil.xml", "figure.png", "README"):
        path = f"{FORMGRADER}/files/submitted/{HOSTILE}/{ASSIGNMENT}/{name}"
        request = urllib.request.Request(hub.url + path, headers={"Authorization": f"token {token}",
                                                                  "Host": hub.origin(path).split("://")[1]})
        with urllib.request.urlopen(request, timeout=60) as answer:
            headers = answer.headers
        policy = headers["Content-Security-Policy"].split(",")[0]
        assert "; sandbox" in policy and "'self'" not in policy.split("script-src")[1].split(";")[0], (name, policy)
        assert headers["X-Content-Type-Options"] == "nosniff", name
        assert headers.get("Content-Disposition", "").startswith("attachment") or \
            headers["Content-Type"].split(";")[0] in ("text/plain", "image/png"), (name, dict(headers))
    # Formgrader and all it started: in its own cgroup, no capability, no way to gain one
    inside = hub.formgrader_cgroup.pids()
    assert inside, "Formgrader runs in its own cgroup"
    for pid in inside:
        held = capabilities(pid)
        assert all(int(held[key], 16) == 0 for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")), held
        assert held["NoNewPrivs"] == "1", held
    q = shlex.quote
    grader = pwd.getpwnam(hub.grader)
    bind_80 = "import socket; socket.socket().bind(('127.0.0.1', 80))"
    for shell in (f"mv {q(str(hub.course))} {q(str(hub.course))}.old", f"mkdir {q(str(hub.course))}.new",
                  f"echo x > {q(str(written / 'jupyter_server_config.py'))}",
                  f"mkdir -p {q(str(Path(hub.homes) / hub.grader / '.local' / 'lib' / 'python3.11'))}",
                  f"echo x >> {q(str(Path(hub.homes) / hub.grader / '.profile'))}",
                  f"ln -sf /tmp {q(str(hub.course / '.code' / 'json'))}",
                  f"{q(str(hub.env / 'bin' / 'python'))} -c {q(bind_80)}"):
        done = as_user(hub.grader, ["sh", "-c", shell], grader_env(hub), check=False)
        assert done.returncode != 0, f"the grader account could: {shell}"
    # a module it plants in the course folder (1770: its gradebook and results go there) is never imported: the
    # course's code comes from the root-owned .code, and nbgrader_config.py refuses to run beside it
    planted = hub.course / "csv.py"
    marker = Path(hub.homes) / hub.grader / ".cache" / "planted-module-ran"
    as_user(hub.grader, ["sh", "-c", f"cat > {q(str(planted))}"], grader_env(hub),
            input=f"open({str(marker)!r}, 'w').write('ran')\n")
    try:
        refused = as_user(hub.grader, ["nbgrader", "db", "student", "list"], grader_env(hub), cwd=hub.course,
                          check=False)
        assert refused.returncode != 0 and "csv.py" in refused.stdout + refused.stderr, refused
        imported = as_user(hub.grader, ["python", "-c", "import csv, autograder.course; print(csv.__file__)"],
                           grader_env(hub), cwd=hub.course)
        assert "/course/" not in imported.stdout and ".code/autograder" in as_user(
            hub.grader, ["python", "-c", "import autograder; print(autograder.__file__)"], grader_env(hub),
            cwd=hub.course).stdout
        assert not marker.exists()
    finally:
        planted.unlink(missing_ok=True)
    # a process the grader account started under Formgrader (in its cgroup) ends with the hub
    sleeper = subprocess.Popen(["setpriv", "--reuid", str(grader.pw_uid), "--regid", str(grader.pw_gid),
                                "--init-groups", "sleep", "600"],
                               preexec_fn=lambda: hub.formgrader_cgroup.join(os.getpid()), start_new_session=True)
    try:
        server.restart()
        assert sleeper.wait(timeout=60) is not None
        for _ in range(120):   # Formgrader is back, in its cgroup
            if hub_request(hub, f"{FORMGRADER}/api/status", token)[0] == 200:
                break
            time.sleep(1)
        assert hub_request(hub, f"{FORMGRADER}/api/status", token)[0] == 200 and hub.formgrader_cgroup.pids()
    finally:
        if sleeper.poll() is None:
            sleeper.kill()


STUDENT_PAGE = """<!doctype html><title>homework help</title><script>
const done = {{}};
const put = (url, body, extra) => fetch(url, {{method: "PUT", credentials: "include", body: JSON.stringify(body),
    headers: {{"Content-Type": "application/json", ...(extra || {{}})}}}}).then(r => r.status, e => String(e));
// the visitor's own server (a TA's has no jail): <name>.<domain>, the name after the page's #
const other = location.hash.slice(1);
const classmate = location.protocol + "//" + other + ".{domain}" + (location.port ? ":" + location.port : "");
window.attack = (async () => {{
  // cookie tossing: an _xsrf cookie for every sibling origin, and the same value as the header
  document.cookie = "_xsrf=tossed; domain={domain}; path=/";
  const tossed = {{"X-XSRFToken": "tossed"}};
  done.admin = await fetch("{hub}/hub/api/users/{me}", {{method: "PATCH", credentials: "include",
      body: JSON.stringify({{admin: true}}), headers: {{"Content-Type": "application/json", ...tossed}}}})
      .then(r => r.status, e => String(e));
  done.grade = await fetch("{formgrader}/services/cs336-primitives/formgrader/api/student/{me}", {{method: "PUT",
      credentials: "include", body: JSON.stringify({{first_name: "pwned", last_name: "x", email: null}}),
      headers: tossed}}).then(r => r.status, e => String(e));
  done.read_formgrader = await fetch("{formgrader}/services/cs336-primitives/api/contents/source",
      {{credentials: "include"}}).then(r => r.text(), e => String(e));
  done.read_classmate = await fetch(`${{classmate}}/user/${{other}}/api/contents`, {{credentials: "include"}})
      .then(r => r.text(), e => String(e));
  done.write_classmate = await put(`${{classmate}}/user/${{other}}/api/contents/pwned.txt`,
      {{type: "file", format: "text", content: "pwned"}}, tossed);
  done.terminal = await fetch(`${{classmate}}/user/${{other}}/api/terminals`, {{method: "POST", credentials: "include",
      headers: tossed}}).then(r => r.status, e => String(e));
  // a "simple" request, sent with the visitor's cookies and no preflight: only the XSRF check stands in its way,
  // and the tossed cookie's value is in the form (the server's terminals, checked below, say whether it got in)
  await fetch(`${{classmate}}/user/${{other}}/api/terminals`, {{method: "POST", credentials: "include", mode: "no-cors",
      headers: {{"Content-Type": "application/x-www-form-urlencoded"}}, body: "_xsrf=tossed"}}).catch(e => e);
  const frame = document.createElement("iframe");
  frame.src = "{formgrader}/services/cs336-primitives/formgrader/manage_students";
  document.body.appendChild(frame);
  await new Promise(resolve => setTimeout(resolve, 3000));
  try {{ done.framed = frame.contentDocument ? frame.contentDocument.body.innerText : "no document"; }}
  catch (e) {{ done.framed = String(e); }}
  return done;
}})();
</script>"""


def test_a_page_a_student_serves_reaches_no_one(running):
    """Issue #46: a student serves her own HTML from her server (extra_static_paths in her ~/.jupyter, no login
    needed to see it) and gets a TA, then a classmate, to open it. Her page is on her server's own origin, so it
    can neither read Formgrader, the hub or the visitor's own server (a TA's has no jail), nor write through them
    with the visitor's session, a tossed XSRF cookie included, nor frame Formgrader."""
    hub, server = running
    executable = chromium_for_playwright(missing=required)
    from playwright.sync_api import sync_playwright
    home = Path(hub.homes) / RIGHT
    page_html = STUDENT_PAGE.format(domain=hub.domain, hub=hub.public_url, me=RIGHT,
                                    formgrader=hub.origin("/services/cs336-primitives/"))
    script = (f"mkdir -p {home}/.jupyter {home}/www && cat > {home}/www/help.html && echo "
              f"\"c.ServerApp.extra_static_paths = ['{home}/www']\" > {home}/.jupyter/jupyter_server_config.py")
    as_user(RIGHT, ["sh", "-c", script], student_env(hub), hub=hub, input=page_html)
    for method in ("DELETE", "POST"):   # her server again, with her configuration
        status, body = hub_request(hub, f"/hub/api/users/{RIGHT}/server", hub.admin_token, method)
        assert status in (201, 202, 204), (method, status, body)
        for _ in range(120):
            ready = hub_request(hub, f"/hub/api/users/{RIGHT}", hub.admin_token)[1]
            if ('"pending": null' in ready or '"pending":null' in ready) and \
                    (method == "DELETE") != ('"ready": true' in ready or '"ready":true' in ready):
                break
            time.sleep(1)
    url = at(hub, f"/user/{RIGHT}/static/help.html")
    before = who_may_do_what(hub)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        for visitor in (TA, HALF):
            page = login(browser, hub, visitor)
            wait_for_lab(page, visitor)
            if visitor == TA:   # a live Formgrader session in this browser
                page.goto(at(hub, "/services/cs336-primitives/formgrader/manage_students"))
                page.locator(f"text={RIGHT}").first.wait_for()
            page.goto(f"{url}#{visitor}")   # the page goes for the visitor's own server too
            done = page.evaluate("window.attack")
            print(f"\n{visitor} opened {url}: {done}")
            for write in ("admin", "grade", "write_classmate", "terminal"):   # refused, or never sent (CORS)
                assert done[write] == "TypeError: Failed to fetch" or done[write] >= 400, (write, done[write])
            for read in ("read_formgrader", "read_classmate", "framed"):
                assert "Failed to fetch" in done[read] or "Blocked a frame" in done[read] or \
                    "no document" in done[read] or "403" in done[read], (read, done[read][:300])
            page.context.close()
        browser.close()
    user = json.loads(hub_request(hub, f"/hub/api/users/{RIGHT}", hub.admin_token)[1])
    assert user["admin"] is False and user["roles"] == ["user"], user
    assert who_may_do_what(hub) == before
    for visitor in (TA, HALF):
        assert not (Path(hub.homes) / visitor / "pwned.txt").exists()
        terminals = hub_request(hub, f"/user/{visitor}/api/terminals", token_of(hub, visitor))
        assert terminals == (200, "[]"), (visitor, terminals)
    first = as_user(hub.grader, ["python", "-c", (
        "from nbgrader.api import Gradebook\n"
        f"with Gradebook('sqlite:///gradebook.db') as gb: print(gb.find_student('{RIGHT}').first_name)")],
        grader_env(hub), cwd=hub.course).stdout.strip()
    assert first != "pwned", first


def test_the_exchange_takes_a_submission_only_from_the_account_that_made_it(running):
    """Issue #32's attacks on the exchange, each tried as the student would, from their own processes."""
    hub, server = running
    exchange, course = Path(hub.exchange) / "cs336-primitives", hub.course
    for folder, mode in (("", 0o755), ("outbound", 0o755), ("inbound", 0o1733), ("feedback", 0o711)):
        info = (exchange / folder).stat()   # made by `make hub`, before any student could log in
        assert (info.st_uid, info.st_mode & 0o7777) == (pwd.getpwnam(hub.grader).pw_uid, mode), (folder, oct(info.st_mode))
    theirs = course / "submitted" / HALF / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    before = theirs.read_bytes()
    q, inbound = shlex.quote, exchange / "inbound"
    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    mine = f"{RIGHT}+{ASSIGNMENT}+2098-01-01 00:00:00.000000 UTC+x"
    attacks = [
        f"nbgrader submit {ASSIGNMENT} --student={HALF}",                               # submitted as the classmate
        f"mkdir {q(f'{inbound}/{HALF}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+y')} && "   # a folder in their name
        f"cp release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb {q(f'{inbound}/{HALF}+{ASSIGNMENT}+2099-01-01 00:00:00.000000 UTC+y')}/",
        f"mkdir {q(f'{inbound}/{mine}')} && cd {q(f'{inbound}/{mine}')} && "         # links to the solutions and to
        f"ln -s {q(str(source))} {ASSIGNMENT}.ipynb && ln -s {q(str(theirs))} classmate.ipynb && "  # the classmate's
        f"mkfifo pipe && head -c 30000000 /dev/zero > big.bin && echo '2098-01-01 00:00:00.000000 UTC' > timestamp.txt",
        f"mkdir {q(f'{inbound}/zz+{ASSIGNMENT}+not-a-time')}",                                # a malformed entry
    ]
    for attack in attacks:
        as_user(RIGHT, ["sh", "-c", attack], student_env(hub), hub=hub)
    # what no student can do any more: make or change the course's folders, reach the grader's files, list others
    claimed = sorted(hub.disk(HALF).inbound.iterdir())[-1]   # renamed to claim it, had its name leaked
    for attack in (f"mkdir {q(str(exchange))}-squatted", f"mkdir {q(str(exchange / 'outbound' / 'x'))}",
                   f"ln {q(str(source))} stolen.ipynb", f"ls {q(str(hub.disk(HALF).inbound))}",
                   f"mv {q(str(claimed))} {q(str(inbound / claimed.name.replace(HALF, RIGHT, 1)))}"):
        assert re.search("Permission denied|Read-only file system", refused(hub, RIGHT, attack)), attack
    collected = as_user(hub.grader, ["nbgrader", "collect", "--update", ASSIGNMENT], grader_env(hub), cwd=course)
    report = collected.stdout + collected.stderr
    (ARTIFACTS / "collect-attacks.log").write_text(report)
    assert report.count(f"made by {RIGHT}, not by {HALF} (foreign entry)") == 2, report
    assert f"'zz+{ASSIGNMENT}+not-a-time': 'not-a-time' is not a time (malformed name)" in report, report
    for left_out in (f"{ASSIGNMENT}.ipynb: a symbolic link", "classmate.ipynb: a symbolic link",
                     "pipe: not a regular file", "big.bin: 30.0 MB, over the 20 MB limit"):
        assert f"Left out of {RIGHT}'s submission: {left_out}" in report, (left_out, report)
    assert theirs.read_bytes() == before, "the classmate's collected submission is untouched"
    taken = course / "submitted" / RIGHT / ASSIGNMENT
    # its time is the exchange's, not the 2098 its timestamp.txt claimed (issue #47), the claim kept beside it
    assert sorted(p.name for p in taken.iterdir()) == ["timestamp-claimed.txt", "timestamp.txt"], list(taken.iterdir())
    assert (taken / "timestamp-claimed.txt").read_text().startswith("2098-01-01")
    assert (taken / "timestamp.txt").read_text().startswith(time.strftime("%Y-%m-%d", time.gmtime()))
    assert f"{RIGHT}'s timestamp.txt says '2098-01-01 00:00:00.000000 UTC', but the submission reached" in report
    assert not any("BEGIN SOLUTION" in p.read_text(errors="replace") for p in (course / "submitted").rglob("*.ipynb"))
    print(f"\nexchange attacks: {report.count('Skipped')} entries skipped, {report.count('Left out')} files left out, "
          "the classmate's submission unchanged")


def test_nothing_is_shared_between_students(running):
    """Issue #47: SysV shared memory a student makes dies with her processes (an IPC namespace per jail), her /proc
    shows only her own processes, and sixteen busy loops of hers take no more of the CPU than a classmate's one."""
    hub, server = running
    uid = pwd.getpwnam(RIGHT).pw_uid
    made = as_user(RIGHT, ["sh", "-c", "ipcmk -M 262144 && ipcs -m | grep -c 262144"], student_env(hub), hub=hub)
    assert made.stdout.strip().endswith("1"), made.stdout   # made, and hers while she ran
    host = subprocess.run(["ipcs", "-m", "-c"], capture_output=True, text=True).stdout
    assert not [line for line in host.splitlines() if f" {RIGHT} " in f" {line} "], host
    seen = as_user(RIGHT, ["python3", "-c", "import os; print(sorted({os.stat(f'/proc/{p}').st_uid "
                                              "for p in os.listdir('/proc') if p.isdigit()}))"], student_env(hub), hub=hub)
    assert json.loads(seen.stdout) == [uid], seen.stdout   # not the hub, Formgrader or a classmate's server
    # nor the host's /proc under hers, unmounted from a user namespace of her own (its mounts are locked)
    refused(hub, RIGHT, "unshare -Urm sh -c 'umount -l /proc && ls /proc | grep -q ^1$'")
    # Both students pin their loops to one and the same CPU (any process may narrow its own affinity), so the contest
    # is the same on 2 cores or 64, and the rest of the suite's load on that CPU slows both groups alike.
    spin = ("import os, resource, sys, time\n"
            "n, seconds = int(sys.argv[1]), float(sys.argv[2])\n"
            "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
            "for _ in range(n):\n"
            "    if os.fork() == 0:\n"
            "        end = time.monotonic() + seconds\n"
            "        while time.monotonic() < end: pass\n"
            "        os._exit(0)\n"
            "for _ in range(n): os.wait()\n"
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(min(os.sched_getaffinity(0)), usage.ru_utime + usage.ru_stime)\n")
    busy: list = []
    loops = threading.Thread(target=lambda: busy.append(as_user(RIGHT, ["python3", "-c", spin, "16", "4"],
                                                               student_env(hub), hub=hub)))
    loops.start()
    time.sleep(0.5)
    mine = as_user(HALF, ["python3", "-c", spin, "1", "3"], student_env(hub), hub=hub)
    loops.join()
    (their_cpu, theirs), (our_cpu, ours) = (busy[0].stdout.split(), mine.stdout.split())
    assert their_cpu == our_cpu, (their_cpu, our_cpu)   # one CPU, or the contest below means nothing
    theirs, ours = float(theirs), float(ours)
    speedup = (ours / 3) / (theirs / (16 * 4))   # CPU seconds per second: his one loop's, over each of her sixteen's
    print(f"\nCPU {our_cpu}: {RIGHT}'s 16 loops {theirs:.2f} s in 4 s, {HALF}'s one loop {ours:.2f} s in 3 s; "
          f"his loop ran {speedup:.1f}x as fast as each of hers")
    # Without a share per student all seventeen loops run at one speed (1x). With equal shares his one loop gets half
    # the CPU while both run, each of her sixteen 1/32 of it: about 13x (the second she runs alone included).
    assert speedup > 4, (ours, theirs)


# --- 3. one student exhausts their limits --------------------------------------------------------------------------

def test_one_student_exhausting_their_limits_leaves_the_others_working(running):
    hub, server = running
    hog, other = hub.students[4], hub.students[5]
    cgroup = hub.cgroup(HALF)
    servers = subprocess.run(["pgrep", "-u", HALF, "-f", "jupyterhub-singleuser"], capture_output=True, text=True)
    pid = servers.stdout.split()[0]
    assert f"{cgroup.group}/{HALF}" in Path(f"/proc/{pid}/cgroup").read_text(), "the spawner put the server in its cgroup"
    memory = as_user(hog, ["python", "-c", "import os; hoard = os.urandom(1 << 20) * 1100"], student_env(hub),
                     check=False, hub=hub)
    assert memory.returncode == -9 or memory.returncode == 137, (memory.returncode, memory.stderr)
    disk = as_user(hog, ["sh", "-c", "head -c 300000000 /dev/zero > fill; head -c 10000000 /dev/zero > /tmp/fill"],
                   student_env(hub), check=False, hub=hub)
    assert disk.stderr.count("No space left on device") == 2, disk.stderr
    fork = ("import os, time\nforked = 0\nfor _ in range(400):\n    try:\n        if os.fork() == 0:\n"
            "            time.sleep(120)\n            os._exit(0)\n        forked += 1\n    except OSError:\n"
            "        pass\nprint(forked, flush=True)\ntime.sleep(120)\n")
    bomb = subprocess.Popen(["tini", "-s", "--", "tini", "-s", "--", "runuser", "-u", hog, "--",
                             str(hub.env / "bin" / "python"), "-c", fork],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=hub.jail_for(hog))
    try:
        forked = int(bomb.stdout.readline())
        tasks = hub.cgroup(hog).charged()
        assert tasks == 200 and forked < 200, (tasks, forked)
        # while the hog is at every cap: another student's server answers, a submission goes in, the grader collects
        assert hub_request(hub, f"/user/{HALF}/api/status", token_of(hub, HALF))[0] == 200
        as_user(other, ["nbgrader", "fetch_assignment", ASSIGNMENT], student_env(hub), hub=hub)
        submitted = as_user(other, ["nbgrader", "submit", ASSIGNMENT], student_env(hub), check=False, hub=hub)
        collected = as_user(hub.grader, ["nbgrader", "collect", "--update", ASSIGNMENT, f"--student={other}"],
                            grader_env(hub), cwd=hub.course, check=False)
    finally:
        hub.cgroup(hog).kill()
        bomb.wait()
        as_user(hog, ["rm", "-f", "fill", "/tmp/fill"], student_env(hub), hub=hub)
    assert submitted.returncode == 0, submitted.stderr[-2000:]
    assert collected.returncode == 0 and (hub.course / "submitted" / other / ASSIGNMENT).is_dir(), collected.stderr[-2000:]
    # pids.current can still count the last task for a moment after the command returned (seen once, in a fresh
    # clone's run on a loaded machine); a task still counted after 10 s is one that nobody reaps.
    deadline = time.monotonic() + 10
    while hub.cgroup(hog).charged() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not hub.cgroup(hog).charged(), "nothing of the hog left, not even a zombie"
    print(f"\nlimits: {hog} killed at 768 MiB, refused at 200 tasks ({forked} of 400 forks) and at its 200 MiB disk; "
          f"meanwhile {HALF}'s server answered, {other} submitted and the grader collected")


# --- 4. a class submits at once ------------------------------------------------------------------------------------

def test_a_class_submits_at_once_and_nothing_is_lost(running):
    hub, server = running
    big = hub.students[3]   # a file over nbgrader's Exchange.max_file_size beside the notebook: left out at submit
    as_user(big, ["sh", "-c", f"mkdir -p release/{ASSIGNMENT} && head -c 21000000 /dev/zero > release/{ASSIGNMENT}/big.bin"],
            student_env(hub), hub=hub)
    load = submit_class(hub, hub.students[2:], workers=6, twice=1, in_the_middle=lambda: squat_then_restart(hub, server))
    assert not load.problems, "\n".join(load.problems)
    print(f"\n{len(load.submitted)} accounts: {load.per_second:.2f} submissions/s; collect "
          f"{load.collect_seconds[0]:.1f} s (middle), {load.collect_seconds[1]:.1f} s (end)")
    # the one who submitted twice: both copies kept in the exchange, the later one collected (checked above)
    twice = hub.students[2]
    kept = [p for p in hub.disk(twice).inbound.iterdir() if p.name.startswith(twice + "+")]
    assert len(kept) == 2, kept
    theirs = [p for p in hub.disk(big).inbound.iterdir() if p.name.startswith(big + "+")]
    assert (theirs[0] / f"{ASSIGNMENT}.ipynb").exists() and not (theirs[0] / "big.bin").exists()
    # after the restart the hub still knows everyone, and the groups
    status, body = hub_request(hub, "/hub/api/users?limit=500", hub.admin_token)
    assert status == 200 and {u["name"] for u in json.loads(body)} >= set(hub.students) | set(STAFF) | {PROF}
    status, body = hub_request(hub, "/hub/api/groups/formgrade-cs336-primitives", hub.admin_token)
    assert status == 200 and set(json.loads(body)["users"]) == set(STAFF) | {PROF}


def squat_then_restart(hub: ClassHub, server: HubProcess) -> None:
    """The hub stopped (as for the manual's restart): a student tries to take each of its listeners, and cannot;
    a port taken all the same (by root, here: nobody else can) makes `start` refuse, naming it; then it starts."""
    server.stop()
    squatter = hub.students[6]
    for port in (hub.port, hub.hub_port, hub.proxy_api_port, hub.service_port):
        take = f"import socket; socket.socket().bind(('127.0.0.1', {port}))"
        assert "Permission denied" in refused(hub, squatter, f"python -c {shlex.quote(take)}"), port
    with socket.socket() as squat:
        squat.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squat.bind(("127.0.0.1", hub.port))
        squat.listen()
        done = subprocess.run([sys.executable, str(REPO / "scripts" / "class_hub.py"), "start", "--prefix", hub.prefix],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"the hub's public port 127.0.0.1:{hub.port} is taken by python" in done.stderr, done.stderr
    # a listener that fails once the hub runs (Formgrader, its course folder moved away): refused, the hub stopped
    away = hub.course.with_name("course.away")
    hub.course.rename(away)
    starting = subprocess.Popen([sys.executable, str(REPO / "scripts" / "class_hub.py"), "start", "--prefix",
                                 hub.prefix, "--timeout", "15"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
    try:
        out, err = starting.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        process_group.stop(starting)
        process_group.stop_pid_file(hub.state / "jupyterhub-proxy.pid", "configurable-http-proxy")
        out, err = starting.communicate(timeout=30)
    finally:
        away.rename(hub.course)
    # JupyterHub itself exits when a managed service does not start; what would listen in its place is checked too
    assert starting.returncode == 3 and "class hub: refusing to run, stopping JupyterHub:" in err, out[-3000:] + err[-3000:]
    assert re.search(f"Formgrader {hub.service_port}: nothing listens|JupyterHub exited \\(1\\)", err), err[-3000:]
    assert hub.port not in tcp_listeners(), "the refused hub is stopped, its proxy with it"
    server.start()


# --- 5. the end of term --------------------------------------------------------------------------------------------

def test_a_submission_is_timed_by_the_exchange_not_by_the_student(running):
    """Issue #47: a student back-dates her submission after submitting it (her timestamp.txt, on her own disk, is hers
    to edit). Collect writes the time the exchange received it (the kernel's change times, which no student can set
    back), keeps her claim beside it and names it; late penalties read timestamp.txt."""
    hub, server = running
    student = "hubt-010"   # she has the exercise (test_a_class_submits_at_once_and_nothing_is_lost): again
    as_user(student, ["nbgrader", "submit", ASSIGNMENT], student_env(hub), hub=hub)
    entry = max(hub.disk(student).inbound.glob(f"{student}+{ASSIGNMENT}+*"), key=lambda p: p.name)
    submitted_at = (entry / "timestamp.txt").read_text().strip()
    back = "2026-01-01 00:00:00.000000 UTC"
    mine = shlex.quote(str(hub.inbound / entry.name / "timestamp.txt"))   # where she sees it: the exchange's inbound
    as_user(student, ["sh", "-c", f"rm -f {mine} && echo '{back}' > {mine}"], student_env(hub), hub=hub)
    collected = as_user(hub.grader, ["nbgrader", "collect", "--update", "--student", student, ASSIGNMENT],
                        grader_env(hub), cwd=hub.course)
    taken = hub.course / "submitted" / student / ASSIGNMENT
    assert (taken / "timestamp-claimed.txt").read_text().strip() == back, collected.stdout + collected.stderr
    recorded = (taken / "timestamp.txt").read_text().strip()
    assert recorded >= submitted_at[:19], (recorded, submitted_at)   # when it arrived (and was edited), not January
    assert f"{student}'s timestamp.txt says '{back}'" in collected.stdout + collected.stderr


def test_a_dropped_student_loses_her_login_and_keeps_her_work(running):
    """Issue #47: `make hub` again with a roster that no longer names her: her password, her token and her running
    server are gone at once, her home and disk stay for the instructor, and a name the roster does not hold gets no
    server at all. The same restart turns on a short idle timeout: an idle server stops, as one does on logout."""
    hub, server = running
    dropped, idle, leaving = "hubt-005", "hubt-006", "hubt-007"
    token = token_of(hub, dropped)
    assert hub_request(hub, f"/hub/api/users/{dropped}/server", hub.admin_token, "POST")[0] in (201, 202)
    wait_for_server(hub, dropped, running=True)
    as_user(dropped, ["sh", "-c", "echo my work > ~/essay.txt"], student_env(hub), hub=hub)
    server.stop()
    roster = (REPO / "students.csv").read_text().splitlines()
    (REPO / "students.csv").write_text("\n".join(line for line in roster if not line.startswith(f"{dropped},")) + "\n")
    os.environ["HUB_ARGS"] += f" --idle-timeout 20 --max-age {MAX_AGE}"
    server.start(command=["bash", "-e", "-c", HUB_COMMAND], cwd=REPO, timeout=600)
    hub = server.hub = ClassHub.load(PREFIX)
    assert dropped not in hub.students and hub.idle_timeout == 20 and hub.max_age == MAX_AGE
    assert hub_request(hub, "/hub/api/user", token)[0] in (401, 403), "her token is gone"
    assert hub_request(hub, f"/hub/api/users/{dropped}", hub.admin_token)[0] == 404, "JupyterHub forgot her"
    assert not hub.cgroup(dropped).pids(), "nothing of hers runs"
    status = subprocess.run(["passwd", "--status", dropped], capture_output=True, text=True).stdout.split()
    assert status[1] == "L", status   # her password no longer opens anything
    assert (Path(hub.homes) / dropped / "essay.txt").read_text() == "my work\n", "her work is kept"
    # a name outside the roster that JupyterHub knows again (her, added back by the admin API) gets no server
    assert hub_request(hub, f"/hub/api/users/{dropped}", hub.admin_token, "POST")[0] == 201
    assert hub_request(hub, f"/hub/api/users/{dropped}/server", hub.admin_token, "POST")[0] >= 400
    assert not hub.cgroup(dropped).pids()
    assert hub_request(hub, f"/hub/api/users/{dropped}", hub.admin_token, "DELETE")[0] == 204
    # an idle server stops by itself; a server stops when its user logs out
    executable = chromium_for_playwright(missing=required)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        page = login(browser, hub, dropped)
        assert "/hub/login" in page.url and "/lab" not in page.url, page.url   # refused at the door
        page.context.close()
        assert hub_request(hub, f"/hub/api/users/{idle}/server", hub.admin_token, "POST")[0] in (201, 202)
        wait_for_server(hub, idle, running=True)
        page = login(browser, hub, leaving)
        wait_for_lab(page, leaving)
        page.goto(f"{hub.public_url}/hub/logout")
        wait_for_server(hub, leaving, running=False, timeout=60)
        browser.close()
    wait_for_server(hub, idle, running=False, timeout=120)


MAX_AGE = 75   # seconds: the dropped student's restart sets it, with an idle timeout of 20 s


def server_environment(hub: ClassHub, user: str) -> dict[str, str]:
    """The environment of `user`'s running server (its jupyterhub-singleuser process), as root reads it."""
    for pid in hub.cgroup(user).pids():
        try:
            if b"jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)
        except OSError:
            continue
    raise AssertionError(f"no server of {user} runs")


def test_the_culler_keeps_a_busy_kernel_and_caps_a_servers_life(running):
    """Issue #58: with the idle timeout of 20 s, a server whose kernel computes silently (busy, no tab, no output) is
    not stopped as idle; a server whose student reports activity herself, with her server's own token, stops all the
    same once it is MAX_AGE old (the culler's --max-age)."""
    hub = ClassHub.load(PREFIX)   # as the dropped student's test set it up again: idle timeout 20 s, MAX_AGE
    assert hub.idle_timeout == 20 and hub.max_age == MAX_AGE, "the dropped student's test set them"
    busy, chatty, idle = "hubt-008", "hubt-009", "hubt-010"
    for user in (busy, chatty, idle):
        assert hub_request(hub, f"/hub/api/users/{user}/server", hub.admin_token, "POST")[0] in (201, 202)
    for user in (busy, chatty, idle):
        wait_for_server(hub, user, running=True)
    started = time.monotonic()
    # her own reports of activity, every 5 s, with the token her server holds: from the start, or the culler
    # stops her server as idle while the busy student's kernel is still starting (seen under load)
    own_token = server_environment(hub, chatty)["JUPYTERHUB_API_TOKEN"]
    stop, answers = threading.Event(), []

    def report() -> None:
        while not stop.is_set():
            now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
            answers.append(hub_request(hub, f"/hub/api/users/{chatty}/activity", own_token, "POST",
                                       {"last_activity": now, "servers": {"": {"last_activity": now}}})[0])
            stop.wait(5)
    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    client = None
    try:
        # her kernel, started through her server's API and told to compute for ten minutes without a word
        token = token_of(hub, busy)
        status, body = hub_request(hub, f"/user/{busy}/api/kernels", token, "POST", {"name": "cs336-primitives"})
        assert status == 201, body
        from jupyter_client import BlockingKernelClient
        connection = Path(hub.homes) / busy / ".local" / "share" / "jupyter" / "runtime" / f"kernel-{json.loads(body)['id']}.json"
        for _ in range(60):
            if connection.exists():
                break
            time.sleep(1)
        client = BlockingKernelClient(connection_file=str(connection))
        client.load_connection_file()
        client.start_channels()
        client.execute("import time\ntime.sleep(600)")
        kernel = json.loads(body)["id"]
        for _ in range(60):   # under load the request can reach a kernel still starting: wait until it computes
            answer = hub_request(hub, f"/user/{busy}/api/kernels/{kernel}", token)
            if answer[0] == 200 and json.loads(answer[1]).get("execution_state") == "busy":
                break
            time.sleep(1)
        wait_for_server(hub, idle, running=False, timeout=MAX_AGE - 5)   # idle: stopped after 20-30 s
        assert time.monotonic() - started < MAX_AGE - 5
        wait_for_server(hub, busy, running=True, timeout=5)              # busy, silent: kept
        wait_for_server(hub, chatty, running=True, timeout=5)            # her reports count as activity ...
        assert 200 in answers, answers
        wait_for_server(hub, chatty, running=False, timeout=MAX_AGE + 60)  # ... until its age stops it
        assert time.monotonic() - started >= MAX_AGE - 15
    finally:
        stop.set()
        if client is not None:
            client.stop_channels()


def wait_for_server(hub: ClassHub, user: str, running: bool, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        model = json.loads(hub_request(hub, f"/hub/api/users/{user}", hub.admin_token)[1])
        server = model.get("servers", {}).get("")
        if running == bool(server and server.get("ready")) and not (server or {}).get("pending"):
            return
        time.sleep(1)
    raise AssertionError(f"{user}'s server {'did not start' if running else 'still runs'} after {timeout:.0f} s")


def sysv_ipc_of(uids: set[int]) -> list[str]:
    """The SysV IPC objects (the host's) that one of `uids` owns or created (/proc/sysvipc)."""
    found = []
    for kind in ("shm", "sem", "msg"):
        header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        names = header.split()
        for row in rows:
            fields = dict(zip(names, row.split()))
            if {int(fields["uid"]), int(fields["cuid"])} & uids:
                found.append(f"{kind}: {row}")
    return found


def test_the_end_of_term_archives_then_removes_everything(running):
    hub, server = running
    class_uids = {pwd.getpwnam(n).pw_uid for n in hub.students + STAFF + [PROF] if account_exists(n)}
    # staff and the grader work outside any jail: what they leave in the machine's shared /tmp and /dev/shm (#58)
    for name in (TA, PROF, hub.grader):
        as_user(name, ["sh", "-c", "mkdir -p /tmp/left-$USER/deep && touch /tmp/left-$USER/deep/x /dev/shm/left-$USER "
                                   "/var/tmp/left-$USER"], {"PATH": "/usr/bin:/bin"})
    staff_uids = {pwd.getpwnam(n).pw_uid for n in (TA, PROF, hub.grader)}
    server.stop()
    archives = Path(PREFIX) / "archive"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "class_hub.py"), "end-term", "--prefix", hub.prefix,
                           "--archive", str(archives)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    path = Path(re.search(r"end of term: archive (\S+)", done.stdout).group(1))
    with tarfile.open(path) as tar:
        names = tar.getnames()
    for wanted in ("gradebook.db", ".gradebook-ledger.json", "gradebook-export.csv", f"feedback/{HALF}/{ASSIGNMENT}",
                   f"autograded/{RIGHT}/{ASSIGNMENT}", f"submitted/{HALF}/{ASSIGNMENT}", "roster.csv"):
        assert any(n.startswith(f"cs336-primitives/{wanted}") for n in names), (wanted, names[:20])
    assert (path.stat().st_mode & 0o777) == 0o600
    for name in hub.students + STAFF + [PROF, hub.grader]:
        assert not account_exists(name), name
    for gone in (hub.state, Path(hub.exchange) / "cs336-primitives", Path(PREFIX) / "disks"):
        assert not gone.exists(), gone
    mounts = Path("/proc/self/mountinfo").read_text()
    assert f" {PREFIX}/" not in mounts and hub.homes not in mounts, "no disk of the class is mounted"
    assert not hub.cgroup(RIGHT).pids()
    assert not hub.cgroup("hubt-005").pids() and not hub.cgroup("hubt-005").folders[0].exists(), "the dropped one's too"
    assert not sysv_ipc_of(class_uids), "no shared memory, semaphore or queue of the class is left"
    assert not [p for root in ("/tmp", "/dev/shm", "/var/tmp") for p in Path(root).glob("left-*")
                if p.lstat().st_uid in staff_uids], "nothing of the class's accounts left in the shared /tmp"
    again = subprocess.run([sys.executable, str(REPO / "scripts" / "class_hub.py"), "end-term", "--prefix", hub.prefix,
                            "--archive", str(archives)], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout + again.stderr
    print(f"\nend of term: {path.name}, {len(names)} entries, {path.stat().st_size / 1e6:.1f} MB; "
          f"{len(hub.students) + len(STAFF) + 2} accounts, the hub's state and the exchange's course removed")
