"""The grader's boundary, attacked from the student's side (issue #30): what a notebook process can reach and what the
grader reads back.

One small class, graded once by `python -m autograder.grade`:
- a snooper looks for secrets everywhere a process can look at itself (its whole memory, frames, gc, environment,
  descriptors, /proc): the source's solutions, a classmate's name, the gradebook's URL, another assignment's cases;
- an impersonator leaves links named as the old grader's start-up error file (to /proc/kmsg, a classmate's result)
  and exits with the code the old grader read them on;
- a liar swaps every hand-in for crafted JSON (shapes that lie, overflowing floats, quantized dtypes, deep nesting);
- a disk bomb writes 1.5 GiB; a markdown answer cell; a forger writes messages into the grader's reply pipe; and one
  correct answer per rule-bound task reached by a route its rule forbids (tests/submissions.py, RULE_BREAKERS).
On the grader as it was (13ee9be) the snooper found all four secrets and every process on the machine, the
impersonator's links were read into feedback (the /proc/kmsg one hung the run), the liar was "NOT GRADED, the
grader's fault", the bomb wrote 1.5 GiB, the markdown answer scored 0, and every rule breaker earned full marks.
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from autograder.limits import load_limits
from tests import submissions, warm

REPO = Path(__file__).resolve().parent.parent
FIRST = "01_floats"
OTHER = "09_mixed_precision"
NEEDLES = [("source/'s solution markers", "### BEGIN", " SOLUTION"), ("a classmate's id", "clas", "smate-ada"),
           ("the gradebook's URL", "gradebook", ".db"), ("exercise 9's hidden cases", "mixed_prec", "ision.autocast_dtype")]
BREAKERS = sorted({a for a, _ in submissions.RULE_BREAKERS})


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = submissions.new_course(tmp_path_factory.mktemp("boundary"))
    submitted = root / "submitted"
    other = root / "graded" / "results" / "classmate-ada" / f"{FIRST}.json"
    makers = {"classmate-ada": submissions.solved, "snooper": lambda a: submissions.memory_snooper(a, NEEDLES),
              "impersonator": lambda a: submissions.startup_impersonator(a, str(other)),
              "liar": submissions.crafted_handin, "bomb": submissions.disk_bomb, "markdown": submissions.markdown_answer,
              "firsterror": submissions.first_task_error, "linecache": submissions.linecache_reader,
              "forger": submissions.channel_forger}
    for student, maker in makers.items():
        submissions.write_submission(submitted, student, FIRST, maker(FIRST))
    submissions.write_submission(submitted, "classmate-ada", OTHER, submissions.solved(OTHER))
    for assignment in BREAKERS:
        submissions.write_submission(submitted, "breaker", assignment, submissions.rule_breaker(assignment))
    for student, by_assignment in submissions.ISSUE_ROUTES.items():
        for assignment in by_assignment:
            submissions.write_submission(submitted, student, assignment, submissions.issue_routes(student, assignment))
    for assignment in submissions.HONEST_SHAPES:
        submissions.write_submission(submitted, "honest-shapes", assignment, submissions.honest_shapes(assignment))
    run = warm.run([sys.executable, "-m", "autograder.grade", str(submitted), "--course", str(root), "--out",
                          str(root / "graded"), "--limit", "cell_seconds=30"], cwd=REPO, capture_output=True, text=True,
                         timeout=900)
    with open(root / "graded" / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    results = {(p.parent.name, p.stem): json.loads(p.read_text()) for p in (root / "graded" / "results").rglob("*.json")}
    return {"run": run, "rows": rows, "results": results, "root": root}


def total(graded, student: str, assignment: str) -> tuple[float, float]:
    row = next(r for r in graded["rows"] if (r["student"], r["assignment"], r["task"]) == (student, assignment, "TOTAL"))
    return float(row["score"] or "nan"), float(row["max_score"])


def cells(graded, student: str, assignment: str) -> list[dict]:
    return [c for nb in graded["results"][(student, assignment)]["notebooks"].values() for c in nb["cells"]]


def test_the_run_ends_and_grades_everyone(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stdout + run.stderr
    assert "NOT GRADED" not in run.stdout + run.stderr
    assert "own /proc" in run.stderr and "disk" in run.stderr and "landlock files" in run.stderr


def test_a_notebook_finds_nothing_of_the_grader_in_itself(graded):
    """Its whole memory, frames, gc's objects, environment, descriptors and /proc hold no solution, no classmate, no
    gradebook URL, no other assignment's cases, no other process."""
    output = "".join(c["output"] for c in cells(graded, "snooper", FIRST))
    assert "snooped: 0 finding(s)" in output, output
    assert "LEAK" not in output
    assert total(graded, "snooper", FIRST) == total(graded, "classmate-ada", FIRST)


