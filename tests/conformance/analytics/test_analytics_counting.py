"""Seeds, "Analytics", "How runs are counted": over a real ledger (SQLite and PostgreSQL) with the `runs`
projection, run facts appended through the ledger API as the run service appends them, read by the analytics
service. No definition type can run yet, so the facts are appended here; the ledger stamps their times.

Durations come from what the ledger recorded (the `runs` table), never from a clock the test reads, so no
assertion depends on timing. The test's "today" is the day the runs first started, read from the table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, uuid7
from auto_runtime.playbooks.analytics import PlaybookAnalytics
from auto_runtime.runs.facts import run_stream
from tests.stored_rows import stored_rows

SCOPE = PlaybookScope("acme", "sales")
OTHER = PlaybookScope("acme", "other")


class Runs:
    """Appends run facts to the ledger in the shapes the run service records them."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def _append(self, scope: PlaybookScope, run_id: str, record: NewRecord) -> None:
        stream = run_stream(scope, run_id)
        version = await self.ledger.stream_version(stream)
        await self.ledger.append([StreamWrite(stream, version, [record])])

    def _metadata(self, run_id: str, kind: str, name: str) -> dict[str, Any]:
        return {
            "correlation_id": run_id,
            "causation_id": None,
            "by": "local",
            "run_id": run_id,
            "definition": {"type": kind, "name": name, "version": 1},
        }

    async def start(self, kind: str, name: str, run_id: str | None = None, scope: PlaybookScope = SCOPE) -> str:
        run_id = run_id or str(uuid7())
        data = {"input": {}, "input_digest": "0" * 64}
        await self._append(scope, run_id, NewRecord("run_started", data, self._metadata(run_id, kind, name)))
        return run_id

    async def end(
        self,
        run_id: str,
        kind: str,
        name: str,
        ending: str,
        tokens: Sequence[int] | None = None,
        scope: PlaybookScope = SCOPE,
    ) -> None:
        data: dict[str, Any] = {"output": {"ok": True}} if ending == "run_succeeded" else {"reason": "conflict"}
        if ending == "run_failed":
            data = {"reason": "internal", "detail": "The run failed inside the server."}
        if tokens is not None:
            given, answered, cached = tokens
            data["record"] = {"usage": {"input": {"total": given, "cache_read": cached}, "output": {"total": answered}}}
        await self._append(scope, run_id, NewRecord(ending, data, self._metadata(run_id, kind, name)))

    async def run(
        self, kind: str, name: str, ending: str, tokens: Sequence[int] | None = None, scope: PlaybookScope = SCOPE
    ) -> str:
        run_id = await self.start(kind, name, scope=scope)
        await self.end(run_id, kind, name, ending, tokens, scope=scope)
        return run_id


async def rows_of(ledger: Ledger, scope: PlaybookScope = SCOPE) -> dict[str, dict[str, Any]]:
    rows = await stored_rows(ledger, "SELECT * FROM runs WHERE org = ? AND playbook = ?", [scope.org, scope.playbook])
    return {row["run_id"]: row for row in rows}


def nearest_rank(values: Sequence[int], p: float) -> int:
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered)) - 1]


def day_of(microseconds: int) -> str:
    return datetime.fromtimestamp(microseconds / 1_000_000, tz=UTC).date().isoformat()


def analytics_on(ledger: Ledger, day: str) -> PlaybookAnalytics:
    """The service, asked at noon (UTC) of `day`: the window is the days the runs were recorded on."""
    noon = datetime.fromisoformat(f"{day}T12:00:00+00:00")
    return PlaybookAnalytics(ledger, clock=lambda: noon)


async def test_how_runs_are_counted(runs_ledger: Ledger) -> None:
    runs = Runs(runs_ledger)
    succeeded = await runs.run("reasoning", "triage", "run_succeeded", (100, 20, 50))
    # Started again under its run id after a failure: counts once, tokens over every attempt that ended,
    # duration of the last attempt.
    again = await runs.run("reasoning", "triage", "run_failed", (10, 2, 0))
    await runs.start("reasoning", "triage", again)
    await runs.end(again, "reasoning", "triage", "run_succeeded", (30, 4, 5))
    # Rejected after its model answered: in runs and tokens, never in durations.
    rejected = await runs.run("reasoning", "triage", "run_rejected", (7, 1, 0))
    failed = await runs.run("computation", "sum", "run_failed")
    workflow = await runs.run("workflow", "close", "run_succeeded")
    alpha = await runs.run("reasoning", "alpha", "run_succeeded", (1, 1, 1))
    # Still going, or started again and not ended yet: they count nowhere, their ended attempt's tokens neither.
    await runs.start("reasoning", "triage")
    going_again = await runs.run("reasoning", "triage", "run_failed", (1000, 1000, 1000))
    await runs.start("reasoning", "triage", going_again)
    # Another playbook's runs count in that playbook only.
    await runs.run("reasoning", "triage", "run_succeeded", (5000, 0, 0), scope=OTHER)

    rows = await rows_of(runs_ledger)
    days = {day_of(int(row["first_started_us"])) for row in rows.values()}
    assert len(days) <= 2  # the appends may straddle midnight; the window below covers both days
    today = max(days)
    result = await analytics_on(runs_ledger, today).analytics(SCOPE)

    assert result["days"] == 7
    assert result["runs"] == {"total": 6, "succeeded": 4, "failed": 1, "rejected": 1}
    assert result["tokens"] == {"input": 100 + 10 + 30 + 7 + 1, "output": 20 + 2 + 4 + 1 + 1, "cached": 50 + 5 + 1}
    timed = [int(rows[run]["duration_ms"]) for run in (succeeded, again, failed, workflow, alpha)]
    assert result["duration_ms"] == {"p50": nearest_rank(timed, 0.5), "p95": nearest_rank(timed, 0.95)}
    assert rejected in rows and rows[rejected]["duration_ms"] is not None  # kept, yet never counted
    assert result["by_function"] == [
        {"type": "reasoning", "name": "triage", "runs": 3},
        {"type": "computation", "name": "sum", "runs": 1},
        {"type": "reasoning", "name": "alpha", "runs": 1},
        {"type": "workflow", "name": "close", "runs": 1},
    ]
    by_day = {entry["day"]: entry for entry in result["by_day"]}
    assert [entry["day"] for entry in result["by_day"]][-1] == today
    assert sum(entry["runs"]["total"] for entry in result["by_day"]) == 6
    assert sum(entry["tokens"]["input"] for entry in result["by_day"]) == result["tokens"]["input"]
    for day, entry in by_day.items():
        if day not in days:
            assert entry["runs"]["total"] == 0 and entry["duration_ms"] is None
    if len(days) == 1:
        assert by_day[today]["runs"] == result["runs"]
        assert by_day[today]["tokens"] == result["tokens"]
        assert by_day[today]["duration_ms"] == result["duration_ms"]


