"""nbgrader configuration for one machine with nbgrader's exchange: the course (nbgrader_config.py beside this file)
plus an exchange folder that the instructor and every student account on the machine can reach.

Instructor, in the course root:   nbgrader release_assignment 01_floats --config=nbgrader_config_exchange.py
                                  (or copy this file to ~/.jupyter/nbgrader_config.py and leave out --config)
Students: a config with the same `course_id`, `Exchange.root` and `Exchange.timezone` lines in their
~/.jupyter/nbgrader_config.py, then `nbgrader fetch_assignment`, `submit`, `fetch_feedback`, or the
Assignments tab of JupyterLab. Create the exchange folder once: `mkdir -p -m 1777 /srv/nbgrader/exchange`.
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)
load_subconfig(os.path.join(os.path.dirname(os.path.abspath(__file__)), "nbgrader_config.py"))  # noqa: F821

c.Exchange.root = "/srv/nbgrader/exchange"
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"  # the time zone written to each submission's timestamp.txt
