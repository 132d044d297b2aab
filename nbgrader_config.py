"""nbgrader configuration of the course. The folder holding this file is the course root.

Every stock `nbgrader` command run from this folder (`nbgrader db student import`, `formgrader` in `make lab`,
`generate_feedback`, `export`, ...) and our grader (`make grade`, `python -m autograder.grade`) read it:
`source/`, `release/`, `submitted/`, `autograded/`, `feedback/` and the gradebook `gradebook.db` all live here.

Variants beside it, each loading this file first:
  nbgrader_config_exchange.py   one machine with nbgrader's exchange in a shared folder (`--config` it, or copy it
                                to ~/.jupyter/nbgrader_config.py for the students' side)
  nbgrader_config_hub.py        a JupyterHub with many users and a shared exchange volume
To put the gradebook on a database server (several grading machines, see README.md), set
`c.CourseDirectory.db_url` here, e.g. "postgresql+psycopg://grader:...@db.example.org/cs336?connect_timeout=10"
(psycopg 3 is installed with the course; autograder/database.py checks the database before each run).
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "cs336-primitives"
# The course root is wherever this file is, so a copy of the course (a clone, a scratch folder) is its own course.
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# What a student sees in place of each solution region.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError(\"replace this line with your code, then run the test cell below\")"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Grading runs each notebook top to bottom; a cell that runs longer than this (seconds) is stopped.
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True

# nbgrader gives a test cell 0 points if it wrote anything to stderr. In Python a failed test raises, so
# stderr only ever holds warnings (from torch, matplotlib, ...): drop it all before scoring.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"[\s\S]*"

# Keep runaway output from bloating the graded notebook and the feedback.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 40

# Feedback shows students their graded notebook, but not the source of the hidden tests.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, GetGrades  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# Late submissions: a submission's time is its timestamp.txt (written by `nbgrader submit`, kept by `collect`);
# the due date is the assignment's (`nbgrader db assignment add NAME --duedate=...`) plus the student's extension
# (`python -m autograder.deadlines extend NAME STUDENT --days N`). Both nbgrader's autograde and ours ask this
# plugin for each late notebook's penalty: here 10% of the notebook's score per started day late, at most 100%.
# nbgrader's own `nbgrader.plugins.LateSubmissionPlugin` (penalty_method 'none' or 'zero') works here too.
c.AssignLatePenalties.plugin_class = "autograder.late.PerDayPenalty"
c.PerDayPenalty.percent_per_day = 10.0
c.PerDayPenalty.max_percent = 100.0

# Releasing feedback through the exchange skips (with a warning) students who did not submit through it, instead of
# stopping at the first of them as nbgrader's own release_feedback does (autograder/exchange.py).
c.ExchangeFactory.release_feedback = "autograder.exchange.ReleaseFeedback"

# A submission from a student who is not in the gradebook's roster (`nbgrader db student import students.csv`)
# is graded and the student added, as nbgrader's autograde does; set False to skip it (it is listed either way).
c.Autograde.create_student = True
