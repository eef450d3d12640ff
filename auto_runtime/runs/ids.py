"""Run ids: UUIDs in their canonical form, so one UUID names one run however a caller writes it; and new run ids
placed in a server's own partitions.

The seeds ("Retrying under a run id"): `run_id` is a UUID and the runtime keeps one run under each id. A UUID's
hex digits may come in either case (RFC 9562 reads them case-insensitively); the runtime keeps and answers the
lower-case form, as `uuid.UUID` writes it. Every place a run id enters (an operation's input, a workflow's own
calls) passes through `canonical_run_id` before it names a stream.

When the caller names no run id the server picks it (seeds: `run_id` is optional). A run belongs to the partition
of its run id (design §3), so a server that picks an id in a partition it holds applies the run itself, with no
hand-over to another server (issue 33). `run_id_in` draws such an id: a UUIDv7 like any other, its 74 random bits
drawn afresh at each try (never a counter: an id stays unpredictable), tried until its partition is one of those
given, at most `MAX_DRAWS` times.
"""

from __future__ import annotations

import re
from collections.abc import Set
from typing import Final

from auto_runtime.ledger import partition_of, uuid7

RUN_ID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_RUN_ID = re.compile(RUN_ID_PATTERN)
MAX_DRAWS: Final = 64
"""The most ids `run_id_in` draws. A server holding k of P partitions misses all of them with the chance
(1 - k/P)^64: under 1 in 5,000 while it holds an eighth of them or more (the share of one server among eight)."""


def is_run_id(text: str) -> bool:
    """Whether `text` is a run id: a UUID written as 8-4-4-4-12 hex digits, in either case."""
    return _RUN_ID.fullmatch(text) is not None


def canonical_run_id(text: str) -> str:
    """The run id in lower case; any other text unchanged (it names no run, and is refused or not found)."""
    return text.lower() if is_run_id(text) else text


def run_id_in(partitions: Set[int], count: int, draws: int = MAX_DRAWS) -> str | None:
    """A new run id (a UUIDv7 in canonical form) whose partition among `count` is one of `partitions`, or None
    when none of `draws` tries was (or `partitions` is empty: nothing is drawn)."""
    if not partitions:
        return None
    for _ in range(draws):
        run_id = uuid7()
        if partition_of(run_id, count) in partitions:
            return run_id
    return None
