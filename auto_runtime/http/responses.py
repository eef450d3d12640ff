"""JSON successes and RFC 9457 problem responses."""

from __future__ import annotations

import json
from typing import Any

from quart import Response

from auto_runtime.operations.operation import RawResult
from auto_runtime.problems import Rejection

NO_STORE = "no-store"


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON; text holding a lone surrogate is written with ASCII escapes, still valid JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def success_response(value: Any, status: int, request_id: str) -> Response:
    if isinstance(value, RawResult):
        response = Response(value.body, status=status, content_type=value.media_type)
        response.headers["Cache-Control"] = NO_STORE
        response.headers["x-request-id"] = request_id
        return response
    response = Response(json_bytes(value), status=status, content_type="application/json")
    response.headers["Cache-Control"] = NO_STORE
    response.headers["x-request-id"] = request_id
    return response


def problem_response(rejection: Rejection, request_id: str) -> Response:
    response = Response(
        json_bytes(rejection.problem()), status=rejection.status, content_type="application/problem+json"
    )
    response.headers["Cache-Control"] = NO_STORE
    response.headers["x-request-id"] = request_id
    for name, value in rejection.headers.items():
        response.headers[name] = value
    retry_after = rejection.effective_retry_after()
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response
