"""The identity service rotates its keys mid-test: a token of a new key is taken once the set is fetched again,
and a key gone from the set stops verifying; a stream of made-up key ids does not make the server fetch again for
an id it already asked about (`tests/security/test_access_tokens.py` has the flood before a rotation). The server's
clock is the test's, moved past the spacing of fetches before each request that needs one instead of waiting it
out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.conftest import SignedIn, start_signed_in
from tests.conformance.helpers import problem
from tests.fakes.identity_service import IdentityServiceProcess


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory, identity: IdentityServiceProcess) -> Iterator[SignedIn]:
    signed_in = start_signed_in(Path(tmp_path_factory.mktemp("rotation")), identity, test_clock=True)
    yield signed_in
    assert signed_in.server.stop() == 0, signed_in.server.log()


def accepted(signed_in: SignedIn, token: str) -> bool:
    response = signed_in.get("/v1/orgs/acme/playbooks", token)
    if response.status_code == 200:
        return True
    problem(response, 401, "unauthenticated")
    return False


def test_keys_rotate_mid_test(signed_in: SignedIn, identity: IdentityServiceProcess) -> None:
    first = identity.new_key("RS256")
    signed_in.pass_fetch_spacing()
    assert accepted(signed_in, signed_in.token(first))
    old_token = signed_in.token(first)

    second = identity.new_key("ES256")
    fetched = identity.fetches()
    signed_in.pass_fetch_spacing()
    assert accepted(signed_in, signed_in.token(second))
    assert identity.fetches() == fetched + 1
    assert accepted(signed_in, old_token), "the first key is still published"

    identity.withdraw(first)
    third = identity.new_key("RS256")
    signed_in.pass_fetch_spacing()
    assert accepted(signed_in, signed_in.token(third))
    assert accepted(signed_in, signed_in.token(second))
    signed_in.pass_fetch_spacing()
    assert not accepted(signed_in, old_token), "the first key is gone from the set the server fetched last"
    assert not accepted(signed_in, signed_in.token(first))


def test_a_stream_of_unknown_key_ids_fetches_at_most_once_for_each(
    signed_in: SignedIn, identity: IdentityServiceProcess
) -> None:
    made_up = [identity.new_key("ES256", publish=False) for _ in range(3)]
    fetched = identity.fetches()
    for repeat in range(5):
        for kid in made_up:
            if repeat == 0:
                signed_in.pass_fetch_spacing()
            body = problem(signed_in.get("/v1/orgs/acme/playbooks", signed_in.token(kid)), 401, "unauthenticated")
            assert "does not publish" in body["detail"]
    assert identity.fetches() - fetched <= len(made_up)
