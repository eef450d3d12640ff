"""prediction-format §13 and design §4: the model processes, real OS processes running ONNX Runtime, each owned by
an actor under the pool's supervisor. A process killed mid-job ends the job `failed_to_run`, one past its memory
limit `out_of_memory`, one past its time `timed_out`; each ends its actor's life, the supervisor restarts the
actor, and the next job succeeds on a new process. Past the supervisor's intensity the failure goes to its parent.
Questions keep the processes builds cannot hold."""

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
from auto_runtime.functions.prediction.model_supervision import ModelProcessesSupervision
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.supervision import (
    NO_BACKOFF,
    ProcessExitedError,
    Restart,
    RestartIntensity,
    Supervisor,
    SupervisorFailedError,
)
from tests.functions.prediction.onnx_models import allocating, candidate, endless

ORG_A = JobOwner("org-a", "forecasts")
ORG_B = JobOwner("org-b", "forecasts")


def _job(model: Path, rows: list[list[float]]) -> dict[str, Any]:
    history = np.asarray(rows, "<f4")
    data = base64.b64encode(history.tobytes()).decode()
    return {"op": "run", "model": str(model), "inputs": {"history": {"shape": list(history.shape), "data": data}}}


def _values(reply: dict[str, Any], name: str) -> list[float]:
    return np.frombuffer(base64.b64decode(reply["outputs"][name]["data"]), "<f4").tolist()


MEMORY_MIB = 768


@pytest.fixture
async def pool() -> AsyncIterator[ModelPool]:
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=MEMORY_MIB)
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
    assert pool.busy == 1
    os.kill(pid, signal.SIGKILL)
    return pid


async def _killed_mid_job(pool: ModelPool, model: Path) -> tuple[int, ModelJobFailed]:
    """Runs `model` (endless) as a question and SIGKILLs its process once the job is on it."""
    killed: list[int] = []

    async def kill() -> None:
        killed.append(await _kill_when_busy(pool))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(kill)
        with pytest.raises(ModelJobFailed) as failed:
            await pool.question(_job(model, [[1, 2, 3]]), 600, ORG_A)
    return killed[0], failed.value


async def _restarted(pool: ModelPool, index: int, lives: int) -> None:
    """Waits until the supervisor has started the `index`-th actor's `lives`-th life and it serves."""
    status = pool.statuses[index]
    await pool.wait_until(lambda: status.lives == lives and status.serving)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_a_process_killed_mid_question_ends_it_failed_to_run_and_its_restarted_actor_serves_the_next(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    killed, failed = await _killed_mid_job(pool, models["endless"])
    assert failed.because == "failed_to_run"
    assert pool.statuses[0].name == "model-process-1"
    assert pool.replaced == 1 and pool.live == 0 and pool.busy == 0 and not _alive(killed)
    await _restarted(pool, 0, lives=2)
    served = await pool.probe()
    assert served != killed and served == pool.statuses[0].pid  # the restarted actor's new process
    assert pool.statuses[1].pid is None  # the other actor never needed one
    reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A)
    assert _values(reply, "value") == [3, 6]


async def test_a_process_past_its_memory_limit_ends_the_job_out_of_memory(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    first = await pool.probe()
    limits = await trio.Path(f"/proc/{first}/limits").read_text()
    (data,) = [line for line in limits.splitlines() if line.startswith("Max data size")]
    assert data.split()[3:5] == [str(MEMORY_MIB * 1024 * 1024)] * 2  # RLIMIT_DATA, soft and hard
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["allocating"], [[1, 2, 3]]), 30, ORG_A)
    assert failed.value.because == "out_of_memory"
    assert pool.replaced == 1 and pool.live == 0
    await _restarted(pool, 0, lives=2)
    assert await pool.probe() != first
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A), "value") == [3, 6]


async def test_a_model_past_its_time_is_ended_and_replaced(pool: ModelPool, models: dict[str, Path]) -> None:
    with pytest.raises(ModelJobFailed) as failed:
        await pool.question(_job(models["endless"], [[1, 2, 3]]), 1, ORG_A)
    assert failed.value.because == "timed_out"
    assert pool.replaced == 1
    assert _values(await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A), "value") == [3, 6]


