"""Every start-up refusal of an `openapi` entry, naming the entry (and the place), never a value."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.settings import ToolServer
from auto_runtime.settings.errors import SettingsError
from auto_runtime.tools.hosts import HostPolicy
from auto_runtime.tools.openapi_document import convert_document, convert_in_worker, read_document
from tests.fakes.gateway_process import HttpFakeProcess
from tests.fakes.hostile_documents import HOSTILE

OK = {"200": {"description": "ok"}}
BASE: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "servers": [{"url": "https://api.example.com/v1/"}],
    "components": {
        "securitySchemes": {
            "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "cookie": {"type": "apiKey", "in": "cookie", "name": "session"},
            "digest": {"type": "http", "scheme": "digest"},
            "basic": {"type": "http", "scheme": "basic"},
            "mtls": {"type": "mutualTLS"},
            "oauth": {
                "type": "oauth2",
                "flows": {"clientCredentials": {"tokenUrl": "https://a.example/t", "scopes": {}}},
            },
        }
    },
    "paths": {"/items": {"get": {"operationId": "listItems", "responses": OK}}},
}
SECRET = "secret-value-0123456789"


def entry(**fields: Any) -> ToolServer:
    return ToolServer.model_validate({"document": "api.json", "org": "acme", **fields})


def refusal(document: dict[str, Any] | bytes, **fields: Any) -> str:
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    with pytest.raises(SettingsError) as refused:
        convert_document("billing", entry(**fields), raw)
    words = str(refused.value)
    assert words.startswith("tool_servers.billing"), words
    assert SECRET not in words
    return words


def changed(**paths: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    document["paths"] = paths or document["paths"]
    return document


def test_a_document_that_passes_gives_its_tools_and_drops_trailing_slashes() -> None:
    api = convert_document("billing", entry(security={"key": SECRET}), json.dumps(BASE).encode())
    assert api.base_url == "https://api.example.com/v1"
    assert list(api.operations) == ["listItems"]


@pytest.mark.parametrize(
    ("name", "value", "expects"),
    [
        ("missing", SECRET, "security.missing: expects the name of a security scheme the document declares"),
        ("cookie", SECRET, "security.cookie: names an apiKey the document places in a cookie"),
        ("digest", SECRET, "security.digest: names an http scheme other than bearer and basic"),
        ("mtls", SECRET, "security.mtls: names a mutualTLS scheme"),
        ("oauth", SECRET, "security.oauth: names an oauth2 scheme, whose credential comes from the auth block"),
        ("basic", SECRET, "security.basic: expects user:password for a basic scheme"),
    ],
)
def test_security_refusals(name: str, value: str, expects: str) -> None:
    assert expects in refusal(BASE, security={name: value})


def test_a_header_or_query_parameter_a_given_scheme_also_places_is_refused() -> None:
    assert "headers.X-Key: is a header a scheme given under security also places" in refusal(
        BASE, security={"key": SECRET}, headers={"X-Key": "x"}
    )
    document = copy.deepcopy(BASE)
    document["components"]["securitySchemes"]["key"]["in"] = "query"
    document["components"]["securitySchemes"]["key"]["name"] = "key"
    assert "query_params.key: is a query parameter" in refusal(
        document, security={"key": SECRET}, query_params={"key": "x"}
    )


def test_an_auth_block_beside_a_document_with_no_oauth2_or_openidconnect_scheme_is_refused() -> None:
    document = copy.deepcopy(BASE)
    del document["components"]["securitySchemes"]["oauth"]
    auth = {"issuer": "https://login.example.com", "client_id": "c", "client_secret": SECRET}
    assert "auth: expects a document that declares an oauth2 or openIdConnect scheme" in refusal(document, auth=auth)


@pytest.mark.parametrize(
    ("document", "expects"),
    [
        (b"{not json: [", "expects JSON or YAML"),
        (json.dumps({"swagger": "2.0", "info": {}, "paths": {}}).encode(), "version 3.0 or 3.1"),
        (json.dumps({**BASE, "openapi": "3.2.0"}).encode(), "version 3.0 or 3.1"),
    ],
)
def test_unreadable_and_other_versions_are_refused(document: bytes, expects: str) -> None:
    assert expects in refusal(document)


def test_a_part_not_of_its_shape_is_refused_naming_the_place() -> None:
    document = changed(**{"/items": {"get": {"operationId": "x", "responses": OK, "parameters": [{"name": "q"}]}}})
    assert "is not of the shape OpenAPI gives it at #/paths/~1items/get/parameters/0" in refusal(document)


def test_two_operations_sharing_a_tool_name_are_refused() -> None:
    document = changed(
        **{
            "/a": {"get": {"operationId": "list.items", "responses": OK}},
            "/b": {"get": {"operationId": "list items", "responses": OK}},
            "/c": {"get": {"operationId": "list/items", "responses": OK}},
        }
    )
    # "list items" and "list/items" both become list_items
    assert "two operations that share the tool name list_items" in refusal(document)


@pytest.mark.parametrize(
    ("path", "expects"),
    [
        ("items", "does not begin with /"),
        ("/a/../b", "holding a . or .. segment"),
        ("/a/./b", "holding a . or .. segment"),
    ],
)
def test_paths_that_would_leave_the_base_are_refused(path: str, expects: str) -> None:
    document = copy.deepcopy(BASE)
    document["paths"] = {path: {"get": {"operationId": "x", "responses": OK}}}
    words = refusal(document)
    assert expects in words


def test_a_path_with_a_query_or_a_fragment_is_refused() -> None:
    assert "holding a ? or a #, at #/paths/~1a?b=1" in refusal(
        changed(**{"/a?b=1": {"get": {"operationId": "x", "responses": OK}}})
    )


@pytest.mark.parametrize(
    "reference", ["https://elsewhere.example/schemas.json#/X", "file:///etc/passwd", "#/components/schemas/Nothing"]
)
def test_a_reference_that_does_not_resolve_inside_the_document_is_refused(reference: str) -> None:
    document = changed(
        **{
            "/a": {
                "post": {
                    "operationId": "x",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": reference}}}},
                    "responses": OK,
                }
            }
        }
    )
    words = refusal(document)
    assert "reference" in words and reference not in words


@pytest.mark.parametrize(
    ("servers", "fields", "expects"),
    [
        ([], {}, "base_url: is required, since the document names no server"),
        ([{"url": "/v1"}], {}, "base_url: is required, since the document names its server relative to a file"),
        ([{"url": "http://api.example.com/v1"}], {}, "neither https nor on a loopback address"),
        ([{"url": "https://api.example.com/v1?x=1"}], {}, "with a query or a fragment"),
    ],
)
def test_calls_with_nowhere_to_go_are_refused(servers: list[Any], fields: dict[str, Any], expects: str) -> None:
    document = {**copy.deepcopy(BASE), "servers": servers}
    assert expects in refusal(document, **fields)


def test_base_url_replaces_the_first_server() -> None:
    document = {**copy.deepcopy(BASE), "servers": [{"url": "/v1"}]}
    api = convert_document("billing", entry(base_url="http://127.0.0.1:9/api/"), json.dumps(document).encode())
    assert api.base_url == "http://127.0.0.1:9/api"


def test_more_than_500_operations_are_refused() -> None:
    paths = {f"/p{index}": {"get": {"operationId": f"op{index}", "responses": OK}} for index in range(501)}
    assert "at most 500 operations" in refusal(changed(**paths))


async def test_a_document_path_that_leaves_the_directory_or_cannot_be_read_is_refused(tmp_path: Path) -> None:
    inside = tmp_path / "config"
    inside.mkdir()
    (tmp_path / "outside.json").write_text(json.dumps(BASE))
    with pytest.raises(SettingsError, match=r"tool_servers.billing.document: expects a path relative"):
        await read_document("billing", entry(document="../outside.json"), inside, HostPolicy.everywhere())
    with pytest.raises(SettingsError, match=r"tool_servers.billing.document: could not be read"):
        await read_document("billing", entry(document="absent.json"), inside, HostPolicy.everywhere())
    (inside / "api.yaml").write_text(
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\nservers: [{url: 'https://a.example'}]\npaths: {}\n"
    )
    api = await read_document("billing", entry(document="api.yaml"), inside, HostPolicy.everywhere())
    assert api.base_url == "https://a.example"


async def test_a_document_url_that_redirects_or_is_swagger_is_refused(openapi_service: HttpFakeProcess) -> None:
    everywhere = HostPolicy.everywhere()
    with pytest.raises(SettingsError, match="answered a redirect, which the server does not follow"):
        await read_document("billing", entry(document=f"{openapi_service.origin}/moved.json"), Path("."), everywhere)
    with pytest.raises(SettingsError, match=r"version 3\.0 or 3\.1"):
        await read_document("billing", entry(document=f"{openapi_service.origin}/swagger.json"), Path("."), everywhere)
    with pytest.raises(SettingsError, match="could not be read"):
        await read_document("billing", entry(document=f"{openapi_service.origin}/absent.json"), Path("."), everywhere)
    only_elsewhere = HostPolicy.of(["*.example.com"])
    with pytest.raises(SettingsError, match="names a host that is not allowed"):
        await read_document(
            "billing", entry(document=f"{openapi_service.origin}/openapi.json"), Path("."), only_elsewhere
        )


async def test_the_set_refuses_to_start_naming_the_entry(tmp_path: Path) -> None:
    from auto_runtime.tools.tool_server_set import ToolServerSet

    (tmp_path / "api.json").write_text(json.dumps({**BASE, "openapi": "2.0"}))
    tools = ToolServerSet({"billing": entry(security={"key": SECRET})}, directory=tmp_path)
    with pytest.raises(SettingsError, match=r"^tool_servers\.billing\.document: expects an OpenAPI document"):
        await tools.run()  # it reads the documents before it reports started, and before it opens its nursery
    await tools.aclose()


@pytest.mark.parametrize(
    ("text", "expects"),
    [
        (
            "openapi: '3.1.0'\nbase: &base {a: 1}\nother:\n  <<: *base\n",
            "document: holds a YAML anchor or alias at line 2; write the value out where it is used",
        ),
        (
            "openapi: '3.1.0'\nother:\n  <<: {a: 1}\n",
            "document: holds a YAML merge key (<<) at line 3; write the value out where it is used",
        ),
        ("openapi: '3.1.0'\ndeep: " + "[" * 70 + "]" * 70 + "\n", "nested at most 64 levels deep, at line 2"),
    ],
)
def test_yaml_is_read_with_a_definitions_bounds(text: str, expects: str) -> None:
    assert expects in refusal(text.encode())


def test_a_chain_of_references_that_loops_is_refused_at_its_first_reference() -> None:
    document = changed(**{"/items": {"$ref": "#/components/pathItems/One"}})
    document["components"]["pathItems"] = {
        "One": {"$ref": "#/components/pathItems/Two"},
        "Two": {"$ref": "#/components/pathItems/One"},
    }
    assert "document: holds references that loop, at #/components/pathItems/One" in refusal(document)


async def test_a_conversion_past_its_time_bound_is_killed_and_refused() -> None:
    raw = HOSTILE["fan.json"]
    with pytest.raises(SettingsError) as refused:
        await convert_in_worker("billing", entry(), raw, seconds=1.0)
    assert str(refused.value) == "tool_servers.billing.document: could not be checked within 1 seconds"


async def test_a_conversion_in_its_process_gives_the_same_document() -> None:
    raw = json.dumps(BASE).encode()
    assert await convert_in_worker("billing", entry(security={"key": SECRET}), raw) == convert_document(
        "billing", entry(security={"key": SECRET}), raw
    )
