"""The one HTTP client model calls use, made from the settings' proxy and certificate authority.

The settings keep Node's switches (configuration reference, "Proxy and CA"): ``HTTPS_PROXY`` is used
only with ``NODE_USE_ENV_PROXY`` on, hosts in ``NO_PROXY`` go direct, and ``NODE_EXTRA_CA_CERTS`` adds a
PEM file of certificate authorities to the usual ones. The client never reads the environment itself.
"""

from __future__ import annotations

import functools
import ssl
from pathlib import Path

import certifi
import httpx

from auto_runtime.settings import Settings

CONNECT_SECONDS = 10.0


@functools.cache
def ssl_context(extra_ca_certs: Path | None) -> ssl.SSLContext:
    """The system's usual authorities (certifi's), plus the operator's file when one is named.

    Made once a process for each file (loading the authorities costs about 25 ms of CPU, and a start makes
    several clients) and shared by the clients that take it: a context holds settings and authorities, no
    connection, and nothing changes it after it is made but httpcore setting the same ALPN list (HTTP/1.1)
    at each connection."""
    context = ssl.create_default_context(cafile=certifi.where())
    if extra_ca_certs is not None:
        context.load_verify_locations(cafile=str(extra_ca_certs))
    return context


def no_proxy_patterns(no_proxy: str | None) -> tuple[str, ...]:
    """httpx mount patterns for the hosts of ``NO_PROXY``: ``*`` for every host, ``.example.com`` for its subdomains."""
    patterns: list[str] = []
    for raw in (no_proxy or "").split(","):
        host = raw.strip()
        if not host:
            continue
        if host == "*":
            return ("all://",)
        if host.startswith("."):
            patterns += [f"all://*{host}", f"all://{host[1:]}"]
        elif "://" in host:
            patterns.append(host)
        else:
            patterns += [f"all://{host}", f"all://*.{host}"]
    return tuple(patterns)


def model_http_client(settings: Settings) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` for model providers; it works under Trio (httpx runs on anyio)."""
    verify = ssl_context(settings.node_extra_ca_certs)
    timeout = httpx.Timeout(None, connect=CONNECT_SECONDS)
    proxy = settings.https_proxy if settings.node_use_env_proxy else None
    if proxy is None:
        return httpx.AsyncClient(verify=verify, timeout=timeout, trust_env=False)
    direct = no_proxy_patterns(settings.no_proxy)
    if direct == ("all://",):
        return httpx.AsyncClient(verify=verify, timeout=timeout, trust_env=False)
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {
        "all://": httpx.AsyncHTTPTransport(verify=verify, proxy=httpx.Proxy(proxy))
    }
    for pattern in direct:
        mounts[pattern] = httpx.AsyncHTTPTransport(verify=verify)
    return httpx.AsyncClient(verify=verify, timeout=timeout, trust_env=False, mounts=mounts)
