"""Access tokens of the identity service, against a real server that signs people in and the fake identity service
(issue 37, item 11): a key rotated in right after a flood of made-up key ids is accepted, not refused until the
flood's rate limit runs out; `exp` (or `iat`, `nbf`) given as a string, and an audience with a trailing slash, are
invalid credentials."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.auth.conftest import METADATA_PREFIX, SignedIn, start_signed_in
from tests.conformance.helpers import problem
from tests.fakes.identity_service import IdentityServiceProcess, start_identity_service
from tests.fakes.tls import self_signed

PLAYBOOKS = "/v1/orgs/acme/playbooks"


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityServiceProcess]:
    folder = tmp_path_factory.mktemp("identity-service")
    certificate, key = self_signed(folder, "identity service")
    fake = start_identity_service(certificate, key)
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory, identity: IdentityServiceProcess) -> Iterator[SignedIn]:
    signed_in = start_signed_in(Path(tmp_path_factory.mktemp("access-tokens")), identity, test_clock=True)
    yield signed_in
    assert signed_in.server.stop() == 0, signed_in.server.log()


@pytest.fixture(scope="module")
def kid(identity: IdentityServiceProcess, signed_in: SignedIn) -> str:
    """A key published after the server's first fetch, its fetch spacing passed so the first token of it is
    verified at once."""
    published = identity.new_key("RS256")
    signed_in.pass_fetch_spacing()
    return published


def refused_as_invalid(signed_in: SignedIn, token: str) -> dict[str, Any]:
    response = signed_in.get(PLAYBOOKS, token)
    body = problem(response, 401, "unauthenticated")
    challenge = f'Bearer error="invalid_token", resource_metadata="{signed_in.public_url}{METADATA_PREFIX}"'
    assert response.headers["www-authenticate"] == challenge
    return body


def test_a_token_with_the_claims_as_they_should_be_is_accepted(signed_in: SignedIn, kid: str) -> None:
    assert signed_in.get(PLAYBOOKS, signed_in.token(kid)).status_code == 200
    assert signed_in.get(PLAYBOOKS, signed_in.token(kid, aud=[signed_in.public_url, "https://b.example"])).is_success


def answers_moving_the_clock(
    signed_in: SignedIn, identity: IdentityServiceProcess, tokens: list[str]
) -> list[httpx.Response]:
    """The answers to requests with `tokens`, eight at a time, the server's clock moved past the spacing of fetches
    once before them and once at each fetch the identity service sees, so a request kept for the next fetch has
    it without the spacing being waited out (the clock moves by as much as that real wait would have taken)."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(signed_in.get, PLAYBOOKS, token) for token in tokens]
        seen = -1
        while pending := [future for future in futures if not future.done()]:
            fetched = identity.fetches()
            if fetched != seen:
                signed_in.pass_fetch_spacing()
                seen = fetched
            wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
        return [future.result() for future in futures]


def _now() -> int:
    return int(time.time())


STRING_TIMES: dict[str, dict[str, Any]] = {
    "exp as a string of digits": {"exp": lambda: str(_now() + 300)},
    "exp as a word": {"exp": lambda: "tomorrow"},
    "exp as true": {"exp": lambda: True},
    "iat as a string of digits": {"iat": lambda: str(_now())},
    "nbf as a string of digits": {"nbf": lambda: str(_now() - 5)},
}


@pytest.mark.parametrize("case", STRING_TIMES)
def test_a_time_claim_that_is_not_a_number_is_an_invalid_credential(signed_in: SignedIn, kid: str, case: str) -> None:
    claims = {name: make() for name, make in STRING_TIMES[case].items()}
    body = refused_as_invalid(signed_in, signed_in.token(kid, **claims))
    assert body["detail"] == "The access token's times (exp, iat, nbf) must be numbers of seconds.", body


@pytest.mark.parametrize("shape", ["string", "list"])
def test_an_audience_with_a_trailing_slash_is_an_invalid_credential(signed_in: SignedIn, kid: str, shape: str) -> None:
    audience = signed_in.public_url + "/"
    token = signed_in.token(kid, aud=audience if shape == "string" else [audience, "https://b.example"])
    body = refused_as_invalid(signed_in, token)
    assert body["detail"] == f"The access token is not for this server: its audience is not {signed_in.public_url}."


def test_a_key_rotated_in_after_a_flood_of_unknown_key_ids_is_accepted(
    signed_in: SignedIn, identity: IdentityServiceProcess
) -> None:
    """The flood makes the server fetch and find none of its key ids; the key the identity service rotates in
    next is still fetched for, and its token accepted, where the flood's refusals used to hold for 30 s. The
    flood's key ids, asked again, cost no fetch."""
    made_up = [identity.new_key("ES256", publish=False) for _ in range(8)]
    tokens = [signed_in.token(kid) for kid in made_up for _ in range(3)]
    before = identity.fetches()
    answers = answers_moving_the_clock(signed_in, identity, tokens)
    for answer in answers:
        assert "does not publish" in problem(answer, 401, "unauthenticated")["detail"]
    flood_fetches = identity.fetches() - before
    assert 1 <= flood_fetches <= len(made_up)
    for token in tokens:
        refused_as_invalid(signed_in, token)
    assert identity.fetches() - before == flood_fetches, "a key id a fetch did not hold costs no second fetch"

    rotated = identity.new_key("RS256")
    signed_in.pass_fetch_spacing()
    response = signed_in.get(PLAYBOOKS, signed_in.token(rotated))
    assert response.status_code == 200, response.text
    assert identity.fetches() - before == flood_fetches + 1
