"""Spec, computation-format.md: the example, "Numbers" (the input), "The clock", "The record", determinism,
and the input refusals of "How a run ends", through HTTP.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.conformance.computation.documents import (
    HEAD,
    SANDBOX,
    compact,
    output_of,
    run,
    run_raw,
    saved,
)
from tests.conformance.computation.example import EXAMPLE, EXAMPLE_OUTPUT, INVOICES
from tests.conformance.helpers import fresh_id, new_playbook, pointers, problem

ECHO = HEAD + "def main(input):\n    return input\n"


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    playbook_url = new_playbook(client)
    saved(client, playbook_url, "invoice-aging", EXAMPLE)
    saved(client, playbook_url, "echo", ECHO)
    return playbook_url


def get_run(client: httpx.Client, playbook: str, response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = client.get(f"{playbook}/runs/{response.json()['run_id']}").json()
    return body


# The example


def test_the_spec_example_gives_the_spec_output(client: httpx.Client, playbook: str) -> None:
    """`run_definition` of `invoice-aging` with the example's input succeeds with the example's output, keys
    in code-point order."""
    response = run(client, playbook, "invoice-aging", INVOICES)
    assert response.status_code == 200, response.text
    assert compact(response.json()["output"]) == EXAMPLE_OUTPUT
    assert EXAMPLE_OUTPUT in response.text
    assert json.loads(EXAMPLE_OUTPUT) == get_run(client, playbook, response)["output"]


# Determinism


def test_the_same_input_gives_the_same_output_and_the_same_work(client: httpx.Client, playbook: str) -> None:
    """The same input gives the same output, and spends the same work, on every run."""
    first = run(client, playbook, "invoice-aging", INVOICES)
    second = run(client, playbook, "invoice-aging", INVOICES)
    assert first.json()["run_id"] != second.json()["run_id"]
    assert first.json()["output"] == second.json()["output"]
    records = [get_run(client, playbook, response)["record"] for response in (first, second)]
    assert records[0]["work"] == records[1]["work"] > 0


def test_work_is_the_same_for_a_program_that_sorts_matches_and_parses(client: httpx.Client, playbook: str) -> None:
    """Everything the sandbox does counts, `sorted`, `re`, `json` and allocation, the same on every run."""
    program = (
        "import re\nimport json\nimport heapq\n"
        "def main(input):\n    rows = sorted(input, key=lambda r: (-r['n'], r['k']))\n"
        "    words = [re.sub('[aeiou]', '*', r['k']) for r in rows]\n"
        "    heap = [r['n'] for r in rows]\n    heapq.heapify(heap)\n"
        "    return {'words': words, 'smallest': heapq.heappop(heap), 'again': json.loads(json.dumps(words))}\n"
    )
    name = fresh_id("busy")
    saved(client, playbook, name, HEAD + program)
    value = [{"k": f"key-{n:04d}", "n": (n * 7919) % 101} for n in range(500)]
    runs = [run(client, playbook, name, value) for _ in range(3)]
    outputs = [output_of(response) for response in runs]
    assert outputs[0] == outputs[1] == outputs[2]
    work = {get_run(client, playbook, response)["record"]["work"] for response in runs}
    assert len(work) == 1


# The record


def test_a_succeeded_run_records_language_sandbox_work_duration_and_sizes(client: httpx.Client, playbook: str) -> None:
    """`language`, `sandbox` (`06338c955b03/wasmtime-50.0.1`), `work`, `duration_ms`, `input_bytes` and
    `output_bytes` as compact JSON in UTF-8; the record stays well inside its 256 bytes."""
    value = {"name": "Zoë", "amounts": [1, 2.5], "note": None}
    response = run(client, playbook, "echo", value)
    assert output_of(response) == value
    assert "record" not in response.json()
    record = get_run(client, playbook, response)["record"]
    assert set(record) == {"language", "sandbox", "work", "duration_ms", "input_bytes", "output_bytes"}
    assert record["language"] == "python"
    assert record["sandbox"] == SANDBOX
    assert type(record["work"]) is int and record["work"] > 0
    assert type(record["duration_ms"]) is int and record["duration_ms"] >= 0
    assert record["input_bytes"] == len(compact(value).encode()) == 45
    assert record["output_bytes"] == len(compact(value).encode())
    assert len(compact(record).encode()) < 256


def test_the_output_bytes_count_the_written_output(client: httpx.Client, playbook: str) -> None:
    """`output_bytes` is the size of the output as compact JSON in UTF-8, as the runtime writes it."""
    response = run(client, playbook, "invoice-aging", INVOICES)
    record = get_run(client, playbook, response)["record"]
    assert record["output_bytes"] == len(EXAMPLE_OUTPUT.encode())
    assert record["input_bytes"] == len(compact(INVOICES).encode())


def test_the_duration_counts_from_the_runs_start_to_its_end(client: httpx.Client, playbook: str) -> None:
    """`duration_ms`: milliseconds from the run's start to its end, within the run's recorded times."""
    response = run(client, playbook, "invoice-aging", INVOICES)
    read = get_run(client, playbook, response)
    started = datetime.fromisoformat(read["started_at"])
    ended = datetime.fromisoformat(read["ended_at"])
    assert 0 <= read["record"]["duration_ms"] <= (ended - started).total_seconds() * 1000 + 1


# The input


def test_an_input_the_schema_refuses_is_invalid_input_with_pointers_under_input(
    client: httpx.Client, playbook: str
) -> None:
    """The input does not match `input.schema`: a pointer for each problem, under `/input`."""
    bad = {"invoices": [{"customer": "x", "amount_cents": -1}]}
    body = problem(run(client, playbook, "invoice-aging", bad), 422, "invalid_input")
    assert body["errors"] == [
        {"detail": "invoices, then item 1: expected the field days_overdue.", "pointer": "/input/invoices/0"},
        {
            "detail": "invoices, then item 1, then amount_cents: expected at least 0.",
            "pointer": "/input/invoices/0/amount_cents",
        },
    ]
    missing = problem(run(client, playbook, "invoice-aging", {}), 422, "invalid_input")
    assert missing["errors"] == [{"detail": "The input: expected the field invoices.", "pointer": "/input"}]


def test_an_input_nested_512_levels_runs_and_513_is_refused_at_input(client: httpx.Client, playbook: str) -> None:
    """Depth of a value: 512 levels in the input; deeper is `invalid_input` at `/input`."""
    deep: Any = []
    for _ in range(511):
        deep = [deep]
    name = fresh_id("depth")
    saved(
        client,
        playbook,
        name,
        HEAD
        + "def main(input):\n    n = 0\n    while input:\n        input = input[0]\n        n += 1\n    return n\n",
    )
    assert output_of(run(client, playbook, name, deep)) == 511
    body = problem(run(client, playbook, name, [deep]), 422, "invalid_input")
    assert pointers(body) == ["/input"]


@pytest.mark.parametrize(
    ("raw", "pointer"),
    [
        (b'{"input": {"a": [1, 1e400]}}', "/input/a/1"),
        (b'{"input": -1e400}', "/input"),
        (b'{"input": {"t": "\\ud800"}}', "/input/t"),
        (b'{"input": ["ok", "x\\udfff"]}', "/input/1"),
    ],
)
def test_a_number_too_large_for_a_double_or_a_lone_surrogate_is_refused_at_its_pointer(
    client: httpx.Client, playbook: str, raw: bytes, pointer: str
) -> None:
    """A number too large for a double (such as `1e400`) and text with a lone surrogate (`"\\ud800"`) are
    refused as `invalid_input` at their pointer."""
    body = problem(run_raw(client, playbook, "echo", raw), 422, "invalid_input")
    assert pointers(body) == [pointer]


def test_an_input_reaches_the_program_exactly(client: httpx.Client, playbook: str) -> None:
    """An integer in the input reaches the program as an `int`, exactly, whatever its size; any other
    number as the nearest `float`; floats are read exactly."""
    program = (
        "def main(input):\n    big = input['big']\n"
        "    return [type(big) is int, str(big), str(big + 1), type(input['whole']) is float,\n"
        "            input['tiny'], input['max'], input['f'] * 3, input['text'], type(input['flag']) is bool]\n"
    )
    name = fresh_id("exact")
    saved(client, playbook, name, HEAD + program)
    raw = (
        b'{"input": {"big": 1267650600228229401496703205376, "whole": 2.0, "tiny": 5e-324,'
        b' "max": 1.7976931348623157e308, "f": 0.1, "text": "\\u00e9\\ud83d\\ude00\\n", "flag": true}}'
    )
    response = run_raw(client, playbook, name, raw)
    assert output_of(response) == [
        True,
        "1267650600228229401496703205376",
        "1267650600228229401496703205377",
        True,
        5e-324,
        1.7976931348623157e308,
        0.30000000000000004,
        "é😀\n",
        True,
    ]


def test_an_input_integer_outside_the_output_range_must_leave_as_text(client: httpx.Client, playbook: str) -> None:
    """An output may only carry integers within ±9,007,199,254,740,991: a larger input integer echoed back
    cannot be written; `str(n)` can."""
    response = run_raw(client, playbook, "echo", b'{"input": [9007199254740992]}')
    body = problem(response, 409, "conflict", "unworkable")
    assert body["detail"] == "The output cannot be written as JSON: an integer outside ±9,007,199,254,740,991 at /0"
    assert output_of(run_raw(client, playbook, "echo", b'{"input": [9007199254740991]}')) == [9007199254740991]


def test_numbers_follow_the_sandboxs_rules(client: httpx.Client, playbook: str) -> None:
    """`/` gives a float; `//` and `%` floor; exact integers at any size; `round(2.675, 2)` is `2.68`."""
    program = (
        "def main(input):\n    return [7 / 7, -7 // 2, -7 % 3, str(2 ** 100), round(2.675, 2), round(2.5),\n"
        "            isinstance(True, int), True + 1, list({'b': 1, 'a': 2, 'c': 3})]\n"
    )
    name = fresh_id("numbers")
    saved(client, playbook, name, HEAD + program)
    assert output_of(run(client, playbook, name)) == [
        1.0, -4, 2, "1267650600228229401496703205376", 2.68, 2, False, 2, ["a", "c", "b"],
    ]  # fmt: skip


# The clock


def run_started_events(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    events = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
    return [event for event in events if event["type"] == "run_started"]


def epoch_ms(at: str) -> int:
    return round(datetime.fromisoformat(at).timestamp() * 1000)


CLOCK = (
    "import time\nfrom time import gmtime\n"
    "def main(input):\n    t = gmtime()\n"
    "    ns = time.time_ns()\n"
    "    return [time.time(), str(ns), '%04d-%02d-%02dT%02d:%02d:%02dZ' % t[:6], time.time() == time.time(),\n"
    "            gmtime(0)[:6]]\n"
)


def test_time_reads_the_moment_the_run_started(client: httpx.Client, playbook: str) -> None:
    """`time.time()` answers the moment the run started, the time its `run_started` event records, to the
    millisecond; `time_ns()` the same moment, a multiple of 1,000,000; `gmtime()` breaks it down in UTC."""
    name = fresh_id("clock")
    saved(client, playbook, name, HEAD + CLOCK)
    response = run(client, playbook, name)
    seconds, nanoseconds, written, steady, epoch = output_of(response)
    (started,) = run_started_events(client, playbook, response.json()["run_id"])
    at_ms = epoch_ms(started["metadata"]["at"])
    assert int(nanoseconds) == at_ms * 1_000_000
    assert round(seconds * 1000) == at_ms
    assert written == started["metadata"]["at"][:19] + "Z"
    assert steady is True
    assert epoch == [1970, 1, 1, 0, 0, 0]
    read = client.get(f"{playbook}/events/{started['id']}")
    assert read.status_code == 200 and read.json()["metadata"]["at"] == started["metadata"]["at"]


def test_a_retry_under_the_same_run_id_reads_the_new_attempts_start(client: httpx.Client, playbook: str) -> None:
    """A retry under the same `run_id` that runs again reads the new attempt's start."""
    program = "import time\ndef main(input):\n    raise ValueError(str(time.time_ns() // 1000000))\n"
    name = fresh_id("retry-clock")
    saved(client, playbook, name, HEAD + program)
    run_id = "6f1c1a2e-3b4d-4c5e-8f60-7a8b9c0d1e2f"
    details = []
    for _ in range(2):
        body = problem(run(client, playbook, name, 1, run_id=run_id), 409, "conflict", "unworkable")
        details.append(body["detail"])
    starts = run_started_events(client, playbook, run_id)
    assert len(starts) == 2
    assert details == [f"Line 6 of the program raised ValueError: {epoch_ms(e['metadata']['at'])}" for e in starts]


