"""The thread side of a sandbox worker: the thread actor that runs one blocking job per message.

Concurrency rules:
- Every method of `WorkerThread` runs in its worker's own thread (a pykka thread actor, see
  `auto_runtime.actors.thread_actor`), one message at a time; the reply crosses to Trio through the thread
  actor's bridge.
- `EngineGate` is the one lock a worker thread shares with other threads: it keeps the engine alive for every
  job that runs. A job starts only while the gate is open, and `close` waits for the jobs already running, so
  once it returns no job holds a store and the engine may be closed. The worker's companion enters it too,
  for each expression instance it runs.
- Each life of a worker owns one `Companion` (`companion.py`), bound to the worker's thread: the thread on
  which the expression instances of the workflow inputs the worker applies run. It starts on first need and
  is retired with the life (after a crash too). A job that left its companion broken (an instance that raised
  out of it or outlived its bound) ends its worker, as a bad run does, so the pool replaces both.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from auto_runtime.actors import ThreadActor
from auto_runtime.sandbox.companion import Companion, bind
from auto_runtime.sandbox.interruption import RunControl

T = TypeVar("T")
Job = Callable[[RunControl], tuple[T, bool]]
"""A blocking job: given its control, it returns its result and whether its worker must end."""


class JobErrors(enum.Enum):
    """What an exception raised by a job means for its worker."""

    RETIRE = "retire"
    """An answer (the checker's refusals are exceptions): the caller gets it, and the worker ends normally and is
    replaced at once, as after a job that asks its worker to end."""
    CRASH = "crash"
    """A fault of the worker: the caller gets it, the worker's thread actor crashes, and its supervisor restarts
    it, counted against the pool's restart intensity."""


@dataclass(frozen=True, slots=True)
class JobMessage(Generic[T]):
    """One job for a worker thread."""

    job: Job[T]
    control: RunControl


@dataclass(frozen=True, slots=True)
class JobDone(Generic[T]):
    """A worker thread's reply: the job's value, or the exception it raised as an answer, and whether the worker
    must end."""

    value: T | None
    error: BaseException | None
    ends: bool


POOL_CLOSED = "the pool is closed"


class EngineGate:
    """Counts the jobs running in worker threads; closed once, after which no job starts."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._running = 0
        self._closed = False

    @property
    def running(self) -> int:
        with self._condition:
            return self._running

    def enter(self) -> bool:
        """Called in a worker thread before a job: False (the job must not run) once the gate is closed."""
        with self._condition:
            if self._closed:
                return False
            self._running += 1
            return True

    def leave(self) -> None:
        with self._condition:
            self._running -= 1
            self._condition.notify_all()

    def close(self, timeout: float) -> bool:
        """Let no job start, and wait up to `timeout` seconds for the running ones: True when none runs."""
        deadline = time.monotonic() + timeout
        with self._condition:
            self._closed = True
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
            return True


class WorkerThread(ThreadActor[JobMessage[Any], JobDone[Any]]):
    """Runs each job it is sent; an exception of a job is an answer or a crash, as `errors` says."""

    def __init__(self, gate: EngineGate, errors: JobErrors) -> None:
        self._gate = gate
        self._errors = errors
        self.companion = Companion(f"{threading.current_thread().name}-expressions", gate)

    def on_start(self) -> None:
        bind(self.companion)

    def receive(self, message: JobMessage[Any]) -> JobDone[Any]:
        if not self._gate.enter():
            return JobDone(None, RuntimeError(POOL_CLOSED), True)
        try:
            value, ends = message.job(message.control)
        except Exception as error:
            if self._errors is JobErrors.CRASH:
                self._end_companion()
                raise
            return JobDone(None, error, True)
        except BaseException:
            self._end_companion()
            raise
        finally:
            self._gate.leave()
        return JobDone(value, None, ends or self.companion.broken)

    def on_stop(self) -> None:
        self._end_companion()

    def _end_companion(self) -> None:
        self.companion.retire()
        bind(None)
