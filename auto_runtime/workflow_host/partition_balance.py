"""The balance of partitions among the servers alive: which partitions a server keeps, takes and releases.

A pure function of what one look at the lease rows showed (`plan_partitions`), so every server decides alike
from the same rows. Each server aims at its share of P among the servers alive (`share_of`): the servers are
ordered by id, and with P = q * n + r the first r get q + 1 partitions, the others q. A server holding more than
its share releases the highest-numbered of them (at the end of its sweep); one holding fewer takes free ones
(never claimed, released, or lapsed: taken by whoever sees them first), starting at a place of its own in the
ring of partitions so that servers taking at the same time seldom reach for the same ones (a claim the
database gives another is simply not held, and the next look tries again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """What a server does with the partitions after one look: renew `keep`, claim `take`, release `release`."""

    keep: frozenset[int]
    take: frozenset[int]
    release: frozenset[int]
    share: int


def share_of(server_id: str, servers_alive: Collection[str], partitions: int) -> int:
    """How many of `partitions` `server_id` aims at among `servers_alive` (itself counted even when missing)."""
    ordered = sorted({*servers_alive, server_id})
    base, extra = divmod(partitions, len(ordered))
    return base + (1 if ordered.index(server_id) < extra else 0)


def _start_of(server_id: str, partitions: int) -> int:
    return int.from_bytes(hashlib.sha256(server_id.encode("utf-8")).digest()[:4], "big") % partitions


def plan_partitions(
    server_id: str, partitions: int, servers_alive: Collection[str], holders: Mapping[int, str | None]
) -> PartitionPlan:
    """The plan of `server_id` given the live holder of each partition (`holders`; a partition missing or None
    is free) and the servers alive."""
    share = share_of(server_id, servers_alive, partitions)
    mine = sorted(p for p in range(partitions) if holders.get(p) == server_id)
    if len(mine) >= share:
        return PartitionPlan(frozenset(mine[:share]), frozenset(), frozenset(mine[share:]), share)
    start = _start_of(server_id, partitions)
    free = sorted((p for p in range(partitions) if holders.get(p) is None), key=lambda p: (p - start) % partitions)
    return PartitionPlan(frozenset(mine), frozenset(free[: share - len(mine)]), frozenset(), share)
