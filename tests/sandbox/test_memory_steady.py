"""1,000 runs on one engine and one thread do not grow the process's memory (issue 16, acceptance).

Every run has a store of its own whose linear memory (up to 256 MiB) is released when the run ends; a store,
an instance, a callback or a log kept past its run would hold at least its touched pages (several MiB for a
run that fills 16 MiB of its heap), so 1,000 runs would add gigabytes. The bound below is 4 KiB a run, far
under one leaked store and far over the allocator's noise. Memory is the resident set from `/proc/self/statm`,
read after a warm-up of 100 runs (the first runs fill caches: compiled code, Python's own free lists).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Returned

RUNS = 1_000
WARM_UP = 100
ALLOWED_GROWTH = RUNS * 4096
SMALL = "def main(x):\n    return [str(i) for i in range(200)] + [x]\n"
LARGE = "def main(x):\n    keep = bytearray(16 * 1024 * 1024)\n    keep[-1] = 1\n    return len(keep) + x\n"


def _resident_bytes() -> int:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def _run(engine: SandboxEngine, number: int) -> None:
    source = LARGE if number % 10 == 0 else SMALL
    evaluation = Evaluation(
        source=source, first_line=1, input_json=str(number), started_at_ms=1_767_225_600_123, output_limit=1_048_320
    )
    outcome = evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))
    assert isinstance(outcome, Returned), outcome


@pytest.mark.slow
def test_a_thousand_runs_on_one_engine_do_not_grow_the_process(engine: SandboxEngine) -> None:
    for number in range(WARM_UP):
        _run(engine, number)
    before = _resident_bytes()
    for number in range(RUNS):
        _run(engine, number)
    growth = _resident_bytes() - before
    assert growth < ALLOWED_GROWTH, f"{RUNS} runs grew the resident set by {growth / 2**20:.1f} MiB"
