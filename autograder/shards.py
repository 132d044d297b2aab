"""Runs in the grader: which slice of the class one grading run takes: `--shard K/N`, or `--shard auto` from the
scheduler's environment.

A shard takes every N-th student of the sorted class (the roster and the submitters): shard K of N grades
students K-1, K-1+N, K-1+2N, ... so every student is in exactly one shard whatever N is, and shards stay about
equal in size (they differ by at most one student). Shards never write the same submission; each writes its
students into the one gradebook in its own transaction (README: "grading on many machines").

`--shard auto` reads the scheduler's environment:
- Slurm job arrays (`sbatch --array=0-7` or `--array=1-8`, deploy/slurm/grade.sbatch): SLURM_ARRAY_TASK_ID,
  SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN (arrays may start at 0 or 1, or anywhere) and, for a stepped range
  such as `--array=0-14:2`, SLURM_ARRAY_TASK_STEP;
- a Kubernetes Indexed Job (deploy/k8s/grade-job.yaml): JOB_COMPLETION_INDEX (0-based), with the count given by
  `--shard-count N` or the GRADER_SHARDS variable (Kubernetes does not tell a pod how many completions there are).
Anything that does not add up (a count of 0, an index out of range, no scheduler at all, both at once) is a
ShardError with a message that says what was read and what to do; nothing is graded then.
"""
from __future__ import annotations

from typing import Mapping, Sequence, TypeVar

T = TypeVar("T")

SLURM_VARIABLES = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP")
K8S_INDEX = "JOB_COMPLETION_INDEX"
COUNT_VARIABLE = "GRADER_SHARDS"


class ShardError(ValueError):
    """The shard asked for does not exist or cannot be worked out; the message says why and what to do."""


def members(everyone: Sequence[T], index: int, count: int) -> list[T]:
    """The members of shard `index` (1-based) of `count`: every `count`-th of `everyone`, starting at index-1."""
    check(index, count)
    return list(everyone[index - 1::count])


def check(index: int, count: int) -> None:
    if count < 1:
        raise ShardError(f"a shard count of {count}: there must be at least one shard (use --shard 1/1 for the "
                         "whole class)")
    if not 1 <= index <= count:
        raise ShardError(f"shard {index} of {count} does not exist: shards are numbered 1 to {count}")


def _integer(value: str | None, name: str) -> int:
    try:
        return int(str(value).strip())
    except ValueError:
        raise ShardError(f"{name}={value!r} is not a whole number") from None


def parse(spec: str, count: int | None = None) -> tuple[int, int]:
    """`K/N` -> (K, N), checked. `count` (from --shard-count) must agree with N when both are given."""
    parts = spec.split("/")
    if len(parts) != 2:
        raise ShardError(f"bad --shard {spec!r}: use K/N (such as 2/8) with 1 <= K <= N, or 'auto'")
    index, total = (_integer(p, "--shard") for p in parts)
    check(index, total)
    if count is not None and count != total:
        raise ShardError(f"--shard {spec} and --shard-count {count} disagree")
    return index, total


def from_environment(environ: Mapping[str, str], count: int | None = None) -> tuple[int, int, str]:
    """(K, N, what was read) from a Slurm array task's or a Kubernetes Indexed Job pod's environment."""
    slurm = environ.get("SLURM_ARRAY_TASK_ID") not in (None, "")
    k8s = environ.get(K8S_INDEX) not in (None, "")
    if slurm and k8s:
        raise ShardError(f"--shard auto: both SLURM_ARRAY_TASK_ID and {K8S_INDEX} are set, so which scheduler "
                         "runs this is unclear; give --shard K/N")
    if slurm:
        task = _integer(environ["SLURM_ARRAY_TASK_ID"], "SLURM_ARRAY_TASK_ID")
        if environ.get("SLURM_ARRAY_TASK_COUNT") in (None, ""):
            raise ShardError("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not "
                             "(Slurm sets both for a job array, `sbatch --array=...`)")
        total = _integer(environ["SLURM_ARRAY_TASK_COUNT"], "SLURM_ARRAY_TASK_COUNT")
        first = _integer(environ.get("SLURM_ARRAY_TASK_MIN", "0") or "0", "SLURM_ARRAY_TASK_MIN")
        step = _integer(environ.get("SLURM_ARRAY_TASK_STEP", "1") or "1", "SLURM_ARRAY_TASK_STEP")
        if step < 1:
            raise ShardError(f"SLURM_ARRAY_TASK_STEP={step}: a step must be at least 1")
        if (task - first) % step:
            raise ShardError(f"--shard auto: array task {task} is not on the array's range (first {first}, "
                             f"step {step}); use a plain range such as --array=0-{max(total - 1, 0)}")
        index = (task - first) // step + 1
        if count is not None and count != total:
            raise ShardError(f"--shard-count {count} disagrees with SLURM_ARRAY_TASK_COUNT={total}")
        read = (f"Slurm array task {task} (SLURM_ARRAY_TASK_MIN={first}, SLURM_ARRAY_TASK_STEP={step}, "
                f"SLURM_ARRAY_TASK_COUNT={total})")
        try:
            check(index, total)
        except ShardError as error:
            raise ShardError(f"--shard auto: {read}: {error}") from None
        return index, total, read
    if k8s:
        task = _integer(environ[K8S_INDEX], K8S_INDEX)
        if count is None:
            if environ.get(COUNT_VARIABLE) in (None, ""):
                raise ShardError(f"--shard auto: {K8S_INDEX}={task} is set, but not how many shards there are: give "
                                 f"--shard-count N or set {COUNT_VARIABLE} (the Job's `completions`)")
            count = _integer(environ[COUNT_VARIABLE], COUNT_VARIABLE)
        read = f"Kubernetes Indexed Job, {K8S_INDEX}={task} of {count} completions"
        try:
            check(task + 1, count)
        except ShardError as error:
            raise ShardError(f"--shard auto: {read}: {error}") from None
        return task + 1, count, read
    raise ShardError("--shard auto: no scheduler's environment found (neither SLURM_ARRAY_TASK_ID from a Slurm "
                     f"job array nor {K8S_INDEX} from a Kubernetes Indexed Job); give --shard K/N instead")


def resolve(spec: str, count: int | None, environ: Mapping[str, str]) -> tuple[int, int, str]:
    """(K, N, how) for the command line's --shard (K/N or auto) and --shard-count."""
    if spec.strip().lower() == "auto":
        return from_environment(environ, count)
    index, total = parse(spec, count)
    return index, total, f"--shard {index}/{total}"
