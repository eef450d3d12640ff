"""One model process's actor (design §4: "model process pool → ≤ PREDICTION_PROCESSES actors, each owning an OS
process with RLIMIT_DATA"): a Trio actor that owns at most one model worker process (`model_worker`) and asks it
one job at a time, under the `model-processes` supervisor, which restarts it.

The process:
- starts when a job finds the actor without one (prediction-format §13: one starts when a job needs it), under
  `RLIMIT_DATA` at `PREDICTION_PROCESS_MEMORY` (`supervision.owned_process`'s launcher sets it before the worker
  imports anything), and keeps the models it loaded from job to job;
- ends without ending the actor when it has been idle for the pool's idle time (`EndIfIdle`).

A life ends with its process (the supervisor then restarts the actor, which starts a new process for its next
job):
- when a job ends the process: it died (killed, crashed: `failed_to_run`), answered `out_of_memory` (and exited),
  ran past the job's time (killed: `timed_out`), or its caller left while it ran (killed). The job's caller gets
  that `ModelJobFailed` (the asker of a crashing message gets the original error), the process is reaped before
  the life ends, and `replaced` counts it;
- when a process does not start (its command fails, or no ready line within `START_SECONDS`): its job gets
  `failed_to_run`;
- when the process dies between jobs: a watcher task of the life sees it end and fails the life
  (`ProcessExitedError`). A process found dead by a job before its watcher ran is replaced within the life.
A job the model refuses (`not_loadable`, `failed_to_run` answered by the worker) leaves the process serving.

Concurrency: everything runs on the Trio thread. The actor handles one message at a time; its life's nursery
holds the serving loop and one watcher per process it spawned (a watcher of a process the actor has let go of
returns quietly). `ModelProcessStatus` is written by the actor only and read by the pool and the metrics.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from auto_runtime.actors import Actor, ActorRef, LifeEnd
from auto_runtime.functions.prediction.model_job import (
    EndIfIdle,
    JobAnswered,
    JobRefused,
    ModelJobAbandoned,
    ModelJobFailed,
    ModelProcessAnswer,
    ModelProcessMessage,
    RunJob,
)
from auto_runtime.supervision import ChildContext, ChildSpec, Restart
from auto_runtime.supervision.owned_process import OwnedProcess
from auto_runtime.supervision.process_errors import ProcessChildError, ProcessExitedError, ProcessTimeoutError

log = logging.getLogger("auto_runtime.prediction.model_process_actor")

WORKER: Final = (sys.executable, "-m", "auto_runtime.functions.prediction.model_worker")
READY: Final = b"ready"
START_SECONDS: Final = 30.0
"""How long a new process may take to print its ready line (importing ONNX Runtime)."""


@dataclass(eq=False)
class ModelProcessStatus:
    """What the pool and the metrics read of one actor; `on_change` is called after each change."""

    name: str
    on_change: Callable[[], None]
    lives: int = 0
    """Lives started (1 for the first; each restart adds one)."""
    serving: bool = False
    """A life serves the actor's mailbox."""
    pid: int | None = None
    """The actor's live process."""
    in_job: bool = False
    """A job runs, from the actor taking it to its answer."""
    running_pid: int | None = None
    """The process the running job's line was sent to (tests: to end it mid-job)."""
    idle_since: float = field(default=0.0)
    """When the process last finished a job (or started)."""
    replaced: int = 0
    """Processes a job ended, each ending its actor's life."""


