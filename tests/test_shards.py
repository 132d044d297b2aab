"""Shards (autograder/shards.py): every student in exactly one shard for any count, `--shard auto` from a Slurm
array's or a Kubernetes Indexed Job's environment, clear errors for shards that do not exist, and the shipped
Slurm script and Kubernetes manifest use it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder import shards
from autograder.grades_csv import write_summary
from autograder.outcome import Event, EventKind, read_summary_json
from autograder.shards import ShardError

REPO = Path(__file__).resolve().parent.parent


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=6), unique=True, max_size=60), st.integers(1, 70))
def test_every_student_is_in_exactly_one_shard_for_any_count(students, count):
    everyone = sorted(students)
    slices = [shards.members(everyone, k, count) for k in range(1, count + 1)]
    assert sorted(s for part in slices for s in part) == everyone  # each once, none lost
    sizes = [len(part) for part in slices]
    assert max(sizes) - min(sizes) <= 1  # shards about equal


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 500), st.integers(0, 3), st.integers(1, 3), st.data())
def test_a_slurm_array_maps_its_tasks_onto_shards_one_to_one(count, first, step, data):
    """Without GRADER_SHARDS, whatever the array's first task (0 or 1 or more) and step, its tasks are shards 1..N,
    each once."""
    task = data.draw(st.integers(0, count - 1))
    env = {"SLURM_ARRAY_TASK_ID": str(first + task * step), "SLURM_ARRAY_TASK_COUNT": str(count),
           "SLURM_ARRAY_TASK_MIN": str(first), "SLURM_ARRAY_TASK_STEP": str(step)}
    index, total, how = shards.resolve("auto", None, env)
    assert (index, total) == (task + 1, count) and "Slurm" in how


def test_slurm_arrays_starting_at_zero_or_one():
    assert shards.resolve("auto", None, {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4",
                                         "SLURM_ARRAY_TASK_MIN": "0"})[:2] == (1, 4)
    assert shards.resolve("auto", None, {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4",
                                         "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"})[:2] == (4, 4)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.data())
def test_with_grader_shards_a_task_is_its_shard_however_it_is_resubmitted(count, data):
    """deploy/slurm/grade.sbatch sets GRADER_SHARDS=N and submits --array=1-N. Task K is shard K of N in the first
    array and in any later array of some of its tasks (`sbatch --array=K`, `--array=2,5`, `--array=1-7:2`), which
    Slurm sees as a new, smaller array."""
    rerun = sorted(data.draw(st.sets(st.integers(1, count), min_size=1)))
    for task in rerun:
        env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(len(rerun)),
               "SLURM_ARRAY_TASK_MIN": str(rerun[0]), "SLURM_ARRAY_TASK_MAX": str(rerun[-1]),
               "GRADER_SHARDS": str(count)}
        index, total, how = shards.resolve("auto", None, env)
        assert (index, total) == (task, count) and f"GRADER_SHARDS={count}" in how


def test_a_rerun_of_one_task_is_that_task_of_the_first_array_never_the_whole_class():
    """Issue #33: `sbatch --array=2` re-running task 2 of 4 is an array of one to Slurm. With the script's
    GRADER_SHARDS it is shard 2 of 4; without it, it is refused (it used to be shard 1 of 1: the whole class)."""
    rerun = {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "2",
             "SLURM_ARRAY_TASK_MAX": "2"}
    assert shards.resolve("auto", None, {**rerun, "GRADER_SHARDS": "4"})[:2] == (2, 4)
    assert shards.resolve("auto", 4, rerun)[:2] == (2, 4)
    with pytest.raises(ShardError, match=r"an array of one task .* `sbatch --array=2` .* Set GRADER_SHARDS=N"):
        shards.resolve("auto", None, rerun)


def test_a_shard_output_folder_refuses_another_shard(tmp_path):
    """A re-run given another count of shards than the first would grade other students into the same folder."""
    shards.check_output(tmp_path, (3, 4))  # nothing there yet
    shards.write_output_record(tmp_path, (3, 4), ["carol", "grace"])
    shards.check_output(tmp_path, (3, 4))
    assert shards.read_output_record(tmp_path) == {"index": 3, "count": 4, "students": ["carol", "grace"]}
    with pytest.raises(ShardError, match="holds shard 3 of 4, but this run is shard 3 of 8: a re-run must use the "
                                         "first run's number of shards"):
        shards.check_output(tmp_path, (3, 8))


def test_a_run_into_another_shards_folder_blames_the_folder_not_the_count(tmp_path):
    """Issue #49, item 10: the same count and another index is a run pointed at another shard's --out; the message
    says so, and does not send the instructor to change the number of shards."""
    shards.write_output_record(tmp_path, (1, 2), ["ann"])
    with pytest.raises(ShardError) as refused:
        shards.check_output(tmp_path, (2, 2))
    message = str(refused.value)
    assert "holds shard 1 of 2, but this run is shard 2 of 2: each shard writes a folder of its own " \
           "(--out out/shard-2" in message and "nothing was graded" in message, message
    assert "number of shards" not in message and "GRADER_SHARDS" not in message


def test_kubernetes_indexed_job_with_the_count_given():
    env = {"JOB_COMPLETION_INDEX": "2"}
    assert shards.resolve("auto", 5, env)[:2] == (3, 5)
    index, total, how = shards.resolve("auto", None, {**env, "GRADER_SHARDS": "3"})
    assert (index, total) == (3, 3) and "JOB_COMPLETION_INDEX=2" in how
    with pytest.raises(ShardError, match="--shard-count N or set GRADER_SHARDS"):
        shards.resolve("auto", None, env)


@pytest.mark.parametrize("spec, count, env, message", [
    ("1/0", None, {}, "at least one shard"),
    ("0/3", None, {}, "shards are numbered 1 to 3"),
    ("4/3", None, {}, "shard 4 of 3 does not exist"),
    ("2", None, {}, "use K/N"),
    ("a/b", None, {}, "not a whole number"),
    ("2/4", 3, {}, "disagree"),
    ("auto", None, {}, "no scheduler's environment found"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "0"}, "at least one shard"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"},
     "shard 10 of 4 does not exist"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "1"}, "SLURM_ARRAY_TASK_COUNT is not"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "2"},
     "not on the array's range"),
    ("auto", 0, {"JOB_COMPLETION_INDEX": "0"}, "at least one shard"),
    ("auto", 2, {"JOB_COMPLETION_INDEX": "2"}, "shard 3 of 2 does not exist"),
    ("auto", None, {"JOB_COMPLETION_INDEX": "0", "GRADER_SHARDS": "0"}, "at least one shard"),
    ("auto", None, {"JOB_COMPLETION_INDEX": "0", "SLURM_ARRAY_TASK_ID": "0"}, "both"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0",
                    "SLURM_ARRAY_TASK_MAX": "3", "GRADER_SHARDS": "4"}, r"task ids are the shards' numbers, 1 to 4"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "16", "SLURM_ARRAY_TASK_MIN": "1",
                    "SLURM_ARRAY_TASK_MAX": "16", "GRADER_SHARDS": "4"}, r"submit --array=1-4"),
    ("auto", None, {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "1", "GRADER_SHARDS": "0"},
     "at least one shard"),
])
def test_shards_that_do_not_exist_are_clear_errors(spec, count, env, message):
    with pytest.raises(ShardError, match=message):
        shards.resolve(spec, count, env)


def test_the_grader_says_which_shard_it_took_and_refuses_bad_ones(tmp_path):
    """The command line: a bad shard stops the run before anything is read or written (exit 2, one line)."""
    (tmp_path / "source").mkdir()
    (tmp_path / "submitted").mkdir()
    base = [sys.executable, "-m", "autograder.grade", "--course", str(tmp_path), "--out", str(tmp_path / "out")]
    clean = {k: v for k, v in __import__("os").environ.items()
             if not k.startswith("SLURM_") and k not in ("JOB_COMPLETION_INDEX", "GRADER_SHARDS")}
    for extra, env, message in [(["--shard", "auto"], {}, "no scheduler's environment found"),
                                (["--shard", "auto"], {"JOB_COMPLETION_INDEX": "4", "GRADER_SHARDS": "4"},
                                 "shard 5 of 4 does not exist")]:
        done = subprocess.run(base + extra, cwd=REPO, env={**clean, **env}, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path / "gradebook.db").exists()


def test_the_slurm_script_and_the_kubernetes_job_use_shard_auto():
    script = (REPO / "deploy" / "slurm" / "grade.sbatch").read_text()
    assert script.startswith("#!/bin/bash") and "#SBATCH --array=" in script
    assert "autograder.grade" in script and "--shard auto" in script
    subprocess.run(["bash", "-n", str(REPO / "deploy" / "slurm" / "grade.sbatch")], check=True)
    documents = [d for d in yaml.safe_load_all((REPO / "deploy" / "k8s" / "grade-job.yaml").read_text()) if d]
    job = next(d for d in documents if d["kind"] == "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] >= 1
    container = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert int(env["GRADER_SHARDS"]) == spec["completions"]  # the count the pods are told is the Job's
    command = " ".join(container["command"] + container.get("args", []))
    assert "autograder.grade" in command and "--shard auto" in command


def shard_output(folder: Path, index: int, count: int, students: list[str], summary: list[Event]) -> Path:
    """A finished shard's output folder: grades.csv (a TOTAL row per student), summary.txt and .json, shard.json."""
    folder.mkdir(parents=True)
    (folder / "grades.csv").write_text("student,assignment,task,title,score,max_score,late_penalty,status,note\n" +
                                       "".join(f"{s},01_floats,TOTAL,assignment total,1,3,0,graded,\n" for s in students))
    write_summary(folder, summary)
    shards.write_output_record(folder, (index, count), students)
    return folder


