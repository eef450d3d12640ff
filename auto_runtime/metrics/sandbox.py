"""The sandbox's jobs (`SandboxPool.run` wraps each in `sandbox_job`): workers busy, the wait in the fair
queue, how each evaluation ended and the work it spent.

The wait runs from the submission to the job's start on a worker, measured in the worker's thread when the
job starts. It is labelled by the submitting org's share of the jobs in flight (waiting or running) at
submission, in four buckets (`SHARE_BUCKETS`): with the fair queue, the jobs of an org that holds most of the
load wait while those of an org with a small share go first. The shares are counted on the Trio thread (the
context manager's enter and exit); the instruments are recorded from the worker's thread (they are
thread-safe).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from auto_runtime.metrics.state import METERING

C = TypeVar("C")
R = TypeVar("R")
KIND = "auto_runtime.sandbox.kind"
SHARE = "auto_runtime.sandbox.org_share"
ENDING = "auto_runtime.sandbox.ending"
SHARE_BUCKETS = ((0.25, "0-25%"), (0.5, "25-50%"), (0.75, "50-75%"), (1.0, "75-100%"))

_in_flight: Counter[str] = Counter()


def share_bucket(share: float) -> str:
    return next(label for bound, label in SHARE_BUCKETS if share <= bound or bound == 1.0)


def ending_of(result: Any) -> tuple[str, int | None]:
    """The ending of an evaluation's `(outcome, ends_worker)` (the outcome's class, in snake case) and the work
    it spent, when it says."""
    outcome = result[0] if isinstance(result, tuple) and result else result
    name = type(outcome).__name__
    ending = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
    work = getattr(outcome, "work", None)
    return ending, work if isinstance(work, int) else None


@contextmanager
def sandbox_job(kind: str, org: str) -> Iterator[Callable[[Callable[[C], R]], Callable[[C], R]]]:
    """For the block (one submission): a wrapper of the job that measures it when it runs."""
    if not METERING.on:
        yield _unchanged
        return
    instruments = METERING.instruments
    _in_flight[org] += 1
    share = _in_flight[org] / sum(_in_flight.values())
    instruments.sandbox_share.record(share)
    submitted = time.monotonic()
    kind_attribute = {KIND: kind}

    def measured(job: Callable[[C], R]) -> Callable[[C], R]:
        def run(control: C) -> R:
            instruments.sandbox_wait.record(time.monotonic() - submitted, {KIND: kind, SHARE: share_bucket(share)})
            instruments.sandbox_busy.add(1, kind_attribute)
            try:
                result = job(control)
            except BaseException:
                instruments.sandbox_jobs.add(1, {KIND: kind, ENDING: "crash"})
                raise
            finally:
                instruments.sandbox_busy.add(-1, kind_attribute)
            ending, work = ending_of(result)
            instruments.sandbox_jobs.add(1, {KIND: kind, ENDING: ending})
            if work is not None:
                instruments.sandbox_work.record(work, kind_attribute)
            return result

        return run

    try:
        yield measured
    finally:
        _in_flight[org] -= 1
        if _in_flight[org] <= 0:
            del _in_flight[org]


def _unchanged(job: Callable[[C], R]) -> Callable[[C], R]:
    return job
