"""Runs in the grader (the instructor's side): the per-submission limits of `limits.toml`, typed.

The sandboxed side receives them as plain data (protocol.Spawn) and builds its walls from them.
"""
from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, get_type_hints

from autograder import cgroups
from autograder.errors import GraderError
from autograder.strict import fields_of

LIMITS_FILE = Path(__file__).resolve().parent / "limits.toml"
MiB = 2**20


@dataclass(frozen=True)
class Limits:
    """Per-submission limits. Their values and what each means are written once, in `limits.toml`, which must give
    every one of them (load_limits); this class types them."""
    cell_seconds: float
    notebook_seconds: float
    cpu_seconds: int
    memory_mib: int
    max_processes: int
    file_mib: int
    disk_mib: int
    output_chars: int
    notebook_output_chars: int
    max_restarts: int
    network: bool
    workers: int
    torch_threads: int
    feedback: str
    first_sandbox_uid: int
    require_landlock: bool
    # The limits given on the command line (--limit NAME=VALUE): they win over the course's own settings, such as its
    # c.Execute.timeout. Not a limit itself: never sent to the sandbox, never part of what a result depends on.
    overridden: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def as_dict(self) -> dict:
        """The limits, as the sandboxed side receives them (protocol.Spawn)."""
        return {name: value for name, value in asdict(self).items() if name != "overridden"}

    @classmethod
    def from_dict(cls, values: dict, overridden: frozenset[str] = frozenset()) -> Limits:
        """Limits from a dict of exactly its fields (`overridden` apart), each of its field's type (ValueError
        otherwise: autograder/strict.py, the project's one strict reader)."""
        if "overridden" in values:
            raise ValueError("limits with fields ['overridden'], which is no limit")
        return cls(**fields_of(cls, values, "limits", ValueError, frozenset({"overridden"})), overridden=overridden)


def _types() -> dict[str, Any]:
    """{limit: its type}."""
    return {name: kind for name, kind in get_type_hints(Limits).items() if name != "overridden"}


def load_limits(path: Path = LIMITS_FILE, overrides: Sequence[str] = ()) -> Limits:
    """Limits from the TOML file, which gives every limit, then `name=value` overrides (each converted to the field's
    type, and named in `overridden`). ValueError naming what is unknown, missing or of the wrong type."""
    values = tomllib.loads(path.read_text())
    known = _types()
    for item in overrides:
        name, _, text = item.partition("=")
        if name not in known:
            raise ValueError(f"unknown limit {name!r}; known: {', '.join(known)}")
        kind = known[name]
        values[name] = text.lower() in ("1", "true", "yes") if kind is bool else \
            text if kind is str else int(float(text)) if kind is int else float(text)
    unknown, missing = set(values) - set(known), set(known) - set(values)
    if unknown or missing:
        raise ValueError(f"{path.name}: unknown limit(s) {', '.join(sorted(unknown)) or 'none'}, missing "
                         f"{', '.join(sorted(missing)) or 'none'}")
    if values["feedback"] not in ("hints", "full"):
        raise ValueError(f"feedback must be \"hints\" or \"full\", not {values['feedback']!r}")
    return Limits.from_dict(values, frozenset(item.partition("=")[0] for item in overrides))


def usable_cpus(environ: Mapping[str, str] | None = None) -> int:
    """CPUs this process may use: its affinity, capped by a cgroup's CPU quota (a Kubernetes pod's limit, a Slurm
    job's cgroup) and by the CPUs Slurm gave the task (SLURM_CPUS_PER_TASK, for clusters that do not bind tasks to
    their CPUs), at least 1."""
    environ = os.environ if environ is None else environ
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cgroup_quota()
    if quota:
        count = min(count, max(1, int(quota)))
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


GRADER_RESERVE_MIB = 1024  # the grader itself, its zygote and the results it holds for a shard (docs/benchmarks.md)
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
    """This process's own cgroup's memory limit in MiB (v2 memory.max, v1 memory.limit_in_bytes, the smallest from
    its cgroup up: autograder/cgroups.py), None when unlimited."""
    limit = cgroups.memory_limit_bytes()
    return None if limit is None else limit // MiB


class MemoryTooSmall(GraderError, ValueError):
    """The job or pod has too little memory for the grader and one notebook; the message says what to ask for."""


def fit_to_machine(limits: Limits, environ: Mapping[str, str] | None = None) -> tuple[Limits, str]:
    """The limits with `workers` (when 0: one per usable CPU) fitted to this job's or pod's CPUs and memory, and a
    line saying how. A notebook's own memory limit is part of its grade and never changes with the machine (issue
    #49: a smaller one failed students an unlimited run passes); workers are cut so that each notebook's limit fits
    after the grader's GRADER_RESERVE_MIB, down to one. Where even one does not fit, the line says so: a notebook the
    kernel then stops for want of the job's memory is NOT GRADED (grader/notebooks.py), never charged. MemoryTooSmall
    when the job cannot hold the grader and MIN_NOTEBOOK_MIB."""
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
    fitted = max(1, min(workers, budget // limits.memory_mib))
    if fitted < workers:
        how = f"{fitted} worker(s) (memory for {fitted} of the {workers} wanted)"
    how += (f"; {total} MiB for the job ({source}), {GRADER_RESERVE_MIB} MiB kept for the grader: "
            f"{limits.memory_mib} MiB per notebook")
    if budget < limits.memory_mib:
        how += (f" (more than the {budget} MiB left: a notebook the kernel stops for want of this job's memory is "
                f"NOT GRADED, never charged; ask for {GRADER_RESERVE_MIB + limits.memory_mib} MiB)")
    return replace(limits, workers=fitted), how


def _cgroup_quota() -> float | None:
    """CPUs allowed by this process's own cgroup's quota (v2 cpu.max, v1 cfs_quota_us / cfs_period_us, the smallest
    from its cgroup up: autograder/cgroups.py), None when unlimited."""
    return cgroups.cpu_quota()
