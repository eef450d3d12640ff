"""Leases: one row per name saying which server process holds it and until when.

The workflow host holds one lease per partition of the work (`partitions`: `partition:<n>`, claimed several at
once with `Leases.claim_many`), and each server renews one of its own (`server:<digest>`) to say it is alive: the
due work of a partition (timers, sweeps, workflow inputs, deliveries) runs only on its holder. Releases before
partitions held the single lease named `WORKFLOW_HOST_LEASE`, which migration 5 retired. The host claims its
leases when it opens and again every sweep,
with a lapse of the longer of three sweeps and 3 s; a standby claims it every sweep too, and takes it
once the holder's claim has lapsed. A holder renews once its claim is due for renewal
(`workflow_lease_renewal`: a sweep after the claim was asked, or half the time it had left, whichever
comes first), not each time it looks at its due work: a claim is a write and a commit, and a fresh one
gains nothing by being made again. A clean stop releases it, so a standby takes over at its next
sweep rather than after the lapse.

Invariants (both stores):

- At any instant at most one holder's claim is live: `claim` takes the lease only when it is free
  (never claimed, or released) or the last claim has lapsed (`until <= now`), or renews it when the
  caller is its holder. Concurrent claims on one name are serialised on the lease's row (PostgreSQL:
  the row is locked `FOR UPDATE` before the clock is read and the decision made, so of several
  processes racing to claim a lapsed lease exactly one takes it and the others are told who did;
  SQLite: the one writer thread runs claims one after the other).
- Time is the database's clock on PostgreSQL (`clock_timestamp()` read after the row lock), so
  servers with skewed clocks agree; on SQLite it is the host's clock, read on the writer thread when
  the claim runs (one process per file, so there is only one clock).
- `fencing` counts changes of holder: it is 0 before the first claim and goes up by one each time a
  claim takes the lease from nobody or from another holder (also when a holder takes back a lease it
  released). A holder that renews, even after its own claim lapsed while nobody else took it, keeps
  its number. So two claims answered with the same holder and the same fencing number saw no other
  holder in between.
- A holder that was paused past its lapse learns on its next claim that another process took the
  lease (`LeaseState.holder` names the other); it must stop its due work at once. A holder that
  cannot renew before `until` (measured on its own monotonic clock from before the claim call plus
  `LeaseState.remaining`) must stop as well, since a standby may take the lease from then on.
- `release` clears the holder only when the caller is the holder, and keeps the fencing number.
- A write that must come from the holder carries a `LeaseFence` (see `Ledger.append` and
  `DueWork`): inside its transaction the store checks that the lease still has that holder and that
  fencing number, or raises `LeaseLost` and writes nothing. On PostgreSQL the check takes a share
  lock on the lease row, so a claim that would take the lease waits for the fenced write to commit:
  a new holder therefore sees every write its predecessor's fence let through.

`Leases` is the port: it validates here, once for both stores, and each store's dialect (`sqlite.leases`,
`postgres.leases`) claims, releases and reads the rows; `opening` composes it into the ledger, whose
`Ledger.lease(name)` hands out a `Lease` for one name.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from .errors import LedgerError
from .open_state import OpenState

WORKFLOW_HOST_LEASE: Final = "workflow-host"
"""The name of the single lease whose holder ran the workflow host's due work before partitions (retired by
migration 5; `Ledger.lease()` still names it by default, for tests of the lease rules)."""

MIN_WORKFLOW_LAPSE: Final = timedelta(seconds=3)


def workflow_lease_lapse(sweep_interval: timedelta) -> timedelta:
    """The workflow lease's lapse for `WORKFLOW_SWEEP_INTERVAL`: the longer of three sweeps and 3 s."""
    if not isinstance(sweep_interval, timedelta) or sweep_interval <= timedelta(0):
        raise ValueError("a sweep interval is a positive timedelta")
    return max(3 * sweep_interval, MIN_WORKFLOW_LAPSE)


def workflow_lease_renewal(sweep_interval: timedelta, remaining: timedelta) -> timedelta:
    """How long after asking for a claim of the workflow lease its holder claims again: a sweep, or half of
    what the claim had left (`LeaseState.remaining`) when that is sooner. Until then the claim is fresh and
    is not claimed again; the holder's fenced writes check it all the same."""
    return min(sweep_interval, remaining / 2)


