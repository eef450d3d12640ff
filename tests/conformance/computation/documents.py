"""Documents, inputs and small HTTP helpers shared by the computation conformance tests.

Every test here speaks to the real server over HTTP; nothing below the routes is imported.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

HEAD = "---\nlanguage: python\n---\n"
"""Front matter of three lines: a program after it starts on line 4 of the document."""

SANDBOX = "06338c955b03/wasmtime-50.0.1"

RUNS_FOREVER = HEAD + "def main(input):\n    while True:\n        pass\n"
"""Spends work fast: it uses up its 10,000,000,000 units long before its 10 seconds."""

WAITS_FOREVER = (
    HEAD + "import time\ndef main(input):\n    now = time.time_ns\n    while True:\n" + "        now()\n" * 40
)
"""Spends the least work a second of the programs we know: a call of the host's clock on every line (about 1.3
billion units a second on the 2-core machine, against 4 billion for an empty loop), so its 10,000,000,000 units
last about 8 s there, longer on a loaded machine. Whether it meets its 10 seconds or uses up its work first
depends on the machine; the tests that use it compare only endings the spec allows either way."""


def document(program: str, front_matter: str = "") -> str:
    """A document with `language: python`, then `front_matter` lines, then `program`."""
    return f"---\nlanguage: python\n{front_matter}---\n{program}"


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def save(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/computation", json={"name": name, "source": source})


def saved(client: httpx.Client, playbook: str, name: str, source: str) -> dict[str, Any]:
    response = save(client, playbook, name, source)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def run(client: httpx.Client, playbook: str, name: str, value: object = None, **fields: Any) -> httpx.Response:
    return client.post(f"{playbook}/definitions/computation/{name}/run", json={"input": value, **fields})


def run_raw(client: httpx.Client, playbook: str, name: str, body: bytes) -> httpx.Response:
    """A run request sent as the exact bytes given: for numbers and text `json.dumps` would not write."""
    return client.post(
        f"{playbook}/definitions/computation/{name}/run",
        content=body,
        headers={"Content-Type": "application/json"},
    )


def output_of(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "succeeded", body
    return body["output"]


def details(body: dict[str, Any]) -> list[str]:
    """The `detail` of each entry of a problem's `errors`, after checking each points at `/source`."""
    errors: list[dict[str, str]] = body["errors"]
    assert all(error["pointer"] == "/source" for error in errors), errors
    return [error["detail"] for error in errors]
