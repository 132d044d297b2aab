"""The students' side of nbgrader's exchange when the class shares one machine: each student copies this file to
~/.jupyter/nbgrader_config.py, then uses `nbgrader fetch_assignment`, `submit`, `fetch_feedback` or JupyterLab's
Assignments tab. It stands alone (it loads no other file), so it works from any folder.

The instructor needs no such file: the course's nbgrader_config.py names the exchange, and for a class it is the
shared folder in COURSE_EXCHANGE, the same here and on the instructor's side. Create that folder once:
`sudo mkdir -p -m 1777 /srv/nbgrader/exchange`.
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "cs336-primitives"
c.Exchange.root = os.environ.get("COURSE_EXCHANGE") or "/srv/nbgrader/exchange"
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"  # the time zone written to each submission's timestamp.txt
