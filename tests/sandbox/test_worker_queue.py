"""The order in which `WorkerPool` hands free workers to waiting jobs: fair across orgs, then across an org's
playbooks, FIFO inside a playbook; folds keep their place within their limit; a waiter that gives up leaves
the queue. Every job blocks on an event the test releases, and the test reads the order in which the jobs
started: nothing here depends on time."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from auto_runtime.sandbox.fair_queue import FairQueue, JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.workers import JobErrors, Kind, NoWorkerFree, WorkerPool
from auto_runtime.supervision import Backoff

LIVENESS_SECONDS = 60.0


class Jobs:
    """Jobs that report their start and then wait for the test to release them."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.starts: queue.SimpleQueue[str] = queue.SimpleQueue()
        self.gates: dict[str, threading.Event] = {}
        self.results: dict[str, object] = {}

    def job(self, label: str) -> object:
        gate = self.gates[label] = threading.Event()

        def run(control: RunControl) -> tuple[str, bool]:
            self.starts.put(label)
            assert gate.wait(LIVENESS_SECONDS), f"{label} was never released"
            return label, False

        return run

    async def submit(self, nursery: trio.Nursery, label: str, owner: JobOwner, kind: Kind = "run") -> None:
        """Start a task that submits the job, and wait until it holds a worker or waits in the queue."""
        job = self.job(label)

        async def send() -> None:
            try:
                self.results[label] = await self.pool.submit(
                    job,  # type: ignore[arg-type]
                    RunControl(time.monotonic() + LIVENESS_SECONDS),
                    kind,
                    owner,
                )
            except NoWorkerFree as error:
                self.results[label] = error

        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()

    async def submit_cancellable(self, nursery: trio.Nursery, label: str, owner: JobOwner) -> trio.CancelScope:
        """Start a task that submits the job inside a scope the test cancels, and wait until it waits or runs."""
        scope = trio.CancelScope()
        job = self.job(label)

        async def gives_up() -> None:
            with scope:
                await self.pool.submit(job, RunControl(time.monotonic() + LIVENESS_SECONDS), owner=owner)  # type: ignore[arg-type]

        nursery.start_soon(gives_up)
        await trio.testing.wait_all_tasks_blocked()
        return scope

    async def next_start(self) -> str:
        label: str = await trio.to_thread.run_sync(lambda: self.starts.get(timeout=LIVENESS_SECONDS))
        return label

    async def serve_all(self, count: int) -> list[str]:
        """Release each job as it starts, `count` of them: the labels in the order they got a worker."""
        order: list[str] = []
        for _ in range(count):
            label = await self.next_start()
            order.append(label)
            self.gates[label].set()
        return order


@pytest.fixture
def one_worker() -> Iterator[WorkerPool]:
    pool = WorkerPool(1, wait_seconds=LIVENESS_SECONDS, idle_seconds=None)
    yield pool
    pool.close()


def waiting(pool: WorkerPool) -> int:
    return len(pool._queue)


A = JobOwner("org-a", "p")
B = JobOwner("org-b", "p")
C = JobOwner("org-c", "p")


async def test_a_free_worker_goes_to_the_org_that_waits_behind_a_busy_one(one_worker: WorkerPool) -> None:
    """Org A holds the only worker and queues three more runs; org B's run, sent last, goes next."""
    jobs = Jobs(one_worker)
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "a0", A)
        assert await jobs.next_start() == "a0"
        for label in ("a1", "a2", "a3"):
            await jobs.submit(nursery, label, A)
        await jobs.submit(nursery, "b1", B)
        assert waiting(one_worker) == 4
        jobs.gates["a0"].set()
        assert await jobs.serve_all(4) == ["b1", "a1", "a2", "a3"]
    assert jobs.results == {label: label for label in ("a0", "a1", "a2", "a3", "b1")}
    assert waiting(one_worker) == 0


async def test_orgs_take_turns(one_worker: WorkerPool) -> None:
    """Round-robin over the waiting orgs, least recently served first, FIFO inside each."""
    jobs = Jobs(one_worker)
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "a0", A)
        assert await jobs.next_start() == "a0"
        for label, owner in (("a1", A), ("a2", A), ("b1", B), ("b2", B), ("c1", C)):
            await jobs.submit(nursery, label, owner)
        jobs.gates["a0"].set()
        assert await jobs.serve_all(5) == ["b1", "c1", "a1", "b2", "a2"]


