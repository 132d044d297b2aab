"""End to end: a generated class, honest, tricky, broken and hostile, graded by `python -m autograder.grade`.

Every submission must get exactly the points its real work earns, with a readable reason where it cannot be
graded; nothing a submission does may reach the hidden tests, other students' files or the grades.
"""
import csv
import functools
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import torch

from autograder.course import assignments
from autograder.grader.pipeline import probe
from autograder.grader.plan import HIDDEN_PLACEHOLDER
from autograder.limits import load_limits
from tests import submissions, warm

REPO = Path(__file__).resolve().parent.parent
ASSIGNMENTS = assignments()
# Short limits keep the faults quick; the real defaults are in autograder/limits.toml. On a GPU machine each
# notebook process initialises CUDA itself (a fork cannot inherit it), which takes seconds when many start at once.
CELL_SECONDS = 30 if torch.cuda.is_available() else 10
LIMITS = ["--limit", f"cell_seconds={CELL_SECONDS}", "--limit", "memory_mib=1024", "--limit", "notebook_seconds=300"]
ARTIFACTS = Path(os.environ.get("PYTEST_ARTIFACTS", REPO / "test-artifacts")) / "autograde"
# What depends on each exercise's own checks runs on every assignment: the solution, a variant solution, the comparison
# tricks, a blank and a half-done notebook, a wrong first task. What the grader contains or undoes whatever the
# exercise (a loop, a memory bomb, an exit, a segfault; deleted, duplicated or edited test cells, changed metadata,
# noise, floods of output, snooping) runs on two: the first assignment, and the last (the heaviest hidden tests).
FIRST_AND_LAST = [ASSIGNMENTS[0], ASSIGNMENTS[-1]]
PER_EXERCISE_TRICKS = {k: v for k, v in submissions.TRICKS.items() if k != "testsedited"}
STRUCTURAL_TRICKS = {"testsedited": submissions.TRICKS["testsedited"]}
PER_EXERCISE_HONEST = {"solved": functools.partial(submissions.solved, written=True),  # written answers too: waiting
                       "variant": submissions.HONEST_EDITS["variant"]}
STRUCTURAL_HONEST = {k: v for k, v in submissions.HONEST_EDITS.items() if k not in PER_EXERCISE_HONEST}


@functools.cache
def forks_contained() -> bool:
    """Whether a fork loop is safe to run here: where the process limit binds, in a user namespace or as a non-root
    user. Asked once, when first needed, not at collection in every pytest worker (a probe starts a zygote)."""
    return os.geteuid() != 0 or "user namespace" in probe(load_limits())


