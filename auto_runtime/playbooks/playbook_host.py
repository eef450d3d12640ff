"""The playbook actors and the run actors each one supervises (design §4: run actors under their playbook's actor).

`PlaybookActors` is the registry `playbook-actors` (a child of the `playbooks` supervisor): one actor per
(org, playbook), the one writer of its definitions (`playbook_actor`). Each playbook actor's residency hosts two
child registries of its own (`PlaybookRuns`), so a run actor lives only while its playbook's actor does:

- `run-id-actors[org/playbook]`: one actor per run id a request is running (`run_actor.RunIdActor`); a
  computation or reasoning run lives in one from `run_started` to its ending;
- `run-actors[org/playbook]`: one actor per workflow run with inputs to apply (`run_actor.KeptStateActor`,
  holding the decoded engine state while inputs are queued; `workflow_host.run_actor` builds its inputs).

Senders use `RunActors` (one per kind), which resolve a run's key through its playbook's actor (spawning it when
it is passivated) in the same step as the send. A playbook actor does not passivate while its children hold a
live actor or a queued message; once its last run actor has passivated it passivates as any idle actor, so
10,000 waiting workflow runs hold no actor, and a passivated playbook holds nothing at all.

Each playbook actor also owns its definitions' parsed documents in the one shared, bounded cache
(`definition_documents.DefinitionDocuments`, `documents`): dropped when it starts or restarts (they are read
again from the ledger's sources as runs ask) and when it leaves the registry.

Faults and escalation (OTP's, with one deliberate stop):
- A run actor that raises is restarted on its run's next message by its playbook's child registry, which counts
  it against `RUN_ID_ACTORS_INTENSITY` or `RUN_ACTORS_INTENSITY` for that playbook alone.
- Past that, the child registry fails and escalates to the playbook actor: its life and its other run actors
  are cancelled (their in-flight and queued asks answered `ActorStoppedError`, which the dispatcher answers
  `unavailable` with `Retry-After`: a computation run cut off this way is `started` without an ending, and a
  request under its id runs it again, as after a crash), and the playbook actor restarts at once: a new
  instance rebuilding its definitions from the ledger, fresh run registries.
- Past `PLAYBOOK_ESCALATIONS` (for that playbook alone) the playbook actor gives up: what it has queued is
  refused and it leaves the registry; its next message starts it afresh. This is where escalation ends: the
  `playbooks` supervisor and the root use OTP's 1 restart in 5 s, and a user's workflow or program that keeps
  breaking the runtime must not be able to spend those and stop the whole server, so escalations are counted
  per playbook and never against the `playbook-actors` registry's own intensity (which still counts the
  playbook actors' own crashes and failed starts, faults of the server rather than of one playbook's runs).
  Other playbooks' actors and runs are untouched throughout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from auto_runtime.actors import DEFAULT_ASK_TIMEOUT, Registry
from auto_runtime.actors.hosting_registry import HostingRegistry
from auto_runtime.actors.registry import RegistryStats
from auto_runtime.functions.function_type import FunctionType
from auto_runtime.ledger import Ledger
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_documents import DefinitionDocuments
from auto_runtime.playbooks.playbook_actor import PlaybookActor, PlaybookAnswer, PlaybookCommand, PlaybookKey
from auto_runtime.playbooks.run_actor import KeptStateActor, RunIdActor, RunIdKey, RunRefused, RunStep, RunUnderId
from auto_runtime.supervision import RestartIntensity

RUN_ID_ACTORS_INTENSITY = RestartIntensity(max_restarts=10, period=10.0)
"""Crashed lives of one playbook's run id actors in 10 s before they escalate to the playbook's actor."""
RUN_ACTORS_INTENSITY = RestartIntensity(max_restarts=100, period=10.0)
"""Broken-down inputs of one playbook's workflow runs in 10 s before they escalate to the playbook's actor:
each one is a fault inside the runtime that ended one run `failed`, so the bound is wide."""
PLAYBOOK_ESCALATIONS = RestartIntensity(max_restarts=3, period=60.0)
"""Escalations from one playbook's run actors its actor restarts after, in 60 s, before it gives up."""

RunIdAnswer = dict[str, Any] | RunRefused


@dataclass
class PlaybookRuns:
    """The run actors one playbook actor hosts: its run ids' and its workflow runs'."""

    run_ids: Registry[RunIdKey, RunUnderId, RunIdAnswer]
    inputs: Registry[RunIdKey, RunStep, Any]

    @property
    def registries(self) -> Sequence[Registry[Any, Any, Any]]:
        return (self.run_ids, self.inputs)


@dataclass
class RunActorStats:
    """The counters every playbook's run actors of one kind share."""

    run_ids: RegistryStats = field(default_factory=RegistryStats)
    inputs: RegistryStats = field(default_factory=RegistryStats)


