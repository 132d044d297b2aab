"""nbgrader configuration of the grader account on the class hub (scripts/class_hub.py copies it into
<prefix>/grader-config/, the JUPYTER_CONFIG_PATH of the grader's shell and of Formgrader; the course's own
nbgrader_config.py is read after it and sets everything else).

`nbgrader collect` here takes a submission only from the unix account that made it, copies no link or special file,
enforces the size limits on this side and skips (with a line) what it cannot take (autograder/exchange/collect.py). It
looks in the exchange's inbound folder and in each student's own inbound folder (CLASS_INBOXES, set by the hub):
a student's submissions land on their own disk (scripts/student_jail.py)."""
import os

c = get_config()  # noqa: F821

c.ExchangeFactory.collect = "autograder.exchange.OwnedCollect"
c.OwnedCollect.inboxes = os.environ.get("CLASS_INBOXES", "")
c.CourseDirectory.max_file_size = 20_000     # kB per file, as the students' side
c.CourseDirectory.max_dir_size = 100_000     # kB per submission
