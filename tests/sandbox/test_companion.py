"""Workflow inputs on a sandbox worker: their expression instances run on the worker's one companion thread, so
applying inputs starts no thread; an instance that hangs past its input's bound, or a companion that breaks,
ends that input as the spec says and retires the worker, and the next input works (spec 4.5, 4.6).

Nothing here depends on time: a hung companion is one the test keeps busy until it releases it, and the input
it would serve has a short time in the sandbox, which only decides how soon the host gives up on it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.functions.workflow.engine.evaluation import Failed, Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.companion import Companion, CompanionBroken, bind, current_companion
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.workers import WorkerPool

CLOCK_MS = 1_790_000_000_000
LIVENESS_SECONDS = 60.0
PLACE = Place(('data["a"] + 1', "[data, 'é']"), {"data": {"a": 41}})
ANSWER = [42, [{"a": 41}, "é"]]


def thread_ids() -> set[int | None]:
    """The native ids of the live threads (the kernel's, which it does not hand out again soon, unlike idents)."""
    return {thread.native_id for thread in threading.enumerate()}


def input_job(engine: SandboxEngine, place: Place = PLACE, **options: Any) -> Callable[[RunControl], tuple[Any, bool]]:
    """A workflow input's job as `run_store` submits it: one evaluator, its places, closed."""

    def job(control: RunControl) -> tuple[Any, bool]:
        evaluator = SandboxEvaluator(engine, CLOCK_MS, **options)
        try:
            return evaluator.evaluate(place), False
        finally:
            evaluator.close()

    return job


async def submit(pool: WorkerPool, job: Callable[[RunControl], tuple[Any, bool]]) -> Any:
    return await pool.submit(job, RunControl(time.monotonic() + LIVENESS_SECONDS))


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """An event that a blocked companion waits for; set when the test ends, whatever happened."""
    event = threading.Event()
    yield event
    event.set()


def input_job_seeing_threads(engine: SandboxEngine) -> Callable[[RunControl], tuple[Any, bool]]:
    """An input's job that also reports the live threads while its instance is alive (after its place)."""

    def job(control: RunControl) -> tuple[Any, bool]:
        evaluator = SandboxEvaluator(engine, CLOCK_MS)
        try:
            answer = evaluator.evaluate(PLACE)
            return (answer, thread_ids()), False
        finally:
            evaluator.close()

    return job


async def test_inputs_on_one_worker_start_no_thread(engine: SandboxEngine) -> None:
    pool = WorkerPool(1)
    try:
        answer, first = await submit(pool, input_job_seeing_threads(engine))
        assert answer == ANSWER
        for _ in range(20):
            answer, live = await submit(pool, input_job_seeing_threads(engine))
            assert answer == ANSWER
            assert live <= first
        assert thread_ids() <= first
        assert pool.started == 1 and pool.ended == []
    finally:
        pool.close()


async def test_every_instance_of_a_worker_runs_on_its_companion(engine: SandboxEngine) -> None:
    """Instances stopped by a bound are not failures of the companion: the next place starts another on it."""
    places = Place(("sum(range(10**9))",), {}), Place(("[1] * 100000000",), {}), Place(("1 + 1",), {})

    def job(control: RunControl) -> tuple[Any, bool]:
        companion = current_companion()
        assert companion is not None
        evaluator = SandboxEvaluator(engine, CLOCK_MS)
        try:
            answers = [evaluator.evaluate(place) for place in places]
        finally:
            evaluator.close()
        return (answers, companion.launched, companion.ident, threading.get_ident()), False

    pool = WorkerPool(1)
    try:
        (work, memory, two), launched, companion_ident, worker_ident = await submit(pool, job)
        assert isinstance(work, Failed) and work.detail.endswith("it used more than its 250,000,000 units of work")
        assert isinstance(memory, Failed) and memory.detail.endswith("it used more than the input's 64 MiB of memory")
        assert two == [2]
        assert launched == 3 and companion_ident not in (None, worker_ident)
        (_answers, launched, again, _worker) = await submit(pool, job)
        assert launched == 6 and again == companion_ident
        assert pool.ended == []
    finally:
        pool.close()


async def test_a_hung_instance_ends_its_input_with_the_time_bound_and_retires_its_worker(
    engine: SandboxEngine, released: threading.Event
) -> None:
    def hang(control: RunControl) -> tuple[Any, bool]:
        companion = current_companion()
        assert companion is not None
        companion.launch(released.wait)  # the companion is busy: the input's instance never starts
        return input_job(engine, seconds=0.05)(control)

    pool = WorkerPool(1)
    try:
        assert await submit(pool, hang) == Failed(
            "runtime",
            500,
            "An expression passed a bound of the sandbox",
            'data["a"] + 1: the input ran more than its 5 seconds in the sandbox',
        )
        assert pool.ended == ["job"]
        before = pool.started
        assert await submit(pool, input_job(engine)) == ANSWER
        assert pool.started == before and pool.ended == ["job"]
    finally:
        released.set()
        pool.close()


async def test_a_companion_that_breaks_retires_its_worker_and_the_next_input_works(engine: SandboxEngine) -> None:
    def crash(control: RunControl) -> tuple[Any, bool]:
        companion = current_companion()
        assert companion is not None
        ran = threading.Event()

        def raise_there() -> None:
            ran.set()
            raise RuntimeError("the companion breaks")

        companion.launch(raise_there)
        assert ran.wait(LIVENESS_SECONDS)
        # The input goes on: its instance runs on a thread of its own, since the companion is broken.
        return input_job(engine)(control)

    pool = WorkerPool(1)
    try:
        assert await submit(pool, crash) == ANSWER
        assert pool.ended == ["job"]
        assert await submit(pool, input_job(engine)) == ANSWER
        assert pool.ended == ["job"]
    finally:
        pool.close()


def test_outside_a_pool_an_input_runs_its_instance_on_a_thread_of_its_own(engine: SandboxEngine) -> None:
    assert current_companion() is None
    assert input_job(engine)(RunControl(time.monotonic() + LIVENESS_SECONDS)) == (ANSWER, False)


def test_a_bound_companion_serves_the_thread_it_is_bound_to(engine: SandboxEngine) -> None:
    companion = Companion("test-expressions")
    bind(companion)
    try:
        for _ in range(3):
            assert input_job(engine)(RunControl(time.monotonic() + LIVENESS_SECONDS)) == (ANSWER, False)
        assert companion.launched == 3
        before = thread_ids()
        (answer, live), _ends = input_job_seeing_threads(engine)(RunControl(time.monotonic() + LIVENESS_SECONDS))
        assert answer == ANSWER and live == before
    finally:
        bind(None)
        companion.retire()
    with pytest.raises(CompanionBroken, match="retired"):
        companion.launch(lambda: None)


def resident_mib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow(seconds=8)
async def test_a_thousand_inputs_on_one_worker_do_not_grow_the_process(engine: SandboxEngine) -> None:
    """Nothing of an input outlives it on the companion: after a warm-up, 1,000 inputs whose expressions touch
    2 MB of their heap each leave the resident set within 20 MiB of where it was."""
    place = Place(("len([bytes(100000) for i in range(20)])", "data"), {"data": list(range(100))})
    job = input_job(engine, place)
    pool = WorkerPool(1, max_runs=2000)
    try:
        for _ in range(50):
            assert await submit(pool, job) == [20, list(range(100))]
        before = resident_mib()
        for _ in range(1000):
            assert await submit(pool, job) == [20, list(range(100))]
        growth = resident_mib() - before
        assert pool.started == 1 and pool.ended == [] and pool.crashed == 0
        assert growth < 20, f"the resident set grew by {growth} MiB over 1,000 inputs"
    finally:
        pool.close()
