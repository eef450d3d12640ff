"""Metrics: OpenTelemetry instruments, scraped at `GET /metrics` in the Prometheus text format (`METRICS=on`)
and sent over OTLP beside the traces when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; `docs/operating.md` lists them.

The public face: `install_metrics` (at start, by the composition root) and the one-line recording calls the
rooms make at their seams. With metrics off each call tests one attribute and returns (`state`). No org,
playbook or run id is ever an attribute.
"""

from auto_runtime.metrics.actors import mailbox_posted, mailbox_refused, registry_made, restarted
from auto_runtime.metrics.due_work import taken_up
from auto_runtime.metrics.http import request_served
from auto_runtime.metrics.install import Installed, install_metrics
from auto_runtime.metrics.ledger import commit, reader_waits
from auto_runtime.metrics.model_processes import watch as watch_model_pool
from auto_runtime.metrics.runs import appended
from auto_runtime.metrics.sandbox import sandbox_job
from auto_runtime.metrics.state import METERING

__all__ = [
    "METERING",
    "Installed",
    "appended",
    "commit",
    "install_metrics",
    "mailbox_posted",
    "mailbox_refused",
    "reader_waits",
    "registry_made",
    "request_served",
    "restarted",
    "sandbox_job",
    "taken_up",
    "watch_model_pool",
]
