"""Stopping a running store from outside: the epoch ticker and each store's deadline callback.

One ticker thread per engine calls `engine.increment_epoch()` every `TICK_SECONDS` while at least one store
runs guest code (`EpochTicker.running`, around each store's run), and sleeps otherwise, so an idle server does
not wake a hundred times a second; a store's deadline counts only ticks made while it runs. Each store's epoch
deadline is one tick, and its deadline callback (installed through Wasmtime's C API, which wasmtime-py
does not wrap; one C callback for every store, which finds the store's `RunControl` by the key it was installed
with) runs on the thread executing the guest at every tick: it lets the guest go on for one more
tick, or stops it when the run passed its wall-clock deadline or its caller cancelled it. The callback
records why it stopped the run in `RunControl.stopped`, which the runner reads to classify the ending.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

from auto_runtime.sandbox.limits import TICK_SECONDS

_CALLBACK_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_size_t,
    ctypes.POINTER(ffi.wasmtime_context_t),
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t),
)
_FINALIZER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CONTINUE = 0


class RunControl:
    """A run's deadline (monotonic seconds) and its cancellation; safe to cancel from any thread."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self._cancelled = threading.Event()
        self.stopped: str | None = None

    def cancel(self) -> None:
        """Ask the running guest to stop at the next tick."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def reason_to_stop(self) -> str | None:
        """`"cancelled"`, `"deadline"` or `None` to go on."""
        if self._cancelled.is_set():
            return "cancelled"
        if time.monotonic() >= self.deadline:
            return "deadline"
        return None


_CONTROLS: dict[int, RunControl] = {}
"""The control of each store with a deadline, by the key its callback is given; a store's entry leaves when the
store is dropped (Wasmtime calls the callback's finalizer), so this holds only live stores."""
_KEYS = itertools.count(1)


def _on_deadline(_context: Any, key: int | None, delta: Any, kind: Any) -> int:
    control = _CONTROLS.get(key or 0)
    reason = "cancelled" if control is None else control.reason_to_stop()
    if reason is not None:
        if control is not None:
            control.stopped = reason
        error = ffi.wasmtime_error_new(f"run stopped: {reason}".encode())
        return int(ctypes.cast(error, ctypes.c_void_p).value or 0)
    delta[0] = 1
    kind[0] = _CONTINUE
    return 0


def _forget(key: int | None) -> None:
    _CONTROLS.pop(key or 0, None)


_ON_DEADLINE = _CALLBACK_TYPE(_on_deadline)
_FORGET = _FINALIZER_TYPE(_forget)
"""One callback and one finalizer for every store, made once: a store's deadline finds its control by key."""


def install_deadline(store: wasmtime.Store, control: RunControl) -> object:
    """Give `store` a one-tick epoch deadline checked by `control`, until the store is dropped.

    Returns the store's key (kept for callers that held the old per-store callback; nothing needs keeping)."""
    key = next(_KEYS)
    _CONTROLS[key] = control
    store.set_epoch_deadline(1)
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), _ON_DEADLINE, key, _FORGET)
    return key


class EpochTicker:
    """The one thread that advances an engine's epoch every tick while a store runs, until stopped.

    Concurrency: `running` may be entered from any thread, any number of times at once; the thread waits on
    `_changed` while the count of running stores is zero."""

    def __init__(self, engine: wasmtime.Engine) -> None:
        self._engine = engine
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._running = 0
        self.ticks = 0
        """How many times the epoch was advanced (what the ticker's test reads)."""
        self.idle = threading.Event()
        """Set while the thread waits for a store to run (it makes no tick until one does)."""
        self._thread = threading.Thread(target=self._tick, name="sandbox-epoch-ticker", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._changed:
            self._stop.set()
            self._changed.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    @contextmanager
    def running(self) -> Iterator[None]:
        """Tick while the caller's store runs guest code."""
        with self._changed:
            self._running += 1
            self._changed.notify_all()
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1

    def _tick(self) -> None:
        while True:
            with self._changed:
                while self._running == 0 and not self._stop.is_set():
                    self.idle.set()
                    self._changed.wait()
                self.idle.clear()
            if self._stop.wait(TICK_SECONDS):
                return
            self._engine.increment_epoch()
            self.ticks += 1
