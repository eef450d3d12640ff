"""The `openapi` kind: an HTTP API whose document (read once at start) is its list of tools.

A call (seeds, "How an HTTP API becomes tools"):

- fills the path (each argument percent-encoded; an empty one, one holding a `/`, or `.`/`..` is refused) and
  the query (an array as repeated keys), and sends nothing to an address that would leave the origin or the path
  of the base URL;
- sends the body as JSON, the entry's headers and query parameters, and the credentials of the first alternative
  of the operation's security that the entry gives, in the document's order, and no other;
- reads the response within the HTTP cap: JSON is the structured content and its text, text is text, any other
  media type is noted; a 401 is a key refused (an auth block mints once more first); a 429 asking for a short
  wait is waited out; a 5xx is a failing server; a redirect is an error result with its status, never followed;
  any other response is an error result carrying the API's response.

One pooled HTTP client per entry; every request passes the host policy.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2
import trio

from auto_runtime.models.failures import retry_after_seconds
from auto_runtime.settings import ToolServer
from auto_runtime.settings.errors import SettingsError
from auto_runtime.tools.hosts import HostNotAllowed, HostPolicy
from auto_runtime.tools.kinds import HTTP_RESULT_CAP, RATE_LIMIT_TRIES, Limits, ListedTool
from auto_runtime.tools.mcp_remote import http_client
from auto_runtime.tools.oauth import ClientCredentials, TokenFailed
from auto_runtime.tools.openapi_document import ApiDocument, Operation, convert_in_worker, fetch_document
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.servers import ContentBlock, ToolCallFailed, ToolCallResult, ToolServerFailed

ERROR_TEXT_CHARS = 4096


@dataclass(frozen=True)
class RateLimited:
    """A 429 answer: the wait its `Retry-After` asked for, or None when it named none (never waited out)."""

    wait: float | None


class OpenApiServer:
    """One `openapi` entry's client. `prepare` reads the document; until then it lists nothing."""

    def __init__(
        self,
        name: str,
        entry: ToolServer,
        secrets: SecretSet,
        hosts: HostPolicy,
        limits: Limits,
        directory: Path,
    ) -> None:
        self.name = name
        self.entry = entry
        self.secrets = secrets
        self.hosts = hosts
        self.limits = limits
        self.directory = directory
        self.document: ApiDocument | None = None
        self._reading = trio.Lock()
        self._refused: tuple[str, str] | None = None
        """The SHA-256 of the last document refused, and the refusal: the same bytes are refused again at once."""
        self.http = http_client(hosts, headers=entry.headers, params=entry.query_params)
        self.credentials = (
            ClientCredentials(name, entry.auth, self.http, secrets, resource_url=None, limit_seconds=limits.token)
            if entry.auth is not None
            else None
        )

    async def prepare(self) -> None:
        """Read and check the document, once at a time; raises `SettingsError` naming the entry.

        A refused document is read again at the next need (its server may have mended it), but the same bytes
        are not converted again: a document that took the conversion's whole time bound costs it once."""
        async with self._reading:
            if self.document is not None:
                return
            raw = await fetch_document(self.name, self.entry, self.directory, self.hosts)
            digest = hashlib.sha256(raw).hexdigest()
            if self._refused is not None and self._refused[0] == digest:
                raise SettingsError(self._refused[1])
            try:
                self.document = await convert_in_worker(self.name, self.entry, raw)
            except SettingsError as refusal:
                self._refused = (digest, str(refusal))
                raise

    def attach(self, nursery: trio.Nursery) -> None:
        return None

    async def aclose(self) -> None:
        await self.http.aclose()

    async def list_tools(self) -> list[ListedTool]:
        if self.document is None:
            raise ToolServerFailed("failing", f"The document of the tool server {self.name} has not been read.", 5)
        return [operation.tool for operation in self.document.operations.values()]

    async def call(
        self, tool: str, arguments: Mapping[str, Any], run_id: str, *, delivery_id: str | None = None
    ) -> ToolCallResult:
        document = self.document
        operation = document.operations.get(tool) if document is not None else None
        if document is None or operation is None:
            raise ToolCallFailed("server_failure", f"The tool server {self.name} offers no tool {tool}.")
        url, query = self._address(document, operation, arguments)
        asked: float | None = None
        for attempt in range(RATE_LIMIT_TRIES):
            response_or_limited = await self._send(operation, url, query, arguments)
            if isinstance(response_or_limited, ToolCallResult):
                return response_or_limited
            asked = response_or_limited.wait
            if attempt == RATE_LIMIT_TRIES - 1 or asked is None or asked > self.limits.longest_wait:
                break
            await trio.sleep(asked)
        extra = {"retry_after_ms": int(asked * 1000)} if asked is not None else {}
        raise ToolCallFailed("server_failure", "The API is limiting requests (HTTP 429).", None, extra)

    def _address(
        self, document: ApiDocument, operation: Operation, arguments: Mapping[str, Any]
    ) -> tuple[str, list[tuple[str, str]]]:
        path = operation.path
        query: list[tuple[str, str]] = []
        for parameter in operation.parameters:
            if parameter.name not in arguments:
                if parameter.location == "path":
                    raise ToolCallFailed("arguments_refused", f"The path argument {parameter.name} is missing.")
                continue
            value = arguments[parameter.name]
            if parameter.location == "path":
                text = _text(value)
                if text in ("", ".", "..") or "/" in text:
                    raise ToolCallFailed(
                        "arguments_refused", f"The path argument {parameter.name} is empty, holds a /, or is . or .."
                    )
                path = path.replace("{" + parameter.name + "}", quote(text, safe=""))
            elif isinstance(value, list):
                query.extend((parameter.name, _text(item)) for item in value)
            else:
                query.append((parameter.name, _text(value)))
        url = document.base_url + path
        base, target = urlsplit(document.base_url), urlsplit(url)
        base_path = base.path.rstrip("/") + "/"
        if (target.scheme, target.netloc) != (base.scheme, base.netloc) or not (target.path + "/").startswith(
            base_path
        ):
            raise ToolCallFailed("arguments_refused", "The call would leave the address of the API; nothing was sent.")
        return url, query

    async def _credentials(self, operation: Operation) -> tuple[dict[str, str], list[tuple[str, str]], bool]:
        """The headers and query of the first alternative the entry gives; whether it carries a minted token."""
        if not operation.security:
            return {}, [], False
        assert self.document is not None
        headers: dict[str, str] = {}
        query: list[tuple[str, str]] = []
        minted = False
        given = self.entry.security or {}
        for scheme_name in operation.security[0]:
            scheme = self.document.schemes[scheme_name]
            if scheme.kind in ("oauth2", "openIdConnect"):
                assert self.credentials is not None
                headers["Authorization"] = f"Bearer {await self.credentials.token()}"
                minted = True
            elif scheme.kind == "apiKey" and scheme.parameter is not None:
                if scheme.location == "header":
                    headers[scheme.parameter] = given[scheme_name]
                else:
                    query.append((scheme.parameter, given[scheme_name]))
            elif scheme.kind == "http" and scheme.http_scheme == "bearer":
                headers["Authorization"] = f"Bearer {given[scheme_name]}"
            elif scheme.kind == "http" and scheme.http_scheme == "basic":
                encoded = base64.b64encode(given[scheme_name].encode("utf-8")).decode("ascii")
                headers["Authorization"] = f"Basic {encoded}"
        return headers, query, minted

    async def _send(
        self, operation: Operation, url: str, query: list[tuple[str, str]], arguments: Mapping[str, Any]
    ) -> ToolCallResult | RateLimited:
        """One request (and one more on a 401 when a token was minted), or the 429 that answered it."""
        try:
            with trio.fail_after(self.limits.call):
                headers, secret_query, minted = await self._credentials(operation)
                response, body = await self._request(operation, url, [*query, *secret_query], headers, arguments)
                if response.status_code == 401 and minted and self.credentials is not None:
                    refused = headers["Authorization"].removeprefix("Bearer ")
                    headers["Authorization"] = f"Bearer {await self.credentials.renew(refused)}"
                    response, body = await self._request(operation, url, [*query, *secret_query], headers, arguments)
        except trio.TooSlowError:
            raise ToolCallFailed(
                "timed_out", f"The API of {self.name} did not answer within {self.limits.call:g} seconds."
            ) from None
        except TokenFailed as failed:
            raise ToolCallFailed("server_failure", self.secrets(failed.detail)) from None
        except HostNotAllowed as refused_host:
            raise ToolCallFailed("server_failure", str(refused_host)) from None
        except httpx2.HTTPError as error:
            raise ToolCallFailed("server_failure", f"The API could not be reached ({type(error).__name__}).") from None
        return self._read(response, body)

    async def _request(
        self,
        operation: Operation,
        url: str,
        query: list[tuple[str, str | int | float | bool | None]],
        headers: dict[str, str],
        arguments: Mapping[str, Any],
    ) -> tuple[httpx2.Response, bytes]:
        content: bytes | None = None
        if operation.has_body and "body" in arguments:
            content = json.dumps(arguments["body"], ensure_ascii=False).encode("utf-8")
            headers = {**headers, "content-type": "application/json"}
        request = self.http.build_request(
            operation.method.upper(), url, params=query or None, headers=headers, content=content
        )
        response = await self.http.send(request, stream=True)
        try:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > HTTP_RESULT_CAP:
                    raise ToolCallFailed("too_large", "The response took more than 16 MiB; one call may return 16 MiB.")
        finally:
            await response.aclose()
        return response, bytes(body)

    def _read(self, response: httpx2.Response, body: bytes) -> ToolCallResult | RateLimited:
        status = response.status_code
        request_id = self._request_id(response)
        if status == 429:
            return RateLimited(retry_after_seconds(dict(response.headers.items())))
        if status == 401:
            raise ToolCallFailed("server_failure", f"The API of {self.name} refused the runtime's key (HTTP 401).")
        if status >= 500:
            raise ToolCallFailed("server_failure", f"The API of {self.name} is failing (HTTP {status}).")
        if 300 <= status < 400:
            text = f"The API answered a redirect (HTTP {status}), which is not followed."
            return self._result([ContentBlock("text", text)], None, True, request_id)
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        text = body.decode("utf-8", errors="replace")
        if status >= 400:
            words = self.secrets(text[:ERROR_TEXT_CHARS])
            return self._result([ContentBlock("text", f"HTTP {status}: {words}")], None, True, request_id)
        if media == "application/json" or media.endswith("+json"):
            try:
                structured = self.secrets.scrubber.value(json.loads(body)) if body else None
            except ValueError:
                structured = None
            return self._result([ContentBlock("text", self.secrets(text))], structured, False, request_id)
        if media.startswith("text/") or not body:
            blocks = [ContentBlock("text", self.secrets(text))] if body else []
            return self._result(blocks, None, False, request_id)
        return self._result([ContentBlock("media", None, media or "application/octet-stream")], None, False, request_id)

    def _result(
        self, blocks: list[ContentBlock], structured: Any, is_error: bool, request_id: str | None
    ) -> ToolCallResult:
        content = [
            {"type": "text", "text": block.text}
            if block.text is not None
            else {"type": block.kind, "mimeType": block.mime_type}
            for block in blocks
        ]
        shaped: dict[str, Any] = {"content": content, "isError": is_error}
        if structured is not None:
            shaped["structuredContent"] = structured
        size = len(json.dumps(shaped, ensure_ascii=False).encode("utf-8"))
        if size > HTTP_RESULT_CAP:
            raise ToolCallFailed("too_large", f"The result took {size:,} bytes; one call may return 16 MiB.")
        return ToolCallResult(tuple(blocks), structured, is_error, None, request_id, size)

    def _request_id(self, response: httpx2.Response) -> str | None:
        key = self.entry.request_id
        found = response.headers.get(key) if key is not None else None
        return self.secrets(found) if found is not None else None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
