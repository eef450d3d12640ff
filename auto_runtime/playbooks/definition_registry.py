"""Definitions of every type: versions as facts on `playbook/<org>/<playbook>/definitions/<type>`.

One stream per type holds every definition of that type in the playbook. The `definitions` projection keeps
each definition's latest version in the append's transaction. A save is checked first (outside any turn, so
slow checks overlap), then handed to the playbook's actor (`playbook_actor`), which decides on its playbook's
current versions and appends with the type's stream version: inside one process two saves of one playbook
never race, and only another server's change can clash with them (the actor reads and decides again).

Rules (seeds, "Reasoning functions", for every type): names follow the playbook id rule and are unique within
their type and playbook, never reused after retirement; a source is at most 65,536 UTF-8 bytes; a changed
document makes a version and an identical one records nothing; a retired definition is readable, not editable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.function_type import CheckedDocument, ChecksInPlaybook, FunctionType
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_facts import (
    DEFINITION_CREATED,
    DEFINITION_RETIRED,
    DEFINITION_UPDATED,
    DEFINITIONS_PROJECTION,
    MAX_SOURCE_BYTES,
    MAX_TRIGGERED_WORKFLOWS,
    DefinitionVersion,
    definitions_stream,
    version_of,
)
from auto_runtime.playbooks.known_rows import KnownRows
from auto_runtime.playbooks.overview import used_by_section
from auto_runtime.playbooks.playbook_actor import DefinitionCommand, RetireDefinition, SaveDefinition
from auto_runtime.playbooks.playbook_host import PlaybookActors
from auto_runtime.problems import InputIssue, Rejection, invalid_input, not_found

__all__ = [
    "DEFINITIONS_PROJECTION",
    "DEFINITION_CREATED",
    "DEFINITION_RETIRED",
    "DEFINITION_UPDATED",
    "MAX_TRIGGERED_WORKFLOWS",
    "DefinitionRegistry",
    "DefinitionVersion",
    "definitions_stream",
]


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


def check_source_size(source: str) -> None:
    if len(source.encode("utf-8")) > MAX_SOURCE_BYTES:
        raise invalid_input(
            [InputIssue(f"source: expected a document of at most {MAX_SOURCE_BYTES:,} UTF-8 bytes.", "/source")]
        )


KNOWN_DEFINITIONS = 10_000
"""How many definitions' latest versions a registry over a sole-writer ledger keeps (their parsed documents are
shared with the playbook actors' own state, so each costs little more than its key)."""


class DefinitionRegistry:
    """Commands and reads over the definitions of every type. Run `actors` (the registry of playbook actors, a
    child of the playbooks supervisor) before the first command."""

    def __init__(
        self,
        ledger: Ledger,
        types: Mapping[str, FunctionType],
        limits: ActorLimits | None = None,
        max_active: Mapping[str, int] | None = None,
    ) -> None:
        self.ledger = ledger
        self.types = types
        self.max_active = dict(max_active or {})
        """The most active definitions of a type one playbook keeps, for the types that have such a bound
        (`PREDICTION_MAX_FUNCTIONS`); the playbook's actor refuses a save past it as `conflict`."""
        self.actors = PlaybookActors(ledger, types, limits)
        """One actor per (org, playbook): its saves and retirements decide and append one at a time in this
        process, after the document's check (which runs outside the actor, so slow checks overlap); each one
        hosts its playbook's run actors (`playbook_host`)."""
        self._known: KnownRows[tuple[str, str, str, str], DefinitionVersion] | None = (
            KnownRows(KNOWN_DEFINITIONS) if ledger.sole_writer else None
        )
        """On a sole-writer ledger, the latest version of each definition read, by (org, playbook, type, name):
        the version every run of it reads first. A save or retirement forgets its key (this process makes every
        change), so the next read after one reads the projection again."""

    async def _command(self, scope: PlaybookScope, command: DefinitionCommand) -> DefinitionVersion:
        try:
            answer = await self.actors.ask((scope.org, scope.playbook), command)
        finally:
            if self._known is not None:
                self._known.forget((scope.org, scope.playbook, command.definition_type, command.name))
        if isinstance(answer, Rejection):
            raise answer
        assert isinstance(answer, DefinitionVersion), answer
        return answer

    async def _row(self, scope: PlaybookScope, definition_type: str, name: str) -> DefinitionVersion | None:
        key = (scope.org, scope.playbook, definition_type, name)
        known = self._known
        if known is not None and (version := known.get(key)) is not None:
            return version
        ticket = known.ticket() if known is not None else 0
        row = await self.ledger.queries.definitions.row(scope.org, scope.playbook, definition_type, name)
        if row is None:
            return None
        version = version_of(DEFINITIONS_PROJECTION.decode_row(row))
        if known is not None:
            known.fill(key, version, ticket)
        return version

    async def latest(self, scope: PlaybookScope, definition_type: str, name: str) -> DefinitionVersion:
        row = await self._row(scope, definition_type, name)
        if row is None:
            raise not_found(f"The playbook {scope.playbook} has no {definition_type} definition {name}.")
        return row

    async def _save(
        self, scope: PlaybookScope, definition_type: str, name: str, source: str, by: str, *, creating: bool
    ) -> DefinitionVersion:
        check_source_size(source)
        function_type = self.types[definition_type]
        if isinstance(function_type, ChecksInPlaybook):
            checked = await function_type.check_in(scope, source)
        else:
            checked = await function_type.check(source)
        document = _document_of(checked, name, definition_type)
        max_active = self.max_active.get(definition_type)
        return await self._command(
            scope, SaveDefinition(definition_type, name, source, by, creating, document, max_active)
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
        return await self._command(scope, RetireDefinition(definition_type, name, by))

    async def listed(
        self, scope: PlaybookScope, definition_type: str, include_retired: bool
    ) -> list[DefinitionVersion]:
        rows = await self.ledger.queries.definitions.of_type(scope.org, scope.playbook, definition_type)
        versions = [version_of(DEFINITIONS_PROJECTION.decode_row(row)) for row in rows]
        return [v for v in versions if include_retired or v.status == "active"]

    async def count_active(self, scope: PlaybookScope, definition_type: str) -> int:
        return await self.ledger.queries.definitions.count_active(scope.org, scope.playbook, definition_type)

    async def users_of(self, scope: PlaybookScope, definition_type: str, name: str) -> list[tuple[str, str, str]]:
        """The active definitions of the playbook that use this one, as (type, name, how)."""
        rows = await self.ledger.queries.definitions.active_documents(scope.org, scope.playbook)
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