async def test_type_and_name_keep_the_runs_of_one_definition(runs_ledger: Ledger) -> None:
    runs = Runs(runs_ledger)
    await runs.run("reasoning", "triage", "run_succeeded", (10, 1, 0))
    await runs.run("reasoning", "triage", "run_rejected", (20, 2, 0))
    await runs.run("reasoning", "grade", "run_succeeded", (40, 4, 0))
    await runs.run("workflow", "triage", "run_succeeded")
    rows = await rows_of(runs_ledger)
    today = max(day_of(int(row["first_started_us"])) for row in rows.values())
    service = analytics_on(runs_ledger, today)

    reasoning = await service.analytics(SCOPE, definition_type="reasoning")
    assert reasoning["runs"]["total"] == 3 and reasoning["tokens"]["input"] == 70
    named = await service.analytics(SCOPE, name="triage")
    assert named["runs"] == {"total": 3, "succeeded": 2, "failed": 0, "rejected": 1}
    assert [(f["type"], f["name"]) for f in named["by_function"]] == [("reasoning", "triage"), ("workflow", "triage")]
    one = await service.analytics(SCOPE, definition_type="reasoning", name="triage")
    assert one["runs"] == {"total": 2, "succeeded": 1, "failed": 0, "rejected": 1}
    assert one["tokens"] == {"input": 30, "output": 3, "cached": 0}
    assert one["by_function"] == [{"type": "reasoning", "name": "triage", "runs": 2}]
    (only,) = [
        row
        for row in rows.values()
        if row["type"] == "reasoning" and row["status"] == "succeeded" and row["name"] == "triage"
    ]
    assert one["duration_ms"] == {"p50": only["duration_ms"], "p95": only["duration_ms"]}
    nothing = await service.analytics(SCOPE, definition_type="recall")
    assert nothing["runs"]["total"] == 0 and nothing["duration_ms"] is None and nothing["by_function"] == []


async def test_only_rejected_runs_have_no_duration(runs_ledger: Ledger) -> None:
    """ "`null` when no run of the period has a duration": rejected runs never have one here."""
    runs = Runs(runs_ledger)
    await runs.run("reasoning", "triage", "run_rejected", (3, 1, 0))
    rows = await rows_of(runs_ledger)
    today = max(day_of(int(row["first_started_us"])) for row in rows.values())
    result = await analytics_on(runs_ledger, today).analytics(SCOPE, days=14)
    assert result["runs"] == {"total": 1, "succeeded": 0, "failed": 0, "rejected": 1}
    assert result["tokens"] == {"input": 3, "output": 1, "cached": 0}
    assert result["duration_ms"] is None
    assert all(entry["duration_ms"] is None for entry in result["by_day"])


async def test_a_window_that_ends_before_the_runs_holds_none_of_them(runs_ledger: Ledger) -> None:
    """A run counts on the day it first started: a window of earlier days holds none of today's runs."""
    runs = Runs(runs_ledger)
    await runs.run("reasoning", "triage", "run_succeeded", (10, 1, 0))
    rows = await rows_of(runs_ledger)
    first_day = min(day_of(int(row["first_started_us"])) for row in rows.values())
    service = analytics_on(runs_ledger, first_day)
    day_before = date.fromordinal(date.fromisoformat(first_day).toordinal() - 1).isoformat()
    before = await service.analytics(SCOPE, first=day_before, last=day_before)
    assert before["days"] == 1 and before["runs"]["total"] == 0 and before["by_function"] == []
    including = await service.analytics(SCOPE, first=day_before, last=first_day)
    assert including["days"] == 2 and including["runs"]["total"] == 1
    assert [entry["runs"]["total"] for entry in including["by_day"]] == [0, 1]
