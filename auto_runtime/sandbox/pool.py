"""The sandbox pool: `COMPUTATION_WORKERS` supervised worker thread actors that evaluate programs, awaited from
Trio. An exception of a job here is a crash of its worker (`JobErrors.CRASH`): `evaluate` answers every
program's ending with an outcome, so one that raises is a fault of the sandbox, restarted by the pool's
supervisor."""

from __future__ import annotations

import time

from auto_runtime.metrics import sandbox_job
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import SandboxOutcome, ends_worker
from auto_runtime.sandbox.workers import WORKER_RESTARTS, JobErrors, Kind, WorkerPool
from auto_runtime.supervision import Backoff, ChildSpec, RestartIntensity
from auto_runtime.telemetry import sandbox_run_span


class SandboxPool:
    """Runs evaluations on `workers` threads; see `workers.WorkerPool` for the lifecycle and waiting rules."""

    def __init__(
        self,
        engine: SandboxEngine,
        workers: int = 4,
        *,
        max_runs: int = 1000,
        idle_seconds: float = 60.0,
        wait_seconds: float = 10.0,
        intensity: RestartIntensity = WORKER_RESTARTS,
        backoff: Backoff | None = None,
    ) -> None:
        if not 1 <= workers <= 64:
            raise ValueError("COMPUTATION_WORKERS is from 1 to 64")
        self.engine = engine
        self.workers = WorkerPool(
            workers,
            name="sandbox",
            max_runs=max_runs,
            idle_seconds=idle_seconds,
            wait_seconds=wait_seconds,
            job_errors=JobErrors.CRASH,
            intensity=intensity,
            backoff=backoff,
        )

    async def run(
        self,
        evaluation: Evaluation,
        deadline: float | None = None,
        kind: Kind = "run",
        owner: JobOwner = UNATTRIBUTED,
    ) -> SandboxOutcome:
        """Evaluate on a free worker before `deadline` (monotonic; default 10 s from now), waiting for one in
        `owner`'s place of the pool's fair queue.

        Raises `NoWorkerFree` when no worker became free within the wait, `RuntimeError` when the pool is
        closed, and the original exception when the worker crashed (its supervisor restarts it).
        Cancelling the caller stops the guest, and its worker ends.
        """
        control = RunControl(deadline if deadline is not None else time.monotonic() + 10.0)
        engine = self.engine

        def job(job_control: RunControl) -> tuple[SandboxOutcome, bool]:
            outcome = evaluate(engine, evaluation, job_control)
            return outcome, ends_worker(outcome)

        with sandbox_run_span(kind), sandbox_job(kind, owner.org) as measured:
            return await self.workers.submit(measured(job), control, kind, owner)

    def child_spec(self, *, shutdown: float) -> ChildSpec:
        """The pool as the tree's `sandbox` child: its supervisor and its workers (see `WorkerPool.child_spec`)."""
        return self.workers.child_spec(shutdown=shutdown)

    def close(self) -> None:
        self.workers.close()
