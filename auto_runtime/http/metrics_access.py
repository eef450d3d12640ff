"""Who may scrape `GET /metrics`: a caller holding `playbook:read`, of any org (the metrics name none); local
mode's caller holds it. The route's own rule, apart from the metrics room, which knows nothing of callers."""

from __future__ import annotations

from auto_runtime.auth.caller import Caller, Permission
from auto_runtime.problems import forbidden

SCRAPE_PERMISSIONS = frozenset({Permission.PLAYBOOK_READ})


def check_scraper(caller: Caller) -> None:
    """Raises `forbidden` unless `caller` holds `playbook:read`."""
    if not caller.holds_any(SCRAPE_PERMISSIONS):
        raise forbidden(
            f"GET /metrics needs the permission playbook:read, which this {caller.credential_named} does not have."
        )
