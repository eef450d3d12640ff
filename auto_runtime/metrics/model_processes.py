"""The prediction functions' model processes: live and busy (observed from the pool at each collection) and
replaced (a counter the pool keeps). `watch` is called once by the pool; the pool is held weakly."""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Protocol

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from auto_runtime.metrics.state import members_now


class PoolLike(Protocol):
    @property
    def live(self) -> int: ...

    @property
    def busy(self) -> int: ...

    @property
    def replaced(self) -> int: ...


_pools: weakref.WeakSet[PoolLike] = weakref.WeakSet()


def watch(pool: PoolLike) -> None:
    _pools.add(pool)


def _live(_: CallbackOptions) -> Iterable[Observation]:
    return [Observation(sum(pool.live for pool in members_now(_pools)))]


def _busy(_: CallbackOptions) -> Iterable[Observation]:
    return [Observation(sum(pool.busy for pool in members_now(_pools)))]


def _replaced(_: CallbackOptions) -> Iterable[Observation]:
    return [Observation(sum(pool.replaced for pool in members_now(_pools)))]


def observe(meter: Meter) -> None:
    meter.create_observable_gauge(
        "auto_runtime.model_processes.live", [_live], unit="{process}", description="Model processes alive."
    )
    meter.create_observable_gauge(
        "auto_runtime.model_processes.busy", [_busy], unit="{process}", description="Model processes running a job."
    )
    meter.create_observable_counter(
        "auto_runtime.model_processes.replaced",
        [_replaced],
        unit="{process}",
        description="Model processes ended by their job (a crash, a timeout, out of memory) and replaced.",
    )
