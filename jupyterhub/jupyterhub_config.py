"""JupyterHub's configuration for the class (scripts/class_hub.py copies it into <prefix>/state/ and starts the hub
with it). Everything class-specific comes from class.json beside it, which `make hub` wrote from the roster.

- Login: the accounts' unix passwords (PAM, JupyterHub's default). For a real class swap in its own login; only
  the lines marked LOGIN change (docs/hub.md, "A real login").
- Each user's server: JupyterLab as that unix user (LocalProcessSpawner), in their home, from the shared
  environment, with the students' nbgrader configuration (Assignments tab, no Formgrader). A student's server is
  confined first (ClassSpawner, student_jail.py beside this file): their cgroup's memory and task limits, a mount
  namespace where only their own disk is writable, the exchange's inbound folder being theirs.
- Formgrader: a JupyterHub service run as the grader account in its course folder (nbgrader's "one class,
  multiple graders"); the instructor and the TAs, in the group formgrade-<course>, may open it.
- Every listener is where no student can bind: ports below 1024, which only root may bind; Formgrader's is bound by
  root and handed to it (formgrader_launch.py, autograder/handed_socket.py), so Formgrader, run as the grader
  account, holds no capability at all (JupyterHub's services must be http(s) on TCP: no unix socket).
- The hub's database, cookie secret and the proxy's token live in this folder, so a restart keeps every user,
  group and running server.
"""
import asyncio
import json
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "class.json")) as f:
    CLASS = json.load(f)
COURSE = "cs336-primitives"
PREFIX = CLASS["prefix"]
ENV_BIN = os.path.join(PREFIX, "env", "bin")
GRADER = f"grader-{COURSE}"[:32]
CGROUP = f"{COURSE}-{os.path.basename(PREFIX.rstrip('/'))}"   # the class's cgroup: each student's and Formgrader's
STAFF = CLASS["staff"] + [CLASS["instructor"]]
PATH = f"{ENV_BIN}:/usr/local/bin:/usr/bin:/bin"
sys.path.insert(0, HERE)
import student_jail  # noqa: E402  (copied beside this file by scripts/class_hub.py)

