"""The partitions one server holds: their leases, renewed each sweep, balanced among the servers alive, and the
fences its writes for each carry.

`renew` (the timer loop's, once a sweep when the claims are due for renewal) looks at every partition's lease
row and every server's (`partitions`), decides with `plan_partitions`, and claims in one call the server's own
row (it is alive), the partitions it keeps and the free ones it takes. Claims are judged by the database's
clock; a holder renews once its claim is due for renewal (`workflow_lease_renewal`), and its fences are
answered only for `HELD_SHARE` of the time its claim had left, measured on its own monotonic clock from before
it asked. The partitions above its share are released by `release_surplus` at the end of the sweep (after the
sweep's writes under them), and every one by `release_all` on a clean stop, so another server takes them at
its next sweep rather than after the lapse.

A server's own `server:` row is deleted by `release_all` (a clean stop); the row of a server that died is
deleted by whichever server sees it lapsed for longer than `FORGET_AFTER_LAPSES` lapses (at most one delete a
lapse per server), so the rows each look reads do not grow with every process ever started. A server that
comes back after that long only claims its row again.

Every write a holder makes for a partition carries that partition's fence (`fence_of`, `of_key`, `of_due`), whose
fencing number is the partition's epoch: once another server took the partition the write raises `LeaseLost` and
writes nothing, even a moment after. `lost` drops one partition's fence when a write found it gone.

Concurrency: used from Trio tasks of one server; `renew`, `release_surplus` and `release_all` are called by one
task at a time (the timer loop's).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

import trio

from auto_runtime.ledger import (
    PARTITION_LEASE_PREFIX,
    SERVER_LEASE_PREFIX,
    DueEntry,
    LeaseFence,
    Ledger,
    compact_ranges,
    partition_lease_name,
    partition_of,
    partition_of_due,
    partition_of_lease,
    server_lease_name,
    workflow_lease_lapse,
    workflow_lease_renewal,
)
from auto_runtime.workflow_host.partition_balance import plan_partitions

log = logging.getLogger("auto_runtime.workflows")

FORGET_AFTER_LAPSES: Final = 10
"""How many lapses a server's `server:` row stays after its last claim lapsed before a sweep deletes it."""

HELD_SHARE: Final = 0.9
"""The share of a claim's remaining time during which its fences are answered (the fenced writes are the guard)."""


@dataclass(frozen=True, slots=True)
class ServerShare:
    """A server alive at the last look and how many partitions it held then."""

    server: str
    partitions: int


