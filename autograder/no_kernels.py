"""Runs in Formgrader's Jupyter server on the class hub (as the grader account): a kernel manager that starts no
kernel, so that a staff member who opens a student's notebook there cannot run the student's code as the grader.
Formgrader needs no kernel (its Autograde runs the sandboxed grader: autograder/formgrader_autograde.py); run notebooks
in your own account. jupyterhub/jupyterhub_config.py names it with --ServerApp.kernel_manager_class."""
from __future__ import annotations

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web

REFUSAL = ("Formgrader's JupyterLab runs no kernel: a submitted notebook run here would run a student's code as the "
           "grader. Grade with Autograde (the sandboxed grader), and run notebooks in your own account.")


class NoKernels(AsyncMappingKernelManager):
    """AsyncMappingKernelManager that refuses every kernel start with 403."""

    # async, as AsyncMappingKernelManager's own; jupyter_client types MultiKernelManager's (its base) as sync
    async def start_kernel(self, *args, **kwargs):  # type: ignore[override]
        raise web.HTTPError(403, REFUSAL)
