"""Record encoding, JSON text and `?` placeholders, shared by both stores (no store needed)."""

from __future__ import annotations

import json
import multiprocessing
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from multiprocessing.queues import Queue

import pytest

from auto_runtime.ledger import json_text, uuid7
from auto_runtime.ledger.placeholders import to_numbered
from auto_runtime.ledger.records import from_microseconds, now_microseconds, to_microseconds


@pytest.mark.parametrize(
    "value",
    ["a\x00b", "\ud800", "\udfff\ud800", "é€😀", {"k\x00": ["\ud83d"]}, [1.5, -0, 2**63, None, True]],
)
def test_json_text_round_trips_and_is_valid_utf8_without_nul(value: object) -> None:
    text = json_text.dumps(value)
    text.encode("utf-8")
    assert "\x00" not in text
    assert json_text.loads(text) == value


def test_json_text_refuses_what_json_cannot_say() -> None:
    with pytest.raises(ValueError):
        json_text.dumps(float("nan"))
    with pytest.raises(TypeError):
        json_text.dumps({1, 2})


def test_uuid7_ids_are_version_7_and_sort_by_time() -> None:
    ids = [uuid7() for _ in range(50)]
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert len(set(ids)) == 50
    assert [i[:13] for i in ids] == sorted(i[:13] for i in ids)


def test_uuid7_ids_drawn_by_threads_at_once_are_distinct_and_canonical() -> None:
    def draw() -> list[str]:
        return [uuid7() for _ in range(2_000)]

    with ThreadPoolExecutor(4) as pool:
        ids = [i for drawn in pool.map(lambda _: draw(), range(4)) for i in drawn]
    assert len(set(ids)) == len(ids) == 8_000
    parsed = [uuid.UUID(i) for i in ids]
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 and str(u) == i for u, i in zip(parsed, ids, strict=True))


def _draw_in_child(out: Queue[list[str]]) -> None:
    out.put([uuid7() for _ in range(20)])


def test_a_forked_child_draws_other_random_bits_than_its_parent() -> None:
    uuid7()  # the parent holds a block of random bytes when it forks
    context = multiprocessing.get_context("fork")
    out: Queue[list[str]] = context.Queue()
    child = context.Process(target=_draw_in_child, args=(out,))
    child.start()
    theirs = out.get()
    child.join()
    ours = [uuid7() for _ in range(20)]

    def random_bits(ids: list[str]) -> set[int]:
        return {uuid.UUID(i).int & ((1 << 62) - 1) for i in ids}

    assert not random_bits(ours) & random_bits(theirs)


@pytest.mark.parametrize("value", [{"k": [1.5, -0.0, 1e16, 2**70, None, True, "é\ud800"]}, "x" * 1000, [], 3])
def test_json_text_is_what_json_dumps_writes(value: object) -> None:
    assert json_text.dumps(value) == json_text._SURROGATE.sub(
        json_text._escape_surrogate, json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    )


@pytest.mark.parametrize("micros", [0, 1, -1, 999_999, 1_700_000_000_123_456, -86_400_000_001, 253_402_300_799_999_999])
def test_microseconds_convert_both_ways(micros: int) -> None:
    seconds, rest = divmod(micros, 1_000_000)
    moment = from_microseconds(micros)
    assert moment == datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=rest)
    assert moment.tzinfo is UTC
    assert to_microseconds(moment) == micros


def test_now_in_microseconds_is_the_clock_of_datetime_now() -> None:
    before = to_microseconds(datetime.now(UTC))
    now = now_microseconds()
    after = to_microseconds(datetime.now(UTC))
    assert before <= now <= after


def test_placeholders_are_numbered_outside_quoted_text() -> None:
    assert to_numbered("SELECT ? , ?") == "SELECT $1 , $2"
    assert to_numbered("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = 'it''s ?'") == (
        "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = 'it''s ?'"
    )
