"""Worker threads that run one blocking job at a time, supervised by the pool, awaited from Trio.

Concurrency rules:
- The pool's state (live workers, idle workers, folds running, waiters) is guarded by one `threading.Lock`.
- A Trio caller takes an idle worker or starts a new one while fewer than `size` live; otherwise it waits on
  a `trio.Event` that a freeing worker sets through `TrioToken.run_sync_soon`, for at most `wait_seconds`,
  then raises `NoWorkerFree`. Jobs of kind `"fold"` use at most half the workers (at least one).
- A job's result comes back through `run_sync_soon` too: no thread is created per message.
- A worker ends after a job that asks it to (time, memory, cancellation, breakage), after `max_runs` jobs,
  and after `idle_seconds` without one (never, when `idle_seconds` is None). The pool is the supervisor:
  after a job that ended its worker, it starts a fresh worker at once; a worker that ended idle is
  replaced only when a job needs it.
- Cancelling the Trio caller cancels the job's `RunControl`, which stops the guest at the next tick; the
  worker then ends, since a cancelled job asks it to.
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
        self._waiters: list[tuple[trio.lowlevel.TrioToken, trio.Event]] = []
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

    async def _acquire(self, kind: Kind, wait_until: float) -> _Worker:
        token = trio.lowlevel.current_trio_token()
        while True:
            event = trio.Event()
            with self._lock:
                worker = self._take_locked(kind)
                if worker is not None:
                    return worker
                self._waiters.append((token, event))
            remaining = wait_until - time.monotonic()
            try:
                with trio.move_on_after(max(0.0, remaining)):
                    await event.wait()
            finally:
                with self._lock:
                    if (token, event) in self._waiters:
                        self._waiters.remove((token, event))
            if not event.is_set():
                raise NoWorkerFree(self.size)

    async def submit(self, job: Job[T], control: RunControl, kind: Kind = "run") -> T:
        """Run `job` on a worker, waiting for one at most `wait_seconds` and never past the deadline. Any
        blocking job may run here (sandbox runs, checks, a workflow input): the pool bounds them together."""
        wait_until = min(time.monotonic() + self.wait_seconds, control.deadline)
        worker = await self._acquire(kind, wait_until)
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
        with self._lock:
            if kind == "fold":
                self._busy_folds -= 1
            if ends:
                self._live.discard(worker)
                self.ended.append("max_runs" if worker.runs >= self.max_runs else "job")
                if not self._closed:
                    self._idle.append(self._start_worker_locked())
            elif not self._closed:
                self._idle.append(worker)
            waiters, self._waiters = self._waiters, []
        for token, event in waiters:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(event.set)

    def close(self, timeout: float = 30.0) -> None:
        """Ask every worker to end once its job is done, and wait for every worker thread, busy or ending, so no
        store outlives the engine (Wasmtime aborts the process at exit when one does). A job is bounded by its
        deadline, so the wait is too; `timeout` bounds it all the same."""
        with self._lock:
            self._closed = True
            workers = list(self._live)
            self._idle.clear()
            threads = list(self._threads)
        for worker in workers:
            worker.inbox.put(None)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
