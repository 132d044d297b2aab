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
c.Exchange.assignment_dir = "release"   # relative to the server's root folder, the student's home