_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_PREFIX = re.compile(r"[A-Za-z0-9_.:-]{1,63}")
HOLDER_MAX_LENGTH: Final = 200


class LeaseLost(LedgerError):
    """A fenced write came from a process that no longer holds the lease; nothing was written.

    The process stops its due work and goes back to standing by (claiming each sweep).
    """

    def __init__(self, name: str, holder: str, fencing: int) -> None:
        super().__init__(f"{holder!r} no longer holds lease {name!r} with fencing number {fencing}")
        self.name = name
        self.holder = holder
        self.fencing = fencing


@dataclass(frozen=True, slots=True)
class LeaseFence:
    """What a fenced write states: the lease, its holder and the fencing number the holder got."""

    name: str
    holder: str
    fencing: int


@dataclass(frozen=True, slots=True)
class LeaseState:
    """A lease as judged at `now` (the judging clock: the database's on PostgreSQL, the host's on SQLite).

    `holder` is the process whose claim is live at `now`, or None when the lease is free or its last
    claim lapsed; `until` is when that claim lapses (None when there is no live holder). `fencing` is
    the lease's fencing number (see the module docstring).
    """

    name: str
    holder: str | None
    until: datetime | None
    fencing: int
    now: datetime

    def held_by(self, holder_id: str) -> bool:
        """Whether `holder_id` held the lease at `now`."""
        return self.holder == holder_id

    @property
    def remaining(self) -> timedelta:
        """How long the live claim had left at `now` (zero when there is no live holder)."""
        if self.until is None:
            return timedelta(0)
        return max(self.until - self.now, timedelta(0))

    def fence(self) -> LeaseFence:
        """The fence for writes of the live holder; `ValueError` when there is none."""
        if self.holder is None:
            raise ValueError(f"lease {self.name!r} has no live holder")
        return LeaseFence(self.name, self.holder, self.fencing)


