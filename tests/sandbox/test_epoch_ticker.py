"""The epoch ticker advances the engine's epoch only while a store runs guest code (`sandbox/interruption.py`):
an idle server does not wake a hundred times a second, and a run's deadline still stops it."""

from __future__ import annotations

import gc
import threading
import time
import weakref

from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import PastDeadline, Returned
from auto_runtime.sandbox.store_run import StoreSession, run_store
from tests.sandbox.test_evaluate import run

IDLE_LOOK_SECONDS = 0.3
"""How long the idle check watches the tick count: 30 ticks' time, in which an idle ticker makes none."""


def test_the_ticker_ticks_while_a_store_runs_and_never_while_none_does(engine: SandboxEngine) -> None:
    ticker = engine.ticker
    assert isinstance(run(engine, "def main(x):\n    return x\n", 1), Returned)
    ticker.idle.wait()
    before = ticker.ticks
    time.sleep(IDLE_LOOK_SECONDS)
    assert ticker.ticks == before, "no store runs: the epoch stands still"
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with ticker.running():
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    while ticker.ticks < before + 3:
        time.sleep(0.01)
    release.set()
    holder.join()


def test_a_run_past_its_deadline_is_still_stopped(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    while True:\n        pass\n", None, seconds=0.2)
    assert isinstance(outcome, PastDeadline)


def test_a_stores_deadline_lets_go_of_its_control_when_the_store_is_dropped(engine: SandboxEngine) -> None:
    """One C callback serves every store's deadline, finding the store's control by key: the key's entry leaves
    with the store (Wasmtime calls the finalizer at the drop), so nothing of a run's control outlives it."""
    control = RunControl(time.monotonic() + 10)
    held = weakref.ref(control)
    session = StoreSession(engine, 10**10)
    ending = run_store(engine, session, "pass", Bridge((), {}, clock_ns=0), control)
    assert ending.clean, ending
    del control
    assert held() is not None, "the live store's deadline still holds its control"
    del session
    gc.collect()
    assert held() is None
