"""A class on one machine: JupyterHub with one unix account per student, nbgrader's exchange, Formgrader as a
JupyterHub service for the instructor and TAs (the single-machine layout of The Littlest JupyterHub).

    sudo make hub ROSTER=students.csv STAFF=ta1,ta2 INSTRUCTOR=prof       set up what is missing, then run the hub
    sudo python3 scripts/class_hub.py setup --roster students.csv --staff ta1,ta2 --instructor prof [--prefix P]
    sudo python3 scripts/class_hub.py start [--prefix P]                  run the hub (the state survives restarts)
    sudo python3 scripts/class_hub.py end-term [--prefix P] [--archive D]  end of term: archive, then remove
    sudo python3 scripts/class_hub.py prepare [--prefix P]                only the shared parts: course, env, proxy

It must run as root: it creates unix accounts, and JupyterHub starts each user's server as that user
(LocalProcessSpawner) and Formgrader as the grader account. What it lays out, under the prefix (/opt/cs336-hub):

    env/             one Python environment for the hub and every user (as TLJH's /opt/tljh/user): the student
                     edition's `utils` and pinned packages, CPU torch, JupyterHub; readable by all, writable by root
    proxy/           configurable-http-proxy, JupyterHub's standard proxy, from npm (pinned)
    course/          the student edition, read-only: brought into a student's home at each start of their server
                     (jupyterhub/start-course.sh: new and unedited files, never their own work)
    student-config/  JUPYTER_CONFIG_PATH of user servers: the students' nbgrader config (exchange, Assignments
                     tab), no Formgrader or assignment creation
    grader-config/   JUPYTER_CONFIG_PATH of the grader's shell and Formgrader: Formgrader's tab may frame itself, its
                     Autograde runs the sandboxed grader, collect takes a submission from its owner only
    disks/           root and the grader's group (0750): each student's disk, <id>.img (sparse ext4 of the disk
                     limit), mounted at disks/<id>/ with home/ (bound at /home/<id>), tmp/ and inbound/
                     (scripts/student_jail.py)
    state/           root only (0700): class.json (this class), JupyterHub's database and cookie secret, the
                     proxy's token, the passwords it set, the hub's log, the spawner's student_jail.py

and outside it: the accounts' homes (/home/<id>, mode 0700), the grader account `grader-<course>` whose home holds
the instructor's course (a copy of this repository: source/, reference/, the gradebook), nbgrader's exchange
(/srv/nbgrader/exchange, 1777, with the course's folders made here as the grader's: inbound sticky), each student's
cgroup (<course>-<prefix's name>/<id>, memory and tasks), and the archive of a finished term
(/var/backups/cs336-hub).

Every student process runs confined (student_jail.enter, for their server and for `as_user`): their cgroup, a mount
namespace where only their disk is writable and the exchange's inbound is their own inbound/. Every listener is a
port below 1024 (the hub 80, its API 801, the proxy's API 802, Formgrader 803), which no student can bind.

Why a script and not only configuration: JupyterHub, the proxy, the spawner and nbgrader do the serving, spawning,
exchanging and grading; what none of them does is turn a roster into accounts, build one environment every
account can run, copy the course where each side needs it, and give each student a disk and limits of their own
on a machine without systemd or disk quotas. That is all this file (and student_jail.py) does.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # autograder.student_edition, run as a script from any folder
from autograder.course import CODE_PACKAGES  # noqa: E402
from autograder.student_edition import build as build_student_edition  # noqa: E402
from scripts import process_group  # noqa: E402
from scripts import student_jail as jail  # noqa: E402

COURSE_ID = "cs336-primitives"
PROXY_PACKAGE = "configurable-http-proxy@5.3.0"   # JupyterHub's standard proxy, pinned (npm)
ACCOUNT_MARK = f"{COURSE_ID} class account"       # the comment (GECOS) of accounts this script created
FORMGRADER_CGROUP = "staff.formgrader"            # jupyterhub/formgrader_launch.py's CGROUP (no roster id has a dot)
USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")  # what useradd accepts everywhere (Debian's default rule)
DISABLED_FOR_USERS = {  # nbgrader's instructor parts, off in every user's server (students and TAs alike)
    "server": ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"],
    "lab": ["@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:course-list"],
}
# JupyterLab's defaults for the whole hub: no "be notified about official Jupyter news?" pop-up on a first start
LAB_OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}


class ClassError(Exception):
    """Bad input or a machine that cannot host the class: the message says what to do. Nothing was changed
    beyond what the message says."""


@dataclass
class ClassHub:
    """One class's hub: what `setup` was given, kept in <prefix>/state/class.json for `start` and the tests."""
    prefix: str
    students: list[str]
    staff: list[str]                 # TAs: Formgrader service, their own server
    instructor: str                  # like a TA, and the hub's admin
    homes: str = "/home"
    exchange: str = "/srv/nbgrader/exchange"
    ip: str = "0.0.0.0"
    # Each user's server and Formgrader on an origin of its own (JupyterHub's subdomain_host): the hub at
    # <domain>, a user's server at <name>.<domain>, Formgrader at cs336-primitives--service.<domain>, so that no page
    # a student serves shares an origin with the hub, Formgrader or a classmate. `localhost` works on one machine
    # (browsers resolve *.localhost to loopback); a real class needs wildcard DNS and TLS (docs/hub.md).
    domain: str = "localhost"
    # A server idle this long (no kernel busy, no browser tab talking to it) is stopped by jupyterhub-idle-culler, and
    # every server stops when its user logs out: nothing of a student runs on unattended.
    idle_timeout: int = 3600         # seconds
    # However much activity a server reports (its student can report some with her server's own token), it stops
    # this long after it started: her work is saved on her disk, her kernels end.
    max_age: int = 12 * 3600         # seconds
    # Every listener is on a port below 1024, which only root can bind (Formgrader, run by the grader account, is
    # given that one right, CAP_NET_BIND_SERVICE), so nobody stands in for the hub while it is stopped, and `start`
    # refuses to run when one of them is taken or failed. (JupyterHub's services must be http(s): no unix socket.)
    port: int = 80                   # the hub's public port
    hub_port: int = 801              # the hub's internal API (loopback)
    proxy_api_port: int = 802        # the proxy's REST API (loopback)
    service_port: int = 803          # the Formgrader service (loopback)
    authenticator: str = "pam"       # the unix passwords; docs/hub.md: LTI 1.3 or OAuth for a real class
    limits: dict = field(default_factory=lambda: asdict(jail.Limits()))   # each student's caps (student_jail.Limits)
    created: list[str] = field(default_factory=list)   # accounts this script made (removed at the end of term)
    admin_token: str = field(default_factory=lambda: secrets.token_hex(32))  # the class-admin service's token

    @property
    def grader(self) -> str:
        return f"grader-{COURSE_ID}"[:32]

    @property
    def env(self) -> Path:
        return Path(self.prefix) / "env"

    @property
    def state(self) -> Path:
        return Path(self.prefix) / "state"

    @property
    def course(self) -> Path:
        """The instructor's course: the grader account's copy of this repository."""
        return Path(self.homes) / self.grader / "course"

    @property
    def url(self) -> str:
        """Where the hub listens on this machine (for checks from this machine, whatever the names say)."""
        host = "127.0.0.1" if self.ip in ("0.0.0.0", "") else self.ip
        return f"http://{host}:{self.port}"

    @property
    def public_url(self) -> str:
        """The hub's origin, as browsers reach it: http://<domain>[:port]."""
        return f"http://{self.domain}" + ("" if self.port == 80 else f":{self.port}")

    def origin(self, path: str) -> str:
        """The origin that serves `path`: /user/<name>/... on <name>.<domain>, /services/<name>/... on
        <name>--service.<domain>, the rest on the hub's (JupyterHub's default subdomain hook, for names that are
        DNS labels already, as roster ids and the course id are unless they hold '_' or '--')."""
        parts = path.strip("/").split("/")
        label = {"user": "{}", "services": "{}--service"}.get(parts[0]) if len(parts) > 1 else None
        if label is None:
            return self.public_url
        if not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", parts[1]) or "--" in parts[1]:
            raise ClassError(f"{parts[1]!r} is no DNS label: JupyterHub encodes it (jupyterhub.utils.subdomain_hook_idna)")
        return self.public_url.replace("://", f"://{label.format(parts[1])}.", 1)

    @property
    def inbound(self) -> Path:
        """The exchange's inbound folder; in a student's processes, their own disk's inbound/ is mounted on it."""
        return Path(self.exchange) / COURSE_ID / "inbound"

    @property
    def inboxes(self) -> str:
        """The glob of the students' own inbound folders, where collect finds their submissions."""
        return str(Path(self.prefix) / "disks" / "*" / "inbound")

    def disk(self, student: str) -> jail.Disk:
        return jail.Disk(Path(self.prefix) / "disks", student, Path(self.homes) / student)

    def cgroup(self, student: str) -> jail.Cgroup:
        return jail.Cgroup(f"{COURSE_ID}-{Path(self.prefix).name}", student)

    @property
    def formgrader_cgroup(self) -> jail.Cgroup:
        """Formgrader's cgroup and everything it starts (jupyterhub/formgrader_launch.py puts it there)."""
        return jail.Cgroup(f"{COURSE_ID}-{Path(self.prefix).name}", FORMGRADER_CGROUP)

    def jail_for(self, student: str):
        """The function that confines a student's process (root, between fork and exec): student_jail.enter."""
        disk, cgroup, limits = self.disk(student), self.cgroup(student), jail.Limits(**self.limits)
        return lambda: jail.enter(cgroup, disk, str(self.inbound), limits)

    def save(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o700)
        path = self.state / "class.json"
        path.write_text(json.dumps(asdict(self), indent=1))
        path.chmod(0o600)

    @classmethod
    def load(cls, prefix: str | Path) -> "ClassHub":
        path = Path(prefix) / "state" / "class.json"
        if not path.exists():
            raise ClassError(f"no class set up in {prefix} ({path} is missing): run `make hub ROSTER=...` first")
        saved = json.loads(path.read_text())
        return cls(**{k: v for k, v in saved.items() if k in cls.__dataclass_fields__})


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run a command, stopping with what it printed when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise ClassError(f"`{' '.join(map(str, command))}` failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done


def as_user(user: str, command: list[str], env: dict[str, str], cwd: str | Path | None = None,
            check: bool = True, timeout: float | None = None, input: str | None = None,
            hub: "ClassHub | None" = None) -> subprocess.CompletedProcess:
    """Run `command` as the unix account `user` (util-linux's runuser), with exactly `env` plus HOME and USER,
    in `cwd` (default: the account's home). A student of `hub` runs confined as their server is (student_jail)."""
    home = pwd.getpwnam(user).pw_dir
    full = ["runuser", "-u", user, "--", "env", "-i", f"HOME={home}", f"USER={user}", f"LOGNAME={user}"]
    full += [f"{k}={v}" for k, v in env.items()] + list(command)
    confine = hub.jail_for(user) if hub is not None and user in hub.students else None
    if confine:   # as in their server: the inner tini is the init of their PID namespace (student_jail.enter)
        full = ["tini", "-s", "--", "tini", "-s", "--"] + full
    done = subprocess.run(full, cwd=cwd or home, capture_output=True, text=True, timeout=timeout, input=input,
                          preexec_fn=confine)
    if check and done.returncode != 0:
        raise ClassError(f"as {user}: `{' '.join(command)}` failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done


# --- the roster -------------------------------------------------------------------------------------------------

def read_roster(path: Path) -> list[str]:
    """The student ids of an `nbgrader db student import` CSV (columns id, first_name, last_name, email; only id
    is required). Each id becomes a unix account, so it must be a valid unix name, and appear once."""
    if not path.is_file():
        raise ClassError(f"roster {path} not found (a CSV with an `id` column, as `nbgrader db student import` takes)")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "id" not in rows[0]:
        raise ClassError(f"roster {path}: no `id` column (the header must name it: id,first_name,last_name,email)")
    ids, problems = [], []
    for line, row in enumerate(rows, start=2):
        student = (row["id"] or "").strip()
        if not USERNAME.match(student):
            problems.append(f"line {line}: {student!r} is not a valid unix account name (lower-case letters, digits,"
                            " '_' and '-', starting with a letter or '_', at most 32)")
        elif student in ids:
            problems.append(f"line {line}: {student!r} appears twice")
        else:
            ids.append(student)
    if problems:
        raise ClassError(f"roster {path}: nothing was set up:\n  " + "\n  ".join(problems))
    return ids


# --- unix accounts ----------------------------------------------------------------------------------------------

def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def is_class_account(name: str) -> bool:
    try:
        return pwd.getpwnam(name).pw_gecos == ACCOUNT_MARK
    except KeyError:
        return False


def create_account(name: str, homes: str) -> bool:
    """Create the unix account `name` with a private group and a home only it can read (0700). An existing
    account is left exactly as it is (False): the class uses it, and `remove-accounts` never removes it."""
    if account_exists(name):
        return False
    home = Path(homes) / name
    run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash", "--user-group",
         "--comment", ACCOUNT_MARK, name])
    home.chmod(0o700)
    return True


