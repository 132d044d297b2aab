"""Runs as the instructor (`make student-edition`): build what students receive: the student edition of the course, as a
folder and optionally a .tar.gz.

    python -m autograder.student_edition --out student-edition [--tar]      (make student-edition)

It holds `index.ipynb` (the start page), `notebooks/` (lectures), `release/` (the exercises as nbgrader generated
them), `utils/`, `pyproject.toml` (installing `utils` only), `environment.yml`, `scripts/install_env.py` (the set-up), and a student Makefile, README and
.gitignore from `autograder/student/`. It holds no `source/`, no `autograder/`, no tests and no benchmarks, and the
build fails if any file in it contains a solution or hidden-test marker.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATES = Path(__file__).resolve().parent / "student"
COPIED = ["index.ipynb", "notebooks", "release", "utils", "environment.yml", "scripts/install_env.py"]
FROM_TEMPLATES = {"Makefile": "Makefile", "README.md": "README.md", "gitignore": ".gitignore"}
MARKER = ".student-edition"  # marks a folder this module built, so that rebuilding may replace it
LEAK = re.compile(r"(BEGIN|END) (SOLUTION|HIDDEN TESTS|MARK SCHEME)")  # answers, hidden tests, rubrics
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".DS_Store")


class Leak(Exception):
    """A file of the edition contains something students must not get."""


TOOLS_NOT_SHIPPED = ("tool.ruff", "tool.mypy")  # the course's own lint settings: they name the grader's files


def student_pyproject(text: str) -> str:
    """The course's pyproject.toml, installing only `utils` (the edition has no `autograder/`), without the tables of
    TOOLS_NOT_SHIPPED (each with the comment lines just above its header)."""
    changed, count = re.subn(r"^packages\s*=\s*\[[^\]]*\]", 'packages = ["utils"]', text, flags=re.MULTILINE)
    if count != 1:
        raise ValueError("pyproject.toml: expected one `packages = [...]` line under [tool.setuptools]")
    lines = changed.splitlines(keepends=True)
    kept: list[str] = []
    skipping = False
    for line in lines:
        header = re.match(r"^\[\[?([^\]]+)\]", line)
        if header:
            skipping = header.group(1).strip().startswith(TOOLS_NOT_SHIPPED)
            if skipping:
                while kept and kept[-1].startswith("#"):  # its comment goes with it
                    kept.pop()
        if not skipping:
            kept.append(line)
    return "".join(kept)


def find_leaks(folder: Path) -> list[str]:
    """Files under `folder` with a solution, hidden-test or rubric marker, or an instructors-only folder."""
    problems = [f"{p.relative_to(folder)}/ is for instructors only" for name in ("source", "autograder", "reference", "tests")
                if (p := folder / name).exists()]
    for path in sorted(folder.rglob("*")):
        if path.is_file() and LEAK.search(path.read_bytes().decode("utf-8", errors="replace")):
            problems.append(f"{path.relative_to(folder)} contains a solution, hidden-test or rubric marker")
    return problems


def build(out: Path, tar: bool = False) -> Path:
    """Write the student edition into `out` (replacing an edition built there before); return the folder,
    or the .tar.gz beside it when `tar`."""
    out = Path(out).resolve()
    if out == REPO or REPO.is_relative_to(out):
        raise ValueError(f"refusing to build into {out}: it holds the repository")
    if out.exists():
        if not (out / MARKER).exists() and any(out.iterdir()):
            raise ValueError(f"{out} exists and is not a student edition built here; remove it or pick another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=IGNORED)
        else:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, out / name)
    (out / "pyproject.toml").write_text(student_pyproject((REPO / "pyproject.toml").read_text()))
    for template, name in FROM_TEMPLATES.items():
        shutil.copy2(TEMPLATES / template, out / name)
    (out / MARKER).write_text("Built by `python -m autograder.student_edition` (make student-edition).\n")
    problems = find_leaks(out)
    if problems:
        shutil.rmtree(out)
        raise Leak("the student edition would leak:\n  " + "\n  ".join(problems))
    if not tar:
        return out
    archive = out.with_name(out.name + ".tar.gz")

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.name.endswith(MARKER):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(archive, "w:gz") as bundle:
        bundle.add(out, arcname=out.name, filter=clean)
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("student-edition"), help="folder to write (default: student-edition)")
    parser.add_argument("--tar", action="store_true", help="also write <out>.tar.gz beside the folder")
    args = parser.parse_args(argv)
    try:
        result = build(args.out, args.tar)
    except (Leak, ValueError) as error:
        print(f"student edition not built: {error}", file=sys.stderr)
        return 1
    files = sum(1 for p in Path(args.out).rglob("*") if p.is_file())
    print(f"Student edition: {Path(args.out).resolve()} ({files} files)" + (f"; archive {result}" if args.tar else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
