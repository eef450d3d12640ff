"""`GET /v1/status` (issue 33; not in the seeds): this server's id, the partitions it holds and the servers alive
with their counts; the start's log line naming the partitions held; who may read it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_access import issue_key

PARTITIONS = 64


def status_of(server: ServerProcess, secret: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    with server.client(**headers) as client:
        response = client.get("/v1/status")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_server_alone_holds_every_partition_and_says_so(local_server: ServerProcess) -> None:
    status = status_of(local_server)
    assert set(status) == {"server", "partitions", "servers"}
    assert status["partitions"] == list(range(PARTITIONS))
    assert status["servers"] == [{"server": status["server"], "partitions": PARTITIONS}]
    assert f"partitions held: 0-{PARTITIONS - 1} ({PARTITIONS} of {PARTITIONS})" in local_server.log()


def test_the_status_needs_playbook_read_of_any_org(tmp_path: Path) -> None:
    reader = issue_key(tmp_path, "--org", "globex", "--permission", "playbook:read")
    admin = issue_key(tmp_path, "--org", "acme", "--permission", "org:read", "--permission", "org:write")
    server = start_server(tmp_path, {"API_KEYS": json.dumps([reader.entry, admin.entry])})
    try:
        assert status_of(server, reader.secret)["partitions"] == list(range(PARTITIONS))
        with server.client(Authorization=f"Bearer {admin.secret}") as client:
            refused = client.get("/v1/status")
        assert refused.status_code == 403, refused.text
        assert refused.json()["reason"] == "forbidden"
        assert "playbook:read" in refused.json()["detail"]
        with server.client() as client:
            anonymous = client.get("/v1/status")
        assert anonymous.status_code == 401, anonymous.text
    finally:
        assert server.stop() == 0, server.log()
