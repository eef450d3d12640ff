"""A fresh sandbox from the snapshot, beside its floor (issue 31, the sandbox rows). Prints; asserts nothing.

Rows, each the median of `--runs` runs on this thread (fresh store, instantiate, run, drop), one after another:

- `fresh sandbox, trivial program, 240 MiB heap`: a new store, an instance of the 240 MiB snapshot (the
  interpreter, its heap and the prelude already set up), `pass` executed with `mp_js_do_exec`, dropped; against
  the floor measured in the same run: a bare `InstancePre.instantiate` of a module with one empty export on the
  same engine, and a call of that export. The issue's bar is at most 1.5x the floor, and 0.35 ms.
- `instantiate and drop, copy-on-write on` and `off`: the snapshot instantiated and dropped, on the product's
  engine and on one that lays the memory by copying the data segments instead (`memory_init_cow` off): what
  copy-on-write gives.
- `computation run end to end`: `evaluate()` of a trivial program (the program compiled, its input read, `main`
  called, the output written and read back), as a computation run does it.
- `workflow input end to end, on a worker`: one `SandboxEvaluator` (the 64 MiB snapshot) evaluating one place
  with one expression, then closed, its instance on the worker's companion thread; then the same outside a pool.
- `resident memory, 100 sandboxes live at once`: the process's resident set with 100 instances of the 240 MiB
  snapshot alive, each having run a trivial computation's line, against the same process before.

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
from typing import Any

import wasmtime
from wasmtime import _bindings as wasmtime_c

from auto_runtime.functions.workflow.engine.evaluation import Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.companion import Companion, bind
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl, install_deadline
from auto_runtime.sandbox.limits import HEAP_SIZE, MEMORY_BYTES
from auto_runtime.sandbox.outcomes import Returned
from auto_runtime.sandbox.store_run import StoreSession, run_store

START_FUEL = 10**10
TRIVIAL = "def main(input):\n    return input\n"
CLOCK_MS = 1_767_225_600_000
LIVE = 100
EMPTY_MODULE = '(module (memory 1) (func (export "run")))'


def fresh_sandbox(engine: SandboxEngine) -> int:
    """A fresh store and instance of the snapshot, `pass` executed, dropped; the fuel it spent."""
    session = StoreSession(engine, START_FUEL)
    ending = run_store(engine, session, "pass", Bridge((), {}, 0), RunControl(time.monotonic() + 10.0))
    assert ending.clean, ending
    return START_FUEL - session.fuel_left()


def floor_instance(engine: wasmtime.Engine, pre: Any) -> int:
    """The floor: a new store, a bare `InstancePre.instantiate` of the empty module, its export called."""
    store = wasmtime.Store(engine)
    store.set_limits(memory_size=MEMORY_BYTES, instances=1, memories=1)
    store.set_fuel(START_FUEL)
    store.set_epoch_deadline(10**6)
    pre.instantiate(store).exports(store)["run"](store)
    spent = START_FUEL - int(store.get_fuel())
    del store
    return spent


def instantiate_only(engine: wasmtime.Engine, pre: Any) -> int:
    store = wasmtime.Store(engine)
    store.set_limits(memory_size=MEMORY_BYTES, instances=1, memories=1)
    store.set_fuel(START_FUEL)
    store.set_epoch_deadline(10**6)
    pre.instantiate(store)
    del store
    return 0


def without_copy_on_write(engine: SandboxEngine) -> tuple[wasmtime.Engine, Any]:
    """An engine like the product's but with `memory_init_cow` off, and the snapshot's `InstancePre` on it."""
    from auto_runtime.sandbox.engine import _config
    from auto_runtime.sandbox.host_imports import define_host

    config = _config()
    wasmtime_c.wasmtime_config_memory_init_cow_set(config.ptr(), False)
    plain = wasmtime.Engine(config)
    module = wasmtime.Module(plain, engine.artifacts[HEAP_SIZE].wasm)
    linker = wasmtime.Linker(plain)
    define_host(linker, module)
    return plain, linker.instantiate_pre(module)


def computation_run(engine: SandboxEngine) -> int:
    """`evaluate()` of the trivial program; the work it reports (the prelude's fuel is not work)."""
    evaluation = Evaluation(TRIVIAL, 1, "1", CLOCK_MS, 1_048_320)
    outcome = evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))
    assert isinstance(outcome, Returned), outcome
    return outcome.work


