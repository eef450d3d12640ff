"""Issue 35: with `OTEL_EXPORTER_OTLP_ENDPOINT` set the metrics go over OTLP/HTTP beside the traces, to the
local receiver (a real process), whether `METRICS` is on or not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.e2e.server_process import start_server
from tests.fakes.otlp_receiver import start_otlp_receiver
from tests.telemetry.test_traces import RUN_PATH, prepare_playbook

pytestmark = pytest.mark.slow
BOUND_SECONDS = 60.0


def test_metrics_are_sent_over_otlp_beside_the_traces(tmp_path: Path) -> None:
    receiver = start_otlp_receiver(tmp_path / "spans.jsonl")
    server = start_server(
        tmp_path / "server",
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.origin,
            "OTEL_METRIC_EXPORT_INTERVAL": "100",
            "OTEL_BSP_SCHEDULE_DELAY": "50",
        },
    )
    try:
        prepare_playbook(server)
        with server.client() as client:
            ran = client.post(RUN_PATH, json={"input": {"a": 2, "b": 3}})
            assert ran.status_code == 200, ran.text
            assert client.get("/metrics").status_code == 404  # METRICS is off: nothing is scraped
        wanted = {"auto_runtime.runs.started", "auto_runtime.runs.ended", "http.server.request.duration"}
        deadline = time.monotonic() + BOUND_SECONDS
        while not wanted <= receiver.metric_names():
            assert time.monotonic() < deadline, receiver.metric_names()
            time.sleep(0.1)
        receiver.wait_for_spans(lambda spans: any(span["name"] == "run" for span in spans))
    finally:
        assert server.stop() == 0, server.log()
        receiver.stop()
