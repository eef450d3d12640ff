"""A sandbox worker's companion: one long-lived thread that runs the expression instances of the inputs its
worker applies, so no thread is started per input.

A workflow input's expressions are a conversation between two threads: the worker's thread applies the input
and asks for each place's answers, and the instance's thread runs MicroPython, whose prelude asks the host for
the next request through its bridge (`functions/workflow/engine/sandbox_evaluator.py`). The worker (a thread
actor, `worker_thread.WorkerThread`) makes one `Companion` for its life, binds it to its own thread
(`bind`), and retires it when its life ends; the evaluator finds it with `current_companion()` and hands it
the instance to run (`launch`). Outside a pool (tests, checkers, `trio.to_thread`) no companion is bound and
the evaluator starts a thread of its own.

Concurrency rules:
- The companion runs one callable at a time, in the order launched; `launch` never blocks. Its thread starts
  on the first launch (a worker that never applies an input never starts one), with `COMPANION_STACK_BYTES`,
  under `actors.STACK_SIZE_LOCK`, the one lock every thread that sets the process-wide stack size takes.
- A launched callable enters the worker pool's `EngineGate` on the launching thread and leaves it when it has
  run, on the companion's: a store the companion holds counts as a running job, so the engine is not closed
  under it.
- `broken` is set when a callable raised out of the companion's loop, or when its launcher saw it hang past
  its bound (`abandon`). A broken companion takes no more callables (`launch` raises `CompanionBroken`), and
  its worker retires after the job that broke it (the pool replaces it with a fresh worker and companion).
- `retire` asks the thread to end after what it was handed; it does not wait (a hung callable cannot be
  stopped; its thread is a daemon and holds only its own store).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Protocol

from auto_runtime.actors import STACK_SIZE_LOCK

log = logging.getLogger("auto_runtime.sandbox.companion")

COMPANION_STACK_BYTES = 64 * 1024 * 1024
"""The stack a MicroPython instance needs on the thread that runs it (the same as a sandbox worker's)."""

_local = threading.local()


class CompanionBroken(RuntimeError):
    """The companion cannot run a callable: it broke before (see the module's rules) or was retired."""


class Gate(Protocol):
    """What a companion's callables enter before they run and leave after (the pool's `EngineGate`)."""

    def enter(self) -> bool: ...

    def leave(self) -> None: ...


class _Open:
    """The gate of a companion outside a pool: always open, nothing to count."""

    def enter(self) -> bool:
        return True

    def leave(self) -> None:
        """Nothing is counted."""


def _stop() -> None:
    """Handed to the thread to end it; compared by identity, never called."""


_STOP: Callable[[], None] = _stop


class Companion:
    """One long-lived thread running the callables its worker launches, one at a time (module's rules)."""

    def __init__(self, name: str, gate: Gate | None = None, stack_bytes: int = COMPANION_STACK_BYTES) -> None:
        self.name = name
        self.stack_bytes = stack_bytes
        self._gate: Gate = gate if gate is not None else _Open()
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._retired = False
        self.broken = False
        self.launched = 0
        """Callables handed to the thread (for tests and operators)."""

    @property
    def ident(self) -> int | None:
        """The thread's identifier, None before the first launch."""
        return None if self._thread is None else self._thread.ident

    def launch(self, run: Callable[[], None]) -> None:
        """Run `run` on the companion's thread, after what it was handed before; never waits for it."""
        if self.broken or self._retired:
            raise CompanionBroken(f"companion {self.name} is {'broken' if self.broken else 'retired'}")
        if self._thread is not None and not self._thread.is_alive():
            self.broken = True
            raise CompanionBroken(f"companion {self.name}'s thread has ended")
        if not self._gate.enter():
            raise CompanionBroken(f"companion {self.name}: the pool is closed")
        self.launched += 1
        self._jobs.put(run)
        if self._thread is None:
            self._start()

    def abandon(self) -> None:
        """The launcher saw a callable outlive its bound: the companion is broken, and its worker retires."""
        if not self.broken:
            log.warning("companion %s: an instance outlived its bound; the worker retires", self.name)
        self.broken = True

    def retire(self) -> None:
        """End the thread once it has run what it was handed (without waiting)."""
        if self._retired:
            return
        self._retired = True
        if self._thread is not None:
            self._jobs.put(_STOP)

    def _start(self) -> None:
        thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        with STACK_SIZE_LOCK:
            previous = threading.stack_size(self.stack_bytes)
            try:
                thread.start()
            finally:
                threading.stack_size(previous)
        self._thread = thread

    def _serve(self) -> None:
        while self._run_one(self._jobs.get()):
            pass

    def _run_one(self, run: Callable[[], None]) -> bool:
        """Run one callable (False for the stop); it is dropped when this returns, so nothing of an input
        outlives its run on the thread."""
        if run is _STOP:
            return False
        try:
            run()
        except BaseException:
            self.broken = True
            log.exception("companion %s: a callable raised; the worker retires", self.name)
        finally:
            self._gate.leave()
        return True


def bind(companion: Companion | None) -> None:
    """Make `companion` the one `current_companion()` gives on this thread (None to clear)."""
    _local.companion = companion


def current_companion() -> Companion | None:
    """The companion bound to this thread (a sandbox worker's), or None outside a pool."""
    companion: Companion | None = getattr(_local, "companion", None)
    return companion
