"""Addressing run actors: `Runs`, the senders' one way to reach a run, and each playbook's `run-actors` registry.

A run's actor lives under its playbook's actor (`playbooks.playbook_host` hosts one `run-actors` registry per
live playbook, made by `run_actors`). Senders ask through `Runs.ask`, which resolves the run's registry through
its playbook's actor (spawning it when it is passivated) in the same synchronous step as the send, waits for
the answer, then asks the run's actor to passivate (it refuses while messages are queued, so the last sender's
ask passivates it). A `Refused` answer is raised in the sender.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from auto_runtime.actors import Registry
from auto_runtime.actors.registry import RegistryStats
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.runs.actor import RunActor, RunKey
from auto_runtime.runs.handlers import RunHandlers
from auto_runtime.runs.messages import Refused, RunMessage
from auto_runtime.supervision import RestartIntensity

R = TypeVar("R")

RUN_ACTORS_INTENSITY = RestartIntensity(max_restarts=100, period=10.0)
"""Crashed lives of one playbook's run actors in 10 s before they escalate to the playbook's actor: each is a
fault inside the runtime that ended one run's message (a workflow input that broke down ends its run `failed`),
so the bound is wide."""

RunRegistry = Registry[RunKey, RunMessage[Any], Any]


def run_actors(
    where: str,
    ledger: Ledger,
    handlers: RunHandlers,
    *,
    max_live: int,
    capacity: int,
    intensity: RestartIntensity,
    stats: RegistryStats,
) -> RunRegistry:
    """One playbook's `run-actors` registry (`where`: "org/playbook"). It keeps no idle sweep (a task each, per
    live playbook): every sender asks its run's actor to passivate once answered."""
    return Registry(
        f"run-actors[{where}]",
        lambda key: RunActor(ledger, key, handlers),
        max_live=max_live,
        idle_timeout=math.inf,
        capacity=capacity,
        intensity=intensity,
        queues_while_stopped=True,
        stats=stats,
    )


class RunRegistries(Protocol):
    """Where each playbook's run actors are hosted (`playbooks.playbook_host.PlaybookActors`)."""

    def run_registry(self, scope: PlaybookScope) -> RunRegistry:
        """The playbook's registry, its actor spawned when passivated."""

    def live_run_registry(self, scope: PlaybookScope) -> RunRegistry | None:
        """The playbook's registry while its actor is live, else None."""

    def live_run_registries(self) -> Iterable[RunRegistry]: ...


class Runs:
    """Senders' view of every run's actor (see the module's rules)."""

    def __init__(self, registries: RunRegistries, handlers: RunHandlers, stats: RegistryStats) -> None:
        self._registries = registries
        self.handlers = handlers
        """The table every run actor handles its messages by; each type's host adds its handlers at start."""
        self.stats = stats

    async def ask(
        self, scope: PlaybookScope, run_id: str, message: RunMessage[R], *, timeout: float | None = None
    ) -> R:
        """Send `message` to the run's actor and answer its reply; raises the error of a `Refused` answer, and
        `MailboxFull` when the run's mailbox is full."""
        key: RunKey = (scope.org, scope.playbook, run_id)
        try:
            answer = await self._registries.run_registry(scope).ask(key, message, timeout=timeout)
        finally:
            self.passivate(scope, run_id)
        if isinstance(answer, Refused):
            raise answer.error
        reply: R = answer
        return reply

    def passivate(self, scope: PlaybookScope, run_id: str) -> None:
        """Ask the run's actor to passivate now (it refuses while messages are queued)."""
        registry = self._registries.live_run_registry(scope)
        if registry is not None:
            registry.passivate((scope.org, scope.playbook, run_id))

    def is_live(self, scope: PlaybookScope, run_id: str) -> bool:
        registry = self._registries.live_run_registry(scope)
        return registry is not None and registry.is_live((scope.org, scope.playbook, run_id))

    @property
    def live_count(self) -> int:
        """Live run actors in every playbook."""
        return sum(registry.live_count for registry in self._registries.live_run_registries())

    @property
    def spawns(self) -> int:
        return self.stats.spawns

    @property
    def restarts(self) -> int:
        return self.stats.restarts
