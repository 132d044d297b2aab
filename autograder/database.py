"""Runs as the instructor (the grader and every tool): the gradebook's database, checked before a grading run uses it: a
clear error, and nothing written, when it cannot be used.

`check(db_url)` runs before nbgrader's Gradebook opens the database (gradebook.open_gradebook), because Gradebook
itself would go on where it should stop: it creates missing tables in a database made by another nbgrader
version and never compares schema revisions. It stops, with what to do, on
- a database driver that is not installed (the course installs psycopg 3: write `postgresql+psycopg://`, which
  every SQLAlchemy 2 reads the same way; plain `postgresql://` meant psycopg2 before SQLAlchemy 2.1);
- a server that cannot be reached (refused, unknown host, time-out: add `?connect_timeout=10` to the URL so that a
  host that does not answer fails in seconds), wrong credentials, a database that does not exist;
- a schema from another nbgrader version: the `alembic_version` revision is not the one this nbgrader's migrations
  end at (an older one: `nbgrader db upgrade`; an unknown one: the nbgrader that made it is newer).
Passwords never appear in messages (`safe_url`). A URL that passed is not checked again in the same process.
"""
from __future__ import annotations

import enum
import functools
import os

from autograder.errors import GraderError

_checked: set[str] = set()


class GradebookError(GraderError):
    """The gradebook could not be read or written; the message says why and what to do. `results_kept`: the message
    already says that a run's graded results are kept (a re-run only writes them), so nobody says it twice."""

    def __init__(self, message: str, results_kept: bool = False):
        super().__init__(message)
        self.results_kept = results_kept


def reason(error: BaseException) -> str:
    """The first line of what the database driver said (or the error's own text)."""
    return (str(getattr(error, "orig", None) or error).strip().splitlines() or [""])[0][:300]


def after_commit(error: GradebookError, db_url: str, submissions: int, out) -> str:
    """A database error after a run's commit went through (the server stopped, say): the grades are in the gradebook,
    and the message must not say that nothing was written (issue #49)."""
    cause = reason(error.__context__) if error.__context__ is not None else str(error)
    return (f"this run's grades are in the gradebook ({safe_url(db_url)}): its commit of {submissions} submission(s) "
            f"went through. Afterwards the gradebook could not be read back ({cause}), so {out}/grades.csv and "
            f"{out}/summary.txt were not written. Run the same command again once the database answers: it reuses "
            "every result, writes the same grades again, and then writes those files.")


class Problem(enum.Enum):
    """What kind of trouble a database error is, as the driver's own code tells it (`problem_of`)."""
    LOCKED = "locked"                      # another process holds the database or the rows
    WRITTEN_BY_ANOTHER_RUN = "written"     # a unique key another run wrote first
    NO_CONNECTION = "no connection"        # the server has no connection slot left
    NOT_A_DATABASE = "not a database"      # the file is not SQLite, or is damaged
    OTHER = "other"


# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff; https://sqlite.org/rescode.html) and
# PostgreSQL's SQLSTATEs (psycopg's Error.sqlstate; https://www.postgresql.org/docs/current/errcodes-appendix.html).
_SQLITE = {5: Problem.LOCKED, 6: Problem.LOCKED, 19: Problem.WRITTEN_BY_ANOTHER_RUN, 11: Problem.NOT_A_DATABASE,
           26: Problem.NOT_A_DATABASE}
_SQLSTATE = {"55P03": Problem.LOCKED, "23505": Problem.WRITTEN_BY_ANOTHER_RUN, "53300": Problem.NO_CONNECTION}


def problem_of(error: BaseException) -> Problem:
    """The kind of a database error, from the driver's code (`_driver_error`). SQLite's constraint code (19) counts as another run's
    write only for a unique key (its extended codes 2067 and 1555), the only constraint a grading run can break."""
    driver = _driver_error(error)
    code = getattr(driver, "sqlite_errorcode", None)
    if isinstance(code, int):
        problem = _SQLITE.get(code & 0xFF, Problem.OTHER)
        unique = code in (2067, 1555)  # SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
        return Problem.OTHER if problem is Problem.WRITTEN_BY_ANOTHER_RUN and not unique else problem
    state = getattr(driver, "sqlstate", None)
    if state:
        return _SQLSTATE.get(state, Problem.OTHER)
    # A connection the server refuses carries no SQLSTATE (its FATAL comes before a session exists: libpq gives psycopg
    # the words alone), so a full server is known by PostgreSQL's own two messages for it.
    text = reason(error)
    if "too many clients" in text or "remaining connection slots are reserved" in text:
        return Problem.NO_CONNECTION
    return Problem.OTHER


