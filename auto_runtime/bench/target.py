"""Where the load goes: the URL the operator gave, checked to be loopback unless they confirmed (`--yes`).

The load is sent to that URL's host and port only; nothing else is ever contacted."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = frozenset({"localhost"})


class TargetRefused(ValueError):
    """A URL the command will not send load to."""


@dataclass(frozen=True)
class Target:
    host: str
    port: int

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def target_of(url: str, *, confirmed: bool) -> Target:
    """The host and port of `url` (`http` only: the load generator writes plain HTTP/1.1). A host that is not
    loopback is refused unless `confirmed`."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise TargetRefused(f"--url: expects an http URL such as http://127.0.0.1:5555, not {url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise TargetRefused("--url: give the server's origin only, without a path")
    host = parts.hostname
    if not is_loopback(host) and not confirmed:
        raise TargetRefused(
            f"--url: {host} is not a loopback address; the benchmark sends heavy load, so it only does that to "
            "another machine with --yes"
        )
    return Target(host, parts.port or 80)
