"""A fake OAuth authorization server issuing client-credentials tokens, a real process for the tool tests.

    python -m tests.fakes.oauth_server --port 0 --signing-key K --audience A [--mode M] [--redirect-to URL]

Its metadata (RFC 8414 and OpenID Connect discovery) names its own origin as the issuer and ``/token`` as the
token endpoint. ``/token`` takes ``grant_type=client_credentials`` with ``client_id=tools-client`` and
``client_secret=tools-client-secret-0123`` (``client_secret_post``), and answers an HS256 JWT for the audience,
``expires_in`` 3600 (or ``--expires-in``). With ``--client-public-key PATH`` it also takes ``private_key_jwt``: a
``client_assertion`` JWT signed by that key's private half, whose ``iss`` and ``sub`` are the client id and whose
``aud`` is the token endpoint. Modes that misbehave:

* ``slow``: the token endpoint never answers;
* ``wrong_audience``: the tokens are for another audience, so the API refuses them;
* ``redirect``: the token endpoint answers 307 to ``--redirect-to``;
* ``wrong_issuer``: the metadata names another issuer;
* ``token_elsewhere``: the metadata names the token endpoint on the host ``localhost`` where the server was asked
  on ``127.0.0.1`` (the same server, under a name a host rule can refuse).

``GET /_fake/minted`` answers how many tokens it issued.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.asgi_serving import serve_on_loopback

CLIENT_ID = "tools-client"
CLIENT_SECRET = "tools-client-secret-0123"


def _asserted(form: Any, public_key: str | None, endpoint: str) -> bool:
    assertion = form.get("client_assertion")
    if public_key is None or not isinstance(assertion, str):
        return False
    if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
        return False
    try:
        claims = jwt.decode(assertion, public_key, algorithms=["ES256", "RS256", "EdDSA"], audience=endpoint)
    except jwt.PyJWTError:
        return False
    return bool(claims.get("iss") == CLIENT_ID and claims.get("sub") == CLIENT_ID)


def build(
    signing_key: str,
    audience: str,
    mode: str,
    redirect_to: str | None,
    expires_in: int,
    public_key: str | None = None,
) -> Starlette:
    minted = {"count": 0}

    def origin(request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}"

    def token_origin(request: Request) -> str:
        here = origin(request)
        return here.replace("127.0.0.1", "localhost") if mode == "token_elsewhere" else here

    async def metadata(request: Request) -> Response:
        issuer = "https://someone-else.example" if mode == "wrong_issuer" else origin(request)
        return JSONResponse(
            {
                "issuer": issuer,
                "token_endpoint": f"{token_origin(request)}/token",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            }
        )

    async def token(request: Request) -> Response:
        if mode == "slow":
            await asyncio.Event().wait()
        if mode == "redirect":
            return RedirectResponse(redirect_to or "https://elsewhere.example/token", status_code=307)
        form = await request.form()
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        secret_ok = form.get("client_secret") == CLIENT_SECRET
        if form.get("client_id") != CLIENT_ID or not (
            secret_ok or _asserted(form, public_key, f"{origin(request)}/token")
        ):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        minted["count"] += 1
        claims = {
            "sub": CLIENT_ID,
            "aud": "someone-else" if mode == "wrong_audience" else audience,
            "exp": int(time.time()) + expires_in,
            "jti": str(uuid.uuid4()),
            "scope": str(form.get("scope") or ""),
        }
        issued = jwt.encode(claims, signing_key, algorithm="HS256")
        return JSONResponse({"access_token": issued, "token_type": "Bearer", "expires_in": expires_in})

    async def count(request: Request) -> Response:
        return JSONResponse({"minted": minted["count"]})

    return Starlette(
        routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/.well-known/openid-configuration", metadata),
            Route("/token", token, methods=["POST"]),
            Route("/_fake/minted", count),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake OAuth authorization server for tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--signing-key", required=True)
    parser.add_argument("--audience", required=True)
    modes = ["normal", "slow", "wrong_audience", "redirect", "wrong_issuer", "token_elsewhere"]
    parser.add_argument("--mode", default="normal", choices=modes)
    parser.add_argument("--redirect-to")
    parser.add_argument("--expires-in", type=int, default=3600)
    parser.add_argument("--client-public-key", type=Path)
    arguments = parser.parse_args(argv)
    public_key = arguments.client_public_key.read_text() if arguments.client_public_key else None
    app = build(
        arguments.signing_key,
        arguments.audience,
        arguments.mode,
        arguments.redirect_to,
        arguments.expires_in,
        public_key,
    )
    serve_on_loopback(app, arguments.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
