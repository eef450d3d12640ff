"""Partitions: the work of several servers on one ledger is cut into P parts, each leased by one server.

P is fixed when a ledger is made (`WORKFLOW_PARTITIONS`, 64 unless set) and kept in it (`ledger_partitioning`);
a server whose setting disagrees keeps the ledger's (`Partitioning.disagrees`). A run belongs to the partition
of its run id, a playbook's recall views, shadow work and approvals to the partition of `org/playbook`, and a
due entry to its run's partition when its run id is a run id (a UUID), else to its playbook's (`partition_of_due`).

The hash is MD5's first 32 bits read as an unsigned integer, modulo P: the same on every server, process and
release (never Python's `hash()`, which is salted per process).

Each partition has a lease row named `partition:<n>` (`partition_lease_name`) whose fencing number is the
partition's epoch: every write of a holder for the partition is fenced by it (see `lease`). Each server also
renews a lease named `server:<digest of its id>` (`server_lease_name`) every sweep: the servers alive are the
live holders of those rows.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final, Protocol

from .lease import LeaseFence

DEFAULT_PARTITIONS: Final = 64
MAX_PARTITIONS: Final = 1024
PARTITION_LEASE_PREFIX: Final = "partition:"
SERVER_LEASE_PREFIX: Final = "server:"
RETIRED_HOLDER: Final = "(partitioned)"
"""The holder migration 5 gives the single workflow lease of earlier releases, for ever: a server of such a
release sharing the database never takes it again, so it never writes beside the partitions' holders."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def check_partitions(count: int) -> int:
    """Return `count` when it is a partition count (1 to `MAX_PARTITIONS`), else raise `ValueError`."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
        raise ValueError(f"a partition count is an int from 1 to {MAX_PARTITIONS}")
    return count


def partition_of(key: str, partitions: int) -> int:
    """The partition of `key` (a run id, or `org/playbook`) among `partitions`: stable everywhere."""
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big") % partitions


def playbook_key(org: str, playbook: str) -> str:
    """The key a playbook's work is placed by: `org/playbook`."""
    return f"{org}/{playbook}"


def partition_of_due(scope_key: str, run_id: str, partitions: int) -> int:
    """The partition of a due entry: its run's when its run id is a UUID (lower-cased, as run ids are kept),
    else its playbook's (`playbook/<org>/<playbook>`), else its scope's (an org's entries)."""
    if _UUID.fullmatch(run_id):
        return partition_of(run_id.lower(), partitions)
    parts = scope_key.split("/")
    if len(parts) == 3 and parts[0] == "playbook":
        return partition_of(playbook_key(parts[1], parts[2]), partitions)
    return partition_of(scope_key, partitions)


def partition_lease_name(partition: int) -> str:
    """The lease row of one partition."""
    return f"{PARTITION_LEASE_PREFIX}{partition}"


def partition_of_lease(name: str) -> int | None:
    """The partition a lease row is for, or None when it is no partition's."""
    if not name.startswith(PARTITION_LEASE_PREFIX):
        return None
    number = name[len(PARTITION_LEASE_PREFIX) :]
    return int(number) if number.isdigit() else None


def server_lease_name(server_id: str) -> str:
    """The lease row a server renews to say it is alive (its id's digest: a lease name is at most 64 of a few
    characters, a server id is any printable text)."""
    return SERVER_LEASE_PREFIX + hashlib.sha256(server_id.encode("utf-8")).hexdigest()[:32]


def compact_ranges(partitions: list[int] | set[int] | frozenset[int]) -> str:
    """`0-3,7,9-10` for {0, 1, 2, 3, 7, 9, 10}; `none` for no partition."""
    ordered = sorted(partitions)
    if not ordered:
        return "none"
    spans: list[str] = []
    start = previous = ordered[0]
    for number in [*ordered[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        if number is not None:
            start = previous = number
    return ",".join(spans)


class Partitioning:
    """A ledger's partition count: asked for by the setting, fixed from the ledger when it opens (`fix`).

    Shared by the store and its due-work port, which places each entry it arms. Set once from the store's
    start, before any port is used; read from any task."""

    def __init__(self, asked: int = DEFAULT_PARTITIONS) -> None:
        self.asked = check_partitions(asked)
        self._count: int | None = None

    def fix(self, stored: int) -> None:
        """The count the ledger keeps (the asked one when this start made it)."""
        self._count = check_partitions(stored)

    @property
    def count(self) -> int:
        """P: the ledger's partition count (the asked one until the ledger opened)."""
        return self.asked if self._count is None else self._count

    @property
    def disagrees(self) -> bool:
        """The setting asked for another count than the ledger keeps (the ledger's is kept)."""
        return self._count is not None and self._count != self.asked


class Fences(Protocol):
    """What a follower of the workflow host is given: the fences of the partitions this server holds.

    Called, it answers the fence of partition 0 (the home of deployment-wide work), or None when this server
    does not hold it."""

    def __call__(self) -> LeaseFence | None: ...

    def of_key(self, key: str) -> LeaseFence | None:
        """The fence of the partition of `key` (a run id or `org/playbook`), or None when not held here."""
        ...

    def fence_of(self, partition: int) -> LeaseFence | None:
        """The fence of `partition`, or None when not held here."""
        ...

    def held(self) -> frozenset[int]:
        """The partitions whose fences are answered now."""
        ...
