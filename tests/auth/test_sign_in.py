"""Sign-in end to end: the real server takes access tokens the fake identity service signs, over HTTP and MCP,
beside API keys, and refuses every token that fails a check as an invalid credential naming its metadata."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.auth.conftest import METADATA_PREFIX, SignedIn, claims_for, start_signed_in
from tests.conformance.helpers import fresh_id, problem
from tests.e2e.mcp_client import mcp_client, output_of
from tests.fakes.identity_service import IdentityServiceProcess

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class Keys:
    rsa: str
    ec: str
    unpublished: str


KEYS = Keys()


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory, identity: IdentityServiceProcess) -> Iterator[SignedIn]:
    """One server for the module; its keys exist before it starts, so no test here fetches a new key but the
    one that names a key the issuer does not publish."""
    KEYS.rsa = identity.new_key("RS256")
    KEYS.ec = identity.new_key("ES256")
    KEYS.unpublished = identity.new_key("RS256", publish=False)
    signed_in = start_signed_in(Path(tmp_path_factory.mktemp("signed-in")), identity)
    yield signed_in
    assert signed_in.server.stop() == 0, signed_in.server.log()


def invalid_challenge(signed_in: SignedIn, path: str = METADATA_PREFIX) -> str:
    return f'Bearer error="invalid_token", resource_metadata="{signed_in.public_url}{path}"'


@pytest.mark.parametrize("alg", ["RS256", "ES256"])
@pytest.mark.parametrize("version", [1, 2])
def test_a_token_of_the_identity_service_acts_in_its_org(signed_in: SignedIn, alg: str, version: int) -> None:
    token = signed_in.token(KEYS.rsa if alg == "RS256" else KEYS.ec, version=version)
    playbook = fresh_id()
    created = signed_in.post("/v1/orgs/acme/playbooks", token, {"playbook": playbook, "name": "Signed in"})
    assert created.status_code == 201, created.text
    listed = signed_in.get("/v1/orgs/acme/playbooks", token)
    assert listed.status_code == 200, listed.text
    assert playbook in {p["id"] for p in listed.json()["playbooks"]}


def test_a_token_is_refused_in_another_org(signed_in: SignedIn) -> None:
    token = signed_in.token(KEYS.rsa)
    body = problem(signed_in.get("/v1/orgs/globex/playbooks", token), 403, "forbidden")
    assert body["detail"] == "This sign-in belongs to the org acme, not to that org."


@pytest.mark.parametrize("version", [1, 2])
def test_the_permissions_are_those_of_the_org_claims(signed_in: SignedIn, version: int) -> None:
    reader = signed_in.token(KEYS.ec, version=version, permissions=["org:org:read", "org:billing:manage"])
    assert signed_in.get("/v1/orgs/acme/playbooks", reader).status_code == 200
    refused = signed_in.post("/v1/orgs/acme/playbooks", reader, {"playbook": fresh_id(), "name": "No"})
    body = problem(refused, 403, "forbidden")
    assert "org:write" in body["detail"]


def test_a_token_that_names_no_org_is_forbidden(signed_in: SignedIn) -> None:
    body = problem(signed_in.get("/v1/orgs/acme/playbooks", signed_in.token(KEYS.rsa, org=None)), 403, "forbidden")
    assert "names no org" in body["detail"]


def test_api_keys_keep_working_beside_tokens(signed_in: SignedIn) -> None:
    assert signed_in.get("/v1/orgs/acme/playbooks", signed_in.api_key).status_code == 200
    missing = problem(signed_in.get("/v1/orgs/acme/playbooks", None), 401, "unauthenticated")
    assert "credential" in missing["detail"]


def test_a_token_within_the_clock_skew_is_accepted(signed_in: SignedIn) -> None:
    now = int(time.time())
    late = signed_in.token(KEYS.rsa, exp=now - 20, iat=now - 600, nbf=now - 600)
    early = signed_in.token(KEYS.ec, iat=now + 20, nbf=now + 20)
    assert signed_in.get("/v1/orgs/acme/playbooks", late).status_code == 200
    assert signed_in.get("/v1/orgs/acme/playbooks", early).status_code == 200


def _segments(token: str) -> list[str]:
    return token.split(".")


def _encoded(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _alg_none(s: SignedIn) -> str:
    _, payload, _ = _segments(s.token(KEYS.rsa))
    return f"{_encoded({'alg': 'none', 'kid': KEYS.rsa, 'typ': 'JWT'})}.{payload}."


def _hs256_with_the_public_key(s: SignedIn) -> str:
    claims = claims_for(s.identity.issuer, s.public_url)
    secret = s.identity.public_pem(KEYS.rsa)
    # PyJWT refuses a PEM as an HMAC secret; an attacker's own code would not, so this signs by hand.
    signing_input = f"{_encoded({'alg': 'HS256', 'kid': KEYS.rsa, 'typ': 'JWT'})}.{_encoded(claims)}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(signature).decode().rstrip('=')}"


def _bad_signature(s: SignedIn) -> str:
    header, payload, signature = _segments(s.token(KEYS.rsa))
    other = _segments(s.token(KEYS.rsa))[2]
    assert other != signature
    return f"{header}.{payload}.{other}"


def _tampered_claims(s: SignedIn) -> str:
    header, payload, signature = _segments(s.token(KEYS.ec, org="acme"))
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["org_id"] = "globex"
    return f"{header}.{_encoded(claims)}.{signature}"


def _key_of_another_alg(s: SignedIn) -> str:
    _, payload, signature = _segments(s.token(KEYS.ec))
    return f"{_encoded({'alg': 'RS256', 'kid': KEYS.ec})}.{payload}.{signature}"


def _without_kid(s: SignedIn) -> str:
    _, payload, signature = _segments(s.token(KEYS.rsa))
    return f"{_encoded({'alg': 'RS256', 'typ': 'JWT'})}.{payload}.{signature}"


REFUSED: dict[str, tuple[Callable[[SignedIn], str], str]] = {
    "wrong audience": (lambda s: s.token(KEYS.rsa, aud="https://elsewhere.example"), "audience"),
    "audience list without it": (lambda s: s.token(KEYS.rsa, aud=["https://a.example", "https://b.ex"]), "audience"),
    "wrong issuer": (lambda s: s.token(KEYS.rsa, iss="https://clerk.elsewhere.example"), "not issued by"),
    "expired beyond the skew": (lambda s: s.token(KEYS.rsa, exp=int(time.time()) - 120), "expired"),
    "not yet valid": (lambda s: s.token(KEYS.ec, nbf=int(time.time()) + 600), "not valid yet"),
    "issued in the future": (lambda s: s.token(KEYS.ec, iat=int(time.time()) + 600, nbf=None), "not valid yet"),
    "no expiry": (lambda s: s.token(KEYS.rsa, exp=None), "claim exp"),
    "no audience": (lambda s: s.token(KEYS.rsa, aud=None), "claim aud"),
    "no person": (lambda s: s.token(KEYS.rsa, sub=None), "claim sub"),
    "bad signature": (_bad_signature, "signature"),
    "claims changed after signing": (_tampered_claims, "signature"),
    "alg none": (_alg_none, "'none'"),
    "HS256 signed with the public key": (_hs256_with_the_public_key, "'HS256'"),
    "a key of another algorithm": (_key_of_another_alg, "key is not one for RS256"),
    "an org id this server cannot have": (lambda s: s.token(KEYS.rsa, org="acme/../globex"), "org id"),
    "malformed": (lambda s: "not.a.jwt" + "!", "well-formed"),
    "three dots of nothing": (lambda s: "a.b.c", "well-formed"),
    "no kid": (_without_kid, "names no key"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_each_token_that_fails_a_check_is_an_invalid_credential(signed_in: SignedIn, case: str) -> None:
    make, words = REFUSED[case]
    token = make(signed_in)
    response = signed_in.get("/v1/orgs/acme/playbooks", token)
    body = problem(response, 401, "unauthenticated")
    assert words in body["detail"], body
    assert response.headers["www-authenticate"] == invalid_challenge(signed_in)
    over_mcp = signed_in.post("/orgs/acme/mcp", token, LIST_TOOLS, **MCP_HEADERS)
    problem(over_mcp, 401, "unauthenticated")
    assert over_mcp.headers["www-authenticate"] == invalid_challenge(signed_in, f"{METADATA_PREFIX}/orgs/acme/mcp")


def test_a_key_the_issuer_does_not_publish_is_an_invalid_credential(signed_in: SignedIn) -> None:
    """The fetch it causes finds no such key, so the second ask of that key is refused without a fetch."""
    token = signed_in.token(KEYS.unpublished)
    body = problem(signed_in.get("/v1/orgs/acme/playbooks", token), 401, "unauthenticated")
    assert "does not publish" in body["detail"]
    again = signed_in.post("/mcp", token, LIST_TOOLS, **MCP_HEADERS)
    problem(again, 401, "unauthenticated")
    assert again.headers["www-authenticate"] == invalid_challenge(signed_in, f"{METADATA_PREFIX}/mcp")


def test_the_challenge_names_the_protected_resource_metadata(signed_in: SignedIn) -> None:
    missing = signed_in.get("/v1/orgs/acme/playbooks", None)
    assert missing.headers["www-authenticate"] == f'Bearer resource_metadata="{signed_in.public_url}{METADATA_PREFIX}"'
    unserved = signed_in.get("/v1/nothing-here", None)
    problem(unserved, 401, "unauthenticated")
    assert unserved.headers["www-authenticate"] == missing.headers["www-authenticate"]
    on_mcp = signed_in.post("/orgs/acme/playbooks/sales/mcp", None, LIST_TOOLS, **MCP_HEADERS)
    problem(on_mcp, 401, "unauthenticated")
    assert on_mcp.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{signed_in.public_url}{METADATA_PREFIX}/orgs/acme/playbooks/sales/mcp"'
    )
    assert problem(signed_in.get("/v1/nothing-here", signed_in.token(KEYS.rsa)), 404, "not_found")


def test_the_protected_resource_metadata_documents(signed_in: SignedIn) -> None:
    for path in ("", "/mcp", "/orgs/acme/mcp", "/orgs/acme/playbooks/sales/mcp"):
        response = signed_in.get(METADATA_PREFIX + path, None)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        document = response.json()
        assert document["resource"] == signed_in.public_url + path
        assert document["authorization_servers"] == [signed_in.identity.issuer]
        assert document["bearer_methods_supported"] == ["header"]


def test_a_token_opens_the_mcp_endpoints_of_its_org_only(signed_in: SignedIn) -> None:
    token = signed_in.token(KEYS.ec)
    assert signed_in.post("/orgs/acme/mcp", token, LIST_TOOLS, **MCP_HEADERS).status_code == 200
    assert signed_in.post("/mcp", token, LIST_TOOLS, **MCP_HEADERS).status_code == 200
    other = signed_in.post("/orgs/globex/mcp", token, LIST_TOOLS, **MCP_HEADERS)
    problem(other, 403, "forbidden")
    assert other.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'


async def test_a_signed_in_person_calls_tools_of_its_org(signed_in: SignedIn) -> None:
    token = signed_in.token(KEYS.rsa, version=2)
    playbook = fresh_id()
    async with mcp_client(signed_in.server.base_url, "/orgs/acme/mcp", secret=token) as client:
        created = output_of(await client.call_tool("create_playbook", {"playbook": playbook, "name": "Over MCP"}))
        assert created["id"] == playbook
    async with mcp_client(signed_in.server.base_url, secret=token) as client:
        listed = output_of(await client.call_tool("list_playbooks", {}))
        assert playbook in {p["id"] for p in listed["playbooks"]}


def test_a_signed_in_person_adds_and_connects_a_connection_and_no_other_person_may(
    signed_in: SignedIn,
) -> None:
    """Seeds, "Connections": where people sign in, a person adds a connection and only that person connects it,
    in their own session (a key's refusal there: `tests/conformance/connections/test_connection_rules.py`)."""
    person = signed_in.token(KEYS.rsa, sub="user_adder")
    other = signed_in.token(KEYS.rsa, sub="user_other")
    body = {
        "name": f"crm-{fresh_id()}",
        "kind": "mcp",
        "entry": {"url": "https://crm.example.com/mcp"},
        "credential": {"kind": "none"},
    }
    added = signed_in.post("/v1/orgs/acme/connections", person, body)
    assert added.status_code == 201, added.text
    shown = added.json()
    assert (shown["status"], shown["added_by"]) == ("pending", "user_adder")
    token = shown["connect"]["url"].split("token=", 1)[1]
    path = f"/v1/orgs/acme/connections/{shown['id']}/approve"
    refused = problem(signed_in.post(path, other, {"token": token}), 403, "forbidden")
    assert "who added the connection" in refused["detail"]
    approved = signed_in.post(path, person, {"token": token})
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["connected_by"]) == ("connected", "user_adder")
