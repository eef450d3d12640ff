"""The access chain shared by HTTP and MCP: origins, the local-mode host rule and bearer authentication.

Local mode (a loopback host with neither `PUBLIC_URL` nor `API_KEYS`) asks for no credential: every caller is
the local developer with every permission. Otherwise a request carries `Authorization: Bearer <key>`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from auto_runtime.auth.api_keys import KeyRing
from auto_runtime.auth.caller import LOCAL_CALLER, Caller
from auto_runtime.problems import Rejection

STUDIO_ORIGIN = "https://studio.on.auto"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def host_name_of(host_header: str) -> str:
    """The name part of a `Host` header, without its port."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_loopback_host(host_header: str) -> bool:
    name = host_name_of(host_header)
    return name in LOOPBACK_HOSTS or name.startswith("127.")


def unauthenticated(detail: str, *, invalid: bool) -> Rejection:
    challenge = 'Bearer error="invalid_token"' if invalid else "Bearer"
    return Rejection("unauthenticated", detail, headers={"WWW-Authenticate": challenge})


@dataclass(frozen=True)
class AccessGate:
    """Decides who a request comes from, before any operation is looked at."""

    local_mode: bool
    keys: KeyRing
    allowed_origins: frozenset[str]

    @classmethod
    def build(cls, *, local_mode: bool, keys: KeyRing, allowed_origins: Iterable[str]) -> AccessGate:
        origins = {o.rstrip("/").lower() for o in allowed_origins} | {STUDIO_ORIGIN}
        return cls(local_mode=local_mode, keys=keys, allowed_origins=frozenset(origins))

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

    def authenticate(self, authorization: Sequence[str]) -> Caller:
        """The caller of a request from its `Authorization` headers (all of them, to see one sent twice)."""
        if self.local_mode:
            return LOCAL_CALLER
        if len(authorization) > 1:
            raise Rejection("bad_request", "The Authorization header was sent more than once.")
        if not authorization:
            raise unauthenticated("This request needs a credential: send Authorization: Bearer <key>.", invalid=False)
        scheme, _, credential = authorization[0].strip().partition(" ")
        if scheme.lower() != "bearer" or not credential.strip():
            raise unauthenticated("The Authorization header is not Bearer <key>.", invalid=True)
        caller = self.keys.authenticate(credential.strip())
        if caller is None:
            raise unauthenticated("The credential is not one this server accepts.", invalid=True)
        return caller