def set_passwords(passwords: dict[str, str]) -> None:
    """Unix passwords for the accounts (the PAM login of the hub), through chpasswd's standard input."""
    if passwords:
        run(["chpasswd"], input="".join(f"{user}:{word}\n" for user, word in passwords.items()))


def remove_account(name: str) -> None:
    """Stop the account's processes and remove it with its home, if this script created it."""
    if not is_class_account(name):
        return
    for _ in range(50):   # its servers and kernels first: userdel refuses an account with processes
        if subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True).returncode == 1:
            break         # none left
        time.sleep(0.1)
    # SysV IPC objects it made outside a jail (a student's server has an IPC namespace of its own, gone with it):
    # removed, so that no later account given the same numeric id finds them
    subprocess.run(["runuser", "-u", name, "--", "ipcrm", "--all"], capture_output=True)
    run(["userdel", "--remove", "--force", name])


# --- the shared environment and the proxy -----------------------------------------------------------------------

def python_for_everyone() -> str:
    """A Python 3.11+ that every account may run. A root-only Python (pyenv under /root, as on our CI machine)
    cannot run a student's server, so the hub does not use the one running this script unless it can."""
    candidates = [os.environ.get("HUB_PYTHON"), sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"]
    check = "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"
    for python in filter(None, candidates):
        if Path(python).exists() and subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", check],
                                                    capture_output=True).returncode == 0:
            return python
    raise ClassError("no Python 3.11+ with venv that every account can run (HUB_PYTHON=/path/to/python3 names one); "
                     "on Debian/Ubuntu: apt-get install -y python3 python3-venv")


