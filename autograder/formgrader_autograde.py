"""Formgrader's Autograde button, done by the course's sandboxed grader.

nbgrader's Formgrader autogrades a submission by executing the student's notebook in its own server's process tree,
as the account running Formgrader (on the class hub, the grader account, which owns source/, reference/ and the
gradebook) and outside any sandbox: one click by a TA runs a student's code as the grader. This Jupyter server
extension, enabled only in the class hub's Formgrader service (scripts/class_hub.py writes its
jupyter_server_config.json), makes Formgrader build its API object from `SandboxedAPI`, whose `autograde` runs
`python -m autograder.grade` on a copy of that one student's collected submission: the same grader, sandbox and
limits as `make grade`, writing the same gradebook and autograded/. nbgrader offers no setting for the command
behind the button, so the extension replaces the class name that Formgrader's handlers look up
(`nbgrader.server_extensions.formgrader.base.NbGraderAPI`); tests/test_class_hub.py clicks it.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nbgrader.apps.api import NbGraderAPI

TIMEOUT = 900   # seconds for one student's submission of one assignment


def grade_one(course: Path, assignment: str, student: str) -> dict:
    """Grade `student`'s collected `assignment` with `python -m autograder.grade` in the course; nbgrader's
    result shape: success, log, and error when it failed."""
    submitted = course / "submitted" / student / assignment
    if not submitted.is_dir():
        return {"success": False, "error": f"no collected submission of {assignment} by {student} "
                                           f"({submitted} is missing): collect first"}
    with tempfile.TemporaryDirectory(prefix="formgrader-") as scratch:
        one = Path(scratch) / "submitted"
        # a copy, links not followed: the grader gets the files the collect step took, nothing they point to
        shutil.copytree(submitted, one / student / assignment, symlinks=True)
        command = [sys.executable, "-m", "autograder.grade", str(one), "--course", str(course),
                   "--assignment", assignment, "--out", str(Path(scratch) / "graded")]
        try:
            done = subprocess.run(command, cwd=course, capture_output=True, text=True, timeout=TIMEOUT,
                                  preexec_fn=drop_ambient_capabilities)
        except subprocess.TimeoutExpired:
            return {"success": False, "error": f"the grader took over {TIMEOUT} s"}
    log = f"$ python -m autograder.grade ... --assignment {assignment} (student {student})\n{done.stdout}{done.stderr}"
    if done.returncode != 0:
        return {"success": False, "log": log, "error": f"the grader failed ({done.returncode}):\n{done.stderr[-3000:]}"}
    return {"success": True, "log": log}


def drop_ambient_capabilities() -> None:
    """Formgrader keeps one capability on the class hub (binding its port below 1024, ambient, so inherited by
    its children); the grader and the submissions it runs get none (prctl PR_CAP_AMBIENT_CLEAR_ALL)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(47, 4, 0, 0, 0)   # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL


class SandboxedAPI(NbGraderAPI):
    """nbgrader's Formgrader API with `autograde` done by the course's grader (see the module's docstring)."""

    def autograde(self, assignment_id, student_id, force=True, create=True):
        return grade_one(Path(self.coursedir.root), assignment_id, student_id)


def _jupyter_server_extension_points():
    return [{"module": "autograder.formgrader_autograde"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from nbgrader.server_extensions.formgrader import base
    base.NbGraderAPI = SandboxedAPI
    serverapp.log.info("Formgrader's Autograde runs `python -m autograder.grade` (autograder/formgrader_autograde.py)")
