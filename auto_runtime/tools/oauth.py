"""OAuth client credentials for a tool server: tokens minted from an auth block, cached until expiry, renewed.

Seeds ("Sign in to a server with OAuth"):

- a token is minted once for every run that needs one, renewed `RENEW_BEFORE_SECONDS` before it expires, and
  minted once more when the server answers 401 (`renew(refused)`);
- the credentials go only to an authorization server whose metadata names the configured issuer: for an MCP
  server, the issuer must also be one of the `authorization_servers` of the server's protected-resource metadata
  (RFC 9728); the authorization server's own metadata is read by RFC 8414, else OpenID Connect discovery;
- every request (metadata and token) passes the entry's host policy and follows no redirect.

The client authenticates with `client_secret_post`, or with `private_key_jwt` (RFC 7523) when the block gives a
private key. Each minted token is added to the shared `SecretSet` under this source, which keeps the window
rule. Concurrency rules: one mint at a time per source (a lock); callers that waited reuse the token just minted.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx2
import jwt
import trio

from auto_runtime.settings import OAuthClient
from auto_runtime.tools.hosts import HostNotAllowed
from auto_runtime.tools.scrubbing import SecretSet

log = logging.getLogger("auto_runtime.tools")

RENEW_BEFORE_SECONDS = 60.0
DEFAULT_LIFETIME_SECONDS = 300.0
MAX_METADATA_BYTES = 256 * 1024

TokenFailedBecause = Literal["unreachable", "failing", "key_refused", "rate_limited"]


@dataclass
class TokenFailed(Exception):
    """No token could be minted; `because` is the `tool_server_failed` reason it leads to."""

    because: TokenFailedBecause
    detail: str

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)


@dataclass(frozen=True, slots=True)
class Minted:
    token: str
    expires_at: float


def well_known(issuer: str, suffix: str, *, insert: bool) -> str:
    """The metadata URL of `issuer`: RFC 8414 inserts the well-known segment before the issuer's path; OpenID
    Connect discovery appends it."""
    parts = urlsplit(issuer.rstrip("/"))
    path = f"/.well-known/{suffix}{parts.path}" if insert else f"{parts.path}/.well-known/{suffix}"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class ClientCredentials:
    """Mints tokens for one tool server's auth block.

    `resource_url` is the MCP server's URL when the authorization server is to be found through its
    protected-resource metadata, else None (an HTTP API: the issuer is its authorization server).
    """

    def __init__(
        self,
        source: str,
        auth: OAuthClient,
        http: httpx2.AsyncClient,
        secrets: SecretSet,
        *,
        resource_url: str | None,
        limit_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.source = source
        self.auth = auth
        self.http = http
        self.secrets = secrets
        self.resource_url = resource_url
        self.limit_seconds = limit_seconds
        self.clock = clock
        self._token_endpoint: str | None = None
        self._minted: Minted | None = None
        self._lock = trio.Lock()
        self.mints = 0
        if auth.client_secret is not None:
            secrets.add(auth.client_secret)
        if auth.private_key is not None:
            secrets.add(auth.private_key)

    async def token(self) -> str:
        """A token good for at least `RENEW_BEFORE_SECONDS` more, minted when the cached one is not."""
        async with self._lock:
            minted = self._minted
            if minted is not None and minted.expires_at - RENEW_BEFORE_SECONDS > self.clock():
                return minted.token
            return await self._mint()

    async def renew(self, refused: str) -> str:
        """The server answered 401 to `refused`: mint once more, unless another caller already has."""
        async with self._lock:
            minted = self._minted
            if minted is not None and minted.token != refused:
                return minted.token
            return await self._mint()

    async def _mint(self) -> str:
        try:
            with trio.fail_after(self.limit_seconds):
                endpoint = await self._endpoint()
                minted = await self._request_token(endpoint)
        except trio.TooSlowError:
            raise TokenFailed(
                "unreachable", f"The authorization server of {self.source} did not answer in time."
            ) from None
        except HostNotAllowed as refused:
            raise TokenFailed("key_refused", str(refused)) from None
        except httpx2.HTTPError as error:
            raise TokenFailed(
                "unreachable",
                f"The authorization server of {self.source} could not be reached ({type(error).__name__}).",
            ) from None
        self._minted = minted
        self.mints += 1
        self.secrets.mint(self.source, minted.token)
        return minted.token

    async def _endpoint(self) -> str:
        if self._token_endpoint is not None:
            return self._token_endpoint
        issuer = self.auth.issuer.rstrip("/")
        if self.resource_url is not None:
            await self._check_resource_names(issuer)
        metadata = await self._issuer_metadata(issuer)
        endpoint = metadata.get("token_endpoint")
        if not isinstance(endpoint, str) or urlsplit(endpoint).scheme not in ("http", "https"):
            raise TokenFailed("failing", f"The metadata of the issuer of {self.source} names no token endpoint.")
        self._token_endpoint = endpoint
        return endpoint

    async def _check_resource_names(self, issuer: str) -> None:
        assert self.resource_url is not None
        parts = urlsplit(self.resource_url)
        candidates = [well_known(self.resource_url, "oauth-protected-resource", insert=True)]
        if parts.path not in ("", "/"):
            candidates.append(urlunsplit((parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource", "", "")))
        for url in candidates:
            document = await self._json(url)
            if document is None:
                continue
            servers = document.get("authorization_servers")
            named = {str(server).rstrip("/") for server in servers} if isinstance(servers, list) else set()
            if issuer not in named:
                raise TokenFailed(
                    "key_refused",
                    f"The protected-resource metadata of {self.source} does not name its configured issuer, "
                    "so its client credentials are not sent.",
                )
            return
        raise TokenFailed("failing", f"The tool server {self.source} publishes no protected-resource metadata.")

    async def _issuer_metadata(self, issuer: str) -> dict[str, Any]:
        for url in (
            well_known(issuer, "oauth-authorization-server", insert=True),
            well_known(issuer, "openid-configuration", insert=False),
        ):
            document = await self._json(url)
            if document is None:
                continue
            if str(document.get("issuer", "")).rstrip("/") != issuer:
                raise TokenFailed(
                    "key_refused",
                    f"The authorization server's metadata for {self.source} names another issuer, "
                    "so its client credentials are not sent.",
                )
            return document
        raise TokenFailed("failing", f"The issuer of {self.source} publishes no authorization server metadata.")

    async def _json(self, url: str) -> dict[str, Any] | None:
        """A metadata document, or None when the address has none (4xx); a redirect is not followed."""
        response = await self.http.get(url, headers={"accept": "application/json"})
        if response.is_redirect:
            raise TokenFailed("failing", f"The metadata address of {self.source} answered a redirect, not followed.")
        if 400 <= response.status_code < 500:
            return None
        if response.status_code >= 500:
            raise TokenFailed("failing", f"The authorization server of {self.source} is failing.")
        if len(response.content) > MAX_METADATA_BYTES:
            raise TokenFailed("failing", f"The metadata of {self.source} is too large.")
        try:
            document = response.json()
        except ValueError:
            return None
        return document if isinstance(document, dict) else None

    async def _request_token(self, endpoint: str) -> Minted:
        form: dict[str, str] = {"grant_type": "client_credentials", "client_id": self.auth.client_id}
        if self.auth.scope:
            form["scope"] = self.auth.scope
        if self.resource_url is not None:
            form["resource"] = self.resource_url
        if self.auth.private_key is not None:
            form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            form["client_assertion"] = self._assertion(endpoint)
        else:
            assert self.auth.client_secret is not None
            form["client_secret"] = self.auth.client_secret
        response = await self.http.post(endpoint, data=form, headers={"accept": "application/json"})
        if response.is_redirect:
            raise TokenFailed("failing", f"The token endpoint of {self.source} answered a redirect, not followed.")
        if response.status_code == 429:
            raise TokenFailed("rate_limited", f"The authorization server of {self.source} is limiting requests.")
        if response.status_code >= 500:
            raise TokenFailed("failing", f"The authorization server of {self.source} is failing.")
        if response.status_code >= 400:
            raise TokenFailed(
                "key_refused",
                f"The authorization server of {self.source} refused its client credentials "
                f"(HTTP {response.status_code}).",
            )
        try:
            body = response.json()
        except ValueError:
            body = None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise TokenFailed("failing", f"The authorization server of {self.source} answered no access token.")
        lifetime = body.get("expires_in") if isinstance(body, dict) else None
        seconds = float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else DEFAULT_LIFETIME_SECONDS
        return Minted(token, self.clock() + seconds)

    def _assertion(self, endpoint: str) -> str:
        assert self.auth.private_key is not None and self.auth.algorithm is not None
        now = int(time.time())
        claims = {
            "iss": self.auth.client_id,
            "sub": self.auth.client_id,
            "aud": endpoint,
            "iat": now,
            "exp": now + 300,
            "jti": str(uuid.uuid4()),
        }
        return jwt.encode(claims, self.auth.private_key, algorithm=self.auth.algorithm)


class BearerFromSource(httpx2.Auth):
    """An httpx auth flow: `Authorization: Bearer <token>` from a token source, minted once more on a 401."""

    def __init__(self, source: ClientCredentials) -> None:
        self.source = source

    async def async_auth_flow(self, request: httpx2.Request) -> Any:
        token = await self.source.token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            await response.aread()
            token = await self.source.renew(token)
            request.headers["Authorization"] = f"Bearer {token}"
            yield request
