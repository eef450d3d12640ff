"""Documents, inputs and small HTTP helpers shared by the computation conformance tests.

Every test here speaks to the real server over HTTP; nothing below the routes is imported.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

HEAD = "---\nlanguage: python\n---\n"
"""Front matter of three lines: a program after it starts on line 4 of the document."""

EXAMPLE = """---
description: Overdue amounts per customer in aging buckets, in cents
language: python
input:
  schema:
    type: object
    required: [invoices]
    properties:
      invoices:
        type: array
        items:
          type: object
          required: [customer, amount_cents, days_overdue]
          properties:
            customer: { type: string }
            amount_cents: { type: integer, minimum: 0 }
            days_overdue: { type: integer, minimum: 0 }
output:
  schema:
    type: object
    required: [customers, total_cents]
    properties:
      customers: { type: array, items: { type: object } }
      total_cents: { type: integer }
---
BUCKETS = (30, 60, 90)

def bucket_of(days):
    for index, limit in enumerate(BUCKETS):
        if days <= limit:
            return index
    return len(BUCKETS)

def main(input):
    by_customer = {}
    for invoice in input["invoices"]:
        sums = by_customer.setdefault(invoice["customer"], [0, 0, 0, 0])
        sums[bucket_of(invoice["days_overdue"])] += invoice["amount_cents"]
    customers = []
    for name in sorted(by_customer):
        sums = by_customer[name]
        total = sum(sums)
        customers.append({
            "customer": name,
            "buckets_cents": sums,
            "total_cents": total,
            "late_permille": None if total == 0 else (total - sums[0]) * 1000 // total,
        })
    return {"customers": customers, "total_cents": sum(c["total_cents"] for c in customers)}
"""
"""The spec's example, `invoice-aging`, word for word."""

INVOICES: dict[str, Any] = {
    "invoices": [
        {"customer": "northwind", "amount_cents": 129900, "days_overdue": 12},
        {"customer": "northwind", "amount_cents": 45050, "days_overdue": 75},
        {"customer": "blue-harbor", "amount_cents": 980000, "days_overdue": 0},
        {"customer": "northwind", "amount_cents": 7300, "days_overdue": 120},
    ]
}

EXAMPLE_OUTPUT = (
    '{"customers":[{"buckets_cents":[980000,0,0,0],"customer":"blue-harbor","late_permille":0,'
    '"total_cents":980000},{"buckets_cents":[129900,0,45050,7300],"customer":"northwind",'
    '"late_permille":287,"total_cents":182250}],"total_cents":1162250}'
)
"""The example's output as the spec prints it: compact, keys in code-point order."""

SANDBOX = "1c054a4d21d4/wasmtime-50.0.1"

RUNS_FOREVER = HEAD + "def main(input):\n    while True:\n        pass\n"
"""Spends work fast: it uses up its 10,000,000,000 units long before its 10 seconds."""

WAITS_FOREVER = HEAD + "import time\ndef main(input):\n    while True:\n        time.time_ns()\n"
"""Spends wall-clock time in the host's clock and little work in each turn: it meets the 10 s deadline first."""


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
