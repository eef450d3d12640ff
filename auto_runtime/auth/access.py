"""The access chain shared by HTTP and MCP: origins, the local-mode host rule and bearer authentication.

Local mode (a loopback host with neither `PUBLIC_URL` nor `API_KEYS`) asks for no credential: every caller is
the local developer with every permission. Otherwise a request carries `Authorization: Bearer <credential>`: an
API key, or, where sign-in is on (`PUBLIC_URL` set), a signed-in person's access token (`access_tokens`).

A missing or invalid credential is `401 unauthenticated` with `WWW-Authenticate: Bearer` (`error="invalid_token"`
for an invalid one) and, where sign-in is on, `resource_metadata="<url>"` naming the protected-resource metadata
of what was asked: an MCP endpoint's own, or the server's at `PROTECTED_RESOURCE_PREFIX` (spec mcp.md §2, §10).
A token whose key the identity service cannot be asked for now is `503 unavailable` with a `Retry-After`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from auto_runtime.auth.access_tokens import AccessTokens, InvalidToken, looks_like_a_token
from auto_runtime.auth.api_keys import KeyRing
from auto_runtime.auth.caller import LOCAL_CALLER, Caller
from auto_runtime.auth.issuer_keys import KeysUnavailable
from auto_runtime.problems import Rejection, unavailable

STUDIO_ORIGIN = "https://studio.on.auto"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
PROTECTED_RESOURCE_PREFIX = "/.well-known/oauth-protected-resource"
"""The server's protected-resource metadata, and the prefix of each MCP endpoint's (RFC 9728 §3.1)."""


def host_name_of(host_header: str) -> str:
    """The name part of a `Host` header, without its port."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_host(host_header: str) -> bool:
    name = host_name_of(host_header)
    return name in LOOPBACK_HOSTS or name.startswith("127.")


def unauthenticated(detail: str, *, invalid: bool, resource_metadata: str | None = None) -> Rejection:
    """The `401`; its challenge names the protected-resource metadata where one is given (sign-in on)."""
    parameters = ['error="invalid_token"'] if invalid else []
    if resource_metadata is not None:
        parameters.append(f'resource_metadata="{resource_metadata}"')
    challenge = "Bearer " + ", ".join(parameters) if parameters else "Bearer"
    return Rejection("unauthenticated", detail, headers={"WWW-Authenticate": challenge})


@dataclass(frozen=True)
class AccessGate:
    """Decides who a request comes from, before any operation is looked at."""

    local_mode: bool
    keys: KeyRing
    allowed_origins: frozenset[str]
    tokens: AccessTokens | None = None
    """Set where sign-in is on; its audience is `PUBLIC_URL`."""

    @classmethod
    def build(
        cls,
        *,
        local_mode: bool,
        keys: KeyRing,
        allowed_origins: Iterable[str],
        tokens: AccessTokens | None = None,
    ) -> AccessGate:
        origins = {o.rstrip("/").lower() for o in allowed_origins} | {STUDIO_ORIGIN}
        return cls(local_mode=local_mode, keys=keys, allowed_origins=frozenset(origins), tokens=tokens)

    def origin_allowed(self, origin: str | None) -> bool:
        return origin is None or origin.rstrip("/").lower() in self.allowed_origins

    def check_origin(self, origin: str | None, host: str | None) -> None:
        if not self.origin_allowed(origin):
            raise Rejection(
                "origin_not_allowed",
                "This server does not accept requests from that origin; its operator lists the origins "
                "a browser page may call it from in ALLOWED_ORIGINS.",
            )
        if self.local_mode and host is not None and not is_loopback_host(host):
            raise Rejection(
                "origin_not_allowed",
                "A server in local mode answers only requests addressed to a loopback host name.",
            )

    async def authenticate(
        self, authorization: Sequence[str], *, metadata_path: str = PROTECTED_RESOURCE_PREFIX
    ) -> Caller:
        """The caller of a request from its `Authorization` headers (all of them, to see one sent twice).

        `metadata_path` is the path of the protected-resource metadata a `401` names where sign-in is on."""
        if self.local_mode:
            return LOCAL_CALLER
        metadata = self.tokens.audience + metadata_path if self.tokens is not None else None
        if len(authorization) > 1:
            raise Rejection("bad_request", "The Authorization header was sent more than once.")
        if not authorization:
            raise unauthenticated(
                "This request needs a credential: send Authorization: Bearer <key>.",
                invalid=False,
                resource_metadata=metadata,
            )
        scheme, _, credential = authorization[0].strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            raise unauthenticated(
                "The Authorization header is not Bearer <key>.", invalid=True, resource_metadata=metadata
            )
        if self.tokens is not None and looks_like_a_token(credential):
            try:
                return await self.tokens.caller_of(credential)
            except InvalidToken as error:
                raise unauthenticated(error.detail, invalid=True, resource_metadata=metadata) from None
            except KeysUnavailable as error:
                raise unavailable(
                    "The identity service that signs access tokens cannot be reached to check this one; "
                    "try again shortly.",
                    retry_after=error.retry_after,
                ) from None
        caller = self.keys.authenticate(credential)
        if caller is None:
            raise unauthenticated(
                "The credential is not one this server accepts.", invalid=True, resource_metadata=metadata
            )
        return caller
