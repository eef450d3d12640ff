"""A fake HTTP API described by an OpenAPI 3.1 document, with each security scheme, a real process for the tests.

    python -m tests.fakes.openapi_service --port 0 --signing-key K --audience A

``GET /openapi.json`` serves its document (its first server is ``<origin>/v2``); ``GET /moved.json`` redirects
to it; ``GET /swagger.json`` serves a Swagger 2.0 one. ``GET /_fake/requests`` answers every request it got
under ``/v2`` (method, path, query, headers). The credentials it takes: ``X-Api-Key`` and ``api_key`` must be
``KEY``; the bearer token ``TOKEN``; basic ``ada`` with ``PASSWORD``; an oauth2 token is an HS256 JWT of the
signing key for the audience. ``GET /hostile/<name>`` serves the hostile documents of `hostile_documents`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from typing import Any
from urllib.parse import quote

import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.asgi_serving import serve_on_loopback
from tests.fakes.hostile_documents import HOSTILE

KEY = "api-key-0123456789abcdef"
TOKEN = "bearer-token-0123456789"
PASSWORD = "pass-word-0123456789"
INVOICE = {"$ref": "#/components/schemas/Invoice"}


def document(origin: str) -> dict[str, Any]:
    ok = {"200": {"description": "ok"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "Billing", "version": "1"},
        "servers": [{"url": f"{origin}/v2/"}],
        "components": {
            "securitySchemes": {
                "apiKeyAuth": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "apiKeyQuery": {"type": "apiKey", "in": "query", "name": "api_key"},
                "bearerAuth": {"type": "http", "scheme": "bearer"},
                "basicAuth": {"type": "http", "scheme": "basic"},
                "oauth": {
                    "type": "oauth2",
                    "flows": {"clientCredentials": {"tokenUrl": f"{origin}/token", "scopes": {"reports": "r"}}},
                },
            },
            "schemas": {
                "Invoice": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "lines": {"type": "array", "items": {"$ref": "#/components/schemas/Line"}},
                    },
                },
                "Line": {"type": "object", "properties": {"amount": {"type": "number"}}},
            },
        },
        "paths": {
            "/invoices": {
                "get": {
                    "operationId": "listInvoices",
                    "summary": "Lists the invoices.",
                    "security": [{"apiKeyAuth": []}],
                    "parameters": [
                        {"name": "status", "in": "query", "schema": {"type": "string"}},
                        {"name": "tag", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                    ],
                    "responses": ok,
                },
                "post": {
                    "operationId": "createInvoice",
                    "summary": "Creates an invoice.",
                    "security": [{"bearerAuth": []}],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": INVOICE}}},
                    "responses": ok,
                },
            },
            "/invoices/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "get": {
                    "operationId": "getInvoice",
                    "summary": "Reads one invoice.",
                    "description": "By its id.",
                    "security": [{"apiKeyQuery": []}, {"apiKeyAuth": []}],
                    "responses": ok,
                },
                "delete": {"security": [{"apiKeyAuth": []}], "responses": ok},
            },
            "/me": {"get": {"operationId": "whoAmI", "security": [{"basicAuth": []}], "responses": ok}},
            "/reports": {"get": {"operationId": "listReports", "security": [{"oauth": ["reports"]}], "responses": ok}},
            "/text": {"get": {"operationId": "plainText", "responses": ok}},
            "/picture": {"get": {"operationId": "picture", "responses": ok}},
            "/moved": {"get": {"operationId": "moved", "responses": ok}},
            "/missing": {"get": {"operationId": "missing", "responses": ok}},
            "/failing": {"get": {"operationId": "failing", "responses": ok}},
            "/busy": {"get": {"operationId": "busy", "responses": ok}},
            "/swamped": {"get": {"operationId": "swamped", "responses": ok}},
            "/slow": {"get": {"operationId": "slow", "responses": ok}},
            "/echo-key": {"get": {"operationId": "echoKey", "security": [{"apiKeyAuth": []}], "responses": ok}},
            "/needs-header": {
                "get": {
                    "operationId": "needsHeader",
                    "parameters": [{"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
                    "responses": ok,
                }
            },
            "/upload": {
                "post": {
                    "operationId": "upload",
                    "requestBody": {"content": {"text/csv": {"schema": {"type": "string"}}}},
                    "responses": ok,
                }
            },
            "/filter": {
                "get": {
                    "operationId": "filter",
                    "parameters": [{"name": "where", "in": "query", "schema": {"type": "object"}}],
                    "responses": ok,
                }
            },
            "/trace": {"trace": {"operationId": "tracing", "responses": ok}},
        },
    }


def build(signing_key: str, audience: str) -> Starlette:
    seen: list[dict[str, Any]] = []
    busy = {"calls": 0}

    def origin(request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}"

    def denied() -> Response:
        return JSONResponse({"error": "unauthorized"}, status_code=401)

    async def api(request: Request) -> Response:
        body = (await request.body()).decode("utf-8", errors="replace")
        seen.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query,
                "headers": dict(request.headers),
                "body": body,
            }
        )
        path = request.url.path.removeprefix("/v2")
        headers = request.headers
        key_ok = headers.get("x-api-key") == KEY
        if path == "/invoices" and request.method == "GET":
            if not key_ok:
                return denied()
            return JSONResponse({"invoices": [{"id": "inv-1"}], "query": request.url.query})
        if path == "/invoices" and request.method == "POST":
            if headers.get("authorization") != f"Bearer {TOKEN}":
                return denied()
            return JSONResponse({"created": json.loads(body)})
        if path.startswith("/invoices/"):
            if not (key_ok or request.query_params.get("api_key") == KEY):
                return denied()
            if request.method == "DELETE":
                return Response(status_code=204)
            return JSONResponse({"id": path.removeprefix("/invoices/")})
        if path == "/me":
            expected = "Basic " + base64.b64encode(f"ada:{PASSWORD}".encode()).decode()
            return JSONResponse({"user": "ada"}) if headers.get("authorization") == expected else denied()
        if path == "/reports":
            token = headers.get("authorization", "").removeprefix("Bearer ")
            try:
                claims = jwt.decode(token, signing_key, algorithms=["HS256"], audience=audience)
            except jwt.PyJWTError:
                return denied()
            return JSONResponse({"reports": [], "for": claims["sub"], "token": token})
        if path == "/text":
            return PlainTextResponse("plain words")
        if path == "/picture":
            return Response(b"\x89PNG\r\n", media_type="image/png")
        if path == "/moved":
            return RedirectResponse("https://elsewhere.example/", status_code=302)
        if path == "/missing":
            return JSONResponse({"error": "no such thing"}, status_code=404)
        if path == "/failing":
            return PlainTextResponse("broken", status_code=500)
        if path == "/busy":
            busy["calls"] += 1
            if busy["calls"] % 2 == 1:
                return PlainTextResponse("slow down", status_code=429, headers={"retry-after": "0"})
            return JSONResponse({"busy": False})
        if path == "/swamped":
            return PlainTextResponse("slow down", status_code=429, headers={"retry-after": "60"})
        if path == "/slow":
            await asyncio.Event().wait()
        if path == "/echo-key":
            received = headers.get("x-api-key", "")
            forms = {
                "json": json.dumps({"k": received}),
                "percent": quote(received, safe=""),
                "base64": base64.b64encode(received.encode()).decode(),
            }
            return JSONResponse({"received": received, "forms": forms}, headers={"x-request-id": "req-42"})
        return JSONResponse({"error": "no route"}, status_code=404)

    async def served_document(request: Request) -> Response:
        return JSONResponse(document(origin(request)))

    async def moved_document(request: Request) -> Response:
        return RedirectResponse(f"{origin(request)}/openapi.json", status_code=302)

    async def swagger(request: Request) -> Response:
        return JSONResponse({"swagger": "2.0", "info": {"title": "old", "version": "1"}, "paths": {}})

    async def requests(request: Request) -> Response:
        return JSONResponse(seen)

    async def hostile(request: Request) -> Response:
        found = HOSTILE.get(request.path_params["name"])
        if found is None:
            return PlainTextResponse("no such document", status_code=404)
        media = "application/yaml" if request.path_params["name"].endswith(".yaml") else "application/json"
        return Response(found, media_type=media)

    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]
    return Starlette(
        routes=[
            Route("/openapi.json", served_document),
            Route("/moved.json", moved_document),
            Route("/swagger.json", swagger),
            Route("/_fake/requests", requests),
            Route("/hostile/{name}", hostile),
            Route("/v2/{rest:path}", api, methods=methods),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake OpenAPI service for tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--signing-key", required=True)
    parser.add_argument("--audience", required=True)
    arguments = parser.parse_args(argv)
    serve_on_loopback(build(arguments.signing_key, arguments.audience), arguments.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
