"""Prediction questions through HTTP beside a bare ONNX Runtime call of the same model, and a build's scoring time
for 8 candidates. Prints; asserts nothing.

It starts the real server on a fresh SQLite ledger, makes a playbook with a trainer as the prediction tests make
them (`create_definition`), uploads a dataset of `SERIES` series of `PERIODS` months, asks a build, uploads 8
linear candidates, answers the build through `answer_interaction` and times the scoring from `request_answered`
to `build_ended` by the events' `recorded_at`. Then it asks
`QUESTIONS` questions, one at a time, and runs the active version's model with ONNX Runtime in this process on
the same input as many times: the ratio of the two medians is the cost of HTTP, the run record and the model
process. Run from the repository root as `python -m benchmarks.prediction` (about a minute).
"""

from __future__ import annotations

import hashlib
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from tests.conformance.prediction.seeding import seed
from tests.e2e.server_process import start_server
from tests.functions.prediction.onnx_models import candidate

SERIES = 20
PERIODS = 60
LAGS = 6
QUESTIONS = 300


def dataset() -> bytes:
    rows = ["period,series,units"]
    generator = np.random.default_rng(7)
    for index in range(SERIES):
        level = 100 + 10 * index
        for month in range(PERIODS):
            value = level + 2 * month + float(generator.normal(0, 3))
            rows.append(f"{2020 + month // 12}-{month % 12 + 1:02d},s{index},{value:.3f}")
    return ("\n".join(rows) + "\n").encode()


def document(digest: str) -> str:
    return (
        f"---\ndataset: {digest}\nperiod: month\ntarget: units\nlags: {LAGS}\nhorizons: [1, 3]\nbacktest: 4\n"
        "trainer: train-forecasts\n---\n"
    )


def candidates() -> list[bytes]:
    made = []
    for index in range(8):
        weights = np.zeros((LAGS, 2), np.float32)
        weights[-1] = 1.0
        weights[-2] = [-0.5 + index * 0.05, -0.5 + index * 0.05]
        weights[-1] += [0.5 - index * 0.05, 0.5 - index * 0.05]
        made.append(candidate(weights.tolist(), [8.0 + index, 10.0 + index]))
    return made


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = start_server(Path(folder) / "server", {"PREDICTION_CACHE_DIR": str(Path(folder) / "cache")})
        try:
            with server.client() as client:
                base = seed(client)
                data = dataset()
                digest = hashlib.sha256(data).hexdigest()
                client.put(f"{base}/datasets/{digest}", content=data, headers={"Content-Type": "text/csv"})
                client.post(f"{base}/definitions/prediction", json={"name": "units", "source": document(digest)})
                run_id = client.post(f"{base}/definitions/prediction/units/run", json={"input": {"build": {}}}).json()[
                    "run_id"
                ]
                models = candidates()
                digests = [
                    client.post(
                        f"{base}/runs/{run_id}/build/candidates",
                        content=model,
                        headers={"Content-Type": "application/octet-stream"},
                    ).json()["candidate"]
                    for model in models
                ]
                answered = client.post(f"{base}/runs/{run_id}/answer", json={"answer": {"candidates": digests}})
                assert answered.status_code == 200, answered.text
                while client.get(f"{base}/runs/{run_id}").json()["status"] == "started":
                    time.sleep(0.2)
                events = client.get(f"{base}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
                at = {
                    event["type"]: datetime.fromisoformat(event["metadata"]["at"].replace("Z", "+00:00"))
                    for event in events
                }
                scoring = (at["build_ended"] - at["request_answered"]).total_seconds()
                winner = client.get(f"{base}/runs/{run_id}").json()["output"]["candidate"]
                print(f"scoring 8 candidates ({SERIES} series, 4 origins, 2 horizons): {scoring * 1000:.0f} ms")
                http: list[float] = []
                for index in range(QUESTIONS):
                    began = time.perf_counter()
                    response = client.post(
                        f"{base}/definitions/prediction/units/run", json={"input": {"series": f"s{index % SERIES}"}}
                    )
                    http.append(time.perf_counter() - began)
                    assert response.status_code == 200, response.text
            session = ort.InferenceSession(models[digests.index(winner)], providers=["CPUExecutionProvider"])
            history = np.arange(LAGS, dtype=np.float32).reshape(1, LAGS)
            bare: list[float] = []
            for _ in range(QUESTIONS):
                began = time.perf_counter()
                session.run(["value", "low", "high"], {"history": history})
                bare.append(time.perf_counter() - began)
            report(http, bare)
        finally:
            server.stop()


def report(http: list[float], bare: list[float]) -> None:
    def shown(values: list[float]) -> dict[str, Any]:
        return {"p50_ms": statistics.median(values) * 1000, "p99_ms": percentile(values, 0.99) * 1000}

    through, floor = shown(http), shown(bare)
    print(f"question through HTTP: p50 {through['p50_ms']:.2f} ms, p99 {through['p99_ms']:.2f} ms")
    print(f"bare ONNX Runtime run: p50 {floor['p50_ms']:.3f} ms, p99 {floor['p99_ms']:.3f} ms")
    print(f"ratio of the medians: {through['p50_ms'] / floor['p50_ms']:.0f}x")


if __name__ == "__main__":
    main()
