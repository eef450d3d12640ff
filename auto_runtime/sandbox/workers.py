"""Worker threads that run one blocking job at a time, supervised by the pool, awaited from Trio.

Concurrency rules:
- The pool's state (live workers, idle workers, folds running, the queue of waiters) is guarded by one
  `threading.Lock`.
- A Trio caller takes an idle worker or starts a new one while fewer than `size` live; otherwise it waits in
  the pool's `FairQueue`, under the `JobOwner` (org, playbook) it names: fair across orgs, then across an
  org's playbooks, FIFO inside a playbook (see `fair_queue`). A worker that frees is handed, under the lock,
  to the next waiter in that order that may take it, never left for arrivals to race for; the waiter's
  `trio.Event` is then set through `TrioToken.run_sync_soon`. So one org's long runs delay another org's run
  by at most the time until one of the busy workers frees. A waiter waits at most `wait_seconds` (never past
  its deadline), then raises `NoWorkerFree`; one handed a worker as its wait ended takes it.
- A waiter that is cancelled leaves the queue; when a worker was handed to it meanwhile, that worker goes to
  the next waiter (or back to the idle workers).
- Jobs of kind `"fold"` use at most half the workers (at least one): a fold waits, keeping its place, while
  that many run, and the waiters behind it may go first.
- A job's result comes back through `run_sync_soon` too: no thread is created per message.
- A worker ends after a job that asks it to (time, memory, cancellation, breakage), after `max_runs` jobs,
  and after `idle_seconds` without one (never, when `idle_seconds` is None). The pool is the supervisor:
  after a job that ended its worker, it starts a fresh worker at once (handed to the next waiter); a worker
  that ended idle is replaced only when a job needs it.
- Cancelling the Trio caller cancels the job's `RunControl`, which stops the guest at the next tick; the
  worker then ends, since a cancelled job asks it to.
- Closing the pool wakes every waiter, which raises `RuntimeError`.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import trio

from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, FairQueue, JobOwner
from auto_runtime.sandbox.interruption import RunControl

T = TypeVar("T")
Kind = Literal["run", "fold"]
Job = Callable[[RunControl], tuple[T, bool]]
"""A blocking job: given its control, it returns its result and whether its worker must end."""

WORKER_STACK_BYTES = 64 * 1024 * 1024


class NoWorkerFree(Exception):
    """No worker became free within the wait."""

    def __init__(self, workers: int) -> None:
        super().__init__(f"No worker became free; the pool runs {workers} at once")
        self.workers = workers


@dataclass(frozen=True)
class _Delivery(Generic[T]):
    """What a worker hands back: the job's value, or the exception it raised (a value may be an exception)."""

    value: T | None
    error: BaseException | None


@dataclass(eq=False)
class _Task(Generic[T]):
    job: Job[T]
    control: RunControl
    deliver: Callable[[_Delivery[T]], None]
    kind: Kind


@dataclass(eq=False)
class _Worker:
    number: int
    inbox: queue.SimpleQueue[_Task[object] | None] = field(default_factory=queue.SimpleQueue)
    runs: int = 0
    thread: threading.Thread | None = None


@dataclass(eq=False)
class _Waiter:
    """A caller waiting for a worker: `worker` is set, under the pool's lock, when one is handed to it."""

    kind: Kind
    token: trio.lowlevel.TrioToken
    event: trio.Event = field(default_factory=trio.Event)
    worker: _Worker | None = None
    done: bool = False
    closed: bool = False


_stack_lock = threading.Lock()


