"""nbgrader configuration for running the course on a JupyterHub with nbgrader's exchange.

Install it as /etc/jupyter/nbgrader_config.py on the hub's single-user image (students) and in the instructor's
~/.jupyter/ (instructor), after `pip install -e .` of this repository in the image. See README.md, "Running a
class on JupyterHub". The exchange is a folder every user can reach (a shared volume); nbgrader sets the
permissions so students can only drop their own submissions and fetch releases.
"""
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "cs336-primitives"
c.Exchange.root = "/srv/nbgrader/exchange"          # shared volume, mode 0777 with the sticky bit, created once
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"

# Instructor side only: the course folder holding source/ and release/ (a clone of this repository).
c.CourseDirectory.root = "/home/instructor/cs336-primitives"

# Student side: the assignment list extension shows releases of this course only.
c.CourseDirectory.assignment_id = ""
