"""Runs in the zygote's children, before any student code: the walls around one notebook process.

- an unprivileged user: when the grader runs as root, the process becomes a uid of its own (one per worker slot,
  no account, no files), so the kernel's exemptions for root (the process limit) do not apply; directories on the
  way to Python that such a uid could not pass through (a 0700 /root holding pyenv) are covered, in a private mount
  namespace, by an empty tmpfs into which only the paths the notebook may read are bound back;
- namespaces: user, mount, PID (with its own /proc: the notebook sees its own processes only), network (no
  interfaces) and IPC;
- a disk cap: the working folder is a tmpfs of `disk_mib` in the notebook's own mount namespace (the grader never
  reads it back; it vanishes with the process);
- resource limits (setrlimit): memory, CPU seconds, processes, file size, no core dumps;
- no transparent huge pages: every page of memory the notebook touches is one 4 KiB page, so the grader can count
  new memory by page faults (autograder/grader/cost.py; the notebook could turn them back on, which the grader sees);
- on a machine with an NVIDIA GPU, CUDA initialised before Landlock (`open_gpu` says why);
- Landlock (Linux 5.13+): read only Python, system libraries and the course's `utils/`; write only the working
  folder; no TCP (6.7+); no signals outside (6.12+).

Why system calls by hand rather than bubblewrap or nsjail: both start a new program, so every notebook would pay a
fresh interpreter plus `import torch`, where a fork of the warm zygote costs a small fraction of that (measured:
docs/benchmarks.md, "The sandbox"); the calls below are the ones bubblewrap makes, applied to a forked process.
"""
from __future__ import annotations

import ctypes
import os
import resource
import stat
import sys
from pathlib import Path

from autograder.limits import Limits, MiB

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x10000000, 0x20000000, 0x40000000, 0x08000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_THP_DISABLE = 1, 4, 38, 41
_libc = ctypes.CDLL(None, use_errno=True)
# Where the working folder's tmpfs goes: the first of these that holds none of what the notebook must read.
WORK_MOUNTS = ("/tmp", "/var/tmp", "/mnt", "/media", "/srv")


class WallError(OSError):
    """A wall could not be built; the notebook does not start (the grader's fault, never the student's)."""


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise WallError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, options: str | None = None) -> None:
    _call(_libc.mount(source.encode() if source else None, target.encode(), kind.encode() if kind else None,
                      ctypes.c_ulong(flags), options.encode() if options else None), f"mount {kind or source} on {target}")


def die_with_parent() -> None:
    """SIGKILL this process when the process that forked it ends (set after the last change of credentials, which
    clears it)."""
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)