class WorkerPool:
    """`size` worker threads for blocking jobs, with the lifecycle rules of the module docstring."""

    def __init__(
        self,
        size: int,
        *,
        name: str = "sandbox-worker",
        max_runs: int = 1000,
        idle_seconds: float | None = 60.0,
        wait_seconds: float = 10.0,
        stack_bytes: int = WORKER_STACK_BYTES,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.size = size
        self.name = name
        self.max_runs = max_runs
        self.idle_seconds = idle_seconds
        self.wait_seconds = wait_seconds
        self.stack_bytes = stack_bytes
        self.fold_limit = max(1, size // 2)
        self._lock = threading.Lock()
        self._live: set[_Worker] = set()
        self._idle: list[_Worker] = []
        self._busy_folds = 0
        self._queue: FairQueue[_Waiter] = FairQueue()
        self._numbers = itertools.count(1)
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.started = 0
        self.ended: list[str] = []

    def prestart(self) -> None:
        """Start every worker now, idle, instead of when a job first needs it."""
        with self._lock:
            while len(self._live) < self.size:
                self._idle.append(self._start_worker_locked())

    @property
    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def _start_worker_locked(self) -> _Worker:
        worker = _Worker(next(self._numbers))
        thread = threading.Thread(target=self._serve, args=(worker,), name=f"{self.name}-{worker.number}", daemon=True)
        worker.thread = thread
        self._threads = [alive for alive in self._threads if alive.is_alive()]
        self._threads.append(thread)
        self._live.add(worker)
        self.started += 1
        with _stack_lock:
            previous = threading.stack_size(self.stack_bytes)
            try:
                thread.start()
            finally:
                threading.stack_size(previous)
        return worker

    def _take_locked(self, kind: Kind) -> _Worker | None:
        if self._closed:
            raise RuntimeError("the pool is closed")
        if kind == "fold" and self._busy_folds >= self.fold_limit:
            return None
        if self._idle:
            worker = self._idle.pop()
        elif len(self._live) < self.size:
            worker = self._start_worker_locked()
        else:
            return None
        if kind == "fold":
            self._busy_folds += 1
        return worker

    def _may_take(self, waiter: _Waiter) -> bool:
        return waiter.kind != "fold" or self._busy_folds < self.fold_limit

    def _hand_over_locked(self, worker: _Worker) -> _Waiter | None:
        """Give the free `worker` to the next waiter that may take it (to be woken once the lock is released),
        or make it idle when none may."""
        waiter = self._queue.pop_next(self._may_take)
        if waiter is None:
            self._idle.append(worker)
            return None
        waiter.worker = worker
        if waiter.kind == "fold":
            self._busy_folds += 1
        return waiter

    def _take_back_locked(self, waiter: _Waiter) -> _Waiter | None:
        """The worker handed to `waiter`, which will not use it, goes to the next waiter; `waiter` leaves the
        queue when it still waited in it."""
        waiter.done = True
        worker, waiter.worker = waiter.worker, None
        if worker is None:
            self._queue.remove(waiter)
            return None
        if waiter.kind == "fold":
            self._busy_folds -= 1
        if self._closed:
            return None
        return self._hand_over_locked(worker)

    def _wake(self, waiter: _Waiter | None) -> None:
        """Set the woken waiters' events; a waiter whose Trio run has ended gives its worker back."""
        while waiter is not None:
            try:
                waiter.token.run_sync_soon(waiter.event.set)
                return
            except trio.RunFinishedError:
                with self._lock:
                    waiter = None if waiter.done else self._take_back_locked(waiter)

    async def _acquire(self, kind: Kind, owner: JobOwner, wait_until: float) -> _Worker:
        with self._lock:
            worker = self._take_locked(kind)
            if worker is not None:
                self._queue.served(owner)
                return worker
            waiter = _Waiter(kind, trio.lowlevel.current_trio_token())
            self._queue.add(waiter, owner)
        try:
            with trio.move_on_after(max(0.0, wait_until - time.monotonic())):
                await waiter.event.wait()
        except BaseException:
            with self._lock:
                woken = self._take_back_locked(waiter)
            self._wake(woken)
            raise
        with self._lock:
            waiter.done = True
            if waiter.closed or self._closed:
                raise RuntimeError("the pool is closed")
            worker = waiter.worker
            if worker is None:
                self._queue.remove(waiter)
                raise NoWorkerFree(self.size)
            return worker

    async def submit(self, job: Job[T], control: RunControl, kind: Kind = "run", owner: JobOwner = UNATTRIBUTED) -> T:
        """Run `job` for `owner` on a worker, waiting for one at most `wait_seconds` and never past the deadline.
        Any blocking job may run here (sandbox runs, checks, a workflow input): the pool bounds them together,
        and serves the waiting ones fairly by `owner`."""
        wait_until = min(time.monotonic() + self.wait_seconds, control.deadline)
        worker = await self._acquire(kind, owner, wait_until)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        box: list[_Delivery[T]] = []

        def deliver(result: _Delivery[T]) -> None:
            def land() -> None:
                box.append(result)
                done.set()

            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(land)

        worker.inbox.put(_Task(job, control, deliver, kind))  # type: ignore[arg-type]
        try:
            await done.wait()
        except trio.Cancelled:
            control.cancel()
            raise
        delivered = box[0]
        if delivered.error is not None:
            raise delivered.error
        return delivered.value  # type: ignore[return-value]

    def _serve(self, worker: _Worker) -> None:
        while True:
            try:
                task = worker.inbox.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if worker in self._idle:
                        self._idle.remove(worker)
                        self._live.discard(worker)
                        self.ended.append("idle")
                        return
                continue
            if task is None:
                return
            ends = True
            try:
                result, ends = task.job(task.control)
                outcome: _Delivery[Any] = _Delivery(result, None)
            except Exception as error:
                outcome = _Delivery(None, error)
            worker.runs += 1
            if worker.runs >= self.max_runs:
                ends = True
            self._release(worker, task.kind, ends)
            task.deliver(outcome)
            if ends:
                return

    def _release(self, worker: _Worker, kind: Kind, ends: bool) -> None:
        woken: _Waiter | None = None
        with self._lock:
            if kind == "fold":
                self._busy_folds -= 1
            free: _Worker | None = worker
            if ends:
                self._live.discard(worker)
                self.ended.append("max_runs" if worker.runs >= self.max_runs else "job")
                free = None if self._closed else self._start_worker_locked()
            if free is not None and not self._closed:
                woken = self._hand_over_locked(free)
        self._wake(woken)

    def close(self, timeout: float = 30.0) -> None:
        """Ask every worker to end once its job is done, and wait for every worker thread, busy or ending, so no
        store outlives the engine (Wasmtime aborts the process at exit when one does). A job is bounded by its
        deadline, so the wait is too; `timeout` bounds it all the same."""
        with self._lock:
            self._closed = True
            workers = list(self._live)
            self._idle.clear()
            threads = list(self._threads)
            waiters = self._queue.drain()
            for waiter in waiters:
                waiter.closed = True
        for waiter in waiters:
            with contextlib.suppress(trio.RunFinishedError):
                waiter.token.run_sync_soon(waiter.event.set)
        for worker in workers:
            worker.inbox.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
