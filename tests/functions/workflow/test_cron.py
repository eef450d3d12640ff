"""Cron expressions and `every` periods (spec 10): parsing, refusals and the next due time, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from auto_runtime.functions.workflow.cron import NEVER_DUE, NOT_FIVE_FIELDS, Cron, every_next_due, parse_cron


def cron(expression: str) -> Cron:
    parsed = parse_cron(expression)
    assert isinstance(parsed, Cron), parsed
    return parsed


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "after", "due"),
    [
        ("0 6 1 * *", at(2026, 9, 30, 12, 0), at(2026, 10, 1, 6, 0)),
        ("*/15 * * * *", at(2026, 1, 1, 0, 0), at(2026, 1, 1, 0, 15)),
        ("30 9 * * mon-fri", at(2026, 11, 27, 10, 0), at(2026, 11, 30, 9, 30)),
        ("0 0 29 feb *", at(2026, 3, 1, 0, 0), at(2028, 2, 29, 0, 0)),
        ("0 0 13 * 5", at(2026, 11, 1, 0, 0), at(2026, 11, 6, 0, 0)),
        ("0 12 * * 7", at(2026, 11, 30, 0, 0), at(2026, 12, 6, 12, 0)),
        ("5,10 1-2 * jan,dec *", at(2026, 12, 31, 2, 10), at(2027, 1, 1, 1, 5)),
    ],
)
def test_the_next_due_minute(expression: str, after: datetime, due: datetime) -> None:
    assert cron(expression).next_due(after) == due


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 0 * *", NOT_FIVE_FIELDS),
        ("0 0 * * * *", NOT_FIVE_FIELDS),
        ("0 0 31 4,6,9,11 *", NEVER_DUE),
        ("0 0 30 2 *", NEVER_DUE),
        ("60 * * * *", "The minute field '60' is not a cron field of values from 0 to 59"),
        ("* * * * 8", "The day of week field '8' is not a cron field of values from 0 to 7"),
        ("*/0 * * * *", "The minute field '*/0' is not a cron field of values from 0 to 59"),
        ("5-1 * * * *", "The minute field '5-1' is not a cron field of values from 0 to 59"),
    ],
)
def test_refused_expressions(expression: str, words: str) -> None:
    assert parse_cron(expression) == words


@pytest.mark.parametrize(
    "expression",
    [
        "0 0 L * *",
        "0 0 * * 5L",
        "0 0 * * 1#2",
        "0 0 15W * *",
        "0 0 ? * *",
        "@daily",
        "0 0 * * Monday",
        "0 0 ,1 * *",
        "0 0 1- * *",
        "0 0 +1 * *",
        "0 0 \u0661 * *",
        "*/\u0661 * * * *",
        "\u00b2 * * * *",
    ],
)
def test_forms_the_page_does_not_give_are_refused(expression: str) -> None:
    """Spec 10: numbers, `*`, lists, ranges, steps, three-letter names; no Quartz extension, no macro, and numbers
    in ASCII digits only."""
    assert not isinstance(parse_cron(expression), Cron)


@pytest.mark.parametrize(
    ("expression", "after", "due"),
    [
        ("5/15 * * * *", at(2026, 1, 1, 0, 6), at(2026, 1, 1, 0, 20)),
        ("0 0 */2 * 1", at(2026, 1, 1), at(2026, 1, 5)),
        ("0 0 1-10/3 * *", at(2026, 1, 2), at(2026, 1, 4)),
        ("0 0 * * 7-7", at(2026, 1, 1), at(2026, 1, 4)),
        ("0 0 * * 0-7/2", at(2026, 1, 1), at(2026, 1, 3)),
        ("0 0 * * MON", at(2026, 1, 1), at(2026, 1, 5)),
        ("0 0 * JAN *", at(2026, 2, 1), at(2027, 1, 1)),
        ("0 0 1,* * *", at(2026, 1, 1), at(2026, 1, 2)),
        ("0-59/60 * * * *", at(2026, 1, 1, 0, 30), at(2026, 1, 1, 1, 0)),
        ("00 00 * * *", at(2026, 1, 1), at(2026, 1, 2)),
    ],
)
def test_edge_forms_of_the_page(expression: str, after: datetime, due: datetime) -> None:
    """A step on a single value runs to the field's end; `*/2` in day of month is not a restriction (it starts
    with `*`), so with a day of week both must match; names in any case."""
    assert cron(expression).next_due(after) == due


def test_both_day_fields_restricted_either_is_due() -> None:
    parsed = cron("0 0 30 2 1")
    assert parsed.next_due(at(2026, 1, 1)) == at(2026, 2, 2)


def test_every_counts_whole_periods_from_its_anchor() -> None:
    assert every_next_due(1_000, 60_000, 500) == 61_000
    assert every_next_due(1_000, 60_000, 1_000) == 61_000
    assert every_next_due(1_000, 60_000, 61_000) == 121_000
    assert every_next_due(1_000, 60_000, 120_999) == 121_000
