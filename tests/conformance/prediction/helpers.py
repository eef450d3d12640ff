"""Datasets and documents the prediction tests share, and uploads over real HTTP."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

SALES = (
    "period,series,units,price\n"
    + "".join(
        f"2024-{month:02d},{region},{base + month * step},{price}\n"
        for month in range(1, 13)
        for region, base, step, price in (("north", 100, 3, 9.5), ("south", 200, 5, 12))
    )
    + "".join(
        f"2025-{month:02d},{region},{base + (12 + month) * step},{price}\n"
        for month in range(1, 13)
        for region, base, step, price in (("north", 100, 3, 9.5), ("south", 200, 5, 12))
    )
).encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def upload(
    client: httpx.Client, playbook: str, data: bytes, *, name: str | None = None, content_type: str = "text/csv"
) -> httpx.Response:
    return client.put(
        f"{playbook}/datasets/{name or digest(data)}", content=data, headers={"Content-Type": content_type}
    )


def uploaded(client: httpx.Client, playbook: str, data: bytes = SALES) -> dict[str, Any]:
    response = upload(client, playbook, data)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def document(digest_of_dataset: str, **fields: Any) -> str:
    """A prediction document over the dataset `digest_of_dataset`; `fields` replace or add front matter lines
    (None drops one)."""
    values: dict[str, Any] = {
        "description": "Units sold per region, one and two months ahead",
        "dataset": digest_of_dataset,
        "period": "month",
        "target": "units",
        "features": "[price]",
        "lags": 3,
        "horizons": "[1, 2]",
        "season": 1,
        "coverage": 0.8,
        "backtest": 2,
        "trainer": "train-forecasts",
    }
    values.update(fields)
    lines = [f"{key}: {value}" for key, value in values.items() if value is not None]
    return "---\n" + "\n".join(lines) + "\n---\nUnits are whole boxes.\n"


def create(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/prediction", json={"name": name, "source": source})
