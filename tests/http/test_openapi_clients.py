"""Clients made from the OpenAPI document, against a real server that asks for API keys (issue 21, point 7).

Schemathesis runs its authorization check (`ignored_auth`: an operation whose document says it needs the bearer
credential refuses the same request without one, and with a wrong one) beside `not_a_server_error`, with the
key the document's bearer scheme takes, and its `negative_data_rejection` (no request the document calls invalid
is taken). openapi-python-client generates a client from the server's document,
and the test calls the server through it: the client knows which calls need the token because the document
says so.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission
from tests.e2e.server_process import ServerProcess, start_server

ORG = "acme"
PLAYBOOK = "finance"
BIN = Path(sys.executable).parent
TOOL_ROUTES = """
[[operations]]
include-path-regex = "/tool-servers/"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
"""


@dataclass(frozen=True)
class KeyedServer:
    server: ServerProcess
    key: str

    @property
    def api_url(self) -> str:
        return f"{self.server.base_url}/v1"


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedServer]:
    """A server with API keys (so not in local mode), and the playbook the path parameters name."""
    issued = issue_api_key(ORG, list(Permission))
    server = start_server(tmp_path_factory.mktemp("keyed-server"), {"API_KEYS": f"[{issued.entry_json()}]"})
    try:
        response = httpx.post(
            f"{server.base_url}/v1/orgs/{ORG}/playbooks",
            json={"playbook": PLAYBOOK, "name": "Finance"},
            headers={"Authorization": f"Bearer {issued.secret}"},
        )
        assert response.status_code == 201, response.text
        yield KeyedServer(server, issued.secret)
    finally:
        assert server.stop() == 0, server.log()


def _schemathesis(keyed_server: KeyedServer, folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Schemathesis against the server's own document, with the key for the bearer scheme and the org and
    playbook the key reaches in every path."""
    config = folder / "schemathesis.toml"
    config.write_text(
        f'[auth.openapi.bearer]\nbearer = "{keyed_server.key}"\n\n'
        f'[parameters]\n"path.org" = "{ORG}"\n"path.playbook" = "{PLAYBOOK}"\n' + TOOL_ROUTES
    )
    return subprocess.run(
        [
            str(BIN / "schemathesis"),
            "--config-file",
            str(config),
            "run",
            f"{keyed_server.api_url}/openapi.json",
            *arguments,
            "--seed",
            "1",
            "--request-timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=600,
        check=False,
    )


@pytest.mark.slow(seconds=15)
def test_schemathesis_finds_every_secured_operation_enforcing_its_credential(
    keyed_server: KeyedServer, tmp_path: Path
) -> None:
    result = _schemathesis(
        keyed_server,
        tmp_path,
        "--checks",
        "not_a_server_error,ignored_auth",
        "--phases",
        "examples,fuzzing",
        "--max-examples",
        "5",
        "--report",
        "vcr",
        "--report-vcr-path",
        str(tmp_path / "cassette.yaml"),
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    probed = _probed_requests(tmp_path / "cassette.yaml")
    assert {
        ("GET", f"/v1/orgs/{ORG}/playbooks"),
        ("GET", f"/v1/orgs/{ORG}/models"),
        ("POST", f"/v1/orgs/{ORG}/playbooks/{PLAYBOOK}/events"),
        ("GET", f"/v1/orgs/{ORG}/playbooks/{PLAYBOOK}/analytics"),
    } <= probed, sorted(probed)


@pytest.mark.slow(seconds=35)
def test_every_request_the_document_calls_invalid_is_refused(keyed_server: KeyedServer, tmp_path: Path) -> None:
    """The request schemas claim no more than the server checks: schemathesis's negative data (values outside
    each schema, the event id's pattern, the attributes' names and count and the days' enum among them) never
    gets a 2xx."""
    result = _schemathesis(
        keyed_server,
        tmp_path,
        "--checks",
        "not_a_server_error,negative_data_rejection",
        "--mode",
        "negative",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "10",
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def _probed_requests(cassette: Path) -> set[tuple[str, str]]:
    """The requests that succeeded with the key and whose `ignored_auth` check passed: the check then sent each
    again without the credential and with a wrong one, and the server refused both."""
    interactions = yaml.safe_load(cassette.read_text())["http_interactions"]
    probed: set[tuple[str, str]] = set()
    for interaction in interactions:
        checks = {check["name"]: check["status"] for check in interaction.get("checks") or []}
        if checks.get("ignored_auth") == "SUCCESS" and interaction["response"]["status"]["code"].startswith("2"):
            request = interaction["request"]
            probed.add((request["method"], urlsplit(request["uri"]).path))
    return probed


def _generate_client(keyed_server: KeyedServer, folder: Path) -> Any:
    document = httpx.get(f"{keyed_server.api_url}/openapi.json").json()
    (folder / "openapi.json").write_text(json.dumps(document))
    (folder / "config.yaml").write_text("package_name_override: runtime_client\npost_hooks: []\n")
    generated = subprocess.run(
        [
            str(BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(folder / "openapi.json"),
            "--config",
            str(folder / "config.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(folder / "runtime_client"),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
        check=False,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module("runtime_client")
    finally:
        sys.path.remove(str(folder))


def test_a_generated_client_sends_the_token_where_the_document_asks_for_it(
    keyed_server: KeyedServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    client_package = _generate_client(keyed_server, tmp_path)
    from runtime_client.api.analytics import get_playbook_analytics
    from runtime_client.api.definitions import create_definition
    from runtime_client.api.events import get_event, list_playbook_events, publish_event
    from runtime_client.api.guides import get_guide
    from runtime_client.api.playbooks import create_playbook, list_playbooks
    from runtime_client.api.runs import run_definition
    from runtime_client.models import (
        CreateDefinitionBody,
        CreateDefinitionType,
        CreatePlaybookBody,
        GetGuideGuide,
        GetPlaybookAnalyticsDays,
        Problem,
        PublishEventBody,
        PublishEventBodyEvent,
        RunDefinitionBody,
        RunDefinitionType,
    )

    client = client_package.AuthenticatedClient(base_url=keyed_server.api_url, token=keyed_server.key)
    anonymous = client_package.Client(base_url=keyed_server.api_url)
    wrong = client_package.AuthenticatedClient(base_url=keyed_server.api_url, token="abk_00000000_not-a-key")
    for generated in (client, anonymous, wrong):  # each holds an httpx client, whose sockets are closed at the end
        request.addfinalizer(generated.get_httpx_client().close)

    playbook = f"client-{uuid.uuid4().hex[:12]}"  # its own: schemathesis may have retired the module's playbook
    made = create_playbook.sync_detailed(ORG, client=client, body=CreatePlaybookBody(playbook=playbook, name="Ledger"))
    assert made.status_code == 201, made.content
    playbooks = list_playbooks.sync(ORG, client=client)
    assert playbook in [entry.id for entry in playbooks.playbooks]
    refused = list_playbooks.sync_detailed(ORG, client=wrong)
    assert refused.status_code == 401
    assert isinstance(refused.parsed, Problem) and refused.parsed.reason == "unauthenticated"

    guide = get_guide.sync_detailed(GetGuideGuide("terminology"), client=anonymous)
    assert guide.status_code == 200

    source = "---\nlanguage: python\n---\ndef main(input):\n    return input['a'] + input['b']\n"
    created = create_definition.sync_detailed(
        ORG,
        playbook,
        CreateDefinitionType.COMPUTATION,
        client=client,
        body=CreateDefinitionBody(name="sum-of-two", source=source),
    )
    assert created.status_code == 201, created.content
    run = run_definition.sync(
        ORG,
        playbook,
        RunDefinitionType.COMPUTATION,
        "sum-of-two",
        client=client,
        body=RunDefinitionBody(input_={"a": 2, "b": 40}),
    )
    assert run.output == 42

    event_id = f"client-{uuid.uuid4()}"
    event = PublishEventBodyEvent(source="/ledger/eu", type_="com.acme.ledger.month-closed", id=event_id)
    event.additional_properties["region"] = "eu"
    published = publish_event.sync(ORG, playbook, client=client, body=PublishEventBody(event=event))
    assert published.id == event_id
    listed = list_playbook_events.sync(ORG, playbook, client=client, type_="event_published", limit=100)
    recorded = next(item for item in listed.events if item.data["event_id"] == event_id)
    read = get_event.sync(ORG, playbook, recorded.id, client=client)
    assert read.data["event_id"] == event_id

    analytics = get_playbook_analytics.sync(ORG, playbook, client=client, days=GetPlaybookAnalyticsDays.VALUE_14)
    assert analytics.days == 14
