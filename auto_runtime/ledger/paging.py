"""Paging of a playbook's records, as the seeds' "Paging" says; shared by both stores.

A store answers a page in two steps. First it *scans* the playbook in read order after the cursor,
returning for each record looked at only its sort key, whether it passes the filters and its stored
size (`ScanRow`). `plan_page` then decides, in Python and identically for both stores, which records the
page returns, where the next page starts and whether there may be more:

- `limit` (1 to 100, 20 by default) counts the records a page returns;
- a page stops once the records it returns reach 4 MiB of stored data (data and metadata text in
  UTF-8); the record that crosses the line is kept, so every page makes progress;
- with a `types` or `since` filter a page stops after looking at 1,000 records, and may then be
  empty while `has_more` is true. `correlation_id` (a run's tree) is a selection served by an index,
  not a filter: its records are the only ones looked at.

The store then loads the chosen records in full. A cursor is opaque (base64url of a small JSON
object) and bound to the playbook's scope key and the read order; any other cursor is
`InvalidCursor`. A sort key is `(commit order, global position)`: on SQLite both are the global
position (one writer commits in sequence); on PostgreSQL the first is the appending transaction's
id, read behind a horizon for oldest-first reads (see the PostgreSQL store).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from .errors import InvalidCursor
from .records import Record

DEFAULT_PAGE_LIMIT: Final = 20
MAX_PAGE_LIMIT: Final = 100
MAX_PAGE_BYTES: Final = 4 * 1024 * 1024
MAX_LOOKED_AT: Final = 1_000

Order = Literal["asc", "desc"]
SortKey = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a playbook's records; `next_cursor` is None exactly when `has_more` is false."""

    records: list[Record]
    has_more: bool
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class ScanRow:
    """A record a page looked at: its sort key, whether the filters keep it, its stored size."""

    key: SortKey
    matches: bool
    size: int


@dataclass(frozen=True, slots=True)
class PagePlan:
    """What `plan_page` decided: the sort keys to load, in read order, and where to continue."""

    chosen: list[SortKey]
    has_more: bool
    resume_after: SortKey | None


def validate_limit(limit: int) -> int:
    """`ValueError` unless 1 <= limit <= 100 (the HTTP layer answers `invalid_input` before this)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE_LIMIT:
        raise ValueError(f"limit must be 1 to {MAX_PAGE_LIMIT}, not {limit!r}")
    return limit


def scan_size(limit: int, filtered: bool) -> int:
    """How many records a store's scan reads for one page."""
    return MAX_LOOKED_AT if filtered else limit + 1


def plan_page(rows: Sequence[ScanRow], limit: int, scanned_at_most: int) -> PagePlan:
    """Choose a page from the scanned rows; `scanned_at_most` is the scan size the store used."""
    chosen: list[SortKey] = []
    loaded = 0
    for index, row in enumerate(rows):
        if not row.matches:
            continue
        chosen.append(row.key)
        loaded += row.size
        if len(chosen) == limit or loaded >= MAX_PAGE_BYTES:
            rest = rows[index + 1 :]
            more = any(r.matches for r in rest) or len(rows) >= scanned_at_most
            return PagePlan(chosen, more, row.key if more else None)
    if len(rows) >= scanned_at_most and rows:
        return PagePlan(chosen, True, rows[-1].key)
    return PagePlan(chosen, False, None)


def encode_cursor(scope_key: str, order: Order, after: SortKey) -> str:
    """An opaque cursor that continues after `after` in `order` within `scope_key`."""
    payload = json.dumps({"s": scope_key, "o": order, "k": list(after)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, scope_key: str, order: Order) -> SortKey:
    """The sort key a cursor continues after; `InvalidCursor` for anything this read did not give."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError) as error:
        raise InvalidCursor("malformed cursor") from error
    if not isinstance(payload, dict) or payload.get("s") != scope_key:
        raise InvalidCursor("the cursor belongs to another playbook")
    if payload.get("o") != order:
        raise InvalidCursor("the cursor belongs to a read in the other order")
    key = payload.get("k")
    if (
        not isinstance(key, list)
        or len(key) != 2
        or not all(isinstance(part, int) and not isinstance(part, bool) for part in key)
    ):
        raise InvalidCursor("malformed cursor")
    return (key[0], key[1])
