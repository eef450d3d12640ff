"""cron and every triggers as due-work entries (spec 10, "Schedules").

Each schedule trigger of a workflow's latest version has one armed entry at a time, in the pseudo-run
`schedule_run_id(name)` of its playbook, keyed `trigger:<kind>:<anchor record id>:<due ms>`. That pseudo-run id is
no UUID, so the entry belongs to the partition of its playbook (`partitions.partition_of_due`), whose holder
carries the playbook's reactions and fires each due time once. Releases before kept them in a pseudo-run that is
a UUID (`earlier_schedule_run_id`), placed by its own hash: such an entry is still read and fired, and the due
time after it is armed in the playbook's pseudo-run, so a schedule moves to its playbook's partition at its next
firing. The anchor is the
record that saved the trigger in its current form (`WorkflowVersions.anchor`); the first due time is the first
cron minute after it, or the anchor plus one period for `every`. Because the key spells the anchor and the due
time, arming is idempotent (arming a fired or cancelled key changes nothing), a changed trigger gets new keys,
and an unchanged one keeps its entries across versions.

The entry's payload carries what firing needs and the run the trigger last started (`previous_run_id`), so a
due time while that run is still running is skipped, across versions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from auto_runtime.functions.workflow.cron import Cron, every_next_due, parse_cron
from auto_runtime.ledger import DueEntry, PlaybookScope
from auto_runtime.workflow_host.workflow_versions import SavedVersion

TRIGGER_KEY_PREFIX: Final = "trigger:"
QUEUED_PREFIX: Final = "trigger:queued:"
SCHEDULE_KINDS: Final = ("cron", "every")
_NAMESPACE: Final = uuid.UUID("0b8f6d2a-4c1e-5e7f-8a9b-3d5c7e9f1a2b")


def is_trigger_key(key: str) -> bool:
    """Whether a due-work key belongs to the reactions (`Reactions.fire` takes it)."""
    return key.startswith(TRIGGER_KEY_PREFIX)


def schedule_run_id(name: str) -> str:
    """The pseudo-run whose due-work entries are the schedules and queued starts of one workflow: not a UUID (a
    stream segment of at most 64 characters whatever the name), so its entries go with the playbook's partition."""
    return "schedule-" + uuid.UUID(earlier_schedule_run_id(name)).hex


def earlier_schedule_run_id(name: str) -> str:
    """The pseudo-run of releases before partitions spread reactions (a UUID: placed by its own hash)."""
    return str(uuid.uuid5(_NAMESPACE, f"schedule\n{name}"))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass(frozen=True)
class Schedule:
    """One cron or every trigger with its anchor."""

    kind: str
    reference: str
    anchor_id: str
    anchor_ms: int
    cron: Cron | None = None
    period_ms: int | None = None

    def next_after(self, after_ms: int) -> int:
        """The first due time strictly after `after_ms`."""
        if self.cron is not None:
            return _ms(self.cron.next_due(_moment(after_ms)))
        assert self.period_ms is not None
        return every_next_due(self.anchor_ms, self.period_ms, after_ms)

    def first(self) -> int:
        return self.next_after(self.anchor_ms)

    def latest_due(self, due_ms: int, now_ms: int) -> int:
        """The latest due time at or before `now_ms`, from `due_ms` on (itself when the next is later)."""
        if self.period_ms is not None and now_ms >= due_ms:
            return due_ms + (now_ms - due_ms) // self.period_ms * self.period_ms
        latest = due_ms
        while (following := self.next_after(latest)) <= now_ms:
            latest = following
        return latest

    def key(self, due_ms: int) -> str:
        return f"{TRIGGER_KEY_PREFIX}{self.kind}:{self.anchor_id}:{due_ms}"

    def entry(self, scope: PlaybookScope, name: str, due_ms: int, previous_run_id: str | None) -> DueEntry:
        payload: dict[str, Any] = {
            "name": name,
            "kind": self.kind,
            "reference": self.reference,
            "anchor": self.anchor_id,
            "due": due_ms,
            "previous_run_id": previous_run_id,
        }
        return DueEntry(scope, schedule_run_id(name), self.key(due_ms), _moment(due_ms), payload)


def schedules_of(version: SavedVersion, anchors: dict[str, SavedVersion]) -> list[Schedule]:
    """The schedule triggers of a version, each with its anchor (`anchors` by reference)."""
    found: list[Schedule] = []
    for trigger in version.triggers:
        kind, reference = trigger.get("kind"), str(trigger.get("reference"))
        if kind not in SCHEDULE_KINDS or reference not in anchors:
            continue
        anchor = anchors[reference]
        anchor_ms = _ms(anchor.recorded_at)
        if kind == "cron":
            cron = parse_cron(trigger.get("expression"))
            if isinstance(cron, Cron):
                found.append(Schedule("cron", reference, anchor.record_id, anchor_ms, cron=cron))
        elif isinstance(trigger.get("milliseconds"), int) and trigger["milliseconds"] > 0:
            found.append(Schedule("every", reference, anchor.record_id, anchor_ms, period_ms=trigger["milliseconds"]))
    return found


def due_text(due_ms: int) -> str:
    """ISO 8601 UTC with milliseconds, as a schedule's run input shows its due time."""
    moment = _moment(due_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{due_ms % 1000:03d}Z"
