"""prediction-format §13: the model processes, real OS processes running ONNX Runtime under the pool's
supervisor. A process killed mid-job ends the job `failed_to_run`, one past its memory limit `out_of_memory`, one
past its time `timed_out`; each is replaced, and the next job succeeds. Questions keep the processes builds
cannot hold."""

from __future__ import annotations

import base64
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio

from auto_runtime.functions.prediction.model_pool import ModelJobFailed, ModelPool, ModelProcessBusy
from auto_runtime.supervision import Supervisor
from tests.functions.prediction.onnx_models import allocating, candidate, endless


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
    reply = await pool.question(_job(models["good"], [[1, 2, 3], [4, 5, 6]]), 10)
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
            await pool.question(_job(models["endless"], [[1, 2, 3]]), 600)
    assert failed.value.because == "failed_to_run"
    assert pool.replaced == 1 and pool.live == 1
    assert await pool.probe() != killed[0]
    reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10)
    assert _values(reply, "value") == [3, 6]


async def test_a_process_past_its_memory_limit_ends_the_job_out_of_memory(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    first = await pool.probe()
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["allocating"], [[1, 2, 3]]), 30)
    assert failed.value.because == "out_of_memory"
    assert pool.replaced == 1 and pool.live == 1
    assert await pool.probe() != first
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10), "value") == [3, 6]


async def test_a_model_past_its_time_is_ended_and_replaced(pool: ModelPool, models: dict[str, Path]) -> None:
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["endless"], [[1, 2, 3]]), 1)
    assert failed.value.because == "timed_out"
    assert pool.replaced == 1
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10), "value") == [3, 6]


async def test_a_check_never_waits_and_build_work_keeps_a_process_free_for_questions(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.build_work, _job(models["endless"], [[1, 2, 3]]), 600)
        await pool.running_job()
        with pytest.raises(ModelProcessBusy):
            await pool.check(_job(models["good"], [[1, 2, 3]]), 30)
        reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10)
        assert _values(reply, "value") == [3, 6]
        nursery.cancel_scope.cancel()


async def test_a_cancelled_job_ends_its_process(pool: ModelPool, models: dict[str, Path]) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.build_work, _job(models["endless"], [[1, 2, 3]]), 600)
        await pool.running_job()
        nursery.cancel_scope.cancel()
    assert pool.replaced == 1
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10), "value") == [3, 6]