class PartitionLeases:
    """The partitions `server_id` holds on `ledger` (see the module). Also the followers' `Fences`: called, it
    answers partition 0's fence."""

    def __init__(self, ledger: Ledger, server_id: str, sweep: timedelta) -> None:
        self.ledger = ledger
        self.server_id = server_id
        self.sweep = sweep
        self.lapse = workflow_lease_lapse(sweep)
        self._fences: dict[int, LeaseFence] = {}
        self._held_until = 0.0
        self.firing_until = 0.0
        """Until when (Trio's clock) the sweep fires: half the claim's time."""
        self._renew_at = 0.0
        self._surplus: frozenset[int] = frozenset()
        self._told: frozenset[int] | None = None
        self._forget_at = 0.0
        """Not before when (Trio's clock) this server deletes the lapsed `server:` rows again."""
        self.servers: tuple[ServerShare, ...] = ()
        """The servers alive at the last look (this one among them) and their partitions' counts after it."""

    @property
    def count(self) -> int:
        """P, the ledger's partition count."""
        return self.ledger.partitioning.count

    def _live(self) -> bool:
        return trio.current_time() < self._held_until

    def held(self) -> frozenset[int]:
        """The partitions whose fences are answered now."""
        return frozenset(self._fences) if self._live() else frozenset()

    def holds(self, partition: int) -> bool:
        """Whether `partition`'s fence is answered now (what the ledger's `due_wake` is told: a write arming work
        due soon in a partition not held here wakes its holder)."""
        return self.fence_of(partition) is not None

    def holds_all(self) -> bool:
        return len(self.held()) == self.count

    def keeping(self) -> frozenset[int]:
        """The partitions held now that this server keeps past this sweep (not those above its share, released
        at the sweep's end): where it places the new runs it picks ids for."""
        return self.held() - self._surplus

    def fence_of(self, partition: int) -> LeaseFence | None:
        """The fence of `partition` while this server holds it with time to spare, else None."""
        return self._fences.get(partition) if self._live() else None

    def of_key(self, key: str) -> LeaseFence | None:
        """The fence of the partition of a run id or of `org/playbook`."""
        return self.fence_of(partition_of(key, self.count))

    def of_due(self, entry: DueEntry) -> LeaseFence | None:
        """The fence of a due entry's partition."""
        return self.fence_of(self.partition_of_due(entry))

    def partition_of_due(self, entry: DueEntry) -> int:
        return partition_of_due(entry.scope.key, entry.run_id, self.count)

    def __call__(self) -> LeaseFence | None:
        """Partition 0's fence (the home of deployment-wide work: `Fences`)."""
        return self.fence_of(0)

    def until_renewal(self) -> timedelta:
        """How long until the claims held are due for renewal (zero when they are)."""
        return timedelta(seconds=max(self._renew_at - trio.current_time(), 0.0))

    def lost(self, partition: int) -> None:
        """A fenced write found `partition` taken by another server: stop answering its fence."""
        if self._fences.pop(partition, None) is not None:
            self._tell()

    def lost_key(self, key: str) -> None:
        """A fenced write for a run id or `org/playbook` found its partition taken or released: `lost`."""
        self.lost(partition_of(key, self.count))

    async def renew(self) -> bool:
        """Look, balance and claim unless the claims held are fresh; answers whether this server holds any
        partition. See the module."""
        asked_at = trio.current_time()
        if self._fences and asked_at < self._renew_at and self._live():
            return True
        leases = self.ledger.leases
        rows = await leases.read_all(PARTITION_LEASE_PREFIX)
        holders: dict[int, str | None] = {}
        for row in rows:
            partition = partition_of_lease(row.name)
            if partition is not None and partition < self.count:
                holders[partition] = row.holder
        server_rows = await leases.read_all(SERVER_LEASE_PREFIX)
        alive = {row.holder for row in server_rows if row.holder is not None}
        if len(alive) < len(server_rows) and asked_at >= self._forget_at:
            self._forget_at = asked_at + self.lapse.total_seconds()
            await leases.forget_lapsed(SERVER_LEASE_PREFIX, self.lapse * FORGET_AFTER_LAPSES)
        plan = plan_partitions(self.server_id, self.count, alive, holders)
        wanted = sorted(plan.keep | plan.take)
        names = [server_lease_name(self.server_id), *(partition_lease_name(p) for p in wanted)]
        states = await leases.claim_many(names, self.server_id, self.lapse)
        fences: dict[int, LeaseFence] = {}
        remaining = self.lapse
        for state in states:
            partition = partition_of_lease(state.name)
            if state.held_by(self.server_id):
                remaining = min(remaining, state.remaining)
                if partition is not None:
                    fences[partition] = state.fence()
            if partition is not None:
                holders[partition] = state.holder
        self._fences = fences
        self._surplus = plan.release
        seconds = remaining.total_seconds()
        self._held_until = asked_at + seconds * HELD_SHARE
        self.firing_until = asked_at + seconds / 2
        self._renew_at = asked_at + workflow_lease_renewal(self.sweep, remaining).total_seconds()
        for partition in plan.release:
            holders[partition] = None
        counts = {server: 0 for server in alive | {self.server_id}}
        for holder in holders.values():
            if holder is not None:
                counts[holder] = counts.get(holder, 0) + 1
        self.servers = tuple(ServerShare(server, n) for server, n in sorted(counts.items()))
        self._tell()
        return bool(fences)

    async def release_surplus(self) -> None:
        """Release the partitions held above this server's share (at the end of a sweep, after its writes)."""
        surplus, self._surplus = self._surplus, frozenset()
        if not surplus:
            return
        for partition in surplus:
            self._fences.pop(partition, None)
        await self.ledger.leases.release_many([partition_lease_name(p) for p in sorted(surplus)], self.server_id)
        self._tell()

    async def release_all(self) -> None:
        """Release every partition this server holds and delete its own row (a clean stop)."""
        held = sorted({*self._fences, *self._surplus})
        self._fences = {}
        self._surplus = frozenset()
        self._held_until = 0.0
        await self.ledger.leases.release_many([partition_lease_name(p) for p in held], self.server_id)
        await self.ledger.leases.forget(server_lease_name(self.server_id), self.server_id)
        self._tell()

    def _tell(self) -> None:
        """Log the partitions held at the first look and whenever they change."""
        held = frozenset(self._fences)
        if held == self._told:
            return
        self._told = held
        log.info(
            "partitions held: %s (%d of %d)",
            compact_ranges(held),
            len(held),
            self.count,
            extra={"server": self.server_id, "partitions": sorted(held), "partition_count": self.count},
        )
