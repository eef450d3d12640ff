"""The playbook's events: `list_playbook_events` and `get_event`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.operations.definition_operations import PLAYBOOK_READ
from auto_runtime.operations.fields import OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.run_operations import (
    CURSOR_DESCRIPTION,
    LIMIT_DESCRIPTION,
    READ_ONE_EVENT,
    EventListOutput,
    EventOutput,
    RunId,
)
from auto_runtime.operations.services import services_of
from auto_runtime.playbooks.event_reads import EVENT_ID

EVENT_ID_PATTERN = EVENT_ID.pattern.replace("0-9a-f", "0-9a-fA-F")
"""`EVENT_ID` for the OpenAPI document: the reader matches it ignoring case, and a JSON Schema pattern has no flags."""


class ListEventsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: OrLeftOut[str] = Field(default=None, description="Keep the events of one type")
    since: OrLeftOut[str] = Field(
        default=None,
        description="Keep what the playbook recorded from this time on, an ISO 8601 time with its offset",
        examples=["2026-10-05T09:00:00Z"],
    )
    run_id: OrLeftOut[RunId] = Field(
        default=None, description="Keep what one run and every run it started recorded: its whole tree"
    )
    order: Literal["asc", "desc"] = Field(default="desc", description="Newest first (desc) or oldest first (asc)")
    limit: int = Field(default=20, ge=1, le=100, description=LIMIT_DESCRIPTION)
    cursor: OrLeftOut[str] = Field(default=None, description=CURSOR_DESCRIPTION)


class EventInPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event_id: str = Field(
        description="The event's own id, as list_playbook_events and get_run_history show it; not the CloudEvents "
        "id publish_event answers"
    )


async def list_playbook_events(context: OperationContext, data: ListEventsInput) -> dict[str, Any]:
    return await services_of(context.services).events.list_events(
        context.scope,
        event_type=data.type,
        since=data.since,
        run_id=data.run_id,
        order=data.order,
        limit=data.limit,
        cursor=data.cursor,
    )


async def get_event(context: OperationContext, data: EventInPath) -> dict[str, Any]:
    return await services_of(context.services).events.get_event(context.scope, data.event_id)


EVENT_OPERATIONS = (
    Operation(
        name="list_playbook_events",
        title="List the playbook's events",
        description=(
            "Lists what the playbook recorded, newest first unless order is asc, a page at a time: definitions "
            "saved, runs started and ended, tool calls, workflow steps and published events. Filter with type, "
            "since, or run_id for one run's whole tree, such as the functions a workflow called. Large values "
            "show as sizes; get_event reads one event in full."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/events",
        input_model=ListEventsInput,
        output_model=EventListOutput,
        handler=list_playbook_events,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="events",
        reasons=frozenset({"invalid_input"}),
        links={"get_event": READ_ONE_EVENT},
    ),
    Operation(
        name="get_event",
        title="Read an event",
        description=(
            "Reads one event of the playbook in full by its id, as a listing shows it: every field of its data, "
            "such as a tool's whole result or a run's whole input. Use it to open a value a listing shows only "
            "as its size. list_playbook_events finds the id of an event. The id is the event's own, not the "
            "CloudEvents id publish_event answers: a published event is listed as an event_published event with "
            "an id of its own, and the CloudEvents id as data.event_id."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/events/{event_id}",
        input_model=EventInPath,
        output_model=EventOutput,
        handler=get_event,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="events",
        reasons=frozenset({"not_found", "invalid_input"}),
        openapi_keywords={"event_id": {"pattern": EVENT_ID_PATTERN}},
    ),
)
