"""A pool of worker thread actors for blocking jobs, under a supervisor of its own, awaited from Trio.

The pool is a subtree of the supervision tree: `child_spec()` is a supervisor (one_for_one) whose children
are the workers, `worker-1` … `worker-N`, each a transient child running one pykka thread actor
(`ThreadActorRef`, with the big stack sandbox runs need). A pool that no tree runs (the save-time checkers,
tests) runs the same subtree as a system task of the Trio run that first uses it.

Concurrency rules:
- The pool's state (its workers, the idle ones, folds running, the queue of waiters) belongs to the Trio
  thread: workers report back through the thread actor's bridge, on the Trio thread, so no lock guards it.
  The one lock a worker thread shares is the `EngineGate` (`worker_thread`), which `close` uses to wait for
  the jobs that run.
- A caller takes an idle worker or makes a new one while fewer than `size` live; otherwise it waits in the
  pool's `FairQueue`, under the `JobOwner` (org, playbook) it names: fair across orgs, then across an org's
  playbooks, FIFO inside a playbook (see `fair_queue`). A worker that frees is handed to the next waiter in
  that order that may take it, never left for arrivals to race for. So one org's long runs delay another
  org's run by at most the time until one of the busy workers frees. A waiter waits at most `wait_seconds`
  (never past its deadline), then raises `NoWorkerFree`; one handed a worker as its wait ended takes it.
- A waiter that is cancelled leaves the queue; when a worker was handed to it meanwhile, that worker goes to
  the next waiter (or back to the idle workers).
- Jobs of kind `"fold"` use at most half the workers (at least one): a fold waits, keeping its place, while
  that many run, and the waiters behind it may go first.
- Accounting: the pool counts the workers each owner holds (`held_by`, by kind), changed only where a worker
  is handed to a job and where its job ends, and writes one `debug` line each time a worker is handed (the
  kind, the owner, what the owner holds then, the folds running and their limit): what an operator, a
  benchmark or a test reads to see that one playbook's folds never held more than their share.
- A job is asked of its worker's thread actor by a task of the pool (not the caller's), so the pool learns
  when it ends even after its caller gave up; the caller waits for that task's answer. No thread and no
  `trio.to_thread` per job.
- Retirement: a worker ends after a job that asks it to (time, memory, cancellation, breakage; a job's
  exception under `JobErrors.RETIRE`), after `max_runs` jobs, and after `idle_seconds` without one (never,
  when `idle_seconds` is None). Its thread actor's address is closed, its life ends normally, and its
  supervisor forgets it (a transient child). After a job that ended its worker, the pool starts a fresh
  worker at once (handed to the next waiter), so the pool keeps its size while there is work. A worker that
  ended idle is replaced only when a job needs it: an idle pool gives its threads back, and a new worker is
  ready to take a job as soon as it exists (the job waits in its mailbox while its thread starts).
- A crash (a job's exception under `JobErrors.CRASH`, or any failure of the worker's thread actor) reaches
  the caller as the original exception; the worker's supervisor restarts its thread actor (same worker,
  fresh thread) after its back-off, and the worker takes jobs again once the new life runs. More crashes
  than the pool's restart intensity allows make the pool's supervisor give up: its workers stop (each
  finishing its job) and the failure goes to the pool's parent (in the server, the root, which restarts the
  pool). Jobs the stopped pool never ran fail with `RuntimeError`.
- Cancelling the caller cancels the job's `RunControl`, which stops the guest at the next tick; the worker
  then ends, since a cancelled job asks it to.
- Closing the pool wakes every waiter, which raises `RuntimeError`; `close` returns once no job runs.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, Literal, TypeVar

import trio
import trio.lowlevel

from auto_runtime.actors import ThreadActorRef
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, FairQueue, JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.worker_thread import (
    POOL_CLOSED,
    EngineGate,
    Job,
    JobDone,
    JobErrors,
    JobMessage,
    WorkerThread,
)
from auto_runtime.supervision import (
    Backoff,
    ChildContext,
    ChildSpec,
    Restart,
    RestartIntensity,
    Supervisor,
    SupervisorFailedError,
    SupervisorNotRunningError,
)

log = logging.getLogger("auto_runtime.sandbox.workers")

T = TypeVar("T")
Kind = Literal["run", "fold"]

WORKER_STACK_BYTES = 64 * 1024 * 1024
WORKER_RESTARTS = RestartIntensity(max_restarts=3, period=5.0)
"""At most three crash restarts of the pool's workers in five seconds; the fourth makes the pool give up."""
WORKER_SHUTDOWN_SECONDS = 30.0
"""How long a stopping worker may finish its job (a job is bounded by its deadline) before it is abandoned."""

