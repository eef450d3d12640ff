"""The OpenAPI document, the guides, the API catalog and their caching ("The OpenAPI document, ...")."""

from __future__ import annotations

from pathlib import Path

import httpx
from openapi_spec_validator import validate

from tests.e2e.server_process import ServerProcess, start_server

GUIDES = (
    "terminology",
    "reasoning-function",
    "interaction-function",
    "prediction-function",
    "recall-function",
    "computation-function",
    "workflow",
    "first-playbook",
    "remember",
    "give-tools",
    "schedule",
)


def test_the_openapi_document_validates_and_lists_the_operations(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    validate(document)
    assert document["openapi"] == "3.1.1"
    assert document["servers"] == [{"url": "/v1"}]
    operations = {entry["operationId"]: entry for path in document["paths"].values() for entry in path.values()}
    assert {"create_playbook", "list_playbooks", "get_playbook", "update_playbook", "retire_playbook"} <= set(
        operations
    )
    assert operations["create_playbook"]["summary"] == "Create a playbook"
    assert "201" in operations["create_playbook"]["responses"]
    guide_parameter = operations["get_guide"]["parameters"][0]
    assert guide_parameter["schema"]["enum"] == list(GUIDES)
    for schema in document["components"]["schemas"].values():
        assert schema["$id"].startswith("https://on.auto/schemas/runtime/")


def test_every_guide_is_markdown_and_unknown_names_are_not_served(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for name in GUIDES:
            response = client.get(f"/v1/guides/{name}")
            assert response.status_code == 200, name
            assert response.headers["content-type"].startswith("text/markdown")
            assert response.text.strip()
        assert client.get("/v1/guides/nothing").status_code == 404


def _check_caching(client: httpx.Client, path: str) -> None:
    first = client.get(path)
    assert first.status_code == 200
    tag = first.headers["etag"]
    assert tag.startswith('"') and not tag.startswith("W/")
    assert first.headers["cache-control"] == "public, max-age=300"
    assert client.get(path, headers={"If-None-Match": tag}).status_code == 304
    listed = client.get(path, headers={"If-None-Match": f'"other", {tag}'})
    assert listed.status_code == 304 and listed.content == b""
    assert client.get(path, headers={"If-None-Match": "*"}).status_code == 304
    assert client.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    head = client.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == tag


def test_documents_are_cached_by_etag_and_answer_head(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for path in ("/v1/openapi.json", "/v1/guides/workflow", "/.well-known/api-catalog"):
            _check_caching(client, path)


def test_the_api_catalog_uses_the_request_origin(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.get("/.well-known/api-catalog", headers={"X-Forwarded-Host": "proxy.example"})
    assert response.headers["content-type"].startswith("application/linkset+json")
    assert response.headers["link"] == f'<{local_server.base_url}/.well-known/api-catalog>; rel="api-catalog"'
    text = response.text
    assert "proxy.example" not in text
    linkset = response.json()["linkset"]
    api = next(entry for entry in linkset if entry["anchor"] == f"{local_server.base_url}/v1")
    assert api["service-desc"][0]["href"] == f"{local_server.base_url}/v1/openapi.json"
    assert [d["href"].rsplit("/", 1)[1] for d in api["service-doc"]] == list(GUIDES)
    assert api["status"][0]["href"] == f"{local_server.base_url}/health"


def test_the_api_catalog_uses_public_url_and_needs_no_key(tmp_path: Path) -> None:
    server = start_server(
        tmp_path,
        {
            "PUBLIC_URL": "https://runtime.example.com",
            "API_KEYS": '[{"id":"0a0b0c0d","org":"acme","permissions":["org:read"],"sha256":"' + "0" * 64 + '"}]',
        },
    )
    try:
        with server.client() as client:
            response = client.get("/.well-known/api-catalog")
            assert response.status_code == 200
            assert "https://runtime.example.com/v1/openapi.json" in response.text
            assert client.get("/v1/openapi.json").status_code == 200
            assert client.get("/v1/guides/terminology").status_code == 200
            assert client.get("/health").status_code == 200
    finally:
        assert server.stop() == 0