async def test_playbooks_of_one_org_take_turns(one_worker: WorkerPool) -> None:
    """Inside an org, the playbooks take turns the same way."""
    jobs = Jobs(one_worker)
    p1, p2, p3 = JobOwner("org-a", "p1"), JobOwner("org-a", "p2"), JobOwner("org-a", "p3")
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "p1-0", p1)
        assert await jobs.next_start() == "p1-0"
        for label, owner in (("p1-1", p1), ("p1-2", p1), ("p2-1", p2), ("p2-2", p2), ("p3-1", p3)):
            await jobs.submit(nursery, label, owner)
        jobs.gates["p1-0"].set()
        assert await jobs.serve_all(5) == ["p2-1", "p3-1", "p1-1", "p2-2", "p1-2"]


async def test_orgs_come_before_playbooks(one_worker: WorkerPool) -> None:
    """An org with many playbooks waiting gets no more turns than an org with one."""
    jobs = Jobs(one_worker)
    many = [JobOwner("org-a", f"p{index}") for index in range(3)]
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "hold", C)
        assert await jobs.next_start() == "hold"
        for index, owner in enumerate(many):
            await jobs.submit(nursery, f"a{index}", owner)
        await jobs.submit(nursery, "b1", B)
        await jobs.submit(nursery, "b2", B)
        jobs.gates["hold"].set()
        assert await jobs.serve_all(5) == ["a0", "b1", "a1", "b2", "a2"]


async def test_every_worker_that_frees_serves_the_other_org_first() -> None:
    """Two workers both busy with org A, A's runs queued: B's run goes on the first worker that frees."""
    pool = WorkerPool(2, wait_seconds=LIVENESS_SECONDS, idle_seconds=None)
    jobs = Jobs(pool)
    try:
        async with trio.open_nursery() as nursery:
            await jobs.submit(nursery, "a0", A)
            await jobs.submit(nursery, "a1", A)
            assert {await jobs.next_start(), await jobs.next_start()} == {"a0", "a1"}
            for index in range(2, 6):
                await jobs.submit(nursery, f"a{index}", A)
            await jobs.submit(nursery, "b", B)
            jobs.gates["a1"].set()
            assert await jobs.next_start() == "b"
            jobs.gates["b"].set()
            assert await jobs.next_start() == "a2"
            jobs.gates["a0"].set()
            assert await jobs.next_start() == "a3"
            jobs.gates["a2"].set()
            jobs.gates["a3"].set()
            assert sorted(await jobs.serve_all(2)) == ["a4", "a5"]
    finally:
        pool.close()


async def test_a_cancelled_waiter_leaves_the_queue(one_worker: WorkerPool) -> None:
    jobs = Jobs(one_worker)
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "a0", A)
        assert await jobs.next_start() == "a0"
        cancelled = await jobs.submit_cancellable(nursery, "b1", B)
        await jobs.submit(nursery, "c1", C)
        assert waiting(one_worker) == 2
        cancelled.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert waiting(one_worker) == 1
        jobs.gates["a0"].set()
        assert await jobs.serve_all(1) == ["c1"]
    assert "b1" not in jobs.results and jobs.results["c1"] == "c1"


async def test_a_worker_handed_to_a_waiter_that_was_cancelled_goes_to_the_next(one_worker: WorkerPool) -> None:
    """A0's job, as it returns, cancels B's wait (a callback queued on the Trio thread before the worker's
    reply), so B is cancelled before it runs again: whether the freed worker was handed to B first (B then
    gives it back) or B left the queue first, C gets the worker and B never runs."""
    jobs = Jobs(one_worker)
    token = trio.lowlevel.current_trio_token()
    gate = threading.Event()
    cancelled = trio.CancelScope()

    def a0(control: RunControl) -> tuple[str, bool]:
        jobs.starts.put("a0")
        assert gate.wait(LIVENESS_SECONDS), "a0 was never released"
        token.run_sync_soon(cancelled.cancel)
        return "a0", False

    async def send_a0() -> None:
        jobs.results["a0"] = await one_worker.submit(a0, RunControl(time.monotonic() + LIVENESS_SECONDS), owner=A)

    async def gives_up() -> None:
        with cancelled:
            await one_worker.submit(jobs.job("b1"), RunControl(time.monotonic() + LIVENESS_SECONDS), owner=B)  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send_a0)
        assert await jobs.next_start() == "a0"
        nursery.start_soon(gives_up)
        await trio.testing.wait_all_tasks_blocked()
        await jobs.submit(nursery, "c1", C)
        assert waiting(one_worker) == 2
        gate.set()
        assert await jobs.serve_all(1) == ["c1"]
    assert "b1" not in jobs.results and jobs.results == {"a0": "a0", "c1": "c1"}
    assert one_worker.live == 1 and one_worker.started == 1


