"""Hosts and URLs: loopback addresses, https-or-loopback URLs, origins and host patterns."""

import ipaddress
import re
from urllib.parse import SplitResult, urlsplit

_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def is_loopback_host(host: str) -> bool:
    """``localhost``, an address in 127.0.0.0/8 or ``::1`` (with or without brackets)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_host_name(text: str) -> bool:
    """A DNS name of letters, digits and hyphens, or an IP address."""
    try:
        ipaddress.ip_address(text.strip("[]"))
        return True
    except ValueError:
        pass
    labels = text.removesuffix(".").split(".")
    return len(text) <= 253 and all(_HOST_LABEL.match(label) for label in labels)


def split_url(text: str) -> SplitResult | None:
    """``text`` split into its parts when it is an absolute http or https URL with a host, else None."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - reading it checks the port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts


def is_https_or_loopback(text: str) -> bool:
    """An https URL, or an http URL on a loopback address."""
    parts = split_url(text)
    if parts is None or parts.hostname is None:
        return False
    return parts.scheme == "https" or is_loopback_host(parts.hostname)


def has_query_or_fragment(text: str) -> bool:
    parts = urlsplit(text)
    return bool(parts.query or parts.fragment or text.endswith(("?", "#")))


def is_origin(text: str) -> bool:
    """``scheme://host[:port]``: an http or https URL with no user, path, query or fragment."""
    parts = split_url(text)
    return (
        parts is not None
        and not parts.username
        and parts.path == ""
        and not has_query_or_fragment(text)
        and parts.hostname is not None
        and is_host_name(parts.hostname)
    )
