"""prediction-format §13: the model processes, real OS processes running ONNX Runtime under the pool's
supervisor. A process killed mid-job ends the job `failed_to_run`, one past its memory limit `out_of_memory`, one
past its time `timed_out`; each is replaced, and the next job succeeds. Questions keep the processes builds
cannot hold."""

from __future__ import annotations

import base64
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio

from auto_runtime.functions.prediction.model_pool import ModelJobFailed, ModelPool, ModelProcessBusy
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.supervision import Supervisor
from tests.functions.prediction.onnx_models import allocating, candidate, endless

ORG_A = JobOwner("org-a", "forecasts")
ORG_B = JobOwner("org-b", "forecasts")


def _job(model: Path, rows: list[list[float]]) -> dict[str, Any]:
    history = np.asarray(rows, "<f4")
    data = base64.b64encode(history.tobytes()).decode()
    return {"op": "run", "model": str(model), "inputs": {"history": {"shape": list(history.shape), "data": data}}}


def _values(reply: dict[str, Any], name: str) -> list[float]:
    return np.frombuffer(base64.b64decode(reply["outputs"][name]["data"]), "<f4").tolist()


@pytest.fixture
async def pool() -> AsyncIterator[ModelPool]:
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=768)
    async with trio.open_nursery() as nursery:
        root = Supervisor("test-root", [pool.child_spec()])
        await nursery.start(root.run)
        yield pool
        await root.stop()


@pytest.fixture
def models(tmp_path: Path) -> dict[str, Path]:
    made = {
        "good": candidate([[0, 0], [0, 0], [1, 2]], [0.5, 1]),
        "allocating": allocating(3, 2),
        "endless": endless(3, 2),
    }
    paths = {}
    for name, data in made.items():
        paths[name] = tmp_path / f"{name}.onnx"
        paths[name].write_bytes(data)
    return paths


async def test_a_question_runs_its_model(pool: ModelPool, models: dict[str, Path]) -> None:
    reply = await pool.question(_job(models["good"], [[1, 2, 3], [4, 5, 6]]), 10, ORG_A)
    assert _values(reply, "value") == [3, 6, 6, 12]
    assert _values(reply, "low") == [2.5, 5, 5.5, 11]


async def _kill_when_busy(pool: ModelPool) -> int:
    pid = await pool.running_job()
    os.kill(pid, signal.SIGKILL)
    return pid


async def test_a_process_killed_mid_question_ends_it_failed_to_run_and_is_replaced(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    async with trio.open_nursery() as nursery:
        killed: list[int] = []

        async def kill() -> None:
            killed.append(await _kill_when_busy(pool))

        nursery.start_soon(kill)
        with pytest.raises(ModelJobFailed) as failed:
            await pool.question(_job(models["endless"], [[1, 2, 3]]), 600, ORG_A)
    assert failed.value.because == "failed_to_run"
    assert pool.replaced == 1 and pool.live == 1
    assert await pool.probe() != killed[0]
    reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A)
    assert _values(reply, "value") == [3, 6]


async def test_a_process_past_its_memory_limit_ends_the_job_out_of_memory(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    first = await pool.probe()
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["allocating"], [[1, 2, 3]]), 30, ORG_A)
    assert failed.value.because == "out_of_memory"
    assert pool.replaced == 1 and pool.live == 1
    assert await pool.probe() != first
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A), "value") == [3, 6]


async def test_a_model_past_its_time_is_ended_and_replaced(pool: ModelPool, models: dict[str, Path]) -> None:
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["endless"], [[1, 2, 3]]), 1, ORG_A)
    assert failed.value.because == "timed_out"
    assert pool.replaced == 1
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A), "value") == [3, 6]


async def test_a_check_never_waits_and_build_work_keeps_a_process_free_for_questions(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.build_work, _job(models["endless"], [[1, 2, 3]]), 600, ORG_A)
        await pool.running_job()
        with pytest.raises(ModelProcessBusy):
            await pool.check(_job(models["good"], [[1, 2, 3]]), 30, ORG_A)
        reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A)
        assert _values(reply, "value") == [3, 6]
        nursery.cancel_scope.cancel()


async def test_a_cancelled_job_ends_its_process(pool: ModelPool, models: dict[str, Path]) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.build_work, _job(models["endless"], [[1, 2, 3]]), 600, ORG_A)
        await pool.running_job()
        nursery.cancel_scope.cancel()
    assert pool.replaced == 1
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A), "value") == [3, 6]


async def _until(condition: Callable[[], bool]) -> None:
    """Polls the pool's state until `condition` holds (a bounded number of polls: a liveness guard, not a timing
    claim)."""
    for _ in range(6000):
        if condition():
            return
        await trio.sleep(0.01)
    raise AssertionError("the pool never reached the state polled for")


async def test_a_freed_process_goes_to_the_org_served_least_recently(pool: ModelPool, models: dict[str, Path]) -> None:
    """Org A's two endless questions hold both processes and two more of A's wait; B's question, asked after
    them, takes the first process that frees (A's first question cancelled), before A's waiting ones."""
    answered: list[str] = []
    holders = [trio.CancelScope(), trio.CancelScope()]

    async def hold(scope: trio.CancelScope) -> None:
        with scope:
            await pool.question(_job(models["endless"], [[1, 2, 3]]), 600, ORG_A)

    async def ask(owner: JobOwner, label: str) -> None:
        reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10, owner)
        assert _values(reply, "value") == [3, 6]
        answered.append(label)

    async with trio.open_nursery() as nursery:
        for scope in holders:
            nursery.start_soon(hold, scope)
        await _until(lambda: pool.held == 2 and pool.live == 2)  # both started and running their jobs
        for waiting, (owner, label) in enumerate([(ORG_A, "a-1"), (ORG_A, "a-2"), (ORG_B, "b")], start=1):
            nursery.start_soon(ask, owner, label)
            await _until(lambda: pool.waiting == waiting)  # noqa: B023 (awaited before the loop moves on)
        holders[0].cancel()
        await _until(lambda: len(answered) == 3)  # b's job, ended, hands its process to a-1, then a-2
        holders[1].cancel()
    assert answered[0] == "b" and sorted(answered[1:]) == ["a-1", "a-2"]
