"""The computation spec's example, `invoice-aging`: its document word for word, the input it is run on and
the output it gives. The conformance tests, the sandbox's run tests and the computation benchmark share it."""

from __future__ import annotations

from typing import Any

EXAMPLE_FRONT_MATTER = """---
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
"""
"""The example's front matter: its description, language and input and output schemas."""

EXAMPLE_PROGRAM = """BUCKETS = (30, 60, 90)

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
"""The example's program, as it follows its front matter."""

EXAMPLE = EXAMPLE_FRONT_MATTER + EXAMPLE_PROGRAM
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
