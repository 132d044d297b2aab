"""A student's processes on the class hub: capped in memory and tasks, and able to write only to a disk of their own.

JupyterHub's LocalProcessSpawner starts each server as its user and nothing more. SystemdSpawner caps memory and
tasks, but needs systemd as PID 1 (not on our machines, nor in most containers), and no spawner caps disk or gives
a student's submissions a place that is theirs. This kernel has no disk quotas (CONFIG_QFMT_V2 is off; XFS and
tmpfs quotas too), so each student's disk is a file system of its own. What this module does, all with the
kernel's and util-linux's own means:

- `Disk`: a sparse ext4 image of the disk limit's size per student, loop-mounted (nosuid, nodev) at
  <prefix>/disks/<student>/, holding home/ (bind-mounted at the account's home), tmp/ and inbound/;
- `Cgroup`: the student's cgroup under the class's group, with memory and task limits: cgroup v1 (memory and pids
  hierarchies, as on Debian 12 hosts in hybrid mode) or v2 (current distributions);
- `enter`, run as root in the child between fork and exec (LocalProcessSpawner's preexec_fn, and `as_user` in
  scripts/class_hub.py): join the cgroup; a mount namespace of its own in which every mount is read-only except
  the student's disk and home; /tmp is their tmp/, /dev/shm a small tmpfs (charged to their memory), and the
  exchange's inbound folder is their inbound/, so a submission lands on their own disk, where nobody else can
  write; no new privileges (a setuid program gains nothing); a PID namespace for what it starts next (the caller
  runs `tini -- tini -s -- command`: the inner tini is that namespace's init); an IPC namespace of its own (no
  shared memory with anyone, none left behind); a /proc that shows only their own processes; an equal share of the
  CPU when the machine is busy (the cgroup's cpu weight, v1's cpu.shares). The caller then becomes the student.
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 14, 1 << 18, 1 << 21, 1 << 24
PR_SET_NO_NEW_PRIVS = 38
KEPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
WRITABLE_KERNEL_MOUNTS = ("/proc", "/sys", "/dev/pts")   # left as they are: the kernel guards them itself
CPU_WEIGHT = 100   # every student's share of the CPU when the machine is busy: equal (cgroup v2's default weight)


class JailError(Exception):
    """The machine cannot confine a student as asked; the message says why."""


def parse_size(text: str | int) -> int:
    """'2G', '512M', '300k' or a number of bytes -> bytes (powers of 1024)."""
    if isinstance(text, int):
        return text
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


@dataclass
class Limits:
    """One student's caps: memory in bytes (RAM, no swap), tasks (processes and threads), disk in bytes (their
    home, /tmp and submissions together), /dev/shm in bytes (counted in memory too)."""
    memory: int = 2 << 30
    tasks: int = 512
    disk: int = 1 << 30
    shm: int = 64 << 20

    @classmethod
    def parse(cls, text: str) -> "Limits":
        """'memory=2G,tasks=512,disk=1G' (any subset) -> Limits."""
        values = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, _, value = part.partition("=")
            if name not in cls.__dataclass_fields__:
                raise JailError(f"unknown limit {name!r} (memory, tasks, disk, shm)")
            values[name] = int(value) if name == "tasks" else parse_size(value)
        return cls(**values)


# --- cgroups ------------------------------------------------------------------------------------------------------

def cgroup_version(root: Path = CGROUP_ROOT) -> int:
    """2 when the unified hierarchy has the memory and pids controllers, 1 when v1 hierarchies for both are
    mounted (hybrid, as here), else 0 (no way to cap a student)."""
    controllers = root / "cgroup.controllers"
    if controllers.exists() and {"memory", "pids"} <= set(controllers.read_text().split()):
        return 2
    if (root / "memory" / "cgroup.procs").exists() and (root / "pids" / "cgroup.procs").exists():
        return 1
    return 0


@dataclass
class Cgroup:
    """The student `user`'s cgroup(s) under the class's `group` (one per v1 hierarchy, one in v2)."""
    group: str
    user: str
    root: Path = CGROUP_ROOT

    @property
    def folders(self) -> list[Path]:
        """v2: the one folder; v1: memory, pids, then cpu (a CPU share) where the machine has that hierarchy."""
        version = cgroup_version(self.root)
        if version == 2:
            return [self.root / self.group / self.user]
        if version == 1:
            cpu = [self.root / "cpu" / self.group / self.user] if (self.root / "cpu" / "cgroup.procs").exists() else []
            return [self.root / "memory" / self.group / self.user, self.root / "pids" / self.group / self.user] + cpu
        raise JailError(f"no cgroup memory and pids controllers under {self.root}: a student's memory and tasks "
                        "cannot be capped on this machine")

    def create(self, limits: Limits) -> None:
        """Create the cgroup (and the class's) where missing and set its limits (again: a changed limit holds)."""
        if cgroup_version(self.root) == 2:
            for parent in (self.root, self.root / self.group):
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
            folder = self.folders[0]
            folder.mkdir(exist_ok=True)
            (folder / "cpu.weight").write_text(str(CPU_WEIGHT))   # siblings share the CPU by weight
            (folder / "memory.max").write_text(str(limits.memory))
            if (folder / "memory.swap.max").exists():
                (folder / "memory.swap.max").write_text("0")
            (folder / "pids.max").write_text(str(limits.tasks))
            return
        memory, pids, *cpu = self.folders
        for folder in self.folders:
            folder.mkdir(parents=True, exist_ok=True)
        for folder in cpu:   # cpu.shares: 1024 is v1's default, the equal of v2's weight 100
            (folder / "cpu.shares").write_text(str(CPU_WEIGHT * 1024 // 100))
        (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
        if (memory / "memory.memsw.limit_in_bytes").exists():   # swap accounting on: no swap beyond the limit
            (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
        (pids / "pids.max").write_text(str(limits.tasks))

    def join(self, pid: int) -> None:
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found = set()
        for folder in self.folders:
            if (folder / "cgroup.procs").exists():
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
        return found

    def charged(self) -> int:
        """Tasks counted against the limit: the live ones and the zombies no one has reaped yet."""
        if cgroup_version(self.root) == 2:
            current = self.folders[0] / "pids.current"
        else:
            current = self.folders[1] / "pids.current"
        return int(current.read_text()) if current.exists() else 0

    def kill(self, keep_tops: bool = False, timeout: float = 10) -> None:
        """SIGKILL every process in it (a fork bomb included: repeated until none is left or `timeout` s). The
        tops (processes whose parent is outside: the tini above each server, a subreaper) go last, once they have
        reaped the rest: a zombie whose reaper is gone would count against the limit for good where the machine's
        init does not reap (some containers). `keep_tops`: leave them running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                return
            tops = {pid for pid in left if _parent(pid) not in left}
            if left - tops:
                targets = left - tops
            elif self.charged() > len(tops):
                targets = set()          # only the tops are alive, still reaping the rest: wait
            elif keep_tops:
                return
            else:
                targets = tops
            for pid in targets:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def remove(self) -> None:
        """Kill what runs in it and remove it (and the class's group once empty)."""
        try:
            folders = self.folders
        except JailError:
            return
        self.kill()
        for folder in folders:
            for path in (folder, folder.parent):
                try:
                    path.rmdir()
                except OSError:
                    pass   # absent, or the class's group still holds other students


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


# --- the student's disk -----------------------------------------------------------------------------------------

def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise JailError(f"`{' '.join(command)}` failed ({done.returncode}): {done.stderr.strip()}")


@dataclass
class Disk:
    """A student's file system: <disks>/<user>.img mounted at <disks>/<user>/, with home/ bind-mounted at `home`.
    <disks> is root's and the grader's group's (0750); each mounted disk 0711."""
    disks: Path
    user: str
    home: Path

    @property
    def image(self) -> Path:
        return self.disks / f"{self.user}.img"

    @property
    def mount(self) -> Path:
        return self.disks / self.user

    @property
    def inbound(self) -> Path:
        return self.mount / "inbound"

    @property
    def tmp(self) -> Path:
        return self.mount / "tmp"

    def create(self, size: int, uid: int, gid: int, grader_gid: int) -> None:
        """Make the image (sparse: it takes disk only as it fills) and its folders if missing, then `attach`.
        inbound/ is the student's, readable by the grader's group (collect reads it), nobody else's."""
        self.disks.mkdir(parents=True, exist_ok=True)
        os.chown(self.disks, 0, grader_gid)   # the grader lists it (collect); students never reach it directly:
        self.disks.chmod(0o750)                # their home, /tmp and inbound/ are mounted where they work
        if not self.image.exists():
            with open(self.image, "wb") as f:
                f.truncate(size)
            self.image.chmod(0o600)
            run(["mkfs.ext4", "-q", "-m", "0", "-E", "root_owner=0:0", str(self.image)])
        self.attach()
        for name, mode, group in (("home", 0o700, gid), ("tmp", 0o700, gid), ("inbound", 0o750, grader_gid)):
            folder = self.mount / name
            if not folder.exists():
                folder.mkdir()
                os.chown(folder, uid, group)
                folder.chmod(mode)
        self.mount.chmod(0o711)
        self.attach()

    def attach(self) -> None:
        """Mount the image and bind its home/ at the account's home, where not yet (after a reboot: `start`)."""
        self.mount.mkdir(exist_ok=True)
        if not os.path.ismount(self.mount):
            run(["mount", "-o", "loop,nosuid,nodev", str(self.image), str(self.mount)])
        if (self.mount / "home").is_dir() and not os.path.ismount(self.home):
            self.home.mkdir(parents=True, exist_ok=True)
            run(["mount", "--bind", str(self.mount / "home"), str(self.home)])

    def detach(self) -> None:
        for path in (self.home, self.mount):
            if os.path.ismount(path):
                run(["umount", "--lazy", str(path)])

    def remove(self) -> None:
        self.detach()
        self.image.unlink(missing_ok=True)
        if self.mount.is_dir():
            self.mount.rmdir()


# --- entering the jail (in the child, as root, before becoming the student) --------------------------------------

def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise JailError(f"{what}: {os.strerror(errno)}")


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _mounts() -> list[tuple[str, int]]:
    """(mount point, the flags to keep) of every mount in this namespace, from /proc/self/mountinfo."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        target = fields[4].encode().decode("unicode_escape")   # spaces are written as \040
        flags = sum(KEPT_FLAGS.get(option, 0) for option in fields[5].split(","))
        found.append((target, flags))
    return found


def _inside(path: str, folder: Path) -> bool:
    return path == str(folder) or path.startswith(str(folder).rstrip("/") + "/")


def enter(cgroup: Cgroup, disk: Disk, inbound: str, limits: Limits) -> None:
    """Confine the calling process (root, about to become the student): see the module's docstring. Raises
    JailError (the spawn fails) rather than start anything unconfined."""
    cgroup.create(limits)   # where missing; limits set again, so that a changed one holds
    cgroup.join(os.getpid())
    libc = _libc()
    # a mount namespace, and an IPC one: SysV shared memory, semaphores and message queues of their own, gone with
    # the last of their processes (nothing left for the next account given the same uid)
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare(CLONE_NEWNS | CLONE_NEWIPC)")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)   # nothing done here reaches the host's mounts
    for target, flags in _mounts():
        if _inside(target, disk.mount) or target == str(disk.home) or target.startswith(WRITABLE_KERNEL_MOUNTS):
            continue
        try:
            _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except JailError:
            if not os.path.exists(target):   # hidden under a later mount: nothing to reach
                continue
            raise
    # a /proc of its own that shows only their own processes (procfs's hidepid, per mount since Linux 5.8): not the
    # hub, Formgrader or a classmate's server and command lines
    _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    _mount(libc, str(disk.tmp), "/tmp", None, MS_BIND)
    _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits.shm},mode=1777")
    if os.path.isdir(inbound):
        _mount(libc, str(disk.inbound), inbound, None, MS_BIND)
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    # the next process started (the inner tini of `tini -- tini -s -- command`) is PID 1 of a namespace of its own:
    # it reaps what the student orphans, and when it ends the kernel ends and reaps everything left under it, so no
    # zombie is left counting against their tasks, whatever the machine's own init does
    _check(libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def namespace_init(top: int, timeout: float = 10) -> int:
    """The init of a server's PID namespace: the child of `top`, the outer tini the spawner started (its inner tini,
    started right after `enter`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{top}/task/{top}/children").read_text().split()
        except OSError:   # a kernel without CONFIG_PROC_CHILDREN: look for it
            children = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(int(p.name)) == top]
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise JailError(f"process {top} started no init of a PID namespace within {timeout:.0f} s")


def mount_own_proc(init: int) -> None:
    """A /proc of the student's own PID namespace, mounted inside her mount namespace (as root, from outside: nsenter
    forks into her PID namespace, which `enter` could not yet do). `enter` mounted the host's procfs with hidepid,
    where her tools found no /proc/self ("fatal library error, lookup self" from ps and top); this one shows exactly
    her processes."""
    run(["nsenter", f"--target={init}", "--mount", "--pid", "--", "mount", "-t", "proc", "-o", "nosuid,nodev,noexec",
         "proc", "/proc"])
