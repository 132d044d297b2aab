"""The students' side of nbgrader's exchange when the class shares one machine: the template of the file each student
copies to ~/.jupyter/nbgrader_config.py, then uses `nbgrader fetch_assignment`, `submit`, `fetch_feedback` or
JupyterLab's Assignments tab. It stands alone (it loads no other file), so it works from any folder.

This file, as the repository has it, is only the template: it names no exchange, and refuses to be used. The
instructor's `nbgrader release_assignment` (autograder/exchange.py) writes the class's copy, with EXCHANGE and COURSE
filled in, into the class's exchange folder: <exchange>/cs336-primitives/nbgrader_config_exchange.py. So students and
instructor have one exchange, the instructor's: the course's exchange/ folder, unless the instructor set
COURSE_EXCHANGE to a shared one (`sudo mkdir -p -m 1777 /srv/nbgrader/exchange`) before releasing.

Two classes of this course on one machine share the course id, so every student command checks that the exchange is
the class's own: its course.txt (written by the first release) must name COURSE. Otherwise the command stops, saying
so, before anything is fetched or submitted. And every student command checks that the class's exchange folder, its
course.txt and students' file and its inbound, outbound and feedback folders are the instructor's (INSTRUCTOR_UID, the
account that released) or root's, and no symbolic link: on a shared machine another student could have made them
before the first release (autograder.exchange.check_owned, whose check this repeats: students have nothing else of
the instructor's).
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

EXCHANGE = None  # the class's exchange folder, as the instructor's release_assignment used it
COURSE = None    # the instructor's course folder: the class's own, which <EXCHANGE>/cs336-primitives/course.txt names
INSTRUCTOR_UID = None  # the uid of the account whose release wrote this file
COURSE_ID = "cs336-primitives"
CLASS_MARK = "course.txt"  # autograder.exchange.CLASS_MARK
# autograder.exchange.EXCHANGE_PARTS: name in the course's exchange folder, a folder?, writable by others?
EXCHANGE_PARTS = (("", True, False), (CLASS_MARK, False, False), ("nbgrader_config_exchange.py", False, False),
                  ("outbound", True, False), ("inbound", True, True), ("feedback", True, False))

if EXCHANGE is None or COURSE is None or INSTRUCTOR_UID is None:
    raise SystemExit(f"error: {os.path.abspath(__file__)} is the template of the students' file and names no exchange. "
                     "Use the copy your instructor hands out: `nbgrader release_assignment` writes it into the class's "
                     f"exchange, as <exchange>/{COURSE_ID}/nbgrader_config_exchange.py. Nothing was fetched or submitted.")
if os.path.realpath(os.environ.get("COURSE_EXCHANGE") or EXCHANGE) != os.path.realpath(EXCHANGE):
    raise SystemExit(f"error: COURSE_EXCHANGE is {os.environ['COURSE_EXCHANGE']}, but your class's exchange is "
                     f"{EXCHANGE} ({os.path.abspath(__file__)}, from your instructor). Unset COURSE_EXCHANGE "
                     "(`unset COURSE_EXCHANGE`, and remove it from ~/.bashrc) and run the command again; nothing was "
                     "fetched or submitted.")

c.CourseDirectory.course_id = COURSE_ID
c.Exchange.root = EXCHANGE
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"  # the time zone written to each submission's timestamp.txt

# Every student command checks the class first. Defined here because a student has nbgrader and nothing of the
# instructor's; nbgrader's ExchangeFactory takes the classes themselves.
from nbgrader.exchange.default.fetch_assignment import ExchangeFetchAssignment  # noqa: E402
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback  # noqa: E402
from nbgrader.exchange.default.list import ExchangeList  # noqa: E402
from nbgrader.exchange.default.submit import ExchangeSubmit  # noqa: E402


def untrusted(course_path):
    """Why the course's exchange folder cannot be trusted (a part another account made, or a link), or None."""
    import stat
    try:
        top = os.stat(os.path.dirname(course_path))
    except FileNotFoundError:
        return None
    if top.st_uid not in (0, INSTRUCTOR_UID):
        return f"the exchange {os.path.dirname(course_path)} is owned by uid {top.st_uid}, not by your instructor or root"
    if top.st_mode & stat.S_IWOTH and not top.st_mode & stat.S_ISVTX:
        return f"the exchange {os.path.dirname(course_path)} is writable by every account without the sticky bit"
    for name, folder, others_write in EXCHANGE_PARTS:
        path = os.path.join(course_path, name) if name else course_path
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            if not name:
                return None
            continue
        if stat.S_ISLNK(info.st_mode):
            return f"{path} is a symbolic link"
        if info.st_uid not in (0, INSTRUCTOR_UID):
            return f"{path} is owned by uid {info.st_uid}, not by your instructor (uid {INSTRUCTOR_UID}) or root"
        if stat.S_ISDIR(info.st_mode) != folder or not (folder or stat.S_ISREG(info.st_mode)):
            return f"{path} is not a {'folder' if folder else 'regular file'}"
        if info.st_mode & stat.S_IWOTH and not others_write:
            return f"{path} is writable by every account"
    return None


class ThisClassOnly:
    """Fail, before anything is copied, unless the exchange's course folder belongs to this class."""

    def start(self):
        course_path = os.path.join(self.root, COURSE_ID)
        why = untrusted(course_path)
        if why:
            self.fail(f"{why}: another account may have made or changed it, so the class's exchange cannot be "
                      "trusted. Nothing was fetched or submitted: tell your instructor (and show them this message).")
        mark = os.path.join(course_path, CLASS_MARK)
        try:
            with open(mark) as f:
                owner = f.read().strip()
        except FileNotFoundError:
            self.fail(f"The exchange {course_path} has no {CLASS_MARK}: your instructor has released nothing of your "
                      "class there yet (or it is another class's, from before such marks), or your class has ended "
                      "and its exchange folder is gone: then remove this file, ~/.jupyter/nbgrader_config.py. Nothing "
                      "was fetched or submitted: ask your instructor.")
        if owner != COURSE:
            self.fail(f"The exchange {course_path} belongs to another class of {COURSE_ID}: its {CLASS_MARK} names the "
                      f"course {owner}, and yours is {COURSE}. Nothing was fetched or submitted: ask your instructor "
                      "for your class's file (nbgrader_config_exchange.py).")
        return super().start()


class Fetch(ThisClassOnly, ExchangeFetchAssignment):
    pass


class Submit(ThisClassOnly, ExchangeSubmit):
    pass


class FetchFeedback(ThisClassOnly, ExchangeFetchFeedback):
    pass


class List(ThisClassOnly, ExchangeList):
    pass


c.ExchangeFactory.fetch_assignment = Fetch
c.ExchangeFactory.submit = Submit
c.ExchangeFactory.fetch_feedback = FetchFeedback
c.ExchangeFactory.list = List