def workflow_input(engine: SandboxEngine) -> int:
    """One input's evaluator, one place, closed; the threads it started."""
    before = threading.active_count()
    evaluator = SandboxEvaluator(engine, CLOCK_MS)
    try:
        answer = evaluator.evaluate(Place(('data["a"] + 1',), {"data": {"a": 41}}))
        started = threading.active_count() - before
    finally:
        evaluator.close()
    assert answer == [42], answer
    return started


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def live_sandboxes(engine: SandboxEngine, count: int) -> float:
    """Resident MiB added by `count` live instances, each having executed a trivial computation's first line."""
    before = resident_mib()
    kept: list[tuple[StoreSession, Any]] = []
    for _ in range(count):
        session = StoreSession(engine, START_FUEL)
        handle = install_deadline(session.store, RunControl(time.monotonic() + 60.0))
        instance = engine.pres[HEAP_SIZE].instantiate(session.store)
        exports = instance.exports(session.store)
        code = b"_names = {}\n_value = _loads('[1, 2, 3]')\n"
        place = int(exports["malloc"](session.store, len(code) + 13))
        exports["memory"].write(session.store, code + bytes(13), place)
        exports["mp_js_do_exec"](session.store, place, len(code), place + len(code) + 1)
        kept.append((session, (handle, instance)))
    added = resident_mib() - before
    kept.clear()
    return added


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
            empty = wasmtime.Module(engine.engine, wasmtime.wat2wasm(EMPTY_MODULE))
            empty_pre = wasmtime.Linker(engine.engine).instantiate_pre(empty)
            plain_engine, plain_pre = without_copy_on_write(engine)
            fresh_ms, fresh_fuel = median_ms(runs, lambda: fresh_sandbox(engine))
            floor_ms, _ = median_ms(runs, lambda: floor_instance(engine.engine, empty_pre))
            cow_ms, _ = median_ms(runs, lambda: instantiate_only(engine.engine, engine.pres[HEAP_SIZE]))
            copied_ms, _ = median_ms(max(runs // 4, 1), lambda: instantiate_only(plain_engine, plain_pre))
            run_ms, run_work = median_ms(runs, lambda: computation_run(engine))
            companion = Companion("benchmark-expressions")
            bind(companion)
            try:
                worker_ms, worker_threads = median_ms(max(runs // 4, 1), lambda: workflow_input(engine))
            finally:
                bind(None)
                companion.retire()
            input_ms, input_threads = median_ms(max(runs // 4, 1), lambda: workflow_input(engine))
            live_mib = live_sandboxes(engine, LIVE)
        finally:
            engine.close()
    print(f"sandbox {engine.sandbox_name}, {runs} runs a row, medians")
    print("| path | median | fuel | floor | ratio | bar |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(
        f"| fresh sandbox, trivial program, {HEAP_SIZE}iB heap | {fresh_ms:.3f} ms | {fresh_fuel:,} "
        f"| bare InstancePre.instantiate + empty export: {floor_ms:.3f} ms | {fresh_ms / floor_ms:.1f}x "
        "| <= 0.35 ms; <= 1.5x |"
    )
    print(
        f"| instantiate and drop, copy-on-write on | {cow_ms:.3f} ms | | copy-on-write off: {copied_ms:.3f} ms "
        f"| {copied_ms / cow_ms:.1f}x | |"
    )
    print(f"| computation run end to end (evaluate, trivial) | {run_ms:.3f} ms | work {run_work:,} | | | |")
    print(
        f"| workflow input end to end, on a worker (one place, one expression) | {worker_ms:.3f} ms "
        f"| | threads started per input: {worker_threads} | | 0 threads |"
    )
    print(
        f"| workflow input end to end, outside a pool (its own thread) | {input_ms:.3f} ms "
        f"| | threads started per input: {input_threads} | | |"
    )
    print(
        f"| resident memory, {LIVE} sandboxes live at once | {live_mib:.1f} MiB ({live_mib / LIVE * 1024:.0f} KiB "
        "each) | | the old artifact: about 5.5 MiB each (notes/sandbox-snapshot.md) | | print it |"
    )


if __name__ == "__main__":
    main()
