"""Runs as the instructor (the grader and every tool): the nbgrader course: its root folder, its `nbgrader_config.py`,
its folders and gradebook.

The repository itself is the course (its `nbgrader_config.py` is at the root). `Course.load(folder)` opens
another course folder the same way: with that folder's own `nbgrader_config.py`, or, when it has none, with the
repository's configuration moved to that folder (its own `gradebook.db` and `exchange/`), as the tests and the
benchmark do. `make_course` builds a throwaway course from this repository's `source/` for releasing.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # nbgrader is slow to import and only some commands need it
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    from autograder.source import SourceNotebook

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = REPO_ROOT / "source"
RELEASE_DIR = REPO_ROOT / "release"
CONFIG_NAME = "nbgrader_config.py"
CONFIG_FILE = REPO_ROOT / CONFIG_NAME
# On the class hub the grader account may add files to the course folder (its gradebook, locks, results), so a module
# it put there would shadow what the grader imports. `make hub` makes CODE_VIEW: a folder of root's holding only links
# to the course's packages (scripts/class_hub.py, lock_grader_code), which the grader's processes import from instead.
CODE_VIEW = REPO_ROOT / ".code"
CODE_PACKAGES = ("autograder", "utils", "reference")

# nbgrader runs the `alembic` command of its own environment; make sure it is found when the venv is not activated.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def import_root() -> Path:
    """The folder the grader's processes put on their Python path: CODE_VIEW where `make hub` made it (a folder of
    root's that no other account may write in), else the course folder."""
    try:
        view = CODE_VIEW.lstat()
    except OSError:
        return REPO_ROOT
    return CODE_VIEW if stat.S_ISDIR(view.st_mode) and view.st_uid == 0 and not view.st_mode & 0o022 else REPO_ROOT


def default_course() -> Path:
    """The current folder when it is an nbgrader course (holds nbgrader_config.py), else this repository."""
    return Path.cwd() if (Path.cwd() / CONFIG_NAME).is_file() else REPO_ROOT


def exchange_root(config: Config) -> Path:
    """The exchange folder nbgrader uses with `config`: its Exchange.root, or nbgrader's own default (read from
    nbgrader's traitlet, not restated here)."""
    from nbgrader.exchange.default.exchange import Exchange
    return Path(Exchange(config=config).root)


def assignments(source: Path = SOURCE_DIR) -> list[str]:
    """Names of the assignments in a `source/` folder (folders such as '01_floats')."""
    if not source.is_dir():
        return []
    return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))


def _load_file(path: Path) -> Config:
    from traitlets.config.loader import PyFileConfigLoader
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def course_config(root: Path) -> Config:
    """The configuration of the course in `root`: its own nbgrader_config.py, or the repository's moved there."""
    root = root.resolve()
    own = root / CONFIG_NAME
    if own.is_file() and own.resolve() != CONFIG_FILE:
        config = _load_file(own)
        if "root" not in config.CourseDirectory:
            config.CourseDirectory.root = str(root)
        return config
    config = _load_file(CONFIG_FILE)
    if root != REPO_ROOT:
        config.CourseDirectory.root = str(root)
        config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
        if config.Exchange.root == str(REPO_ROOT / "exchange"):  # the course's own exchange moves with it too
            config.Exchange.root = str(root / "exchange")
    return config


@dataclass
class Course:
    """One nbgrader course: `config` as nbgrader reads it, `coursedir` its folders and database URL."""
    config: Any
    coursedir: CourseDirectory
    _sources: dict[str, dict[str, SourceNotebook]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def load(cls, root: Path = REPO_ROOT) -> Course:
        from nbgrader.coursedir import CourseDirectory
        config = course_config(root)
        return cls(config, CourseDirectory(config=config))

    @property
    def root(self) -> Path:
        return Path(self.coursedir.root)

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def course_id(self) -> str:
        return self.coursedir.course_id

    def folder(self, step: str, student: str = ".", assignment: str = ".") -> Path:
        """nbgrader's folder for a step ('source', 'submitted', 'autograded', ...), student and assignment."""
        directory = getattr(self.coursedir, f"{step}_directory")
        return Path(os.path.normpath(self.coursedir.format_path(directory, student, assignment)))

    @property
    def source(self) -> Path:
        return self.folder("source")

    def assignments(self) -> list[str]:
        return assignments(self.source)

    def notebooks(self, assignment: str) -> list[str]:
        """Notebook names (without .ipynb) of an assignment's source."""
        return sorted(p.stem for p in (self.source / assignment).glob("*.ipynb"))

    def sources(self, assignment: str) -> dict[str, SourceNotebook]:
        """An assignment's source notebooks by name, read and classified on first use and kept by this Course (a run
        loads its Course once, so every stage of the run sees the same notebooks, read once: autograder/source.py)."""
        if assignment not in self._sources:
            from autograder.source import read_assignment
            self._sources[assignment] = read_assignment(self.source / assignment)
        return self._sources[assignment]

    def imports(self) -> list[str]:
        """The modules the source notebooks of every assignment import, sorted: what the grader's zygote imports
        before any notebook process starts (autograder/sandboxed/zygote.py)."""
        return sorted(set().union(*(notebook.imports for assignment in self.assignments()
                                    for notebook in self.sources(assignment).values())))

    def late_plugin(self):
        """The late-submission plugin configured for nbgrader's AssignLatePenalties (nbgrader_config.py)."""
        from nbgrader.preprocessors import AssignLatePenalties
        assigner = AssignLatePenalties(config=self.config)
        assigner.init_plugin()
        return assigner.plugin_inst

    def autograde(self):
        """nbgrader's Autograde converter configured as the course is, for its traits (create_student,
        exclude_overwriting, ...): their defaults are nbgrader's own, never copied here."""
        from nbgrader.converters import Autograde
        return Autograde(coursedir=self.coursedir, config=self.config)

    def api(self) -> NbGraderAPI:
        """nbgrader's API for this course (a gradebook it creates is stamped in this process: database.py)."""
        from nbgrader.apps import NbGraderAPI

        from autograder.database import alembic_head_in_process
        alembic_head_in_process()
        return NbGraderAPI(coursedir=self.coursedir, config=self.config)


def make_course(root: Path, names: list[str]) -> NbGraderAPI:
    """Copy the named assignments' sources into `root/source`, release them there, and return nbgrader's API.

    Releasing fills `root/gradebook.db` with every cell's points and checksum, which grading needs.
    """
    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = root / "source" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(SOURCE_DIR / name, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    api = Course.load(root).api()
    for name in names:
        result = api.generate_assignment(name, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {name} failed:\n{result['log']}\n{result['error']}")
    return api
