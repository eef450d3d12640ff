"""The playbook actors and the run actors each one supervises (design §4: run actors under their playbook's actor).

`PlaybookActors` is the registry `playbook-actors` (a child of the `playbooks` supervisor): one actor per
(org, playbook), the one writer of its definitions (`playbook_actor`). Each playbook actor's residency hosts one
child registry of its own, `run-actors[org/playbook]` (`PlaybookRuns`): one actor per run with a message in
hand or queued, the run's one writer (`runs.RunActor`), so a run actor lives only while its playbook's actor
does.

Senders use `runs` (`runs.Runs`), which resolves a run's key through its playbook's actor (spawning it when
it is passivated) in the same step as the send. A playbook actor does not passivate while its children hold a
live actor or a queued message; once its last run actor has passivated it passivates as any idle actor, so
10,000 waiting workflow runs hold no actor, and a passivated playbook holds nothing at all.

Each playbook actor also owns its definitions' parsed documents in the one shared, bounded cache
(`definition_documents.DefinitionDocuments`, `documents`): dropped when it starts or restarts (they are read
again from the ledger's sources as runs ask) and when it leaves the registry.

Faults and escalation (OTP's, with one deliberate stop):
- A run actor that raises is restarted on its run's next message by its playbook's child registry, which counts
  it against `RUN_ACTORS_INTENSITY` for that playbook alone.
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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from auto_runtime.actors import Registry
from auto_runtime.actors.hosting_registry import HostingRegistry
from auto_runtime.actors.registry import RegistryStats
from auto_runtime.functions.function_type import FunctionType
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_documents import DefinitionDocuments
from auto_runtime.playbooks.playbook_actor import PlaybookActor, PlaybookAnswer, PlaybookCommand, PlaybookKey
from auto_runtime.runs import RUN_ACTORS_INTENSITY, RunHandlers, RunRegistry, Runs, run_actors
from auto_runtime.supervision import RestartIntensity

PLAYBOOK_ESCALATIONS = RestartIntensity(max_restarts=3, period=60.0)
"""Escalations from one playbook's run actors its actor restarts after, in 60 s, before it gives up."""

__all__ = ["PLAYBOOK_ESCALATIONS", "RUN_ACTORS_INTENSITY", "PlaybookActors", "PlaybookRuns"]


@dataclass
class PlaybookRuns:
    """The run actors one playbook actor hosts."""

    runs: RunRegistry

    @property
    def registries(self) -> Sequence[Registry[Any, Any, Any]]:
        return (self.runs,)


class PlaybookActors(HostingRegistry[PlaybookKey, PlaybookCommand, PlaybookAnswer, PlaybookRuns]):
    """The registry `playbook-actors`, each actor hosting its playbook's run actors (see the module's rules)."""

    def __init__(
        self,
        ledger: Ledger,
        types: Mapping[str, FunctionType],
        limits: ActorLimits | None = None,
        *,
        run_intensity: RestartIntensity = RUN_ACTORS_INTENSITY,
        escalations: RestartIntensity = PLAYBOOK_ESCALATIONS,
        handlers: RunHandlers | None = None,
    ) -> None:
        limits = limits or ActorLimits()
        kinds = tuple(types)
        self.ledger = ledger
        self.documents = DefinitionDocuments(types)
        """The parsed documents of every playbook's definitions, each playbook's owned by its actor."""
        self.limits = limits
        self.run_intensity = run_intensity
        self.run_stats = RegistryStats()
        super().__init__(
            "playbook-actors",
            lambda key: PlaybookActor(ledger, kinds, key, self.documents),
            self._runs_of,
            escalations=escalations,
            children_names=("run-actors",),
            max_live=limits.max_live,
            idle_timeout=limits.idle_seconds,
            capacity=limits.capacity,
            intensity=limits.intensity,
        )
        self.runs = Runs(self, handlers or RunHandlers(), self.run_stats)
        """Every playbook's run actors, addressed by (scope, run id); each type's host adds its handlers."""

    def _removed(self, key: PlaybookKey) -> None:
        super()._removed(key)
        self.documents.forget(key)

    def _runs_of(self, key: PlaybookKey) -> PlaybookRuns:
        limits = self.limits
        return PlaybookRuns(
            run_actors(
                f"{key[0]}/{key[1]}",
                self.ledger,
                self.runs.handlers,
                max_live=limits.max_live,
                capacity=limits.capacity,
                intensity=self.run_intensity,
                stats=self.run_stats,
            )
        )

    def run_registry(self, scope: PlaybookScope) -> RunRegistry:
        return self.children_of((scope.org, scope.playbook)).runs

    def live_run_registry(self, scope: PlaybookScope) -> RunRegistry | None:
        hosted = self.hosted((scope.org, scope.playbook))
        return hosted.runs if hosted is not None else None

    def live_run_registries(self) -> Iterable[RunRegistry]:
        return [children.runs for children in self.live_children()]
