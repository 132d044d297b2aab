"""Kernel managers for the staff servers: no student's code runs in a kernel of a staff account.

- `NoKernels`: the class hub's Formgrader (as the grader account) starts no kernel at all, so a staff member who
  opens a student's notebook there cannot run the student's code as the grader. Formgrader needs no kernel (its
  Autograde runs the sandboxed grader: autograder/formgrader_autograde.py); run notebooks in your own account.
  jupyterhub/jupyterhub_config.py names it with --ServerApp.kernel_manager_class.
- `OwnWorkKernels`: `make lab` (the instructor's own JupyterLab, as the instructor) starts kernels for the
  instructor's own notebooks and refuses one for a notebook in a folder of student work (submitted/, autograded/,
  feedback/, ...: autograder/routes.py's STUDENT_WORK), so opening a submission and pressing Run, or a student's
  link that opens one, runs nothing of hers as the instructor. The Makefile's `lab` names it.
"""
from __future__ import annotations

import os

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web

from autograder.routes import STUDENT_WORK, names_student_work

REFUSAL = ("Formgrader's JupyterLab runs no kernel: a submitted notebook run here would run a student's code as the "
           "grader. Grade with Autograde (the sandboxed grader), and run notebooks in your own account.")
STUDENT_WORK_REFUSAL = ("This notebook is in a folder of student work ({folders}): a kernel here would run a "
                        "student's code as you, outside the grader's sandbox. Grade with `make grade` or Formgrader's "
                        "Autograde; to run a submission by hand, copy it out of the course first.")


class NoKernels(AsyncMappingKernelManager):
    """AsyncMappingKernelManager that refuses every kernel start with 403."""

    # async, as AsyncMappingKernelManager's own; jupyter_client types MultiKernelManager's (its base) as sync
    async def start_kernel(self, *args, **kwargs):  # type: ignore[override]
        raise web.HTTPError(403, REFUSAL)


class OwnWorkKernels(AsyncMappingKernelManager):
    """AsyncMappingKernelManager that refuses (403) a kernel whose folder (the notebook's) is student work."""

    async def start_kernel(self, *args, **kwargs):  # type: ignore[override]
        path = kwargs.get("path") or ""
        if path and names_student_work(os.path.relpath(os.path.join(self.root_dir, path), self.root_dir)):
            raise web.HTTPError(403, STUDENT_WORK_REFUSAL.format(folders=", ".join(STUDENT_WORK)))
        return await super().start_kernel(*args, **kwargs)
