"""Due work: keyed entries (timers) that come due at a time, kept in one table across every playbook.

An entry is `(scope, run id, key)` with a due time, a JSON payload and a state: `armed`, `fired` or
`cancelled`. The workflow host arms a run's timers from the outputs of an applied input, reads the
entries that are due (`due`), gives each to the engine as an input, then marks it fired. It sleeps
until `next_due` or the next sweep, whichever comes first.

Invariants (both stores):

- One row per `(scope, run id, key)`, never two. Arming is idempotent by key: arming a key that
  already has a row (armed, fired or cancelled) changes nothing, so the first arm's due time and
  payload stay.
- A cancel of a key with no row leaves a tombstone (a `cancelled` row), so a later arm of that key is
  refused (changes nothing). A cancel of an armed entry makes it `cancelled`; of a fired or cancelled
  one changes nothing. Within one `DueWorkChanges` the order of arms and cancels does not matter: a
  key both armed and cancelled ends `cancelled` either way.
- `mark_fired` moves only `armed` entries to `fired`; it is called after the engine took the input,
  so a crash in between delivers the entry again on the next sweep (the engine ignores the stale
  second delivery). Better, the append that records the input carries the mark itself
  (`DueWorkChanges.fire`): the input and its entry's mark then commit together, in one transaction,
  and there is no in between. Marks apply after the arms and cancels of the same changes, to armed
  entries only (one cancelled by the same changes stays cancelled).
- Each entry carries its partition (`partitions.partition_of_due`), computed by the store when it is armed
  (or cancelled into a tombstone) from the ledger's partition count; `due` and `next_due` read only some
  partitions' entries when asked (a server holding some of them).
- `due(now, limit)` answers armed entries with `due_at <= now`, oldest due first (ties by scope, run
  id and key), through a partial index on armed entries' due times, so it reads only what it answers
  however many playbooks, fired entries or tombstones the table holds. `next_due` reads the same
  index.
- The changes of one call, or of one append carrying them (`Ledger.append(..., due_work=...)`), apply
  in one transaction with the append: an append that fails (version conflict, a lost fence, a
  failing projection) changes no entry, and no entry changes without its append. Concurrent changes
  to one key in several processes (PostgreSQL) are decided by the row's unique key: the first to
  commit wins, and the others' arms become no-ops.
- Rows are kept until `forget_run` removes a run's entries (call it once the run has ended and
  nothing will arm its keys again: removing its tombstones would let a late arm through).

Due times are kept as UTC microseconds since the Unix epoch, like `recorded_at`.

`DueWork` is the port: it validates and encodes here, once for both stores, and each store's dialect
(`sqlite.due_work`, `postgres.due_work`) runs the encoded changes and reads; `opening` composes it into the
ledger (`Ledger.due_work`).
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

from . import json_text
from .lease import LeaseFence, validate_fence
from .open_state import OpenState
from .partitions import MAX_PARTITIONS
from .records import from_microseconds, to_microseconds
from .streams import OrgScope, PlaybookScope, Scope, validate_segment

DueState = Literal["armed", "fired", "cancelled"]
KEY_MAX_LENGTH: Final = 512
MAX_CHANGES: Final = 1_000
"""Most arms plus cancels one call (or one append) may carry; more is a programming error."""
MAX_DUE_LIMIT: Final = 10_000


@dataclass(frozen=True, slots=True)
class DueKey:
    """Names one entry: the scope of the run's streams, the run id and the key within the run."""

    scope: Scope
    run_id: str
    key: str


@dataclass(frozen=True, slots=True)
class DueEntry:
    """An entry to arm, or an armed entry read back: due at `due_at` (aware), carrying `payload` (JSON)."""

    scope: Scope
    run_id: str
    key: str
    due_at: datetime
    payload: Any = None

    @property
    def due_key(self) -> DueKey:
        return DueKey(self.scope, self.run_id, self.key)


@dataclass(frozen=True, slots=True)
class DueRow:
    """A stored entry with its state (`DueWork.entries_of_run`); a tombstone has no due time."""

    scope: Scope
    run_id: str
    key: str
    due_at: datetime | None
    payload: Any
    state: DueState


@dataclass(frozen=True, slots=True)
class DueWorkChanges:
    """Arms, cancels and marks (`fire`: armed entries to mark fired) applied together, alone or in the
    transaction of an append."""

    arm: Sequence[DueEntry] = ()
    cancel: Sequence[DueKey] = ()
    fire: Sequence[DueKey] = ()

    def __bool__(self) -> bool:
        return bool(self.arm) or bool(self.cancel) or bool(self.fire)

    @property
    def net_arms(self) -> list[DueEntry]:
        """The arms whose key the same changes do not cancel: the entries they can leave armed (an arm that
        is cancelled in the same changes ends `cancelled`, so nothing comes due from it)."""
        cancelled = set(self.cancel)
        return [entry for entry in self.arm if entry.due_key not in cancelled]


