"""The OpenAPI document states its security and what JSON Schema can state of the requests (issue 21, point 7)."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
from openapi_spec_validator import validate

from auto_runtime.events.cloudevents import ATTRIBUTES, MAX_EXTENSIONS
from auto_runtime.guides import load_guides
from auto_runtime.http.openapi import BEARER, build_openapi
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.playbooks.analytics import WINDOW_DAYS
from auto_runtime.playbooks.event_reads import EVENT_ID

GUIDES = load_guides()
CATALOG = build_catalog(GUIDES)
DOCUMENT = build_openapi(CATALOG, GUIDES)


def _operation(operation_id: str) -> dict[str, Any]:
    for entries in DOCUMENT["paths"].values():
        for entry in entries.values():
            if entry["operationId"] == operation_id:
                return dict(entry)
    raise KeyError(operation_id)


def _parameter(operation_id: str, name: str) -> dict[str, Any]:
    return next(p for p in _operation(operation_id)["parameters"] if p["name"] == name)


def _body_schema(operation_id: str) -> dict[str, Any]:
    reference = _operation(operation_id)["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return dict(DOCUMENT["components"]["schemas"][reference.rsplit("/", 1)[-1]])


def test_the_document_is_a_valid_openapi_3_1_document() -> None:
    validate(DOCUMENT)


def test_it_declares_one_bearer_scheme() -> None:
    schemes = DOCUMENT["components"]["securitySchemes"]
    assert list(schemes) == [BEARER]
    assert schemes[BEARER]["type"] == "http"
    assert schemes[BEARER]["scheme"] == "bearer"


def test_every_operation_that_needs_a_permission_requires_the_bearer_credential_with_it() -> None:
    for operation in CATALOG:
        entry = _operation(operation.openapi_operation_id)
        expected = [{BEARER: [str(permission)]} for permission in sorted(operation.permissions)]
        assert entry["security"] == expected, operation.name
    assert _operation("get_guide")["security"] == []
    assert _operation("list_playbooks")["security"] == [{BEARER: ["org:read"]}, {BEARER: ["playbook:read"]}]


SOME_ID = "0191f3c2-7a4e-7b3d-9c1a-2f6e8d4b5a97"
EVENT_IDS = [
    SOME_ID,
    SOME_ID.upper(),
    f"{SOME_ID}_1",
    f"{SOME_ID}_12",
    f"{SOME_ID}_0",
    f"{SOME_ID}_02",
    f"{SOME_ID}_",
    "2026-09",
    SOME_ID[:-1],
    SOME_ID.replace("-", ""),
]


@pytest.mark.parametrize("event_id", EVENT_IDS)
def test_the_event_id_pattern_takes_what_the_reader_takes(event_id: str) -> None:
    """The reader matches ids ignoring case; a JSON Schema pattern has no flags, so it spells out both cases."""
    pattern = _parameter("get_event", "event_id")["schema"]["pattern"]
    assert bool(re.search(pattern, event_id)) == bool(EVENT_ID.match(event_id))


def test_event_attributes_have_their_names_and_count_stated() -> None:
    event = _body_schema("publish_event")["properties"]["event"]
    assert event["maxProperties"] == len(ATTRIBUTES) + MAX_EXTENSIONS
    assert event["properties"]["source"]["format"] == "uri-reference"
    validator = jsonschema.Draft202012Validator(event, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    base = {"source": "/ledger/eu", "type": "com.acme.closed"}
    assert validator.is_valid(base | {"region": "eu", "v2": 1})
    assert validator.is_valid(base | {f"x{number}": True for number in range(MAX_EXTENSIONS)})
    assert not validator.is_valid(base | {f"x{number}": True for number in range(len(ATTRIBUTES) + MAX_EXTENSIONS)})
    for name in ("Region", "with-dash", "a" * 21, ""):
        assert not validator.is_valid(base | {name: "x"}), name
    names = jsonschema.Draft202012Validator({"propertyNames": event["propertyNames"]})
    assert names.is_valid(dict.fromkeys(ATTRIBUTES, "x"))


def test_days_is_one_of_the_windows() -> None:
    days = _parameter("get_playbook_analytics", "days")["schema"]
    assert days == {"type": "integer", "enum": list(WINDOW_DAYS)}


def test_the_mcp_input_schemas_are_left_as_they_were() -> None:
    """The keywords are the document's alone: the decoder and the MCP tools keep the input schema unchanged."""
    publish = next(operation for operation in CATALOG if operation.name == "publish_event")
    event = input_schema_of(publish.name, publish.input_model)["properties"]["event"]
    assert "propertyNames" not in event and "maxProperties" not in event


def test_every_response_names_the_request_id_and_trace_id_headers() -> None:
    headers = DOCUMENT["components"]["headers"]
    assert set(headers) == {"x-request-id", "x-trace-id"}
    assert headers["x-trace-id"]["required"] is False
    for entries in DOCUMENT["paths"].values():
        for entry in entries.values():
            for status, response in entry["responses"].items():
                named = {name: ref["$ref"] for name, ref in response["headers"].items()}
                assert named == {name: f"#/components/headers/{name}" for name in headers}, (
                    entry["operationId"],
                    status,
                )
