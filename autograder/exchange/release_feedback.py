"""Runs as the instructor (`nbgrader release_feedback`, configured as `ExchangeFactory.release_feedback` in
nbgrader_config.py): nbgrader's release of feedback, made to skip what it cannot deliver.

Feedback reaches a student through the exchange only for a submission made through it: nbgrader finds the student's
copy by a hash of the `submission_secret.txt` that `nbgrader submit` wrote. Stock `release_feedback` stops at the first
student whose feedback folder lacks that file or `timestamp.txt` (a submission imported from an LMS, or copied in by
hand), and releases nobody after them. This subclass leaves those students out with a warning (return their feedback
through the LMS) and releases everyone else exactly as nbgrader does, into this class's exchange folder only
(students_file.py, folder.py).
"""
from __future__ import annotations

import glob
import logging
import os
from pathlib import Path

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

from autograder.exchange.folder import Untrusted, release_check
from autograder.exchange.students_file import OtherClass, check_class

NEEDED = ("timestamp.txt", "submission_secret.txt")


class ReleaseFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback, from this class's exchange folder only, leaving out (with a warning) the students
    it cannot deliver to (the module's docstring)."""

    def init_dest(self) -> None:
        course_path = Path(self.root) / self.coursedir.course_id
        try:
            release_check(course_path)
            check_class(course_path, Path(self.coursedir.root).resolve(), "released")
            super().init_dest()
            release_check(course_path)   # the feedback folder nbgrader found or made
        except (OtherClass, Untrusted) as error:
            self.fail(str(error))

    def copy_files(self) -> None:
        pattern = os.path.normpath(self.coursedir.format_path(self.coursedir.feedback_directory, "*",
                                                              self.coursedir.assignment_id))
        student_at = pattern.split(os.sep).index("*")  # where the student's id is in each folder's path
        cannot = sorted(os.path.normpath(folder).split(os.sep)[student_at] for folder in glob.glob(pattern)
                        if not all(os.path.isfile(os.path.join(folder, name)) for name in NEEDED))
        if cannot:
            self.log.warning("Not released (no %s: not submitted through the exchange; return these through the "
                             "LMS): %s", " or ".join(NEEDED), ", ".join(cannot))
            excluded = [s for s in self.coursedir.student_id_exclude.split(",") if s]
            self.coursedir.student_id_exclude = ",".join(excluded + cannot)
        named = FinalName()
        self.log.addFilter(named)
        try:
            super().copy_files()
        finally:
            self.log.removeFilter(named)


class FinalName(logging.Filter):
    """nbgrader's release_feedback (0.9) copies each page to `<hash>-tmp.html`, moves it to `<hash>.html`, and then
    logs "Feedback released to: <hash>-tmp.html", a name that no longer exists (issue #62). This filter gives that
    line the name the page has: the rest of nbgrader's copy_files is kept as it is, not copied here."""
    TEMPORARY = "-tmp.html"

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if text.startswith("Feedback released to: ") and text.endswith(self.TEMPORARY):
            record.msg, record.args = text[:-len(self.TEMPORARY)] + ".html", None
        return True