def test_the_merge_refuses_a_missing_a_doubled_or_a_foreign_shard(tmp_path):
    from autograder.merge import MergeError, merge
    one = shard_output(tmp_path / "shard-1", 1, 3, ["ann"], [])
    three = shard_output(tmp_path / "shard-3", 3, 3, ["cy"], [])
    (tmp_path / "shard-2").mkdir()  # a task that was cancelled: it never wrote shard.json
    with pytest.raises(MergeError, match=r"shard 2 of 3 is missing .*shard-2 did not finish.*sbatch --array=2 "):
        merge([one, tmp_path / "shard-2", three], tmp_path / "out")
    again = shard_output(tmp_path / "again", 1, 3, ["ann"], [])
    with pytest.raises(MergeError, match="shard 1 of 3 is given twice"):
        merge([one, again, three], tmp_path / "out")
    other = shard_output(tmp_path / "other", 2, 4, ["bob"], [])
    with pytest.raises(MergeError, match="shards of different counts"):
        merge([one, other, three], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written


def test_the_merge_writes_one_summary_for_the_class(tmp_path):
    from autograder.merge import merge
    first = shard_output(tmp_path / "shard-1", 1, 2, ["ann", "cy"], [
        Event(EventKind.GRADED, "graded 2 submission(s) in 3.0 s (0 unchanged, reused)"),
        Event(EventKind.SUBMISSION, "ann 01_floats: 2.0 h after the due date -> late penalty 0.3 points"),
        Event.pending("01_floats", 2, 1, ["a", "b"]), Event.no_submission("01_floats", ["cy"]),
        Event.new_students(["cy"])])
    second = shard_output(tmp_path / "shard-2", 2, 2, ["bob", "dee"], [
        Event(EventKind.GRADED, "graded 1 submission(s) in 2.0 s (0 unchanged, reused)"),
        # a run line worded like a student's, and a student's worded like a run's: the kind decides, not the words
        Event(EventKind.MACHINE, "no submission: on this machine: 2 worker(s)"),
        Event(EventKind.SUBMISSION, "graded by hand: bob 01_floats"),
        Event.pending("01_floats", 1, 1, ["c"]), Event.no_submission("01_floats", ["dee"]),
        Event.new_students(["bob"])])
    assert merge([second, first], tmp_path / "out") == 4
    expected = [
        "shard 1/2: graded 2 submission(s) in 3.0 s (0 unchanged, reused)",
        "shard 2/2: graded 1 submission(s) in 2.0 s (0 unchanged, reused)",
        "shard 2/2: no submission: on this machine: 2 worker(s)",
        "ann 01_floats: 2.0 h after the due date -> late penalty 0.3 points",
        "graded by hand: bob 01_floats",
        "needs manual grading (formgrader): 01_floats: 3 answer(s) in 2 submission(s), cells a, b, c",
        "no submission: 01_floats: cy, dee",
        "not on the roster, added to the gradebook: bob, cy"]
    assert (tmp_path / "out" / "summary.txt").read_text().splitlines() == expected
    merged = read_summary_json((tmp_path / "out" / "summary.json").read_text(), "summary.json")
    assert [e.text for e in merged] == expected
    assert merged[-2] == Event.no_submission("01_floats", ["cy", "dee"])  # merged by kind, typed again


def test_a_shard_from_before_summary_json_keeps_its_lines_and_one_without_status_is_refused(tmp_path):
    from autograder.merge import MergeError, merge
    first = shard_output(tmp_path / "shard-1", 1, 2, ["ann"], [])
    second = shard_output(tmp_path / "shard-2", 2, 2, ["bob"], [])
    (second / "summary.json").unlink()
    (second / "summary.txt").write_text("graded 1 submission(s) in 2.0 s (0 unchanged, reused)\nno submission: 01_floats: x\n")
    merge([first, second], tmp_path / "out")
    assert (tmp_path / "out" / "summary.txt").read_text().splitlines() == [  # each line once, as it is: never parsed
        "graded 1 submission(s) in 2.0 s (0 unchanged, reused)", "no submission: 01_floats: x"]
    csv = second / "grades.csv"
    csv.write_text(csv.read_text().replace(",status", "").replace(",graded,", ","))
    with pytest.raises(MergeError, match="has no status column.*Grade again.*nothing was merged"):
        merge([first, second], tmp_path / "out2")
    assert not (tmp_path / "out2").exists()
