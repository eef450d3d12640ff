"""The saved versions of a playbook's workflows, as the reaction rules need them (spec 10, "Versions").

`WorkflowVersions` mirrors the playbook's `definitions/workflow` stream (its records in stream order, each with
its global position and triggers) and answers:

- `current_at(global_position)`: per workflow, the version current when a record at that position was recorded
  (the last save at or before it; None after retirement). A save counts for its own record, so a
  `definition_created` can match the trigger it saved;
- `latest()`: the versions current now (for schedules, whose runs take the version current when the time came);
- `anchor(version, reference)`: the record that saved the trigger in its current form: walking back over the
  workflow's earlier saves while the trigger stayed the same (spec: unchanged keeps its anchor).

Versions are compared with records by global position. On PostgreSQL a save and an event committed at the same
moment may be ordered either way; either answer is one the two concurrent requests allow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auto_runtime.ledger import Ledger, PlaybookScope, Record
from auto_runtime.playbooks.definition_registry import DEFINITION_RETIRED, definitions_stream
from auto_runtime.playbooks.json_equality import json_equal

WORKFLOW = "workflow"


@dataclass(frozen=True)
class SavedVersion:
    """One record of the workflow stream: a save (`created`/`updated`) or a retirement."""

    record_id: str
    global_position: int
    retired: bool
    name: str
    version: int
    triggers: tuple[dict[str, Any], ...]
    recorded_at: datetime

    def trigger(self, reference: str) -> dict[str, Any] | None:
        return next((t for t in self.triggers if t.get("reference") == reference), None)


def _saved(record: Record) -> SavedVersion | None:
    data = record.data if isinstance(record.data, dict) else {}
    name, version = data.get("name"), data.get("version")
    if not isinstance(name, str) or not isinstance(version, int):
        return None
    triggers = data.get("triggers") if record.type != DEFINITION_RETIRED else None
    return SavedVersion(
        record.id,
        record.global_position,
        record.type == DEFINITION_RETIRED,
        name,
        version,
        tuple(t for t in triggers or () if isinstance(t, dict)),
        record.recorded_at,
    )


class WorkflowVersions:
    """The versions of one playbook's workflows; `refresh` reads the stream's records it has not seen yet."""

    def __init__(self, ledger: Ledger, scope: PlaybookScope) -> None:
        self.ledger = ledger
        self.scope = scope
        self.read = 0
        self.saves: dict[str, list[SavedVersion]] = {}

    async def refresh(self) -> None:
        records = await self.ledger.read_stream(definitions_stream(self.scope, WORKFLOW), from_position=self.read + 1)
        for record in records:
            self.read = record.position
            saved = _saved(record)
            if saved is not None:
                self.saves.setdefault(saved.name, []).append(saved)

    def _current(self, saves: list[SavedVersion], global_position: int | None) -> SavedVersion | None:
        found: SavedVersion | None = None
        for saved in saves:
            if global_position is not None and saved.global_position > global_position:
                break
            found = saved
        return None if found is None or found.retired else found

    def current_at(self, global_position: int) -> list[SavedVersion]:
        """The active versions current when the record at `global_position` was recorded."""
        found = (self._current(saves, global_position) for saves in self.saves.values())
        return [saved for saved in found if saved is not None]

    def latest(self, name: str) -> SavedVersion | None:
        return self._current(self.saves.get(name, []), None)

    def latest_all(self) -> list[SavedVersion]:
        found = (self._current(saves, None) for saves in self.saves.values())
        return [saved for saved in found if saved is not None]

    def anchor(self, version: SavedVersion, reference: str) -> SavedVersion:
        """The save from which the trigger at `reference` has had its form in `version`."""
        form = version.trigger(reference)
        saves = self.saves.get(version.name, [])
        anchor = version
        for saved in reversed(saves[: saves.index(version)] if version in saves else []):
            if saved.retired or not json_equal(saved.trigger(reference), form):
                break
            anchor = saved
        return anchor
