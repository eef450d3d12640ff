"""A published event's data nested far past what a parser's recursion allows is still refused at its pointer."""

from __future__ import annotations

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess


def test_data_nested_100000_levels_is_invalid_input_at_event_data(local_server: ServerProcess) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    body = '{"event": {"source": "/ledger/eu", "type": "com.acme.deep", "data": ' + nested + "}}"
    with local_server.client() as client:
        playbook = new_playbook(client)
        response = client.post(
            f"{playbook}/events", content=body.encode(), headers={"Content-Type": "application/json"}
        )
    assert pointers(problem(response, 422, "invalid_input")) == ["/event/data"]
