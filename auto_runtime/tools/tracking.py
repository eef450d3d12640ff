"""Which JSON-RPC id and which HTTP answer belong to one request sent over a shared MCP session.

The MCP client numbers its requests itself and does not pass on the HTTP status of the response that carried
an answer (or the failure). A kept session serves many calls at once, so each call registers a `Pending` under
its method and parameters before it sends; the transport reports each message it writes (`sent`) and each HTTP
response it gets (`answered`), and the pending request with that method and those parameters takes the id and
the status. Two identical requests in flight may swap ids; they are the same request, so nothing depends on it.

Concurrency rules: every method runs on the Trio thread; a `Pending` is removed when its request ends, so the
tracker holds at most the requests in flight.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.models.failures import retry_after_seconds


def signature(method: str, params: Mapping[str, Any] | None) -> str:
    """A request's method with the parameters that tell it apart, as canonical JSON: a call's tool name and
    arguments, a listing's cursor."""
    params = params or {}
    telling = [params.get("name"), params.get("arguments") or {}, params.get("cursor")]
    return json.dumps([method, telling], sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class Pending:
    """One request in flight: what the transport saw of it."""

    key: str
    jsonrpc_id: str | int | None = None
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def retry_after(self) -> float | None:
        return retry_after_seconds(self.headers) if self.status == 429 else None


class RequestTracker:
    def __init__(self) -> None:
        self._pending: list[Pending] = []

    @contextmanager
    def track(self, method: str, params: Mapping[str, Any] | None) -> Iterator[Pending]:
        pending = Pending(signature(method, params))
        self._pending.append(pending)
        try:
            yield pending
        finally:
            self._pending.remove(pending)

    def sent(self, message: Any) -> None:
        """A JSON-RPC message the transport wrote (a parsed dict)."""
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return
        identifier = message.get("id")
        params = message.get("params")
        key = signature(str(message["method"]), params if isinstance(params, dict) else None)
        for pending in self._pending:
            if pending.key == key and pending.jsonrpc_id is None:
                pending.jsonrpc_id = identifier if isinstance(identifier, str | int) else None
                return

    def answered(self, jsonrpc_id: Any, status: int, headers: Mapping[str, str]) -> None:
        """The HTTP response to the request of `jsonrpc_id`."""
        for pending in self._pending:
            if pending.jsonrpc_id is not None and pending.jsonrpc_id == jsonrpc_id:
                pending.status = status
                pending.headers = {name.lower(): value for name, value in headers.items()}
                return

    def sent_body(self, body: bytes) -> Any:
        """Parse a request body, report its message, and return its JSON-RPC id (None for none)."""
        try:
            message = json.loads(body or b"null")
        except ValueError:
            return None
        self.sent(message)
        return message.get("id") if isinstance(message, dict) else None