def faults() -> dict:
    """The faults this machine can contain (all of them, or all but the fork loop)."""
    return {k: v for k, v in submissions.FAULTS.items() if k != "forks" or forks_contained()}


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run_grader(submitted: Path, out: Path, *extra: str, course: Path | None = None) -> subprocess.CompletedProcess:
    course = course or submitted.parent
    run = warm.run([sys.executable, "-m", "autograder.grade", str(submitted), "--course", str(course),
                          "--out", str(out), *LIMITS, *extra], cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def read_totals(out: Path):
    """({(student, assignment): [points scored, points possible]}, {...: the TOTAL row's note}, every row). A cell
    that waits for a person (a written answer) has no score yet: it counts in the points possible only."""
    totals, notes = defaultdict(lambda: [0.0, 0.0]), defaultdict(str)
    with open(out / "grades.csv") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        key = (row["student"], row["assignment"])
        notes[key] = row["note"]
        if row["task"] == "TOTAL":
            continue
        totals[key][0] += float(row["score"] or 0)
        totals[key][1] += float(row["max_score"])
    return totals, notes, rows


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = submissions.new_course(tmp_path_factory.mktemp("class"))
    submitted, out = root / "submitted", root / "graded"
    out.mkdir()
    (out / "grades.csv").write_text("an old grades file the snooper must not read\n")
    listener = socket.create_server(("127.0.0.1", 0))
    pwned = Path("/tmp") / f"pwned-{secrets.token_hex(4)}"
    for a in ASSIGNMENTS:
        structural = {**STRUCTURAL_TRICKS, **STRUCTURAL_HONEST, **faults()} if a in FIRST_AND_LAST else {}
        makers = {**PER_EXERCISE_TRICKS, **PER_EXERCISE_HONEST, **structural,
                  "firsterror": submissions.first_task_error, "blank": submissions.release_notebooks,
                  "half": submissions.half_done}
        for student, maker in makers.items():
            submissions.write_submission(submitted, student, a, maker(a))
        names = list(submissions.release_notebooks(a))
        secret_files = [str(REPO / "source" / a / f"{names[0]}.ipynb"), str(REPO / "autograder" / "limits.toml"),
                        str(submitted / "solved" / a / f"{names[0]}.ipynb"), str(out / "grades.csv"),
                        str(root / "source" / a / f"{names[0]}.ipynb"), str(root / "gradebook.db")]
        targets = [str(submitted / "solved" / a / f"{names[0]}.ipynb"), str(out / "grades.csv"), str(root / "gradebook.db"),
                   str(out / "results" / "alwaysequal" / f"{a}.json"), str(REPO / "source" / a / "pwned.txt"), str(pwned)]
        if a in FIRST_AND_LAST:
            submissions.write_submission(submitted, "snooper", a, submissions.snooper(
                a, secret_files, targets, listener.getsockname()[1], os.getpid()))
        broken = submissions.write_submission(submitted, "notjson", a, submissions.solved(a))
        for nb in broken.glob("*.ipynb"):
            nb.write_text('{"cells": [ this is not json')
        renamed = submissions.write_submission(submitted, "wrongname", a, submissions.solved(a))
        for nb in renamed.glob("*.ipynb"):
            nb.rename(nb.with_name("my_" + nb.name))
        empty = submissions.write_submission(submitted, "empty", a, {})
        for name, text in submissions.empty_file_and_not_a_notebook(a).items():
            (empty / f"{name}.ipynb").write_text(text)
    submissions.write_submission(submitted, "solved", "99_no_such_assignment", {})
    before = digest(submitted)
    first = run_grader(submitted, out)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # kept for a failed run's post-mortem (CI uploads test-artifacts/)
    (ARTIFACTS / "grades.csv").write_text((out / "grades.csv").read_text())
    (ARTIFACTS / "grader-log.txt").write_text(first.stdout + first.stderr)
    shutil.rmtree(ARTIFACTS / "results", ignore_errors=True)
    shutil.copytree(out / "results", ARTIFACTS / "results")
    totals, notes, rows = read_totals(out)
    csv_text = (out / "grades.csv").read_text()
    results = {p: p.read_text() for p in (out / "results").rglob("*.json")}
    victim = next(iter(sorted(results)))
    victim.unlink()  # as if the run had stopped before this submission finished
    resumed = run_grader(submitted, out)  # every other result is reused
    listener.close()
    yield dict(totals=totals, notes=notes, rows=rows, out=out, submitted=submitted, before=before, first=first, root=root,
               resumed=resumed, csv_text=csv_text, results=results, pwned=pwned)
    for a in ASSIGNMENTS:
        (REPO / "source" / a / "pwned.txt").unlink(missing_ok=True)


def score(graded, student, assignment):
    got, max_score = graded["totals"][(student, assignment)]
    expected_max = submissions.total_points(assignment)  # the tests' points and the written answers'
    assert max_score == expected_max, f"{student}: max_score {max_score} but the source says {expected_max}"
    return got


def lost(graded, student, assignment) -> str:
    """The tasks where `student` lost points on `assignment`, with the grader's notes: an assertion's message."""
    tasks = "; ".join(f"{r['task']} {r['score']}/{r['max_score']} {r['note']}".strip() for r in graded["rows"]
                      if (r["student"], r["assignment"]) == (student, assignment) and r["score"] != r["max_score"])
    result = graded["out"] / "results" / student / f"{assignment}.json"
    errors = [f"[{c.get('kind')}, {c.get('seconds', '-')} s] {c.get('error_full', c['error'])[-300:]}" for nb in json.loads(result.read_text())["notebooks"].values()
              for c in nb["cells"] if not c["ok"]] if result.exists() else ["no result file"]
    return f"{tasks}\n  failed cells: " + "\n  ".join(errors)


@pytest.mark.parametrize("student, assignment",
                         [(s, a) for a in ASSIGNMENTS for s in PER_EXERCISE_HONEST]
                         + [(s, a) for a in FIRST_AND_LAST for s in sorted(STRUCTURAL_HONEST) + ["snooper"]])
def test_solutions_score_full_marks_whatever_else_the_notebook_does(graded, student, assignment):
    """Solved notebooks, also with warnings, deleted/duplicated test cells, inflated points, floods of output: every
    point the grader gives by itself (a written answer's wait for a person: below)."""
    assert score(graded, student, assignment) == sum(submissions.task_points(assignment)), lost(graded, student, assignment)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_written_answers_wait_for_a_person_and_the_grader_says_so(graded, assignment):
    """Issue #62 item 3: each exercise's written answers. Answered (the solved student), each waits for a person:
    no score in grades.csv, a note saying so, nbgrader's needs-manual-grade in the gradebook, the summary's count; and
    the autograded notebook Formgrader shows holds the answer under its question with the rubric. Left as released
    (the variant student), each scores 0 with nbgrader's "No response."."""
    written = submissions.written_points(assignment)
    rows = {(r["student"], r["task"]): r for r in graded["rows"] if r["assignment"] == assignment}
    answers = [task for (student, task) in rows if student == "solved" and rows[("solved", task)]["title"]
               and "in words" in rows[("solved", task)]["title"]]
    assert len(answers) == len(written) >= 1, answers
    for task in answers:
        waiting, blank = rows[("solved", task)], rows[("variant", task)]
        assert waiting["score"] == "" and "waits for manual grading" in waiting["note"], waiting
        assert blank["score"] == "0", blank
    notebook = graded["root"] / "autograded" / "solved" / assignment / f"{next(iter(submissions.release_notebooks(assignment)))}.ipynb"
    cells = json.loads(notebook.read_text())["cells"]
    by_id = {c["metadata"].get("nbgrader", {}).get("grade_id"): i for i, c in enumerate(cells)}
    for task in answers:
        question = "".join(cells[by_id[task] - 1]["source"])
        assert "### BEGIN MARK SCHEME" in question and "Rubric" in question  # the person grading reads it
        assert "".join(cells[by_id[task]]["source"]).strip() != "YOUR ANSWER HERE"
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}", "cs336-primitives") as gb:
        grades = {g.name: g for g in gb.find_submission(assignment, "solved").notebooks[0].grades}
        assert all(grades[task].needs_manual_grade and grades[task].auto_score is None for task in answers)
    summary = (graded["out"] / "summary.txt").read_text()
    assert re.search(rf"needs manual grading \(formgrader\): {assignment}: \d+ answer", summary), summary


