"""The start of a fresh sandbox instance, beside its floor (issue 16, the sandbox start row). Prints; asserts nothing.

Rows, each the median of `--runs` runs on this thread (fresh store, instantiate, run, drop), one after another:

- `fresh instance, trivial program, 240 MiB heap`: the product's computation heap (`HEAP_SIZE`), `_start`
  running `pass`, against the floor: the same with a 1 MiB heap. MicroPython clears its allocation tables in
  guest code, so the start's fuel and time grow with the heap; the issue's bar is at most 2x the floor.
- `computation run end to end`: `evaluate()` of a trivial program (the prelude compiled and set up, the
  program compiled, `main` called, the output written and read), as a computation run does it.
- `workflow input end to end, on a worker`: one `SandboxEvaluator` (64 MiB heap, the expression prelude)
  evaluating one place with one expression, then closed, as a workflow input does it on a sandbox worker: its
  instance runs on the worker's companion thread (`sandbox/companion.py`, bound to this thread as a worker
  binds it), loading the compiled expression prelude (`sandbox/expression_prelude.py`). The next row is the
  same with the prelude's source compiled in the guest (the reference it is compared with), and the last
  the same outside a pool, where each input's instance gets a thread of its own.

The fuel each path spends is printed beside its time (fuel is exact; the times depend on the machine's load).
Run from the repository root as `python -m benchmarks.sandbox_start [--runs N]` (about 15 s at the default).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import wasmtime

from auto_runtime.functions.workflow.engine.evaluation import Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.companion import Companion, bind
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.limits import HEAP_SIZE, MEMORY_BYTES
from auto_runtime.sandbox.outcomes import Returned

FLOOR_HEAP = "1M"
START_FUEL = 10**10
TRIVIAL = "def main(input):\n    return input\n"
CLOCK_MS = 1_767_225_600_000


def bare_start(engine: SandboxEngine, heap_size: str) -> int:
    """One fresh store, instance and `_start` of `pass` with `heap_size`; the fuel it spent."""
    store = wasmtime.Store(engine.engine)
    store.set_limits(memory_size=MEMORY_BYTES, instances=1, memories=1)
    store.set_fuel(START_FUEL)
    store.set_epoch_deadline(10**6)
    wasi = wasmtime.WasiConfig()
    wasi.argv = ["micropython", "-X", f"heapsize={heap_size}", "-c", "pass"]
    store.set_wasi(wasi)
    instance = engine.pre.instantiate(store)
    instance.exports(store)["_start"](store)
    spent = START_FUEL - int(store.get_fuel())
    del instance, store
    return spent


def computation_run(engine: SandboxEngine) -> int:
    """`evaluate()` of the trivial program; the work it reports (the prelude's fuel is not work)."""
    evaluation = Evaluation(TRIVIAL, 1, "1", CLOCK_MS, 1_048_320)
    outcome = evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))
    assert isinstance(outcome, Returned), outcome
    return outcome.work


def workflow_input(engine: SandboxEngine, compiled_prelude: bool = True) -> int:
    """One input's evaluator, one place, closed; the threads it started."""
    before = threading.active_count()
    evaluator = SandboxEvaluator(engine, CLOCK_MS, compiled_prelude=compiled_prelude)
    try:
        answer = evaluator.evaluate(Place(('data["a"] + 1',), {"data": {"a": 41}}))
        started = threading.active_count() - before
    finally:
        evaluator.close()
    assert answer == [42], answer
    return started


def median_ms(runs: int, one: Callable[[], int]) -> tuple[float, int]:
    """Median milliseconds of `runs` calls after 5 warm-up calls, and what the last call returned."""
    for _ in range(5):
        one()
    latencies: list[float] = []
    last = 0
    for _ in range(runs):
        began = time.perf_counter()
        last = one()
        latencies.append(time.perf_counter() - began)
    return statistics.median(latencies) * 1000, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs a row (default 200)")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="sandbox-start-") as folder:
        engine = SandboxEngine(Path(folder))
        try:
            heap_ms, heap_fuel = median_ms(runs, lambda: bare_start(engine, HEAP_SIZE))
            floor_ms, floor_fuel = median_ms(runs, lambda: bare_start(engine, FLOOR_HEAP))
            run_ms, run_work = median_ms(runs, lambda: computation_run(engine))
            companion = Companion("benchmark-expressions")
            bind(companion)
            try:
                worker_ms, worker_threads = median_ms(max(runs // 4, 1), lambda: workflow_input(engine))
                source_ms, _threads = median_ms(max(runs // 4, 1), lambda: workflow_input(engine, False))
            finally:
                bind(None)
                companion.retire()
            input_ms, input_threads = median_ms(max(runs // 4, 1), lambda: workflow_input(engine))
        finally:
            engine.close()
    print(f"artifact {engine.sandbox_name}, {runs} runs a row, medians")
    print("| path | median | fuel | floor | ratio | bar |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(
        f"| fresh instance, trivial program, {HEAP_SIZE}iB heap | {heap_ms:.2f} ms | {heap_fuel:,} "
        f"| {FLOOR_HEAP}iB heap: {floor_ms:.2f} ms, {floor_fuel:,} fuel | {heap_ms / floor_ms:.1f}x | <= 2x |"
    )
    print(f"| computation run end to end (evaluate, trivial) | {run_ms:.2f} ms | work {run_work:,} | | | |")
    print(
        f"| workflow input end to end, on a worker (one place, one expression) | {worker_ms:.2f} ms "
        f"| | threads started per input: {worker_threads} | | 0 threads |"
    )
    print(f"| the same, the prelude's source compiled in the guest | {source_ms:.2f} ms | | | | |")
    print(
        f"| workflow input end to end, outside a pool (its own thread) | {input_ms:.2f} ms "
        f"| | threads started per input: {input_threads} | | |"
    )


if __name__ == "__main__":
    main()
