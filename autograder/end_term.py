"""Runs as the instructor (`make end-term`): the end of term of a class on one machine, without the class hub (the hub
has its own: scripts/class_hub.py end-term).

    python -m autograder.end_term [--archive DIR] [--course DIR] [--out DIR] [--homes DIR]

1. Archive the term into DIR/<course id>-<date>.tar.gz (this account's alone: 0600 in a 0700 folder): the gradebook
   (a sqlite file) with its ledger `.gradebook-ledger.json` (they belong together: a gradebook restored without its
   ledger, or with another, is refused by the grader) and nbgrader's export of it (`gradebook-export.csv`);
   submitted/, autograded/, feedback/, the grading output (graded/, a cluster's out/ and Slurm logs), the rosters,
   grade files and LMS downloads at the course root (*.csv, *.zip); and the class's exchange folder
   (<exchange>/<course id>/: releases, the submissions in it, released feedback, course.txt, the students' file).
   The archive is read back, every file, before anything is removed; a file that cannot be read stops it there.
2. Remove what was archived: the class's exchange folder (so no student fetches or submits into this term any
   more), the gradebook with its ledger, and the term's folders and files above. A gradebook on a database server
   is not dropped: the archive holds its export and a copy of its ledger, and the message says to dump the database
   and empty it (and remove its ledger) before next term.
3. Say what each student removes: ~/.jupyter/nbgrader_config.py, the copy of the students' file that pins their
   nbgrader to this class's exchange; and which accounts still have one, where their homes (under --homes, default
   the folder holding $HOME, as /home) can be read.

It stops before anything while a grading run holds the course (its lock), and never touches another class's exchange
folder (its course.txt names another course root). Idempotent: run again after a stop part way, it archives and
removes what is left; with nothing of a term left it says so and does nothing. Exit status: 0 done (or nothing to
do), 2 refused or stopped (the message says what was done, and that nothing was removed when the archive failed).
"""
from __future__ import annotations

import argparse
import datetime
import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from autograder.course import Course, exchange_root
from autograder.database import safe_url
from autograder.errors import GraderError
from autograder.exchange import STUDENTS_CONFIG, owner_of
from autograder.grader.ledger import COURSE_LEDGER  # the grader's ledger file, archived with the gradebook

FOLDERS = ("submitted", "autograded", "feedback")    # nbgrader's, as the course names them (Course.folder)
AT_ROOT = ("graded", "out")                           # the grading output: make grade's, and a cluster's shards'
FILES_AT_ROOT = ("*.csv", "*.zip", "grade-*_*.log")   # rosters, grade files, LMS downloads; Slurm tasks' logs
EXPORT = "gradebook-export.csv"


class EndTermError(GraderError):
    """The end of term stopped; the message says what was done and what to do."""


@dataclass
class Term:
    """What of a term a course holds now: the paths to archive (path -> its name in the archive), the sqlite
    gradebook file (None when the gradebook is on a server, or gone), and the class's exchange folder (None when
    there is none, or it is another class's)."""
    course: Course
    items: dict[Path, str]
    sqlite: Path | None
    exchange: Path | None

    @property
    def empty(self) -> bool:
        return not self.items


def sqlite_file(course: Course) -> Path | None:
    """The gradebook's file when it is a sqlite database; None for a server."""
    from sqlalchemy.engine import make_url
    url = make_url(course.db_url)
    return Path(url.database) if url.drivername.startswith("sqlite") and url.database else None


def find_term(course: Course, out: Path) -> Term:
    """What of the term is in `course` now (and in its exchange: only when it is this class's)."""
    cid, root = course.course_id, course.root
    items: dict[Path, str] = {}
    gradebook = sqlite_file(course)
    if gradebook is not None:
        for path in (gradebook, *(gradebook.with_name(gradebook.name + suffix) for suffix in ("-journal", "-wal",
                                                                                            "-shm"))):
            if path.exists():
                items[path] = f"{cid}/{path.name}"
    ledger = root / COURSE_LEDGER
    if ledger.exists():
        items[ledger] = f"{cid}/{COURSE_LEDGER}"
    for folder in [course.folder(name) for name in FOLDERS] + [root / name for name in AT_ROOT] + [out]:
        if folder.exists() and folder.resolve() not in {p.resolve() for p in items}:
            items[folder] = f"{cid}/{folder.relative_to(root) if folder.is_relative_to(root) else folder.name}"
    for pattern in FILES_AT_ROOT:
        for path in sorted(root.glob(pattern)):
            items.setdefault(path, f"{cid}/{path.name}")
    exchange = exchange_root(course.config) / cid
    mine = exchange.is_dir() and owner_of(exchange) in (None, str(root.resolve()))
    if mine:
        items[exchange] = f"{cid}/exchange/{cid}"
    return Term(course, items, gradebook if gradebook is not None and gradebook.exists() else None,
                exchange if mine else None)


