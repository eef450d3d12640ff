"""`allowed_hosts`: the hosts a tool server may reach, checked on every request it makes.

A pattern is a host, or `*.` and a host for every host under it (not the host itself). `HostPolicy.everywhere()`
allows every host, as a `connections` section without `allowed_hosts` does and as the operator's own
`tool_servers` entries do. The check runs as an httpx request hook, so it covers each request a client sends:
the calls, the document, the authorization server's metadata and token endpoint, and every redirect a client
would follow (none of ours follows one, and each would be checked again if it did).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import httpx2


def host_refusal(host: str) -> str:
    """The sentence of `connections.allowed_hosts`, naming the host."""
    return f"The host {host} is not one the operator allows connections to reach (connections.allowed_hosts)."


class HostNotAllowed(Exception):
    """A request to a host the policy does not take; its words name the host, never a credential."""

    def __init__(self, host: str) -> None:
        super().__init__(host_refusal(host))
        self.host = host


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """`patterns` None allows every host. `on_refused`, when set, is told each host a check refuses, before the
    refusal is raised: how a tool server set learns it even when a client library wraps the error."""

    patterns: tuple[str, ...] | None
    on_refused: Callable[[str], None] | None = field(default=None, compare=False)

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

    def telling(self, on_refused: Callable[[str], None]) -> HostPolicy:
        """The same policy, telling `on_refused` of each host it refuses."""
        return replace(self, on_refused=on_refused)

    def check_url(self, url: str) -> None:
        """Raises `HostNotAllowed` for a URL whose host the policy does not take."""
        if not self.allows_url(url):
            self._refuse(urlsplit(url).hostname or url.split("/")[0])

    async def check_request(self, request: httpx2.Request) -> None:
        """An httpx request hook: refuses the request before it is sent."""
        host = request.url.host
        if not self.allows(host):
            self._refuse(host)

    def _refuse(self, host: str) -> None:
        if self.on_refused is not None:
            self.on_refused(host)
        raise HostNotAllowed(host)