def hub_pins() -> list[str]:
    """JupyterHub's pin and its idle culler's, from pyproject.toml's `hub` extra (one place for every version the
    course uses)."""
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["hub"]


def install_course(prefix: Path) -> None:
    """The student edition, read-only in <prefix>/course, with release/ empty: exercises arrive through
    nbgrader's exchange (the Assignments tab), not with the course."""
    course = prefix / "course"
    with tempfile.TemporaryDirectory() as scratch:
        edition = build_student_edition(Path(scratch) / "edition")
        if course.exists():
            shutil.rmtree(course)
        shutil.copytree(edition, course, ignore=shutil.ignore_patterns(".student-edition"))
    for exercise in (course / "release").iterdir():
        shutil.rmtree(exercise)


def install_env(prefix: Path) -> None:
    """One environment for the hub and every user: the edition's pinned packages (CPU torch), its `utils`
    (editable, from the read-only course), the course kernel and JupyterHub. Rebuilt only when what it was built
    from changes (its stamp holds the edition's pyproject.toml and JupyterHub's pin)."""
    course, env = prefix / "course", prefix / "env"
    wanted = (course / "pyproject.toml").read_text() + " ".join(hub_pins())
    stamp = env / ".installed"
    if not (stamp.exists() and (env / ".hub-stamp").exists() and (env / ".hub-stamp").read_text() == wanted):
        if env.exists():
            shutil.rmtree(env)
        run([python_for_everyone(), "-m", "venv", str(env)])
        python = str(env / "bin" / "python")
        print(f"installing the course and {', '.join(hub_pins())} into {env} (a few minutes the first time) ...",
              flush=True)
        run([python, str(course / "scripts" / "install_env.py"), "--package", str(course), "--torch", "cpu",
             *[arg for pin in hub_pins() for arg in ("--also", pin)]])
        run([python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "cs336-primitives",
             "--display-name", "Python (cs336 primitives)"])
        (env / ".hub-stamp").write_text(wanted)
    for egg in course.glob("*.egg-info"):  # the editable install's build record: not for students' homes
        shutil.rmtree(egg)
    settings = env / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES, indent=1))
    stamp.touch()  # newer than the courses' pyproject.toml: `make progress` and `make grade` install nothing


def install_proxy(prefix: Path) -> Path:
    """configurable-http-proxy from npm into <prefix>/proxy (once); its executable."""
    proxy = prefix / "proxy"
    executable = proxy / "node_modules" / ".bin" / "configurable-http-proxy"
    marker = proxy / ".package"
    if executable.exists() and marker.exists() and marker.read_text() == PROXY_PACKAGE:
        return executable
    if not (shutil.which("node") and shutil.which("npm")):
        raise ClassError("JupyterHub's proxy needs Node.js and npm: apt-get install -y nodejs npm")
    proxy.mkdir(parents=True, exist_ok=True)
    print(f"installing {PROXY_PACKAGE} from npm into {proxy} ...", flush=True)
    run(["npm", "install", "--prefix", str(proxy), "--no-audit", "--no-fund", "--loglevel=error", PROXY_PACKAGE])
    marker.write_text(PROXY_PACKAGE)
    return executable


def write_configs(hub: ClassHub) -> None:
    """JUPYTER_CONFIG_PATH folders: user servers (students and TAs) and the Formgrader service."""
    here = REPO / "jupyterhub"
    users = Path(hub.prefix) / "student-config"
    (users / "labconfig").mkdir(parents=True, exist_ok=True)
    shutil.copy2(here / "nbgrader_config_student.py", users / "nbgrader_config.py")
    (users / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {**{name: False for name in DISABLED_FOR_USERS["server"]},
                                               "busy_kernels": True}}}, indent=1))
    extensions = Path(hub.prefix) / "user-extensions"   # the users' servers' PYTHONPATH: a busy kernel is activity
    extensions.mkdir(exist_ok=True)
    shutil.copy2(here / "busy_kernels.py", extensions / "busy_kernels.py")
    (users / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {name: True for name in DISABLED_FOR_USERS["lab"]}}, indent=1))
    grader = Path(hub.prefix) / "grader-config"
    grader.mkdir(parents=True, exist_ok=True)
    # Formgrader's pages show students' work to staff: autograder/staff_pages.py sanitises it and puts a strict
    # Content-Security-Policy on every page (its `frame-ancestors 'self'` lets Formgrader's tab, an iframe of the
    # same server, show: JupyterHub 4.1+ sends 'none', jupyter/nbgrader#1870; students' servers keep that). Its
    # Autograde button runs the course's sandboxed grader (autograder/formgrader_autograde.py), never a student's
    # code in Formgrader's own process; its file API is read-only (autograder.staff_pages.ReadOnlyContents).
    # Every route it serves is classified for Formgrader in autograder/routes.py (StaffPages.server): Validate,
    # kernels, terminals, nbconvert off; settings, workspaces and configuration read-only. It listens on the socket
    # root binds for it (autograder.handed_socket, jupyterhub/formgrader_launch.py).
    (grader / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"autograder.formgrader_autograde": True, "autograder.staff_pages": True,
                                               "autograder.handed_socket": True},
                       "contents_manager_class": "autograder.staff_pages.ReadOnlyContents"},
         "StaffPages": {"server": "formgrader"}}, indent=1))
    # the grader's nbgrader (its shell and Formgrader): collect takes a submission from the account that made it
    shutil.copy2(here / "nbgrader_config_grader.py", grader / "nbgrader_config.py")
    # It is also the grader's JUPYTER_CONFIG_DIR, root's: Jupyter's one-time migration from IPython 3 looks for this
    # marker there and writes it if missing, which would fail; nothing else of Jupyter writes here unasked
    (grader / "migrated").write_text("")
    for folder in (users, grader, extensions):
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.copy2(here / "start-course.sh", Path(hub.prefix) / "course-start.sh")
    (Path(hub.prefix) / "course-start.sh").chmod(0o755)
    shutil.copy2(here / "jupyterhub_config.py", hub.state / "jupyterhub_config.py")
    shutil.copy2(REPO / "scripts" / "student_jail.py", hub.state / "student_jail.py")  # the spawner's jail
    shutil.copy2(here / "formgrader_launch.py", hub.state / "formgrader_launch.py")   # Formgrader's start, as root


