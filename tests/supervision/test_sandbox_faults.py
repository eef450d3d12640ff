"""Faults in the sandbox pool's workers, under a real tree (issue 15, "Faults"): a guest stopped mid-run, a job
that raises inside its worker thread, and crashes repeated past the restart intensity. Real Wasmtime runs and
real worker threads; every wait is for an event or a state the worker threads change, never a duration."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Cancelled, Returned, SandboxOutcome, ends_worker
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.workers import NoWorkerFree
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor, SupervisorFailedError
from tests.sandbox_engine import engine
from tests.supervision.polling import wait_until

__all__ = ["engine"]

FOREVER = "def main(x):\n    while True:\n        pass\n"
ECHO = "def main(x):\n    return x\n"
A = JobOwner("org-a", "p")
B = JobOwner("org-b", "p")
LIVENESS_SECONDS = 60.0
NEVER = RestartIntensity(max_restarts=1000, period=3600.0)
"""A root that never gives up, so a test sees the pool's own intensity at work."""


def evaluation(program: str, value: object = 1) -> Evaluation:
    return Evaluation(program, 1, json.dumps(value), 1_767_225_600_000, 1_048_320, work_fuel=10**15)


def control() -> RunControl:
    return RunControl(time.monotonic() + LIVENESS_SECONDS)


class Raising:
    """A job that raises inside its worker thread (a fault of the worker, not of a guest), counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, job_control: RunControl) -> tuple[None, bool]:
        self.calls += 1
        raise RuntimeError("the worker broke")


@asynccontextmanager
async def supervised(pool: SandboxPool, intensity: RestartIntensity = NEVER) -> AsyncIterator[Supervisor]:
    """`pool` as the `sandbox` child of a root supervisor that runs for the block."""
    root = Supervisor("root", [pool.child_spec(shutdown=30.0)], intensity=intensity, backoff=NO_BACKOFF)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(root.run)
            yield root
            await root.stop()
    finally:
        pool.close()


def worker_names(pool: SandboxPool) -> list[str]:
    return pool.workers.supervisor.children


async def test_the_tree_shows_the_pool_as_a_supervisor_of_its_workers(engine: SandboxEngine) -> None:
    pool = SandboxPool(engine, 3)
    async with supervised(pool) as root:
        assert root.tree() == {
            "name": "root",
            "strategy": "one_for_one",
            "children": [
                {
                    "name": "sandbox",
                    "restart": "permanent",
                    "strategy": "one_for_one",
                    "children": [{"name": f"worker-{n}", "restart": "transient"} for n in (1, 2, 3)],
                }
            ],
        }
        assert worker_names(pool) == ["worker-1", "worker-2", "worker-3"]
        assert pool.workers.live == 3 and pool.workers.started == 3


async def test_a_guest_cancelled_mid_run_ends_once_and_its_worker_is_replaced(engine: SandboxEngine) -> None:
    """A's guest loops until its control is cancelled: its job ends once, `Cancelled`; the worker that ran it
    retires and a fresh one takes its place; B's runs, on the other worker, go on untouched."""
    pool = SandboxPool(engine, 2)
    started = threading.Event()
    calls: list[SandboxOutcome] = []
    stopping = control()

    def endless(job_control: RunControl) -> tuple[SandboxOutcome, bool]:
        started.set()
        outcome = evaluate(engine, evaluation(FOREVER), job_control)
        calls.append(outcome)
        return outcome, ends_worker(outcome)

    async with supervised(pool):
        endings: list[SandboxOutcome] = []
        async with trio.open_nursery() as nursery:

            async def run_a() -> None:
                endings.append(await pool.workers.submit(endless, stopping, owner=A))

            nursery.start_soon(run_a)
            assert await trio.to_thread.run_sync(started.wait, LIVENESS_SECONDS)
            assert isinstance(await pool.run(evaluation(ECHO, "b1"), owner=B), Returned)
            stopping.cancel()
        assert endings == [Cancelled()] and calls == [Cancelled()]
        assert pool.workers.ended == ["job"] and pool.workers.started == 3 and pool.workers.crashed == 0
        await wait_until(lambda: len(worker_names(pool)) == 2 and "worker-3" in worker_names(pool))
        outcome = await pool.run(evaluation(ECHO, "b2"), owner=B)
        assert isinstance(outcome, Returned) and outcome.output == "b2"


async def test_cancelling_the_caller_stops_the_guest_and_retires_its_worker(engine: SandboxEngine) -> None:
    pool = SandboxPool(engine, 1)
    async with supervised(pool):
        with trio.CancelScope() as scope:

            async def cancel_once_running() -> None:
                await wait_until(lambda: pool.workers._gate.running == 1)
                scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(cancel_once_running)
                await pool.run(evaluation(FOREVER))
        assert scope.cancelled_caught
        await pool.workers.wait_until(lambda: pool.workers.ended == ["job"])
        assert isinstance(await pool.run(evaluation(ECHO)), Returned)
        assert pool.workers.started == 2