@pytest.mark.parametrize("student, assignment",
                         [(s, a) for a in ASSIGNMENTS for s in sorted(PER_EXERCISE_TRICKS) + ["blank"]]
                         + [(s, a) for a in FIRST_AND_LAST for s in STRUCTURAL_TRICKS])
def test_tricks_and_blank_notebooks_score_zero(graded, student, assignment):
    assert score(graded, student, assignment) == 0


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_notebooks_fail_in_the_visible_tests(graded, assignment):
    """A visible test that passes on the untouched stubs could not tell a student anything: on the blank notebook
    every graded cell must fail on a line above its hidden tests, which is what the student's Validate button runs.
    (tests/test_release.py runs nbgrader's Validator itself on one release notebook.)"""
    result = json.loads(graded["results"][graded["out"] / "results" / "blank" / f"{assignment}.json"])
    tests = [c for nb in result["notebooks"].values() for c in nb["cells"] if c["kind"] == "test"]
    assert len(tests) == len(submissions.task_points(assignment))
    for cell in tests:
        lines = cell["visible_code"].splitlines()
        hidden_at = next(i for i, line in enumerate(lines, 1) if line.strip() == HIDDEN_PLACEHOLDER)
        assert hidden_at == len(lines), f"{cell['grade_id']}: visible checks after the hidden ones"
        assert not cell["ok"] and cell["line"] is not None and cell["line"] < hidden_at, \
            f"{cell['grade_id']} did not fail in its visible tests: line {cell['line']}, {cell['error'][-300:]}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_half_done_scores_its_half(graded, assignment):
    points = submissions.task_points(assignment)
    assert 0 < score(graded, "half", assignment) < sum(points), lost(graded, "half", assignment)


