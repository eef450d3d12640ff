"""What the reasoning type adds to a model call, against the fake gateway. Prints; asserts nothing.

Four cases, each run for a fixed count of requests in 3 rounds (the median round is printed, since the machine
may be shared):

* `bare`: an httpx POST of the same Chat Completions body to the fake gateway (the floor);
* `call`: `ModelDirectory.call` (request mapping, deadline, retries policy, answer mapping);
* `run`: a whole `ReasoningType.run` without tools: input defaults and schema, render, admission, the call,
  the JSON answer checked against its schema, the record built and fitted in 1 MiB;
* `parse`: `parse_document` of the document, cold (the type caches parsed documents by source).

Run from the repository root as `python -m benchmarks.reasoning_overhead` (about 20 s): it starts the fake gateway
of `tests/fakes`.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import trio

from auto_runtime.functions.function_type import RunRequest
from auto_runtime.functions.reasoning import ReasoningType, parse_document
from auto_runtime.models import CallSettings, JsonOutput, ModelDirectory, ModelRequest, UserTurn
from auto_runtime.settings import load_settings
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway

ROUNDS = 3
REQUESTS = 200
DOCUMENT = """---
model: fake/bench
config: { max_output_tokens: 300 }
input:
  schema:
    type: object
    properties: { ticket: { type: string }, language: { type: string } }
    required: [ticket]
    additionalProperties: false
  default: { language: en }
output:
  format: json
  schema:
    type: object
    properties: { queue: { enum: [billing, other] }, urgent: { type: boolean } }
    required: [queue, urgent]
    additionalProperties: false
---
{% system %}You triage tickets. Answer in {{ input.language }}.{% endsystem %}
Ticket, received {{ today }}:

{{ input.ticket | clip: 2000 }}
"""
ANSWER = {"content": json.dumps({"queue": "billing", "urgent": False})}


def _report(name: str, seconds: list[float]) -> None:
    ordered = sorted(seconds)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(f"{name:>6}: {len(ordered) / sum(ordered):8.0f}/s   p50 {p50:7.3f} ms   p99 {p99:7.3f} ms")


async def _measure(name: str, gateway: FakeGatewayProcess | None, once: Callable[[], Awaitable[object]]) -> None:
    rounds: list[list[float]] = []
    for _ in range(ROUNDS):
        if gateway is not None:
            gateway.script("bench", *([ANSWER] * REQUESTS))
        timings: list[float] = []
        for _ in range(REQUESTS):
            began = time.perf_counter()
            await once()
            timings.append(time.perf_counter() - began)
        rounds.append(timings)
    rounds.sort(key=sum)
    _report(name, rounds[len(rounds) // 2])


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        gateway = start_fake_gateway()
        try:
            environ = {
                "HOST": "127.0.0.1",
                "MODEL_GATEWAYS": json.dumps([{"name": "fake", "base_url": gateway.base_url}]),
            }
            settings = load_settings(environ, Path(folder), mode="image").settings
            models = ModelDirectory.from_settings(settings, environ=environ)
            reasoning = ReasoningType(models, None, settings.reasoning_max_input_tokens)
            document = parse_document(DOCUMENT)
            assert not isinstance(document, list)
            body = {
                "model": "bench",
                "messages": [{"role": "system", "content": "You triage."}, {"role": "user", "content": "Ticket"}],
                "max_tokens": 300,
                "response_format": {"type": "json_object"},
            }
            async with httpx.AsyncClient(base_url=gateway.base_url) as client:

                async def bare() -> object:
                    return (await client.post("/chat/completions", json=body)).json()

                await _measure("bare", gateway, bare)
            model = models.resolve("fake/bench")
            request = ModelRequest(
                turns=(UserTurn("Ticket"),),
                instructions="You triage.",
                output=JsonOutput(document.output_schema or {}),
                settings=CallSettings(max_output_tokens=300),
            )

            async def call() -> object:
                return await models.call(model, request)

            await _measure("call", gateway, call)
            run_request = RunRequest(
                org="acme",
                playbook="bench",
                run_id="0199a3c4-7d2e-7c1a-9b3f-2f1e0d9c8b7a",
                definition_type="reasoning",
                name="triage",
                version=1,
                source=DOCUMENT,
                input={"ticket": "I was charged twice for March. " * 20},
                started_at=datetime.now(UTC),
                caller_id="bench",
            )

            async def run() -> object:
                return await reasoning.run(run_request)

            await _measure("run", gateway, run)

            async def parse() -> object:
                return parse_document(DOCUMENT)

            await _measure("parse", None, parse)
            await models.aclose()
        finally:
            gateway.stop()


if __name__ == "__main__":
    trio.run(main)
