"""The identity service cannot be reached while a key must be fetched: `unavailable` with a `Retry-After`, never
a 500 and never a hang; the keys held, and API keys, keep working meanwhile. The server's clock is the test's,
moved past the spacing of fetches before each request that needs one, and past the limit of the fetch that
hangs once the identity service has been asked."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest

from auto_runtime.auth.issuer_keys import FETCH_TIMEOUT_SECONDS
from tests.auth.conftest import METADATA_PREFIX, SignedIn, start_signed_in
from tests.conformance.helpers import problem
from tests.e2e.moved_clock import advance
from tests.fakes.identity_service import IdentityServiceProcess

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory, identity: IdentityServiceProcess) -> Iterator[SignedIn]:
    signed_in = start_signed_in(Path(tmp_path_factory.mktemp("unreachable")), identity, test_clock=True)
    yield signed_in
    assert signed_in.server.stop() == 0, signed_in.server.log()


def test_a_key_that_cannot_be_fetched_is_unavailable(signed_in: SignedIn, identity: IdentityServiceProcess) -> None:
    held = identity.new_key("RS256")
    signed_in.pass_fetch_spacing()
    assert signed_in.get("/v1/orgs/acme/playbooks", signed_in.token(held)).status_code == 200

    identity.set_mode(jwks="hang")
    new = identity.new_key("ES256")
    signed_in.pass_fetch_spacing()
    asked = identity.fetches()
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(signed_in.get, "/v1/orgs/acme/playbooks", signed_in.token(new))
        while identity.fetches() == asked and not answer.done():
            pass  # each look is a round trip to the identity service
        with signed_in.server.client() as client:
            advance(client, timedelta(seconds=FETCH_TIMEOUT_SECONDS))
        response = answer.result()
    body = problem(response, 503, "unavailable")
    assert "identity service" in body["detail"]
    assert 1 <= int(response.headers["retry-after"]) <= 30
    assert "www-authenticate" not in response.headers

    over_mcp = signed_in.post("/orgs/acme/mcp", signed_in.token(new), LIST_TOOLS, **MCP_HEADERS)
    problem(over_mcp, 503, "unavailable")
    assert int(over_mcp.headers["retry-after"]) >= 1

    assert signed_in.get("/v1/orgs/acme/playbooks", signed_in.token(held)).status_code == 200
    assert signed_in.get("/v1/orgs/acme/playbooks", signed_in.api_key).status_code == 200
    missing = signed_in.get("/v1/orgs/acme/playbooks", None)
    problem(missing, 401, "unauthenticated")
    assert METADATA_PREFIX in missing.headers["www-authenticate"]