@pytest.mark.parametrize("student", sorted(submissions.FAULTS))
@pytest.mark.parametrize("assignment", FIRST_AND_LAST)
def test_a_fault_costs_only_the_cell_it_is_in(graded, student, assignment):
    """An infinite loop, a memory bomb, a fork loop, os._exit, sys.exit or a segfault in the first answer
    scores exactly like an ordinary error there: the other tasks are still graded."""
    if student not in faults():
        pytest.skip("running as root without user namespaces: RLIMIT_NPROC does not bind, so the fork loop is not run")
    yardstick = score(graded, "firsterror", assignment)
    assert yardstick < sum(submissions.task_points(assignment))
    assert score(graded, student, assignment) == yardstick, \
        f"{student}: {lost(graded, student, assignment)} | firsterror: {lost(graded, 'firsterror', assignment)}"


@pytest.mark.parametrize("student, reason", [("notjson", "not valid JSON"), ("wrongname", "missing notebook"),
                                             ("empty", "the file is empty")])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_broken_submissions_score_zero_with_a_reason(graded, student, reason, assignment):
    assert score(graded, student, assignment) == 0
    assert reason in graded["notes"][(student, assignment)]
    problems = graded["out"] / "feedback" / student / assignment / "problems.html"
    assert reason in problems.read_text()


def test_unknown_assignment_is_reported_not_fatal(graded):
    assert "unknown assignment" in graded["notes"][("solved", "99_no_such_assignment")]


def test_fork_loops_are_contained_here():
    if not forks_contained():
        pytest.skip("running as root without user namespaces: RLIMIT_NPROC does not bind, so the fork loop is not run")
    assert "forks" in faults()


def test_fault_reasons_are_readable(graded):
    results = {p.parent.name + "/" + p.stem: json.loads(text) for p, text in graded["results"].items()}
    first = ASSIGNMENTS[0]
    errors = {student: " ".join(c["error"] for nb in results[f"{student}/{first}"]["notebooks"].values()
                                for c in nb["cells"]) for student in faults()}
    assert f"longer than {CELL_SECONDS} s" in errors["loop"]
    assert "MemoryError" in errors["memory"]
    assert "exited with code 3" in errors["osexit"]
    assert "SystemExit" in errors["sysexit"]
    assert "SIGSEGV" in errors["segfault"]


def test_snooping_finds_nothing_and_changes_nothing(graded):
    for path, text in graded["results"].items():
        outputs = [c["output"] for nb in json.loads(text)["notebooks"].values() for c in nb["cells"]]
        assert not [o for o in outputs if "LEAK" in o], f"{path}: {[o for o in outputs if 'LEAK' in o]}"
    snooped = json.loads(graded["results"][graded["out"] / "results" / "snooper" / f"{ASSIGNMENTS[0]}.json"])
    assert [c for nb in snooped["notebooks"].values() for c in nb["cells"] if c["kind"] == "answer" and c["ok"]]
    assert not graded["pwned"].exists()
    assert not any((REPO / "source" / a / "pwned.txt").exists() for a in ASSIGNMENTS)
    assert digest(graded["submitted"]) == graded["before"], "a submitted file was changed"


