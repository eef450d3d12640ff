"""The actors that keep recall views: a playbook's views actor, the supervisor of one actor per view.

`RecallViews` is the registry `recall-views` (a child of the `playbooks` supervisor, beside the playbook
actors): one actor per (org, playbook) with recall functions, whose residency hosts its playbook's child
registry `recall-view-actors[org/playbook]`, one actor per view (`view_actor.ViewActor`, holding the view's row),
as the playbook actors host their runs' actors (`actors.hosting_registry`).

Each message of a playbook's actor is one pass of its views (`playbook_pass`): it reads the definitions and
the history's pages once for the playbook and hands each view's actor its part of each page to fold. One actor
per playbook means one pass of a playbook at a time, whoever asks.

Faults and escalation:
- A view actor that raises (its row unreadable, the ledger failing its write) is restarted on its next message
  from its checkpoint row, counted against `VIEW_ACTORS_INTENSITY` for its playbook alone; the pass leaves that
  view for the next pass and the playbook's other views go on.
- Past that intensity the child registry fails and escalates to the playbook's actor: its pass is cancelled,
  and it restarts at once with a fresh child registry (every view resumes from its checkpoint row), up to
  `VIEWS_ESCALATIONS` for that playbook; past that it gives up and starts afresh at its next pass. Escalations
  never count against the `recall-views` registry's own intensity, so one playbook's faulty views never reach
  the `playbooks` supervisor.
- A pass that raises ends that life of the playbook's actor (the registry logs it and starts the next one on
  the same mailbox at the next message). A lost lease (`LeaseLost`) is the expected end of a pass on a server
  that stopped holding the workflows: it is answered, not raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from auto_runtime.actors import Actor, Registry
from auto_runtime.actors.hosting_registry import HostingRegistry
from auto_runtime.ledger import LeaseFence, LeaseLost, Ledger
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.recall_host.playbook_pass import PlaybookPass
from auto_runtime.recall_host.view_actor import FoldAnswer, FoldPart, ViewActor
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.supervision import RestartIntensity

log = logging.getLogger("auto_runtime.recall_host")

ViewsKey = tuple[str, str]
"""(org, playbook)."""
VIEW_ACTORS_INTENSITY = RestartIntensity(max_restarts=10, period=10.0)
"""Crashed lives of one playbook's view actors in 10 s before they escalate to the playbook's views actor."""
VIEWS_ESCALATIONS = RestartIntensity(max_restarts=3, period=60.0)
"""Escalations from one playbook's view actors its views actor restarts after, in 60 s, before it gives up."""


@dataclass(frozen=True)
class PassViews:
    """Pass the playbook's views once, under the lease's fence as `holding()` gives it."""

    holding: Callable[[], LeaseFence | None]


@dataclass
class PlaybookViews:
    """The child registry one playbook's views actor hosts: its views' actors, keyed by function name."""

    views: Registry[str, FoldPart, FoldAnswer]

    @property
    def registries(self) -> Sequence[Registry[Any, Any, Any]]:
        return (self.views,)


class PlaybookViewsActor(Actor[PassViews, bool]):
    """One life of a playbook's views actor: answers whether the pass ran to its end (False: the lease was lost)."""

    def __init__(self, passes: PlaybookPass, key: ViewsKey, children: Callable[[], PlaybookViews]) -> None:
        self.passes = passes
        self.key = key
        self.children = children

    async def receive(self, message: PassViews) -> bool:
        try:
            await self.passes.run(self.key[0], self.key[1], message.holding, self._fold)
        except LeaseLost:
            return False
        return True

    async def _fold(self, name: str, part: FoldPart) -> FoldAnswer:
        return await self.children().views.ask(name, part, timeout=None)


class RecallViews(HostingRegistry[ViewsKey, PassViews, bool, PlaybookViews]):
    """The registry `recall-views`, each actor hosting its playbook's view actors (see the module's rules)."""

    def __init__(
        self,
        ledger: Ledger,
        pool: SandboxPool,
        passes: PlaybookPass,
        limits: ActorLimits,
        *,
        view_intensity: RestartIntensity = VIEW_ACTORS_INTENSITY,
        escalations: RestartIntensity = VIEWS_ESCALATIONS,
    ) -> None:
        self.ledger = ledger
        self.pool = pool
        self.limits = limits
        self.view_intensity = view_intensity
        super().__init__(
            "recall-views",
            lambda key: PlaybookViewsActor(passes, key, lambda: self.children_of(key)),
            self._views_of,
            escalations=escalations,
            children_names=("recall-view-actors",),
            max_live=limits.max_live,
            idle_timeout=limits.idle_seconds,
            capacity=limits.capacity,
        )

    def _views_of(self, key: ViewsKey) -> PlaybookViews:
        """A playbook's view actors: they passivate when idle, and their playbook's actor with them."""
        org, playbook = key
        return PlaybookViews(
            Registry(
                f"recall-view-actors[{org}/{playbook}]",
                lambda name: ViewActor(self.ledger, self.pool, org, playbook, name),
                max_live=self.limits.max_live,
                idle_timeout=self.limits.idle_seconds,
                capacity=self.limits.capacity,
                intensity=self.view_intensity,
                queues_while_stopped=True,
            )
        )