@dataclass(frozen=True, slots=True)
class EncodedKey:
    """A validated key as the stores keep it."""

    scope_key: str
    run_id: str
    key: str


@dataclass(frozen=True, slots=True)
class EncodedEntry:
    """A validated entry to arm as the stores keep it."""

    scope_key: str
    run_id: str
    key: str
    due_us: int
    payload: str


@dataclass(frozen=True, slots=True)
class EncodedChanges:
    """Validated `DueWorkChanges`, each list sorted by key (concurrent writers lock rows in one order)."""

    arm: list[EncodedEntry] = field(default_factory=list)
    cancel: list[EncodedKey] = field(default_factory=list)
    fire: list[EncodedKey] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.arm) or bool(self.cancel) or bool(self.fire)


def scope_from_key(scope_key: str) -> Scope:
    """The scope whose `key` is `scope_key`; `ValueError` for any other text."""
    parts = scope_key.split("/")
    if parts[0] == "org" and len(parts) == 2:
        return OrgScope(parts[1])
    if parts[0] == "playbook" and len(parts) == 3:
        return PlaybookScope(parts[1], parts[2])
    raise ValueError(f"{scope_key!r} is not a scope key")


def _check_text(value: str, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > KEY_MAX_LENGTH or "\x00" in value:
        raise ValueError(f"a due-work {what} is 1 to {KEY_MAX_LENGTH} characters without NUL")
    return value


def encode_key(key: DueKey) -> EncodedKey:
    """Validate a key; `ValueError` or `TypeError` for a programming error."""
    if not isinstance(key, DueKey):
        raise TypeError("cancel takes DueKey values")
    return _encode_key(key.scope, key.run_id, key.key)


def encode_run(scope: Scope, run_id: str) -> tuple[str, str]:
    """The scope key and run id of a run's entries, validated (a run id is a stream segment)."""
    if not isinstance(scope, OrgScope | PlaybookScope):
        raise TypeError("a due-work scope is an OrgScope or a PlaybookScope")
    return scope.key, validate_segment(run_id)


def _encode_key(scope: Scope, run_id: str, key: str) -> EncodedKey:
    scope_key, run = encode_run(scope, run_id)
    return EncodedKey(scope_key, run, _check_text(key, "key"))


def encode_entry(entry: DueEntry) -> EncodedEntry:
    """Validate an entry to arm; `ValueError` when its payload is not JSON or its time has no offset."""
    if not isinstance(entry, DueEntry):
        raise TypeError("arm takes DueEntry values")
    key = _encode_key(entry.scope, entry.run_id, entry.key)
    if not isinstance(entry.due_at, datetime):
        raise TypeError("due_at is a datetime")
    try:
        payload = json_text.dumps(entry.payload)
    except (TypeError, ValueError) as error:
        raise ValueError(f"the payload of due-work key {entry.key!r} is not JSON: {error}") from error
    return EncodedEntry(key.scope_key, key.run_id, key.key, to_microseconds(entry.due_at), payload)


def _order(key: EncodedKey | EncodedEntry) -> tuple[str, str, str]:
    return (key.scope_key, key.run_id, key.key)


def encode_changes(changes: DueWorkChanges) -> EncodedChanges:
    """Validate and encode changes; a key armed twice keeps its first entry (as the table would)."""
    if not isinstance(changes, DueWorkChanges):
        raise TypeError("due work changes are a DueWorkChanges")
    if len(changes.arm) + len(changes.cancel) + len(changes.fire) > MAX_CHANGES:
        raise ValueError(f"one call carries at most {MAX_CHANGES} due-work changes")
    arms: dict[tuple[str, str, str], EncodedEntry] = {}
    for entry in changes.arm:
        encoded = encode_entry(entry)
        arms.setdefault(_order(encoded), encoded)
    cancels = {_order(key): key for key in map(encode_key, changes.cancel)}
    fires = {_order(key): key for key in map(encode_key, changes.fire)}
    return EncodedChanges(
        arm=[arms[k] for k in sorted(arms)],
        cancel=[cancels[k] for k in sorted(cancels)],
        fire=[fires[k] for k in sorted(fires)],
    )


def encode_keys(keys: Sequence[DueKey]) -> list[EncodedKey]:
    """Validate keys, without duplicates, sorted."""
    if len(keys) > MAX_CHANGES:
        raise ValueError(f"one call carries at most {MAX_CHANGES} due-work keys")
    unique = {_order(key): key for key in map(encode_key, keys)}
    return [unique[k] for k in sorted(unique)]


def decode_entry(scope_key: str, run_id: str, key: str, due_us: int, payload: str) -> DueEntry:
    """An armed entry from a stored row."""
    return DueEntry(scope_from_key(scope_key), run_id, key, from_microseconds(due_us), json_text.loads(payload))


def decode_row(scope_key: str, run_id: str, key: str, due_us: int | None, payload: str | None, state: str) -> DueRow:
    """A stored row of any state."""
    if state not in ("armed", "fired", "cancelled"):
        raise ValueError(f"unknown due-work state {state!r}")
    return DueRow(
        scope=scope_from_key(scope_key),
        run_id=run_id,
        key=key,
        due_at=None if due_us is None else from_microseconds(due_us),
        payload=None if payload is None else json_text.loads(payload),
        state=state,  # type: ignore[arg-type]
    )


def _partition_list(partitions: Collection[int] | None) -> list[int] | None:
    if partitions is None:
        return None
    numbers = sorted(set(partitions))
    if any(isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < MAX_PARTITIONS for n in numbers):
        raise ValueError(f"partitions are ints from 0 to {MAX_PARTITIONS - 1}")
    return numbers


class DueWork(abc.ABC):
    """The ledger's due-work table (`Ledger.due_work`). Every method may be called from any Trio task.

    The writing methods take an optional `fence`: the write then happens only while that holder
    still holds the lease with that fencing number, else `LeaseLost` and nothing is written.

    A dialect implements the `_` steps with encoded, validated arguments; each write step runs in one
    transaction of its own, with the fence checked inside it.
    """

    def __init__(self, open_state: OpenState) -> None:
        self._open = open_state

    async def arm(self, entries: Sequence[DueEntry], fence: LeaseFence | None = None) -> None:
        """Arm entries, each unless its key already has a row (armed, fired or a tombstone)."""
        await self.change(DueWorkChanges(arm=entries), fence)

    async def cancel(self, keys: Sequence[DueKey], fence: LeaseFence | None = None) -> None:
        """Cancel entries; a key with no row gets a tombstone that refuses a later arm."""
        await self.change(DueWorkChanges(cancel=keys), fence)

    async def change(self, changes: DueWorkChanges, fence: LeaseFence | None = None) -> None:
        """Apply arms, cancels and marks in one transaction (see the module docstring for the rules)."""
        self._open.check()
        encoded = encode_changes(changes)
        if fence is not None:
            validate_fence(fence)
        if not encoded and fence is None:
            return
        await self._change(encoded, fence)

    async def due(self, now: datetime, limit: int = 100, partitions: Collection[int] | None = None) -> list[DueEntry]:
        """Armed entries due at or before `now`, oldest due first, at most `limit` (1 to 10,000); only those of
        `partitions` when given (see `partitions`), else of every partition."""
        self._open.check()
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_DUE_LIMIT:
            raise ValueError(f"limit is an int from 1 to {MAX_DUE_LIMIT}")
        return await self._due(to_microseconds(now), limit, _partition_list(partitions))

    async def next_due(self, partitions: Collection[int] | None = None) -> datetime | None:
        """The earliest due time of an armed entry (perhaps already past), or None when none is armed; only of
        `partitions` when given."""
        self._open.check()
        found = await self._next_due(_partition_list(partitions))
        return None if found is None else from_microseconds(found)

    async def mark_fired(self, keys: Sequence[DueKey], fence: LeaseFence | None = None) -> int:
        """Mark armed entries fired, after the engine took them; returns how many changed.

        Fired, cancelled and unknown keys are left as they are.
        """
        self._open.check()
        encoded = encode_keys(keys)
        if fence is not None:
            validate_fence(fence)
        if not encoded and fence is None:
            return 0
        return await self._mark_fired(encoded, fence)

    async def entries_of_run(self, scope: Scope, run_id: str) -> list[DueRow]:
        """Every row of one run (any state), ordered by key: for the sweep's repairs and for tests."""
        self._open.check()
        return await self._rows_of_run(*encode_run(scope, run_id))

    async def forget_run(self, scope: Scope, run_id: str, fence: LeaseFence | None = None) -> int:
        """Delete every row of one run, tombstones too; returns how many. Only once the run has ended."""
        self._open.check()
        scope_key, run = encode_run(scope, run_id)
        if fence is not None:
            validate_fence(fence)
        return await self._forget_run(scope_key, run, fence)

    @abc.abstractmethod
    async def _change(self, changes: EncodedChanges, fence: LeaseFence | None) -> None: ...

    @abc.abstractmethod
    async def _due(self, now_us: int, limit: int, partitions: list[int] | None) -> list[DueEntry]: ...

    @abc.abstractmethod
    async def _next_due(self, partitions: list[int] | None) -> int | None: ...

    @abc.abstractmethod
    async def _mark_fired(self, keys: list[EncodedKey], fence: LeaseFence | None) -> int: ...

    @abc.abstractmethod
    async def _rows_of_run(self, scope_key: str, run_id: str) -> list[DueRow]: ...

    @abc.abstractmethod
    async def _forget_run(self, scope_key: str, run_id: str, fence: LeaseFence | None) -> int: ...
