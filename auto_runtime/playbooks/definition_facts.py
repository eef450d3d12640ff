"""Definitions as facts: their stream per type, the `definitions` projection, and a version as it keeps it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import NewRecord, PlaybookScope, Projection, Record, Row, TableSpec

DEFINITION_CREATED = "definition_created"
DEFINITION_UPDATED = "definition_updated"
DEFINITION_RETIRED = "definition_retired"
MAX_SOURCE_BYTES = 65_536
ATTEMPTS = 4
"""Times a command reads and decides again after another server's change clashed with it."""
MAX_TRIGGERED_WORKFLOWS = 1_024
"""Active workflows with triggers one playbook keeps (workflow-format 2.1): a 1,025th save is a `conflict`."""


@dataclass(frozen=True)
class DefinitionVersion:
    """The latest version of one definition, as the projection keeps it."""

    type: str
    name: str
    version: int
    status: str
    source: str
    document: Mapping[str, Any]
    created_at: str
    created_by: str
    updated_at: str
    retired_at: str | None
    saved_record_id: str


def definitions_stream(scope: PlaybookScope, definition_type: str) -> Any:
    return scope.stream("definitions", definition_type)


def _keys(record: Record) -> list[tuple[Any, ...]]:
    if record.type not in (DEFINITION_CREATED, DEFINITION_UPDATED, DEFINITION_RETIRED):
        return []
    _, org, playbook, _, definition_type = record.stream.split("/")[:5]
    return [(org, playbook, definition_type, record.data["name"])]


def row_after(row: Row | None, record: Record) -> Row | None:
    at = iso_utc(record.recorded_at)
    by = record.metadata.get("by", "")
    data = record.data
    if record.type == DEFINITION_RETIRED:
        return None if row is None else {**row, "status": "retired", "retired_at": at}
    document = {key: value for key, value in data.items() if key not in ("name", "version", "source")}
    base = row if row is not None and record.type == DEFINITION_UPDATED else {"created_at": at, "created_by": by}
    return {
        **base,
        "version": data["version"],
        "status": "active",
        "source": data["source"],
        "document": document,
        "updated_at": at,
        "retired_at": None,
        "saved_record_id": record.id,
    }


DEFINITIONS_PROJECTION = Projection(
    name="definitions",
    version=1,
    table=TableSpec(
        name="definitions",
        columns={
            "org": "text",
            "playbook": "text",
            "type": "text",
            "name": "text",
            "version": "integer",
            "status": "text",
            "source": "text",
            "document": "json",
            "created_at": "text",
            "created_by": "text",
            "updated_at": "text",
            "retired_at": "text",
            "saved_record_id": "text",
        },
        primary_key=("org", "playbook", "type", "name"),
        indexes=(("org", "playbook", "status"),),
    ),
    keys=_keys,
    row_after=row_after,
)


def definition_record(
    kind: str, data: dict[str, Any], by: str, definition_type: str, name: str, version: int
) -> NewRecord:
    """A change of a definition: ``by`` made it, to version ``version`` of ``definition_type`` ``name``."""
    metadata = {
        "correlation_id": None,
        "causation_id": None,
        "by": by,
        "definition": {"type": definition_type, "name": name, "version": version},
    }
    return NewRecord(kind, data, metadata)


def version_of(row: Mapping[str, Any]) -> DefinitionVersion:
    return DefinitionVersion(
        type=row["type"],
        name=row["name"],
        version=row["version"],
        status=row["status"],
        source=row["source"],
        document=row["document"],
        created_at=row["created_at"],
        created_by=row["created_by"],
        updated_at=row["updated_at"],
        retired_at=row["retired_at"],
        saved_record_id=row["saved_record_id"],
    )
