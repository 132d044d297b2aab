"""`make student-edition`: what students receive leaks no solution or hidden test, installs, and runs."""
import json
import os
import re
import subprocess
import sys
import tarfile
import tomllib

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.student_edition import LEAK, build, find_leaks
from tests import warm
from tests.submissions import REPO, task_points, written_points

BLOCK = re.compile(r"^[ \t]*### BEGIN (SOLUTION|HIDDEN TESTS|MARK SCHEME)[ \t]*\n([\s\S]*?)^[ \t]*### END \1", re.MULTILINE)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "student-edition"
    archive = build(out, tar=True)
    return out, archive


def texts(folder):
    """Every text a student can read: each file, and for notebooks the code and outputs of every cell."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        yield path, text
        if path.suffix == ".ipynb":
            cells = json.loads(text)["cells"]
            yield path, "\n".join("".join(c["source"]) for c in cells)


def test_layout(edition):
    out, archive = edition
    names = {p.name for p in out.iterdir()}
    assert {"index.ipynb", "notebooks", "release", "utils", "pyproject.toml", "environment.yml", "Makefile",
            "README.md", ".gitignore", "nbgrader_config.py", "jupyter-config"} <= names
    assert not names & {"source", "autograder", "tests", "bench", ".ci", ".git", "submitted", "graded"}
    assert sorted(p.name for p in (out / "release").iterdir()) == sorted(p.name for p in (REPO / "source").iterdir() if p.is_dir())
    assert not list(out.rglob("__pycache__"))
    with tarfile.open(archive) as bundle:
        members = bundle.getnames()
    assert all(m == out.name or m.startswith(out.name + "/") for m in members)
    assert not any(re.match(rf"{out.name}/(source|autograder|tests)(/|$)", m) for m in members)
    assert f"{out.name}/release/01_floats/01_floats.ipynb" in members


def test_no_solution_or_hidden_test_anywhere(edition):
    out, _ = edition
    assert find_leaks(out) == []
    blocks = set()
    for source in (REPO / "source").glob("*/*.ipynb"):
        for cell in nbformat.read(source, as_version=4).cells:
            blocks |= {body.strip() for _, body in BLOCK.findall(cell.source) if len(body.strip()) > 30}
    assert len(blocks) > 40  # every task's solution, and the hidden tests
    for path, text in texts(out):
        assert not LEAK.search(text), path
        if path.parent == out / "utils":
            # utils/ holds the course's reference implementations, which the lectures use and the tests compare
            # against (each exercise forbids calling them); several match solutions line for line, by design.
            continue
        leaked = [block[:80] for block in blocks if block in text]
        assert not leaked, f"{path.relative_to(out)} contains instructor code: {leaked}"
    for notebook in (out / "release").glob("*/*.ipynb"):
        answers = [c for c in nbformat.read(notebook, as_version=4).cells if c.metadata.get("nbgrader", {}).get("solution")]
        code = [c for c in answers if c.cell_type == "code"]
        written = [c for c in answers if c.cell_type == "markdown"]  # issue #62: answered in words, graded by a person
        assert code and all("raise NotImplementedError(" in c.source for c in code), notebook
        assert written and all(c.source == "YOUR ANSWER HERE" for c in written), notebook


def test_the_build_refuses_to_ship_a_leak(tmp_path, monkeypatch):
    import autograder.student_edition as student_edition
    monkeypatch.setattr(student_edition, "REPO", tmp_path / "repo")
    (tmp_path / "repo" / "release" / "a").mkdir(parents=True)
    (tmp_path / "repo" / "release" / "a" / "a.ipynb").write_text('{"cells": [], "x": "### BEGIN SOLUTION"}')
    for name in ("index.ipynb", "environment.yml", "scripts/install_env.py"):
        (tmp_path / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / name).write_text("{}")
    for name in ("notebooks", "utils"):
        (tmp_path / "repo" / name).mkdir()
    (tmp_path / "repo" / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    with pytest.raises(student_edition.Leak, match="release/a/a.ipynb"):
        student_edition.build(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_pyproject_installs_utils_only_and_builds(edition, tmp_path):
    out, _ = edition
    project = tomllib.loads((out / "pyproject.toml").read_text())
    course = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["packages"] == ["utils"]
    assert project["project"]["dependencies"] == course["project"]["dependencies"]
    assert {"ruff", "mypy"} <= set(course["tool"]) and not {"ruff", "mypy"} & set(project["tool"])  # the grader's lint
    # What `make install` in the edition does, short of installing: build the package it would install.
    wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--disable-pip-version-check", "-w", str(tmp_path), str(out)],
                           capture_output=True, text=True, timeout=300)
    assert wheel.returncode == 0, wheel.stderr
    built = list(tmp_path.glob("*.whl"))
    assert len(built) == 1
    import zipfile
    files = zipfile.ZipFile(built[0]).namelist()
    assert "utils/progress_check.py" in files and not any(f.startswith("autograder/") for f in files)


def test_student_makefile(edition):
    out, _ = edition
    for target, expected in (("lab", "/lab/tree/index.ipynb"), ("progress", "-m utils.progress_check"),
                             ("test", "-m utils.progress_check --strict")):
        dry_run = subprocess.run(["make", "-n", target], cwd=out, capture_output=True, text=True)
        assert dry_run.returncode == 0 and expected in dry_run.stdout, dry_run.stdout + dry_run.stderr


def student_env(out) -> dict:
    """The student's set-up, without installing: the edition's own `utils` first on the path (as `pip install -e .`
    in the edition would make it), not the instructor's editable install."""
    return {**os.environ, "PYTHONPATH": str(out)}


