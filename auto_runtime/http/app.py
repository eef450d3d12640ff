"""The Quart-Trio application: one route per catalog operation, the published documents, and `/health`.

Every request gets an `x-request-id`. The access chain (origin, local-mode host, bearer credential) runs before
any operation; paths the server does not serve answer `401` to a caller without a valid credential and `404`
otherwise, so an unauthenticated caller learns nothing of the routes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from quart import Response, g, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException, MethodNotAllowed

from auto_runtime.auth.access import AccessGate
from auto_runtime.guides import Guide
from auto_runtime.http.api_catalog import LINKSET_MEDIA_TYPE, build_api_catalog, catalog_link_header
from auto_runtime.http.byte_body import body_chunks, check_byte_body
from auto_runtime.http.caching import cached_document
from auto_runtime.http.metrics_access import check_scraper
from auto_runtime.http.request_input import operation_input
from auto_runtime.http.responses import json_bytes, problem_response, success_response
from auto_runtime.metrics.scrape import MEDIA_TYPE, prometheus_text
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import Dispatcher, incident
from auto_runtime.operations.operation import Operation
from auto_runtime.problems import Rejection
from auto_runtime.telemetry import current_request_id, logged_path

MAX_REQUEST_BODY = 64 * 1024 * 1024 + 1
CORS_ALLOWED_HEADERS = "Authorization, Content-Type, If-None-Match, traceparent"


@dataclass(frozen=True)
class PublishedDocuments:
    """The documents built once at start: the OpenAPI document and the guides, as bytes."""

    openapi: bytes
    guides: Mapping[str, Guide]


def _request_id() -> str:
    """The request's id, made here when `open_request` never ran (a request Quart refused before it)."""
    value = g.get("request_id")
    if not isinstance(value, str):
        value = current_request_id()
        g.request_id = value
    return value


def _sent_a_body() -> bool:
    """Whether the request came with a body, which a refusal may have left unread on the connection."""
    length = request.headers.get("Content-Length", "0").strip()
    return length not in ("", "0") or "chunked" in request.headers.get("Transfer-Encoding", "").lower()


def _base_url(public_url: str | None) -> str:
    if public_url:
        return public_url.rstrip("/")
    return f"{request.scheme}://{request.host}"


def _flask_rule(operation: Operation) -> str:
    """The route in Werkzeug's syntax; a parameter with a fixed set of values matches only those, so any
    other value is a path the server does not serve."""
    rule = operation.path
    for name, values in operation.path_enums.items():
        quoted = ", ".join(f"'{value}'" for value in values)
        rule = rule.replace("{" + name + "}", f"<any({quoted}):{name}>")
    return rule.replace("{", "<").replace("}", ">")


def _scope_values(operation: Operation, values: Mapping[str, str]) -> tuple[str | None, str | None, dict[str, str]]:
    fields = dict(values)
    org = fields.pop("org", None)
    playbook = fields.pop("playbook", None) if operation.scope == "playbook" else None
    return org, playbook, fields


