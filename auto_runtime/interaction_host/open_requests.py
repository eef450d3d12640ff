"""The open requests of every playbook, as one projection table (`open_requests`) that `list_interactions` reads.

A request is opened by a fact of a **request source** (`functions.interaction.request_sources`) on a run's
stream, and leaves the table when the request is answered (`request_answered`) or its run ends;
`run_cancel_requested` makes it stand `cancelling`. A source is a small table entry: the fact type that opens a
request and the function that turns that fact into the row.
Interaction functions open theirs with `interaction_requested` (`INTERACTION_SOURCE`); another type adds its
requests by giving `open_requests_projection` a source of its own (a prediction build's `build_asked`, settled
point 16), with nothing else to change: the listing, its filters and its pages read the one table.

The table is kept in the append's own transaction (`ledger.projections`), so it is as durable as the facts, and
a projection of a new version is rebuilt from the history when the ledger opens. The functions here are pure.

The message is a `json` column (JSON text): rendered from the run's input, it keeps whatever text that data held,
U+0000 included, which a `text` column of PostgreSQL refuses (`auto_runtime.text_rule`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auto_runtime.clock_text import iso_utc, microseconds_since_epoch
from auto_runtime.functions.interaction.request_sources import DELIVERY_CHANGES, RequestSource, RowChange
from auto_runtime.ledger import Projection, Record, Row, TableSpec
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_ENDINGS, RUN_STARTED

INTERACTION_REQUESTED = "interaction_requested"
REQUEST_ANSWERED = "request_answered"
OPEN_REQUESTS_TABLE = "open_requests"


def interaction_row(record: Record) -> Row:
    """The row of an interaction function's request, from its `interaction_requested` (interaction-format §3.2)."""
    data = record.data
    definition = record.metadata.get("definition", {})
    deliver = data.get("deliver")
    delivery = {"server": deliver.get("server"), "tool": deliver.get("tool")} if isinstance(deliver, dict) else None
    takes_answer = data.get("answer_schema") is not None
    return {
        "type": definition.get("type", "interaction"),
        "function": definition.get("name"),
        "version": definition.get("version"),
        "to_party": data.get("to"),
        "delivery": delivery,
        "message": data.get("message"),
        "takes_answer": 1 if takes_answer else 0,
        "answer_schema": data.get("answer_schema"),
        "requested_at": data.get("requested_at", iso_utc(record.recorded_at)),
        "requested_us": microseconds_since_epoch(record.recorded_at),
        "expires_at": data.get("expires_at"),
        "attempts": 0,
        "conversation": None,
        "answerer": data.get("answerer") if takes_answer and data.get("reply") is not None else None,
        "reply_refusals": 0,
        "standing": "to_deliver" if delivery is not None else "in_inbox",
    }


INTERACTION_SOURCE = RequestSource(INTERACTION_REQUESTED, interaction_row, DELIVERY_CHANGES)


def open_requests_projection(sources: Sequence[RequestSource] = (INTERACTION_SOURCE,)) -> Projection:
    """The `open_requests` projection, fed by `sources`."""
    opening: Mapping[str, RequestSource] = {source.opened_by: source for source in sources}
    changes: dict[str, RowChange] = {name: change for source in sources for name, change in source.changes.items()}
    closing = frozenset({REQUEST_ANSWERED, RUN_STARTED, *RUN_ENDINGS})
    touched = frozenset({*opening, *closing, *changes, RUN_CANCEL_REQUESTED})

    def keys(record: Record) -> list[tuple[Any, ...]]:
        if record.type not in touched:
            return []
        parts = record.stream.split("/")
        if len(parts) != 5 or parts[0] != "playbook" or parts[3] != "runs":
            return []
        return [(parts[1], parts[2], parts[4])]

    def row_after(row: Row | None, record: Record) -> Row | None:
        source = opening.get(record.type)
        if source is not None:
            return source.row_of(record)
        if record.type in closing:
            return None
        if row is None:
            return None
        if record.type == RUN_CANCEL_REQUESTED:
            return {**row, "standing": "cancelling"}
        if row["standing"] == "cancelling" and record.type.startswith("delivery_"):
            return {**row, "attempts": max(int(row["attempts"]), int(record.data.get("number") or 0))}
        return changes[record.type](row, record)

    return Projection(
        name=OPEN_REQUESTS_TABLE,
        version=4,
        table=TableSpec(
            name=OPEN_REQUESTS_TABLE,
            columns={
                "org": "text",
                "playbook": "text",
                "run_id": "text",
                "type": "text",
                "function": "text",
                "version": "integer",
                "to_party": "text",
                "delivery": "json",
                "message": "json",
                "takes_answer": "integer",
                "answer_schema": "json",
                "requested_at": "text",
                "requested_us": "integer",
                "expires_at": "text",
                "attempts": "integer",
                "conversation": "text",
                "answerer": "text",
                "reply_refusals": "integer",
                "standing": "text",
            },
            primary_key=("org", "playbook", "run_id"),
            indexes=(("org", "playbook", "requested_us", "run_id"),),
        ),
        keys=keys,
        row_after=row_after,
    )


OPEN_REQUESTS_PROJECTION = open_requests_projection()


def listed(row: Mapping[str, Any]) -> dict[str, Any]:
    """One item of `list_interactions`, every field of the seeds' table, from a stored row."""
    decoded = OPEN_REQUESTS_PROJECTION.decode_row(row)
    return {
        "run_id": row["run_id"],
        "type": row["type"],
        "function": row["function"],
        "version": row["version"],
        "to": row["to_party"],
        "delivery": decoded["delivery"],
        "message": decoded["message"],
        "takes_answer": bool(row["takes_answer"]),
        "answer_schema": decoded["answer_schema"],
        "requested_at": row["requested_at"],
        "expires_at": row["expires_at"],
        "attempts": row["attempts"],
        "conversation": row["conversation"],
        "answerer": row["answerer"],
        "reply_refusals": row["reply_refusals"],
        "standing": row["standing"],
    }