def test_a_lecture_runs_from_the_edition_with_its_own_utils(edition):
    out, _ = edition
    nb = nbformat.read(out / "notebooks" / "01_floats.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import utils\nprint(utils.__file__)"))
    client = NotebookClient(nb, timeout=300, kernel_name="cs336-primitives",
                            resources={"metadata": {"path": str(out / "notebooks")}})
    client.execute(env=student_env(out))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    assert nb.cells[-1].outputs[0].text.strip() == str(out / "utils" / "__init__.py")
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_progress_check_runs_from_the_edition(edition):
    out, _ = edition
    result = warm.run([sys.executable, "-m", "utils.progress_check"], cwd=out, env=student_env(out),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    total = sum(len(task_points(p.name)) for p in (out / "release").iterdir())
    assert f"0 tasks passed, 0 failed, {total} not attempted" in result.stdout
    # issue #62: the edition says that written answers exist, and that a person grades them
    written = sum(len(written_points(p.name)) for p in (out / "release").iterdir())
    assert f"Written answers: 0 of {written} written" in result.stdout and written >= 10
    assert "question in words" in (out / "README.md").read_text() and "a person grades it" in (out / "README.md").read_text()
    strict = warm.run([sys.executable, "-m", "utils.progress_check", "--strict", "01_floats"], cwd=out,
                            env=student_env(out), capture_output=True, text=True, timeout=300)
    assert strict.returncode == 1


# What `make lab`'s JupyterLab loads, asked of jupyter_server and jupyterlab_server themselves: the server extensions
# after the config files and the extensions' own .d files are merged, and the lab plugins the page config disables.
LAB_SETTINGS = """
import json
from jupyter_core.paths import jupyter_config_path
from jupyter_server.serverapp import ServerApp
from jupyterlab_server.config import get_page_config
app = ServerApp()
app.load_config_file()
app.find_server_extensions()
disabled = get_page_config([p + "/labconfig" for p in jupyter_config_path()], logger=None).get("disabledExtensions")
print(json.dumps({"server": app.jpserver_extensions, "lab": sorted(disabled or [])}))
"""
INSTRUCTOR_TOOLS = {"server": ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"],
                    "lab": ["@jupyter/nbgrader:course-list", "@jupyter/nbgrader:create-assignment",
                            "@jupyter/nbgrader:formgrader"]}


def test_make_lab_leaves_out_nbgrader_instructor_tools_and_validate_finds_a_config(edition):
    """Issue #61, the students' frictions: `make help` and the README name `make install`; `make lab` starts JupyterLab
    without Formgrader, Create Assignment and Courses (the student's Validate and Assignments stay); `nbgrader
    validate` run in the edition finds its nbgrader_config.py and does not warn."""
    out, _ = edition
    help_text = subprocess.run(["make", "help"], cwd=out, capture_output=True, text=True).stdout
    assert "make install" in help_text and "make install" in (out / "README.md").read_text()
    dry_run = subprocess.run(["make", "-n", "lab"], cwd=out, capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}).stdout
    config_path = re.search(r'JUPYTER_CONFIG_PATH="([^"]+)" \S+/jupyter lab ', dry_run).group(1)
    assert config_path == str(out / "jupyter-config"), dry_run

    def settings(env: dict) -> dict:
        result = subprocess.run([sys.executable, "-c", LAB_SETTINGS], cwd=out, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1])

    plain = {k: v for k, v in os.environ.items() if k != "JUPYTER_CONFIG_PATH"}
    without, lab = settings(plain), settings({**plain, "JUPYTER_CONFIG_PATH": config_path})
    assert all(without["server"][name] for name in INSTRUCTOR_TOOLS["server"])   # installed and on by default
    assert not any(lab["server"][name] for name in INSTRUCTOR_TOOLS["server"]), lab
    assert lab["server"]["nbgrader.server_extensions.validate_assignment"] and lab["server"]["jupyterlab"]
    assert lab["lab"] == INSTRUCTOR_TOOLS["lab"] and without["lab"] == []
    validate = warm.run([sys.executable, "-m", "nbgrader", "validate", "none.ipynb"], cwd=out,
                              capture_output=True, text=True, timeout=120)
    assert "No nbgrader_config.py" not in validate.stdout + validate.stderr
    assert "No nbgrader_config.py" in warm.run([sys.executable, "-m", "nbgrader", "validate", "none.ipynb"],
                                                     cwd=out / "release", capture_output=True, text=True,
                                                     timeout=120).stderr   # the check can see the warning
