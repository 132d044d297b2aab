"""Runs in the grader: this process's own cgroup (v1 or v2), read from the kernel: its memory limit and CPU quota
(what the grader sizes its workers from, limits.fit_to_machine), and the kernel's own accounting of what happened
in it: OOM kills, times the memory limit was hit, and the time a process waited for a CPU (issue #49: a notebook
killed or timed out because the machine, not the student, was short is the grader's fault).

Where the limits are: `/proc/self/cgroup` names this process's cgroup in each hierarchy (`0::/path` on v2,
`N:memory:/path` and `N:cpu,cpuacct:/path` on v1), and `/proc/self/mountinfo` where each hierarchy is mounted and
which of its folders the mount shows (a container sees its own cgroup as `/`). A limit set on an ancestor binds too,
so the smallest from this cgroup up to the mount's top counts. The files are the hierarchy's files of that cgroup,
never the hierarchy's root (which has no limit).
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

MiB = 2**20
NO_LIMIT = 2**60  # v1 writes "no limit" as a number near 2**63


@dataclass(frozen=True)
class Hierarchy:
    """One cgroup hierarchy as this process sees it: the folders of its own cgroup and each ancestor the mount shows,
    own first; `version` 1 or 2."""
    version: int
    folders: tuple[Path, ...]

    @property
    def own(self) -> Path:
        return self.folders[0]


def _mounts(mountinfo: str) -> list[tuple[str, Path, str, set[str]]]:
    """(root inside the hierarchy, mount point, file system type, super options) of each cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        found.append((fields[3], Path(fields[4].replace("\\040", " ")), tail[0], set(tail[2].split(","))))
    return found


def own_hierarchy(controller: str, proc_cgroup: str | None = None, mountinfo: str | None = None) -> Hierarchy | None:
    """This process's cgroup for `controller` ("memory" or "cpu"): v1 when a v1 hierarchy carries the controller,
    else v2 when the unified hierarchy enables it for the cgroup; None when neither (no limit can apply)."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    except OSError:
        return None
    paths = {}
    for line in proc_cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        paths[("v2",) if number == "0" and controllers == "" else tuple(controllers.split(","))] = path
    mounts = _mounts(mountinfo)
    for root, point, kind, options in mounts:
        if kind == "cgroup" and controller in options:
            mine = next((p for names, p in paths.items() if controller in names), None)
            if mine is not None:
                return _hierarchy(1, root, point, mine)
    for root, point, kind, _ in mounts:
        if kind == "cgroup2" and ("v2",) in paths:
            found = _hierarchy(2, root, point, paths[("v2",)])
            try:
                enabled = (found.own / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if controller in enabled and found.own.is_dir():
                return found
    return None


def _hierarchy(version: int, root: str, point: Path, path: str) -> Hierarchy:
    """The folders from the cgroup `path` (in the hierarchy) up to the top the mount at `point` (showing `root`)
    shows."""
    relative = os.path.relpath(path, root) if path.startswith(root) else "."
    parts = [] if relative == "." else [p for p in Path(relative).parts if p not in ("/", "..")]
    folders = [point.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]
    return Hierarchy(version, tuple(folders))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@functools.lru_cache(maxsize=None)
def _own(controller: str) -> Hierarchy | None:
    """own_hierarchy(controller), looked up once per process: a process's cgroup does not change while it grades (a
    forked worker is in its parent's), and the grader asks before every cell's reply."""
    return own_hierarchy(controller)


def memory_limit_bytes(hierarchy: Hierarchy | None = None) -> int | None:
    """The memory this process's cgroup and its children may use together, in bytes (the smallest limit from its
    own cgroup up: v2 memory.max, v1 memory.limit_in_bytes); None when unlimited."""
    hierarchy = hierarchy or _own("memory")
    if hierarchy is None:
        return None
    name = "memory.max" if hierarchy.version == 2 else "memory.limit_in_bytes"
    limits = [int(text) for folder in hierarchy.folders for text in [_read(folder / name)]
              if text and text.isdigit() and int(text) < NO_LIMIT]
    return min(limits) if limits else None


def cpu_quota(hierarchy: Hierarchy | None = None) -> float | None:
    """CPUs this process's cgroup may use (the smallest quota / period from its own cgroup up: v2 cpu.max, v1
    cpu.cfs_quota_us / cpu.cfs_period_us); None when unlimited."""
    hierarchy = hierarchy or _own("cpu")
    if hierarchy is None:
        return None
    quotas = []
    for folder in hierarchy.folders:
        try:
            if hierarchy.version == 2:
                text = (_read(folder / "cpu.max") or "max").split()
                if text[0] != "max":
                    quotas.append(int(text[0]) / int(text[1]))
            else:
                quota, period = int(_read(folder / "cpu.cfs_quota_us") or -1), int(_read(folder / "cpu.cfs_period_us") or 0)
                if quota > 0 and period > 0:
                    quotas.append(quota / period)
        except (ValueError, IndexError, ZeroDivisionError):
            continue
    return min(quotas) if quotas else None


@dataclass(frozen=True)
class MemoryEvents:
    """The kernel's count of OOM kills of processes in this cgroup (v2 memory.events oom_kill, v1
    memory.oom_control oom_kill; the machine's /proc/vmstat oom_kill where no memory cgroup is found) and of the
    times its memory limit was hit (v2 memory.events max, v1 memory.failcnt); and the machine's count of every OOM
    kill (/proc/vmstat oom_kill), which also counts kills in other cgroups: a child cgroup's on v1, whose counts do
    not reach its parent's, or the whole machine running out where this job has no limit of its own."""
    oom_kills: int
    limit_hits: int
    where: str
    machine_oom_kills: int = 0


