"""Runs as the instructor (nbgrader's release commands): which class the course's exchange folder belongs to, and the
students' file that names it.

Two classes of this course on one machine (two clones, two sections) share the course id, so a shared exchange would
let one class's students fetch the other's releases and submit into it, silently. The course's exchange folder
`<exchange>/<course id>/` therefore says which class it belongs to: `course.txt` holds the course root of the class that
released into it first. `nbgrader release_assignment` and `release_feedback` refuse an exchange folder that names
another course root; release_assignment writes `course.txt` when there is none, and beside it
`nbgrader_config_exchange.py`, the students' configuration: the repository's template of that name with the exchange
and the course root filled in, so that students and instructor have one exchange, whatever it is (the course's
`exchange/` unless COURSE_EXCHANGE names another). Each student copies it to ~/.jupyter/nbgrader_config.py; it
refuses, in every student command, an exchange whose course.txt names another class, or none.
"""
from __future__ import annotations

import os
from pathlib import Path

from autograder.exchange.folder import CLASS_MARK, STUDENTS_CONFIG, release_check
from autograder.exchange.students_env import closed_to_others

TEMPLATE = Path(__file__).resolve().parents[2] / STUDENTS_CONFIG


class OtherClass(Exception):
    """The course's exchange folder belongs to another class of the same course id; the message says which."""


def owner_of(course_path: Path) -> str | None:
    """The course root that `course_path`'s course.txt names, or None when it has none."""
    try:
        return (course_path / CLASS_MARK).read_text().strip()
    except FileNotFoundError:
        return None


def check_class(course_path: Path, course_root: Path, doing: str) -> None:
    """Raise OtherClass when the exchange folder `course_path` belongs to another course root than `course_root`."""
    owner = owner_of(course_path)
    if owner is not None and owner != str(course_root):
        raise OtherClass(
            f"The exchange folder {course_path} belongs to another class: its {CLASS_MARK} names the course "
            f"{owner}, and this course is {course_root}. Two classes of one course cannot share an exchange, or each "
            "would collect the other's submissions: give this class an exchange of its own (export "
            "COURSE_EXCHANGE=/some/shared/folder in every instructor shell and `make lab`), or, if that course is "
            f"this one moved, remove {course_path / CLASS_MARK}. Nothing was {doing}.")


def students_config(exchange: Path, course_root: Path, instructor: int | None = None) -> str:
    """The students' nbgrader configuration for this class: the template with its exchange, course and the uid of
    the releasing account (`instructor`, this process's by default) filled in."""
    text = TEMPLATE.read_text()
    uid = os.geteuid() if instructor is None else instructor
    for name, value in (("EXCHANGE", str(exchange)), ("COURSE", str(course_root)), ("INSTRUCTOR_UID", uid)):
        blank = f"{name} = None"
        assert text.count(blank) == 1, f"{TEMPLATE} has no single line {blank!r}"
        text = text.replace(blank, f"{name} = {value!r}")
    return text


def hand_out(course_path: Path, exchange: Path, course_root: Path) -> Path:
    """Mark `course_path` as this class's (unless it is) and write the students' file beside it; return its path."""
    release_check(course_path)
    check_class(course_path, course_root, "released")
    if owner_of(course_path) is None:
        (course_path / CLASS_MARK).write_text(f"{course_root}\n")
        (course_path / CLASS_MARK).chmod(0o644)
    handed = course_path / STUDENTS_CONFIG
    text = students_config(exchange, course_root)
    if not handed.is_file() or handed.read_text() != text:
        handed.write_text(text)
        handed.chmod(0o644)
    return handed


def handing_out(handed: Path) -> str:
    """How the students' file at `handed` reaches each student (the release's log says it): where every account can
    read it, the command each student runs once; where some folder on the way is closed to other accounts (the
    course's own exchange/ in the instructor's home), that, and the other ways."""
    copy = f"mkdir -p ~/.jupyter && cp {handed} ~/.jupyter/nbgrader_config.py"
    closed = closed_to_others(handed)
    if not closed:
        return (f"Students' file of this class: {handed}. Every account can read it there, so there is nothing to "
                f"send: tell each student to run, once, in their own account: {copy}")
    return (f"Students' file of this class: {handed}. Other accounts cannot read it there ({'; '.join(closed[:2])}): "
            "send it to each student (it holds no secret: by e-mail or the LMS) to save as "
            "~/.jupyter/nbgrader_config.py, or give the class a shared exchange (COURSE_EXCHANGE, docs/instructors.md) "
            f"that every account reads, where each student runs: {copy}")
