"""nbgrader's exchange applications (ours: autograder/exchange/) made as an `nbgrader` command makes them, for tests
that call one step of a command without a process of its own."""
from __future__ import annotations

import logging
from pathlib import Path

from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

COURSE_ID = "cs336"


def exchange_app(cls, assignment: str, exchange: Path, course: Path, gradebook: Path, log: str,
                 settings: dict[str, dict[str, object]] | None = None):
    """`cls` (an nbgrader Exchange application) for course cs336 and `assignment`, its exchange, course folder and
    gradebook where given; `settings`: {section: {trait: value}} on top (CourseDirectory, or the class's own)."""
    config = Config()
    config.Exchange.root = str(exchange)
    config.CourseDirectory.course_id, config.CourseDirectory.assignment_id = COURSE_ID, assignment
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = f"sqlite:///{gradebook}"
    for section, traits in (settings or {}).items():
        for name, value in traits.items():
            config[section][name] = value
    made = cls(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config), config=config)
    made.log = logging.getLogger(log)
    return made
