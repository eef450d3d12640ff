"""`GET /metrics`: the Prometheus text of everything the meter provider aggregated, and prometheus-client's
process collectors (CPU, memory, open files).

Collected on the Trio thread: the families are few (the attribute sets are bounded) and the observable gauges'
callbacks read state the Trio thread owns, so a scrape costs a short, bounded pause and races nothing."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from auto_runtime.auth.caller import Caller, Permission
from auto_runtime.problems import forbidden

MEDIA_TYPE = CONTENT_TYPE_LATEST
SCRAPE_PERMISSIONS = frozenset({Permission.PLAYBOOK_READ})


def prometheus_text() -> bytes:
    return generate_latest(REGISTRY)


def check_scraper(caller: Caller) -> None:
    """A scrape needs `playbook:read` (of any org: the metrics name none); local mode's caller holds it."""
    if not caller.holds_any(SCRAPE_PERMISSIONS):
        raise forbidden(
            f"GET /metrics needs the permission playbook:read, which this {caller.credential_named} does not have."
        )
