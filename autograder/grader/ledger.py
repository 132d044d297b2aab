"""Runs in the grader: the ledger, what earlier runs recorded in the gradebook, kept with it, so that a run never
writes into a gradebook that has lost what they recorded, or into another course's.

It lives with the gradebook, not with a run's output (issue #49: after `make clean`, or with a fresh --out, an
emptied gradebook was taken as new and every late penalty vanished): `<course>/.gradebook-ledger.json`, beside the
default sqlite gradebook and nbgrader_config.py, one per course whatever the gradebook (sqlite or PostgreSQL). It
holds (version 3, issue #62)

    course        the course id it was written for
    gradebook     the gradebook's URL (password masked)
    assignments   each assignment's id in that gradebook (nbgrader's uuid, made when the assignment was first
                  recorded), and `fingerprint`, a digest of them: the gradebook's identity, which a copy or a move of
                  the gradebook keeps and another gradebook (another class, a new one) does not have
    submissions   every (student, assignment) the gradebook held, and `due`, the assignments with a due date
    dropped       submissions an instructor let go on purpose (--start-over, --re-record) that autograded/ still shows
    sha256        the digest of the rest: a ledger cut short or edited is told from a whole one and refused

Before a run writes anything (`check`), it stops, naming what happened and the way back, when
- the ledger is damaged, or belongs to another course or another gradebook (its assignments have other ids);
- the gradebook lost submissions or due dates the ledger lists (emptied, moved away, another one put in its place);
- whatever the ledger says (it may be gone too), the gradebook lacks submissions that the course's autograded/ or
  the run's OUT/grades.csv show were recorded in it: both are written only after a run's commit, so such a
  submission was in the gradebook once. (OUT/results/ is not such a sign: a run that stopped before its commit, a
  locked gradebook say, leaves its results there on purpose, for the next run to record.)
`--re-record STUDENT/ASSIGNMENT` (patterns: `*/01_floats`) takes the named submissions as lost and records them
again from submitted/, keeping everything else of the gradebook; `--start-over` takes the whole gradebook as it is.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.atomic import write_atomically
from autograder.course import Course
from autograder.database import GradebookError, explain, safe_url
from autograder.gradebook import Held

LEDGER = "gradebook-ledger.json"               # where runs before issue #49 kept it: in the output folder
COURSE_LEDGER = ".gradebook-ledger.json"        # where it is kept now: in the course folder, with the gradebook
LEDGER_VERSION = 3
SHOWN = 5  # submissions named in a message, before "and N more"


def ledger_path(course: Course) -> Path:
    """Where the course's ledger lives: `<course>/.gradebook-ledger.json`."""
    return course.root / COURSE_LEDGER


def temporary_ledgers(course: Course) -> list[Path]:
    """The ledger's temporary files (atomic.write_atomically's `..gradebook-ledger.json-<pid>-<host>.tmp`) that a
    killed run may have left in the course folder."""
    return sorted(course.root.glob(f".{COURSE_LEDGER}-*.tmp"))


