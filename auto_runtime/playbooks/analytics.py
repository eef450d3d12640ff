"""`get_playbook_analytics`: what a playbook's runs did over a window of days in UTC (seeds, "Analytics").

Served from the `runs` projection (one row per run id, kept in each append's transaction), never from streams:
one query reads the runs that first started inside the window and have ended. The counting rules:

- a run counts on the day it first started (`first_started_us`), also when it was started again later;
- only once it has ended (`succeeded`, `failed` or `rejected`); a run still going counts nowhere;
- once per run id; its tokens are the sums over every attempt that ended, its duration the last attempt's;
- rejected runs count in `runs` and `tokens`, never in `duration_ms`; workflow runs count like any other;
- a percentile is the nearest rank: the duration at place ⌈p × n⌉ of the n durations in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from auto_runtime.clock_text import now_utc
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.problems import InputIssue, invalid_input

WINDOW_DAYS = (7, 14, 30)
DEFAULT_DAYS = 7
MAX_WINDOW_DAYS = 366
DAY_US = 86_400_000_000
ENDED = ("succeeded", "failed", "rejected")
TIMED = ("succeeded", "failed")
_DAY_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Window:
    """The days a result covers, `first` to `last`, both included."""

    first: date
    last: date

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    @property
    def start_us(self) -> int:
        return _day_us(self.first)

    @property
    def end_us(self) -> int:
        """The first microsecond after the window."""
        return _day_us(self.last) + DAY_US


def _day_us(day: date) -> int:
    return (day - _EPOCH.date()).days * DAY_US


def _issue(name: str, rule: str) -> InputIssue:
    return InputIssue(f"{name}: {rule}.", f"/{name}")


def _day_of(name: str, text: str) -> date | InputIssue:
    if not _DAY_TEXT.match(text):
        return _issue(name, "expected a day as YYYY-MM-DD, such as 2026-09-30")
    try:
        return date.fromisoformat(text)
    except ValueError:
        return _issue(name, "expected a day that exists in the calendar, such as 2026-09-30")


def window_of(days: int | None, first: str | None, last: str | None, today: date) -> Window:
    """The window the parameters name, or `invalid_input` pointing at the parameter that breaks a rule.

    `days` is 7, 14 or 30, the last days ending today, 7 when nothing is
    given; or `from` and `to`, both given, real days, `to` not before `from` nor after today, at most 366 days.
    """
    if days is not None and (first is not None or last is not None):
        raise invalid_input([_issue("days", "expected either days, or from and to, not both")])
    if days is not None and days not in WINDOW_DAYS:
        raise invalid_input([_issue("days", "expected 7, 14 or 30")])
    if first is None and last is None:
        count = days if days is not None else DEFAULT_DAYS
        return Window(today - timedelta(days=count - 1), today)
    if last is None:
        raise invalid_input([_issue("from", "expected to beside it: from and to name the window together")])
    if first is None:
        raise invalid_input([_issue("to", "expected from beside it: from and to name the window together")])
    read = [_day_of("from", first), _day_of("to", last)]
    issues = [item for item in read if isinstance(item, InputIssue)]
    if issues:
        raise invalid_input(issues)
    start, end = read
    assert isinstance(start, date) and isinstance(end, date)
    if end < start:
        raise invalid_input([_issue("to", "expected a day that is not before from")])
    if end > today:
        raise invalid_input([_issue("to", f"expected a day that is not after today, {today.isoformat()} in UTC")])
    window = Window(start, end)
    if window.days > MAX_WINDOW_DAYS:
        raise invalid_input([_issue("from", f"expected a window of at most {MAX_WINDOW_DAYS} days, not {window.days}")])
    return window


def nearest_rank(ordered: Sequence[int], percent: int) -> int:
    """The value at place ⌈percent/100 × n⌉ (counting from 1) of `ordered`, which is sorted and not empty."""
    place = -(-percent * len(ordered) // 100)
    return ordered[max(place, 1) - 1]


@dataclass
class _Tally:
    """The runs, tokens and durations of one day, or of the whole window."""

    ended: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDED, 0))
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0, "cached": 0})
    durations: list[int] = field(default_factory=list)

    def add(self, row: Mapping[str, Any]) -> None:
        status = row["status"]
        self.ended[status] += 1
        for kind in self.tokens:
            self.tokens[kind] += int(row[f"tokens_{kind}"] or 0)
        if status in TIMED and row["duration_ms"] is not None:
            self.durations.append(max(int(row["duration_ms"]), 0))

    def shown(self) -> dict[str, Any]:
        ordered = sorted(self.durations)
        return {
            "runs": {"total": sum(self.ended.values()), **self.ended},
            "tokens": dict(self.tokens),
            "duration_ms": ({"p50": nearest_rank(ordered, 50), "p95": nearest_rank(ordered, 95)} if ordered else None),
        }


def summarize(rows: Iterable[Mapping[str, Any]], window: Window) -> dict[str, Any]:
    """The result from the `runs` rows of ended runs that first started inside the window."""
    whole = _Tally()
    by_day = [_Tally() for _ in range(window.days)]
    by_function: dict[tuple[str, str], int] = {}
    for row in rows:
        index = (int(row["first_started_us"]) - window.start_us) // DAY_US
        if row["status"] not in ENDED or not 0 <= index < window.days:
            continue
        whole.add(row)
        by_day[index].add(row)
        key = (str(row["type"]), str(row["name"]))
        by_function[key] = by_function.get(key, 0) + 1
    ranked = sorted(by_function.items(), key=lambda item: (-item[1], item[0][0], item[0][1]))
    return {
        "days": window.days,
        **whole.shown(),
        "by_day": [
            {"day": (window.first + timedelta(days=number)).isoformat(), **tally.shown()}
            for number, tally in enumerate(by_day)
        ],
        "by_function": [{"type": kind, "name": name, "runs": runs} for (kind, name), runs in ranked],
    }


class PlaybookAnalytics:
    """Reads the analytics of a playbook from the `runs` projection."""

    def __init__(self, ledger: Ledger, clock: Callable[[], datetime] = now_utc) -> None:
        self.ledger = ledger
        self.clock = clock

    async def analytics(
        self,
        scope: PlaybookScope,
        *,
        days: int | None = None,
        first: str | None = None,
        last: str | None = None,
        definition_type: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        window = window_of(days, first, last, self.clock().astimezone(UTC).date())
        rows = await self.ledger.queries.analytics.ended_runs(
            scope.org, scope.playbook, window.start_us, window.end_us, definition_type, name
        )
        return summarize(rows, window)
