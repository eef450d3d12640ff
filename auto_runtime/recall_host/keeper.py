"""The recall host's keeper: passes a playbook's views when this server appends to it, and every playbook that
keeps views at each sweep.

Concurrency rules:
- One keeper per server; it passes a playbook's views only while this server holds the playbook's partition
  (`fences.of_key("org/playbook")` is not None), each pass under that partition's fence, so each playbook's
  views are kept by one server and the playbooks are spread over the servers as their partitions are.
- An append of this process wakes the pass of the playbooks it wrote to, and of no other (the ledger's
  `ScopesAppended`): the work of an append does not grow with the number of playbooks. At each sweep (and when
  the keeper starts) every playbook with a recall function or a view row is passed, for the records other
  servers appended (on PostgreSQL) and for anything a failed pass left.
- A pass asks the playbook's views actor (`views_actor`). A playbook is never passed twice at once: an append
  to a playbook whose pass is in flight marks it to be passed again once that pass ends, so no record waits for
  the sweep. At most `RECALL_PLAYBOOKS_AT_ONCE` passes run at once (a `trio.CapacityLimiter`), the others wait
  their turn, so a long rebuild in one playbook never holds back another playbook's views.
- Each pass logs `recall_pass_started` and `recall_pass_ended` (debug, with its org and playbook) inside the
  limiter: what the passes did, in order, without a clock.
- A pass that fails (the lease lost, the ledger unavailable) is logged and tried again at the next wake; it
  changes nothing it did not write whole.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

import trio

from auto_runtime.ledger import Fences, LeaseFence, Ledger, playbook_key
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.recall_host.playbook_pass import PlaybookPass
from auto_runtime.recall_host.views_actor import PassViews, RecallViews, ViewsKey
from auto_runtime.sandbox.pool import SandboxPool

log = logging.getLogger("auto_runtime.recall_host")


class ViewKeeper:
    """Keeps the recall views of the playbooks whose partitions this server holds."""

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
        self.passes = PlaybookPass(ledger, max_rebuilds)
        self.actors = RecallViews(ledger, pool, self.passes, limits or ActorLimits())
        """The views actors, one per playbook, each the supervisor of its views' actors: run it under a
        supervisor (`actors.child_spec()`) before `follow`."""
        self.playbooks_at_once = playbooks_at_once
        self.sweep = sweep

    async def follow(self, fences: Fences) -> None:
        """Wake and pass until cancelled the playbooks whose partitions `fences` answers (the workflow runtime
        runs this beside its timer loop: `WorkflowRuntime.add_follower`)."""
        passes = _Passes(trio.CapacityLimiter(self.playbooks_at_once), fences)
        wakes = _Wakes()
        with self.ledger.scopes_appended.listening(wakes.heard):
            async with trio.open_nursery() as nursery:
                passes.nursery = nursery
                next_sweep = trio.current_time()
                while True:
                    sweeping = trio.current_time() >= next_sweep
                    if sweeping:
                        next_sweep = trio.current_time() + self.sweep.total_seconds()
                    appended = wakes.take()
                    for key in await self._to_pass(sweeping, appended):
                        if passes.fence_of(key)() is not None:
                            passes.start(key, self._pass_one)
                    with trio.move_on_at(next_sweep):
                        await wakes.wait()

    async def _to_pass(self, sweeping: bool, appended: set[ViewsKey]) -> list[ViewsKey]:
        """The playbooks to pass now: at a sweep every one that keeps views, else those appended to that do."""
        try:
            if sweeping:
                return await self.ledger.recall_views.playbooks()
            return [key for key in sorted(appended) if await self.ledger.recall_views.keeps_views(*key)]
        except Exception:
            log.exception("recall views: the playbooks to pass could not be read")
            return []

    async def _pass_one(self, passes: _Passes, key: ViewsKey) -> None:
        try:
            async with passes.limiter:
                log.debug("recall_pass_started", extra={"org": key[0], "playbook": key[1]})
                try:
                    await self.actors.ask(key, PassViews(passes.fence_of(key)), timeout=None)
                finally:
                    log.debug("recall_pass_ended", extra={"org": key[0], "playbook": key[1]})
        except Exception:
            log.exception("recall views: a pass failed", extra={"org": key[0], "playbook": key[1]})


class _Wakes:
    """The playbooks this process appended to since the keeper last looked (Trio thread only)."""

    def __init__(self) -> None:
        self._appended: set[ViewsKey] = set()
        self._event = trio.Event()

    def heard(self, scope_keys: frozenset[str]) -> None:
        for scope_key in scope_keys:
            parts = scope_key.split("/")
            if len(parts) == 3 and parts[0] == "playbook":
                self._appended.add((parts[1], parts[2]))
        if self._appended:
            self._event.set()

    def take(self) -> set[ViewsKey]:
        taken, self._appended = self._appended, set()
        self._event = trio.Event()
        return taken

    async def wait(self) -> None:
        await self._event.wait()


class _Passes:
    """The passes in flight, one at most per playbook; a playbook asked for again meanwhile is passed once more
    when its pass ends (bounded: one mark per playbook)."""

    def __init__(self, limiter: trio.CapacityLimiter, fences: Fences) -> None:
        self.limiter = limiter
        self.fences = fences
        self.nursery: trio.Nursery | None = None
        self._passing: set[ViewsKey] = set()
        self._again: set[ViewsKey] = set()

    def fence_of(self, key: ViewsKey) -> Callable[[], LeaseFence | None]:
        """The fence of the playbook's partition, asked afresh at each call."""
        return lambda: self.fences.of_key(playbook_key(*key))

    def start(self, key: ViewsKey, run: Callable[[_Passes, ViewsKey], Awaitable[None]]) -> None:
        if key in self._passing:
            self._again.add(key)
            return
        assert self.nursery is not None
        self._passing.add(key)
        self.nursery.start_soon(self._run, key, run)

    async def _run(self, key: ViewsKey, run: Callable[[_Passes, ViewsKey], Awaitable[None]]) -> None:
        try:
            while True:
                self._again.discard(key)
                await run(self, key)
                if key not in self._again or self.fence_of(key)() is None:
                    return
        finally:
            self._passing.discard(key)
            self._again.discard(key)
