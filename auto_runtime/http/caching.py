"""Caching of the published documents: a strong ETag of the bytes, `max-age=300`, `304` and `HEAD`.

Not werkzeug's `parse_etags` (what Quart's `request.if_none_match` reads): it takes an unquoted `abc` and a
lower-case `w/"abc"` as naming the tag `"abc"`, which RFC 9110's entity-tag (`[ "W/" ] DQUOTE *etagc DQUOTE`,
`W` case-sensitive) and the seed ("names its tag") do not; its `is_resource_modified` wants a WSGI environ.
"""

from __future__ import annotations

import hashlib

from quart import Response

PUBLIC_CACHE = "public, max-age=300"


def entity_tag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:40] + '"'


def _opaque(tag: str) -> str:
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def none_match(if_none_match: str | None, tag: str) -> bool:
    """Whether `If-None-Match` names the tag, a list that includes it, or `*` (weak comparison, RFC 9110)."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    return any(_opaque(candidate) == tag for candidate in if_none_match.split(","))


def cached_document(
    body: bytes, media_type: str, *, method: str, if_none_match: str | None, request_id: str
) -> Response:
    tag = entity_tag(body)
    if none_match(if_none_match, tag):
        response = Response(b"", status=304)
    else:
        response = Response(b"" if method == "HEAD" else body, status=200, content_type=media_type)
        if method == "HEAD":
            response.headers["Content-Length"] = str(len(body))
    response.headers["ETag"] = tag
    response.headers["Cache-Control"] = PUBLIC_CACHE
    response.headers["x-request-id"] = request_id
    return response
