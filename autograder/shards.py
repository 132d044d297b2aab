"""Runs in the grader: which slice of the class one grading run takes: `--shard K/N`, or `--shard auto` from the
scheduler's environment.

A shard takes every N-th student of the sorted class (the roster and the submitters): shard K of N grades
students K-1, K-1+N, K-1+2N, ... so every student is in exactly one shard whatever N is, and shards stay about
equal in size (they differ by at most one student). Shards never write the same submission; each writes its
students into the one gradebook in its own transaction (docs/clusters.md).

`--shard auto` reads the scheduler's environment:
- Slurm job arrays (deploy/slurm/grade.sbatch): SLURM_ARRAY_TASK_ID. With the number of shards given (GRADER_SHARDS,
  which the script sets, or --shard-count), the task id is the shard's number, 1 to N, so a task re-run alone with
  `sbatch --array=K` (an array of one, to Slurm) is still shard K of N. Without it, SLURM_ARRAY_TASK_COUNT,
  SLURM_ARRAY_TASK_MIN (arrays may start at 0 or 1, or anywhere) and SLURM_ARRAY_TASK_STEP say which of the array's
  tasks this is, and an array of one task is refused (it is what such a re-run looks like);
- a Kubernetes Indexed Job (deploy/k8s/grade-job.yaml): JOB_COMPLETION_INDEX (0-based), with the count given by
  `--shard-count N` or the GRADER_SHARDS variable (Kubernetes does not tell a pod how many completions there are).
Anything that does not add up (a count of 0, an index out of range, no scheduler at all, both at once) is a
ShardError with a message that says what was read and what to do; nothing is graded then.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence, TypeVar

from autograder.atomic import write_atomically
from autograder.errors import GraderError

T = TypeVar("T")

K8S_INDEX = "JOB_COMPLETION_INDEX"
RECORD = "shard.json"  # in a run's output folder: which shard of how many it holds, and its students
COUNT_VARIABLE = "GRADER_SHARDS"


class ShardError(GraderError, ValueError):
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


def _count(environ: Mapping[str, str], count: int | None) -> int | None:
    """How many shards, when given: --shard-count N, else the GRADER_SHARDS variable; None when neither is."""
    if count is not None:
        return count
    if environ.get(COUNT_VARIABLE) in (None, ""):
        return None
    return _integer(environ[COUNT_VARIABLE], COUNT_VARIABLE)


def _slurm(environ: Mapping[str, str], count: int | None) -> tuple[int, int, str]:
    """(K, N, what was read) for a Slurm array task. With N given (GRADER_SHARDS, which deploy/slurm/grade.sbatch
    sets, or --shard-count), the task id is the shard's number, 1 to N, however the task was submitted: the
    original `--array=1-N`, or `sbatch --array=K` re-running task K alone (an array of one, to Slurm). Without N,
    the array itself says how many shards there are (its tasks in order are shards 1..N, from 0 or 1 or anywhere),
    and an array of one task is refused: it is what a re-run of one task looks like."""
    task = _integer(environ["SLURM_ARRAY_TASK_ID"], "SLURM_ARRAY_TASK_ID")
    if environ.get("SLURM_ARRAY_TASK_COUNT") in (None, ""):
        raise ShardError("--shard auto: SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not "
                         "(Slurm sets both for a job array, `sbatch --array=...`)")
    size = _integer(environ["SLURM_ARRAY_TASK_COUNT"], "SLURM_ARRAY_TASK_COUNT")
    first = _integer(environ.get("SLURM_ARRAY_TASK_MIN", "0") or "0", "SLURM_ARRAY_TASK_MIN")
    last = _integer(environ.get("SLURM_ARRAY_TASK_MAX", str(task)) or str(task), "SLURM_ARRAY_TASK_MAX")
    given = _count(environ, count)
    if given is not None:
        read = f"Slurm array task {task} (array {first}-{last}, {size} task(s)), shards counted by " + \
            (f"--shard-count {count}" if count is not None else f"{COUNT_VARIABLE}={given}")
        if given < 1:
            raise ShardError(f"--shard auto: {read}: a shard count of {given}: there must be at least one shard")
        if first < 1 or last > given:
            raise ShardError(f"--shard auto: {read}: with {given} shards the array's task ids are the shards' "
                             f"numbers, 1 to {given}: submit --array=1-{given} (or set {COUNT_VARIABLE} to the "
                             "array's size); nothing was graded")
        return task, given, read
    if size == 1:
        raise ShardError(f"--shard auto: Slurm array task {task} is an array of one task (SLURM_ARRAY_TASK_COUNT=1): "
                         f"that is what `sbatch --array={task}` makes to re-run one task of a larger array, whose "
                         f"size Slurm no longer gives. Set {COUNT_VARIABLE}=N, the number of shards "
                         "(deploy/slurm/grade.sbatch sets it), or give --shard K/N; nothing was graded")
    step = _integer(environ.get("SLURM_ARRAY_TASK_STEP", "1") or "1", "SLURM_ARRAY_TASK_STEP")
    if step < 1:
        raise ShardError(f"SLURM_ARRAY_TASK_STEP={step}: a step must be at least 1")
    if (task - first) % step:
        raise ShardError(f"--shard auto: array task {task} is not on the array's range (first {first}, "
                         f"step {step}); use a plain range such as --array=0-{max(size - 1, 0)}")
    index = (task - first) // step + 1
    read = (f"Slurm array task {task} (SLURM_ARRAY_TASK_MIN={first}, SLURM_ARRAY_TASK_STEP={step}, "
            f"SLURM_ARRAY_TASK_COUNT={size})")
    try:
        check(index, size)
    except ShardError as error:
        raise ShardError(f"--shard auto: {read}: {error}") from None
    return index, size, read


def from_environment(environ: Mapping[str, str], count: int | None = None) -> tuple[int, int, str]:
    """(K, N, what was read) from a Slurm array task's or a Kubernetes Indexed Job pod's environment."""
    slurm = environ.get("SLURM_ARRAY_TASK_ID") not in (None, "")
    k8s = environ.get(K8S_INDEX) not in (None, "")
    if slurm and k8s:
        raise ShardError(f"--shard auto: both SLURM_ARRAY_TASK_ID and {K8S_INDEX} are set, so which scheduler "
                         "runs this is unclear; give --shard K/N")
    if slurm:
        return _slurm(environ, count)
    if k8s:
        task = _integer(environ[K8S_INDEX], K8S_INDEX)
        count = _count(environ, count)
        if count is None:
            raise ShardError(f"--shard auto: {K8S_INDEX}={task} is set, but not how many shards there are: give "
                             f"--shard-count N or set {COUNT_VARIABLE} (the Job's `completions`)")
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


# ---- a run's output folder says which shard it holds ----------------------------------------------------------
def read_output_record(out: Path) -> dict | None:
    """{"index": K, "count": N, "students": [...]} from OUT/shard.json, written when a run has finished its output;
    None when there is none (a run that has not finished, or from before shard.json)."""
    try:
        record = json.loads((out / RECORD).read_text())
        return {"index": int(record["index"]), "count": int(record["count"]), "students": list(record["students"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_output(out: Path, shard: tuple[int, int]) -> None:
    """ShardError when `out` holds another shard's grades (say a re-run of task 3 given another count of shards than
    the first run: its shard 3 would be other students), before anything is read or written."""
    record = read_output_record(out)
    if not record or (record["index"], record["count"]) == tuple(shard):
        return
    held = f"{out} holds shard {record['index']} of {record['count']}, but this run is shard {shard[0]} of {shard[1]}"
    if record["count"] == shard[1]:  # the same count, another index: this run was pointed at another shard's folder
        raise ShardError(f"{held}: each shard writes a folder of its own (--out out/shard-{shard[0]}; the shipped "
                         "scripts name it after the shard); give this run its own --out; nothing was graded")
    raise ShardError(f"{held}: a re-run must use the first run's number of shards ({COUNT_VARIABLE}="
                     f"{record['count']}), or give this run another --out; nothing was graded")


def write_output_record(out: Path, shard: tuple[int, int], students: Sequence[str]) -> None:
    """Write OUT/shard.json (through a temporary file and a rename): this output is shard K of N, these students."""
    write_atomically(out / RECORD, json.dumps({"index": shard[0], "count": shard[1], "students": list(students)},
                                              indent=1))
