"""The ASGI callable in front of the Quart-Trio app (spec mcp.md §1, §2, §10), behind `http.framing`.

- `lifespan`: the MCP session manager runs for as long as the Quart app's lifespan, entered in the same task.
- An MCP endpoint path: the access chain (request id, CORS preflight, origin and local-mode host, `405` for any
  method but `POST`, bearer authentication, the org and playbook scope check), then the transport checks
  (`406`, `415`, `413`, unparsable body, not one request object, a member given twice outside a tool call's
  arguments), then the SDK's stateless session manager with the connection attached to the scope. Refusals
  of the chain are problem documents; transport refusals are JSON-RPC errors with `id: null`.
- Where sign-in is on, the protected-resource metadata of each endpoint, without a credential.
- Everything else: the Quart app, unchanged.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Literal

import mcp_types as types
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import Message, Receive, Scope, Send

from auto_runtime.asgi_messages import (
    AsgiApp,
    adding_headers,
    header_value,
    header_values,
    json_bytes,
    send_jsonrpc_error,
    send_problem,
    send_whole,
)
from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.caller import Caller
from auto_runtime.http.json_body import DuplicateField, duplicate_field_rejection, read_json_bytes
from auto_runtime.mcp_server.connection import SCOPE_KEY, Connection
from auto_runtime.mcp_server.endpoints import Endpoint, metadata_path_of, parse_endpoint, parse_metadata_path
from auto_runtime.mcp_server.service import MAX_BODY_BYTES, SERVER_TITLE, McpService
from auto_runtime.problems import Rejection, cut_text
from auto_runtime.telemetry import current_request_id

CORS_ALLOWED_HEADERS = "Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, traceparent"
CORS_EXPOSED_HEADERS = "x-request-id, x-trace-id, WWW-Authenticate, Retry-After"
INSUFFICIENT_SCOPE = 'Bearer error="insufficient_scope"'
ARGUMENTS_POINTER = "/params/arguments"
PER_REQUEST_SDK_LOGGER = "mcp.server.streamable_http"
"""Logs a line at info for every stateless request it ends; the runtime keeps only its warnings."""


def _accepts_both(scope: Scope) -> bool:
    accepted = [
        part.split(";")[0].strip().lower() for value in header_values(scope, "accept") for part in value.split(",")
    ]
    wildcard = "*/*" in accepted
    json_ok = wildcard or "application/json" in accepted or "application/*" in accepted
    sse_ok = wildcard or "text/event-stream" in accepted or "text/*" in accepted
    return json_ok and sse_ok


def _is_json_content(scope: Scope) -> bool:
    media_type = (header_value(scope, "content-type") or "").split(";")[0].strip().lower()
    return media_type == "application/json"


def _is_modern(scope: Scope) -> bool:
    version = header_value(scope, "mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


class McpRoot:
    """The root ASGI callable: the MCP endpoints, their metadata, and the Quart app for everything else."""

    def __init__(
        self,
        *,
        app: AsgiApp,
        service: McpService,
        gate: AccessGate,
        public_url: str | None,
        identity_issuer: str | None,
    ) -> None:
        self.app = app
        self.service = service
        self.gate = gate
        self.public_url = public_url.rstrip("/") if public_url else None
        self.identity_issuer = identity_issuer
        self.manager: StreamableHTTPSessionManager = service.session_manager()
        logging.getLogger(PER_REQUEST_SDK_LOGGER).setLevel(logging.WARNING)

    @property
    def sign_in(self) -> bool:
        return self.public_url is not None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            async with self.manager.run():
                await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            path: str = scope.get("path", "")
            endpoint = parse_endpoint(path)
            described = parse_metadata_path(path) if self.sign_in else None
            if endpoint is not None or described is not None:
                # The body is read first (up to 1 MiB) so that a refusal leaves the connection ready for the next
                # request; a body past the bound is left unread, and the connection closes after the answer.
                body = await _read_body(scope, receive)
                if body is None:
                    send = adding_headers(send, [("connection", "close")])
                if endpoint is not None:
                    await self._serve_endpoint(endpoint, scope, body, receive, send)
                elif described is not None:
                    await self._serve_metadata(described, scope, send)
                return
        await self.app(scope, receive, send)

    # The access chain -----------------------------------------------------------------------------------------

    def _cors_headers(self, scope: Scope) -> list[tuple[str, str]]:
        origin = header_value(scope, "origin")
        if origin is None or not self.gate.origin_allowed(origin):
            return []
        return [
            ("access-control-allow-origin", origin),
            ("access-control-expose-headers", CORS_EXPOSED_HEADERS),
            ("vary", "Origin"),
        ]

    async def _open(self, scope: Scope, send: Send, allowed: str) -> tuple[str, Send] | None:
        """Request id, CORS preflight, origin and host; None when the request was answered here."""
        request_id = current_request_id()
        send = adding_headers(send, [("x-request-id", request_id), *self._cors_headers(scope)])
        origin = header_value(scope, "origin")
        method = scope.get("method", "GET")
        if method == "OPTIONS" and header_value(scope, "access-control-request-method") is not None:
            if origin is None or not self.gate.origin_allowed(origin):
                await send_problem(
                    send, Rejection("origin_not_allowed", "This server does not accept requests from that origin.")
                )
                return None
            await send_whole(
                send,
                204,
                b"",
                [
                    ("access-control-allow-methods", allowed),
                    ("access-control-allow-headers", CORS_ALLOWED_HEADERS),
                    ("access-control-max-age", "600"),
                ],
            )
            return None
        try:
            self.gate.check_origin(origin, header_value(scope, "host"))
        except Rejection as rejection:
            await send_problem(send, rejection)
            return None
        if method != allowed:
            await send_problem(
                send,
                Rejection("method_not_allowed", f"This path takes only {allowed}, not {method}."),
                [("allow", allowed)],
            )
            return None
        return request_id, send

    def _check_scope(self, endpoint: Endpoint, caller: Caller) -> None:
        if endpoint.org is not None and not caller.may_act_in_org(endpoint.org):
            raise Rejection(
                "forbidden",
                f"This credential belongs to another org than {endpoint.org}.",
                headers={"WWW-Authenticate": INSUFFICIENT_SCOPE},
            )
        if endpoint.playbook is not None and not caller.may_access_playbook(endpoint.playbook):
            raise Rejection(
                "forbidden",
                f"This credential may not access the playbook {endpoint.playbook}.",
                headers={"WWW-Authenticate": INSUFFICIENT_SCOPE},
            )

    async def _serve_endpoint(
        self, endpoint: Endpoint, scope: Scope, body: bytes | None, receive: Receive, send: Send
    ) -> None:
        opened = await self._open(scope, send, "POST")
        if opened is None:
            return
        request_id, send = opened
        try:
            caller = await self.gate.authenticate(
                header_values(scope, "authorization"), metadata_path=metadata_path_of(endpoint)
            )
            self._check_scope(endpoint, caller)
        except Rejection as rejection:
            await send_problem(send, rejection)
            return
        admitted = await self._transport_accepts(scope, body, send)
        if admitted is None:
            return
        assert body is not None
        connection = Connection(
            endpoint=endpoint,
            caller=caller,
            request_id=request_id,
            arguments_refusal=admitted.arguments_refusal,
        )
        await self.manager.handle_request({**scope, SCOPE_KEY: connection}, _replay(body, receive), send)

    # Transport checks -----------------------------------------------------------------------------------------

    async def _transport_accepts(self, scope: Scope, body: bytes | None, send: Send) -> Admitted | None:
        """The body admitted as one JSON-RPC object the SDK may serve; None once a transport refusal was sent."""
        if not _accepts_both(scope):
            await send_jsonrpc_error(
                send, 406, types.INVALID_REQUEST, "Not Acceptable: accept both application/json and text/event-stream"
            )
            return None
        if not _is_json_content(scope):
            status = 400 if _is_modern(scope) else 415
            await send_jsonrpc_error(
                send, status, types.INVALID_REQUEST, "Unsupported Media Type: send the body as application/json"
            )
            return None
        if body is None:
            await send_jsonrpc_error(
                send, 413, types.INVALID_REQUEST, f"The body is larger than {MAX_BODY_BYTES} bytes"
            )
            return None
        try:
            message = await read_json_bytes(body)
        except DuplicateField as duplicate:
            return await _given_twice(body, duplicate, send)
        except (ValueError, RecursionError):
            await send_jsonrpc_error(send, 400, types.PARSE_ERROR, "Parse error")
            return None
        if not isinstance(message, dict):
            await send_jsonrpc_error(send, 400, types.INVALID_REQUEST, "Invalid Request: send one JSON-RPC object")
            return None
        return Admitted()

    # Protected-resource metadata ----------------------------------------------------------------------------

    async def _serve_metadata(self, described: Endpoint | Literal["root"], scope: Scope, send: Send) -> None:
        opened = await self._open(scope, send, "GET")
        if opened is None:
            return
        _, send = opened
        assert self.public_url is not None
        resource = self.public_url if described == "root" else self.public_url + described.path
        document = {
            "resource": resource,
            "authorization_servers": [self.identity_issuer] if self.identity_issuer else [],
            "bearer_methods_supported": ["header"],
            "resource_name": SERVER_TITLE,
        }
        await send_whole(
            send, 200, json_bytes(document), [("content-type", "application/json"), ("cache-control", "no-store")]
        )


@dataclass(frozen=True)
class Admitted:
    """A body the SDK may serve. `arguments_refusal`: the `bad_request` of a tool call whose arguments give a
    member twice, which the SDK's reader would take silently (its last value); the call answers it."""

    arguments_refusal: Rejection | None = None


async def _given_twice(body: bytes, duplicate: DuplicateField, send: Send) -> Admitted | None:
    """A member given twice in a `tools/call`'s arguments is the call's `bad_request`, at its pointer in the
    arguments (the operation's input, as over HTTP); anywhere else in the message, the body is refused."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        message = None
    if (
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and duplicate.pointer.startswith(ARGUMENTS_POINTER + "/")
    ):
        inside = DuplicateField(duplicate.key, duplicate.pointer.removeprefix(ARGUMENTS_POINTER))
        return Admitted(arguments_refusal=duplicate_field_rejection(inside))
    await send_jsonrpc_error(send, 400, types.PARSE_ERROR, cut_text(f"Parse error: {duplicate}"))
    return None


async def _read_body(scope: Scope, receive: Receive) -> bytes | None:
    """The whole body, or None when it is (or declares itself) larger than 1 MiB."""
    declared = header_value(scope, "content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then whatever the client sends next (its disconnect)."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
