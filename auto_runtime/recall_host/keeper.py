"""The recall host's keeper: wakes on appends and at each sweep, and passes the playbooks that keep views.

Concurrency rules:
- One keeper per server; it passes playbooks only while this server holds the workflow lease (`fence()` is not
  None), so the views are kept where the workflows run and the other servers stand by.
- A wake asks the views actor of every playbook with a recall function or a view row for one pass
  (`views_actor`), unless a pass of that playbook is still in flight; at most `RECALL_PLAYBOOKS_AT_ONCE` passes
  run at once (a `trio.CapacityLimiter`), the others wait their turn. So a long rebuild in one playbook never
  holds back another playbook's views.
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
        passing: set[tuple[str, str]] = set()
        async with trio.open_nursery() as nursery:
            while True:
                generation = self.ledger.appended.generation
                if fence() is not None:
                    await self._start_passes(nursery, limiter, fence, passing)
                with trio.move_on_after(self.sweep.total_seconds()):
                    await self.ledger.appended.wait_beyond(generation)

    async def _start_passes(
        self,
        nursery: trio.Nursery,
        limiter: trio.CapacityLimiter,
        fence: Callable[[], LeaseFence | None],
        passing: set[tuple[str, str]],
    ) -> None:
        """Start a pass of every playbook that keeps views and is not being passed already (a pass in flight reads
        the history again at each page, so it takes what was appended meanwhile)."""
        try:
            playbooks = await self.ledger.recall_views.playbooks()
        except Exception:
            log.exception("recall views: the playbooks to pass could not be read")
            return
        for key in playbooks:
            if key not in passing:
                passing.add(key)
                nursery.start_soon(self._pass_one, limiter, fence, key, passing)

    async def _pass_one(
        self,
        limiter: trio.CapacityLimiter,
        fence: Callable[[], LeaseFence | None],
        key: tuple[str, str],
        passing: set[tuple[str, str]],
    ) -> None:
        try:
            async with limiter:
                await self.actors.ask(key, PassViews(fence), timeout=None)
        except Exception:
            log.exception("recall views: a pass failed", extra={"org": key[0], "playbook": key[1]})
        finally:
            passing.discard(key)