ENDINGS_KEPT = 100
"""How many retirements `WorkerPool.ended` remembers (it is for tests and operators, and must stay bounded)."""

__all__ = [
    "WORKER_RESTARTS",
    "WORKER_STACK_BYTES",
    "Job",
    "JobErrors",
    "Kind",
    "NoWorkerFree",
    "WorkerPool",
]


class NoWorkerFree(Exception):
    """No worker became free within the wait."""

    def __init__(self, workers: int) -> None:
        super().__init__(f"No worker became free; the pool runs {workers} at once")
        self.workers = workers


@dataclass(eq=False)
class _Worker:
    """One worker as the Trio side sees it. `down`: its thread actor's life ended without being asked to (a
    crash, or its supervisor stopped it) and it takes no job until a new life runs. `retired`: it ended for
    good, its address is closed."""

    number: int
    ref: ThreadActorRef[JobMessage[Any], JobDone[Any]]
    runs: int = 0
    busy: bool = False
    down: bool = False
    retired: bool = False
    idle_since: float = 0.0
    owner: JobOwner = UNATTRIBUTED
    """Whom the job it runs is for, while it is busy."""


@dataclass(eq=False)
class _Waiter:
    """A caller waiting for a worker: `worker` is set when one is handed to it."""

    kind: Kind
    owner: JobOwner
    event: trio.Event = field(default_factory=trio.Event)
    worker: _Worker | None = None
    closed: bool = False


@dataclass(eq=False)
class _Answer(Generic[T]):
    """What the pool's task that asked a worker hands to the caller waiting for it."""

    event: trio.Event = field(default_factory=trio.Event)
    value: T | None = None
    error: BaseException | None = None

    def give(self, value: T | None, error: BaseException | None) -> None:
        self.value, self.error = value, error
        self.event.set()


