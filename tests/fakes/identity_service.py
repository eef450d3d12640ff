"""A fake identity service (Clerk-like issuer of access tokens), a real https process for the sign-in tests.

    python -m tests.fakes.identity_service --port 0 --certfile C --keyfile K

It is its own issuer: its origin, ``https://127.0.0.1:<port>``. It publishes an OpenID Connect discovery document
at ``/.well-known/openid-configuration`` whose ``jwks_uri`` is ``/jwks``, and the same key set at
``/.well-known/jwks.json``. Its keys are made and signed with on request, so a test rotates them mid-test:

* ``POST /_fake/keys`` ``{"kid", "alg": "RS256" | "ES256", "publish": true}`` makes a key (published or not);
* ``POST /_fake/keys/{kid}/withdraw`` takes a key out of the set (it can still sign);
* ``GET /_fake/keys/{kid}/public.pem`` answers a key's public half;
* ``POST /_fake/sign`` ``{"kid", "claims", "alg"?}`` answers ``{"token"}``, a JWT signed with that key, its
  header naming ``kid`` (and ``alg``, the key's own unless given);
* ``POST /_fake/mode`` ``{"discovery": "normal" | "missing" | "other_issuer", "jwks": "normal" | "fail" |
  "hang"}``: no discovery document (``404``), one naming another issuer, a key set answering ``500``, or one
  that never answers;
* ``GET /_fake/fetches`` answers how many times each of its documents was asked for, by path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.asgi_serving import serve_on_loopback
from tests.fakes.gateway_process import _interrupt, _started


@dataclass
class SigningKey:
    kid: str
    alg: str
    private: Any
    published: bool = True

    def jwk(self) -> dict[str, Any]:
        algorithm = jwt.get_algorithm_by_name(self.alg)
        entry: dict[str, Any] = json.loads(algorithm.to_jwk(self.private.public_key()))
        return {**entry, "kid": self.kid, "alg": self.alg, "use": "sig"}


@dataclass
class IdentityState:
    keys: dict[str, SigningKey] = field(default_factory=dict)
    mode: dict[str, str] = field(default_factory=lambda: {"discovery": "normal", "jwks": "normal"})
    fetches: dict[str, int] = field(default_factory=dict)


def new_private_key(alg: str) -> Any:
    if alg.startswith("ES"):
        return ec.generate_private_key(ec.SECP256R1())
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def build(state: IdentityState) -> Starlette:
    def origin(request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}"

    def count(request: Request) -> None:
        state.fetches[request.url.path] = state.fetches.get(request.url.path, 0) + 1

    async def discovery(request: Request) -> Response:
        count(request)
        if state.mode["discovery"] == "missing":
            return JSONResponse({"error": "not_found"}, status_code=404)
        issuer = "https://someone-else.example" if state.mode["discovery"] == "other_issuer" else origin(request)
        return JSONResponse(
            {
                "issuer": issuer,
                "jwks_uri": f"{origin(request)}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            }
        )

    async def key_set(request: Request) -> Response:
        count(request)
        if state.mode["jwks"] == "hang":
            await asyncio.Event().wait()
        if state.mode["jwks"] == "fail":
            return JSONResponse({"error": "down"}, status_code=500)
        return JSONResponse({"keys": [key.jwk() for key in state.keys.values() if key.published]})

    async def make_key(request: Request) -> Response:
        body = await request.json()
        kid = body.get("kid") or uuid.uuid4().hex
        alg = body.get("alg", "RS256")
        state.keys[kid] = SigningKey(kid, alg, new_private_key(alg), published=body.get("publish", True))
        return JSONResponse({"kid": kid})

    async def withdraw(request: Request) -> Response:
        state.keys[request.path_params["kid"]].published = False
        return JSONResponse({})

    async def public_pem(request: Request) -> Response:
        key = state.keys[request.path_params["kid"]]
        pem = key.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return Response(pem, media_type="application/x-pem-file")

    async def sign(request: Request) -> Response:
        body = await request.json()
        key = state.keys[body["kid"]]
        token = jwt.encode(body["claims"], key.private, algorithm=body.get("alg", key.alg), headers={"kid": key.kid})
        return JSONResponse({"token": token})

    async def mode(request: Request) -> Response:
        state.mode.update(await request.json())
        return JSONResponse(state.mode)

    async def fetches(request: Request) -> Response:
        return JSONResponse(state.fetches)

    return Starlette(
        routes=[
            Route("/.well-known/openid-configuration", discovery),
            Route("/jwks", key_set),
            Route("/.well-known/jwks.json", key_set),
            Route("/_fake/keys", make_key, methods=["POST"]),
            Route("/_fake/keys/{kid}/withdraw", withdraw, methods=["POST"]),
            Route("/_fake/keys/{kid}/public.pem", public_pem),
            Route("/_fake/sign", sign, methods=["POST"]),
            Route("/_fake/mode", mode, methods=["POST"]),
            Route("/_fake/fetches", fetches),
        ]
    )


@dataclass
class IdentityServiceProcess:
    """The fake as a process, and the calls a test makes to it (verified against its certificate)."""

    process: Any
    issuer: str
    certificate: Path

    def _client(self) -> httpx.Client:
        verify = ssl.create_default_context(cafile=str(self.certificate))
        return httpx.Client(base_url=self.issuer, verify=verify, timeout=30.0)

    def new_key(self, alg: str = "RS256", *, publish: bool = True) -> str:
        with self._client() as client:
            response = client.post("/_fake/keys", json={"alg": alg, "publish": publish})
        response.raise_for_status()
        kid: str = response.json()["kid"]
        return kid

    def withdraw(self, kid: str) -> None:
        with self._client() as client:
            client.post(f"/_fake/keys/{kid}/withdraw").raise_for_status()

    def public_pem(self, kid: str) -> bytes:
        with self._client() as client:
            response = client.get(f"/_fake/keys/{kid}/public.pem")
        response.raise_for_status()
        return response.content

    def sign(self, kid: str, claims: dict[str, Any], alg: str | None = None) -> str:
        body: dict[str, Any] = {"kid": kid, "claims": claims}
        if alg is not None:
            body["alg"] = alg
        with self._client() as client:
            response = client.post("/_fake/sign", json=body)
        response.raise_for_status()
        token: str = response.json()["token"]
        return token

    def set_mode(self, **mode: str) -> None:
        with self._client() as client:
            client.post("/_fake/mode", json=mode).raise_for_status()

    def fetches(self, path: str = "/jwks") -> int:
        """How many times `path` was asked for: by default the key set that discovery names."""
        with self._client() as client:
            response = client.get("/_fake/fetches")
        response.raise_for_status()
        counts: dict[str, int] = response.json()
        return counts.get(path, 0)

    def stop(self) -> None:
        _interrupt(self.process)


def start_identity_service(certificate: Path, key: Path) -> IdentityServiceProcess:
    """``python -m tests.fakes.identity_service`` serving https with `certificate`; waits for its first line."""
    command = [
        sys.executable,
        "-m",
        "tests.fakes.identity_service",
        "--port",
        "0",
        "--certfile",
        str(certificate),
        "--keyfile",
        str(key),
    ]
    process, origin = _started(command, "the fake identity service")
    return IdentityServiceProcess(process, origin, certificate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake identity service for the sign-in tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--certfile", type=Path, required=True)
    parser.add_argument("--keyfile", type=Path, required=True)
    arguments = parser.parse_args(argv)
    serve_on_loopback(build(IdentityState()), arguments.port, tls=(arguments.certfile, arguments.keyfile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