async def test_a_job_that_raises_in_its_thread_crashes_the_worker_and_its_supervisor_restarts_it(
    engine: SandboxEngine,
) -> None:
    """The caller gets the error once; the same worker (`worker-1`) runs again in a fresh thread; B's job, on
    the other worker all along, finishes with its own answer."""
    pool = SandboxPool(engine, 2, backoff=NO_BACKOFF)
    raising = Raising()
    release_b = threading.Event()
    b_started = threading.Event()

    def b_job(job_control: RunControl) -> tuple[str, bool]:
        b_started.set()
        assert release_b.wait(LIVENESS_SECONDS)
        return "b", False

    async with supervised(pool):
        async with trio.open_nursery() as nursery:
            answers: list[str] = []

            async def run_b() -> None:
                answers.append(await pool.workers.submit(b_job, control(), owner=B))

            nursery.start_soon(run_b)
            assert await trio.to_thread.run_sync(b_started.wait, LIVENESS_SECONDS)
            with pytest.raises(RuntimeError, match="the worker broke"):
                await pool.workers.submit(raising, control(), owner=A)
            assert raising.calls == 1 and pool.workers.crashed == 1
            await pool.workers.wait_until(lambda: pool.workers._idle != [])
            outcome = await pool.run(evaluation(ECHO, "a"), owner=A)
            assert isinstance(outcome, Returned) and outcome.output == "a"
            release_b.set()
        assert answers == ["b"]
        assert pool.workers.started == 2 and pool.workers.ended == []
        assert worker_names(pool) == ["worker-1", "worker-2"]


async def crash(pool: SandboxPool, raising: Raising) -> None:
    with pytest.raises(RuntimeError, match="the worker broke"):
        await pool.workers.submit(raising, control(), owner=A)


async def test_crashes_past_the_pool_intensity_escalate_to_the_root_which_restarts_the_pool(
    engine: SandboxEngine,
) -> None:
    """Two restarts allowed: the third crash makes the pool's supervisor give up; the root restarts the pool
    (a one_for_one root, its `sandbox` child permanent), whose worker runs again."""
    pool = SandboxPool(engine, 1, intensity=RestartIntensity(max_restarts=2, period=3600.0), backoff=NO_BACKOFF)
    raising = Raising()
    failures: list[int] = []
    async with supervised(pool) as root:
        for _ in range(3):
            await crash(pool, raising)
            failures.append(pool.workers.crashed)
        assert raising.calls == 3 and failures == [1, 2, 3]
        outcome = await pool.run(evaluation(ECHO, "after"))
        assert isinstance(outcome, Returned) and outcome.output == "after"
        assert root.children == ["sandbox"] and worker_names(pool) == ["worker-1"]


async def test_the_root_gives_up_when_the_pool_keeps_failing(engine: SandboxEngine) -> None:
    """The root allows one restart of the pool; the pool allows one restart of its worker: the fourth crash
    fails the pool a second time, and the root itself fails (escalating to whoever runs it)."""
    pool = SandboxPool(engine, 1, intensity=RestartIntensity(max_restarts=1, period=3600.0), backoff=NO_BACKOFF)
    raising = Raising()
    root = Supervisor(
        "root",
        [pool.child_spec(shutdown=30.0)],
        intensity=RestartIntensity(max_restarts=1, period=3600.0),
        backoff=NO_BACKOFF,
    )
    failed: list[SupervisorFailedError] = []

    async def run_root(task_status: trio.TaskStatus[None]) -> None:
        try:
            await root.run(task_status=task_status)
        except SupervisorFailedError as error:
            failed.append(error)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(run_root)
            for _ in range(4):
                await crash(pool, raising)
            with pytest.raises(NoWorkerFree):
                await pool.run(evaluation(ECHO), deadline=time.monotonic())
    finally:
        pool.close()
    assert [(error.supervisor, error.child) for error in failed] == [("root", "sandbox")]
    assert isinstance(failed[0].error, SupervisorFailedError) and failed[0].error.supervisor == "sandbox"
    assert raising.calls == 4


async def test_a_crash_leaves_no_job_behind_for_the_next_life(engine: SandboxEngine) -> None:
    """Each job runs at most once: after a crash, the restarted worker runs only the jobs sent to it since."""
    pool = SandboxPool(engine, 1, backoff=NO_BACKOFF)
    raising = Raising()
    seen: list[str] = []

    def noting(label: str) -> Callable[[RunControl], tuple[str, bool]]:
        def job(job_control: RunControl) -> tuple[str, bool]:
            seen.append(label)
            return label, False

        return job

    async with supervised(pool):
        await crash(pool, raising)
        assert await pool.workers.submit(noting("one"), control()) == "one"
        assert await pool.workers.submit(noting("two"), control()) == "two"
    assert seen == ["one", "two"] and raising.calls == 1
