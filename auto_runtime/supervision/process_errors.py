"""The errors an owned OS process (`owned_process`) or a supervised one (`process_child`) reports."""

from __future__ import annotations


class ProcessChildError(Exception):
    """Base of the errors a process reports."""


class ProcessExitedError(ProcessChildError):
    """The process ended by itself with a non-zero status (or a signal)."""

    def __init__(self, name: str, returncode: int) -> None:
        super().__init__(f"process {name!r} exited with status {returncode}")
        self.returncode = returncode


class ProcessNotReadyError(ProcessChildError):
    """The process did not print its ready line within the start timeout, or printed something else."""


class ProcessUnhealthyError(ProcessChildError):
    """The health check failed or timed out; the process was killed."""


class ProcessNotRunningError(ProcessChildError):
    """No live process to talk to (not started yet, restarting, or its output ended)."""


class ProcessTimeoutError(ProcessChildError):
    """An exchange took longer than its timeout; the process was killed."""
