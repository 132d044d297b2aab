"""nbgrader configuration of the course.

Instructors run nbgrader through `make release` and `make grade` (see README.md), which load this file and
point nbgrader at a course folder of their own. Running the `nbgrader` command by hand from this folder
(`cd autograder && nbgrader ...`) uses the repository itself as the course root.
"""
import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "cs336-primitives"
c.CourseDirectory.root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
