"""A fake OpenAI-compatible model gateway: a real HTTP server on a loopback port (reasoning-format §5.6).

Run it by hand or from tests::

    python -m tests.fakes.model_gateway --port 0 --script replies.json

It prints ``listening on http://127.0.0.1:<port>`` once it accepts connections (``https`` with
``--certfile`` and ``--keyfile``), then serves:

* ``POST /v1/chat/completions`` (streamed when the request says ``stream: true``), ``POST /v1/responses``
  and ``POST /v1/messages`` (Anthropic): each request is recorded (headers and JSON body, in order) and
  answered with the next scripted reply of its script;
* any other request (such as Bedrock's ``POST /model/<id>/converse``, Azure's ``/openai/v1/responses``,
  or a credentials endpoint): recorded the same way (a body that is not JSON as text) and answered
  with ``body``, ``raw`` and error replies only;
* ``GET /v1/models``: the next models reply of its script (the last one stays), by default an empty list.

A request's script is named by its ``x-fake-script`` header or ``fake_script`` query parameter, else
by its body's ``model``, else by the
model id in its path (``/model/<id>/...``, ``/models/<id>:...``); a name with no script uses the script
``default``. So parallel tests each use their own model names and never
interfere. Control routes, for tests:

* ``POST /_fake/scripts`` with ``{"<name>": [reply, ...]}`` appends replies to scripts;
* ``POST /_fake/models?script=<name>`` with ``[reply, ...]`` replaces that script's models replies
  (a models request names its script by the ``x-fake-script`` header, which a gateway entry's
  ``headers`` can send);
* ``GET /_fake/requests?script=<name>`` lists what the scripts received.

A reply is a JSON object; any may add ``"delay_seconds"`` (waited before answering):

* ``{"content": "...", "tool_calls": [{"id", "name", "arguments"}], "finish_reason": "stop",
  "usage": {...}, "model": "...", "id": "..."}``: an answer in the route's own protocol;
* ``{"status": 429, "error": {"message", "type", "code"}, "headers": {"retry-after": "1"}}``: an error;
* ``{"status": 200, "raw": "not json"}``: a body sent as written;
* ``{"body": {...}}``: a JSON body sent as written (status 200 unless ``status`` says otherwise).

A models reply is ``{"data": [{"id": ...}, ...]}`` or an error reply as above. With no reply left, a
request gets a 500 saying so.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.fakes.lifeline import end_with_parent

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
JsonObject = dict[str, Any]

DEFAULT_SCRIPT = "default"


@dataclass
class GatewayState:
    scripts: dict[str, deque[JsonObject]] = field(default_factory=lambda: defaultdict(deque))
    models: dict[str, list[JsonObject]] = field(default_factory=dict)
    received: list[JsonObject] = field(default_factory=list)

    def load(self, document: JsonObject) -> None:
        for name, replies in document.get("scripts", {}).items():
            self.scripts[name].extend(replies)
        if "models" in document:
            self.models[DEFAULT_SCRIPT] = list(document["models"])

    def next_reply(self, script: str) -> JsonObject | None:
        queue = self.scripts.get(script)
        return queue.popleft() if queue else None

    def next_models(self, script: str) -> JsonObject:
        replies = self.models.get(script) or self.models.get(DEFAULT_SCRIPT) or [{"data": []}]
        return replies.pop(0) if len(replies) > 1 else replies[0]


# --- answers in each protocol -----------------------------------------------------------------------


def _usage(reply: JsonObject) -> JsonObject:
    usage: JsonObject = reply.get("usage", {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    return usage


def chat_completion(reply: JsonObject, model: str) -> JsonObject:
    message: JsonObject = {"role": "assistant", "content": reply.get("content")}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call.get("arguments", "{}")},
            }
            for call in calls
        ]
    return {
        "id": reply.get("id", "chatcmpl-fake"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.get("model", model),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.get("finish_reason", "tool_calls" if calls else "stop"),
            }
        ],
        "usage": _usage(reply),
    }


def chat_chunks(reply: JsonObject, model: str) -> list[JsonObject]:
    whole = chat_completion(reply, model)
    message = whole["choices"][0]["message"]
    base = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": whole["model"]}
    chunks: list[JsonObject] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    if message.get("content"):
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": message["content"]}}]})
    for index, call in enumerate(message.get("tool_calls", [])):
        chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, **call}]}}]})
    chunks.append(
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": whole["choices"][0]["finish_reason"]}]}
    )
    chunks.append({**base, "choices": [], "usage": whole["usage"]})
    return chunks


def responses_answer(reply: JsonObject, model: str) -> JsonObject:
    output: list[JsonObject] = []
    if reply.get("content") is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_fake",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply["content"], "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{call['id']}",
            "call_id": call["id"],
            "name": call["name"],
            "arguments": call.get("arguments", "{}"),
            "status": "completed",
        }
        for call in reply.get("tool_calls") or []
    )
    finish = reply.get("finish_reason", "stop")
    answer: JsonObject = {
        "id": reply.get("id", "resp_fake"),
        "object": "response",
        "created_at": int(time.time()),
        "model": reply.get("model", model),
        "status": "incomplete" if finish == "length" else "completed",
        "output": output,
        "usage": reply.get("usage", {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}),
    }
    if finish == "length":
        answer["incomplete_details"] = {"reason": "max_output_tokens"}
    return answer


def messages_answer(reply: JsonObject, model: str) -> JsonObject:
    content: list[JsonObject] = []
    if reply.get("content") is not None:
        content.append({"type": "text", "text": reply["content"]})
    content.extend(
        {"type": "tool_use", "id": call["id"], "name": call["name"], "input": json.loads(call.get("arguments") or "{}")}
        for call in reply.get("tool_calls") or []
    )
    calls = bool(reply.get("tool_calls"))
    return {
        "id": reply.get("id", "msg_fake"),
        "type": "message",
        "role": "assistant",
        "model": reply.get("model", model),
        "content": content,
        "stop_reason": reply.get("finish_reason", "tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": reply.get("usage", {"input_tokens": 10, "output_tokens": 5}),
    }


ANSWERS: dict[str, Callable[[JsonObject, str], JsonObject]] = {
    "/v1/chat/completions": chat_completion,
    "/v1/responses": responses_answer,
    "/v1/messages": messages_answer,
}


# --- the ASGI application ---------------------------------------------------------------------------


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(send: Send, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    raw_headers = [(b"content-type", b"application/json")]
    raw_headers += [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


async def _respond_json(send: Send, status: int, document: Any, headers: dict[str, str] | None = None) -> None:
    await _respond(send, status, json.dumps(document).encode(), headers)


def _error_document(reply: JsonObject) -> JsonObject:
    error = {"message": "scripted error", "type": "fake_error", "code": None, **reply.get("error", {})}
    return {"error": error}


def _model_in_path(path: str) -> str:
    """The model id of a raw path such as Bedrock's ``/model/<id>/converse``, percent-decoded."""
    for marker in ("/model/", "/models/"):
        if marker in path:
            rest = path.split(marker, 1)[1]
            return unquote(rest.split("/", 1)[0].split(":", 1)[0])
    return ""


