"""A real one-node Slurm cluster in a scratch folder, for tests/test_clusters.py: started, used, stopped and removed.

Debian's slurm-wlm and munge (installed by tests/ensure_slurm.sh, which `make test` runs first), with nothing of the
system's own: a munge daemon with a fresh key and its own socket, slurmctld and slurmd with a generated slurm.conf
(free loopback ports, state and spool folders in the scratch folder), every client command pointed at it through
SLURM_CONF. The node is declared with `cpus` CPUs (4 by default, on this 2-core machine: `config_overrides` lets
slurmd accept it), so that the shipped script's two-CPU tasks run two at a time, as on a small cluster of larger
nodes. The daemons run as root, as they do on a cluster (slurmd must start jobs as the submitting user); without
root the cluster is unavailable and the test is skipped (it fails under CI).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.lab_server import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")


class SlurmUnavailable(RuntimeError):
    """The cluster could not be started here; the message says why."""


@dataclass
class Cluster:
    folder: Path  # slurm.conf, the munge key and socket, state/, spool/, logs, pid files
    node: str
    daemons: list[subprocess.Popen] = field(default_factory=list)  # munged, slurmctld, slurmd, in the foreground

    @property
    def conf(self) -> Path:
        return self.folder / "slurm.conf"

    def env(self, base: dict | None = None) -> dict:
        """An environment whose Slurm commands (sbatch, squeue, scancel, scontrol) use this cluster."""
        return {**(os.environ if base is None else base), "SLURM_CONF": str(self.conf)}

    def command(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), env=self.env(), capture_output=True, text=True, check=check, timeout=timeout)

    def jobs(self, job: str) -> dict[str, str]:
        """{array task id: state} of a job's tasks still known to slurmctld (pending, running or recently ended)."""
        done = self.command("squeue", "--noheader", "--array", "--states=all", "-j", job, "-o", "%K %T", check=False)
        return dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)

    def wait(self, job: str, timeout: float = 300, every: float = 0.5) -> None:
        """Until none of the job's tasks is pending or running (squeue no longer lists it as such)."""
        deadline = time.monotonic() + timeout
        while any(state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for state in self.jobs(job).values()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job} still has tasks {self.jobs(job)} after {timeout:.0f} s\n{self.logs()}")
            time.sleep(every)

    def daemon(self, command: list[str], ready: Path, timeout: float = 30) -> None:
        """Start one daemon in the foreground, as this process's child; return once `ready` exists."""
        log = open(self.folder / f"{command[0]}.out.log", "wb")
        self.daemons.append(subprocess.Popen(command, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()
        deadline = time.monotonic() + timeout
        while not ready.exists():
            if self.daemons[-1].poll() is not None or time.monotonic() > deadline:
                raise SlurmUnavailable(f"{command[0]} did not start\n{self.logs()}")
            time.sleep(0.05)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.folder.glob("*.log")))

    def stop(self) -> None:
        """Stop the daemons this cluster started (its own child processes) and remove its folder."""
        for process in reversed(self.daemons):
            if process.poll() is None:
                process.terminate()
        for process in self.daemons:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def available() -> str | None:
    """None when a cluster can be started here, else why not."""
    missing = [name for name in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel") if not shutil.which(name)]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} not found): `make test` installs Debian's slurm-wlm "
                "and munge as root (tests/ensure_slurm.sh)")
    if os.geteuid() != 0:
        return "slurmd runs jobs as their user and must run as root; this test runs as another user"
    return None


def slurm_conf(folder: Path, node: str, cpus: int, memory_mib: int) -> str:
    """A one-node slurm.conf whose every file is in `folder` and whose ports are free now."""
    return f"""# A one-node test cluster (tests/slurm_cluster.py)
ClusterName=cs336test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge.socket
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
MinJobAge=600
NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mib} State=UNKNOWN
PartitionName=main Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def start(cpus: int = 4, memory_mib: int = 16384, node: str = "node1") -> Cluster:
    """munged, slurmctld and slurmd in a new scratch folder (the system's temporary folder: socket paths stay
    short); returns once the node is idle. SlurmUnavailable when it cannot be done here."""
    why = available()
    if why:
        raise SlurmUnavailable(why)
    folder = Path(tempfile.mkdtemp(prefix="slurm-"))
    folder.chmod(0o711)  # munged wants its socket's folder reachable by every user
    cluster = Cluster(folder, node)
    try:
        for name in ("state", "spool"):
            (folder / name).mkdir()
        key = folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        cluster.conf.write_text(slurm_conf(folder, node, cpus, memory_mib))
        cluster.daemon(["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={folder}/munge.socket",
                        f"--pid-file={folder}/munged.pid", f"--log-file={folder}/munged.log",
                        f"--seed-file={folder}/munged.seed"], folder / "munge.socket")
        cluster.daemon(["slurmctld", "-D", "-c", "-i"], folder / "slurmctld.pid")
        cluster.daemon(["slurmd", "-D", "-N", node], folder / "slurmd.pid")
        deadline = time.monotonic() + 60
        while True:
            state = cluster.command("sinfo", "--noheader", "-n", node, "-o", "%T", check=False).stdout.strip()
            if state == "idle":
                return cluster
            if time.monotonic() > deadline:
                raise SlurmUnavailable(f"the node is {state or 'unknown'} after 60 s, not idle\n{cluster.logs()}")
            time.sleep(0.2)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, SlurmUnavailable) as error:
        detail = getattr(error, "stderr", "") or ""
        logs = cluster.logs()
        cluster.stop()
        raise SlurmUnavailable(f"could not start the test cluster: {error}\n{detail}\n{logs}") from None