def _driver_error(error: BaseException) -> BaseException:
    """The database driver's own error behind `error`: SQLAlchemy's `orig`, or, for one nbgrader raised again in its
    own words (its InvalidEntry for an IntegrityError), the error it was raised from; else `error` itself."""
    seen: BaseException | None = error
    while seen is not None:
        driver = getattr(seen, "orig", None) or seen
        if getattr(driver, "sqlite_errorcode", None) is not None or getattr(driver, "sqlstate", None):
            return driver
        seen = seen.__cause__ or seen.__context__
    return error


def gradebook_error(error: BaseException, db_url: str) -> GradebookError:
    """A database error as GradebookError: `explain`'s words, and whether they say the graded results are kept (the
    gradebook was locked, or written by another run at the same time)."""
    kept = problem_of(error) in (Problem.LOCKED, Problem.WRITTEN_BY_ANOTHER_RUN)
    return GradebookError(explain(error, db_url), results_kept=kept)


# What each kind of database error means and what to do; {where} is the gradebook, {text} the driver's words.
ADVICE = {
    Problem.LOCKED: "{where} is locked by another process (a formgrader saving a score, or another grading run): "
                    "{text}. Nothing was written and the grades in it are as before; run the command again when that "
                    "process is done. The graded results are kept, so the notebooks will not run again.",
    Problem.WRITTEN_BY_ANOTHER_RUN:
        "{where} refused this run's write: another grading run wrote the same submissions into it at the same time "
        "({text}). That is two graders given the same shard (the same --shard K/N, or one Slurm array task or "
        "Kubernetes index running twice at once), or a whole-class run beside shards on a machine that does not share "
        "their course folder. Nothing was written by this run; the other run's grades stand. Make sure each shard "
        "runs once (squeue, kubectl get pods), then run this one again if it is still needed: its graded results are "
        "kept, so no notebook runs again.",
    Problem.NO_CONNECTION: "{where} has no connection left for this run ({text}): every connection the server allows "
                           "(max_connections) is taken by other clients. Nothing was written; the grades in it are as "
                           "before. Run again when fewer clients are connected, or raise the server's max_connections.",
    Problem.NOT_A_DATABASE: "{where} is not a readable database ({text}). Nothing was written and the file was not "
                            "changed; restore it from a backup.",
    Problem.OTHER: "{where} could not be used: {text}. Nothing was written; the grades in it are as before.",
}


def explain(error: BaseException, db_url: str) -> str:
    """A database error in words, with what to do (never the password of the URL)."""
    return ADVICE[problem_of(error)].format(where=f"the gradebook ({safe_url(db_url)})", text=reason(error))


