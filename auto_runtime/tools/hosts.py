"""`allowed_hosts`: the hosts a tool server may reach, checked on every request it makes.

A pattern is a host, or `*.` and a host for every host under it (not the host itself). `HostPolicy.everywhere()`
allows every host, as a `connections` section without `allowed_hosts` does and as the operator's own
`tool_servers` entries do. The check runs as an httpx request hook, so it covers each request a client sends:
the calls, the document, the authorization server's metadata and token endpoint, and every redirect a client
would follow (none of ours follows one, and each would be checked again if it did).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2


class HostNotAllowed(Exception):
    """A request to a host the policy does not take; its words name the host, never a credential."""

    def __init__(self, host: str) -> None:
        super().__init__(f"The host {host} is not one the operator allows tool servers to reach.")
        self.host = host


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """`patterns` None allows every host."""

    patterns: tuple[str, ...] | None

    @classmethod
    def everywhere(cls) -> HostPolicy:
        return cls(None)

    @classmethod
    def of(cls, patterns: Iterable[str] | None) -> HostPolicy:
        return cls(None if patterns is None else tuple(pattern.lower() for pattern in patterns))

    def allows(self, host: str) -> bool:
        if self.patterns is None:
            return True
        host = host.strip("[]").lower().rstrip(".")
        for pattern in self.patterns:
            if pattern.startswith("*."):
                if host.endswith(pattern[1:]):
                    return True
            elif host == pattern:
                return True
        return False

    def allows_url(self, url: str) -> bool:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            return False
        return host is not None and self.allows(host)

    def check_url(self, url: str) -> None:
        """Raises `HostNotAllowed` for a URL whose host the policy does not take."""
        if not self.allows_url(url):
            raise HostNotAllowed(urlsplit(url).hostname or url.split("/")[0])

    async def check_request(self, request: httpx2.Request) -> None:
        """An httpx request hook: refuses the request before it is sent."""
        host = request.url.host
        if not self.allows(host):
            raise HostNotAllowed(host)
