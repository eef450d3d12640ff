"""The API catalog (RFC 9727): a linkset naming the API, its OpenAPI document, its guides and its status.

Every address is absolute, based on `PUBLIC_URL` when it is set and otherwise on the origin the request
arrived at (its own scheme and `Host`; no `X-Forwarded-*` header is read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from auto_runtime.guides import Guide

LINKSET_MEDIA_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
CATALOG_PATH = "/.well-known/api-catalog"


def catalog_link_header(base: str) -> str:
    return f'<{base}{CATALOG_PATH}>; rel="api-catalog"'


def build_api_catalog(base: str, guides: Sequence[Guide]) -> dict[str, Any]:
    api = f"{base}/v1"
    return {
        "linkset": [
            {"anchor": f"{base}{CATALOG_PATH}", "item": [{"href": api}]},
            {
                "anchor": api,
                "service-desc": [
                    {"href": f"{api}/openapi.json", "type": "application/vnd.oai.openapi+json;version=3.1"}
                ],
                "service-doc": [
                    {"href": f"{api}/guides/{guide.name}", "type": "text/markdown", "title": guide.title}
                    for guide in guides
                ],
                "status": [{"href": f"{base}/health", "type": "application/json"}],
            },
        ]
    }
