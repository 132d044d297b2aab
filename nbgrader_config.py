"""nbgrader configuration of the course. The folder holding this file is the course root.

Every stock `nbgrader` command run from this folder (`nbgrader db student import`, `release_assignment`, `collect`,
`generate_feedback`, `export`, ...), Formgrader in `make lab`, and our grader (`make grade`, `python -m
autograder.grade`) read it: `source/`, `release/`, `submitted/`, `autograded/`, `feedback/`, the gradebook
`gradebook.db` and nbgrader's exchange `exchange/` all live here (the last unless COURSE_EXCHANGE names a shared one).

Beside it:
  nbgrader_config_exchange.py   the template of the students' side of the exchange on one machine: release_assignment
                                writes the class's copy into the exchange; each student copies that to
                                ~/.jupyter/nbgrader_config.py (it stands alone: it does not load this file)
  nbgrader_config_hub.py        the instructor's /etc/jupyter/nbgrader_config.py on a JupyterHub (shared exchange)
To put the gradebook on a database server (several grading machines: docs/clusters.md), `touch gradebook-on-server`
here (or set GRADEBOOK_ON_SERVER below) and the environment variable GRADEBOOK_URL (psycopg 3 is installed with the course; autograder/database.py checks
the database before each run).
"""
import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "cs336-primitives"
# The course root is wherever this file is, so a copy of the course (a clone, a scratch folder) is its own course.
COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = COURSE_ROOT


def planted(root: str) -> list[str]:
    """Python modules, packages and configuration files in the course folder that an account other than this file's
    owner put there. On the class hub this file and the course's code are root's and the grader account may add files
    here (its gradebook, locks, results); nbgrader puts the current folder first on Python's path, and reads
    nbgrader_config.json beside this file, so what it added would run in every nbgrader command, Formgrader included."""
    owner = os.stat(__file__).st_uid
    found = []
    for entry in os.scandir(root):
        package = entry.is_dir(follow_symlinks=False) and os.path.lexists(os.path.join(entry.path, "__init__.py"))
        if (entry.name.endswith((".py", ".pyc", ".so", ".pth", ".json")) or package) and \
                entry.stat(follow_symlinks=False).st_uid != owner and not entry.name.startswith("."):
            found.append(entry.name)
    return sorted(found)


if planted(COURSE_ROOT):
    raise SystemExit(f"error: {', '.join(planted(COURSE_ROOT))} in {COURSE_ROOT}: Python or configuration that "
                     "another account than this file's owner put in the course folder, where nbgrader would import or "
                     "read it. Nothing was run. Look at who made it (ls -l), remove it, and run the command again.")

# The gradebook. On one machine: gradebook.db in this folder (nbgrader's default). On a database server, for grading
# on many machines (docs/clusters.md, Slurm and Kubernetes): create the empty file `gradebook-on-server` in this
# folder once (`touch gradebook-on-server`: git-ignored, so the switch is never a change for git to take), or set
# GRADEBOOK_ON_SERVER = True below in a course of your own,
# and give every command (nbgrader's, the grader's, `make lab`'s Formgrader) the server's URL in the environment variable
# GRADEBOOK_URL, e.g. export GRADEBOOK_URL='postgresql+psycopg://grader:PASSWORD@db.example.org/cs336?connect_timeout=10'
# (deploy/k8s/grade-job.yaml sets it from a Secret; the password stays out of this file). A command run without it
# then stops here with this message, instead of making an empty gradebook.db here and reporting an empty class.
# GRADEBOOK_URL, when set, is used even with neither switch.
GRADEBOOK_ON_SERVER = False
ON_SERVER_FILE = os.path.join(COURSE_ROOT, "gradebook-on-server")
if os.environ.get("GRADEBOOK_URL"):
    c.CourseDirectory.db_url = os.environ["GRADEBOOK_URL"]
elif GRADEBOOK_ON_SERVER or os.path.exists(ON_SERVER_FILE):
    SWITCH = "GRADEBOOK_ON_SERVER = True" if GRADEBOOK_ON_SERVER else f"the file {ON_SERVER_FILE} is there"
    raise SystemExit(f"error: {os.path.abspath(__file__)} puts the gradebook on a database server "
                     f"({SWITCH}), but the environment variable GRADEBOOK_URL is not set. Set it to "
                     "the server's URL, e.g. export GRADEBOOK_URL='postgresql+psycopg://grader:PASSWORD@"
                     "db.example.org/cs336?connect_timeout=10', and run the command again; nothing was read or written.")

# nbgrader runs `alembic` (the gradebook's migrations) by name: put this environment's bin/ first on PATH, so that
# `.venv/bin/nbgrader db ...` and `.venv/bin/python -m nbgrader ...` work without activating the environment.
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])

# nbgrader's exchange: where `release_assignment`, `collect` and `release_feedback` (and Formgrader's Release,
# Collect and Release Feedback buttons under `make lab`) meet the students' `fetch_assignment`, `submit` and
# `fetch_feedback`. The one default, the instructor's and the students' alike: the course's own `exchange/` here
# (git-ignored), so the whole cycle works on one account; the students get it in the file that release_assignment
# writes for them (autograder/exchange.py). For students with accounts of their own on this machine, or a hub, set the
# environment variable COURSE_EXCHANGE to a folder every account reaches (e.g. /srv/nbgrader/exchange, created once
# with mode 1777), in the environment of every nbgrader command and of `make lab` (nbgrader_config_hub.py sets it on a
# hub), before the first release.
c.Exchange.root = os.environ.get("COURSE_EXCHANGE") or os.path.join(COURSE_ROOT, "exchange")
c.Exchange.path_includes_course = True
c.Exchange.timezone = "UTC"  # the time zone written to each submission's timestamp.txt

# What a student sees in place of each solution region.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError(\"replace this line with your code, then run the test cell below\")"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# A written answer's rubric sits in its question (a read-only cell) between "### BEGIN MARK SCHEME" and "### END MARK
# SCHEME": nbgrader's ClearMarkScheme removes it from the release, and autograded/ keeps the question as the source
# has it, so the person grading reads the rubric above the answer in Formgrader. nbgrader allows such a region only in
# "Manually graded task" cells unless told otherwise; a question is a read-only cell, so it is told.
c.ClearMarkScheme.enforce_metadata = False

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

# Feedback shows students their graded notebook, but not the source of the hidden tests, nor a written answer's rubric.
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, GetGrades  # noqa: E402

c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, ClearMarkScheme, CSSHTMLHeaderPreprocessor]
# Feedback shows the student's notebook: its markup sanitised as on Formgrader's pages (nbgrader's feedback template
# renders markdown cells as they are; autograder/staff_pages.py), so opening it runs none of it.
c.GenerateFeedback.exporter_class = "autograder.staff_pages.SanitisingExporter"

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
# Releasing writes, in the exchange's course folder, which class it belongs to (course.txt) and the students' file
# (nbgrader_config_exchange.py, naming this exchange); it refuses a folder another class of this course released into.
c.ExchangeFactory.release_assignment = "autograder.exchange.ReleaseAssignment"

# A submission from a student who is not in the gradebook's roster (`nbgrader db student import students.csv`)
# is graded and the student added, as nbgrader's autograde does; set False to skip it (it is listed either way).
c.Autograde.create_student = True
