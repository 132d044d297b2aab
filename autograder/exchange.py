"""Runs as the instructor (nbgrader's command): nbgrader's release_feedback, made to skip what it cannot deliver instead
of stopping.

Feedback reaches a student through the exchange only for a submission made through it: nbgrader finds the
student's copy by a hash of the `submission_secret.txt` that `nbgrader submit` wrote. Stock `release_feedback`
stops at the first student whose feedback folder lacks that file or `timestamp.txt` (a submission imported from an
LMS, or copied in by hand), and releases nobody after them. This subclass, configured as
`ExchangeFactory.release_feedback` in nbgrader_config.py, leaves those students out with a warning (return their
feedback through the LMS) and releases everyone else exactly as nbgrader does.
"""
from __future__ import annotations

import glob
import os

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback

NEEDED = ("timestamp.txt", "submission_secret.txt")


class ReleaseFeedback(ExchangeReleaseFeedback):

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
        super().copy_files()