def test_nothing_a_notebook_printed_or_raised_holds_a_line_of_the_references(graded):
    """The answer thief (and everyone else) cannot print the instructor's references into their own feedback: no
    output or error shown to a student holds a line of `reference/` (their own code may, and is theirs to see)."""
    public = "\n".join(p.read_text() for folder in ("release", "utils", "notebooks")
                       for p in (REPO / folder).rglob("*") if p.suffix in (".py", ".ipynb"))  # students have these
    public += "\n".join("".join(cell["source"]) for p in (REPO / "source").glob("*/*.ipynb")  # and the honest
                        for cell in json.loads(p.read_text())["cells"]                       # submissions show
                        if cell.get("metadata", {}).get("nbgrader", {}).get("solution"))      # their own code
    lines = {line.strip() for path in (REPO / "reference").glob("*.py") for line in path.read_text().splitlines()
             if len(line.strip()) >= 40 and not line.strip().startswith(("#", '"""', "from ", "import "))
             and json.dumps(line.strip())[1:-1] not in public and line.strip() not in public}
    assert len(lines) > 100 and len(graded["results"]) >= len(ASSIGNMENTS) * 5
    for path, text in graded["results"].items():
        shown = [c["output"] + c["error"] for nb in json.loads(text)["notebooks"].values() for c in nb["cells"]]
        assert not [line for line in lines for piece in shown if line in piece], path


def test_flagged_code_is_noted_for_the_instructor(graded):
    assert "flagged for review" in graded["notes"][("segfault", ASSIGNMENTS[0])]  # it uses ctypes
    assert "flagged for review" not in graded["notes"][("solved", ASSIGNMENTS[0])]
    from nbgrader.api import Gradebook  # and formgrader shows nbgrader's own flag on the notebook
    with Gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}", "cs336-primitives") as gb:
        flagged = {(s.student.id, a) for a in ASSIGNMENTS for s in gb.find_assignment(a).submissions
                   if any(nb.flagged for nb in s.notebooks)}
    assert {("segfault", ASSIGNMENTS[0])} | {("thief", a) for a in ASSIGNMENTS} <= flagged
    assert not {("solved", a) for a in ASSIGNMENTS} & flagged


def test_output_floods_are_cut(graded):
    pages = list((graded["out"] / "feedback" / "flood").rglob("*.html"))
    assert len(pages) >= len(FIRST_AND_LAST)
    for path in pages:
        assert path.stat().st_size < 2_000_000
        assert "more characters of output dropped" in path.read_text()


def test_csv_has_one_row_per_source_task_and_a_total(graded):
    for row in graded["rows"]:
        assert set(row) == {"student", "assignment", "task", "title", "score", "max_score", "late_penalty", "status",
                            "note"}
        assert row["status"] in ("graded", "no submission", "unknown assignment"), row  # nothing here is NOT GRADED
        assert (row["status"] == "no submission") == (row["note"] == "no submission"), row
    for a in ASSIGNMENTS:
        for student in ("solved", "half") + (("duplicated", "metadata") if a in FIRST_AND_LAST else ()):
            rows = [r for r in graded["rows"] if r["student"] == student and r["assignment"] == a]
            assert [r["task"] for r in rows][-1] == "TOTAL"
            assert len(rows) - 1 == len(submissions.task_points(a)) + len(submissions.written_points(a))
            assert len(submissions.task_points(a)) >= 4
            assert all(r["title"].startswith("Task ") for r in rows[:-1]), [r["title"] for r in rows]
            assert float(rows[-1]["score"]) == sum(float(r["score"] or 0) for r in rows[:-1])
            assert float(rows[-1]["max_score"]) == submissions.total_points(a)


def test_the_gradebook_holds_every_grade_of_the_csv(graded):
    """nbgrader's gradebook is the record: each task row of grades.csv is a Grade there, autograded notebooks exist."""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded['root'] / 'gradebook.db'}", "cs336-primitives") as gb:
        scores = {(g.student.id, g.assignment.name, g.name): g.score for a in ASSIGNMENTS
                  for nb in gb.find_assignment(a).notebooks for sub in nb.submissions for g in sub.grades}
    for row in graded["rows"]:
        if row["task"] not in ("TOTAL", "-"):  # a cell that waits for a person scores 0 in nbgrader's sum until then
            assert scores[(row["student"], row["assignment"], row["task"])] == float(row["score"] or 0)
    for a in ASSIGNMENTS:
        assert (graded["root"] / "autograded" / "solved" / a / f"{next(iter(submissions.release_notebooks(a)))}.ipynb").is_file()