class FakeGateway:
    def __init__(self, state: GatewayState) -> None:
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = await _read_body(receive)
        method, path = scope["method"], scope["path"]
        if path.startswith(("http://", "https://")):  # absolute form: the fake is playing a forward proxy
            path = urlsplit(path).path
        query = {k: v[0] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        if path.startswith("/_fake/"):
            await self._control(method, path, query, body, send)
        elif method == "GET" and path == "/v1/models":
            script = headers.get("x-fake-script") or DEFAULT_SCRIPT
            self.state.received.append(
                {"script": script, "method": method, "path": path, "query": query, "headers": headers, "body": None}
            )
            await self._reply_models(send, script)
        else:
            raw_path = (scope.get("raw_path") or path.encode()).decode()
            await self._answer(method, path, urlsplit(raw_path).path or raw_path, query, headers, body, send)

    async def _control(self, method: str, path: str, query: dict[str, str], body: bytes, send: Send) -> None:
        if method == "POST" and path == "/_fake/scripts":
            self.state.load({"scripts": json.loads(body)})
            await _respond_json(send, 200, {"ok": True})
        elif method == "POST" and path == "/_fake/models":
            self.state.models[query.get("script", DEFAULT_SCRIPT)] = list(json.loads(body)) or [{"data": []}]
            await _respond_json(send, 200, {"ok": True})
        elif method == "GET" and path == "/_fake/requests":
            wanted = query.get("script")
            received = [r for r in self.state.received if wanted is None or r["script"] == wanted]
            await _respond_json(send, 200, received)
        else:
            await _respond_json(send, 404, {"error": {"message": "no such control route"}})

    async def _answer(
        self,
        method: str,
        path: str,
        raw_path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: bytes,
        send: Send,
    ) -> None:
        try:
            document: Any = json.loads(body)
        except ValueError:
            document = body.decode(errors="replace")
        model = document.get("model", "") if isinstance(document, dict) else ""
        model = model or _model_in_path(raw_path)
        named = headers.get("x-fake-script") or query.get("fake_script")
        script = named or (model if model in self.state.scripts else DEFAULT_SCRIPT)
        self.state.received.append(
            {"script": script, "method": method, "path": path, "query": query, "headers": headers, "body": document}
        )
        reply = self.state.next_reply(script)
        if reply is None:
            message = f"the fake gateway has no scripted reply left for {script!r}"
            await _respond_json(send, 500, {"error": {"message": message, "type": "script_exhausted"}})
            return
        if reply.get("delay_seconds"):
            await trio.sleep(float(reply["delay_seconds"]))
        status = int(reply.get("status", 200))
        extra_headers = {str(k): str(v) for k, v in reply.get("headers", {}).items()}
        if "raw" in reply:
            await _respond(send, status, str(reply["raw"]).encode(), extra_headers)
        elif "body" in reply:
            await _respond_json(send, status, reply["body"], extra_headers)
        elif status >= 400 or "error" in reply:
            await _respond_json(send, status if status >= 400 else 500, _error_document(reply), extra_headers)
        elif isinstance(document, dict) and document.get("stream") and path == "/v1/chat/completions":
            await self._stream(send, reply, model, extra_headers)
        elif path in ANSWERS and method == "POST":
            await _respond_json(send, status, ANSWERS[path](reply, model), extra_headers)
        else:
            message = f"{path} answers only body, raw and error replies"
            await _respond_json(send, 500, {"error": {"message": message, "type": "script_misfit"}})

    async def _stream(self, send: Send, reply: JsonObject, model: str, headers: dict[str, str]) -> None:
        raw_headers = [(b"content-type", b"text/event-stream")]
        raw_headers += [(name.lower().encode(), value.encode()) for name, value in headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": raw_headers})
        for chunk in chat_chunks(reply, model):
            await send(
                {"type": "http.response.body", "body": f"data: {json.dumps(chunk)}\n\n".encode(), "more_body": True}
            )
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})

    async def _reply_models(self, send: Send, script: str) -> None:
        reply = self.state.next_models(script)
        if reply.get("delay_seconds"):
            await trio.sleep(float(reply["delay_seconds"]))
        status = int(reply.get("status", 200))
        headers = {str(k): str(v) for k, v in reply.get("headers", {}).items()}
        if "raw" in reply:
            await _respond(send, status, str(reply["raw"]).encode(), headers)
        elif status >= 400 or "error" in reply:
            await _respond_json(send, status if status >= 400 else 500, _error_document(reply), headers)
        else:
            await _respond_json(send, status, {"object": "list", "data": reply.get("data", [])}, headers)


async def run(port: int, host: str, state: GatewayState, tls: tuple[Path, Path] | None = None) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None
    config.graceful_timeout = 1.0
    if tls is not None:
        config.certfile, config.keyfile = str(tls[0]), str(tls[1])
    bound = listener.getsockname()[1]
    scheme = "https" if tls is not None else "http"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve, FakeGateway(state), config)
        print(f"listening on {scheme}://{host}:{bound}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible model gateway for tests")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port, printed at start")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--script", type=Path, help='a JSON file {"scripts": {name: [reply...]}, "models": [...]}')
    parser.add_argument("--certfile", type=Path, help="serve https with this certificate (PEM)")
    parser.add_argument("--keyfile", type=Path, help="the certificate's private key (PEM)")
    arguments = parser.parse_args(argv)
    tls = (arguments.certfile, arguments.keyfile) if arguments.certfile and arguments.keyfile else None
    state = GatewayState()
    if arguments.script is not None:
        state.load(json.loads(arguments.script.read_text()))
    try:
        end_with_parent()
        trio.run(run, arguments.port, arguments.host, state, tls)
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
