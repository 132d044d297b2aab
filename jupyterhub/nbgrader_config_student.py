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


# nbgrader makes each submission's folder in the exchange writable by everyone (0777, "so the instructor can delete
# later"), guarded only by its random name, which other students cannot list. Here it is its owner's alone (0755):
# nobody else can delete, replace or add a file in it, and the grader still reads it to collect. (Removing old
# submissions from the exchange is then root's job.) Defined here because the students' environment has nbgrader
# and nothing of the instructor's; nbgrader's ExchangeFactory takes the class itself.
from nbgrader.exchange.default.submit import ExchangeSubmit  # noqa: E402


class OwnersOnlySubmit(ExchangeSubmit):
    def copy_files(self):
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o755)


c.ExchangeFactory.submit = OwnersOnlySubmit