def sanitized(text: str) -> str:
    """`text` with nbval's sanitizing rules applied (tests/nbval_sanitize.cfg: what may differ between machines)."""
    import configparser
    rules = configparser.ConfigParser()
    rules.read(REPO / "tests" / "nbval_sanitize.cfg")
    for section in rules.sections():
        text = re.sub(rules[section]["regex"], rules[section].get("replace", ""), text)
    return text


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_sources_stored_outputs_are_what_their_solutions_print(graded, assignment):
    """Issue #60: nbval compares `source/`'s stored outputs only on the GPU runner, so here each cell's stored output
    (its stream outputs, sanitized as nbval sanitizes them; cells tagged nbval-ignore-output left out) must be what the
    cell printed when the grader ran the solution (the grader's own measured-cost lines left out): a stale stored output
    fails `make test`, not the next GPU run."""
    result = json.loads(graded["results"][graded["out"] / "results" / "solved" / f"{assignment}.json"])
    stale = []
    for name, outcome in result["notebooks"].items():
        source = json.loads((REPO / "source" / assignment / f"{name}.ipynb").read_text())
        code_cells = [cell for cell in source["cells"] if cell["cell_type"] == "code"]
        assert len(code_cells) == len(outcome["cells"]), (name, len(code_cells), len(outcome["cells"]))
        for number, (cell, ran) in enumerate(zip(code_cells, outcome["cells"])):
            if "nbval-ignore-output" in cell["metadata"].get("tags", []) or not cell.get("outputs"):
                continue
            stored = "".join("".join(output["text"]) for output in cell["outputs"] if output["output_type"] == "stream")
            printed = ran["output"].split("Measured by the grader (", 1)[0]
            if sanitized(stored) != sanitized(printed):
                stale.append(f"{name}, code cell {number} ({ran['grade_id']}): stored {stored!r}, printed {printed!r}")
    assert not stale, "\n".join(stale)


def test_feedback_shows_visible_tests_but_not_hidden_ones(graded):
    for assignment in ASSIGNMENTS:
        pages = list((graded["out"] / "feedback" / "half" / assignment).glob("*.html"))
        assert pages, f"no feedback for half/{assignment}"
        text = pages[0].read_text()
        assert "visible tests passed" in text and "BEGIN HIDDEN TESTS" not in text
        assert "hidden tests ran here" in text and "reference = utils." not in text


def test_rerun_reuses_results_and_resume_regrades_only_what_is_missing(graded):
    """One run after a result file was lost: that submission is graded again, every other result is reused."""
    reused = re.search(r"graded 1 submission\(s\) in [\d.]+ s \((\d+) unchanged, reused\)", graded["resumed"].stderr)
    assert reused and int(reused.group(1)) == len(graded["results"]) - 1, graded["resumed"].stderr[-2000:]
    assert (graded["out"] / "grades.csv").read_text() == graded["csv_text"]


def test_parallel_and_serial_runs_give_identical_grades(graded, tmp_path):
    """A few students re-graded from scratch one at a time, on two assignments: the same rows as the parallel run."""
    subset = tmp_path / "submitted"
    some = ASSIGNMENTS[:2]  # the two quickest to grade
    for student in ("solved", "half", "alwaysequal", "firsterror"):
        for a in some:
            source = graded["submitted"] / student / a
            target = subset / student / a
            target.mkdir(parents=True)
            for f in source.iterdir():
                (target / f.name).write_bytes(f.read_bytes())
    run_grader(subset, tmp_path / "serial", "--workers", "1", course=submissions.new_course(tmp_path / "course"))
    serial = [line for line in (tmp_path / "serial" / "grades.csv").read_text().splitlines()  # the roster's other
              if line.startswith("student,") or line.split(",")[1] in some]                  # assignments: 0, no submission
    parallel = [line for line in graded["csv_text"].splitlines()
                if line.split(",")[0] in ("student", "solved", "half", "alwaysequal", "firsterror")
                and (line.startswith("student,") or line.split(",")[1] in some)]
    assert serial == parallel
