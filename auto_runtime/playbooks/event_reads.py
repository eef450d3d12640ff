"""Reading a playbook's events and one run's history, a page at a time."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal

from auto_runtime.ledger import MAX_PAGE_BYTES, InvalidCursor, Ledger, PlaybookScope
from auto_runtime.playbooks.cursors import decode_cursor, encode_cursor, foreign_cursor
from auto_runtime.playbooks.event_view import event_of, is_event
from auto_runtime.problems import InputIssue, invalid_input, not_found
from auto_runtime.runs.facts import run_stream

EVENT_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(_[1-9][0-9]*)?$", re.IGNORECASE)
STEP_SUFFIX = re.compile(r"^(.+)_([0-9]+)$")


def parse_since(text: str) -> datetime:
    """An ISO 8601 time with its offset, on a real calendar date, hour 00 to 23."""
    issue = InputIssue(
        "since: expected an ISO 8601 time with its offset on a real date, such as 2026-10-05T09:00:00Z.", "/since"
    )
    if not re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$", text):
        raise invalid_input([issue])
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise invalid_input([issue]) from None
    if moment.tzinfo is None:
        raise invalid_input([issue])
    return moment


class EventReads:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def list_events(
        self,
        scope: PlaybookScope,
        *,
        event_type: str | None,
        since: str | None,
        run_id: str | None,
        order: Literal["asc", "desc"],
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        since_moment = parse_since(since) if since is not None else None
        try:
            page = await self.ledger.read_playbook(
                scope,
                order=order,
                types={event_type} if event_type else None,
                since=since_moment,
                correlation_id=run_id,
                limit=limit,
                cursor=cursor,
            )
        except InvalidCursor:
            raise foreign_cursor() from None
        events = [event_of(record) for record in page.records if is_event(record)]
        return {"events": events, "has_more": page.has_more, "next_cursor": page.next_cursor}

    async def get_event(self, scope: PlaybookScope, event_id: str, *, full: bool = True) -> dict[str, Any]:
        step = STEP_SUFFIX.match(event_id)
        if not EVENT_ID.match(event_id) or (step is not None and step.group(2).startswith("0")):
            raise invalid_input(
                [
                    InputIssue(
                        "event_id: expected an event id: a UUID, or a step's input id, an underscore and its "
                        "number from 1 without a leading zero.",
                        "/event_id",
                    )
                ]
            )
        record = await self.ledger.read_record(scope, event_id)
        if record is None or not is_event(record):
            raise not_found(f"The playbook {scope.playbook} has no event {event_id}.")
        return event_of(record, full=full)

    async def run_history(
        self, scope: PlaybookScope, run_id: str, *, order: Literal["asc", "desc"], limit: int, cursor: str | None
    ) -> dict[str, Any]:
        records = await self.ledger.read_stream(run_stream(scope, run_id)) if EVENT_ID.match(run_id) else []
        if not records:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        records = [r for r in records if is_event(r)]
        if order == "desc":
            records.reverse()
        start = _history_start(decode_cursor(cursor, scope, f"history/{run_id}/{order}")) if cursor else 0
        page: list[dict[str, Any]] = []
        loaded = 0
        index = start
        while index < len(records) and len(page) < limit and loaded < MAX_PAGE_BYTES:
            event = event_of(records[index])
            loaded += len(json.dumps(records[index].data, ensure_ascii=False).encode("utf-8", "surrogatepass"))
            page.append(event)
            index += 1
        more = index < len(records)
        next_cursor = encode_cursor(scope, f"history/{run_id}/{order}", {"n": index}) if more else None
        return {"events": page, "has_more": more, "next_cursor": next_cursor}


def _history_start(position: dict[str, Any]) -> int:
    start = position.get("n")
    if not isinstance(start, int) or start < 0:
        raise foreign_cursor()
    return start
