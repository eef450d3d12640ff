"""Every instrument the server records with, made once from a meter (the SDK's, or the API's no-op one).

Names and units follow OpenTelemetry's semantic conventions where one exists (`http.server.request.duration`);
the others are under `auto_runtime.`. The Prometheus text turns dots into underscores and adds the unit and
`_total` suffixes (`auto_runtime_runs_started_total`). Attributes are bounded sets (types, outcomes, kinds,
operation names, status codes, buckets of a share): never an org, a playbook or a run id.

The observable instruments (actors live, mailbox high-water, model processes) are registered by
`actors.observe` and `model_processes.observe`, which own what they read.
"""

from __future__ import annotations

from opentelemetry.metrics import Meter

SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
"""Bucket bounds of every duration histogram, from half a millisecond to five minutes."""
LONG_SECONDS = (0.01, 0.1, 1.0, 10.0, 60.0, 300.0, 1800.0, 3600.0, 21600.0, 86400.0)
"""Bucket bounds of a run's duration, which a waiting workflow run stretches to hours or days."""
COUNTS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0)
"""Bucket bounds of a commit's batch size."""
WORK_UNITS = (1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10)
"""Bucket bounds of the fuel a sandbox run spent."""
SHARES = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
"""Bucket bounds of an org's share of the sandbox's jobs in flight."""


class Instruments:
    """The synchronous instruments, by what they measure (see `docs/operating.md` for what each tells)."""

    def __init__(self, meter: Meter) -> None:
        self.http_duration = meter.create_histogram(
            "http.server.request.duration",
            unit="s",
            description="Duration of HTTP and MCP requests, by operation and status.",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.runs_started = meter.create_counter(
            "auto_runtime.runs.started", unit="{run}", description="Runs started (each attempt), by type."
        )
        self.runs_ended = meter.create_counter(
            "auto_runtime.runs.ended", unit="{run}", description="Runs ended, by type and outcome."
        )
        self.run_duration = meter.create_histogram(
            "auto_runtime.run.duration",
            unit="s",
            description="From a run's start to its end, by type (runs started since this process started).",
            explicit_bucket_boundaries_advisory=LONG_SECONDS,
        )
        self.workflow_inputs = meter.create_counter(
            "auto_runtime.workflow.inputs_applied", unit="{input}", description="Workflow inputs applied."
        )
        self.sandbox_busy = meter.create_up_down_counter(
            "auto_runtime.sandbox.workers.busy", unit="{worker}", description="Sandbox workers running a job."
        )
        self.sandbox_wait = meter.create_histogram(
            "auto_runtime.sandbox.queue.wait",
            unit="s",
            description="From a sandbox job's submission to its start on a worker, by kind and by the org's share "
            "of the jobs in flight at submission (the fair queue serves a small share first).",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.sandbox_share = meter.create_histogram(
            "auto_runtime.sandbox.queue.org_share",
            unit="1",
            description="The submitting org's share of the sandbox jobs in flight, at each submission.",
            explicit_bucket_boundaries_advisory=SHARES,
        )
        self.sandbox_jobs = meter.create_counter(
            "auto_runtime.sandbox.jobs", unit="{job}", description="Sandbox evaluations ended, by kind and ending."
        )
        self.sandbox_work = meter.create_histogram(
            "auto_runtime.sandbox.work",
            unit="{unit}",
            description="Work units (fuel) a sandbox evaluation spent, by kind.",
            explicit_bucket_boundaries_advisory=WORK_UNITS,
        )
        self.mailbox_refusals = meter.create_counter(
            "auto_runtime.actors.mailbox.refusals",
            unit="{message}",
            description="Messages refused because an actor's mailbox was full (MailboxFull), by actor kind.",
        )
        self.restarts = meter.create_counter(
            "auto_runtime.supervisor.restarts",
            unit="{restart}",
            description="Children restarted, by supervisor (or actor registry).",
        )
        self.ledger_appends = meter.create_counter(
            "auto_runtime.ledger.appends", unit="{append}", description="Ledger appends committed."
        )
        self.ledger_records = meter.create_counter(
            "auto_runtime.ledger.records", unit="{record}", description="Records the committed appends held."
        )
        self.commit_batch = meter.create_histogram(
            "auto_runtime.ledger.commit.batch_size",
            unit="{append}",
            description="Appends and writes one commit of the ledger's writer held, by store.",
            explicit_bucket_boundaries_advisory=COUNTS,
        )
        self.commit_duration = meter.create_histogram(
            "auto_runtime.ledger.commit.duration",
            unit="s",
            description="One commit of the ledger's writer, from its transaction's start to its durable end.",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.reader_waits = meter.create_counter(
            "auto_runtime.ledger.reader.waits",
            unit="{read}",
            description="Reads that found every connection of the ledger's pool busy and waited, by store.",
        )
        self.due_entries = meter.create_counter(
            "auto_runtime.due_work.entries", unit="{entry}", description="Due-work entries taken up when due."
        )
        self.due_lateness = meter.create_histogram(
            "auto_runtime.due_work.lateness",
            unit="s",
            description="How long after its due time a due-work entry was taken up.",
            explicit_bucket_boundaries_advisory=SECONDS,
        )
        self.tool_calls = meter.create_counter(
            "auto_runtime.tool.calls", unit="{call}", description="Calls of tool servers' tools, by outcome."
        )
        self.model_calls = meter.create_counter(
            "auto_runtime.model.calls", unit="{call}", description="Model calls, by provider and outcome."
        )
