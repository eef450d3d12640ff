"""The model processes (prediction-format §13): at most `PREDICTION_PROCESSES` OS processes running ONNX Runtime,
each owned by a `ProcessChild` actor under the pool's supervisor (`model-processes`, one_for_one).

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

Processes: a job takes an idle process, or starts one when none is idle; one idle for `IDLE_SECONDS` ends. A
process that dies during a job, runs past the job's time, or answers `out_of_memory` is ended (its child is
temporary, so its supervisor never restarts it and a model that fails repeatedly cannot exhaust the tree's
restart intensity); the pool then starts a replacement at once, so the pool is whole again before the next job.

Concurrency: the slots, the queue and the processes belong to the Trio thread; no lock guards the slots (each
change of them runs without a checkpoint).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from auto_runtime.metrics import watch_model_pool
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, FairQueue, JobOwner
from auto_runtime.supervision import ChildContext, ChildSpec, Restart, Supervisor
from auto_runtime.supervision.process_child import ProcessChild, ProcessChildError, ProcessTimeoutError

log = logging.getLogger("auto_runtime.prediction.model_pool")

QUESTION_WAIT: Final = 10.0
IDLE_SECONDS: Final = 60.0
REAP_EVERY: Final = 5.0
READY: Final = b"ready"


class ModelProcessBusy(Exception):
    """No model process was free within the job's wait (a question's 10 s; a check does not wait)."""


@dataclass(eq=False)
class _Waiter:
    """A job waiting for a slot: `granted` once one (and, for build work, a build slot) is held for it."""

    build: bool
    event: trio.Event = field(default_factory=trio.Event)
    granted: bool = False


class ModelJobFailed(Exception):
    """The job did not give outputs: `because` is `not_loadable`, `failed_to_run`, `out_of_memory` or
    `timed_out`."""

    def __init__(self, because: str, detail: str = "") -> None:
        super().__init__(f"{because}: {detail}")
        self.because = because
        self.detail = detail


@dataclass(eq=False)
class _Process:
    child: ProcessChild
    busy: bool = False
    idle_since: float = field(default=0.0)


class ModelPool:
    """See the module. Run `child_spec()` in the supervision tree before the first job."""

    def __init__(self, processes: int, builds_at_once: int, memory_mib: int) -> None:
        if not 1 <= builds_at_once < processes:
            raise ValueError("builds_at_once must be at least 1 and below processes")
        self.processes = processes
        self.builds_at_once = builds_at_once
        self.memory_mib = memory_mib
        self.supervisor = Supervisor("model-processes", [ChildSpec("model-process-keeper", self._keep)])
        self._free = processes
        """Slots no job holds."""
        self._builds_holding = 0
        """Slots build work holds (at most `builds_at_once`)."""
        self._queue: FairQueue[_Waiter] = FairQueue()
        self._live: list[_Process] = []
        self._numbers = itertools.count(1)
        self._starting = trio.Lock()
        self._job_sent = trio.Event()
        self.replaced = 0
        """How many processes were ended by a job and replaced (for logs, tests and metrics)."""
        watch_model_pool(self)

    def child_spec(self) -> ChildSpec:
        """The pool's supervisor: the keeper that ends idle processes, then each process's temporary child."""
        return self.supervisor.child_spec()

    async def _keep(self, context: ChildContext) -> None:
        context.started()
        while True:
            await trio.sleep(REAP_EVERY)
            await self._end_idle()

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def held(self) -> int:
        """Slots jobs hold (for logs and tests)."""
        return self.processes - self._free

    @property
    def waiting(self) -> int:
        """Jobs waiting for a slot (for logs and tests)."""
        return len(self._queue)

    @property
    def busy(self) -> int:
        return sum(process.busy for process in self._live)

    async def _start_process(self) -> _Process:
        name = f"model-process-{next(self._numbers)}"
        child = ProcessChild(
            name,
            [sys.executable, "-m", "auto_runtime.functions.prediction.model_worker", str(self.memory_mib)],
            ready_line=READY,
            stderr=subprocess.DEVNULL,
        )
        await self.supervisor.start_child(child.child_spec(restart=Restart.TEMPORARY, shutdown=2.0))
        process = _Process(child, idle_since=trio.current_time())
        self._live.append(process)
        return process

    async def _take(self) -> _Process:
        """An idle process, or a new one (the caller holds a slot, so one is idle or may start)."""
        async with self._starting:
            for process in list(self._live):
                if not process.busy and not process.child.ready:
                    self._live.remove(process)  # ended while idle; its temporary child is gone already
            for process in self._live:
                if not process.busy:
                    process.busy = True
                    return process
            with trio.CancelScope(shield=True):  # a job cancelled meanwhile leaves a process the pool counts
                process = await self._start_process()
            process.busy = True
            return process

    async def _end(self, process: _Process, *, replace: bool) -> None:
        if process in self._live:
            self._live.remove(process)
        process.child.kill()
        try:
            await self.supervisor.terminate_child(process.child.name)
        except Exception as error:  # the supervisor is stopping: nothing to end or replace
            log.info("model process %s not terminated: %r", process.child.name, error)
            return
        if replace:
            self.replaced += 1
            async with self._starting:
                if len(self._live) < self.processes:
                    replacement = await self._start_process()
                    log.info(
                        "model process %s ended by its job; %s replaces it", process.child.name, replacement.child.name
                    )

    async def _end_idle(self) -> None:
        now = trio.current_time()
        for process in list(self._live):
            if not process.busy and now - process.idle_since >= IDLE_SECONDS:
                await self._end(process, replace=False)

    async def _run(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One job on one process. Unless the process answered a job it survives, it is ended and replaced: a
        timeout, a death, `out_of_memory`, and a cancelled job too (the model may still be running)."""
        process = await self._take()
        keep = False
        try:
            sent, self._job_sent = self._job_sent, trio.Event()
            sent.set()
            try:
                line = await process.child.exchange(json.dumps(request).encode("utf-8"), timeout=timeout)
            except ProcessTimeoutError:
                raise ModelJobFailed("timed_out", f"the model ran longer than {timeout:g} seconds") from None
            except ProcessChildError as error:
                raise ModelJobFailed("failed_to_run", f"the model process ended during the job: {error}") from None
            reply: dict[str, Any] = json.loads(line)
            if not reply.get("ok"):
                because = str(reply.get("because", "failed_to_run"))
                keep = because != "out_of_memory"
                raise ModelJobFailed(because, str(reply.get("detail", "")))
            keep = True
            return reply
        finally:
            process.busy = False
            process.idle_since = trio.current_time()
            if not keep:
                with trio.CancelScope(shield=True):
                    await self._end(process, replace=True)

    def _may_take(self, build: bool) -> bool:
        return self._free > 0 and (not build or self._builds_holding < self.builds_at_once)

    def _hold(self, build: bool) -> None:
        self._free -= 1
        if build:
            self._builds_holding += 1

    def _release(self, build: bool) -> None:
        """A slot frees: it goes to the next waiter in the fair order that may take it, and so on while slots
        are free (a build slot freeing may let a build waiter behind free slots go)."""
        self._free += 1
        if build:
            self._builds_holding -= 1
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
        try:
            with trio.move_on_after(math.inf if wait is None else wait):
                await waiter.event.wait()
        except BaseException:
            self._take_back(waiter)
            raise
        if not waiter.granted:
            self._queue.remove(waiter)
            raise ModelProcessBusy

    def _take_back(self, waiter: _Waiter) -> None:
        if waiter.granted:
            self._release(waiter.build)
        else:
            self._queue.remove(waiter)

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
        """Waits until a job is on a process and answers that process's pid (tests: to end it mid-job)."""
        while True:
            for process in self._live:
                if process.busy and process.child.pid is not None:
                    return process.child.pid
            await self._job_sent.wait()

    async def probe(self) -> int:
        """The pid of the process a question would use now (tests: which process served)."""
        reply = await self.question({"op": "probe"}, 5.0, UNATTRIBUTED)
        return int(reply["pid"])
