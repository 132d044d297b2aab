"""Runs in the grader (the instructor's side): the per-submission limits of `limits.toml`, typed.

The sandboxed side receives them as plain data (protocol.Spawn) and builds its walls from them.
"""
from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

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
    notebook_output_chars: int = 200000
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
        known = {f.name: str(f.type) for f in fields(cls)}  # a str: annotations are postponed here
        if set(values) != set(known):
            raise ValueError(f"limits with fields {sorted(values)}, expected {sorted(known)}")
        types = {"float": (int, float), "int": (int,), "bool": (bool,), "str": (str,)}
        for name, value in values.items():
            if type(value) not in types[known[name]] or (known[name] != "bool" and type(value) is bool):
                raise ValueError(f"limit {name} = {value!r} is not a {known[name]}")
        return cls(**values)


def load_limits(path: Path = LIMITS_FILE, overrides: Sequence[str] = ()) -> Limits:
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
    converted: dict[str, Any] = {name: (int(v) if known[name] == "int" else v) for name, v in values.items()}
    if converted.get("feedback", "hints") not in ("hints", "full"):
        raise ValueError(f"feedback must be \"hints\" or \"full\", not {converted['feedback']!r}")
    return replace(Limits(), **converted)


def usable_cpus(environ: Mapping[str, str] | None = None) -> int:
    """CPUs this process may use: its affinity, capped by a cgroup's CPU quota (a Kubernetes pod's limit, a Slurm
    job's cgroup) and by the CPUs Slurm gave the task (SLURM_CPUS_PER_TASK, for clusters that do not bind tasks to
    their CPUs), at least 1."""
    environ = os.environ if environ is None else environ
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cgroup_quota()
    if quota:
        count = min(count, int(quota))
    slurm = _whole(environ.get("SLURM_CPUS_PER_TASK"))
    if slurm:
        count = min(count, slurm)
    return max(1, count)


def _whole(text: str | None) -> int | None:
    """A positive whole number from an environment variable, or None (unset, empty, not a number, 0)."""
    try:
        value = int(str(text).strip())
    except ValueError:
        return None
    return value if value > 0 else None


GRADER_RESERVE_MIB = 1024  # the grader itself, its zygote and the results it holds for a shard (about 1 GiB at most)
MIN_NOTEBOOK_MIB = 1024    # the least memory a notebook process is given; below it the run stops and says so
MEMORY_VARIABLE = "GRADER_MEMORY_MIB"  # a pod's memory limit in MiB, from the downward API (deploy/k8s/grade-job.yaml)


def usable_memory_mib(environ: Mapping[str, str] | None = None) -> tuple[int, str] | None:
    """(MiB of memory this process and its children may use together, where that figure came from), or None when
    nothing limits it: the smallest of the cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes), a
    Kubernetes pod's limit given as GRADER_MEMORY_MIB, and a Slurm job's --mem (SLURM_MEM_PER_NODE) or --mem-per-cpu
    (SLURM_MEM_PER_CPU times the task's CPUs), all in MiB (Slurm's M is a MiB)."""
    environ = os.environ if environ is None else environ
    found = []
    cgroup = _cgroup_memory_mib()
    if cgroup:
        found.append((cgroup, "the cgroup's memory limit"))
    pod = _whole(environ.get(MEMORY_VARIABLE))
    if pod:
        found.append((pod, f"{MEMORY_VARIABLE}={pod}"))
    per_node = _whole(environ.get("SLURM_MEM_PER_NODE"))
    if per_node:
        found.append((per_node, f"SLURM_MEM_PER_NODE={per_node}"))
    per_cpu = _whole(environ.get("SLURM_MEM_PER_CPU"))
    cpus = _whole(environ.get("SLURM_CPUS_PER_TASK")) or _whole(environ.get("SLURM_CPUS_ON_NODE")) or 1
    if per_cpu:
        found.append((per_cpu * cpus, f"SLURM_MEM_PER_CPU={per_cpu} x {cpus} CPU(s)"))
    return min(found) if found else None


def _cgroup_memory_mib() -> int | None:
    """The cgroup's memory limit in MiB (v2 memory.max, v1 memory.limit_in_bytes), None when unlimited."""
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:  # v1 writes "no limit" as a number near 2**63
            return int(text) // MiB
        return None
    return None


class MemoryTooSmall(ValueError):
    """The job or pod has too little memory for the grader and one notebook; the message says what to ask for."""


def fit_to_machine(limits: Limits, environ: Mapping[str, str] | None = None) -> tuple[Limits, str]:
    """The limits with `workers` (when 0: one per usable CPU) and each notebook's `memory_mib` fitted to this job's
    or pod's CPUs and memory, and a line saying how: workers are cut so that each gets at least MIN_NOTEBOOK_MIB
    after the grader's GRADER_RESERVE_MIB, and each notebook's memory limit is at most its share. MemoryTooSmall when
    not even one worker fits."""
    cpus = usable_cpus(environ)
    workers = limits.workers or cpus
    memory = usable_memory_mib(environ)
    how = f"{workers} worker(s) ({'--workers' if limits.workers else f'{cpus} usable CPU(s)'})"
    if memory is None:
        return replace(limits, workers=workers), f"{how}; no memory limit on this job: {limits.memory_mib} MiB per notebook"
    total, source = memory
    budget = total - GRADER_RESERVE_MIB
    if budget < MIN_NOTEBOOK_MIB:
        raise MemoryTooSmall(f"this job may use {total} MiB of memory ({source}), but the grader needs "
                             f"{GRADER_RESERVE_MIB} MiB for itself and at least {MIN_NOTEBOOK_MIB} MiB per notebook: "
                             f"ask for at least {GRADER_RESERVE_MIB + MIN_NOTEBOOK_MIB} MiB (Slurm: --mem, Kubernetes: "
                             "resources.limits.memory); nobody was graded")
    fitted = min(workers, budget // MIN_NOTEBOOK_MIB)
    per_notebook = min(limits.memory_mib, budget // fitted)
    if fitted < workers:
        how = f"{fitted} worker(s) (memory for {fitted} of the {workers} wanted)"
    how += (f"; {total} MiB for the job ({source}), {GRADER_RESERVE_MIB} MiB kept for the grader: "
            f"{per_notebook} MiB per notebook")
    return replace(limits, workers=fitted, memory_mib=per_notebook), how


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