def install_grader_course(hub: ClassHub, roster: Path) -> None:
    """The grader account's course: this repository's files (tracked and new, as git sees them), owned by it,
    with the roster in its gradebook (`nbgrader db student import`). An existing course is kept as it is: it holds
    the gradebook and the class's submissions."""
    if not hub.course.exists():
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                capture_output=True)
        if listed.returncode == 0:
            for name in filter(None, listed.stdout.decode().split("\0")):
                source = REPO / name
                if source.is_file():
                    (hub.course / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, hub.course / name)
        else:  # a release tarball: no git
            shutil.copytree(REPO, hub.course, ignore=shutil.ignore_patterns(
                ".git", ".venv", "*.egg-info", "__pycache__", "test-artifacts", "submitted", "autograded", "feedback",
                "graded", "gradebook.db", "exchange"))
        # a login shell of the grader account (sudo -u grader-cs336-primitives -i) finds nbgrader, make grade's
        # environment and the shared exchange
        profile = Path(hub.homes) / hub.grader / ".profile"
        exports = "".join(f"export {k}={v}\n" for k, v in grader_env(hub).items())
        profile.write_text((profile.read_text() if profile.exists() else "") + "\n# the class hub\n" + exports)
        run(["chown", "-R", f"{hub.grader}:{hub.grader}", str(hub.course), str(profile)])
    shutil.copy2(roster, hub.state / "roster.csv")
    readable = Path(tempfile.mkdtemp(prefix="roster-"))
    try:
        shutil.copy2(roster, readable / "roster.csv")
        readable.chmod(0o755)
        (readable / "roster.csv").chmod(0o644)
        as_user(hub.grader, [str(hub.env / "bin" / "nbgrader"), "db", "student", "import", str(readable / "roster.csv")],
                grader_env(hub), cwd=hub.course)
    finally:
        shutil.rmtree(readable)


def dropped(hub: ClassHub) -> list[str]:
    """Accounts this script made for people no longer in the class (a student off the roster, a former TA)."""
    people = set(hub.students + hub.staff + [hub.instructor, hub.grader])
    return [name for name in hub.created if name not in people and account_exists(name)]


GRADER_DATA = ("source", "release", "submitted", "autograded", "feedback", "graded")  # the grader's to write


def lock_grader_code(hub: ClassHub) -> None:
    """What runs as the grader (the course's code, configuration, references, Makefile) becomes root's and read-only
    for the grader account, so nothing the grader account runs, Formgrader and any web session in it included, can
    rewrite what grades. The course folder is root's, group the grader's, sticky (1770): the grader still makes
    its own new entries there (the gradebook, autograded/, graded/, its log) but can neither change, rename nor
    remove root's. Its data folders (GRADER_DATA) and the gradebook stay its own. Run at every setup, so an
    existing course is locked too."""
    grader = pwd.getpwnam(hub.grader)
    course = hub.course
    for entry in course.iterdir():
        owned = entry.name in GRADER_DATA or entry.name.startswith(("gradebook.db", ".nbgrader"))
        run(["chown", "-R", f"{hub.grader}:{hub.grader}" if owned else "root:root", str(entry)])
        if not owned:
            run(["chmod", "-R", "u+rwX,go+rX,go-w", str(entry)])
    os.chown(course, 0, grader.pw_gid)
    course.chmod(0o1770)
    make_code_view(course)
    lock_grader_home(hub)


def make_code_view(course: Path) -> None:
    """<course>/.code: root's, holding only links to the course's packages (autograder.course.CODE_PACKAGES). The
    grader's processes import the course's code from there (PYTHONPATH, course.import_root), never from the course
    folder, where the grader account may add files; nbgrader_config.py refuses to run beside a module another account
    put there."""
    view = course / ".code"
    if view.is_symlink() or view.exists():
        shutil.rmtree(view) if view.is_dir() and not view.is_symlink() else view.unlink()
    view.mkdir(mode=0o755)
    os.chown(view, 0, 0)
    view.chmod(0o755)
    for package in CODE_PACKAGES:
        (view / package).symlink_to(Path("..") / package)


GRADER_WRITES = (".cache", ".local/share/jupyter/runtime")   # in its home: caches and Jupyter's runtime files


def lock_grader_home(hub: ClassHub) -> None:
    """The grader's home becomes root's (0750, the grader's group), so the grader account cannot rename the course
    away and put its own in its place, nor write configuration, extensions or modules into its home that Jupyter,
    nbgrader or Python would read (~/.jupyter, ~/.local, ~/.ipython, ~/.config, ~/.profile). It writes only its caches
    and Jupyter's runtime files (GRADER_WRITES)."""
    grader = pwd.getpwnam(hub.grader)
    home = Path(hub.homes) / hub.grader
    for entry in home.iterdir():
        if entry.name != "course":
            run(["chown", "-R", "root:root", str(entry)])
            run(["chmod", "-R", "go-w", str(entry)])
    for folder in (".jupyter", ".ipython", ".config", ".local"):
        (home / folder).mkdir(exist_ok=True)
    for writable in GRADER_WRITES:
        path = home / writable
        path.mkdir(parents=True, exist_ok=True)
        for parent in [p for p in path.relative_to(home).parents if str(p) != "."]:
            os.chown(home / parent, 0, 0)
            (home / parent).chmod(0o755)
        run(["chown", "-R", f"{hub.grader}:{hub.grader}", str(path)])
        path.chmod(0o700)
    os.chown(home, 0, grader.pw_gid)
    home.chmod(0o750)