class WorkerPool:
    """`size` worker thread actors for blocking jobs, with the rules of the module docstring."""

    def __init__(
        self,
        size: int,
        *,
        name: str = "sandbox",
        max_runs: int = 1000,
        idle_seconds: float | None = 60.0,
        wait_seconds: float = 10.0,
        stack_bytes: int = WORKER_STACK_BYTES,
        job_errors: JobErrors = JobErrors.RETIRE,
        intensity: RestartIntensity = WORKER_RESTARTS,
        backoff: Backoff | None = None,
        shutdown_seconds: float = WORKER_SHUTDOWN_SECONDS,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.size = size
        self.name = name
        self.max_runs = max_runs
        self.idle_seconds = idle_seconds
        self.wait_seconds = wait_seconds
        self.stack_bytes = stack_bytes
        self.job_errors = job_errors
        self.shutdown_seconds = shutdown_seconds
        self.fold_limit = max(1, size // 2)
        self.supervisor = Supervisor(name, intensity=intensity, backoff=backoff)
        self._gate = EngineGate()
        self._workers: set[_Worker] = set()
        self._idle: list[_Worker] = []
        self._unborn: deque[_Worker] = deque()
        self._busy_folds = 0
        self._held: dict[tuple[JobOwner, Kind], int] = {}
        """Workers held, by owner and kind; an owner holding none has no entry (bounded by `size`)."""
        self._queue: FairQueue[_Waiter] = FairQueue()
        self._numbers = itertools.count(1)
        self._closed = False
        self._in_tree = False
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._running = trio.Event()
        self._births = trio.Event()
        self._reaper: trio.CancelScope | None = None
        self._changes = trio.lowlevel.ParkingLot()
        self.started = 0
        """Workers the pool made (a restart after a crash is the same worker)."""
        self.ended: list[str] = []
        """Why each retired worker ended, the last `ENDINGS_KEPT` of them: `job`, `max_runs` or `idle`."""
        self.crashed = 0
        """Worker lives that crashed (each restarted by the supervisor, unless it gave up)."""

    def held_by(self, owner: JobOwner, kind: Kind | None = None) -> int:
        """How many workers `owner`'s jobs (of `kind`, or of any kind) hold now."""
        kinds: tuple[Kind, ...] = ("run", "fold") if kind is None else (kind,)
        return sum(self._held.get((owner, k), 0) for k in kinds)

    @property
    def live(self) -> int:
        """Workers not retired: busy, idle, starting, or waiting for their supervisor to restart them."""
        return len(self._workers)

    def child_spec(self, *, restart: Restart = Restart.PERMANENT, shutdown: float = math.inf) -> ChildSpec:
        """The pool as a child of a supervision tree: its supervisor, whose children are the workers. It reports
        started once every worker runs; a restart (after the pool gave up) starts the workers again."""
        self._in_tree = True
        return ChildSpec(
            name=self.name, start=self._serve_in_tree, restart=restart, shutdown=shutdown, subtree=self.supervisor.tree
        )

    def prestart(self) -> None:
        """Make every worker now, idle (each takes a job at once; it runs once its thread has started). A pool
        that no tree runs starts running in the current Trio run."""
        self._check_open()
        self._run_alone_unless_in_tree()
        self._fill()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until `condition()` holds, checked again whenever the pool's state changes (a worker made,
        retired, started, crashed or freed)."""
        while not condition():
            await self._changes.park()

    async def submit(self, job: Job[T], control: RunControl, kind: Kind = "run", owner: JobOwner = UNATTRIBUTED) -> T:
        """Run `job` for `owner` on a worker, waiting for one at most `wait_seconds` and never past the deadline.
        Any blocking job may run here (sandbox runs, checks, a workflow input): the pool bounds them together,
        and serves the waiting ones fairly by `owner`."""
        wait_until = min(time.monotonic() + self.wait_seconds, control.deadline)
        self._run_alone_unless_in_tree()
        worker = await self._acquire(kind, owner, wait_until)
        answer: _Answer[T] = _Answer()
        try:
            nursery = await self._running_nursery(wait_until)
        except BaseException:
            self._give_back(worker, kind)
            raise
        nursery.start_soon(self._ask, worker, JobMessage(job, control), kind, answer)
        try:
            await answer.event.wait()
        except trio.Cancelled:
            control.cancel()
            raise
        if answer.error is not None:
            raise answer.error
        return answer.value  # type: ignore[return-value]

    async def _running_nursery(self, wait_until: float) -> trio.Nursery:
        """The running pool's nursery. A pool in a tree that does not run (its supervisor gave up and the tree
        has not restarted it yet) is waited for until `wait_until`, then `NoWorkerFree`; a pool that runs alone
        is about to run (its system task starts at once)."""
        if not self._running.is_set():
            if self._in_tree:
                with trio.move_on_after(max(0.0, wait_until - time.monotonic())):
                    await self._running.wait()
                if not self._running.is_set():
                    raise NoWorkerFree(self.size)
            else:
                await self._running.wait()
        if self._nursery is None or self._closed:
            raise RuntimeError(POOL_CLOSED)
        return self._nursery

    def close(self, timeout: float = 30.0) -> None:
        """Stop the pool: wake every waiter, ask every worker to end once its job is done, and wait until no
        job runs, so no store outlives the engine (Wasmtime aborts the process at exit when one does). A job
        is bounded by its deadline, so the wait is too; `timeout` bounds it all the same. Callable from any
        thread, in a Trio run or after it."""
        token = self._token
        if token is not None:
            if _current_token() is token:
                self._close_here()
            else:
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(self._close_here)
        if not self._gate.close(timeout):
            log.warning("pool %s: a job still runs after %gs of closing", self.name, timeout)

    # The pool's life, on the Trio thread.

    def _run_alone_unless_in_tree(self) -> None:
        if self._in_tree or self._token is not None or self._closed:
            return
        self._token = trio.lowlevel.current_trio_token()
        trio.lowlevel.spawn_system_task(self._run_alone, name=f"{self.name} pool")

    async def _run_alone(self) -> None:
        try:
            await self._run(lambda: None)
        except SupervisorFailedError as failure:
            log.error("pool %s gave up, so it closes: %s", self.name, failure)
        except Exception:
            log.exception("pool %s failed, so it closes", self.name)
        finally:
            self._close_here()

    async def _serve_in_tree(self, context: ChildContext) -> None:
        self._check_open()
        self._fill()
        context.on_stop_requested(self._close_here)
        await self._run(context.started)

    async def _run(self, started: Callable[[], None]) -> None:
        """Run the supervisor and the pool's own tasks (making workers its children, retiring idle ones) until
        the supervisor ends; raises `SupervisorFailedError` when it gave up."""
        if self._nursery is not None:
            raise RuntimeError(f"pool {self.name!r} is already running")
        self._token = trio.lowlevel.current_trio_token()
        failures: list[SupervisorFailedError] = []
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self._supervise, failures)
                self._running.set()
                await self._start_unborn()
                nursery.start_soon(self._start_unborn_forever)
                if self.idle_seconds is not None:
                    nursery.start_soon(self._retire_idle, self.idle_seconds)
                started()
        finally:
            self._nursery = None
            self._running = trio.Event()
            self._changed()
        if failures:
            raise failures[0]

    async def _supervise(self, failures: list[SupervisorFailedError], task_status: trio.TaskStatus[None]) -> None:
        """The pool's supervisor; the pool's own tasks end with it, and its failure is kept for `_run`."""
        try:
            await self.supervisor.run(task_status=task_status)
        except SupervisorFailedError as failure:
            failures.append(failure)
        finally:
            if self._nursery is not None:
                self._nursery.cancel_scope.cancel()

    async def _start_unborn(self) -> None:
        """Make each worker made since the last call a child of the supervisor (it returns once its thread runs)."""
        while self._unborn:
            worker = self._unborn[0]
            if not worker.retired:
                try:
                    await self.supervisor.start_child(self._worker_spec(worker))
                except SupervisorNotRunningError:
                    return
            self._unborn.popleft()

    async def _start_unborn_forever(self) -> None:
        while True:
            await self._births.wait()
            self._births = trio.Event()
            await self._start_unborn()

    async def _retire_idle(self, idle_seconds: float) -> None:
        """Retire every worker idle for `idle_seconds`; the oldest idle one is first in `_idle`."""
        while True:
            with trio.CancelScope(deadline=self._idle_deadline()) as scope:
                self._reaper = scope
                await trio.sleep_forever()
            self._reaper = None
            now = trio.current_time()
            while self._idle and self._idle[0].idle_since + idle_seconds <= now:
                self._retire(self._idle[0], "idle")

    def _idle_deadline(self) -> float:
        if self.idle_seconds is None or not self._idle:
            return math.inf
        return self._idle[0].idle_since + self.idle_seconds

    def _rearm_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.deadline = self._idle_deadline()

    def _worker_spec(self, worker: _Worker) -> ChildSpec:
        return ChildSpec(
            name=f"worker-{worker.number}",
            start=partial(self._live, worker),
            restart=Restart.TRANSIENT,
            shutdown=self.shutdown_seconds,
        )

    async def _live(self, worker: _Worker, context: ChildContext) -> None:
        """One life of a worker's thread actor (a retired worker's ends at once: it is not restarted)."""
        if worker.retired:
            return

        def started() -> None:
            context.started()
            self._life_started(worker)

        gate, errors = self._gate, self.job_errors
        try:
            await worker.ref.serve_life(
                lambda: WorkerThread(gate, errors), started=started, on_stop_requested=context.on_stop_requested
            )
        finally:
            self._life_down(worker)

    def _life_started(self, worker: _Worker) -> None:
        worker.runs = 0
        if worker.down:
            worker.down = False
            if not worker.busy:
                self._free(worker)
        self._changed()

    def _life_down(self, worker: _Worker) -> None:
        """The life ended: a retired worker is gone; any other takes no job until a new life runs."""
        if not worker.retired:
            worker.down = True
            self._leave_idle(worker)
        self._changed()

    async def _ask(self, worker: _Worker, message: JobMessage[Any], kind: Kind, answer: _Answer[Any]) -> None:
        """Ask `worker` to run one job, then free or retire it and give the caller its answer."""
        try:
            done: JobDone[Any] = await worker.ref.ask(message, timeout=None)
        except trio.Cancelled:
            self._job_ended(worker, kind)
            self._retire(worker, None)
            answer.give(None, RuntimeError(POOL_CLOSED))
            raise
        except Exception as error:
            self.crashed += 1
            worker.down = True
            self._job_ended(worker, kind)
            self._offer_idle()
            log.warning("pool %s: worker-%d crashed on a job: %r", self.name, worker.number, error)
            answer.give(None, error)
            return
        worker.runs += 1
        self._job_ended(worker, kind)
        if done.ends or worker.runs >= self.max_runs:
            self._retire(worker, "max_runs" if worker.runs >= self.max_runs else "job")
            if not self._closed:
                self._free(self._new_worker())
        else:
            self._free(worker)
        answer.give(done.value, done.error)

    def _job_ended(self, worker: _Worker, kind: Kind) -> None:
        worker.busy = False
        if kind == "fold":
            self._busy_folds -= 1
        key = (worker.owner, kind)
        left = self._held.get(key, 0) - 1
        if left > 0:
            self._held[key] = left
        else:
            self._held.pop(key, None)
        worker.owner = UNATTRIBUTED

    # Workers and waiters, on the Trio thread.

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(POOL_CLOSED)

    def _fill(self) -> None:
        while len(self._workers) < self.size:
            self._free(self._new_worker())

    def _new_worker(self) -> _Worker:
        number = next(self._numbers)
        ref: ThreadActorRef[JobMessage[Any], JobDone[Any]] = ThreadActorRef(
            f"{self.name}-worker-{number}", capacity=1, stack_size=self.stack_bytes
        )
        worker = _Worker(number, ref)
        self._workers.add(worker)
        self._unborn.append(worker)
        self._births.set()
        self.started += 1
        self._changed()
        return worker

    def _retire(self, worker: _Worker, reason: str | None) -> None:
        """End `worker` for good: its address closes and its life ends after what it was sent."""
        if worker.retired:
            return
        worker.retired = True
        self._workers.discard(worker)
        self._leave_idle(worker)
        if reason is not None:
            self.ended.append(reason)
            del self.ended[:-ENDINGS_KEPT]
        worker.ref.stop()
        self._changed()

    def _make_idle(self, worker: _Worker) -> None:
        worker.idle_since = trio.current_time()
        self._idle.append(worker)
        if len(self._idle) == 1:
            self._rearm_reaper()

    def _leave_idle(self, worker: _Worker) -> None:
        if worker in self._idle:
            first = self._idle[0] is worker
            self._idle.remove(worker)
            if first:
                self._rearm_reaper()

    def _take(self, kind: Kind, owner: JobOwner) -> _Worker | None:
        self._check_open()
        if kind == "fold" and self._busy_folds >= self.fold_limit:
            return None
        if self._idle:
            worker = self._idle.pop()
            if not self._idle:
                self._rearm_reaper()
        elif len(self._workers) < self.size:
            worker = self._new_worker()
        else:
            return None
        self._hold(worker, kind, owner)
        return worker

    def _hold(self, worker: _Worker, kind: Kind, owner: JobOwner) -> None:
        worker.busy = True
        worker.owner = owner
        if kind == "fold":
            self._busy_folds += 1
        key = (owner, kind)
        self._held[key] = self._held.get(key, 0) + 1
        if log.isEnabledFor(logging.DEBUG):
            held, folds = self.held_by(owner), self.held_by(owner, "fold")
            log.debug(
                "pool %s: worker-%d takes a %s of %s/%s, which holds %d (%d folding); folds %d of %d",
                self.name,
                worker.number,
                kind,
                owner.org,
                owner.playbook,
                held,
                folds,
                self._busy_folds,
                self.fold_limit,
                extra={
                    "pool": self.name,
                    "kind": kind,
                    "org": owner.org,
                    "playbook": owner.playbook,
                    "owner_holds": held,
                    "owner_folds": folds,
                    "folds": self._busy_folds,
                    "fold_limit": self.fold_limit,
                    "workers": self.size,
                },
            )
        self._changed()

    def _may_take(self, waiter: _Waiter) -> bool:
        return waiter.kind != "fold" or self._busy_folds < self.fold_limit

    def _free(self, worker: _Worker) -> None:
        """Give the free `worker` to the next waiter that may take it, or make it idle when none may."""
        if worker.down or worker.retired or worker.busy:
            return
        waiter = None if self._closed else self._queue.pop_next(self._may_take)
        if waiter is None:
            if not self._closed:
                self._make_idle(worker)
        else:
            waiter.worker = worker
            self._hold(worker, waiter.kind, waiter.owner)
            waiter.event.set()
        self._changed()

    def _offer_idle(self) -> None:
        """Hand idle workers to the waiters that may take them now (after a fold ended without freeing its
        worker, a fold that waited at the limit may go)."""
        while self._idle and not self._closed:
            waiter = self._queue.pop_next(self._may_take)
            if waiter is None:
                return
            worker = self._idle.pop()
            if not self._idle:
                self._rearm_reaper()
            waiter.worker = worker
            self._hold(worker, waiter.kind, waiter.owner)
            waiter.event.set()

    def _give_back(self, worker: _Worker, kind: Kind) -> None:
        """A worker handed to a caller that will not use it goes to the next waiter."""
        self._job_ended(worker, kind)
        self._free(worker)

    async def _acquire(self, kind: Kind, owner: JobOwner, wait_until: float) -> _Worker:
        worker = self._take(kind, owner)
        if worker is not None:
            self._queue.served(owner)
            return worker
        waiter = _Waiter(kind, owner)
        self._queue.add(waiter, owner)
        try:
            with trio.move_on_after(max(0.0, wait_until - time.monotonic())):
                await waiter.event.wait()
        except BaseException:
            self._take_back(waiter)
            raise
        if waiter.closed or self._closed:
            self._take_back(waiter)
            raise RuntimeError(POOL_CLOSED)
        worker = waiter.worker
        if worker is None:
            self._queue.remove(waiter)
            raise NoWorkerFree(self.size)
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            self._take_back(waiter)
            raise
        return worker

    def _take_back(self, waiter: _Waiter) -> None:
        """The waiter will not use a worker: it leaves the queue, and a worker handed to it goes to the next."""
        worker, waiter.worker = waiter.worker, None
        if worker is None:
            self._queue.remove(waiter)
        else:
            self._give_back(worker, waiter.kind)

    def _close_here(self) -> None:
        """Close the pool on its Trio thread: waiters wake, and the supervisor stops every worker."""
        if self._closed:
            return
        self._closed = True
        for waiter in self._queue.drain():
            waiter.closed = True
            waiter.event.set()
        self._idle.clear()
        self.supervisor.request_stop()
        self._changed()

    def _changed(self) -> None:
        self._changes.unpark_all()


def _current_token() -> trio.lowlevel.TrioToken | None:
    try:
        return trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None
