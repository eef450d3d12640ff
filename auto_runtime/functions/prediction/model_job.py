"""What a model process's actor is asked and what it answers (prediction-format §13), and the errors a job's
caller sees.

A job's caller sees its outputs, or `ModelJobFailed` with the reason the callers have always seen; a job that
found no process `ModelProcessBusy`. An answer that leaves the process as it was (`JobAnswered`, `JobRefused`) is
a value; an end that takes the process with it is the actor's error, which ends its life (`model_process_actor`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio


class ModelProcessBusy(Exception):
    """No model process was free within the job's wait (a question's 10 s; a check does not wait)."""


class ModelJobFailed(Exception):
    """The job did not give outputs: `because` is `not_loadable`, `failed_to_run`, `out_of_memory` or
    `timed_out`."""

    def __init__(self, because: str, detail: str = "") -> None:
        super().__init__(f"{because}: {detail}")
        self.because = because
        self.detail = detail


class ModelJobAbandoned(Exception):
    """The job's caller left while the model ran: the process, in a state nobody knows, was ended. Nobody waits
    for this error; it ends the actor's life, so its supervisor restarts it."""


@dataclass(eq=False)
class RunJob:
    """One job: a JSON request for the model worker (`model_worker`) and the seconds its model may run.

    Its caller and its actor share three things, on the Trio thread: `abandoned` (a cancel scope the caller
    cancels when it leaves, which the actor runs the job in, so a job nobody waits for stops at once), `started`
    (set by the actor when it takes the job) and `finished` (set by the actor when it is done with the job, its
    process ended when the job ended it). A caller that leaves a started job waits for `finished`, so its share
    of the pool is not handed on while the process still runs the job."""

    request: dict[str, Any]
    timeout: float
    abandoned: trio.CancelScope = field(default_factory=trio.CancelScope)
    started: bool = False
    finished: trio.Event = field(default_factory=trio.Event)

    def abandon(self) -> None:
        self.abandoned.cancel()


@dataclass(frozen=True)
class EndIfIdle:
    """End the actor's process if it has had no job for `idle_seconds` (the actor keeps serving without one)."""

    idle_seconds: float


ModelProcessMessage = RunJob | EndIfIdle


@dataclass(frozen=True)
class JobAnswered:
    """The model's outputs (`{"ok": true, "outputs": ...}`, or a probe's pid)."""

    reply: dict[str, Any]


@dataclass(frozen=True)
class JobRefused:
    """The model could not be loaded (`not_loadable`) or run (`failed_to_run`); the process serves on."""

    because: str
    detail: str


ModelProcessAnswer = JobAnswered | JobRefused | None
"""None: the message was an `EndIfIdle`, or a job whose caller left before the actor took it."""
