"""`publish_event`: a CloudEvents 1.0 event recorded in a playbook (seeds, "Publishing events").

The input schema describes the event for the OpenAPI document and the MCP tool, and checks the shapes it can
(types, lengths, the required attributes); the rules past a schema's reach (URI references, RFC 3339 times,
media types, forbidden characters, reserved names, nesting, the whole size) are `cloudevents.read_event`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from auto_runtime.events.cloudevents import (
    ATTRIBUTES,
    EXTENSION_DESCRIPTION,
    EXTENSION_NAME,
    MAX_EXTENSIONS,
    SPEC_VERSION,
)
from auto_runtime.operations.definition_operations import PLAYBOOK_WRITE
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of


def _attribute_schema(name: str) -> dict[str, Any]:
    attribute = ATTRIBUTES[name]
    schema: dict[str, Any] = {"description": attribute.description}
    if name == "specversion":
        schema["const"] = SPEC_VERSION
    elif name != "data":
        schema["type"] = "string"
    if name in ("source", "type", "id", "subject"):
        schema["minLength"] = 1
    if attribute.max_length is not None:
        schema["maxLength"] = attribute.max_length
    if name == "time":
        schema["format"] = "date-time"
    if name == "dataschema":
        schema["format"] = "uri"
    if attribute.examples:
        schema["examples"] = list(attribute.examples)
    return schema


CLOUD_EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The event to record, a CloudEvents 1.0 event with at least its source and type",
    "properties": {name: _attribute_schema(name) for name in ATTRIBUTES},
    "required": ["source", "type"],
    "additionalProperties": {"type": ["string", "boolean", "integer"], "description": EXTENSION_DESCRIPTION},
}


def _attribute_names() -> dict[str, Any]:
    """Every attribute's name: an extension's pattern, which the CloudEvents attributes' own names match too."""
    extension = {"pattern": EXTENSION_NAME.pattern}
    if all(EXTENSION_NAME.match(name) for name in ATTRIBUTES):
        return extension
    return {"anyOf": [{"enum": list(ATTRIBUTES)}, extension]}


EVENT_OPENAPI_KEYWORDS: dict[str, Any] = {
    "propertyNames": _attribute_names(),
    "maxProperties": len(ATTRIBUTES) + MAX_EXTENSIONS,
    "properties": {"source": {"format": "uri-reference"}},
}
"""What `cloudevents.read_event` checks that the OpenAPI document can state: attribute names, how many attributes
at most (every CloudEvents attribute and 32 extensions), and `source` a URI reference."""


class PublishEventInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    event: Annotated[dict[str, Any], WithJsonSchema(CLOUD_EVENT_SCHEMA)]


class PublishedEventOutput(BaseModel):
    id: str = Field(
        description="The CloudEvents id of the event, as given or as the runtime made it. It is not the id get_event "
        "takes: list_playbook_events shows the event as an event_published event with an id of its own, and this "
        "id as its data.event_id."
    )
    time: str = Field(description="When it happened, in ISO 8601 UTC with milliseconds")
    recorded_at: str = Field(description="When the playbook recorded it, in ISO 8601 UTC with milliseconds")


async def publish_event(context: OperationContext, data: PublishEventInput) -> dict[str, str]:
    return await services_of(context.services).publishing.publish(context.scope, data.event, context.caller.id)


PUBLISH_OPERATIONS = (
    Operation(
        name="publish_event",
        title="Publish an event",
        description=(
            "Records a CloudEvents 1.0 event in the playbook, such as a month closed in a ledger or a deal won in "
            "a CRM, and answers its CloudEvents id, time and recorded_at. source and type are required; any other "
            "attribute is an extension (at most 32, named by 1 to 20 lowercase letters and digits, with a string, a "
            "boolean or an integer). A playbook keeps one "
            "event per source and id, so a request can be retried with the same id: the same event again records "
            "nothing, a different one under that id is a conflict. The event starts the workflows whose event "
            "trigger matches it."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/events",
        input_model=PublishEventInput,
        output_model=PublishedEventOutput,
        handler=publish_event,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="events",
        reasons=frozenset({"invalid_input", "conflict"}),
        openapi_keywords={"event": EVENT_OPENAPI_KEYWORDS},
    ),
)
