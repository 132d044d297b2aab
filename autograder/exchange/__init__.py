"""Runs as the instructor (nbgrader's commands): nbgrader's exchange, made safe for a class on one machine, and made to
skip what it cannot deliver. One module per nbgrader command, as nbgrader's own `nbgrader/exchange/default/` is:

- `folder.py`: the class's folder in the exchange, `<exchange>/<course id>/`, and who may own each of its parts
  (`check_owned`, `seal_root`: another account's course.txt or inbound folder is refused);
- `students_file.py`: which class that folder belongs to (`course.txt`) and the students' file that names it
  (`nbgrader_config_exchange.py`, filled in and handed out at each release);
- `release_assignment.py`, `release_feedback.py`, `collect.py`: the subclasses nbgrader_config.py (and the class hub's
  jupyterhub/nbgrader_config_grader.py) name as `ExchangeFactory.release_assignment`, `.release_feedback` and
  `.collect`: `ReleaseAssignment`, `ReleaseFeedback` and `OwnedCollect`;
- `students_env.py`: `python -m autograder.exchange check-students-env ENV`, can every account run ENV's nbgrader?

The exchange's root itself is the course's (`autograder.course.exchange_root`). The names below are this package's
public ones: the configuration's class paths (`autograder.exchange.ReleaseAssignment`, ...) and the tools' imports use
them from here.
"""
from autograder.exchange.collect import OwnedCollect, Skip, arrival_time, copy_owned, read_entry
from autograder.exchange.folder import (
    CLASS_MARK,
    EXCHANGE_PARTS,
    STUDENTS_CONFIG,
    Untrusted,
    account_name,
    check_owned,
    release_check,
    seal_root,
)
from autograder.exchange.release_assignment import ReleaseAssignment
from autograder.exchange.release_feedback import FinalName, ReleaseFeedback
from autograder.exchange.students_env import closed_to_others, main, students_nbgrader
from autograder.exchange.students_file import (
    TEMPLATE,
    OtherClass,
    check_class,
    hand_out,
    handing_out,
    owner_of,
    students_config,
)

__all__ = [
    "CLASS_MARK", "EXCHANGE_PARTS", "STUDENTS_CONFIG", "TEMPLATE", "FinalName", "OtherClass", "OwnedCollect",
    "ReleaseAssignment", "ReleaseFeedback", "Skip", "Untrusted", "account_name", "arrival_time", "check_class",
    "check_owned", "closed_to_others", "copy_owned", "hand_out", "handing_out", "main", "owner_of", "read_entry",
    "release_check", "seal_root", "students_config", "students_nbgrader",
]
