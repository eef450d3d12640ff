"""What a page of a playbook's history is to one recall view: checkpoints, the view's fold program and the page
items its records become (pure: no I/O, shared by the playbook's pass and its view actors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.recall.document import RecallDocument
from auto_runtime.functions.recall.fold_page import FoldProgram, PageItem
from auto_runtime.ledger import Record
from auto_runtime.ledger.paging import SortKey
from auto_runtime.runs.facts import RUN_FAILED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED

RUN_FACTS = frozenset({RUN_STARTED, RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED})

PageEvent = tuple[SortKey, Record, Mapping[str, Any] | None]
"""A record of a page read once for the playbook: its place, the record, and the event it is (None: no event,
or one passed over)."""


def checkpoint_of(key: SortKey) -> str:
    """The opaque checkpoint text of a record's place in the history (two equal ones name one place)."""
    return f"{key[0]}.{key[1]}"


def key_of(checkpoint: str | None) -> SortKey | None:
    if checkpoint is None:
        return None
    first, _dot, second = checkpoint.partition(".")
    return int(first), int(second)


def program_of(document: RecallDocument) -> FoldProgram:
    wheres: list[str] = []
    for event_filter in document.filters:
        if event_filter.where is not None and event_filter.where not in wheres:
            wheres.append(event_filter.where)
    return FoldProgram(document.module, document.module_first_line, tuple(wheres), document.view_schema)


def item_for(
    name: str,
    document: RecallDocument,
    program: FoldProgram,
    key: SortKey,
    record: Record,
    event: Mapping[str, Any] | None,
) -> PageItem:
    """The page item a record is for this view: with its event and `where` indices when a filter may take it."""
    at = record.metadata.get("at")
    at_text = at if isinstance(at, str) else iso_utc(record.recorded_at)
    checkpoint = checkpoint_of(key)
    if event is None:
        return PageItem(checkpoint, at_text)
    if record.type in RUN_FACTS and event.get("subject") == f"recall/{name}":
        return PageItem(checkpoint, at_text)
    wheres: list[int] = []
    for event_filter in document.filters:
        if not event_filter.literal_holds(event):
            continue
        if event_filter.where is None:
            return PageItem(checkpoint, at_text, event, tuple(wheres), True)
        index = program.wheres.index(event_filter.where)
        if index not in wheres:
            wheres.append(index)
    return PageItem(checkpoint, at_text, event if wheres else None, tuple(wheres), False)
