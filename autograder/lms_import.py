"""Runs as the instructor (a command line): import an LMS download (Canvas style: one flat folder or .zip of files) into
the course's `submitted/`.

    python -m autograder.lms_import DOWNLOAD [--assignment NAME] [--course DIR] [--submitted DIR]

Canvas names each file `<name>_[LATE_]<user id>_<submission id>_<the student's file name>`, for example
`alice_12345_67890_01_floats.ipynb`; a re-upload may carry `-1`, `-2` before `.ipynb`, and a file downloaded
again by a browser ` (1)`, ` (2)`: both are taken off to find the notebook's name. `<name>` is the student's
login or sortable name squeezed to lower case ("smithjane"). It is matched against the gradebook's roster
(`nbgrader db student import`) by the Canvas user id first: a student whose `lms_user_id` (the roster's column of
that name, kept in the gradebook) is the file's user id is its owner, whatever the name says (a middle name, two
students of one name). Only for students the roster gives no Canvas user id is the name used: a student's id,
"lastfirst", "firstlast" or the part of their e-mail before the @, compared as lower-case letters and digits. Each file lands in `submitted/<student>/<assignment>/<notebook>.ipynb`,
the layout `python -m autograder.grade` reads.

Listed and skipped, never guessed: a Canvas user id that two roster rows share, names that match no student or
more than one (ambiguous: the message asks for the lms_user_id column), a name whose student has another Canvas id, files that are not one of the
assignment's notebooks, and files too large to be a notebook. A file already in `submitted/` is never
overwritten: an identical one is reported as already there, a different one is reported and left alone (move it
away to import the new one). A Canvas download holds no submission time, so no timestamp.txt is written and the
grader reports that lateness was not checked. Canvas's own LATE marks are listed and kept: each imported
submission gets `lms_import.txt` beside its notebook, naming the file it came from and, for a late one, the line
`Canvas marked it LATE` (the grader keeps only timestamp.txt and the notebooks, so this file changes no score).

Exit status: 0 when every file was imported or was already there unchanged; 1 when a file was skipped or not
imported (each is listed; the rest was imported); 2 when nothing could be done (no roster, an unreadable gradebook).

nbgrader's `zip_collect` does not fit here: it does not check names against the roster, and it either stops
halfway at the first student whose folder is not empty or, with --force, deletes what was there.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import gradebook
from autograder.atomic import write_new
from autograder.course import Course
from autograder.gradebook import GradebookError
from autograder.grader.find import MAX_NOTEBOOK_BYTES, SAFE_NAME  # an import must pass what the grader finds

CANVAS = re.compile(r"^(?P<name>[^_]+)_(?:(?P<late>LATE|late)_)?(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)$")
# Canvas's re-upload suffix (`-1`) and a browser's second download (` (1)`), in either order, before `.ipynb`.
RESUBMITTED = re.compile(r"(?:-\d+| \(\d+\))+(?=\.ipynb$)")
RECORD = "lms_import.txt"
LATE_LINE = "Canvas marked it LATE"  # the line of RECORD for a file Canvas named with _LATE_


@dataclass
class Report:
    imported: list[str] = field(default_factory=list)      # "student/assignment/notebook.ipynb <- file"
    unchanged: list[str] = field(default_factory=list)     # identical file already in submitted/
    kept: list[str] = field(default_factory=list)          # a different file already there: not overwritten
    unmatched: list[str] = field(default_factory=list)     # "file: why"
    late: list[str] = field(default_factory=list)          # Canvas marked these LATE

    @property
    def complete(self) -> bool:
        """Every file was imported or already there: nothing skipped, nothing left out."""
        return not (self.unmatched or self.kept)

    def lines(self) -> list[str]:
        out = [f"imported {len(self.imported)} file(s)"]
        out += [f"  {x}" for x in self.imported]
        out += [f"already there, unchanged: {x}" for x in self.unchanged]
        out += [f"NOT imported, a different file is already in submitted/ (move it away to import): {x}" for x in self.kept]
        out += [f"skipped {x}" for x in self.unmatched]
        if self.late:
            out.append(f"Canvas marked these LATE (no submission time in the download; lateness is not checked): "
                       f"{', '.join(self.late)}")
        return out


def squeeze(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]", "", (text or "").lower())


@dataclass
class RosterIndex:
    """The gradebook's students as a Canvas file name can find them: by Canvas user id (`lms_user_id`, from the
    roster's column of that name) and by squeezed name (id, lastfirst, firstlast, e-mail name)."""
    by_canvas_id: dict[str, set[str]]   # Canvas user id -> student ids (more than one is a roster error)
    by_name: dict[str, set[str]]        # squeezed name -> student ids
    canvas_id_of: dict[str, str]        # student id -> their Canvas user id, where the roster gives one

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def find(self, name: str, user_id: str) -> tuple[str | None, str]:
        """(the student a Canvas file `<name>_<user_id>_...` belongs to, or None; why not). The Canvas user id
        decides when the roster has it; a name is used only for students the roster gives no Canvas id, so a
        middle name or a namesake cannot pick the wrong student, and a name that fits two is refused."""
        owners = self.by_canvas_id.get(user_id, set())
        if len(owners) == 1:
            return next(iter(owners)), ""
        if owners:
            return None, (f"Canvas user id {user_id} is given to {len(owners)} students on the roster "
                          f"({', '.join(sorted(owners))}): fix their lms_user_id and import the roster again")
        named = self.by_name.get(squeeze(name), set())
        free = {student for student in named if student not in self.canvas_id_of}
        if len(free) == 1:
            return next(iter(free)), ""
        if len(free) > 1:
            return None, (f"{name!r} matches {', '.join(sorted(free))} and the roster gives none of them Canvas user "
                          f"id {user_id}: ambiguous; add the lms_user_id column to the roster (Canvas's user ids) "
                          "and import it again (nbgrader db student import)")
        if named:
            return None, (f"{name!r} matches {', '.join(sorted(named))}, whose Canvas user id on the roster is "
                          f"{', '.join(sorted({self.canvas_id_of[s] for s in named}))}, not {user_id}")
        return None, f"{name!r} matches no student on the roster (nor does Canvas user id {user_id})"