def test_nothing_a_notebook_wrote_is_read_by_the_grader(graded):
    """Links and fifos left in the notebook's folder stay there: the process's exit is reported, nothing is read."""
    lost = total(graded, "impersonator", FIRST)
    assert lost == total(graded, "firsterror", FIRST)
    shown = json.dumps(graded["results"][("impersonator", FIRST)])
    assert "exited with code 71" in shown
    assert Path("/etc/hostname").read_text().strip() not in shown
    assert graded["results"][("classmate-ada", FIRST)]["key"] not in shown  # the classmate's result was not read


def test_no_hidden_test_code_reaches_the_feedback(graded):
    """Issue #48: a cell that prints every source IPython keeps (linecache) after the tests have run finds none of
    the hidden tests' code, though it does find its own (so it really read the cache)."""
    source = json.loads((REPO / "source" / FIRST / f"{FIRST}.ipynb").read_text())
    hidden = []
    for cell in source["cells"]:
        text = "".join(cell["source"])
        if "### BEGIN HIDDEN TESTS" in text:
            inside = text.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            hidden += [line.strip() for line in inside.splitlines() if len(line.strip()) > 25]
    assert hidden
    printed = next(c["output"] for c in cells(graded, "linecache", FIRST) if "import linecache" in c.get("visible_code", "")
                   or "linecache.cache" in c["output"])
    assert "import linecache" in printed, printed[:2000]
    assert [line for line in hidden if line in printed] == []
    assert total(graded, "linecache", FIRST) == total(graded, "classmate-ada", FIRST)


def test_no_hidden_test_line_reaches_the_feedback_while_the_cell_runs(graded):
    """Issue #59: the first task's function, wrapped so that it prints every line of the stack it is called from
    (traceback.extract_stack(), which reads linecache), prints the visible tests' lines and none of the hidden ones,
    in its visible and in its hidden calls; it keeps every point."""
    source = json.loads((REPO / "source" / FIRST / f"{FIRST}.ipynb").read_text())
    tests = ["".join(c["source"]) for c in source["cells"] if "### BEGIN HIDDEN TESTS" in "".join(c["source"])]
    parts = [text.split("### BEGIN HIDDEN TESTS") for text in tests]
    visible = [line.strip() for before, _ in parts for line in before.splitlines() if len(line.strip()) > 25]
    hidden = [line.strip() for _, after in parts for line in after.split("### END HIDDEN TESTS")[0].splitlines()
              if len(line.strip()) > 25]
    output = "".join(c["output"] for c in cells(graded, "linecache", FIRST))
    assert any(line in output for line in visible), output[:2000]      # it did read the test cell's lines
    assert output.count("stack:") > 10 and [line for line in hidden if line in output] == []


def test_a_crafted_hand_in_is_the_students_failure(graded):
    """Every task whose function hands in crafted JSON fails as the student's ("could not be read"); the napkin
    questions hand in a plain number the liar's functions never touch, and keep their point."""
    tests = [c for c in cells(graded, "liar", FIRST) if c["kind"] == "test"]
    napkin = [c for c in tests if "check_napkin_answer" in c.get("visible_code", "")]
    failed = [c for c in tests if c not in napkin]
    assert failed and all(not c["ok"] for c in failed)
    assert all("could not be read" in c.get("error_full", c["error"]) for c in failed), failed
    assert all(c["ok"] for c in napkin)
    assert total(graded, "liar", FIRST)[0] == sum(c["points"] for c in napkin)


def test_what_a_notebook_forges_on_the_graders_channel_costs_that_task_only(graded):
    """Messages a student's code writes into the grader's reply pipe (a request whose kind is a 900-deep JSON tree,
    one whose kind is no kind, a pass for a guessed id) are refused as the student's doing: that cell's result is not
    trusted and its task scores 0, as a raised error would; every other task is graded in full, and nothing is the
    grader's fault."""
    first = next(c for c in cells(graded, "forger", FIRST) if c["kind"] == "answer")
    assert not first["ok"], first
    assert "wrote to the grader's channel" in first["error"], first
    assert total(graded, "forger", FIRST) == total(graded, "firsterror", FIRST) < total(graded, "classmate-ada", FIRST)