def export_gradebook(course: Course, folder: Path) -> Path | None:
    """nbgrader's export of the gradebook (`nbgrader export`, run in the course) into `folder`; None when there is
    no gradebook to export (a sqlite file that is gone)."""
    gradebook = sqlite_file(course)
    if gradebook is not None and not gradebook.exists():
        return None
    path = folder / EXPORT
    done = subprocess.run([sys.executable, "-m", "nbgrader", "export", "--to", str(path)], cwd=course.root,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not path.is_file():
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise EndTermError(f"nbgrader export of the gradebook failed ({last}); nothing was archived or removed")
    return path


def unreadable(paths: list[Path]) -> list[str]:
    """Files or folders under `paths` this account cannot read (the archive would miss them)."""
    found = []
    for top in paths:
        for path in [top, *(top.rglob("*") if top.is_dir() and not top.is_symlink() else [])]:
            if path.is_symlink():
                continue
            wanted = os.R_OK | (os.X_OK if path.is_dir() else 0)
            if not os.access(path, wanted):
                found.append(str(path))
    return found


def archive(term: Term, folder: Path, export: Path | None) -> tuple[Path, int]:
    """The term into folder/<course id>-<date>.tar.gz (0600), read back whole; (its path, the files in it)."""
    cannot = unreadable(list(term.items))
    if cannot:
        raise EndTermError(f"this account cannot read {len(cannot)} of the term's files ({', '.join(cannot[:5])}"
                           f"{' ...' if len(cannot) > 5 else ''}), so the archive would miss them; nothing was "
                           "archived or removed. Run the end of term as an account that can read them (root: "
                           "`sudo .venv/bin/python -m autograder.end_term ...`)")
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = folder / f"{term.course.course_id}-{stamp}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        os.chmod(path, 0o600)  # before any file goes in: student work and grades
        for item, name in term.items.items():
            tar.add(item, arcname=name)
        if export is not None:
            tar.add(export, arcname=f"{term.course.course_id}/{EXPORT}")
    with tarfile.open(path) as tar:  # read it back: every file there, whole
        files = [member for member in tar.getmembers() if member.isfile()]
        for member in files:
            reader = tar.extractfile(member)
            assert reader is not None
            reader.read()
    names = {member.name for member in files}
    for item, name in term.items.items():
        if item.is_file() and name not in names:
            raise EndTermError(f"{path} lacks {name}: nothing was removed")
    return path, len(files)


def remove(term: Term) -> tuple[list[Path], list[str]]:
    """Remove what was archived (a server's gradebook keeps its ledger); (what was removed, what could not be, with
    why)."""
    removed, left = [], []
    for item in term.items:
        if term.sqlite is None and item.name == COURSE_LEDGER:
            continue  # its gradebook stays on the server: the ledger stays with it
        try:
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
            removed.append(item)
        except OSError as error:
            left.append(f"{item} ({error.strerror})")
    return removed, left


def pinned(course: Course, homes: Path) -> tuple[list[str], int]:
    """(accounts under `homes` whose ~/.jupyter/nbgrader_config.py is this class's students' file, homes that could
    not be read). The students' file names the class by the line the release wrote into it, `COURSE = '<root>'`."""
    line = f"COURSE = {str(course.root.resolve())!r}"

    def names_this_class(text: str) -> bool:  # the line as written, maybe with its comment after it
        return any(row.startswith(line) and row[len(line):].lstrip()[:1] in ("", "#") for row in text.splitlines())
    found, closed = [], 0
    try:
        entries = sorted(homes.iterdir())
    except OSError:
        return [], 0
    for home in entries:
        config = home / ".jupyter" / "nbgrader_config.py"
        try:
            if names_this_class(config.read_text(errors="replace")):
                found.append(home.name)
        except FileNotFoundError:
            continue
        except OSError:
            closed += 1
    return found, closed


def notice(course: Course, exchange: Path, homes: Path) -> str:
    """What to tell the students, and who still has the class's file."""
    accounts, closed = pinned(course, homes)
    text = (f"Tell each student of this class: the class has ended; remove ~/.jupyter/nbgrader_config.py (`rm "
            f"~/.jupyter/nbgrader_config.py`), the copy of {STUDENTS_CONFIG} that pins your nbgrader to this class's "
            f"exchange ({exchange}), which is gone; next term's class hands out a file of its own. Your "
            f"{course.course_id}/ folder, your work and your feedback stay yours.")
    if accounts:
        text += f"\nStill pinned to this class (their ~/.jupyter/nbgrader_config.py names it): {', '.join(accounts)}."
    if closed:
        text += f"\n{closed} home(s) under {homes} could not be read by this account, so they were not checked."
    return text


def end_term(course: Course, archive_folder: Path, out: Path, homes: Path) -> str:
    """The end of term (the module docstring); what it did, in words."""
    lock = course.root / ".grading.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EndTermError(f"a grading run holds the course at {course.root} now ({lock}): let it finish, then end "
                               "the term; nothing was archived or removed") from None
        term = find_term(course, out)
        exchange = exchange_root(course.config) / course.course_id
        if term.empty:
            return (f"end of term: nothing of a term in {course.root} or in the exchange {exchange} (already ended, or "
                    "never run): nothing to do\n" + notice(course, exchange, homes))
        import tempfile
        with tempfile.TemporaryDirectory(prefix="end-term-") as scratch:
            export = export_gradebook(course, Path(scratch))
            path, files = archive(term, archive_folder, export)
        removed, left = remove(term)
    finally:
        os.close(fd)
    lines = [f"archived the term into {path} ({files} files, {path.stat().st_size / 1e6:.1f} MB): "
             f"{', '.join(sorted(term.items.values()))}" + (f", {EXPORT}" if export else "")]
    if term.exchange is None and exchange.exists():
        lines.append(f"the exchange folder {exchange} belongs to another class (its course.txt names "
                     f"{owner_of(exchange)}): left as it is")
    if term.sqlite is None and export is not None:
        lines.append(f"the gradebook is on a database server ({safe_url(course.db_url)}): the archive holds its "
                     "export and a copy of its ledger. Dump the database (pg_dump), then empty it and remove "
                     f"{course.root / COURSE_LEDGER} together before next term")
    if left:
        lines.append(f"could not remove {len(left)} item(s), archived all the same: {'; '.join(left[:5])}. Remove them "
                     "as an account that can (root), or run `make end-term` again as one")
    lines.append(f"removed what was archived: {', '.join(str(p) for p in removed)} (release/ and source/ stay)")
    return "\n".join(lines + [notice(course, exchange, homes)])


def main(argv: list[str] | None = None) -> int:
    from autograder.course import default_course
    parser = argparse.ArgumentParser(prog="python -m autograder.end_term", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", type=Path, default=Path.home() / "cs336-primitives-archive",
                        help="the folder the term's archive goes into (default ~/cs336-primitives-archive)")
    parser.add_argument("--course", type=Path, help="the nbgrader course folder (default: as autograder.grade)")
    parser.add_argument("--out", type=Path, default=Path("graded"), help="the grading output folder (default graded)")
    parser.add_argument("--homes", type=Path, default=Path.home().parent,
                        help="the folder of the students' homes, checked for the class's file (default: $HOME's)")
    args = parser.parse_args(argv)
    course = Course.load(args.course or default_course())
    out = args.out if args.out.is_absolute() else course.root / args.out
    try:
        print(end_term(course, args.archive.expanduser(), out, args.homes))
    except GraderError as error:
        print(f"error: {error.explain()}", file=sys.stderr)
        return error.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
