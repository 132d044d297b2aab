"""Runs as the instructor (inside nbgrader and the grader): the course's late-submission penalty, as an nbgrader late-
submission plugin.

nbgrader asks the plugin configured as `AssignLatePenalties.plugin_class` (nbgrader_config.py) for the penalty of
each notebook submitted after its due date (the assignment's due date plus the student's extension); both
`nbgrader autograde` and our grader (autograder/gradebook.py) call it the same way.
"""
from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

SECONDS_PER_DAY = 86400.0


class PerDayPenalty(LateSubmissionPlugin):
    """`percent_per_day` of the notebook's score for each started day late, at most `max_percent`."""

    percent_per_day = Float(10.0, help="Percent of the score taken off per started day (24 h) late.").tag(config=True)
    max_percent = Float(100.0, help="The largest penalty, in percent of the score.").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        """Points to take off `score` (points) for a notebook `total_seconds_late` seconds late; None when on time."""
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / SECONDS_PER_DAY)
        percent = min(self.max_percent, self.percent_per_day * days)
        return score * percent / 100.0


def how_late(seconds: float) -> str:
    """A time after the due date in the unit that shows it: '40 s', '12 min', '3.5 h', '2.3 days'; never '0.0 h'
    for a submission that was late (issue #49)."""
    if round(seconds) == 0:   # what "{seconds:.0f} s" would print as 0: 0.5 s too (rounded half to even)
        return "under 1 s"
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    if seconds < 3570:  # 59.5 min and more reads as 1.0 h
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / SECONDS_PER_DAY:.1f} days"


def points(value: float) -> str:
    """'1 point', '0 points', '1.5 points' (nbgrader's scores are floats: shown to 6 significant digits)."""
    return f"{value:g} point{'' if value == 1 else 's'}"
