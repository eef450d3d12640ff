"""The fake identity service, and a signed-in server that trusts it, for the sign-in tests."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.auth.issuer_keys import FETCH_SPACING_SECONDS
from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS, advance
from tests.e2e.server_process import ServerProcess, free_port, start_server
from tests.e2e.test_access import issue_key
from tests.fakes.identity_service import IdentityServiceProcess, start_identity_service
from tests.fakes.tls import self_signed

EVERY_PERMISSION = ("org:org:read", "org:org:write", "org:playbook:read", "org:playbook:write")
METADATA_PREFIX = "/.well-known/oauth-protected-resource"


def claims_for(
    issuer: str,
    audience: str,
    *,
    org: str | None = "acme",
    permissions: Sequence[str] = EVERY_PERMISSION,
    version: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """The claims of a token of the identity service: version 1 (`org_id`, `org_permissions`) or version 2
    (`o` with `per` and `fpm` over the `o:` features of `fea`)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": f"user_{uuid.uuid4().hex[:12]}",
        "iss": issuer,
        "aud": audience,
        "iat": now,
        "nbf": now - 5,
        "exp": now + 300,
        "sid": f"sess_{uuid.uuid4().hex[:12]}",
    }
    if version == 2:
        claims["v"] = 2
        features = sorted({p.split(":")[1] for p in permissions})
        actions = sorted({p.split(":")[2] for p in permissions})
        claims["fea"] = ",".join(f"o:{f}" for f in features)
        masks = [
            sum(1 << j for j, action in enumerate(actions) if f"org:{feature}:{action}" in permissions)
            for feature in features
        ]
        if org is not None:
            claims["o"] = {"id": org, "rol": "admin", "per": ",".join(actions), "fpm": ",".join(map(str, masks))}
    elif org is not None:
        claims["org_id"] = org
        claims["org_permissions"] = list(permissions)
    claims.update(overrides)
    return {name: value for name, value in claims.items() if value is not None}


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityServiceProcess]:
    folder = tmp_path_factory.mktemp("identity-service")
    certificate, key = self_signed(folder, "identity service")
    fake = start_identity_service(certificate, key)
    yield fake
    fake.stop()


@dataclass
class SignedIn:
    """A server with sign-in on, whose identity service is the fake, and one API key of `acme` beside."""

    server: ServerProcess
    identity: IdentityServiceProcess
    public_url: str
    api_key: str

    def token(self, kid: str, alg: str | None = None, **claims: Any) -> str:
        return self.identity.sign(kid, claims_for(self.identity.issuer, self.public_url, **claims), alg)

    def get(self, path: str, credential: str | None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {credential}"} if credential is not None else {}
        with self.server.client() as client:
            return client.get(path, headers=headers)

    def post(self, path: str, credential: str | None, body: Any, **headers: str) -> httpx.Response:
        sent = {"Authorization": f"Bearer {credential}"} if credential is not None else {}
        with self.server.client() as client:
            return client.post(path, headers={**sent, **headers}, json=body)

    def pass_fetch_spacing(self) -> None:
        """Move the server's clock (a server started with `test_clock`) past the spacing of key set fetches, so
        the next request that needs a fetch has it at once instead of after up to `FETCH_SPACING_SECONDS`."""
        with self.server.client() as client:
            advance(client, timedelta(seconds=FETCH_SPACING_SECONDS))


def start_signed_in(folder: Path, identity: IdentityServiceProcess, *, test_clock: bool = False) -> SignedIn:
    """The server on a port chosen first, so that `PUBLIC_URL`, the audience of its tokens, is its own address;
    with `test_clock`, its clock is the test's (`tests.e2e.moved_clock`)."""
    key = issue_key(folder, "--org", "acme", "--permission", "org:read", "--permission", "playbook:read")
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    settings = {
        "PUBLIC_URL": public_url,
        "IDENTITY_ISSUER": identity.issuer,
        "NODE_EXTRA_CA_CERTS": str(identity.certificate),
        "API_KEYS": json.dumps([key.entry], separators=(",", ":")),
    }
    server = start_server(folder, {**settings, **(TEST_CLOCK_SETTINGS if test_clock else {})}, port=port)
    return SignedIn(server, identity, public_url, key.secret)
