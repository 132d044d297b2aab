"""The walls around one notebook process, built from what Linux offers without Docker or root helpers.

- resource limits (setrlimit): memory, CPU seconds, processes, file size, no core dumps;
- namespaces (unshare): a user namespace (so the process limit counts only the notebook's own processes),
  a network namespace with no interfaces, and a PID namespace (killing its first process kills everything
  the notebook started, fork loops included);
- Landlock (Linux 5.13+): the process may read only the Python installation, system libraries and the
  course's `utils/`, may write only its own working folder, may not open TCP connections (Linux 6.7+) and may
  not signal processes outside itself (Linux 6.12+).

Each wall is probed at start-up; `describe()` says which ones this machine gives. Elsewhere (macOS, old
kernels, containers that forbid namespaces) the grader still runs, with the walls it could build.
"""
from __future__ import annotations

import ctypes
import os
import resource
import sys
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

LIMITS_FILE = Path(__file__).resolve().parent / "limits.toml"
MiB = 2**20


@dataclass(frozen=True)
class Limits:
    """Per-submission limits; defaults and meaning in `limits.toml`."""
    cell_seconds: float = 60
    notebook_seconds: float = 300
    cpu_seconds: int = 300
    memory_mib: int = 3072
    max_processes: int = 64
    file_mib: int = 64
    output_chars: int = 20000
    max_restarts: int = 3
    network: bool = False
    workers: int = 0
    torch_threads: int = 1
    feedback: str = "hints"


def load_limits(path: Path = LIMITS_FILE, overrides: list[str] = ()) -> Limits:
    """Limits from the TOML file, then `name=value` overrides (each converted to the field's type)."""
    values = tomllib.loads(path.read_text())
    known = {f.name: f.type for f in fields(Limits)}
    for item in overrides:
        name, _, text = item.partition("=")
        if name not in known:
            raise ValueError(f"unknown limit {name!r}; known: {', '.join(known)}")
        values[name] = text.lower() in ("1", "true", "yes") if known[name] == "bool" else \
            text if known[name] == "str" else float(text)
    unknown = set(values) - set(known)
    if unknown:
        raise ValueError(f"unknown limit(s) {', '.join(sorted(unknown))} in {path.name}")
    converted = {name: (int(v) if known[name] == "int" else v) for name, v in values.items()}
    if converted.get("feedback", "hints") not in ("hints", "full"):
        raise ValueError(f"feedback must be \"hints\" or \"full\", not {converted['feedback']!r}")
    return replace(Limits(), **converted)


# ---- namespaces ------------------------------------------------------------------------------------------
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _unshare(flags: int) -> bool:
    return _libc.unshare(ctypes.c_int(flags)) == 0


def enter_namespaces(network: bool) -> list[str]:
    """Move this (single-threaded, freshly forked) process into new namespaces; return the ones entered.

    The PID namespace applies to the children of this process: fork once more after calling this.
    """
    entered = []
    uid, gid = os.geteuid(), os.getegid()
    if _unshare(CLONE_NEWUSER):
        try:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
            Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
            entered.append("user")
        except OSError:
            pass
    wanted = CLONE_NEWPID | (0 if network else CLONE_NEWNET)
    if _unshare(wanted):
        entered += ["pid"] + ([] if network else ["net"])
    elif _unshare(CLONE_NEWPID):
        entered.append("pid")
    return entered


def gpu_device_files() -> list[Path]:
    """NVIDIA device files a notebook needs to use the GPU (empty on a machine without one)."""
    return sorted(Path("/dev").glob("nvidia*"))


# ---- resource limits -------------------------------------------------------------------------------------
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
        # writable memory (RLIMIT_DATA) instead of all mappings. Not yet exercised on a real GPU (issue #7).
        cap(resource.RLIMIT_DATA, limits.memory_mib * MiB + mapped_bytes())
    else:
        cap(resource.RLIMIT_AS, mapped_bytes() + limits.memory_mib * MiB)
    cap(resource.RLIMIT_CPU, int(limits.cpu_seconds))
    cap(resource.RLIMIT_NPROC, limits.max_processes)
    cap(resource.RLIMIT_FSIZE, limits.file_mib * MiB)
    cap(resource.RLIMIT_CORE, 0)


# ---- Landlock --------------------------------------------------------------------------------------------
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
_PR_SET_NO_NEW_PRIVS = 38
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
        _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return []
    finally:
        os.close(ruleset)
    return ["files"] + (["tcp"] if attr.handled_access_net else []) + (["signals"] if attr.scoped else [])


def probe(limits: Limits) -> list[str]:
    """The walls a notebook process gets on this machine, found by building them in a throwaway child."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: try everything, report, exit
        os.close(read_fd)
        walls = ["rlimits"] + [f"{ns} namespace" for ns in enter_namespaces(limits.network)]
        walls += [f"landlock {w}" for w in restrict_filesystem([], [], limits.network)]
        os.write(write_fd, ",".join(walls).encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        report = f.read()
    os.waitpid(pid, 0)
    return [w for w in report.split(",") if w]