def test_the_program_sees_no_randomness_files_or_environment(client: httpx.Client, playbook: str) -> None:
    """The program sees its argument and nothing else: `random`, `os` and `open` cannot be reached, so two
    runs of the same input agree."""
    program = "def main(input):\n    return [hash('x'), hash(str(input)), str(id)]\n"
    name = fresh_id("nothing-else")
    response = client.post(f"{playbook}/definitions/computation", json={"name": name, "source": HEAD + program})
    problem(response, 422, "invalid_input")
    program = "def main(input):\n    return [hash('x'), hash(str(input)), [k for k in {'b': 1, 'a': 2}]]\n"
    saved(client, playbook, name, HEAD + program)
    assert output_of(run(client, playbook, name, 5)) == output_of(run(client, playbook, name, 5))


def test_the_sandbox_is_micropython_not_cpython(client: httpx.Client, playbook: str) -> None:
    """What a programmer used to CPython must know: ASCII-only case changes, code-point order, `pow` with a
    negative exponent, and the format specifications that work."""
    program = (
        "def main(input):\n    return ['Straße'.upper(), 'ÄÖ'.lower(), sorted(['b', 'a', 'Z', 'é']), pow(3, -1, 7),\n"
        "            f'{1234567:,}', f'{0.256:.1%}', 'abc' < 'abd']\n"
    )
    name = fresh_id("micropython")
    saved(client, playbook, name, HEAD + program)
    assert output_of(run(client, playbook, name)) == [
        "STRAßE",
        "ÄÖ",
        ["Z", "a", "b", "é"],
        0,
        "1,234,567",
        "25.6%",
        True,
    ]