def create_app(
    *,
    catalog: Catalog,
    dispatcher: Dispatcher,
    gate: AccessGate,
    documents: PublishedDocuments,
    public_url: str | None,
    metrics_served: bool = False,
) -> QuartTrio:
    app = QuartTrio("auto_runtime")
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BODY
    app.config["BODY_TIMEOUT"] = 60
    guide_list: Sequence[Guide] = list(documents.guides.values())

    @app.before_request
    async def open_request() -> Response | None:
        g.request_id = current_request_id()
        origin = request.headers.get("Origin")
        if request.method == "OPTIONS" and request.headers.get("Access-Control-Request-Method"):
            if origin is None or not gate.origin_allowed(origin):
                return problem_response(
                    Rejection("origin_not_allowed", "This server does not accept requests from that origin."),
                    _request_id(),
                )
            response = Response(b"", status=204)
            response.headers["Access-Control-Allow-Methods"] = "GET, HEAD, POST, PUT, DELETE"
            response.headers["Access-Control-Allow-Headers"] = CORS_ALLOWED_HEADERS
            response.headers["Access-Control-Max-Age"] = "600"
            return response
        try:
            gate.check_origin(origin, request.headers.get("Host"))
        except Rejection as rejection:
            return problem_response(rejection, _request_id())
        return None

    @app.after_request
    async def close_request(response: Response) -> Response:
        response.headers.setdefault("x-request-id", _request_id())
        if response.status_code >= 400 and _sent_a_body():
            response.headers["Connection"] = "close"
        origin = request.headers.get("Origin")
        if origin is not None and gate.origin_allowed(origin):
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = "x-request-id, x-trace-id, Retry-After, ETag, Link"
            response.headers.add("Vary", "Origin")
        return response

    async def unserved_path() -> Response:
        """A caller without a valid credential learns nothing of the routes: `401`; any other gets `404`."""
        try:
            await gate.authenticate(request.headers.getlist("Authorization"))
        except Rejection as rejection:
            return problem_response(rejection, _request_id())
        return problem_response(Rejection("not_found", "This server serves nothing at that path."), _request_id())

    @app.errorhandler(404)
    async def on_not_found(_: HTTPException) -> Response:
        return await unserved_path()

    @app.errorhandler(405)
    async def on_method_not_allowed(error: HTTPException) -> Response:
        allowed = sorted(set(getattr(error, "valid_methods", None) or []))
        response = problem_response(
            Rejection("method_not_allowed", f"This path does not take {request.method}."), _request_id()
        )
        response.status_code = 405
        response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.errorhandler(413)
    async def on_too_large(_: HTTPException) -> Response:
        return problem_response(
            Rejection("content_too_large", "The body is larger than this operation accepts."), _request_id()
        )

    @app.errorhandler(Exception)
    async def on_unexpected(error: Exception) -> Response:
        if isinstance(error, MethodNotAllowed):
            return await on_method_not_allowed(error)
        if isinstance(error, HTTPException):
            code = error.code or 500
            if code == 404:
                return await unserved_path()
            if code == 413:
                return await on_too_large(error)
            reason = "bad_request" if 400 <= code < 500 else "internal"
            return problem_response(Rejection(reason, error.description or "The request failed."), _request_id())
        return problem_response(incident(error, logged_path(request.path), _request_id()), _request_id())

    @app.route("/health", methods=["GET"], provide_automatic_options=False)
    async def health() -> Response:
        response = success_response({"status": "ok"}, 200, _request_id())
        response.headers["Link"] = catalog_link_header(_base_url(public_url))
        return response

    @app.route("/v1/openapi.json", methods=["GET"], provide_automatic_options=False)
    async def openapi_document() -> Response:
        return cached_document(
            documents.openapi,
            "application/vnd.oai.openapi+json;version=3.1",
            method=request.method,
            if_none_match=request.headers.get("If-None-Match"),
            request_id=_request_id(),
        )

    @app.route("/.well-known/api-catalog", methods=["GET"], provide_automatic_options=False)
    async def api_catalog() -> Response:
        base = _base_url(public_url)
        response = cached_document(
            json_bytes(build_api_catalog(base, guide_list)),
            LINKSET_MEDIA_TYPE,
            method=request.method,
            if_none_match=request.headers.get("If-None-Match"),
            request_id=_request_id(),
        )
        response.headers["Link"] = catalog_link_header(base)
        return response

    if metrics_served:

        @app.route("/metrics", methods=["GET"], provide_automatic_options=False)
        async def metrics() -> Response:
            """The Prometheus text (METRICS=on), to a caller holding `playbook:read` (anyone in local mode)."""
            try:
                check_scraper(await gate.authenticate(request.headers.getlist("Authorization")))
            except Rejection as rejection:
                return problem_response(rejection, _request_id())
            response = Response(await prometheus_text(), status=200, content_type=MEDIA_TYPE)
            response.headers["Cache-Control"] = "no-store"
            return response

    for operation in catalog:
        app.add_url_rule(
            _flask_rule(operation),
            endpoint=f"{operation.name}:{operation.scope}",
            view_func=_operation_view(operation, dispatcher, gate, documents),
            methods=[operation.method],
            provide_automatic_options=False,
        )
    return app


def _operation_view(
    operation: Operation, dispatcher: Dispatcher, gate: AccessGate, documents: PublishedDocuments
) -> Any:
    async def view(**path_values: str) -> Response:
        request_id = _request_id()
        try:
            if operation.name == "get_guide":
                return _guide_response(path_values["guide"], documents)
            caller = await gate.authenticate(request.headers.getlist("Authorization"))
            org, playbook, fields = _scope_values(operation, path_values)
            if operation.takes_bytes:
                org = org or caller.own_org()
                await dispatcher.check_access(operation, caller, org, playbook)
                check_byte_body(request, operation)
                result = await dispatcher.dispatch(
                    operation, caller, org, playbook, fields, request_id=request_id, body=body_chunks(request)
                )
                return success_response(result, operation.success_status, request_id)
            raw_input = await operation_input(request, operation, fields)
            result = await dispatcher.dispatch(
                operation, caller, org or caller.own_org(), playbook, raw_input, request_id=request_id
            )
        except Rejection as rejection:
            return problem_response(rejection, request_id)
        return success_response(result, operation.success_status, request_id)

    view.__name__ = f"view_{operation.name}_{operation.scope}"
    return view


def _guide_response(name: str, documents: PublishedDocuments) -> Response:
    guide = documents.guides[name]
    return cached_document(
        guide.text.encode("utf-8"),
        "text/markdown; charset=utf-8",
        method=request.method,
        if_none_match=request.headers.get("If-None-Match"),
        request_id=_request_id(),
    )
