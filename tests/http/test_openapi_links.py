"""The OpenAPI document says which id is which (issue 30, item 8): `publish_event` answers the CloudEvents id, and
a page of events links to `get_event` by each event's own id. The link is read from a real server's document and
followed with real requests, on each ledger."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess

EVENT = {"source": "/ledger/eu", "type": "com.acme.ledger.month-closed", "data": {"region": "eu"}}


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every operation of the document by its `operationId`, with its path."""
    return {
        entry["operationId"]: (path, entry) for path, entries in document["paths"].items() for entry in entries.values()
    }


def _evaluate(expression: str, path_values: dict[str, str], body: Any) -> str:
    """An OpenAPI runtime expression of the two forms a link of this document may use."""
    if expression.startswith("$request.path."):
        return path_values[expression.removeprefix("$request.path.")]
    prefix = "$response.body#"
    assert expression.startswith(prefix), expression
    value = body
    for token in expression.removeprefix(prefix).split("/")[1:]:
        value = value[int(token)] if isinstance(value, list) else value[token]
    assert isinstance(value, str), expression
    return value


def _fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"\{([a-z_]+)\}", lambda match: values[match[1]], template)


def test_a_page_of_events_links_to_get_event_by_the_events_own_id(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        document = client.get("/v1/openapi.json").json()
        operations = _operations(document)
        server_url = document["servers"][0]["url"]
        playbook_url = new_playbook(client)
        path_values = dict(zip(["org", "playbook"], playbook_url.split("/")[3::2], strict=True))

        published = client.post(f"{playbook_url}/events", json={"event": EVENT})
        assert published.status_code == 200, published.text
        cloud_event_id = published.json()["id"]
        assert set(published.json()) == {"id", "time", "recorded_at"}

        list_path, listing = operations["list_playbook_events"]
        link = listing["responses"]["200"]["links"]["get_event"]
        assert link["operationId"] == "get_event"
        target_path, target = operations[link["operationId"]]
        taken = {parameter["name"] for parameter in target["parameters"]}
        assert set(link["parameters"]) == taken

        page = client.get(server_url + _fill(list_path, path_values), params={"type": "event_published"})
        assert page.status_code == 200, page.text
        values = {name: _evaluate(expr, path_values, page.json()) for name, expr in link["parameters"].items()}
        assert values["event_id"] != cloud_event_id
        followed = client.get(server_url + _fill(target_path, values))
        assert followed.status_code == 200, followed.text
        event = followed.json()
        assert (event["type"], event["data"]["event_id"]) == ("event_published", cloud_event_id)

        wrong = client.get(server_url + _fill(target_path, {**path_values, "event_id": cloud_event_id}))
        assert wrong.status_code == 404 and wrong.json()["reason"] == "not_found", wrong.text
        assert "links" not in operations["publish_event"][1]["responses"]["200"]


def test_the_descriptions_say_which_id_is_which(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        document = client.get("/v1/openapi.json").json()
    operations = _operations(document)
    schemas = document["components"]["schemas"]

    def output_schema(operation_id: str) -> dict[str, Any]:
        reference = operations[operation_id][1]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        schema: dict[str, Any] = schemas[reference.rsplit("/", 1)[-1]]
        return schema

    published_id = output_schema("publish_event")["properties"]["id"]["description"]
    assert "CloudEvents id" in published_id and "not the id get_event takes" in published_id
    listed = json.dumps(output_schema("list_playbook_events"))
    assert "the one get_event takes" in listed
    get_event = operations["get_event"][1]
    assert "not the CloudEvents id publish_event answers" in get_event["description"]
    event_id = next(p for p in get_event["parameters"] if p["name"] == "event_id")
    assert "not the CloudEvents id publish_event answers" in event_id["description"]
