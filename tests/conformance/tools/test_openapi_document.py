"""The tool operations in the OpenAPI document (HTTP page "The OpenAPI document"): each once, `search_in_org` for
the org's `search`, `validate` and `dry_run` taking their input in a JSON body, and their problems listed."""

from __future__ import annotations

from typing import Any

from tests.conformance.tools.conftest import ToolsServer

ROUTES = {
    "search_in_org": ("get", "/orgs/{org}/tool-servers/search"),
    "search": ("get", "/orgs/{org}/playbooks/{playbook}/tool-servers/search"),
    "introspect": ("get", "/orgs/{org}/playbooks/{playbook}/tool-servers/{server}/tools/{tool}"),
    "validate": ("post", "/orgs/{org}/playbooks/{playbook}/tool-servers/{server}/tools/{tool}/validate"),
    "dry_run": ("post", "/orgs/{org}/playbooks/{playbook}/tool-servers/{server}/tools/{tool}/dry-run"),
    "execute": ("post", "/orgs/{org}/playbooks/{playbook}/tool-servers/{server}/tools/{tool}/execute"),
}


def test_each_tool_operation_appears_once_with_its_route(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        document: dict[str, Any] = client.get("/v1/openapi.json").json()
    operations = {
        operation["operationId"]: (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "operationId" in operation
    }
    for operation_id, (method, path) in ROUTES.items():
        found_method, found_path, operation = operations[operation_id]
        assert (found_method, found_path) == (method, path), operation_id
        assert operation["tags"] == ["tool-servers"]
        assert operation["description"]
    for operation_id in ("validate", "dry_run", "execute"):
        reference = operations[operation_id][2]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = document["components"]["schemas"][reference.rsplit("/", 1)[1]]
        assert set(body["properties"]) == {"arguments"}, operation_id
    assert "503" in operations["execute"][2]["responses"] and "403" in operations["execute"][2]["responses"]
    parameters = {p["name"] for p in operations["search_in_org"][2]["parameters"]}
    assert {"playbook", "terms", "server", "only"} <= parameters