def test_a_notebook_cannot_fill_the_disk(graded):
    output = "".join(c["output"] for c in cells(graded, "bomb", FIRST))
    written = int(output.split("the disk stopped me after ")[1].split(" MiB")[0])
    assert written <= load_limits().disk_mib, output
    assert total(graded, "bomb", FIRST) == total(graded, "classmate-ada", FIRST)


def test_an_answer_cell_turned_into_markdown_is_graded_as_code(graded):
    assert total(graded, "markdown", FIRST) == total(graded, "classmate-ada", FIRST)
    note = next(r["note"] for r in graded["rows"] if (r["student"], r["assignment"], r["task"]) == ("markdown", FIRST, "TOTAL"))
    assert "graded as code, as nbgrader does" in note


def _test_cell(graded, student: str, assignment: str, task: str) -> dict:
    return next(c for c in cells(graded, student, assignment) if c["grade_id"] == f"test_{task}")


def _flags(graded, student: str, assignment: str) -> list[str]:
    return [f for nb in graded["results"][(student, assignment)]["notebooks"].values() for f in nb["flags"]]


def test_the_issues_routes_are_zeroed_or_flagged_end_to_end(graded):
    """Issue #59's routes (17 of 21 once earned full marks with no flag), each answering a task of a notebook graded by
    the real grader: each task zeroed with its rule's message, or flagged for a person. A course helper the rule does
    not name (FlopCounterMode inside utils.gradients) is seen at run time and flagged; a task that takes the grader's
    watch off (its profile hook) is flagged as tampering."""
    outcomes = {}
    for student, by_assignment in submissions.ISSUE_ROUTES.items():
        for assignment, answers in by_assignment.items():
            flags = _flags(graded, student, assignment)
            for task in answers:
                cell = _test_cell(graded, student, assignment, task)
                zeroed = not cell["ok"] and "which this task rules out" in cell.get("error_full", cell["error"])
                flagged = [f for f in flags if f.startswith((f"{task} ", f"{task}'s ")) or f"judge {task}'s" in f]
                outcomes[(student, task)] = "zeroed" if zeroed else "flagged" if flagged else cell["error"][:200]
    assert {k: v for k, v in outcomes.items() if v not in ("zeroed", "flagged")} == {}, outcomes
    flags = _flags(graded, "routes-e", "05_flops_mfu") + _flags(graded, "routes-e", "04_einops_jaxtyping")
    assert any(f.startswith("linear_model_flops was seen running what its rule forbids") for f in flags), flags
    assert any(f.startswith("attention_scores's tests ran with the grader's watch tampered with") for f in flags), flags


def test_the_issues_honest_shapes_earn_full_marks_unflagged(graded):
    """Issue #59's honest shapes (an own Layer class's backward, a local `grad` beside a scratch cell importing
    autograd's, an own namedtuple's `.stride`, a scratch variable named `reference`, getattr over a config's fields),
    graded by the real grader: every point, no flag."""
    for assignment in submissions.HONEST_SHAPES:
        tests = [c for c in cells(graded, "honest-shapes", assignment) if c["kind"] == "test"]
        assert tests and all(c["ok"] for c in tests), [(c["grade_id"], c["error"][:300]) for c in tests if not c["ok"]]
        assert _flags(graded, "honest-shapes", assignment) == []


@pytest.mark.parametrize("assignment", BREAKERS)
def test_a_task_rule_holds_however_the_route_is_hidden(graded, assignment):
    """The forbidden route scores 0 on its task, with the rule in the message; every other task scores in full."""
    broken = {g for a, g in submissions.RULE_BREAKERS if a == assignment}
    tests = [c for c in cells(graded, "breaker", assignment) if c["kind"] == "test"]
    lost = [c for c in tests if not c["ok"]]
    assert len(lost) == len(broken), [(c["grade_id"], c["error"][:200]) for c in lost]
    assert all("which this task rules out" in c["error"] and "Hint:" in c["error"] for c in lost), lost
    assert all(c["grade_id"].removeprefix("test_") in broken for c in lost)