class ModelProcessActor(Actor[ModelProcessMessage, ModelProcessAnswer]):
    """One life of a model process's actor (see the module); `release` reaps its process when the life ends."""

    def __init__(self, status: ModelProcessStatus, memory_bytes: int, nursery: trio.Nursery) -> None:
        self._status = status
        self._memory_bytes = memory_bytes
        self._nursery = nursery
        self._process: OwnedProcess | None = None

    async def receive(self, message: ModelProcessMessage) -> ModelProcessAnswer:
        match message:
            case RunJob():
                return await self._run(message)
            case EndIfIdle():
                await self._end_if_idle(message)
                return None

    async def release(self) -> None:
        """The life ends: its process, if any, is killed and reaped (shielded)."""
        await self._let_go()

    async def _run(self, job: RunJob) -> JobAnswered | JobRefused | None:
        if job.abandoned.cancel_called:
            job.finished.set()
            return None  # its caller left while it waited in the mailbox
        job.started = True
        status = self._status
        status.in_job = True
        status.on_change()
        try:
            return await self._serve(job)
        finally:
            status.in_job = False
            status.running_pid = None
            status.idle_since = trio.current_time()
            status.on_change()
            job.finished.set()

    async def _serve(self, job: RunJob) -> JobAnswered | JobRefused | None:
        ended: Exception | None = None
        line: bytes | None = None
        with job.abandoned:
            process = await self._live_process()
            self._status.running_pid = process.pid
            self._status.on_change()
            try:
                line = await process.exchange(json.dumps(job.request).encode("utf-8"), timeout=job.timeout)
            except ProcessTimeoutError:
                ended = ModelJobFailed("timed_out", f"the model ran longer than {job.timeout:g} seconds")
            except ProcessChildError as error:
                ended = ModelJobFailed("failed_to_run", f"the model process ended during the job: {error}")
        if job.abandoned.cancelled_caught:
            if self._process is None:
                return None  # left while the process started, which was reaped: nothing ran
            ended = ModelJobAbandoned(f"{self._status.name}: the job's caller left while its model ran")
        if ended is None:
            assert line is not None
            answer = _answer(line)
            if not isinstance(answer, ModelJobFailed):
                return answer
            ended = answer
        self._status.replaced += 1
        await self._let_go()
        raise ended

    async def _live_process(self) -> OwnedProcess:
        """The actor's process, started now when it has none (or has one that died before its watcher ran)."""
        process = self._process
        if process is not None and process.returncode is None:
            return process
        if process is not None:
            await self._let_go()
        try:
            process = await OwnedProcess.spawn(
                self._status.name,
                WORKER,
                ready_line=READY,
                start_timeout=START_SECONDS,
                memory_limit=self._memory_bytes,
                stderr=subprocess.DEVNULL,
            )
        except (OSError, ProcessChildError) as error:
            raise ModelJobFailed("failed_to_run", f"the model process did not start: {error}") from error
        self._process = process
        self._status.pid = process.pid
        self._status.idle_since = trio.current_time()
        self._status.on_change()
        self._nursery.start_soon(self._watch, process)
        return process

    async def _end_if_idle(self, message: EndIfIdle) -> None:
        if self._process is not None and trio.current_time() - self._status.idle_since >= message.idle_seconds:
            log.info("model process %s: idle for %gs; ending it", self._status.name, message.idle_seconds)
            await self._let_go()

    async def _let_go(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await process.aclose()
            self._status.pid = None
            self._status.on_change()

    async def _watch(self, process: OwnedProcess) -> None:
        """Fails the life when `process` dies between jobs (a job sees a death during it for itself)."""
        returncode = await process.wait()
        if process is self._process and not self._status.in_job:
            raise ProcessExitedError(self._status.name, returncode)


def _answer(line: bytes) -> JobAnswered | JobRefused | ModelJobFailed:
    """The worker's answer; `ModelJobFailed` when it took its process with it (`out_of_memory`, or a line that
    is not an answer)."""
    try:
        reply: Any = json.loads(line)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        return ModelJobFailed("failed_to_run", "the model process answered something other than a JSON object")
    if reply.get("ok"):
        return JobAnswered(reply)
    because = str(reply.get("because", "failed_to_run"))
    detail = str(reply.get("detail", ""))
    if because == "out_of_memory":
        return ModelJobFailed(because, detail)
    return JobRefused(because, detail)


def model_process_spec(
    ref: ActorRef[ModelProcessMessage, ModelProcessAnswer],
    status: ModelProcessStatus,
    memory_bytes: int,
    *,
    restart: Restart,
    shutdown: float,
) -> ChildSpec:
    """The actor as a supervised child: each life serves `ref` with a new `ModelProcessActor` in a nursery of its
    own (the serving loop and the process watchers). A stop request ends the life after the job in flight (queued
    jobs wait in the mailbox for the next life); a crash or a cancellation ends it at once. Either way the
    process is reaped before the life ends."""

    async def life(ctx: ChildContext) -> None:
        ref.clear_stop_request()
        ctx.on_stop_requested(ref.request_stop)
        status.lives += 1

        def started() -> None:
            status.serving = True
            status.on_change()
            ctx.started()

        actor: ModelProcessActor | None = None
        end = LifeEnd.STOP_REQUESTED
        try:
            async with trio.open_nursery() as nursery:
                actor = ModelProcessActor(status, memory_bytes, nursery)
                end = await ref.serve_life(actor, started=started)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        finally:
            status.serving = False
            status.on_change()
            if actor is not None:
                await actor.release()
        if end is LifeEnd.CLOSED:
            ctx.finish()

    return ChildSpec(name=ref.name, start=life, restart=restart, shutdown=shutdown)
