"""The course's late penalty (autograder/late.py): a share of the score per started day late, capped, and the words a
late submission is told in."""
from __future__ import annotations

import pytest

from autograder.late import SECONDS_PER_DAY, PerDayPenalty, how_late, points

DAY = SECONDS_PER_DAY


@pytest.mark.parametrize("seconds_late, penalty", [
    (-3600, None), (0, None),              # on time, or early
    (1, 1.0), (DAY, 1.0),                  # any part of the first day: 10% of 10 points
    (DAY + 1, 2.0), (3 * DAY, 3.0),        # each started day 10% more
    (9.5 * DAY, 10.0), (30 * DAY, 10.0),   # never more than the whole score
])
def test_each_started_day_costs_ten_percent_up_to_the_whole_score(seconds_late, penalty):
    assert PerDayPenalty().late_submission_penalty("ada", 10.0, seconds_late) == penalty


def test_the_cap_and_the_rate_are_the_courses_settings():
    half = PerDayPenalty(percent_per_day=20.0, max_percent=50.0)
    assert half.late_submission_penalty("ada", 10.0, DAY) == pytest.approx(2.0)
    assert half.late_submission_penalty("ada", 10.0, 2 * DAY + 1) == pytest.approx(5.0)   # 60% capped at 50%
    assert half.late_submission_penalty("ada", 10.0, 40 * DAY) == pytest.approx(5.0)
    assert half.late_submission_penalty("ada", 0.0, 40 * DAY) == 0.0


@pytest.mark.parametrize("seconds, shown", [(0.49, "under 1 s"), (0.5, "under 1 s"), (0.51, "1 s"), (1, "1 s"), (59.4, "59 s"), (59.5, "1 min"),
                                            (3569.9, "59 min"), (3570, "1.0 h"), (4860, "1.4 h"), (4500, "1.2 h"),
                                            (47.9 * 3600, "47.9 h"),
                                            (48 * 3600, "2.0 days"), (10 * DAY, "10.0 days")])
def test_how_late_at_each_units_edge(seconds, shown):
    assert how_late(seconds) == shown


def test_a_points_count_is_shown_as_nbgrader_stores_it():
    assert [points(v) for v in (1, 1.5, 0.25, 12)] == ["1 point", "1.5 points", "0.25 points", "12 points"]