def grader_env(hub: ClassHub) -> dict[str, str]:
    """The environment of the grader account's commands: the hub's Python first, the shared exchange, the grader's
    nbgrader configuration (collect by owner, from the students' own inbound folders)."""
    return {"PATH": f"{hub.env / 'bin'}:/usr/local/bin:/usr/bin:/bin", "COURSE_EXCHANGE": hub.exchange,
            "VENV": str(hub.env), "TORCH": "system", "LANG": "C.UTF-8", "CLASS_INBOXES": hub.inboxes,
            "JUPYTER_CONFIG_PATH": str(Path(hub.prefix) / "grader-config"),
            "JUPYTER_CONFIG_DIR": str(Path(hub.prefix) / "grader-config"),
            # the course's code from its root-owned view, no current folder, no user site (make_code_view)
            "PYTHONPATH": str(hub.course / ".code"), "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1"}


def student_env(hub: ClassHub) -> dict[str, str]:
    """The environment of a user's server and of their nbgrader commands."""
    return {"PATH": f"{hub.env / 'bin'}:/usr/local/bin:/usr/bin:/bin", "COURSE_EXCHANGE": hub.exchange,
            "JUPYTER_CONFIG_PATH": str(Path(hub.prefix) / "student-config"), "VENV": str(hub.env),
            "TORCH": "system", "COURSE": str(Path(hub.prefix) / "course"), "LANG": "C.UTF-8"}


def prepare(prefix: str) -> None:
    """What every class on this machine shares, built where missing or out of date: the student edition, the
    environment and the proxy under `prefix`. No accounts. (`setup` starts with it; `make test` runs it beside the
    course's own install, so that the hub test finds it built.)"""
    if os.geteuid() != 0:
        raise ClassError("the class hub's environment is built as root (it is shared by every account)")
    started = time.monotonic()
    Path(prefix).mkdir(parents=True, exist_ok=True)
    Path(prefix).chmod(0o755)
    install_course(Path(prefix))
    install_env(Path(prefix))
    install_proxy(Path(prefix))
    print(f"course, environment and proxy ready in {prefix} in {time.monotonic() - started:.1f} s", flush=True)
    print(f"students' nbgrader (every account can run it): {prefix}/env/bin/nbgrader; a student calls it by that path, "
          f"or puts `export PATH={prefix}/env/bin:$PATH` at the top of ~/.bashrc (a non-interactive shell stops "
          "reading Debian's and Ubuntu's ~/.bashrc at its first lines)", flush=True)


def setup(hub: ClassHub, roster: Path, passwords: dict[str, str] | None = None) -> ClassHub:
    """Everything the class needs that is missing; safe to run again (existing accounts, the grader's course
    and the environment are kept). `passwords`: the unix passwords to set for accounts created now (default:
    random ones, written to state/passwords.csv for the instructor to hand out)."""
    if os.geteuid() != 0:
        raise ClassError("the class hub must be set up and run as root (sudo make hub ...): it creates accounts and "
                         "starts each user's server as that user")
    people = hub.students + hub.staff + [hub.instructor]
    clash = sorted({p for p in people if people.count(p) > 1})
    if clash:
        raise ClassError(f"{', '.join(clash)}: listed more than once (a student, a TA and the instructor must differ)")
    bad = [p for p in hub.staff + [hub.instructor] if not USERNAME.match(p)]
    if bad:
        raise ClassError(f"not valid unix account names: {', '.join(bad)}")
    check_clone_private(REPO)
    check_ports(hub)
    check_confinement()
    foreign = [s for s in hub.students if account_exists(s) and s not in hub.created]
    if foreign:
        raise ClassError(f"{', '.join(foreign)}: accounts that exist already. A student's account must be the class's "
                         "own (its home is on the student's capped disk): remove them, or rename them in the roster")
    started = time.monotonic()
    prepare(hub.prefix)
    hub.state.mkdir(parents=True, exist_ok=True)
    hub.state.chmod(0o700)
    new_passwords = {}
    for name in people + [hub.grader]:
        if create_account(name, hub.homes):
            hub.created.append(name)
            if name != hub.grader:
                new_passwords[name] = (passwords or {}).get(name) or secrets.token_urlsafe(12)
    set_passwords(new_passwords)
    if new_passwords:
        with open(hub.state / "passwords.csv", "a") as f:
            f.writelines(f"{user},{word}\n" for user, word in new_passwords.items())
        (hub.state / "passwords.csv").chmod(0o600)
    hub.save()
    create_exchange(hub)
    limits = jail.Limits(**hub.limits)
    grader_gid = pwd.getpwnam(hub.grader).pw_gid
    for student in hub.students:
        create_disk(hub, student, limits, grader_gid)
    write_configs(hub)
    install_grader_course(hub, roster)
    lock_grader_code(hub)
    for name in dropped(hub):   # off the roster: no login, nothing running; their work stays for the instructor
        run(["usermod", "--lock", "--expiredate", "1", name])
        hub.cgroup(name).kill()
    for name in people:         # back on it: their account as it was
        if name in hub.created and account_exists(name):
            run(["usermod", "--unlock", "--expiredate", "", name])
    print(f"accounts and the grader's course ready in {time.monotonic() - started:.1f} s in all", flush=True)
    return hub


def check_clone_private(clone: Path) -> None:
    """Refuse a course clone whose solutions (source/, reference/) other accounts can read: every student of the
    class has an account on this machine."""
    for secret in ("source", "reference"):
        path = clone / secret
        if not path.exists():
            continue
        chain = [path, *path.parents]
        if path.stat().st_mode & 0o004 and all(p.stat().st_mode & 0o001 for p in chain):
            raise ClassError(f"the course clone {clone} can be read by every account on this machine, students "
                             f"included: {path} holds the solutions. Make it yours alone, then run make hub again:\n"
                             f"    chmod 700 {clone}\n(or clone the course under /root, which is 0700)")


# The ports browsers refuse to open (Chromium: ERR_UNSAFE_PORT): the Fetch standard's "bad port" list
# (https://fetch.spec.whatwg.org/#port-blocking). A hub on one of them starts, and no student can reach it.
BROWSER_BLOCKED_PORTS = frozenset({
    1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109,
    110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530,
    531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190,
    5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6697, 10080})