def roster_index(course: Course) -> RosterIndex:
    """Every student of the gradebook by Canvas user id and by squeezed id, lastfirst, firstlast and e-mail name."""
    with gradebook.session(course) as book:
        index = RosterIndex({}, {}, {})
        for s in book.students:
            keys = {squeeze(s.id), squeeze(f"{s.last_name}{s.first_name}"), squeeze(f"{s.first_name}{s.last_name}"),
                    squeeze((s.email or "").split("@")[0])}
            for key in keys - {""}:
                index.by_name.setdefault(key, set()).add(s.id)
            canvas_id = (s.lms_user_id or "").strip()
            if canvas_id:
                index.by_canvas_id.setdefault(canvas_id, set()).add(s.id)
                index.canvas_id_of[s.id] = canvas_id
        return index


def _entries(download: Path):
    """(file name, size in bytes, a function returning at most MAX_NOTEBOOK_BYTES + 1 bytes) of each file."""
    if download.is_dir():
        for path in sorted(download.iterdir()):
            if path.is_file() and not path.is_symlink():
                yield path.name, path.stat().st_size, lambda p=path: p.open("rb").read(MAX_NOTEBOOK_BYTES + 1)
    else:
        with zipfile.ZipFile(download) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    yield (os.path.basename(info.filename), info.file_size,
                           lambda i=info: archive.open(i).read(MAX_NOTEBOOK_BYTES + 1))


def import_download(course: Course, download: Path, submitted: Path, assignment: str | None = None) -> Report:
    """Copy the download's notebooks into `submitted` (see the module docstring); return what happened."""
    index = roster_index(course)
    if not index:
        raise GradebookError("the gradebook has no students: import the roster first "
                             "(nbgrader db student import students.csv)")
    notebooks = {a: set(course.notebooks(a)) for a in ([assignment] if assignment else course.assignments())}
    report = Report()
    for name, size, read in _entries(download):
        if name.startswith("."):
            continue
        match = CANVAS.match(name)
        if not match:
            report.unmatched.append(f"{name}: not a Canvas file name (<name>_<user id>_<submission id>_<file>)")
            continue
        original = RESUBMITTED.sub("", match["file"])
        stem, ext = os.path.splitext(original)
        owners = [a for a, names in notebooks.items() if stem in names]
        if ext != ".ipynb" or len(owners) != 1:
            report.unmatched.append(f"{name}: {original!r} is not a notebook of "
                                    f"{assignment or 'any assignment'} ({', '.join(sorted(set().union(*notebooks.values())))})")
            continue
        student, why = index.find(match["name"], match["user"])
        if student is None:
            report.unmatched.append(f"{name}: {why}")
            continue
        if size > MAX_NOTEBOOK_BYTES:
            report.unmatched.append(f"{name}: {size:,} bytes, more than a notebook may have ({MAX_NOTEBOOK_BYTES:,})")
            continue
        owner = owners[0]
        if not SAFE_NAME.match(student):
            report.unmatched.append(f"{name}: student id {student!r} cannot be a folder name (letters, digits, _.@+-)")
            continue
        data = read()
        target = submitted / student / owner / f"{stem}.ipynb"
        where = f"{student}/{owner}/{stem}.ipynb <- {name}"
        if match["late"]:
            report.late.append(f"{student}/{owner}")
        if target.exists() or target.is_symlink():
            same = target.is_file() and not target.is_symlink() and target.read_bytes() == data
            (report.unchanged if same else report.kept).append(where)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if write_new(target, data):  # never overwrites a file that appeared meanwhile
            report.imported.append(where)
            record = [f"{target.name} <- {name}"] + ([LATE_LINE] if match["late"] else [])
            with open(target.parent / RECORD, "a") as out:  # one line per notebook of the submission
                out.write("\n".join(record) + "\n")
        else:
            report.kept.append(where)
    return report


def marked_late(folder: Path) -> bool:
    """True when the submission in `folder` (submitted/<student>/<assignment>/) came from a Canvas download that
    marked it LATE (its RECORD file says so)."""
    try:
        return LATE_LINE in (folder / RECORD).read_text(errors="replace").splitlines()
    except OSError:
        return False

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("download", type=Path, help="the LMS download: a folder of files, or a .zip")
    parser.add_argument("--assignment", help="the assignment these files are for (default: found from file names)")
    parser.add_argument("--course", type=Path, help="the course folder (default: as autograder.grade)")
    parser.add_argument("--submitted", type=Path, help="where to put them (default: the course's submitted/)")
    args = parser.parse_args()
    from autograder.course import default_course
    course = Course.load(args.course or default_course())
    if args.assignment and args.assignment not in course.assignments():
        parser.error(f"no assignment {args.assignment!r} in {course.source}")
    if not (args.download.is_dir() or zipfile.is_zipfile(args.download)):
        parser.error(f"{args.download} is neither a folder nor a .zip file")
    try:
        report = import_download(course, args.download, args.submitted or course.folder("submitted"), args.assignment)
    except GradebookError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print("\n".join(report.lines()))
    if not report.complete:
        print(f"error: {len(report.unmatched) + len(report.kept)} file(s) not imported (listed above); "
              "the others were", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
