"""HTTP and MCP requests: `http.server.request.duration`, by method, status, operation and surface.

The operation is the one the dispatcher matched (`telemetry.name_request`), read from a holder the request's
context carries; a request matched to none is named by its path's kind (`health`, `metrics`, `mcp`, `other`),
so the label's values are bounded by the catalog.
"""

from __future__ import annotations

from auto_runtime.metrics.state import METERING

MCP_SUFFIX = "/mcp"
FIXED_PATHS = {"/health": "health", "/metrics": "metrics"}
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})


def surface_of(path: str) -> str:
    """`mcp` for an MCP endpoint (`/mcp`, `/orgs/{org}/mcp`, `/orgs/{org}/playbooks/{playbook}/mcp`)."""
    return "mcp" if path.endswith(MCP_SUFFIX) else "http"


def request_served(method: str, path: str, status: int, operation: str | None, seconds: float) -> None:
    """Record one request that ended (`status` 0: the app sent no response start)."""
    if not METERING.on:
        return
    surface = surface_of(path)
    named = operation or FIXED_PATHS.get(path) or ("mcp" if surface == "mcp" else "other")
    METERING.instruments.http_duration.record(
        seconds,
        {
            "http.request.method": method if method in KNOWN_METHODS else "_OTHER",
            "http.response.status_code": status,
            "auto_runtime.operation": named,
            "auto_runtime.surface": surface,
        },
    )
