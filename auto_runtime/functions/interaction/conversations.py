"""The reads of a conversation's replies as due work (interaction-format §5.1): the conversation's id, the cadence
of its reads, and the read a delivery's `replies_in` wakes it with. The functions here are pure (an entry's key
is a fresh UUID, so a read armed again never replaces the one in flight)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from auto_runtime.functions.durations import interaction_duration_ms
from auto_runtime.ledger import DueEntry, PlaybookScope

READ_PREFIX = "interaction:read:"


def conversation_id(server: str, tool: str, key: str) -> str:
    return hashlib.sha256(f"{server}\x00{tool}\x00{key}".encode()).hexdigest()[:32]


def cadence(reads: int) -> timedelta:
    """The wait before the next read, `reads` reads after the conversation's last activity (§5.1)."""
    if reads == 0:
        return timedelta(seconds=5)
    if reads <= 3:
        return timedelta(seconds=(10, 20, 40)[reads - 1])
    if reads < 18:
        return timedelta(seconds=60)
    return timedelta(seconds=300)


def read_entry(
    scope: PlaybookScope, server: str, tool: str, key: str, reads: int, floor: timedelta, now: datetime
) -> DueEntry:
    wait = max(cadence(reads), floor)
    payload = {"server": server, "tool": tool, "key": key, "reads": reads}
    return DueEntry(scope, conversation_id(server, tool, key), f"{READ_PREFIX}{uuid.uuid4()}", now + wait, payload)


def wait_floor(replies: Mapping[str, Any] | None) -> timedelta:
    found = interaction_duration_ms(replies.get("wait")) if isinstance(replies, Mapping) and "wait" in replies else None
    return timedelta(milliseconds=found or 5000)


def woken_read(
    scope: PlaybookScope, replies_in: Mapping[str, Any], replies: Mapping[str, Any] | None, now: datetime
) -> DueEntry:
    """The read a delivery's `replies_in` wakes its conversation with: 5 s after (or the request's `wait`)."""
    return read_entry(
        scope, str(replies_in["server"]), str(replies_in["tool"]), str(replies_in["key"]), 0, wait_floor(replies), now
    )
