"""The epoch ticker advances the engine's epoch only while a store runs guest code (`sandbox/interruption.py`):
an idle server does not wake a hundred times a second, and a run's deadline still stops it."""

from __future__ import annotations

import threading
import time

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.outcomes import PastDeadline, Returned
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
