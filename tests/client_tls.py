"""One TLS context for every HTTP client the tests make.

httpx builds a new `ssl.SSLContext` for each client it is not handed one, and loading certifi's bundle of
authorities into it costs about 25 ms of CPU: with a client per request of a health poll and several per
test, that was seconds of each module. A context is safe to share between clients and threads (it holds
settings and authorities, no connection), so the tests make it once, on first use, and hand it to each
client (`verify=tls_context()`). The servers the tests talk to are plain HTTP on loopback; the context is what
a client would check an `https://` address with, the same authorities httpx would load itself.
"""

from __future__ import annotations

import functools
import ssl

import certifi


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The shared context: certifi's authorities, as httpx's default."""
    return ssl.create_default_context(cafile=certifi.where())