class PlaybookActors(HostingRegistry[PlaybookKey, PlaybookCommand, PlaybookAnswer, PlaybookRuns]):
    """The registry `playbook-actors`, each actor hosting its playbook's run actors (see the module's rules)."""

    def __init__(
        self,
        ledger: Ledger,
        types: Mapping[str, FunctionType],
        limits: ActorLimits | None = None,
        *,
        run_id_intensity: RestartIntensity = RUN_ID_ACTORS_INTENSITY,
        run_intensity: RestartIntensity = RUN_ACTORS_INTENSITY,
        escalations: RestartIntensity = PLAYBOOK_ESCALATIONS,
    ) -> None:
        limits = limits or ActorLimits()
        kinds = tuple(types)
        self.documents = DefinitionDocuments(types)
        """The parsed documents of every playbook's definitions, each playbook's owned by its actor."""
        self.limits = limits
        self.run_id_intensity = run_id_intensity
        self.run_intensity = run_intensity
        self.run_stats = RunActorStats()
        super().__init__(
            "playbook-actors",
            lambda key: PlaybookActor(ledger, kinds, key, self.documents),
            self._runs_of,
            escalations=escalations,
            children_names=("run-id-actors", "run-actors"),
            max_live=limits.max_live,
            idle_timeout=limits.idle_seconds,
            capacity=limits.capacity,
            intensity=limits.intensity,
        )
        self.run_ids: RunActors[RunUnderId, RunIdAnswer] = RunActors(
            self, lambda runs: runs.run_ids, self.run_stats.run_ids
        )
        """The run id actors of every playbook, addressed by (org, playbook, run id)."""
        self.inputs: RunActors[RunStep, Any] = RunActors(self, lambda runs: runs.inputs, self.run_stats.inputs)
        """The workflow runs' input actors of every playbook, addressed by (org, playbook, run id)."""

    def _removed(self, key: PlaybookKey) -> None:
        super()._removed(key)
        self.documents.forget(key)

    def _runs_of(self, key: PlaybookKey) -> PlaybookRuns:
        """A playbook's run registries. They keep no idle sweep (a task each, per live playbook): every sender
        asks its run's actor to passivate once answered (`RunService.run_definition`, `RunStore.apply_input`),
        and a run actor refuses only while messages are queued, so the last one's asker passivates it."""
        where = f"{key[0]}/{key[1]}"
        limits = self.limits
        return PlaybookRuns(
            run_ids=Registry(
                f"run-id-actors[{where}]",
                lambda run: RunIdActor(),
                max_live=limits.max_live,
                idle_timeout=math.inf,
                capacity=limits.capacity,
                intensity=self.run_id_intensity,
                queues_while_stopped=True,
                stats=self.run_stats.run_ids,
            ),
            inputs=Registry(
                f"run-actors[{where}]",
                lambda run: KeptStateActor(),
                max_live=limits.max_live,
                idle_timeout=math.inf,
                capacity=limits.capacity,
                intensity=self.run_intensity,
                queues_while_stopped=True,
                stats=self.run_stats.inputs,
            ),
        )


M = TypeVar("M")
R = TypeVar("R")


class RunActors(Generic[M, R]):
    """Senders' view of one kind of run actor across every playbook: `ask` reaches the run's actor through its
    playbook's actor (spawned when passivated) in one synchronous step, as `Registry.ask` would."""

    def __init__(
        self, host: PlaybookActors, pick: Callable[[PlaybookRuns], Registry[RunIdKey, M, R]], stats: RegistryStats
    ) -> None:
        self.host = host
        self._pick = pick
        self.stats = stats

    def _registry(self, key: RunIdKey) -> Registry[RunIdKey, M, R]:
        return self._pick(self.host.children_of((key[0], key[1])))

    async def ask(self, key: RunIdKey, message: M, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> R:
        return await self._registry(key).ask(key, message, timeout=timeout)

    def passivate(self, key: RunIdKey) -> None:
        """Ask the run's actor to passivate now (it refuses while messages are queued)."""
        runs = self.host.hosted((key[0], key[1]))
        if runs is not None:
            self._pick(runs).passivate(key)

    def is_live(self, key: RunIdKey) -> bool:
        runs = self.host.hosted((key[0], key[1]))
        return runs is not None and self._pick(runs).is_live(key)

    @property
    def live_count(self) -> int:
        """Live run actors of this kind in every playbook."""
        return sum(self._pick(runs).live_count for runs in self.host.live_children())

    @property
    def spawns(self) -> int:
        return self.stats.spawns

    @property
    def restarts(self) -> int:
        return self.stats.restarts
