"""The recall host's keeper: wakes on appends and at each sweep, and passes the playbooks that keep views.

Concurrency rules:
- One keeper per server; it passes playbooks only while this server holds the workflow lease (`fence()` is not
  None), so the views are kept where the workflows run and the other servers stand by.
- A wake asks the views actor of every playbook with a recall function or a view row for one pass
  (`views_actor`), at most `RECALL_PLAYBOOKS_AT_ONCE` at once (a `trio.CapacityLimiter`); the next wake waits
  until every pass of this one ended.
- The keeper wakes when this process appends (the ledger's `AppendSignal`, which on PostgreSQL also carries
  other servers' appends) and at least every sweep interval, for records other servers appended.
- A pass that fails (the lease lost, the ledger unavailable) is logged and tried again at the next wake; it
  changes nothing it did not write whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import trio

from auto_runtime.ledger import LeaseFence, Ledger
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.recall_host.playbook_pass import PlaybookPass
from auto_runtime.recall_host.views_actor import PassViews, views_registry
from auto_runtime.sandbox.pool import SandboxPool

log = logging.getLogger("auto_runtime.recall_host")


class ViewKeeper:
    """Keeps every playbook's recall views on this server while it holds the workflow lease."""

    def __init__(
        self,
        ledger: Ledger,
        pool: SandboxPool,
        *,
        max_rebuilds: int,
        playbooks_at_once: int,
        sweep: timedelta,
        limits: ActorLimits | None = None,
    ) -> None:
        self.ledger = ledger
        self.passes = PlaybookPass(ledger, pool, max_rebuilds)
        self.actors = views_registry(self.passes, limits or ActorLimits())
        """The views actors, one per playbook: run it under a supervisor (`actors.child_spec()`) before
        `follow`."""
        self.playbooks_at_once = playbooks_at_once
        self.sweep = sweep

    async def follow(self, fence: Callable[[], LeaseFence | None]) -> None:
        """Wake and pass until cancelled, while `fence()` says this server holds the workflow lease (the workflow
        runtime runs this beside its timer loop: `WorkflowRuntime.add_follower`)."""
        limiter = trio.CapacityLimiter(self.playbooks_at_once)
        while True:
            generation = self.ledger.appended.generation
            if fence() is not None:
                await self.pass_all(limiter, fence)
            with trio.move_on_after(self.sweep.total_seconds()):
                await self.ledger.appended.wait_beyond(generation)

    async def pass_all(self, limiter: trio.CapacityLimiter, fence: Callable[[], LeaseFence | None]) -> None:
        try:
            playbooks = await self.ledger.recall_views.playbooks()
        except Exception:
            log.exception("recall views: the playbooks to pass could not be read")
            return
        async with trio.open_nursery() as nursery:
            for org, playbook in playbooks:
                nursery.start_soon(self._pass_one, limiter, fence, org, playbook)

    async def _pass_one(
        self, limiter: trio.CapacityLimiter, fence: Callable[[], LeaseFence | None], org: str, playbook: str
    ) -> None:
        async with limiter:
            try:
                await self.actors.ask((org, playbook), PassViews(fence), timeout=None)
            except Exception:
                log.exception("recall views: a pass failed", extra={"org": org, "playbook": playbook})
