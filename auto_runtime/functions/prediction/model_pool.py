"""The model processes (prediction-format §13): at most `PREDICTION_PROCESSES` OS processes running ONNX Runtime,
each owned by an actor under the pool's supervisor (`model-processes`, one_for_one).

Shares and waits (§13):
- Every job holds one slot of `processes` for its whole run, so no more processes run than the setting.
- Build work (checks, scoring, shadow work) also holds one of `builds_at_once` slots, so at least
  `processes − builds_at_once` slots stay free for questions.
- A job that finds no slot it may take waits in the pool's `FairQueue` (the sandbox's, `sandbox.fair_queue`),
  under the `JobOwner` (org, playbook) it is for: a slot that frees goes to the waiter of the org served least
  recently, then of its playbook served least recently, first come first served within a playbook; build work
  waits while build work holds its share, and the questions behind it may go first. So one org's slow questions
  delay another org's by at most the time until one of the busy processes frees. A slot is handed to its waiter
  as it frees, never left for arrivals to race for.
- A question waits up to `QUESTION_WAIT` seconds for its slot, then is `ModelProcessBusy`; its model then has
  its own time (`timed_out` past it), the wait not counted. A check never waits (`ModelProcessBusy` at once).
  Scoring and shadow work wait as long as it takes.

Actors (design §4): the pool's supervisor (`model-processes`, one_for_one) has `processes` children, one actor
per model process (`model_process_actor`: it owns at most one OS process and asks it one job at a time), and a
keeper that tells an actor whose process has been idle for `idle_seconds` (`IDLE_SECONDS`) to end it. How the
supervisor keeps them (restart type, intensity, back-off, stop budget) is data: `model_supervision`. A job
holding a slot goes to an actor no other job holds: first one that serves and has a live process (it keeps the
models it loaded), then one that serves, then one its supervisor is restarting (the job waits in its mailbox for
the new life). A job that ends its process ends its actor's life with the error its caller gets; the supervisor
restarts the actor, and the next job it takes starts a new process.

A caller that leaves (cancelled) abandons its job: the actor kills the process the job runs on, and the caller
waits for that, shielded, before its slot is handed on.

Concurrency: the slots, the queue and the actors' statuses belong to the Trio thread; no lock guards the slots
(each change of them runs without a checkpoint).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from auto_runtime.actors import ActorRef, ActorStoppedError, MailboxFull
from auto_runtime.functions.prediction.model_job import (
    EndIfIdle,
    JobAnswered,
    JobRefused,
    ModelJobFailed,
    ModelProcessAnswer,
    ModelProcessBusy,
    ModelProcessMessage,
    RunJob,
)
from auto_runtime.functions.prediction.model_process_actor import ModelProcessStatus, model_process_spec
from auto_runtime.functions.prediction.model_supervision import ModelProcessesSupervision
from auto_runtime.metrics import watch_model_pool
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, FairQueue, JobOwner
from auto_runtime.supervision import ChildContext, ChildSpec, Supervisor

__all__ = ["IDLE_SECONDS", "QUESTION_WAIT", "ModelJobFailed", "ModelPool", "ModelProcessBusy"]

QUESTION_WAIT: Final = 10.0
IDLE_SECONDS: Final = 60.0
REAP_EVERY: Final = 5.0
MAILBOX: Final = 64
"""An actor's mailbox: one job at a time, the keeper's tells, and jobs left by callers while it restarted."""


@dataclass(eq=False)
class _Waiter:
    """A job waiting for a slot: `granted` once one (and, for build work, a build slot) is held for it."""

    build: bool
    event: trio.Event = field(default_factory=trio.Event)
    granted: bool = False


@dataclass(eq=False)
class _Member:
    """One actor as the pool sees it: its address, its status, and whether a job of the pool holds it."""

    ref: ActorRef[ModelProcessMessage, ModelProcessAnswer]
    status: ModelProcessStatus
    held: bool = False


class ModelPool:
    """See the module. Run `child_spec()` in the supervision tree before the first job."""

    def __init__(
        self,
        processes: int,
        builds_at_once: int,
        memory_mib: int,
        supervision: ModelProcessesSupervision | None = None,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        if not 1 <= builds_at_once < processes:
            raise ValueError("builds_at_once must be at least 1 and below processes")
        self.processes = processes
        self.builds_at_once = builds_at_once
        self.memory_mib = memory_mib
        self.idle_seconds = idle_seconds
        if supervision is None:
            supervision = ModelProcessesSupervision.for_processes(processes)
        self.supervision = supervision
        self._members = [self._member(number) for number in range(1, processes + 1)]
        self.supervisor = Supervisor(
            "model-processes",
            [
                ChildSpec("model-process-keeper", self._keep),
                *(
                    model_process_spec(
                        member.ref,
                        member.status,
                        memory_mib * 1024 * 1024,
                        restart=self.supervision.restart,
                        shutdown=self.supervision.shutdown,
                    )
                    for member in self._members
                ),
            ],
            intensity=self.supervision.intensity,
            backoff=self.supervision.backoff,
        )
        self._free = processes
        """Slots no job holds."""
        self._builds_holding = 0
        """Slots build work holds (at most `builds_at_once`)."""
        self._queue: FairQueue[_Waiter] = FairQueue()
        self._change = trio.Event()
        watch_model_pool(self)

    def _member(self, number: int) -> _Member:
        name = f"model-process-{number}"
        return _Member(ActorRef(name, MAILBOX), ModelProcessStatus(name, self._changed))

    def child_spec(self) -> ChildSpec:
        """The pool's supervisor: the keeper that ends idle processes, then one actor per model process."""
        return self.supervisor.child_spec()

    async def _keep(self, context: ChildContext) -> None:
        context.started()
        while True:
            await trio.sleep(min(REAP_EVERY, self.idle_seconds))
            now = trio.current_time()
            for member in self._members:
                status = member.status
                idle = status.serving and status.pid is not None and not status.in_job and not member.held
                if idle and now - status.idle_since >= self.idle_seconds:
                    with contextlib.suppress(MailboxFull, ActorStoppedError):  # messages wait for it: not idle
                        member.ref.tell(EndIfIdle(self.idle_seconds))

    @property
    def statuses(self) -> tuple[ModelProcessStatus, ...]:
        """Each actor's status, in order (for logs and tests)."""
        return tuple(member.status for member in self._members)

    @property
    def live(self) -> int:
        """Model processes alive."""
        return sum(member.status.pid is not None for member in self._members)

    @property
    def busy(self) -> int:
        """Model processes running a job."""
        return sum(member.status.in_job for member in self._members)

    @property
    def replaced(self) -> int:
        """Processes ended by their job, each replaced by its actor's restart (for logs, tests and metrics)."""
        return sum(member.status.replaced for member in self._members)

    @property
    def held(self) -> int:
        """Slots jobs hold (for logs and tests)."""
        return self.processes - self._free

    @property
    def waiting(self) -> int:
        """Jobs waiting for a slot (for logs and tests)."""
        return len(self._queue)

    def _changed(self) -> None:
        changed, self._change = self._change, trio.Event()
        changed.set()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Waits until `condition`, read each time the slots, the queue or an actor's status change, holds."""
        while not condition():
            await self._change.wait()

    def _choose(self) -> _Member:
        """The actor for a job that holds a slot (so one is free): see the module for the order."""
        free = [member for member in self._members if not member.held]
        return min(free, key=lambda member: (not member.status.serving, member.status.pid is None))

    async def _run(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One job on one actor: its outputs, or `ModelJobFailed` (the actor's, or `failed_to_run` for an actor
        stopped during the job)."""
        member = self._choose()
        member.held = True
        job = RunJob(request, timeout)
        try:
            answer = await member.ref.ask(job, timeout=None)
        except MailboxFull:
            raise ModelProcessBusy from None
        except ActorStoppedError as error:
            raise ModelJobFailed("failed_to_run", f"the model process was stopped during the job: {error}") from None
        except Exception:
            raise
        except BaseException:
            job.abandon()
            if job.started:
                with trio.CancelScope(shield=True):
                    await job.finished.wait()
            raise
        finally:
            member.held = False
        if isinstance(answer, JobRefused):
            raise ModelJobFailed(answer.because, answer.detail)
        assert isinstance(answer, JobAnswered)
        return answer.reply

    def _may_take(self, build: bool) -> bool:
        return self._free > 0 and (not build or self._builds_holding < self.builds_at_once)

    def _hold(self, build: bool) -> None:
        self._free -= 1
        if build:
            self._builds_holding += 1
        self._changed()

    def _release(self, build: bool) -> None:
        """A slot frees: it goes to the next waiter in the fair order that may take it, and so on while slots
        are free (a build slot freeing may let a build waiter behind free slots go)."""
        self._free += 1
        if build:
            self._builds_holding -= 1
        self._changed()
        while self._free > 0:
            waiter = self._queue.pop_next(lambda waiting: self._may_take(waiting.build))
            if waiter is None:
                return
            self._hold(waiter.build)
            waiter.granted = True
            waiter.event.set()

    async def _acquire(self, owner: JobOwner, build: bool, wait: float | None) -> None:
        """Hold a slot for `owner`'s job: at once when one is free (no waiter may take it then: every release
        hands slots to the waiters first), else after waiting in the fair queue; `wait` seconds at most (None:
        as long as it takes, 0: not at all), then `ModelProcessBusy`. A waiter handed a slot as its wait ended
        takes it; one cancelled after its slot was handed over gives it back to the next."""
        if self._may_take(build):
            self._hold(build)
            self._queue.served(owner)
            return
        if wait == 0:
            raise ModelProcessBusy
        waiter = _Waiter(build)
        self._queue.add(waiter, owner)
        self._changed()
        try:
            with trio.move_on_after(math.inf if wait is None else wait):
                await waiter.event.wait()
        except BaseException:
            self._take_back(waiter)
            raise
        if not waiter.granted:
            self._queue.remove(waiter)
            self._changed()
            raise ModelProcessBusy

    def _take_back(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self._release(waiter.build)
        else:
            self._queue.remove(waiter)
            self._changed()

    @asynccontextmanager
    async def _slot(self, owner: JobOwner, build: bool, wait: float | None) -> AsyncIterator[None]:
        await self._acquire(owner, build, wait)
        try:
            yield
        finally:
            self._release(build)

    async def question(self, request: dict[str, Any], timeout: float, owner: JobOwner) -> dict[str, Any]:
        """A question's job: waits its turn for a slot up to `QUESTION_WAIT` seconds (`ModelProcessBusy`), then
        its model has `timeout` seconds (`ModelJobFailed`, `timed_out`)."""
        async with self._slot(owner, build=False, wait=QUESTION_WAIT):
            return await self._run(request, timeout)

    async def check(self, request: dict[str, Any], timeout: float, owner: JobOwner) -> dict[str, Any]:
        """A candidate check's job: never waits for a process (`ModelProcessBusy`)."""
        async with self._slot(owner, build=True, wait=0):
            return await self._run(request, timeout)

    async def build_work(self, request: dict[str, Any], timeout: float, owner: JobOwner) -> dict[str, Any]:
        """Scoring or shadow work: waits its turn for a build slot and a process."""
        async with self._slot(owner, build=True, wait=None):
            return await self._run(request, timeout)

    async def running_job(self) -> int:
        """Waits until a job's line is on a process and answers that process's pid (tests: to end it mid-job)."""
        await self.wait_until(lambda: any(status.running_pid is not None for status in self.statuses))
        return next(status.running_pid for status in self.statuses if status.running_pid is not None)

    async def probe(self) -> int:
        """The pid of the process a question would use now (tests: which process served)."""
        reply = await self.question({"op": "probe"}, 5.0, UNATTRIBUTED)
        return int(reply["pid"])
