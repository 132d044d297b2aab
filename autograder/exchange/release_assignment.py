"""Runs as the instructor (`nbgrader release_assignment`, configured as `ExchangeFactory.release_assignment` in
nbgrader_config.py): nbgrader's release, into this class's exchange folder only (students_file.py, folder.py), handing
out the students' file beside it, and warning of a due date already past for every student (due_dates.py).
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment

from autograder.course import Course
from autograder.database import GradebookError
from autograder.due_dates import release_warning
from autograder.exchange.folder import Untrusted, release_check
from autograder.exchange.students_file import OtherClass, check_class, hand_out, handing_out


class ReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release, into this class's exchange folder only; it hands out the students' file beside it."""

    def init_dest(self) -> None:
        course_path = Path(self.root) / self.coursedir.course_id
        course_root = Path(self.coursedir.root).resolve()
        try:
            release_check(course_path)   # before nbgrader makes a folder; hand_out checks again before writing
            check_class(course_path, course_root, "released")
            super().init_dest()
            handed = hand_out(course_path, Path(self.root), course_root)
        except (OtherClass, Untrusted) as error:
            self.fail(str(error))
        self.log.info("%s", handing_out(handed))
        try:   # issue #49: a due date already past for everyone
            warning = release_warning(Course(self.config, self.coursedir), self.coursedir.assignment_id)
        except GradebookError as error:
            self.fail(str(error))
        if warning:
            self.log.warning(warning)