# --- the hub, the proxy, the state that survives a restart
c.JupyterHub.bind_url = f"http://{CLASS['ip']}:{CLASS['port']}"
# Each user's server and Formgrader on an origin of its own (<name>.<domain>, cs336-primitives--service.<domain>):
# "a user must never be able to write arbitrary HTML and serve it to another user on the Hub's domain" (JupyterHub's
# security overview). Behind TLS (SCHEME = "https", docs/hub.md), cookies are `__Host-` ones, which a sibling
# subdomain cannot set (no cookie tossing, GHSA-7r3h-4ph8-w38g); browsers take them only over https (Chromium keeps
# no Secure cookie from http://<name>.localhost), so the one-machine http mode keeps host-only cookies, and JupyterHub
# ties each XSRF token to its session, which a tossed cookie does not know (tests/test_class_hub.py tries).
SCHEME = "http"
DOMAIN = CLASS.get("domain", "localhost")
c.JupyterHub.subdomain_host = f"{SCHEME}://{DOMAIN}" + ("" if CLASS["port"] == 80 else f":{CLASS['port']}")
c.JupyterHub.cookie_host_prefix_enabled = SCHEME == "https"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = CLASS["hub_port"]
c.JupyterHub.db_url = f"sqlite:///{os.path.join(HERE, 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = os.path.join(HERE, "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [os.path.join(PREFIX, "proxy", "node_modules", ".bin", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{CLASS['proxy_api_port']}"
with open(os.path.join(HERE, "proxy_token"), "a+") as f:   # the same token after a restart: servers stay reachable
    f.seek(0)
    token = f.read().strip() or os.urandom(32).hex()
    f.seek(0), f.truncate(), f.write(token)
os.chmod(os.path.join(HERE, "proxy_token"), 0o600)
c.ConfigurableHTTPProxy.auth_token = token
c.JupyterHub.cleanup_servers = False   # a restart of the hub leaves students' servers (and their kernels) running

# --- who may log in (LOGIN: a real class replaces the authenticator here, keeping allowed_users and admin_users)
c.JupyterHub.authenticator_class = CLASS["authenticator"]
c.Authenticator.allowed_users = set(CLASS["students"]) | set(STAFF)
# the roster decides who logs in: a name dropped from it is refused though JupyterHub's database still knows it
# (JupyterHub lets such users in by default); scripts/class_hub.py also deletes it there, with its tokens and servers
c.Authenticator.allow_existing_users = False


def forget_the_dropped(db_file: str, people: set[str]) -> None:
    """Delete from JupyterHub's database, before the hub serves anything, every user not in the class: with them go
    their tokens and their servers' records, so a token or cookie of a dropped student stops working at this start,
    not after it. (JupyterHub keeps users it once knew and has no setting to forget them; `make hub` has already
    killed what ran in their cgroups, and the hub drops proxy routes it no longer knows.)"""
    if not os.path.exists(db_file):   # a first start: JupyterHub makes and stamps its database itself
        return
    from jupyterhub import orm
    session = orm.new_session_factory(f"sqlite:///{db_file}")()
    try:
        gone = [user for user in session.query(orm.User).all() if user.name not in people]
        for user in gone:
            session.delete(user)
        session.commit()
    finally:
        session.close()
    if gone:
        print(f"class hub: not in the class any more, logins, tokens and servers gone (homes and disks kept): "
              f"{', '.join(sorted(u.name for u in gone))}", flush=True)


forget_the_dropped(os.path.join(HERE, "jupyterhub.sqlite"), set(CLASS["students"]) | set(STAFF))
c.Authenticator.admin_users = {CLASS["instructor"]}
c.PAMAuthenticator.open_sessions = False   # no login session per spawn: nothing in PAM's session stack is needed

# --- each user's server
from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402
from tornado import web  # noqa: E402


class ClassSpawner(LocalProcessSpawner):
    """LocalProcessSpawner that confines a student's server before it becomes the student (student_jail.enter:
    cgroup, read-only world but their disk, their own inbound), and kills whatever is left in their cgroup when the
    server stops. Staff servers are started as LocalProcessSpawner starts them."""

    def _parts(self):
        name = self.user.name
        disk = student_jail.Disk(Path(PREFIX) / "disks", name, Path(CLASS["homes"]) / name)
        return student_jail.Cgroup(CGROUP, name), disk, student_jail.Limits(**CLASS["limits"])

    async def start(self):
        # fail closed: a name on neither the roster nor the staff (a dropped student JupyterHub still knows) gets no
        # server at all, confined or not
        if self.user.name not in CLASS["students"] and self.user.name not in STAFF:
            raise web.HTTPError(403, f"{self.user.name} is not in this class's roster: no server")
        started = await super().start()
        if self.user.name in CLASS["students"]:   # her own /proc, for ps and top (student_jail.mount_own_proc)
            loop = asyncio.get_running_loop()
            init = await loop.run_in_executor(None, student_jail.namespace_init, self.pid)
            await loop.run_in_executor(None, student_jail.mount_own_proc, init)
        return started

    def make_preexec_fn(self, name):
        become = super().make_preexec_fn(name)
        if name not in CLASS["students"]:
            return become
        cgroup, disk, limits = self._parts()
        inbound = os.path.join(CLASS["exchange"], COURSE, "inbound")

        def confine_then_become():
            student_jail.enter(cgroup, disk, inbound, limits)
            become()
        return confine_then_become

    async def stop(self, now=False):
        if self.user.name not in STAFF:   # a student's, or a dropped student's from before the roster changed
            # everything the student runs, kernels included, killed while tini is there to reap it; then tini
            cgroup = self._parts()[0]
            await asyncio.get_running_loop().run_in_executor(None, lambda: cgroup.kill(keep_tops=True))
        await super().stop(now=now)


c.JupyterHub.spawner_class = ClassSpawner
# Two tinis above each server: for a student the inner one is the init of their own PID namespace
# (student_jail.enter), which reaps whatever they orphan and, when it ends, takes everything left with it; a zombie
# would count against their task limit, for good where the machine's init does not reap (as in some containers).
TINI = ["tini", "-s", "-g", "--"]
c.Spawner.cmd = TINI + TINI + ["bash", os.path.join(PREFIX, "course-start.sh"), os.path.join(ENV_BIN, "jupyterhub-singleuser")]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab/tree/index.ipynb"
IDLE = CLASS.get("idle_timeout", 3600)
c.Spawner.environment = {
    "PATH": PATH, "COURSE": os.path.join(PREFIX, "course"), "COURSE_EXCHANGE": CLASS["exchange"],
    "JUPYTER_CONFIG_PATH": os.path.join(PREFIX, "student-config"), "VENV": os.path.join(PREFIX, "env"),
    "TORCH": "system", "LANG": "C.UTF-8",
    # busy_kernels (a busy kernel is activity), and how often a server tells the hub: often enough for the culler
    "PYTHONPATH": os.path.join(PREFIX, "user-extensions"), "JUPYTERHUB_ACTIVITY_INTERVAL": str(max(5, min(300, IDLE // 4))),
}
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120

# --- groups, roles and the Formgrader service
c.JupyterHub.load_groups = {
    f"formgrade-{COURSE}": {"users": STAFF},
    f"nbgrader-{COURSE}": {"users": CLASS["students"]},
}
c.JupyterHub.load_roles = [
    {"name": f"formgrade-{COURSE}", "groups": [f"formgrade-{COURSE}"],
     "scopes": [f"access:services!service={COURSE}"]},
    # the class's own admin token (scripts/class_hub.py, the tests): create users' tokens, list servers
    {"name": "class-admin", "services": ["class-admin"], "scopes": ["admin:users", "admin:servers", "tokens",
                                                                    "admin:groups", "list:services", "read:services"]},
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]
c.JupyterHub.services = [
    {
        "name": COURSE,   # nbgrader finds Formgrader at /services/<course id>/
        "url": f"http://127.0.0.1:{CLASS['service_port']}",
        # started by root (the hub): formgrader_launch.py (beside this file) puts it in a cgroup of its own, binds its
        # port below 1024 and hands the socket down, then becomes the grader with no capability at all
        "command": [sys.executable, os.path.join(HERE, "formgrader_launch.py"), CGROUP, str(CLASS["service_port"]),
                    GRADER, "--",
                    # the spawner set root's HOME and USER: the grader's instead
                    "env", f"HOME={CLASS['homes']}/{GRADER}", f"USER={GRADER}", f"LOGNAME={GRADER}",
                    os.path.join(ENV_BIN, "jupyterhub-singleuser"), f"--ServerApp.root_dir={CLASS['homes']}/{GRADER}/course",
                    # no kernel and no terminal: a staff member opening a submitted notebook here cannot run a
                    # student's code as the grader (Autograde runs the sandboxed grader; run notebooks in your own
                    # account): no kernel is listed, and a start by name is refused (autograder/no_kernels.py)
                    "--ServerApp.terminals_enabled=False", "--KernelSpecManager.allowed_kernelspecs=no-kernel-as-grader",
                    "--ServerApp.kernel_manager_class=autograder.no_kernels.NoKernels"],
        "cwd": f"{CLASS['homes']}/{GRADER}/course",
        "environment": {
            "PATH": PATH, "COURSE_EXCHANGE": CLASS["exchange"], "VENV": os.path.join(PREFIX, "env"),
            "TORCH": "system", "LANG": "C.UTF-8", "JUPYTERHUB_DEFAULT_URL": "/lab",
            # Jupyter's configuration and data from root's folders only: nothing the grader account (or anything
            # running as it) writes in its home is read as configuration, an extension or a module
            "JUPYTER_CONFIG_PATH": os.path.join(PREFIX, "grader-config"),
            "JUPYTER_CONFIG_DIR": os.path.join(PREFIX, "grader-config"), "JUPYTERHUB_DISABLE_USER_CONFIG": "1",
            "CLASS_INBOXES": os.path.join(PREFIX, "disks", "*", "inbound"),
            # the course's code from its root-owned view (the Autograde extension: autograder/), never the course
            # folder itself, where the grader may add files; no current folder, no user site
            "PYTHONPATH": f"{CLASS['homes']}/{GRADER}/course/.code", "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1",
            "JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED": str(int(SCHEME == "https")),   # as the spawner tells users' servers
        },
        "oauth_no_confirm": True,
    },
    {"name": "class-admin", "api_token": CLASS["admin_token"]},
    # servers idle for idle_timeout seconds stop (JupyterHub's own culler); with shutdown_on_logout below, nothing of
    # a student runs on unattended
    # --max-age: a server stops this long after it started, whatever activity it reports (its student can report
    # some herself, with her server's own token)
    {"name": "idle-culler", "command": [os.path.join(ENV_BIN, "python"), "-m", "jupyterhub_idle_culler",
                                        f"--timeout={IDLE}", f"--max-age={CLASS.get('max_age', 12 * 3600)}",
                                        f"--cull-every={max(10, min(300, IDLE // 4))}"]},
]
c.JupyterHub.shutdown_on_logout = True
