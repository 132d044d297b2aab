"""Runs in the grader and in the instructor's tools: the common base of their own errors.

Each error's message says what happened and what to do; its class says whose fault it is and `exit_code` what the
command exits with (grade.py's docstring lists the codes). A command's `main` has one handler for all of them:

    except GraderError as error:
        print(f"error: {error.explain()}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None

Callers branch on the class, never on the message (as nbclient's CellTimeoutError and DeadKernelError).
"""
from __future__ import annotations

from typing import ClassVar


class GraderError(Exception):
    """An error of the grader or a tool that stops the command: the message says why and what to do."""
    exit_code: ClassVar[int] = 2
    context: ClassVar[str] = ""  # what the command says before the message (what the error meant for the run)

    def explain(self) -> str:
        """The line(s) a person reads after 'error: '."""
        return f"{self.context}{self}"


class Refused(GraderError, ValueError):
    """A command refused before it did anything: its arguments or folders do not make sense; the message says why."""
