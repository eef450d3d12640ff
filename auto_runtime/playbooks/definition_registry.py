"""Definitions of every type: versions as facts on `playbook/<org>/<playbook>/definitions/<type>`.

One stream per type holds every definition of that type in the playbook. The `definitions` projection keeps
each definition's latest version in the append's transaction. A command reads the stream's version first and
the projection after it, decides, and appends with that version: a change that lands in between makes the
append clash, and the command decides again (see `command_loop`). Inside one process the commands of one
playbook take turns (`OneAtATime`), so only another server's change can clash with them.

Rules (seeds, "Reasoning functions", for every type): names follow the playbook id rule and are unique within
their type and playbook, never reused after retirement; a source is at most 65,536 UTF-8 bytes; a changed
document makes a version and an identical one records nothing; a retired definition is readable, not editable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.functions.function_type import CheckedDocument, FunctionType
from auto_runtime.ledger import (
    Ledger,
    NewRecord,
    PlaybookScope,
    Projection,
    Record,
    Row,
    StreamWrite,
    TableSpec,
    VersionConflict,
)
from auto_runtime.playbooks.clock import iso_utc
from auto_runtime.playbooks.command_loop import CHANGED_AT_THE_SAME_MOMENT
from auto_runtime.playbooks.one_at_a_time import OneAtATime
from auto_runtime.playbooks.overview import used_by_section
from auto_runtime.problems import InputIssue, conflict, invalid_input, not_found

DEFINITION_CREATED = "definition_created"
DEFINITION_UPDATED = "definition_updated"
DEFINITION_RETIRED = "definition_retired"
MAX_SOURCE_BYTES = 65_536
ATTEMPTS = 4
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


def _row_after(row: Row | None, record: Record) -> Row | None:
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
    row_after=_row_after,
)


def _document_of(checked: CheckedDocument, name: str, definition_type: str) -> dict[str, Any]:
    document: dict[str, Any] = {
        "media_type": checked.media_type,
        "description": checked.description,
        "input_schema": checked.input_schema,
        "output_schema": checked.output_schema,
        "details": {"shape": checked.shape} if checked.shape else None,
        "warnings": list(checked.warnings),
        "overview": f"# {name}\n\n*A {definition_type} definition.*\n\n{checked.overview}",
        "uses": [{"type": u.type, "name": u.name, "how": u.how} for u in checked.uses],
    }
    document.update(checked.extra)
    return document


def _definition_record(
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


def _version_of(row: Mapping[str, Any]) -> DefinitionVersion:
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


def check_source_size(source: str) -> None:
    if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
        raise invalid_input(
            [InputIssue(f"source: expected a document of at most {MAX_SOURCE_BYTES:,} UTF-8 bytes.", "/source")]
        )


class DefinitionRegistry:
    """Commands and reads over the definitions of every type."""

    def __init__(self, ledger: Ledger, types: Mapping[str, FunctionType]) -> None:
        self.ledger = ledger
        self.types = types
        self.saves: OneAtATime[tuple[str, str]] = OneAtATime()
        """A turn per (org, playbook): its saves and retirements read, decide and append one at a time in this
        process, after the document's check (which runs outside the turn, so slow checks overlap)."""

    async def _row(self, scope: PlaybookScope, definition_type: str, name: str) -> DefinitionVersion | None:
        rows = await self.ledger.fetch(
            "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND name = ?",
            (scope.org, scope.playbook, definition_type, name),
        )
        return _version_of(DEFINITIONS_PROJECTION.decode_row(rows[0])) if rows else None

    async def latest(self, scope: PlaybookScope, definition_type: str, name: str) -> DefinitionVersion:
        row = await self._row(scope, definition_type, name)
        if row is None:
            raise not_found(f"The playbook {scope.playbook} has no {definition_type} definition {name}.")
        return row

    async def _appended(self, stream: Any, expected: int, record: NewRecord) -> bool:
        """Append ``record`` if the stream is still at ``expected``; False when another change came first."""
        try:
            await self.ledger.append([StreamWrite(stream, expected, [record])])
        except VersionConflict:
            return False
        return True

    async def _save(
        self, scope: PlaybookScope, definition_type: str, name: str, source: str, by: str, *, creating: bool
    ) -> DefinitionVersion:
        check_source_size(source)
        checked = await self.types[definition_type].check(source)
        stream = definitions_stream(scope, definition_type)
        async with self.saves.turn((scope.org, scope.playbook)):
            for _ in range(ATTEMPTS):
                expected = await self.ledger.stream_version(stream)
                current = await self._row(scope, definition_type, name)
                if creating and current is not None:
                    raise conflict(
                        f"The playbook already has or had a {definition_type} definition {name}; "
                        "a name is never reused."
                    )
                if not creating:
                    if current is None:
                        raise not_found(f"The playbook {scope.playbook} has no {definition_type} definition {name}.")
                    if current.status == "retired":
                        raise conflict(f"The {definition_type} definition {name} is retired, so it cannot change.")
                    if current.source == source:
                        return current
                if checked.extra.get("triggers"):
                    await self._check_room_for_triggers(scope, definition_type, name)
                version = 1 if current is None else current.version + 1
                document = _document_of(checked, name, definition_type)
                data = {"name": name, "version": version, "source": source, **document}
                kind = DEFINITION_CREATED if creating else DEFINITION_UPDATED
                record = _definition_record(kind, data, by, definition_type, name, version)
                if await self._appended(stream, expected, record):
                    return await self.latest(scope, definition_type, name)
        raise conflict(CHANGED_AT_THE_SAME_MOMENT)

    async def _check_room_for_triggers(self, scope: PlaybookScope, definition_type: str, name: str) -> None:
        """`conflict` when the playbook has `MAX_TRIGGERED_WORKFLOWS` other active definitions with triggers."""
        rows = await self.ledger.fetch(
            "SELECT name, document FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND status = ?",
            (scope.org, scope.playbook, definition_type, "active"),
        )
        others = sum(
            1
            for row in rows
            if row["name"] != name and DEFINITIONS_PROJECTION.decode_row(row)["document"].get("triggers")
        )
        if others >= MAX_TRIGGERED_WORKFLOWS:
            raise conflict(
                f"The playbook already has {MAX_TRIGGERED_WORKFLOWS:,} workflows with triggers; "
                "retire one or save this workflow without a schedule."
            )

    async def create(
        self, scope: PlaybookScope, definition_type: str, name: str, source: str, by: str
    ) -> DefinitionVersion:
        return await self._save(scope, definition_type, name, source, by, creating=True)

    async def update(
        self, scope: PlaybookScope, definition_type: str, name: str, source: str, by: str
    ) -> DefinitionVersion:
        return await self._save(scope, definition_type, name, source, by, creating=False)

    async def retire(self, scope: PlaybookScope, definition_type: str, name: str, by: str) -> DefinitionVersion:
        stream = definitions_stream(scope, definition_type)
        async with self.saves.turn((scope.org, scope.playbook)):
            for _ in range(ATTEMPTS):
                expected = await self.ledger.stream_version(stream)
                current = await self.latest(scope, definition_type, name)
                if current.status == "retired":
                    return current
                data = {"name": name, "version": current.version}
                record = _definition_record(DEFINITION_RETIRED, data, by, definition_type, name, current.version)
                if await self._appended(stream, expected, record):
                    return await self.latest(scope, definition_type, name)
        raise conflict(CHANGED_AT_THE_SAME_MOMENT)

    async def listed(
        self, scope: PlaybookScope, definition_type: str, include_retired: bool
    ) -> list[DefinitionVersion]:
        rows = await self.ledger.fetch(
            "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? ORDER BY name",
            (scope.org, scope.playbook, definition_type),
        )
        versions = [_version_of(DEFINITIONS_PROJECTION.decode_row(row)) for row in rows]
        return [v for v in versions if include_retired or v.status == "active"]

    async def count_active(self, scope: PlaybookScope, definition_type: str) -> int:
        rows = await self.ledger.fetch(
            "SELECT COUNT(*) AS n FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND status = ?",
            (scope.org, scope.playbook, definition_type, "active"),
        )
        return int(rows[0]["n"])

    async def users_of(self, scope: PlaybookScope, definition_type: str, name: str) -> list[tuple[str, str, str]]:
        """The active definitions of the playbook that use this one, as (type, name, how)."""
        rows = await self.ledger.fetch(
            "SELECT type, name, document FROM definitions WHERE org = ? AND playbook = ? AND status = ?",
            (scope.org, scope.playbook, "active"),
        )
        users = {
            (row["type"], row["name"], use["how"])
            for row in rows
            for use in DEFINITIONS_PROJECTION.decode_row(row)["document"].get("uses", [])
            if use["type"] == definition_type and use["name"] == name
        }
        return sorted(users)

    async def shown(self, scope: PlaybookScope, version: DefinitionVersion, *, with_overview: bool) -> dict[str, Any]:
        """The definition as create, update, get and retire return it (list leaves the overview out)."""
        document = version.document
        shown: dict[str, Any] = {
            "type": version.type,
            "name": version.name,
            "version": version.version,
            "status": version.status,
            "media_type": document["media_type"],
        }
        if document.get("description") is not None:
            shown["description"] = document["description"]
        for key in ("input_schema", "output_schema", "details"):
            if document.get(key) is not None:
                shown[key] = document[key]
        if document.get("warnings"):
            shown["warnings"] = document["warnings"]
        if document.get("triggers"):
            shown["triggers"] = document["triggers"]
            if with_overview and version.status == "active":
                shown["triggers_since"] = version.saved_record_id
        shown["created_at"] = version.created_at
        shown["created_by"] = version.created_by
        shown["updated_at"] = version.updated_at
        if version.retired_at is not None:
            shown["retired_at"] = version.retired_at
        if with_overview:
            shown["source"] = version.source
            users = await self.users_of(scope, version.type, version.name)
            shown["overview"] = str(document["overview"]) + used_by_section(users)
        return shown
