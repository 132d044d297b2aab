"""Runs in the grader (the instructor's side): the per-submission limits of `limits.toml`, typed.

The sandboxed side receives them as plain data (protocol.Spawn) and builds its walls from them.
"""
from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, fields, replace
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
    disk_mib: int = 256
    output_chars: int = 20000
    max_restarts: int = 3
    network: bool = False
    workers: int = 0
    torch_threads: int = 1
    feedback: str = "hints"
    first_sandbox_uid: int = 4_200_000_000
    require_landlock: bool = True

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "Limits":
        """Limits from a dict of exactly its fields, each of its field's type (ValueError otherwise)."""
        known = {f.name: f.type for f in fields(cls)}
        if set(values) != set(known):
            raise ValueError(f"limits with fields {sorted(values)}, expected {sorted(known)}")
        types = {"float": (int, float), "int": (int,), "bool": (bool,), "str": (str,)}
        for name, value in values.items():
            if type(value) not in types[known[name]] or (known[name] != "bool" and type(value) is bool):
                raise ValueError(f"limit {name} = {value!r} is not a {known[name]}")
        return cls(**values)


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


def usable_cpus() -> int:
    """CPUs this process may use: its affinity, capped by a cgroup's CPU quota (a Kubernetes pod's limit, a Slurm
    job's cgroup), at least 1."""
    import os
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cgroup_quota()
    return max(1, min(count, int(quota)) if quota else count)


def _cgroup_quota() -> float | None:
    """CPUs allowed by the cgroup's quota (v2 cpu.max, or v1 cfs_quota_us / cfs_period_us), None when unlimited."""
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if text and text[0] != "max":
            return int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 and period > 0 else None
    except (OSError, ValueError):
        return None
