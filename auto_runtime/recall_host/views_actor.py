"""The actors that keep recall views: one per playbook with recall functions, in the registry `recall-views`
(a child of the `playbooks` supervisor, beside the playbook actors).

Each message is one pass of the playbook's views (`playbook_pass`). The actor keeps nothing between messages
that the ledger does not hold (the views, their checkpoints and their tries are rows of `recall_views`), so a
new life, after a crash of the actor or after it passivated, resumes every view from its checkpoint and folds
no event twice. One actor per playbook means one pass of a playbook at a time, whoever asks.

Faults: a pass that raises ends that life (the registry logs it and starts the next one on the same mailbox at
the next message); the registry has no restart intensity, so one playbook's faulty views never escalate to the
`playbooks` supervisor. A lost lease (`LeaseLost`) is the expected end of a pass on a server that stopped
holding the workflows: it is answered, not raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from auto_runtime.actors import Actor, Registry
from auto_runtime.ledger import LeaseFence, LeaseLost
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.recall_host.playbook_pass import PlaybookPass

log = logging.getLogger("auto_runtime.recall_host")

ViewsKey = tuple[str, str]
"""(org, playbook)."""


@dataclass(frozen=True)
class PassViews:
    """Pass the playbook's views once, under the lease's fence as `holding()` gives it."""

    holding: Callable[[], LeaseFence | None]


class PlaybookViewsActor(Actor[PassViews, bool]):
    """One life of a playbook's views actor: answers whether the pass ran to its end (False: the lease was lost)."""

    def __init__(self, passes: PlaybookPass, key: ViewsKey) -> None:
        self.passes = passes
        self.key = key

    async def receive(self, message: PassViews) -> bool:
        try:
            await self.passes.run(self.key[0], self.key[1], message.holding)
        except LeaseLost:
            return False
        return True


def views_registry(passes: PlaybookPass, limits: ActorLimits) -> Registry[ViewsKey, PassViews, bool]:
    """The `recall-views` registry: its actors passivate when idle like the playbook actors."""
    return Registry(
        "recall-views",
        lambda key: PlaybookViewsActor(passes, key),
        max_live=limits.max_live,
        idle_timeout=limits.idle_seconds,
        capacity=limits.capacity,
    )