async def test_a_process_killed_between_jobs_is_restarted_by_the_supervisor(
    pool: ModelPool, models: dict[str, Path]
) -> None:
    first = await pool.probe()
    os.kill(first, signal.SIGKILL)
    await _restarted(pool, 0, lives=2)
    assert pool.live == 0 and pool.replaced == 0  # no job ended it
    assert not _alive(first)
    assert await pool.probe() == pool.statuses[0].pid != first


async def test_a_process_idle_past_the_idle_time_ends_and_its_actor_serves_on() -> None:
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=MEMORY_MIB, idle_seconds=0.2)
    async with trio.open_nursery() as nursery:
        root = Supervisor("test-root", [pool.child_spec()])
        await nursery.start(root.run)
        first = await pool.probe()
        await pool.wait_until(lambda: pool.live == 0)
        assert not _alive(first)
        assert pool.statuses[0].lives == 1 and pool.replaced == 0  # the actor was not restarted
        assert await pool.probe() != first
        await root.stop()


async def test_past_its_intensity_the_pool_supervisor_fails_to_its_parent_which_restarts_it(
    models: dict[str, Path],
) -> None:
    """One restart allowed: the second process killed mid-job makes `model-processes` stop its actors and fail;
    the root, whose rules allow one restart, starts the whole subtree again (the actor that never failed too)."""
    supervision = ModelProcessesSupervision(Restart.PERMANENT, RestartIntensity(1, 3600.0), NO_BACKOFF)
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=MEMORY_MIB, supervision=supervision)
    root = Supervisor("test-root", [pool.child_spec()], intensity=RestartIntensity(1, 3600.0), backoff=NO_BACKOFF)
    async with trio.open_nursery() as nursery:
        await nursery.start(root.run)
        await _restarted(pool, 1, lives=1)
        _, failed = await _killed_mid_job(pool, models["endless"])
        assert failed.because == "failed_to_run"
        await _restarted(pool, 0, lives=2)
        assert pool.statuses[1].lives == 1  # one_for_one: the other actor kept its life
        _, failed = await _killed_mid_job(pool, models["endless"])
        assert failed.because == "failed_to_run"
        await _restarted(pool, 1, lives=2)  # the subtree was restarted by its parent
        await _restarted(pool, 0, lives=3)
        assert pool.live == 0 and pool.replaced == 2
        reply = await pool.question(_job(models["good"], [[1, 2, 3]]), 10, ORG_A)
        assert _values(reply, "value") == [3, 6]
        await root.stop()


async def test_a_supervisor_past_its_intensity_stops_every_actor_and_raises() -> None:
    """No restart allowed and no parent: the first process that dies makes `run` raise, every actor stopped."""
    supervision = ModelProcessesSupervision(Restart.PERMANENT, RestartIntensity(0, 3600.0), NO_BACKOFF)
    pool = ModelPool(processes=2, builds_at_once=1, memory_mib=MEMORY_MIB, supervision=supervision)
    failures: list[SupervisorFailedError] = []

    async def supervise(task_status: trio.TaskStatus[None]) -> None:
        try:
            await pool.supervisor.run(task_status=task_status)
        except SupervisorFailedError as failure:
            failures.append(failure)

    async with trio.open_nursery() as nursery:
        await nursery.start(supervise)
        pid = await pool.probe()
        os.kill(pid, signal.SIGKILL)  # between jobs: the actor's watcher fails its life
    (failure,) = failures
    assert failure.supervisor == "model-processes" and failure.child == "model-process-1"
    assert isinstance(failure.error, ProcessExitedError) and failure.error.returncode == -signal.SIGKILL
    assert not any(status.serving for status in pool.statuses) and pool.live == 0
    assert [status.lives for status in pool.statuses] == [1, 1]


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
        await pool.wait_until(lambda: pool.held == 2 and pool.live == 2)  # both started and running their jobs
        for waiting, (owner, label) in enumerate([(ORG_A, "a-1"), (ORG_A, "a-2"), (ORG_B, "b")], start=1):
            nursery.start_soon(ask, owner, label)
            await pool.wait_until(lambda: pool.waiting == waiting)  # noqa: B023 (awaited before the loop moves on)
        holders[0].cancel()
        await pool.wait_until(lambda: len(answered) == 3)  # b's job, ended, hands its process to a-1, then a-2
        holders[1].cancel()
    assert answered[0] == "b" and sorted(answered[1:]) == ["a-1", "a-2"]
