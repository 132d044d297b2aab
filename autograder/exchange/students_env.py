"""Runs as the instructor (a command line): can the students' accounts use nbgrader on this machine?

    python -m autograder.exchange check-students-env ENV

On one shared machine every student runs the nbgrader of an environment the instructor provides; each file it needs
(its script, its interpreter, its packages, and every folder on the way) must be open to other accounts. The
release's log uses the same test (`closed_to_others`) to say how the students' file reaches them.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


def closed_to_others(path: Path) -> list[str]:
    """Why another account cannot use `path` (every folder on the way must let others in, x; the file itself must let
    them read it, and run it where it is a program): one line per obstacle, [] when there is none. Symbolic links
    are followed, each link's target checked in turn."""
    obstacles: list[str] = []
    seen: set[Path] = set()
    todo = [Path(os.path.abspath(path))]
    while todo:
        target = todo.pop()
        if target in seen:
            continue
        seen.add(target)
        for folder in reversed(target.parents):
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                obstacles.append(f"{folder} (mode {stat.filemode(mode)}) does not let other accounts in")
        if target.is_symlink():
            todo.append(Path(os.path.normpath(target.parent / os.readlink(target))))
            continue
        mode = target.stat().st_mode
        wanted = stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR and not stat.S_ISDIR(mode) else 0)
        if mode & wanted != wanted:
            obstacles.append(f"{target} (mode {stat.filemode(mode)}) is closed to other accounts")
    return sorted(set(obstacles))


def students_nbgrader(env: Path) -> list[str]:
    """Why a student's account could not run `env`/bin/nbgrader (its script, its interpreter, its packages); []
    when every file it needs is open to other accounts, and, run here as root, when `nobody` runs it."""
    script = env / "bin" / "nbgrader"
    if not script.is_file():
        return [f"{script} does not exist: {env} is not an environment with nbgrader"]
    import subprocess
    first = script.read_text(errors="replace").splitlines()[0] if script.stat().st_size else ""
    interpreter = Path(first[2:].strip().split()[0]) if first.startswith("#!") else env / "bin" / "python"
    found = subprocess.run([str(interpreter), "-c", "import nbgrader; print(nbgrader.__file__)"], capture_output=True,
                           text=True, timeout=120, cwd="/")
    if found.returncode != 0:
        return [f"{interpreter} (the interpreter of {script}) cannot import nbgrader: "
                f"{(found.stderr.strip().splitlines() or ['exit status ' + str(found.returncode)])[-1]}"]
    needed = [script, interpreter, Path(found.stdout.strip())]
    obstacles = [line for path in needed for line in closed_to_others(path)]
    if not obstacles and os.geteuid() == 0:
        ran = subprocess.run(["runuser", "-u", "nobody", "--", str(script), "--version"], capture_output=True,
                             text=True, timeout=120, cwd="/")
        if ran.returncode != 0:
            obstacles.append(f"`runuser -u nobody -- {script} --version` failed: "
                             f"{(ran.stderr.strip().splitlines() or ['exit status ' + str(ran.returncode)])[-1]}")
    return obstacles


def main(argv: list[str] | None = None) -> int:
    """`python -m autograder.exchange check-students-env ENV`: can every account run ENV's nbgrader?"""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m autograder.exchange", description=main.__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check-students-env", help="can a student's account run ENV/bin/nbgrader?")
    check.add_argument("env", type=Path, help="the Python environment students are to use (its folder)")
    args = parser.parse_args(argv)
    obstacles = students_nbgrader(Path(os.path.abspath(args.env)))  # not resolved: the way to it counts too
    if obstacles:
        print(f"error: students cannot use {args.env / 'bin' / 'nbgrader'}:\n  " + "\n  ".join(obstacles) +
              "\nGive them an environment every account can run (docs/students.md, 'Handing in'): `sudo python3 "
              "scripts/class_hub.py prepare --prefix /opt/cs336-hub` installs one in /opt/cs336-hub/env (the prefix "
              "a class hub on this machine uses too; another --prefix keeps them apart).")
        return 1
    print(f"every account can run {args.env / 'bin' / 'nbgrader'}")
    return 0
