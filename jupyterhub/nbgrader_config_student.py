"""nbgrader configuration of a student's server on the course's JupyterHub (jupyterhub/install-student.sh puts it
in /etc/jupyter/). The exchange and course name match the instructor's (nbgrader_config_hub.py); the difference:
fetched exercises go to release/<assignment>/ in the student's home, where the landing page links them and
`make progress` looks for them."""
import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "cs336-primitives"
c.Exchange.root = os.environ.get("COURSE_EXCHANGE") or "/srv/nbgrader/exchange"  # the class hub sets it
c.Exchange.timezone = "UTC"
c.Exchange.path_includes_course = False
# absolute: the Assignments tab changes into this folder before fetching into it, so a relative one would nest
# (release/release/<assignment>)
c.Exchange.assignment_dir = os.path.join(os.path.expanduser("~"), "release")
c.CourseDirectory.max_file_size = 20_000       # kB: a larger file beside a notebook is left out at submit, with a warning


# On the class hub a student's server runs where every mount is read-only but their own disk, and the exchange's
# inbound folder is their own inbound/ on that disk (scripts/student_jail.py): nbgrader's check that the exchange's
# root is writable by everyone would refuse every fetch and submit there, so it only checks that the root exists.
# The submission's folder is its owner's alone (0755), not nbgrader's 0777 "so the instructor can delete later":
# nobody else may delete, replace or add a file in it, and the grader still reads it to collect. Defined here
# because the students' environment has nbgrader and nothing of the instructor's; nbgrader's ExchangeFactory takes
# the classes themselves.
from nbgrader.exchange.default.fetch_assignment import ExchangeFetchAssignment  # noqa: E402
from nbgrader.exchange.default.fetch_feedback import ExchangeFetchFeedback  # noqa: E402
from nbgrader.exchange.default.list import ExchangeList  # noqa: E402
from nbgrader.exchange.default.submit import ExchangeSubmit  # noqa: E402


class RootExists:
    def ensure_root(self):
        if not os.path.isdir(self.root):
            self.fail(f"The exchange {self.root} is missing, please contact your instructor")


class OwnersOnlySubmit(RootExists, ExchangeSubmit):
    def copy_files(self):
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o755)


class Fetch(RootExists, ExchangeFetchAssignment):
    pass


class FetchFeedback(RootExists, ExchangeFetchFeedback):
    pass


class List(RootExists, ExchangeList):
    pass


c.ExchangeFactory.submit = OwnersOnlySubmit
c.ExchangeFactory.fetch_assignment = Fetch
c.ExchangeFactory.fetch_feedback = FetchFeedback
c.ExchangeFactory.list = List