# ---- what a notebook may read ----------------------------------------------------------------------------------
def readable_paths(walled: list[Path], utils: Path) -> list[Path]:
    """What a notebook may read: this interpreter's Python, system libraries, /proc, /sys, /dev, /etc and the course's
    `utils/`; never anything under, or holding, a walled path (the course with its `source/` and `reference/`, the
    grader's folders), except a virtual environment inside the course (its Python)."""
    candidates = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    candidates |= {Path(p) for p in sys.path if p}
    candidates |= {Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/opt")}
    walled = [p.resolve() for p in walled]
    venv = Path(sys.prefix).resolve()
    allowed = set()
    for path in candidates:
        if not path.exists():
            continue
        path = path.resolve()
        inside_venv = path.is_relative_to(venv) and venv not in walled
        if any(w == path or w.is_relative_to(path) or (path.is_relative_to(w) and not inside_venv) for w in walled):
            continue
        allowed.add(path)
    allowed.add(utils.resolve())
    return sorted(allowed)


def work_mount(readable: list[Path]) -> Path:
    """The folder the notebook's tmpfs covers: the first of WORK_MOUNTS that holds nothing it must read, under any of
    its names (a virtual environment reached through a link in /tmp is covered too)."""
    needed = list(readable) + [Path(p).absolute() for p in sys.path + [sys.prefix, sys.exec_prefix, sys.executable] if p]
    for candidate in map(Path, WORK_MOUNTS):
        if candidate.is_dir() and not candidate.is_symlink() and \
                not any(p.is_relative_to(candidate) or candidate.is_relative_to(p) for p in needed):
            return candidate
    raise WallError(0, f"no folder among {', '.join(WORK_MOUNTS)} is free of the Python installation to hold the "
                       "notebook's working folder")


# ---- an unprivileged user (when the grader is root) -------------------------------------------------------------
def _passable(path: Path) -> bool:
    """True when a user with no rights of owner or group may pass through `path` (search permission for others)."""
    return bool(os.stat(path).st_mode & stat.S_IXOTH)


def _cover_closed_folders(readable: list[Path]) -> None:
    """In a private mount namespace (as real root): for each folder that others may not pass through on the way to a
    readable path, put an empty tmpfs over it and bind back only the readable paths beneath it."""
    _call(_libc.unshare(CLONE_NEWNS), "unshare(mount namespace)")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    blocked: dict[Path, list[Path]] = {}
    for path in readable:
        closed = next((a for a in reversed(path.parents) if a != Path("/") and not _passable(a)), None)
        if closed is not None:
            blocked.setdefault(closed, []).append(path)
    for closed, paths in sorted(blocked.items(), key=lambda item: len(item[0].parts)):
        keep = [p for p in paths if not any(q != p and p.is_relative_to(q) for q in paths)]
        handles = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in keep}
        _mount("tmpfs", str(closed), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for path, fd in handles.items():
            target = Path(closed, path.relative_to(closed))
            if stat.S_ISDIR(os.fstat(fd).st_mode):
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
            _mount(f"/proc/self/fd/{fd}", str(target), None, MS_BIND | MS_REC)
            os.close(fd)


def become_unprivileged(uid: int, readable: list[Path]) -> None:
    """As root: cover closed folders (on the way to what the notebook reads, under its names as this interpreter
    knows them too: a virtual environment linked from a private folder), then become `uid` (and group `uid`, no other
    groups) for good."""
    named = [Path(p).absolute() for p in sys.path + [sys.prefix, sys.exec_prefix] if p and Path(p).exists()]
    _cover_closed_folders(list(dict.fromkeys(readable + named)))
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # a change of uid made /proc/self root's; the uid map below needs it


# ---- namespaces ------------------------------------------------------------------------------------------------
def enter_namespaces(network: bool) -> list[str]:
    """Move this (single-threaded, freshly forked) process into new user, mount, PID, IPC and (unless `network`)
    network namespaces, mapping its own uid to root inside; the PID namespace applies to the children of this
    process (fork once more). Returns the ones entered; where user namespaces are not allowed, none."""
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (0 if network else CLONE_NEWNET)
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        return []
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    return ["user", "mount", "pid", "ipc"] + ([] if network else ["net"])


def private_mounts(work: Path, disk_mib: int) -> None:
    """In the notebook's own mount and PID namespaces: its own /proc, and a tmpfs of `disk_mib` as its working
    folder."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount("tmpfs", str(work), "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_mib}m,mode=0700")


def gpu_device_files() -> list[Path]:
    """NVIDIA device files a notebook needs to use the GPU (empty on a machine without one)."""
    return sorted(Path("/dev").glob("nvidia*"))


def open_gpu() -> str:
    """On a machine with NVIDIA device files, before Landlock: initialise CUDA in this process (its context on the
    current GPU) and say what came of it. Under the notebook's Landlock ruleset CUDA's initialisation fails with
    error 304 ("OS call failed"), even with all of /dev writable and / readable (seen on an H100: driver 580, Linux
    6.18, Landlock ABI 7; docs/gpu.md); done first, it works, and the ruleset then holds for everything else. A GPU
    that cannot be initialised leaves the notebook on the CPU, as on a machine without one."""
    import torch
    try:
        torch.zeros(1, device="cuda")
    except Exception as error:  # the notebook runs on the CPU; the walls say why
        return f"no CUDA ({type(error).__name__}: {str(error)[:120]})"
    return f"CUDA on {torch.cuda.get_device_name()} (initialised before Landlock)"


# ---- resource limits ------------------------------------------------------------------------------------------
def mapped_bytes() -> int:
    """Virtual memory this process has mapped now (VmSize), in bytes; 0 where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def apply_rlimits(limits: Limits) -> None:
    """Cap memory (on top of what is mapped already), CPU time, processes, file size and core dumps."""
    def cap(which: int, value: int) -> None:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass  # a limit the platform does not have, or one lower already: keep what is there
    if gpu_device_files():
        # CUDA reserves terabytes of address space up front, so on a GPU machine the cap is on private
        # writable memory (RLIMIT_DATA) instead of all mappings.
        cap(resource.RLIMIT_DATA, limits.memory_mib * MiB + mapped_bytes())
    else:
        cap(resource.RLIMIT_AS, mapped_bytes() + limits.memory_mib * MiB)
    cap(resource.RLIMIT_CPU, int(limits.cpu_seconds))
    cap(resource.RLIMIT_NPROC, limits.max_processes)
    cap(resource.RLIMIT_FSIZE, limits.file_mib * MiB)
    cap(resource.RLIMIT_CORE, 0)


def no_huge_pages() -> list[str]:
    """Turn transparent huge pages off for this process and its children (prctl PR_SET_THP_DISABLE): each page of
    memory it touches is then one 4 KiB page fault, which is how the grader counts new memory (grader/cost.py). The
    wall built, or [] where the kernel refuses."""
    if _libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
        return []
    return ["4 KiB pages (no transparent huge pages)"]


# ---- Landlock -------------------------------------------------------------------------------------------------
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read file, read dir
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1}  # abi >= 5: (1 << 16) - 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """Landlock ABI version of this kernel (0 when unavailable)."""
    if not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"):
        return 0
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(version, 0)


def restrict_filesystem(readable: list[Path], writable: list[Path], network: bool) -> list[str]:
    """Allow this process (and its children) to read only `readable`, write only `writable`; return the
    walls built ('files', 'tcp', 'signals'), or [] where Landlock is missing."""
    abi = landlock_abi()
    if abi == 0:
        return []
    all_fs = _FS_RIGHTS_BY_ABI.get(abi, (1 << 16) - 1)
    attr = _RulesetAttr(handled_access_fs=all_fs,
                        handled_access_net=(0b11 if abi >= 4 and not network else 0),
                        scoped=(0b11 if abi >= 6 else 0))
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return []
    try:
        for paths, rights in ((readable, _READ), (writable, all_fs)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                # a rule on a file may only grant file rights (not read-dir / make-* ones)
                allowed = rights if os.path.isdir(path) else rights & ((1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15))
                rule = _PathBeneathAttr(allowed_access=allowed & all_fs, parent_fd=fd)
                _libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
                os.close(fd)
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return []
    finally:
        os.close(ruleset)
    return ["files"] + (["tcp"] if attr.handled_access_net else []) + (["signals"] if attr.scoped else [])
