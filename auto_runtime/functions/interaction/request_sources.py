"""Where open requests come from, and how their delivery facts change them: what the interaction type's requests
and another type's (a prediction build's `build_asked`, settled point 16) share.

A **request source** is a small table entry: the fact that opens a request, the row it makes in the
`open_requests` projection (kept by `interaction_host.open_requests`), how the source's later facts change an
open row, and the request as the delivery attempts read it. A request delivered through a tool is changed by the
same delivery facts whoever opened it (`DELIVERY_CHANGES`). The functions here are pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from auto_runtime.ledger import Record, Row

MAX_ATTEMPTS: Final = 5
"""The delivery attempts a request gets: after a failed fifth one it stands `undelivered`."""
ATTEMPT_PREFIX: Final = "interaction:attempt:"
"""The due entries of delivery attempts, `interaction:attempt:<number>`, armed by whoever records a delivered
request (attempt 1, due at once) and carried out by the interaction host's deliveries."""


def attempt_key(number: int) -> str:
    """The due entry's key of delivery attempt `number`."""
    return f"{ATTEMPT_PREFIX}{number}"


RowChange = Callable[[Row, Record], Row]


def recorded_request(record: Record) -> dict[str, Any]:
    """The request as its opening fact holds it (`interaction_requested`, interaction-format §3.2)."""
    return dict(record.data)


@dataclass(frozen=True)
class RequestSource:
    """Where open requests come from: the fact that opens one, the row it makes (without the key columns), how
    the source's later facts change an open row (its `standing`, its `attempts`), and the request as its delivery
    attempts read it (`request_of`: the fields of `interaction_requested`, `to`, `message`, `takes_answer`,
    `answer_schema`, `requested_at`, `expires_at` and, when it is delivered, `deliver` as written; with `input`
    when its templates read another input than the run's)."""

    opened_by: str
    row_of: Callable[[Record], Row]
    changes: Mapping[str, RowChange] = field(default_factory=dict)
    request_of: Callable[[Record], dict[str, Any]] = recorded_request


def _delivering(row: Row, record: Record) -> Row:
    return {**row, "standing": "delivering", "attempts": int(record.data.get("number") or row["attempts"])}


def _delivered(row: Row, record: Record) -> Row:
    replies_in = record.data.get("replies_in")
    conversation = replies_in.get("key") if isinstance(replies_in, dict) else row["conversation"]
    return {**row, "standing": "delivered" if row["takes_answer"] else "delivering", "conversation": conversation}


def _reply_refused(row: Row, record: Record) -> Row:
    return {**row, "reply_refusals": int(row["reply_refusals"]) + 1}


def _failed(row: Row, record: Record) -> Row:
    spent = int(record.data.get("number") or 0) >= MAX_ATTEMPTS
    return {**row, "standing": "undelivered" if spent else "retrying"}


def _refused(row: Row, record: Record) -> Row:
    return {**row, "standing": "undelivered"}


DELIVERY_CHANGES: Final[Mapping[str, RowChange]] = {
    "delivery_started": _delivering,
    "delivery_succeeded": _delivered,
    "delivery_failed": _failed,
    "delivery_refused": _refused,
    "reply_refused": _reply_refused,
}
"""How the delivery facts on a run's stream change its open request's row."""