def fingerprint(assignments: dict[str, str]) -> str:
    """A short digest of a gradebook's identity: its assignments' names and ids (16 hex digits; 'empty' for none)."""
    if not assignments:
        return "empty"
    text = "\n".join(f"{name}={uid}" for name, uid in sorted(assignments.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Ledger:
    """A ledger as read (see the module docstring); `course` is None and `assignments` empty in one written before
    version 3, which cannot say which gradebook it describes."""
    path: Path
    course: str | None
    gradebook: str
    assignments: dict[str, str]
    submissions: frozenset[tuple[str, str]]
    due: frozenset[str]
    dropped: frozenset[tuple[str, str]] = frozenset()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.assignments)


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class DamagedLedger(GradebookError):
    """The ledger exists but cannot be read whole: it cannot say whether the gradebook lost records."""


class ForeignLedger(GradebookError):
    """The ledger was written for another course or another gradebook; the message says which, and what to do."""


class LostRecords(GradebookError):
    """The gradebook lacks what earlier runs recorded in it; the message says what, and the ways back."""


def read_ledger(path: Path) -> Ledger | None:
    """The ledger at `path`; None when there is none; DamagedLedger when it is there but not whole (cut short,
    edited, not a ledger)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise DamagedLedger(_damaged(path, error.strerror or str(error))) from None
    try:
        ledger = json.loads(text)
        body = {k: v for k, v in ledger.items() if k != "sha256"}
        if ledger.get("version", 1) >= 2 and ledger.get("sha256") != _digest(body):
            raise ValueError("its digest does not match its contents")
        return Ledger(path, ledger.get("course"), str(ledger.get("gradebook", "")), dict(ledger.get("assignments", {})),
                      frozenset((str(s), str(a)) for s, a in ledger["submissions"]), frozenset(ledger["due"]),
                      frozenset((str(s), str(a)) for s, a in ledger.get("dropped", [])))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise DamagedLedger(_damaged(path, str(error)[:200])) from None


def _damaged(path: Path, why: str) -> str:
    return (f"the gradebook's ledger {path} is damaged ({why}), so nothing can tell whether the gradebook lost what "
            "earlier runs recorded (submissions, due dates: late penalties). Nothing was written. Restore the ledger "
            "from the backup you keep with the gradebook (the two belong together), or check the gradebook "
            "(python -m autograder.deadlines show; nbgrader db assignment list) and, when it is whole, run again with "
            "--start-over, which takes the gradebook as it is and writes a new ledger")


# ---- the check, before anything is written ------------------------------------------------------------------------

@dataclass
class Accepted:
    """What the instructor let go for this run (--start-over: everything; --re-record: the submissions matching
    `patterns`), and the lines the run's summary says about the ledger."""
    start_over: bool = False
    patterns: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    def covers(self, pair: tuple[str, str]) -> bool:
        return self.start_over or any(fnmatch.fnmatchcase(f"{pair[0]}/{pair[1]}", p) for p in self.patterns)


def check(course: Course, out: Path, start_over: bool = False, re_record: tuple[str, ...] = ()) -> Accepted:
    """GradebookError (DamagedLedger, ForeignLedger, LostRecords) when the run must not write into the gradebook
    (module docstring); else what the instructor accepted. Runs before the gradebook is opened for writing, and
    opens it read only (a database without nbgrader's tables is not given them)."""
    accepted = Accepted(start_over, tuple(re_record))
    for pattern in re_record:
        if pattern.count("/") != 1:
            raise GradebookError(f"--re-record {pattern!r}: give STUDENT/ASSIGNMENT (either may be a pattern: "
                                 "'*/01_floats'). Nothing was written.")
    if start_over:
        return accepted
    shown = safe_url(course.db_url)
    ledgers = [found for found in (read_ledger(ledger_path(course)), read_ledger(out / LEDGER)) if found is not None]
    # The signs first, the gradebook after: a shard that commits meanwhile puts its autograded/ folders in place only
    # after its commit, so whatever the listing finds, the gradebook read after it holds.
    shown_by = recorded_elsewhere(course, out)
    held = _held(course, any(ledger.submissions or ledger.due for ledger in ledgers))
    excused: set[tuple[str, str]] = set()  # lost, and named by --re-record: recorded again
    for ledger in ledgers:
        if held is None:  # no gradebook at all where the ledger knew one
            raise LostRecords(_lost(shown, _why_empty(course, ledger), ledger))
        _same_gradebook(course, ledger, held)
        if ledger.gradebook and ledger.gradebook != shown:
            accepted.notes.append(f"the gradebook's address changed since the last run: the ledger named "
                                  f"{ledger.gradebook}, the course now names {shown} (the same gradebook: its "
                                  f"assignments have the ids the ledger lists, fingerprint {ledger.fingerprint})")
        gone = ledger.submissions - held.submissions
        lost = {pair for pair in gone if not accepted.covers(pair)}
        excused |= gone - lost
        lost_due = ledger.due - held.due
        if lost or lost_due:
            raise LostRecords(_lost(shown, _what_is_gone(lost, lost_due, len(ledger.submissions)), ledger, lost))
    dropped = frozenset().union(*(ledger.dropped for ledger in ledgers)) if ledgers else frozenset()
    missing = {pair for pair in shown_by if pair not in dropped and not accepted.covers(pair)} - \
        (held.submissions if held is not None else frozenset())
    if missing:
        raise LostRecords(_unrecorded(course, shown, out, missing, shown_by, held is None or not held.submissions))
    excused |= {pair for pair in shown_by - (held.submissions if held else frozenset()) if accepted.covers(pair)}
    matched = sorted(f"{s}/{a}" for s, a in excused)
    if matched:
        accepted.notes.append(f"recorded again, as --re-record asked: {_some(matched)}")
    return accepted


def _held(course: Course, expected: bool) -> Held | None:
    """What the gradebook holds (gradebook.Held), or None when there is no gradebook to read where one was
    `expected`: a missing or empty sqlite file, or a database without nbgrader's tables. Read only: opening a
    database through nbgrader would create its tables."""
    from autograder import gradebook
    if _missing_file(course) or not _has_tables(course.db_url):
        return None if expected else Held(frozenset(), frozenset(), {})
    return gradebook.recorded(course)


def _missing_file(course: Course) -> str:
    """'missing' or 'empty' for a sqlite gradebook file that is; '' otherwise."""
    from sqlalchemy.engine import make_url
    url = make_url(course.db_url)
    if not (url.drivername.startswith("sqlite") and url.database):
        return ""
    file = Path(url.database)
    return "missing" if not file.exists() else "empty" if file.is_file() and file.stat().st_size == 0 else ""


def _why_empty(course: Course, ledger: Ledger) -> str:
    from sqlalchemy.engine import make_url
    state = _missing_file(course)
    if state:
        return f"the gradebook file {make_url(course.db_url).database} is {state}"
    return "the gradebook's database holds no gradebook (no nbgrader tables: new or emptied)"


def _has_tables(db_url: str) -> bool:
    """True when the gradebook's database holds nbgrader's tables (read only; sqlite and PostgreSQL alike)."""
    from sqlalchemy import create_engine, inspect
    from sqlalchemy.exc import SQLAlchemyError
    engine = create_engine(db_url, future=True)
    try:
        with engine.connect() as connection:
            return inspect(connection).has_table("submitted_assignment")
    except SQLAlchemyError as error:
        raise GradebookError(explain(error, safe_url(db_url))) from None
    finally:
        engine.dispose()


def _same_gradebook(course: Course, ledger: Ledger, held: Held) -> None:
    """ForeignLedger when `ledger` was written for another course, or for another gradebook: none of the
    assignments both know has the id the ledger lists (a gradebook that kept some ids and lost others is this
    one, having lost records, which the caller says)."""
    if ledger.course is not None and ledger.course != course.course_id:
        raise ForeignLedger(_foreign(course, ledger, held, f"it was written for the course {ledger.course!r}, and this "
                                                           f"course is {course.course_id!r}"))
    both = set(ledger.assignments) & set(held.assignments)
    if both and all(ledger.assignments[a] != held.assignments[a] for a in both):
        raise ForeignLedger(_foreign(course, ledger, held, f"its assignments ({_some(sorted(both))}) have other ids "
                                                           "in this gradebook: it describes another gradebook"))
    if ledger.course is None and ledger.gradebook and ledger.gradebook != safe_url(course.db_url):
        raise ForeignLedger(_foreign(course, ledger, held, "it names another gradebook, and (written by a grader "
                                                           "before 2026-12) it holds no fingerprint to tell a moved "
                                                           "gradebook from another one"))


def _foreign(course: Course, ledger: Ledger, held: Held, why: str) -> str:
    return (f"the gradebook's ledger {ledger.path} is not this gradebook's: {why}. The ledger: course "
            f"{ledger.course or 'not named'}, gradebook {ledger.gradebook or 'not named'}, fingerprint "
            f"{ledger.fingerprint}, {len(ledger.submissions)} submissions; this course: {course.course_id}, gradebook "
            f"{safe_url(course.db_url)}, fingerprint {fingerprint(held.assignments)}, {len(held.submissions)} "
            "submissions. Nothing was written. Put back this gradebook's own ledger (restore the gradebook and its "
            "ledger together, from the same backup), or point c.CourseDirectory.db_url at the gradebook this ledger "
            "describes. If this gradebook is the right one and its own ledger is lost, run again with --start-over: "
            "it takes the gradebook as it is and replaces the ledger (nothing of the other ledger is checked then)")


def _what_is_gone(lost: set, lost_due: frozenset, count: int) -> str:
    what = []
    if lost:
        what.append(f"{len(lost)} of the {count} submissions earlier runs recorded are gone "
                    f"({_some(sorted(f'{s}/{a}' for s, a in lost))})")
    if lost_due:
        what.append(f"the due dates of {', '.join(sorted(lost_due))} are gone (late penalties would vanish)")
    return "; ".join(what)


def _some(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _ways_back(lost: set) -> str:
    """The ways back from a gradebook that lost `lost` submissions (and maybe due dates)."""
    named = sorted(f"{s}/{a}" for s, a in lost)
    again = ""
    if lost and len(named) <= SHOWN:
        again = (f" To record only those again from submitted/ (the rest of the gradebook, manual scores, extensions "
                 f"and due dates included, stays as it is; their own hand scores and extensions went with their "
                 f"records), run again with {' '.join(f'--re-record {n}' for n in named)}.")
    return (f"Restore the gradebook and its ledger together from their backup, or point c.CourseDirectory.db_url at "
            f"the right gradebook.{again} A lost due date comes back with `nbgrader db assignment add NAME "
            "--duedate=...`. To take the gradebook as it is on purpose, run again with --start-over: every "
            "submission in submitted/ is recorded again, and whatever the lost records held (manual scores, "
            "extensions, due dates, and so late penalties) is dropped for good")


def _lost(shown: str, what: str, ledger: Ledger, lost: set | None = None) -> str:
    elsewhere = f" (the ledger was written for {ledger.gradebook})" if ledger.gradebook and ledger.gradebook != shown else ""
    return (f"the gradebook ({shown}) has lost what earlier runs recorded{elsewhere}: {what}. Nothing was written. "
            f"{_ways_back(lost if lost is not None else set(ledger.submissions))}. (What earlier runs recorded: "
            f"{ledger.path}, {len(ledger.submissions)} submissions.)")


def _unrecorded(course: Course, shown: str, out: Path, missing: set, shown_by: frozenset, empty: bool) -> str:
    state = "holds no submission at all" if empty else "lacks some of them"
    return (f"the gradebook ({shown}) has lost what earlier runs recorded: {len(missing)} submission(s) that "
            f"{course.folder('autograded')} or {out / 'grades.csv'} show were graded and recorded in it are not "
            f"there ({_some(sorted(f'{s}/{a}' for s, a in missing))}); the gradebook {state}, whatever its ledger "
            f"says ({len(shown_by)} graded submissions shown there in all). Nothing was written. {_ways_back(missing)}. "
            "Submissions removed from the gradebook on purpose (a student who left): remove them from submitted/ "
            "too and run once with --re-record STUDENT/*, which then records nothing again; the ledger remembers "
            "that they were let go.")


def recorded_elsewhere(course: Course, out: Path) -> frozenset[tuple[str, str]]:
    """Every (student, assignment) that was recorded in the gradebook by the signs a run leaves after its commit:
    a notebook in autograded/<student>/<assignment>/, and a `graded` TOTAL row of OUT/grades.csv (written from the
    gradebook). Listing folders and reading one CSV: no result file is opened."""
    from autograder.grades_csv import OldGradesFile, read_totals
    from autograder.outcome import Status
    found = set()
    autograded = course.folder("autograded")
    for folder in autograded.glob("*/*/"):
        if not folder.parent.name.startswith(".") and not folder.name.startswith(".") and any(folder.glob("*.ipynb")):
            found.add((folder.parent.name, folder.name))
    try:
        totals = read_totals(out / "grades.csv")
    except (OldGradesFile, ValueError, OSError):  # an old or foreign grades.csv says nothing about this gradebook
        totals = {}
    found |= {key for key, (status, _) in totals.items() if status is Status.GRADED}
    return frozenset(found)


# ---- written after the commit ---------------------------------------------------------------------------------------

def write(course: Course, out: Path) -> None:
    """Remember, with the gradebook, what it now holds, for the next run's check (an older run's ledger in the output
    folder is removed: this one replaces it). Submissions autograded/ or grades.csv still show that the gradebook
    no longer holds were let go by the instructor (the run's check refuses them otherwise): they are kept as
    `dropped`, with those an earlier ledger had dropped."""
    from autograder import gradebook
    shown_by = recorded_elsewhere(course, out)  # before the gradebook is read: see `check`
    held = gradebook.recorded(course)
    try:
        earlier = read_ledger(ledger_path(course))
    except DamagedLedger:  # replaced on purpose (--start-over): what it had dropped cannot be read
        earlier = None
    dropped = (shown_by | (earlier.dropped if earlier else frozenset())) - held.submissions
    body = {"version": LEDGER_VERSION, "course": course.course_id, "gradebook": safe_url(course.db_url),
            "fingerprint": fingerprint(held.assignments), "assignments": held.assignments,
            "submissions": sorted(held.submissions), "due": sorted(held.due), "dropped": sorted(dropped)}
    write_atomically(ledger_path(course), json.dumps({**body, "sha256": _digest(body)}))
    (out / LEDGER).unlink(missing_ok=True)
