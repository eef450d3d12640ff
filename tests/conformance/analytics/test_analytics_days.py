"""Seeds, "Analytics": the rules about days and percentiles, over rows as the `runs` projection keeps them.

The ledger stamps every record with the time it records it, so runs on other days cannot be appended in a
test; these rows hold what the projection holds for such runs (`first_started_us`, status, the last attempt's
`duration_ms`, tokens summed over attempts), and `summarize` is what the service answers from them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from auto_runtime.playbooks.analytics import Window, nearest_rank, summarize

DAY_US = 86_400_000_000


def at(day: str, hour: int = 0, microsecond: int = 0) -> int:
    moment = datetime.fromisoformat(f"{day}T{hour:02d}:00:00+00:00")
    return int(moment.timestamp()) * 1_000_000 + microsecond


def row(
    day_us: int,
    status: str = "succeeded",
    duration: int | None = 100,
    tokens: tuple[int, int, int] = (0, 0, 0),
    kind: str = "reasoning",
    name: str = "triage",
) -> dict[str, Any]:
    return {
        "type": kind,
        "name": name,
        "status": status,
        "first_started_us": day_us,
        "duration_ms": duration,
        "tokens_input": tokens[0],
        "tokens_output": tokens[1],
        "tokens_cached": tokens[2],
    }


WINDOW = Window(date(2026, 9, 28), date(2026, 9, 30))


def test_a_run_counts_on_the_day_it_first_started() -> None:
    """A run first started on the 28th and started again (and ended) on the 29th counts on the 28th."""
    result = summarize([row(at("2026-09-28", 23), duration=40, tokens=(5, 1, 0))], WINDOW)
    counts = [entry["runs"]["total"] for entry in result["by_day"]]
    assert counts == [1, 0, 0]
    assert result["by_day"][0]["duration_ms"] == {"p50": 40, "p95": 40}
    assert result["by_day"][0]["tokens"] == {"input": 5, "output": 1, "cached": 0}


def test_the_window_holds_its_first_and_last_day_whole_and_nothing_else() -> None:
    rows = [
        row(at("2026-09-28") - 1),
        row(at("2026-09-28")),
        row(at("2026-09-30", 23) + 3_599_999_999),
        row(at("2026-10-01")),
    ]
    result = summarize(rows, WINDOW)
    assert [entry["runs"]["total"] for entry in result["by_day"]] == [1, 0, 1]
    assert result["runs"]["total"] == 2


def test_by_day_holds_every_day_oldest_first() -> None:
    result = summarize([], Window(date(2024, 2, 27), date(2024, 3, 1)))
    assert [entry["day"] for entry in result["by_day"]] == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01"]
    assert result["days"] == 4


def test_runs_that_have_not_ended_count_nowhere() -> None:
    result = summarize([row(at("2026-09-29"), status="started", tokens=(9, 9, 9))], WINDOW)
    assert result["runs"]["total"] == 0 and result["tokens"] == {"input": 0, "output": 0, "cached": 0}
    assert result["by_function"] == []


def test_rejected_runs_count_in_runs_and_tokens_never_in_durations() -> None:
    rows = [row(at("2026-09-29"), "rejected", 5_000, (3, 2, 1)), row(at("2026-09-29"), "failed", 10)]
    result = summarize(rows, WINDOW)
    assert result["runs"] == {"total": 2, "succeeded": 0, "failed": 1, "rejected": 1}
    assert result["tokens"] == {"input": 3, "output": 2, "cached": 1}
    assert result["duration_ms"] == {"p50": 10, "p95": 10}


def test_by_function_most_runs_first_then_type_then_name() -> None:
    rows = [
        row(at("2026-09-29"), kind="workflow", name="close"),
        row(at("2026-09-29"), kind="reasoning", name="zeta"),
        row(at("2026-09-29"), kind="reasoning", name="alpha"),
        row(at("2026-09-30"), kind="computation", name="sum"),
        row(at("2026-09-30"), kind="computation", name="sum", status="rejected"),
    ]
    assert summarize(rows, WINDOW)["by_function"] == [
        {"type": "computation", "name": "sum", "runs": 2},
        {"type": "reasoning", "name": "alpha", "runs": 1},
        {"type": "reasoning", "name": "zeta", "runs": 1},
        {"type": "workflow", "name": "close", "runs": 1},
    ]


def test_percentiles_are_the_nearest_rank() -> None:
    """ "The duration at place ⌈p × n⌉ of the n durations in order"."""
    assert nearest_rank([7], 50) == 7 and nearest_rank([7], 95) == 7
    assert nearest_rank([10, 20], 50) == 10 and nearest_rank([10, 20], 95) == 20
    ordered = list(range(1, 21))
    assert nearest_rank(ordered, 50) == 10 and nearest_rank(ordered, 95) == 19
    hundred = list(range(1, 101))
    assert nearest_rank(hundred, 50) == 50 and nearest_rank(hundred, 95) == 95
    assert nearest_rank(list(range(1, 102)), 95) == 96
    rows = [row(at("2026-09-29"), duration=d) for d in (300, 100, 200, 400)]
    assert summarize(rows, WINDOW)["duration_ms"] == {"p50": 200, "p95": 400}


def test_window_bounds_in_microseconds() -> None:
    assert WINDOW.start_us == at("2026-09-28")
    assert WINDOW.end_us == at("2026-10-01")
    assert WINDOW.end_us - WINDOW.start_us == 3 * DAY_US
    assert datetime.fromtimestamp(WINDOW.start_us / 1_000_000, tz=UTC).date() == WINDOW.first