def memory_events(hierarchy: Hierarchy | None = None) -> MemoryEvents:
    """The counters now (compare two readings: a notebook killed while oom_kills rose was killed by the kernel for
    want of memory)."""
    hierarchy = hierarchy or _own("memory")
    machine = _keyed(_read(Path("/proc/vmstat"))).get("oom_kill", 0)
    if hierarchy is not None:
        own = hierarchy.own
        if hierarchy.version == 2:
            events = _keyed(_read(own / "memory.events"))
            if "oom_kill" in events:
                return MemoryEvents(events["oom_kill"], events.get("max", 0), f"the cgroup {own}", machine)
        else:
            control = _keyed(_read(own / "memory.oom_control"))
            if "oom_kill" in control:
                return MemoryEvents(control["oom_kill"], int(_read(own / "memory.failcnt") or 0), f"the cgroup {own}",
                                    machine)
    return MemoryEvents(machine, 0, "this machine", machine)


def oom_kills_since(before: MemoryEvents, hierarchy: Hierarchy | None = None) -> str:
    """What the kernel's OOM killer did in this cgroup (or machine) since `before`, naming the memory limit and how
    often it was hit, as a clause of a sentence; '' when it killed nothing. The one wording of every message that
    blames the machine's memory (a part of the grader that died, a notebook killed by the kernel)."""
    after = memory_events(hierarchy)
    if after.oom_kills <= before.oom_kills:
        return ""
    limit = memory_limit_bytes(hierarchy)
    return (f"the kernel's OOM killer killed {after.oom_kills - before.oom_kills} process(es) in {after.where} "
            f"(its memory limit: {'none' if limit is None else f'{limit // 2**20} MiB'}, hit "
            f"{after.limit_hits - before.limit_hits} time(s))")


def grader_oom_kills_since(before: MemoryEvents, hierarchy: Hierarchy | None = None) -> str:
    """`oom_kills_since`, or else, when the kernel's OOM killer acted elsewhere on the machine (a cgroup of its own
    below this one, as a v1 child cgroup, or the machine itself out of memory), that: for a part of the grader that
    died (the trusted checker, a worker, the zygote), whose death is the grader's and never a student's, so naming
    every kill the machine saw is a fact worth reading, not a charge. '' when the kernel killed nothing."""
    own = oom_kills_since(before, hierarchy)
    if own:
        return own
    after = memory_events(hierarchy)
    if after.machine_oom_kills <= before.machine_oom_kills:
        return ""
    return (f"the kernel's OOM killer killed {after.machine_oom_kills - before.machine_oom_kills} process(es) on this "
            f"machine (none counted in {after.where}: a cgroup of their own, or the whole machine out of memory)")


def out_of_memory_note(before: MemoryEvents, hierarchy: Hierarchy | None = None) -> str:
    """' (out of memory: the kernel's OOM killer ...)' when it killed processes in this cgroup or on this machine
    since `before`; '' otherwise. For the message of a part of the grader that died."""
    killed = grader_oom_kills_since(before, hierarchy)
    if not killed:
        return ""
    return f" (out of memory: {killed} during this run; grade again with fewer --workers or more memory)"


def _keyed(text: str | None) -> dict[str, int]:
    """{name: number} from a flat-keyed cgroup or /proc file ("name value" lines)."""
    found = {}
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            found[name] = int(value)
    return found


@dataclass(frozen=True)
class CpuClock:
    """What the kernel counted for a process's threads, in seconds: time on a CPU, and time runnable but waiting
    for one (another process had it, or the cgroup's CPU quota was used up: /proc/PID/task/*/schedstat)."""
    on_cpu: float
    waiting: float


def cpu_clock(pid: int) -> CpuClock | None:
    """The process's clock now (summed over its threads); None when it is gone or the kernel does not say."""
    on_cpu = waiting = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        text = _read(Path(f"/proc/{pid}/task/{task}/schedstat"))
        if text is None:
            continue
        fields = text.split()
        if len(fields) >= 2:
            on_cpu += int(fields[0])
            waiting += int(fields[1])
    return CpuClock(on_cpu / 1e9, waiting / 1e9)


def pid_of(pidfd: int) -> int | None:
    """The process id a pidfd refers to (its `Pid:` line in /proc/self/fdinfo); None when unknown or gone."""
    for line in (_read(Path(f"/proc/self/fdinfo/{pidfd}")) or "").splitlines():
        if line.startswith("Pid:"):
            value = int(line.split()[1])
            return value if value > 0 else None
    return None
