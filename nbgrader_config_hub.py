"""nbgrader configuration for running the course on a JupyterHub with nbgrader's exchange.

Install it as /etc/jupyter/nbgrader_config.py on the hub's single-user image (students and instructor), after
`pip install -e .` of this repository in the image. See docs/hub.md, "A hub in containers". The exchange
is a folder every user can reach (a shared volume); nbgrader sets the permissions so students can only drop
their own submissions and fetch releases.

It names the course and the exchange only. The instructor works in a clone of this repository (the course root):
its nbgrader_config.py, read after this file whenever nbgrader runs there (and by `make lab`'s formgrader), adds
the course's folders, gradebook, grading and late-penalty settings; it takes its exchange from the environment
variable COURSE_EXCHANGE, which this file sets to the shared volume (unless the server's environment already names
one), so that Formgrader and every nbgrader command in the course use the shared exchange, not the course's own
exchange/. Students have no course root and need none (jupyterhub/nbgrader_config_student.py).
"""
import os

c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "cs336-primitives"
# the shared volume, mode 0777 with the sticky bit, created once; the course's nbgrader_config.py reads it from here
c.Exchange.root = os.environ.setdefault("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"

# Student side: the assignment list extension shows releases of this course only.
c.CourseDirectory.assignment_id = ""
