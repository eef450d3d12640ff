"""Actors: live by kind, mailbox depth high-water by kind, `MailboxFull` refusals, restarts by supervisor.

An actor's kind is its registry's name without the key of a hosted registry (`run-id-actors[org/playbook]` is
`run-id-actors`), or an actor's name without its key (`org-actors['acme']` is `org-actors`), so the label's
values are bounded by the code. Registries are kept in a weak set (`registry_made`): the live gauge sums
their `live_count` by kind at each collection. The high-water is the deepest mailbox seen since the last
collection, by kind, then starts again. Called on the Trio thread, except the gauges' callbacks, which the
SDK calls at collection (a scrape's thread, or the OTLP reader's): they read plain ints and swap a dict.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Protocol

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from auto_runtime.metrics.state import METERING, members_now

KIND = "auto_runtime.actor.kind"
SUPERVISOR = "auto_runtime.supervisor"


class RegistryLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def live_count(self) -> int: ...


class MailboxLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def pending(self) -> int: ...


_registries: weakref.WeakSet[RegistryLike] = weakref.WeakSet()
_high_water: dict[str, int] = {}


def kind_of(name: str) -> str:
    """A registry's or an actor's name without its key."""
    return name.split("[", 1)[0]


def registry_made(registry: RegistryLike) -> None:
    """Count `registry`'s live actors while it exists (kept whether metrics are on or not: a registry made
    before the metrics were installed is counted too; the set is weak)."""
    _registries.add(registry)


def mailbox_posted(mailbox: MailboxLike) -> None:
    if not METERING.on:
        return
    depth = mailbox.pending
    kind = kind_of(mailbox.name)
    if depth > _high_water.get(kind, 0):
        _high_water[kind] = depth


def mailbox_refused(name: str) -> None:
    if METERING.on:
        METERING.instruments.mailbox_refusals.add(1, {KIND: kind_of(name)})


def restarted(supervisor: str) -> None:
    """One child restarted by `supervisor` (a supervisor's or an actor registry's name)."""
    if METERING.on:
        METERING.instruments.restarts.add(1, {SUPERVISOR: kind_of(supervisor)})


def _live(_: CallbackOptions) -> Iterable[Observation]:
    totals: dict[str, int] = {}
    for registry in members_now(_registries):
        kind = kind_of(registry.name)
        totals[kind] = totals.get(kind, 0) + registry.live_count
    return [Observation(count, {KIND: kind}) for kind, count in totals.items()]


def _depths(_: CallbackOptions) -> Iterable[Observation]:
    global _high_water
    seen, _high_water = _high_water, {}
    return [Observation(depth, {KIND: kind}) for kind, depth in seen.items()]


def observe(meter: Meter) -> None:
    """Register the observable gauges on `meter` (at install)."""
    meter.create_observable_gauge(
        "auto_runtime.actors.live", [_live], unit="{actor}", description="Actors live, by kind."
    )
    meter.create_observable_gauge(
        "auto_runtime.actors.mailbox.high_water",
        [_depths],
        unit="{message}",
        description="The deepest mailbox seen since the last collection, by actor kind.",
    )
