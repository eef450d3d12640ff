"""Supervision: supervisors with Erlang/OTP strategies, restart intensity, back-off and process children."""

from auto_runtime.supervision.backoff import NO_BACKOFF, Backoff
from auto_runtime.supervision.child_spec import ChildContext, ChildSpec, Restart, StartFunction
from auto_runtime.supervision.intensity import RestartIntensity
from auto_runtime.supervision.process_child import (
    ProcessChild,
    ProcessChildError,
    ProcessExitedError,
    ProcessNotReadyError,
    ProcessNotRunningError,
    ProcessTimeoutError,
    ProcessUnhealthyError,
)
from auto_runtime.supervision.supervisor import (
    Strategy,
    Supervisor,
    SupervisorFailedError,
    SupervisorNotRunningError,
    describe_tree,
)

__all__ = [
    "NO_BACKOFF",
    "Backoff",
    "ChildContext",
    "ChildSpec",
    "ProcessChild",
    "ProcessChildError",
    "ProcessExitedError",
    "ProcessNotReadyError",
    "ProcessNotRunningError",
    "ProcessTimeoutError",
    "ProcessUnhealthyError",
    "Restart",
    "RestartIntensity",
    "StartFunction",
    "Strategy",
    "Supervisor",
    "SupervisorFailedError",
    "SupervisorNotRunningError",
    "describe_tree",
]
