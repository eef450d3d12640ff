"""The playbook actor: one per (org, playbook) in this process, the one writer of its definitions and the keeper
of their current versions, and the one place its run slots are claimed (`run_slots`: one build at a time per
prediction function, checked beside the definitions' `max_active`).

State: the playbook's parsed documents in the one cache of them (`definition_documents`, dropped when a life
starts), and for each definition type, the latest version of every definition of that type in the playbook (as the
`definitions` projection keeps it) and the version of the type's stream `playbook/<org>/<playbook>/definitions/
<type>` that this state stands for. A new life rebuilds it from the ledger in `on_start`: each type's stream
version first, the projection's rows after, so rows newer than a version read are caught by the next check.

Across servers (several servers on one PostgreSQL ledger): another server may change a definition. Every
command reads its type's stream version first (one indexed row) and reads that type's rows again when the
version moved, so a decision is never made on a stale version; the append states the version the decision was
made on, and a version clash (another server won in between) makes the command read and decide again, up to
`ATTEMPTS` times, then answer `conflict` (the ledger's `decide_and_append`). A command's own append is folded into
the state without a read.

Concurrency rules: one command at a time, from a bounded mailbox (a full one refuses with `MailboxFull`). The
document's check (parsing, the sandbox's check) happens before the command reaches the mailbox, so slow checks
of one playbook overlap; only the read-decide-append step takes turns. A `Rejection` decided by a command is its
answer (returned, not raised), so a refused save does not end the life; any other error does, and the registry
starts the next life from the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.actors import Actor
from auto_runtime.ledger import Folded, Ledger, NewRecord, PlaybookScope, Record, decide_and_append
from auto_runtime.playbooks.definition_documents import DefinitionDocuments
from auto_runtime.playbooks.definition_facts import (
    ATTEMPTS,
    DEFINITION_CREATED,
    DEFINITION_RETIRED,
    DEFINITION_UPDATED,
    DEFINITIONS_PROJECTION,
    MAX_TRIGGERED_WORKFLOWS,
    DefinitionVersion,
    definition_record,
    definitions_stream,
    row_after,
    version_of,
)
from auto_runtime.playbooks.run_slots import RunSlots, SlotAnswer, SlotCommand
from auto_runtime.problems import Rejection, changed_at_the_same_moment, conflict, not_found

PlaybookKey = tuple[str, str]
"""(org, playbook)."""


@dataclass(frozen=True)
class SaveDefinition:
    """Create (`creating`) or update a definition with a checked `document` (the projection's document fields)."""

    definition_type: str
    name: str
    source: str
    by: str
    creating: bool
    document: Mapping[str, Any]
    max_active: int | None = None
    """The most active definitions of this type the playbook keeps, when the type has such a bound."""


@dataclass(frozen=True)
class RetireDefinition:
    definition_type: str
    name: str
    by: str


DefinitionCommand = SaveDefinition | RetireDefinition
PlaybookCommand = DefinitionCommand | SlotCommand
PlaybookAnswer = DefinitionVersion | Rejection | SlotAnswer


class PlaybookActor(Actor[PlaybookCommand, PlaybookAnswer]):
    """One life of a playbook's actor (see the module's rules)."""

    def __init__(
        self, ledger: Ledger, types: Iterable[str], key: PlaybookKey, documents: DefinitionDocuments | None = None
    ) -> None:
        self.ledger = ledger
        self.key = key
        self.documents = documents
        self.scope = PlaybookScope(*key)
        self.types = tuple(types)
        self._versions: dict[str, int] = {}
        self._definitions: dict[str, dict[str, DefinitionVersion]] = {}
        self.slots = RunSlots(ledger, self.scope)
        """The runs this life granted a slot to that are still starting (see `run_slots`)."""

    async def on_start(self) -> None:
        if self.documents is not None:
            self.documents.forget(self.key)  # parsed again from the ledger's sources as runs ask
        if not self.types:
            return  # a playbook actor of a host that keeps no definitions (a run store on its own)
        for definition_type in self.types:
            self._versions[definition_type] = await self.ledger.stream_version(
                definitions_stream(self.scope, definition_type)
            )
            self._definitions[definition_type] = {}
        rows = await self.ledger.queries.definitions.of_playbook(self.scope.org, self.scope.playbook)
        for row in rows:
            version = version_of(DEFINITIONS_PROJECTION.decode_row(row))
            self._definitions.setdefault(version.type, {})[version.name] = version

    async def receive(self, message: PlaybookCommand) -> PlaybookAnswer:
        match message:
            case SaveDefinition():
                return await self._save(message)
            case RetireDefinition():
                return await self._retire(message)
            case _:
                return await self.slots.handle(message)

    async def _current(self, definition_type: str) -> dict[str, DefinitionVersion]:
        """The type's definitions, read again when another server moved its stream since they were read (never,
        on a sole-writer ledger: this actor makes every change of its playbook's definitions)."""
        if self.ledger.sole_writer and self._versions.get(definition_type, -1) >= 0:
            return self._definitions[definition_type]
        stream = definitions_stream(self.scope, definition_type)
        version = await self.ledger.stream_version(stream)
        if version != self._versions.get(definition_type):
            rows = await self.ledger.queries.definitions.of_type(self.scope.org, self.scope.playbook, definition_type)
            self._definitions[definition_type] = {
                row["name"]: version_of(DEFINITIONS_PROJECTION.decode_row(row)) for row in rows
            }
            self._versions[definition_type] = version
        return self._definitions[definition_type]

    async def _decided(
        self, definition_type: str, decide: Callable[[dict[str, DefinitionVersion]], list[NewRecord]]
    ) -> tuple[dict[str, DefinitionVersion], DefinitionVersion | None]:
        """Decide on the type's definitions and append at the version they stand for, reading and deciding again
        when another server won; the definitions decided on, and the record appended folded in (None when the
        decision appended nothing)."""

        async def load() -> Folded[dict[str, DefinitionVersion]]:
            definitions = await self._current(definition_type)
            return Folded(definitions, self._versions[definition_type])

        def forget() -> None:
            self._versions[definition_type] = -1

        decided = await decide_and_append(
            self.ledger,
            definitions_stream(self.scope, definition_type),
            load,
            decide,
            clashed=changed_at_the_same_moment,
            attempts=ATTEMPTS,
            forget=forget,
        )
        if not decided.appended:
            return decided.state, None
        (appended,) = decided.appended
        self._versions[definition_type] = decided.version + 1
        return decided.state, self._fold(definition_type, appended)

    def _fold(self, definition_type: str, record: Record) -> DefinitionVersion:
        definitions = self._definitions[definition_type]
        name = str(record.data["name"])
        current = definitions.get(name)
        before = None if current is None else _row_of(current)
        after = row_after(before, record)
        assert after is not None
        folded = version_of({**after, "type": definition_type, "name": name})
        definitions[name] = folded
        return folded

    async def _save(self, command: SaveDefinition) -> PlaybookAnswer:
        definition_type, name = command.definition_type, command.name

        def decide(definitions: dict[str, DefinitionVersion]) -> list[NewRecord]:
            current = definitions.get(name)
            if command.creating and current is not None:
                raise conflict(
                    f"The playbook already has or had a {definition_type} definition {name}; a name is never reused."
                )
            if not command.creating:
                if current is None:
                    raise not_found(f"The playbook {self.scope.playbook} has no {definition_type} definition {name}.")
                if current.status == "retired":
                    raise conflict(f"The {definition_type} definition {name} is retired, so it cannot change.")
                if current.source == command.source:
                    return []
            if command.document.get("triggers") and _others_with_triggers(definitions, name) >= MAX_TRIGGERED_WORKFLOWS:
                raise conflict(
                    f"The playbook already has {MAX_TRIGGERED_WORKFLOWS:,} workflows with triggers; "
                    "retire one or save this workflow without a schedule."
                )
            if command.creating and command.max_active is not None:
                active = sum(1 for other in definitions.values() if other.status == "active")
                if active >= command.max_active:
                    raise conflict(
                        f"This playbook keeps {active} active {definition_type} functions and may keep at most "
                        f"{command.max_active}; retire one first"
                    )
            version = 1 if current is None else current.version + 1
            data = {"name": name, "version": version, "source": command.source, **command.document}
            kind = DEFINITION_CREATED if command.creating else DEFINITION_UPDATED
            return [definition_record(kind, data, command.by, definition_type, name, version)]

        try:
            definitions, saved = await self._decided(definition_type, decide)
        except Rejection as rejection:
            return rejection
        return saved if saved is not None else definitions[name]  # the same source: the current version

    async def _retire(self, command: RetireDefinition) -> PlaybookAnswer:
        definition_type, name = command.definition_type, command.name

        def decide(definitions: dict[str, DefinitionVersion]) -> list[NewRecord]:
            current = definitions.get(name)
            if current is None:
                raise not_found(f"The playbook {self.scope.playbook} has no {definition_type} definition {name}.")
            if current.status == "retired":
                return []
            data = {"name": name, "version": current.version}
            return [definition_record(DEFINITION_RETIRED, data, command.by, definition_type, name, current.version)]

        try:
            definitions, retired = await self._decided(definition_type, decide)
        except Rejection as rejection:
            return rejection
        return retired if retired is not None else definitions[name]  # already retired


def _others_with_triggers(definitions: Mapping[str, DefinitionVersion], name: str) -> int:
    return sum(
        1
        for other in definitions.values()
        if other.name != name and other.status == "active" and other.document.get("triggers")
    )


def _row_of(version: DefinitionVersion) -> dict[str, Any]:
    return {
        "version": version.version,
        "status": version.status,
        "source": version.source,
        "document": version.document,
        "created_at": version.created_at,
        "created_by": version.created_by,
        "updated_at": version.updated_at,
        "retired_at": version.retired_at,
        "saved_record_id": version.saved_record_id,
    }
