"""Runs as the instructor (`make release`): regenerate `release/` (the student versions) from `source/` with nbgrader.

    python -m autograder.release [ASSIGNMENT ...] [--into DIR]

Never edit `release/` by hand: change `source/` and run this (or `make release`).
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from autograder.course import RELEASE_DIR, assignments, make_course


def release(names: list[str], into: Path = RELEASE_DIR) -> None:
    """Write the student version of each named assignment to `into/<name>/`, replacing what was there."""
    with tempfile.TemporaryDirectory(prefix="release-") as scratch:
        make_course(Path(scratch), names)
        for name in names:
            target = into / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(Path(scratch) / "release" / name, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="assignments to release (default: all in source/)")
    parser.add_argument("--into", type=Path, default=RELEASE_DIR, help="folder to write into (default: release/)")
    args = parser.parse_args()
    names = args.names or assignments()
    release(names, args.into)
    print(f"Released {', '.join(names)} into {args.into}")


if __name__ == "__main__":
    main()