def safe_url(db_url: str) -> str:
    """The URL with its password masked, for messages and logs."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(db_url).render_as_string(hide_password=True)
    except Exception:  # a URL SQLAlchemy cannot parse has no password to hide that we can find
        return db_url.split("@")[-1] if "@" in db_url else db_url


@functools.lru_cache(maxsize=1)
def revisions() -> tuple[str | None, list[str]]:
    """(the revision this nbgrader's gradebook schema is at, every revision its migrations know)."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR
    script = ScriptDirectory(ALEMBIC_DIR)
    return script.get_current_head(), [r.revision for r in script.walk_revisions()]


def _nbgrader_version() -> str:
    import importlib.metadata
    return importlib.metadata.version("nbgrader")


def connection_problem(text: str, url) -> str | None:
    """What a failed connection's message means, in words, or None when it is not about connecting."""
    low = text.lower()
    where = f"{url.host or 'localhost'}:{url.port or 5432}" if url.host is not None or url.port else "the server"
    if "password authentication failed" in low or ("role" in low and "does not exist" in low) \
            or "no password supplied" in low or "authentication failed" in low:
        return (f"the database server at {where} refused user {url.username!r}: {text}. Check the user name and "
                "password in c.CourseDirectory.db_url (nbgrader_config.py).")
    if "database" in low and "does not exist" in low:
        return (f"the database server at {where} has no database {url.database!r}: {text}. Create it once "
                f"(`createdb -O {url.username or 'grader'} {url.database}`) and run the command again.")
    if any(s in low for s in ("connection refused", "could not translate host name", "name or service not known",
                              "timeout expired", "no route to host", "network is unreachable", "could not connect",
                              "server closed the connection", "connection timed out")):
        return (f"cannot reach the database server at {where}: {text}. Is the server running, and is it reachable "
                "from this machine (host, port, firewall)? Add ?connect_timeout=10 to the URL so that a server that "
                "does not answer fails quickly.")
    return None


def check(db_url: str) -> None:
    """Raise GradebookError, saying why and what to do, when the gradebook's database cannot be used as it is.
    Only reads; on a database with no tables yet (a new gradebook) there is nothing to compare."""
    if db_url in _checked:
        return
    from sqlalchemy import create_engine, inspect, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
    shown = safe_url(db_url)
    try:
        url = make_url(db_url)
        engine = create_engine(db_url, future=True)
    except (ImportError, NoSuchModuleError) as error:
        hint = (" For PostgreSQL write postgresql+psycopg://user:password@host/database: the course installs psycopg 3 "
                "(pyproject.toml); postgresql+psycopg2:// (and plain postgresql:// before SQLAlchemy 2.1) asks for "
                "psycopg2." if db_url.startswith("postgres") else "")
        raise GradebookError(f"the gradebook ({shown}) needs a database driver that is not installed: {error}.{hint} "
                             "Nothing was written.") from None
    except ArgumentError as error:
        raise GradebookError(f"c.CourseDirectory.db_url ({shown}) is not a database URL: {error}. "
                             "Nothing was written.") from None
    try:
        with engine.connect() as connection:
            tables = inspect(connection).get_table_names()
            found = ([str(v) for v in connection.execute(text("SELECT version_num FROM alembic_version")).scalars()]
                     if "alembic_version" in tables else [])
    except SQLAlchemyError as error:
        message = str(getattr(error, "orig", None) or error).strip().replace("\n", " ")
        problem = connection_problem(message[:400], url) if url.drivername.split("+")[0] != "sqlite" else None
        raise GradebookError((f"the gradebook ({shown}) could not be used: {problem} Nothing was written; the "
                              "grades in it are as before." if problem else explain(error, shown))) from None
    finally:
        engine.dispose()
    if tables:
        head, known = revisions()
        version = _nbgrader_version()
        if not found:
            raise GradebookError(
                f"the gradebook ({shown}) holds tables but no alembic_version: it is not an nbgrader gradebook, or "
                f"one from an nbgrader too old to say its schema (this is nbgrader {version}, schema {head}). "
                "Nothing was written. Point c.CourseDirectory.db_url at the course's gradebook, or back it up and "
                "run `nbgrader db upgrade`.")
        if found != [head]:
            older = [r for r in found if r in known]
            if older and len(found) == 1:
                todo = ("it was made by an older nbgrader: back it up, then run `nbgrader db upgrade` once "
                        "(every grading machine then uses the same nbgrader)")
            else:
                todo = ("it was made by a newer or another nbgrader, whose schema this one does not know: grade with "
                        "the nbgrader that made it, or upgrade this course's pin (pyproject.toml) to it")
            raise GradebookError(f"the gradebook ({shown}) has schema revision {', '.join(found)}, but nbgrader "
                                 f"{version} uses {head}: {todo}. Nothing was written; the grades in it are as "
                                 "before.")
    _checked.add(db_url)


def forget() -> None:
    """Check every URL again (the tests change databases under the same URL)."""
    _checked.clear()


os.environ.setdefault("PGCONNECT_TIMEOUT", "20")  # libpq: a host that never answers fails in 20 s, not minutes


def alembic_head() -> str | None:
    """The schema version nbgrader stamps on a new gradebook, read from nbgrader's own migration scripts in this
    process. nbgrader's `get_alembic_version` runs the `alembic` command for it: a second interpreter (about 2 CPU-s)
    each time a gradebook is created, found only when the environment's bin/ is on PATH."""
    import nbgrader.dbutil
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    config = Config()
    config.set_main_option("script_location", nbgrader.dbutil.ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def alembic_head_in_process() -> None:
    """Make nbgrader, in this process, read the schema version a new gradebook gets with `alembic_head` (the same
    answer: tests/test_gradebook.py compares them) instead of running the `alembic` command."""
    import nbgrader.api
    nbgrader.api.get_alembic_version = alembic_head