async def test_no_worker_free_by_the_deadline_leaves_the_queue(one_worker: WorkerPool) -> None:
    jobs = Jobs(one_worker)
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "a0", A)
        assert await jobs.next_start() == "a0"
        with pytest.raises(NoWorkerFree) as raised:
            await one_worker.submit(jobs.job("b1"), RunControl(time.monotonic()), owner=B)  # type: ignore[arg-type]
        assert raised.value.workers == 1
        assert waiting(one_worker) == 0
        jobs.gates["a0"].set()


async def test_a_fold_keeps_its_place_while_the_folds_limit_holds() -> None:
    """Two workers, one fold at most: a queued fold lets a later run go first, then gets the next worker."""
    pool = WorkerPool(2, wait_seconds=LIVENESS_SECONDS, idle_seconds=None)
    jobs = Jobs(pool)
    try:
        async with trio.open_nursery() as nursery:
            await jobs.submit(nursery, "fold0", A, "fold")
            await jobs.submit(nursery, "run0", A)
            assert {await jobs.next_start(), await jobs.next_start()} == {"fold0", "run0"}
            await jobs.submit(nursery, "fold1", B, "fold")
            await jobs.submit(nursery, "run1", C)
            jobs.gates["run0"].set()
            assert await jobs.next_start() == "run1"
            assert waiting(pool) == 1
            jobs.gates["fold0"].set()
            assert await jobs.next_start() == "fold1"
            jobs.gates["fold1"].set()
            jobs.gates["run1"].set()
        assert pool._busy_folds == 0
    finally:
        pool.close()


async def test_closing_the_pool_wakes_its_waiters(one_worker: WorkerPool) -> None:
    jobs = Jobs(one_worker)
    async with trio.open_nursery() as nursery:
        await jobs.submit(nursery, "a0", A)
        assert await jobs.next_start() == "a0"
        raised: list[BaseException] = []
        woken = trio.Event()

        async def waits() -> None:
            try:
                await one_worker.submit(jobs.job("b1"), RunControl(time.monotonic() + LIVENESS_SECONDS), owner=B)  # type: ignore[arg-type]
            except RuntimeError as error:
                raised.append(error)
            woken.set()

        nursery.start_soon(waits)
        await trio.testing.wait_all_tasks_blocked()
        closing = threading.Thread(target=one_worker.close)
        closing.start()
        await woken.wait()
        jobs.gates["a0"].set()
        await trio.to_thread.run_sync(closing.join)
    assert [str(error) for error in raised] == ["the pool is closed"]
    assert jobs.results == {"a0": "a0"}


def test_the_queue_forgets_all_but_the_orgs_it_served_last() -> None:
    """Memory stays bounded: only the most recent services are remembered, and empty FIFOs are dropped."""
    fair: FairQueue[str] = FairQueue(remembered=3)
    for index in range(10):
        fair.served(JobOwner(f"org-{index}", "p"))
    assert list(fair._org_served) == ["org-7", "org-8", "org-9"]
    fair.add("x", JobOwner("org-9", "p"))
    fair.add("y", JobOwner("org-1", "p"))
    assert fair.pop_next() == "y"
    assert fair.remove("x") and not fair.remove("x")
    assert len(fair) == 0 and fair._waiting == {}


async def test_a_fold_that_crashed_its_worker_lets_the_next_fold_take_an_idle_one() -> None:
    """Two workers, one fold at most; a fold waits at the limit while another worker idles. The running fold's
    job raises (a crash under `JobErrors.CRASH`, its worker restarted only after an hour's back-off): the
    waiting fold takes the idle worker at once, not the crashed one."""
    pool = WorkerPool(
        2,
        wait_seconds=LIVENESS_SECONDS,
        idle_seconds=None,
        job_errors=JobErrors.CRASH,
        backoff=Backoff(initial=3600.0, maximum=3600.0),
    )
    jobs = Jobs(pool)
    gate = threading.Event()

    def breaks(control: RunControl) -> tuple[str, bool]:
        jobs.starts.put("fold0")
        assert gate.wait(LIVENESS_SECONDS), "fold0 was never released"
        raise RuntimeError("the worker broke")

    crashed: list[BaseException] = []
    try:
        pool.prestart()
        async with trio.open_nursery() as nursery:

            async def fold0() -> None:
                try:
                    await pool.submit(breaks, RunControl(time.monotonic() + LIVENESS_SECONDS), "fold", A)
                except RuntimeError as error:
                    crashed.append(error)

            nursery.start_soon(fold0)
            assert await jobs.next_start() == "fold0"
            await jobs.submit(nursery, "fold1", B, "fold")
            assert waiting(pool) == 1 and len(pool._idle) == 1
            gate.set()
            assert await jobs.serve_all(1) == ["fold1"]
        assert [str(error) for error in crashed] == ["the worker broke"]
        assert jobs.results == {"fold1": "fold1"} and pool.crashed == 1 and pool._busy_folds == 0
    finally:
        pool.close()
