"""`GET /metrics`'s body: the Prometheus text of everything the meter provider aggregated, and prometheus-client's
process collectors (CPU, memory, open files).

Collected on a worker thread, one scrape at a time (`SCRAPES`): building the text takes tens of milliseconds
on a loaded machine, which would pause every request on the Trio thread. The observable gauges' callbacks
read what the Trio thread owns as plain reads (a length, a sum over a list, a swap of a dict), and take a copy
of a weak set again when the Trio thread changed it meanwhile (`actors`, `model_processes`); the SDK's
aggregation is thread-safe. Its size is bounded: every attribute set is.
"""

from __future__ import annotations

import trio
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

MEDIA_TYPE = CONTENT_TYPE_LATEST


SCRAPES = trio.CapacityLimiter(1)


async def prometheus_text() -> bytes:
    return await trio.to_thread.run_sync(generate_latest, REGISTRY, limiter=SCRAPES)
