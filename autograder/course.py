"""A throwaway nbgrader course folder, built from this repository's `source/`, for releasing and grading."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nbgrader is slow to import and only releasing needs it
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = REPO_ROOT / "source"
RELEASE_DIR = REPO_ROOT / "release"
CONFIG_FILE = Path(__file__).resolve().parent / "nbgrader_config.py"

# nbgrader runs the `alembic` command of its own environment; make sure it is found when the venv is not activated.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def assignments() -> list[str]:
    """Names of the assignments in `source/` (folders such as '01_floats')."""
    return sorted(p.name for p in SOURCE_DIR.iterdir() if p.is_dir() and not p.name.startswith("."))


def course_config(root: Path) -> Config:
    """The course's nbgrader config, with the course folder moved to `root`."""
    from traitlets.config.loader import PyFileConfigLoader
    config = PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    return config


def make_course(root: Path, names: list[str]) -> NbGraderAPI:
    """Copy the named assignments' sources into `root/source`, release them there, and return nbgrader's API.

    Releasing fills `root/gradebook.db` with every cell's points and checksum, which grading needs.
    """
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    root.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = root / "source" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(SOURCE_DIR / name, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    config = course_config(root)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    for name in names:
        result = api.generate_assignment(name, force=True, create=True)
        if not result["success"]:
            raise RuntimeError(f"nbgrader generate_assignment {name} failed:\n{result['log']}\n{result['error']}")
    return api
