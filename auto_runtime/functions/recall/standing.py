"""What a view's row says to its readers: `get_definition`'s `standing`, and the words a run answers with while
the view cannot answer (rebuilding, waiting, stalled)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.recall.fold_page import WORDS
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.ledger.recall_views import ViewRow
from auto_runtime.problems import Rejection, conflict, unavailable

STALLED_DETAIL = (
    'The view of "{name}" is stalled at the {type} event recorded at {time}: {words}{line}. Saving a corrected '
    "version rebuilds it from the start of the playbook's history"
)
NOT_BEGUN = 'The view of "{name}" version {version} has not started building yet; try again shortly'
WAITS = (
    'The view of "{name}" version {version} waits for other views of this playbook to finish building; '
    "try again shortly"
)
BUILDING = (
    'The view of "{name}" version {version} is being built: {folded} events folded so far, {lag} behind the '
    "playbook's newest record; try again shortly"
)
REBUILDING_RETRY_AFTER = 5


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


async def newest_record_at(ledger: Ledger, scope: PlaybookScope) -> str | None:
    """When the playbook last recorded anything (its newest record's `metadata.at`), or None."""
    page = await ledger.read_playbook(scope, order="desc", limit=1)
    if not page.records:
        return None
    record = page.records[0]
    at = record.metadata.get("at")
    return at if isinstance(at, str) else iso_utc(record.recorded_at)


def lag_ms(row: ViewRow, newest: str | None) -> int | None:
    behind, ahead = _moment(row.checkpoint_at), _moment(newest)
    if behind is None or ahead is None:
        return None
    return max(0, int((ahead - behind).total_seconds() * 1000))


def lag_words(milliseconds: int | None) -> str:
    """The largest whole unit of days, hours, minutes or seconds (`1 day`, `3 minutes`), or `less than a second`."""
    seconds = (milliseconds or 0) // 1000
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return "less than a second"


def standing(row: ViewRow, newest: str | None) -> dict[str, Any]:
    """The `standing` of `get_definition` for the view's row."""
    shown: dict[str, Any] = {
        "state": row.state,
        "version": row.version,
        "checkpoint": row.checkpoint,
        "checkpoint_at": row.checkpoint_at,
        "folded": row.folded,
        "last_event": json.loads(row.last_event) if row.last_event else None,
        "lag_ms": lag_ms(row, newest),
        "newest_record_at": newest,
    }
    if row.state == "stalled" and row.stalled:
        shown["stalled"] = json.loads(row.stalled)
    return shown


def not_begun_standing(version: int, newest: str | None) -> dict[str, Any]:
    """The standing of a version whose row the keeper has not made yet."""
    return {
        "state": "rebuilding",
        "version": version,
        "checkpoint": None,
        "checkpoint_at": None,
        "folded": 0,
        "last_event": None,
        "lag_ms": None,
        "newest_record_at": newest,
    }


def stalled_detail(name: str, stalled: dict[str, Any]) -> str:
    event = stalled.get("event") or {}
    line = stalled.get("line")
    return STALLED_DETAIL.format(
        name=name,
        type=event.get("type"),
        time=event.get("time"),
        words=WORDS.get(str(stalled.get("kind")), ""),
        line=f", line {line}" if isinstance(line, int) else "",
    )


def cannot_answer(name: str, version: int, row: ViewRow | None, newest: str | None) -> Rejection | None:
    """Why a run of version `version` cannot answer from this row, or None when it can (the row is live, or a
    rebuilding view that has reached the end of the history the last pass read)."""
    if row is None or row.version != version or (row.state == "rebuilding" and row.checkpoint is None):
        return _rebuilding(NOT_BEGUN.format(name=name, version=version))
    if row.state == "waiting":
        return _rebuilding(WAITS.format(name=name, version=version))
    if row.state == "rebuilding":
        lag = lag_words(lag_ms(row, newest))
        return _rebuilding(BUILDING.format(name=name, version=version, folded=row.folded, lag=lag))
    if row.state == "stalled":
        return conflict(stalled_detail(name, json.loads(row.stalled or "{}")), kind="stalled")
    return None


def _rebuilding(detail: str) -> Rejection:
    return unavailable(detail, kind="rebuilding", retry_after=REBUILDING_RETRY_AFTER)


async def view_standing(ledger: Ledger, scope: PlaybookScope, name: str, version: int) -> dict[str, Any]:
    """The `standing` `get_definition` adds for an active recall function of version `version`."""
    row = await ledger.recall_views.one(scope.org, scope.playbook, name)
    newest = await newest_record_at(ledger, scope)
    if row is None or row.version != version:
        return not_begun_standing(version, newest)
    return standing(row, newest)