def validate_lease_name(name: str) -> str:
    """Return `name` when it is 1 to 64 of `A-Z a-z 0-9 _ . : -`, else raise `ValueError`."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"invalid lease name {name!r}")
    return name


def validate_holder(holder_id: str) -> str:
    """Return `holder_id` when it is non-empty printable text of at most 200 characters."""
    if not isinstance(holder_id, str) or not holder_id or len(holder_id) > HOLDER_MAX_LENGTH:
        raise ValueError("a lease holder id is 1 to 200 characters")
    if not holder_id.isprintable():
        raise ValueError("a lease holder id is printable text")
    return holder_id


def validate_fence(fence: LeaseFence) -> LeaseFence:
    """Return `fence` when its fields are well formed, else raise `ValueError` or `TypeError`."""
    if not isinstance(fence, LeaseFence):
        raise TypeError("a fence is a LeaseFence")
    validate_lease_name(fence.name)
    validate_holder(fence.holder)
    if isinstance(fence.fencing, bool) or not isinstance(fence.fencing, int) or fence.fencing < 1:
        raise ValueError("a fencing number is an int >= 1")
    return fence


class Leases(abc.ABC):
    """The ledger's lease rows, by name. Every method may be called from any Trio task; a dialect implements
    the `_` steps with validated arguments."""

    def __init__(self, open_state: OpenState) -> None:
        self._open = open_state

    async def claim(self, name: str, holder_id: str, lapse: timedelta) -> LeaseState:
        """`Lease.claim` of the lease called `name`."""
        self._open.check()
        validate_lease_name(name)
        validate_holder(holder_id)
        if not isinstance(lapse, timedelta) or lapse <= timedelta(0):
            raise ValueError("a lease lapse is a positive timedelta")
        return await self._claim(name, holder_id, lapse)

    async def release(self, name: str, holder_id: str) -> bool:
        """`Lease.release` of the lease called `name`."""
        self._open.check()
        validate_lease_name(name)
        validate_holder(holder_id)
        return await self._release(name, holder_id)

    async def holder(self, name: str) -> LeaseState:
        """`Lease.holder` of the lease called `name`."""
        self._open.check()
        validate_lease_name(name)
        return await self._read(name)

    async def claim_many(self, names: Sequence[str], holder_id: str, lapse: timedelta) -> list[LeaseState]:
        """`claim` of each of `names` (without repeats), in one transaction and round trip, in name order (so
        claims of overlapping names by several processes lock rows in one order); the states in name order."""
        self._open.check()
        ordered = sorted({validate_lease_name(name) for name in names})
        validate_holder(holder_id)
        if not isinstance(lapse, timedelta) or lapse <= timedelta(0):
            raise ValueError("a lease lapse is a positive timedelta")
        if not ordered:
            return []
        return await self._claim_many(ordered, holder_id, lapse)

    async def release_many(self, names: Sequence[str], holder_id: str) -> int:
        """`release` of each of `names` in one transaction; answers how many this holder released."""
        self._open.check()
        ordered = sorted({validate_lease_name(name) for name in names})
        validate_holder(holder_id)
        if not ordered:
            return 0
        return await self._release_many(ordered, holder_id)

    async def read_all(self, prefix: str) -> list[LeaseState]:
        """Every lease row whose name starts with `prefix`, judged at one `now`, in name order (changes
        nothing)."""
        self._open.check()
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ValueError(f"invalid lease name prefix {prefix!r}")
        return await self._read_all(prefix)

    async def forget(self, name: str, holder_id: str) -> bool:
        """Delete the lease row called `name` when `holder_id` is its holder (live or lapsed); answers whether it
        did. Only for a lease no write is fenced by (a server's own `server:` row at a clean stop): a deleted
        row's fencing number starts again from 1."""
        self._open.check()
        validate_lease_name(name)
        validate_holder(holder_id)
        return await self._forget(name, holder_id)

    async def forget_lapsed(self, prefix: str, lapsed_for: timedelta) -> int:
        """Delete the rows whose name starts with `prefix` that are released, or whose last claim lapsed more
        than `lapsed_for` ago by the judging clock; answers how many. Only for leases no write is fenced by
        (the servers' `server:` rows). A claim that renews a row at the same moment either keeps it (the
        delete re-checks the lapse under the row's lock) or makes it again at the next claim."""
        self._open.check()
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ValueError(f"invalid lease name prefix {prefix!r}")
        if not isinstance(lapsed_for, timedelta) or lapsed_for < timedelta(0):
            raise ValueError("a lapse bound is a timedelta of zero or more")
        return await self._forget_lapsed(prefix, lapsed_for)

    @abc.abstractmethod
    async def _claim(self, name: str, holder: str, lapse: timedelta) -> LeaseState: ...

    @abc.abstractmethod
    async def _claim_many(self, names: list[str], holder: str, lapse: timedelta) -> list[LeaseState]: ...

    @abc.abstractmethod
    async def _release_many(self, names: list[str], holder: str) -> int: ...

    @abc.abstractmethod
    async def _read_all(self, prefix: str) -> list[LeaseState]: ...

    @abc.abstractmethod
    async def _release(self, name: str, holder: str) -> bool: ...

    @abc.abstractmethod
    async def _forget(self, name: str, holder: str) -> bool: ...

    @abc.abstractmethod
    async def _forget_lapsed(self, prefix: str, lapsed_for: timedelta) -> int: ...

    @abc.abstractmethod
    async def _read(self, name: str) -> LeaseState: ...


@dataclass(frozen=True, slots=True)
class Lease:
    """One named lease of a ledger (`Ledger.lease(name)`). Cheap to make; holds no state of its own."""

    leases: Leases
    name: str

    async def claim(self, holder_id: str, lapse: timedelta) -> LeaseState:
        """Take the lease when it is free or lapsed, or renew it when `holder_id` holds it.

        Either way a successful claim's live holder is `holder_id` and its `until` is the judging
        clock's now plus `lapse`. When another process's claim is live, nothing changes and the
        answer names that holder. Check `state.held_by(holder_id)`, and compare `state.fencing`
        with the number from your previous claim: a different number means another process held
        the lease in between, so in-memory state about due work must be reloaded.
        """
        return await self.leases.claim(self.name, holder_id, lapse)

    async def release(self, holder_id: str) -> bool:
        """Free the lease when `holder_id` is its holder (live or lapsed); returns whether it did.

        A clean stop releases, so a standby takes the lease at its next claim.
        """
        return await self.leases.release(self.name, holder_id)

    async def holder(self) -> LeaseState:
        """The lease as it stands now (changes nothing)."""
        return await self.leases.holder(self.name)