def check_ports(hub: ClassHub) -> None:
    """Refuse a port any account could bind (1024 and above): a student's process would stand in for the hub
    while it is stopped, and receive the passwords and tokens sent to it. Refuse a public port browsers will not
    open, too: the hub would start and no student could reach it."""
    high = [f"{what} {port}" for what, _, port in listeners(hub) if port >= 1024]
    if high:
        raise ClassError(f"{', '.join(high)}: at 1024 or above, any account could take it while the hub is stopped. "
                         "Choose ports below 1024: --port 443 (docs/hub.md, 'Ports') and --internal-ports 801,802,803")
    if hub.port in BROWSER_BLOCKED_PORTS:
        raise ClassError(f"the hub's public port {hub.port} is one browsers refuse to open (ERR_UNSAFE_PORT in "
                         "Chromium). Choose another below 1024, such as --port 443 (docs/hub.md, 'Ports')")


def check_confinement() -> None:
    """The machine must be able to cap students: cgroups with memory and pids, loop devices, mkfs.ext4."""
    if jail.cgroup_version() == 0:
        raise ClassError("no cgroup memory and pids controllers under /sys/fs/cgroup: students cannot be capped here")
    missing = [tool for tool in ("mkfs.ext4", "losetup", "mount", "setpriv", "tini") if not shutil.which(tool)]
    if missing:
        raise ClassError(f"{', '.join(missing)} missing: apt-get install -y e2fsprogs util-linux mount tini")


def create_exchange(hub: ClassHub) -> None:
    """nbgrader's exchange, with the course's folders made now, as the grader's, before any student can log in:
    inbound sticky (1733: a student can neither list it nor rename or remove an entry not theirs), outbound
    readable, feedback reachable only by the hash names nbgrader gives. A folder found owned by another account
    (a student who made it first, on an earlier hub) is moved aside, with a line."""
    root = Path(hub.exchange)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)   # nbgrader's documented mode (its release_assignment checks it); read-only for students
    grader = pwd.getpwnam(hub.grader)
    course = root / COURSE_ID
    for folder, mode in ((course, 0o755), (course / "outbound", 0o755), (course / "inbound", 0o1733),
                         (course / "feedback", 0o711)):
        if folder.is_symlink() or (folder.exists() and (folder.lstat().st_uid != grader.pw_uid or not folder.is_dir())):
            aside = folder.with_name(f"{folder.name}.found-{time.strftime('%Y%m%d-%H%M%S')}")
            folder.rename(aside)
            os.chown(aside, 0, 0, follow_symlinks=False)
            print(f"exchange: {folder} was not the grader's: moved to {aside}", flush=True)
        folder.mkdir(exist_ok=True)
        os.chown(folder, grader.pw_uid, grader.pw_gid)
        folder.chmod(mode)


def create_disk(hub: ClassHub, student: str, limits: jail.Limits, grader_gid: int) -> None:
    """The student's own disk (student_jail.Disk), their home on it (with /etc/skel's files the first time)."""
    entry = pwd.getpwnam(student)
    disk = hub.disk(student)
    fresh = not disk.image.exists()
    disk.create(limits.disk, entry.pw_uid, entry.pw_gid, grader_gid)
    if fresh and Path("/etc/skel").is_dir():
        run(["cp", "-a", "/etc/skel/.", str(disk.home)])
        run(["chown", "-R", f"{entry.pw_uid}:{entry.pw_gid}", str(disk.home)])
        disk.home.chmod(0o700)


def listeners(hub: ClassHub) -> list[tuple[str, str, int]]:
    """(what, address, port) of the hub's TCP listeners."""
    return [("the hub's public port", hub.ip, hub.port), ("the hub's API", "127.0.0.1", hub.hub_port),
            ("the proxy's API", "127.0.0.1", hub.proxy_api_port), ("Formgrader", "127.0.0.1", hub.service_port)]


def holder(port: int) -> str:
    """Who listens on TCP `port` (ss's users:(...) field), or ''."""
    done = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True)
    found = re.findall(r'users:\(\("([^"]+)",pid=(\d+)', done.stdout)
    if not found:
        return ""
    name, pid = found[0]
    try:
        owner = pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name
    except (OSError, KeyError):
        owner = "?"
    return f" by {name} (pid {pid}, account {owner})"


def preflight(hub: ClassHub) -> None:
    """Refuse to start when a listener's place is taken: a TCP port in use, or not below 1024."""
    check_ports(hub)
    taken = []
    for what, ip, port in listeners(hub):
        with socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((ip, port))
            except OSError as error:
                taken.append(f"{what} {ip}:{port} is taken{holder(port)} ({error.strerror})")
    if taken:
        raise ClassError("the hub was not started:\n  " + "\n  ".join(taken) + "\nstop what holds it, or choose "
                         "other ports below 1024 (docs/hub.md, 'Ports')")


def listening_failures(hub: ClassHub) -> list[str]:
    """What is not listening as it must, once the hub answers: each TCP port bound by root (the hub, the proxy, and
    Formgrader's, which root binds for it: jupyterhub/formgrader_launch.py)."""
    failures = []
    held = tcp_listeners()
    for what, _, port in listeners(hub):
        owner = 0
        if held.get(port) != owner:
            failures.append(f"{what} {port}: " + ("nothing listens (its log is above)" if port not in held
                                                  else f"held by uid {held[port]}, not {owner}"))
    return failures


