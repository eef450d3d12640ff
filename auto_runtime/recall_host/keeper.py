"""The recall host's keeper: passes a playbook's views when this server appends to it, and every playbook that
keeps views at each sweep.

Concurrency rules:
- One keeper per server; it passes a playbook's views only while this server holds the playbook's partition
  (`fences.of_key("org/playbook")` is not None), each pass under that partition's fence, so each playbook's
  views are kept by one server and the playbooks are spread over the servers as their partitions are.
- An append of this process wakes the pass of the playbooks it wrote to, and of no other (the ledger's
  `StreamsAppended`): the work of an append does not grow with the number of playbooks. At each sweep (and when
  the keeper starts) every playbook with a recall function or a view row is passed, for the records other
  servers appended (on PostgreSQL) and for anything a failed pass left.
- A playbook found to keep no views (no recall function, no view row) is remembered so (`_WithoutViews`), so
  appends to it cost no read of the ledger until one can change that: a save of one of its definitions by this
  process (an append to its `definitions/...` streams) forgets it at once, and every sweep forgets them all (a
  definition another server saved is seen there, as its appends are). A view row is only ever written by a pass,
  and a pass only starts for a playbook that keeps views, so no other change can make one.
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
from cachetools import LRUCache

from auto_runtime.ledger import Fences, LeaseFence, Ledger, playbook_key
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.recall_host.playbook_pass import PlaybookPass
from auto_runtime.recall_host.views_actor import PassViews, RecallViews, ViewsKey
from auto_runtime.sandbox.pool import SandboxPool

log = logging.getLogger("auto_runtime.recall_host")

WITHOUT_VIEWS_KEPT = 4_096
"""How many playbooks the keeper remembers as keeping no views (least recently appended to forgotten first)."""


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
        with self.ledger.streams_appended.listening(wakes.heard):
            async with trio.open_nursery() as nursery:
                passes.nursery = nursery
                without = _WithoutViews()
                next_sweep = trio.current_time()
                while True:
                    sweeping = trio.current_time() >= next_sweep
                    if sweeping:
                        next_sweep = trio.current_time() + self.sweep.total_seconds()
                    appended, redefined = wakes.take()
                    for key in redefined:
                        without.forget(key)
                    if sweeping:
                        without.clear()
                    for key in await self._to_pass(sweeping, appended, without):
                        if passes.fence_of(key)() is not None:
                            passes.start(key, self._pass_one)
                    with trio.move_on_at(next_sweep):
                        await wakes.wait()

    async def _to_pass(self, sweeping: bool, appended: set[ViewsKey], without: _WithoutViews) -> list[ViewsKey]:
        """The playbooks to pass now: at a sweep every one that keeps views, else those appended to that do (those
        remembered to keep none are not asked again)."""
        try:
            if sweeping:
                return await self.ledger.recall_views.playbooks()
            chosen = []
            for key in sorted(appended):
                if key in without:
                    continue
                if await self.ledger.recall_views.keeps_views(*key):
                    chosen.append(key)
                else:
                    without.remember(key)
            return chosen
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


class _WithoutViews:
    """The playbooks last found to keep no views (see the module's rules), at most `WITHOUT_VIEWS_KEPT`."""

    def __init__(self) -> None:
        self._keys: LRUCache[ViewsKey, None] = LRUCache(WITHOUT_VIEWS_KEPT)

    def __contains__(self, key: ViewsKey) -> bool:
        return key in self._keys

    def remember(self, key: ViewsKey) -> None:
        self._keys[key] = None

    def forget(self, key: ViewsKey) -> None:
        self._keys.pop(key, None)

    def clear(self) -> None:
        self._keys.clear()


class _Wakes:
    """The playbooks this process appended to since the keeper last looked, and those of them whose definitions it
    changed (Trio thread only)."""

    def __init__(self) -> None:
        self._appended: set[ViewsKey] = set()
        self._redefined: set[ViewsKey] = set()
        self._event = trio.Event()

    def heard(self, streams: frozenset[str]) -> None:
        for stream in streams:
            parts = stream.split("/")
            if len(parts) >= 4 and parts[0] == "playbook":
                key = (parts[1], parts[2])
                self._appended.add(key)
                if parts[3] == "definitions":
                    self._redefined.add(key)
        if self._appended:
            self._event.set()

    def take(self) -> tuple[set[ViewsKey], set[ViewsKey]]:
        """The playbooks appended to, and those redefined, since the last take."""
        taken, redefined = self._appended, self._redefined
        self._appended, self._redefined = set(), set()
        self._event = trio.Event()
        return taken, redefined

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