def tcp_listeners() -> dict[int, int]:
    """{port: uid} of the listening TCP sockets (IPv4 and IPv6), from /proc/net/tcp*."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":   # LISTEN
                found[int(fields[1].rsplit(":", 1)[1], 16)] = int(fields[7])
    return found


def start(hub: ClassHub, timeout: float = 120) -> int:
    """Run JupyterHub (which starts the proxy, and Formgrader as the grader account) until it stops; its exit
    status. Refused, with the reason, when a listener's place is taken before it starts, or when, once it answers,
    one of them is not listening as it must: then the hub is stopped and the status is 3."""
    hub.formgrader_cgroup.kill()   # what a Formgrader of an earlier run left (a hub that was killed): nothing
    preflight(hub)
    for student in hub.students:   # after a reboot the students' disks are not mounted
        hub.disk(student).attach()
    os.chdir(hub.state)
    # Ctrl-C in a terminal and a stop of the process group (systemd, the tests) reach JupyterHub itself; this process
    # only waits for it. A Python handler, not SIG_IGN: JupyterHub must not inherit an ignored SIGINT.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    hub_process = subprocess.Popen([str(hub.env / "bin" / "jupyterhub"), "-f", str(hub.state / "jupyterhub_config.py")])
    failures = wait_until_listening(hub, hub_process, timeout)
    if failures:
        print("class hub: refusing to run, stopping JupyterHub:\n  " + "\n  ".join(failures), file=sys.stderr, flush=True)
        hub_process.terminate()
        hub_process.wait()
        hub.formgrader_cgroup.kill()
        # JupyterHub leaves its proxy running when it exits on a failed service: nothing of a refused hub listens
        process_group.stop_pid_file(hub.state / "jupyterhub-proxy.pid", "configurable-http-proxy")
        return 3
    print(f"class hub: listening as it must (ports {', '.join(str(p) for _, _, p in listeners(hub))}): running",
          flush=True)
    try:
        return hub_process.wait()
    finally:   # JupyterHub stops Formgrader's process; whatever that started goes with its cgroup
        hub.formgrader_cgroup.kill()


def wait_until_listening(hub: ClassHub, hub_process: subprocess.Popen, timeout: float) -> list[str]:
    """Wait until the hub answers and every listener is as it must be; what is still wrong after `timeout` s."""
    deadline = time.monotonic() + timeout
    failures = ["the hub did not answer"]
    while time.monotonic() < deadline:
        if hub_process.poll() is not None:
            return [f"JupyterHub exited ({hub_process.returncode}) before it answered"]
        try:
            with urllib.request.urlopen(f"{hub.url}/hub/health", timeout=5) as answer:
                failures = [] if answer.status == 200 else [f"the hub answered {answer.status}"]
        except OSError as error:
            failures = [f"the hub did not answer at {hub.url} ({error})"]
        if not failures:
            failures = listening_failures(hub)
            if not failures:
                return []
        time.sleep(0.5)
    return failures


class HubProcess:
    """The hub started as `scripts/class_hub.py start` in its own process group (tests and the bench): start,
    stop, restart; its output appended to `log`."""

    def __init__(self, hub: ClassHub, log: Path):
        self.hub, self.log, self.process = hub, Path(log), None

    def start(self, timeout: float = 120, command: list[str] | None = None, cwd: Path | None = None) -> "HubProcess":
        """Start the hub (`command`: another way to start it, such as the manual's `make hub ...`) and wait until
        it answers."""
        command = command or [sys.executable, str(Path(__file__).resolve()), "start", "--prefix", self.hub.prefix]
        with open(self.log, "ab") as out:
            # SIGINT back to its default: started from a background job (`make test &`, nohup) it is ignored, and
            # every process below inherits that, so JupyterHub's SIGINT to Formgrader, its first way of stopping a
            # service, did nothing and each stop waited 30 s for the SIGTERM that follows (as systemd or a
            # terminal starts it, SIGINT is already the default).
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                            cwd=cwd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.hub.url}/hub/health", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.3)
        self.stop()
        raise ClassError(f"the hub did not answer at {self.hub.url}:\n{self.log.read_text(errors='replace')[-5000:]}")

    def stop(self) -> None:
        """SIGTERM, as systemd stops it: JupyterHub stops Formgrader and the proxy, and leaves users' servers. It
        gets a minute; the proxy runs in a session of its own, outside the hub's process group, so one still running
        after a hub that had to be killed is stopped through the pid file JupyterHub keeps in state/."""
        if self.process is not None and self.process.poll() is None:
            process_group.stop(self.process, grace=60)
        process_group.stop_pid_file(self.hub.state / "jupyterhub-proxy.pid", "configurable-http-proxy")

    def restart(self) -> None:
        self.stop()
        self.start()


def remove_accounts(hub: ClassHub) -> list[str]:
    """Remove the accounts `setup` created (with their homes, and a student's disk and cgroup); accounts that
    existed before are kept. One that cannot be removed is named at the end; the others are removed all the same.
    (No archive: `end_term` archives first; this alone is for a class that never ran, and the tests.)"""
    removed, failed = [], []
    for name in hub.created:
        try:
            if name not in hub.staff + [hub.instructor, hub.grader]:   # a student, on the roster or dropped from it
                hub.cgroup(name).remove()
                hub.disk(name).remove()
            if is_class_account(name):
                remove_account(name)
                removed.append(name)
        except (ClassError, jail.JailError, OSError) as error:
            failed.append(f"{name}: {error}")
    hub.created = [name for name in hub.created if account_exists(name)]
    hub.save()
    if failed:
        raise ClassError("some accounts were not removed:\n" + "\n".join(failed))
    return removed


ARCHIVED = ("gradebook.db", ".gradebook-ledger.json", "gradebook-export.csv", "feedback", "autograded", "submitted",
            "graded", "release")


def archive(hub: ClassHub, folder: Path) -> tuple[Path, int]:
    """The term's record into <folder>/<course>-<date>.tar.gz, root's alone (0600): the gradebook with its ledger
    (they are restored together: autograder/grader/ledger.py) and nbgrader's
    export of it (gradebook-export.csv), feedback/, autograded/, submitted/, graded/, release/ and the roster. It is
    read back before anything is removed; (its path, the number of files in it)."""
    as_user(hub.grader, [str(hub.env / "bin" / "nbgrader"), "export", "--to", "gradebook-export.csv"],
            grader_env(hub), cwd=hub.course)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    path = folder / f"{COURSE_ID}-{time.strftime('%Y%m%d-%H%M%S')}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name in ARCHIVED:
            if (hub.course / name).exists():
                tar.add(hub.course / name, arcname=f"{COURSE_ID}/{name}")
        if (hub.state / "roster.csv").exists():
            tar.add(hub.state / "roster.csv", arcname=f"{COURSE_ID}/roster.csv")
    path.chmod(0o600)
    with tarfile.open(path) as tar:   # read it back: every file there, whole
        files = [m for m in tar.getmembers() if m.isfile()]
        for member in files:
            tar.extractfile(member).read()
    if not any(m.name.endswith("/gradebook.db") for m in files):
        raise ClassError(f"{path} has no gradebook.db: nothing was removed")
    return path, len(files)


SHARED_TEMPORARY = ("/tmp", "/var/tmp", "/dev/shm")


def remove_owned_by(uids: set[int], roots: tuple[str, ...]) -> list[str]:
    """Remove every file and folder under `roots` owned by one of `uids` (links not followed, other file systems
    not entered); what was removed."""
    removed: list[str] = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        device = os.lstat(root).st_dev
        for folder, folders, files in os.walk(root):
            for name in list(folders) + files:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                if info.st_dev != device:
                    folders[:] = [f for f in folders if f != name]
                elif info.st_uid in uids:
                    if name in folders:
                        shutil.rmtree(path, ignore_errors=True)
                        folders.remove(name)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(path)
                    removed.append(path)
    return removed


def hub_running(hub: ClassHub) -> bool:
    return hub.port in tcp_listeners() and (hub.state / "jupyterhub-proxy.pid").exists()


def end_term(hub: ClassHub, folder: Path) -> tuple[Path, int, list[str]]:
    """The end of term: archive (stopping here if that fails), then remove the accounts with their homes and disks,
    the students' cgroups, the hub's state (database, cookie secret, proxy token, passwords, class.json), and the
    course's folders in the exchange (every submission, release and feedback). (archive, files in it, accounts
    removed). Refused while the hub runs."""
    if hub_running(hub):
        raise ClassError(f"the hub still runs at {hub.url}: stop it first (Ctrl-C where `make hub` runs)")
    if account_exists(hub.grader) and (hub.course / "gradebook.db").exists():
        path, files = archive(hub, folder)
        print(f"archived the term into {path} ({files} files, {path.stat().st_size / 1e6:.1f} MB)", flush=True)
    else:   # an end of term stopped part way, run again: the course went with the grader account
        path, files = folder, 0
        print(f"no course left to archive (the grader account {hub.grader} or its gradebook is gone): an earlier "
              f"end of term archived it into {folder}", flush=True)
    uids = {pwd.getpwnam(name).pw_uid for name in hub.created if account_exists(name)}
    removed = remove_accounts(hub)
    # what the class's accounts left in the machine's shared temporary folders (staff and the grader work outside
    # any jail, and a student's own /tmp is on her disk): owned by numeric ids that the next accounts may get
    left = remove_owned_by(uids, SHARED_TEMPORARY)
    if left:
        print(f"end of term: removed {len(left)} files the class's accounts left in {', '.join(SHARED_TEMPORARY)}",
              flush=True)
    # every student's disk and cgroup, dropped ones included, and those whose account was removed by hand
    for student in sorted(set(hub.students) | {p.stem for p in (Path(hub.prefix) / "disks").glob("*.img")}):
        hub.cgroup(student).remove()
        hub.disk(student).remove()
    hub.formgrader_cgroup.remove()
    shutil.rmtree(Path(hub.exchange) / COURSE_ID, ignore_errors=True)
    for leftover in (hub.state, Path(hub.prefix) / "disks"):
        shutil.rmtree(leftover, ignore_errors=True)
    return path, files, removed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["setup", "start", "end-term", "prepare"])
    parser.add_argument("--prefix", default=os.environ.get("HUB_PREFIX", "/opt/cs336-hub"))
    parser.add_argument("--roster", type=Path, help="nbgrader's student CSV (id,first_name,last_name,email)")
    parser.add_argument("--staff", default="", help="TA accounts, comma-separated")
    parser.add_argument("--instructor", default="", help="the instructor's account (the hub's admin)")
    parser.add_argument("--homes", default="/home")
    parser.add_argument("--exchange", default="/srv/nbgrader/exchange")
    parser.add_argument("--ip", help="the address the hub listens on (default: all, 0.0.0.0)")
    parser.add_argument("--port", type=int, help="the hub's public port, below 1024 (default 80)")
    parser.add_argument("--idle-timeout", type=int, help="seconds after which an idle server is stopped (default 3600)")
    parser.add_argument("--max-age", type=int, help="seconds after which a server is stopped, however active "
                                                    "(default 43200: 12 hours)")
    parser.add_argument("--domain", help="the hub's name; each user's server is on <name>.<domain>, Formgrader on "
                                         "cs336-primitives--service.<domain> (default localhost: this machine only; "
                                         "a real class needs wildcard DNS and TLS, docs/hub.md)")
    parser.add_argument("--internal-ports", help="loopback ports of the hub's API, the proxy's API and Formgrader, "
                                                 "below 1024 (default 801,802,803)")
    parser.add_argument("--limits", help="each student's caps, e.g. memory=2G,tasks=512,disk=1G,shm=64M (the defaults)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="start: seconds for every listener to be up before it refuses to run (default 120)")
    parser.add_argument("--archive", type=Path, default=Path("/var/backups/cs336-hub"),
                        help="end-term: the folder the term's archive goes into (default /var/backups/cs336-hub)")
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            if not args.roster or not args.instructor:
                raise ClassError("setup needs --roster students.csv and --instructor NAME (make hub ROSTER=... INSTRUCTOR=...)")
            staff = [s.strip() for s in args.staff.split(",") if s.strip()]
            try:
                hub = ClassHub.load(args.prefix)
                hub.students, hub.staff, hub.instructor = read_roster(args.roster), staff, args.instructor
            except ClassError:
                hub = ClassHub(prefix=args.prefix, students=read_roster(args.roster), staff=staff,
                               instructor=args.instructor, homes=args.homes, exchange=args.exchange)
            apply_listening_options(hub, args)
            if args.limits:
                hub.limits = asdict(jail.Limits.parse(args.limits))
            setup(hub, args.roster)
            print(f"class ready: {len(hub.students)} students, {len(hub.staff)} TAs, instructor {hub.instructor}, "
                  f"grader account {hub.grader} (course {hub.course}); exchange {hub.exchange}; "
                  f"passwords of new accounts in {hub.state / 'passwords.csv'}")
        elif args.command == "prepare":
            prepare(args.prefix)
        elif args.command == "start":
            hub = ClassHub.load(args.prefix)
            formgrader = f"{hub.origin(f'/services/{COURSE_ID}/')}/services/{COURSE_ID}/"
            print(f"JupyterHub for {COURSE_ID} at {hub.public_url} (Formgrader: {formgrader})", flush=True)
            return start(hub, timeout=args.timeout)
        elif not (Path(args.prefix) / "state" / "class.json").exists():
            print(f"end of term: no class in {args.prefix} (already ended, or never set up): nothing to do")
        else:
            path, files, removed = end_term(ClassHub.load(args.prefix), args.archive)
            print(f"end of term: archive {path} ({files} files); removed {len(removed)} accounts, the hub's state and "
                  f"the course's exchange folders")
    except (ClassError, jail.JailError) as error:
        print(f"class hub: {error}", file=sys.stderr)
        return 2
    return 0


def apply_listening_options(hub: ClassHub, args: argparse.Namespace) -> None:
    """--ip, --port, --domain, --idle-timeout, --max-age and --internal-ports, when given, replace the saved ones (with a line saying so); when not,
    a class set up before keeps its own."""
    given = {"ip": args.ip, "port": args.port, "domain": args.domain, "idle_timeout": args.idle_timeout,
             "max_age": args.max_age}
    if args.internal_ports:
        given["hub_port"], given["proxy_api_port"], given["service_port"] = map(int, args.internal_ports.split(","))
    for name, value in given.items():
        if value is not None and value != getattr(hub, name):
            print(f"{name}: {getattr(hub, name)} -> {value}", flush=True)
            setattr(hub, name, value)


if __name__ == "__main__":
    sys.exit(main())
