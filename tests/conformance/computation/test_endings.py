"""Spec, computation-format.md: "How a run ends", "The output", "Numbers" and "Bounds", through HTTP.

Each ending is checked exactly: status, `reason`, `kind` and `detail` of the problem document, and
`get_run` and `list_runs` for the kind. The endings that take 10 seconds are in `test_workers.py`.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conformance.computation.documents import HEAD, RUNS_FOREVER, document, output_of, run, saved
from tests.conformance.helpers import fresh_id, new_playbook, problem

NOT_JSON = "The output cannot be written as JSON: "
TOO_LARGE = "The output is larger than the 1,048,320 bytes of JSON a run may return"


def run_program(
    client: httpx.Client, playbook: str, program: str, value: object = None, front: str = ""
) -> httpx.Response:
    """Save `program` (after `HEAD`, or after `front` when given) under a fresh name and run it once."""
    name = fresh_id("fn")
    saved(client, playbook, name, document(program, front) if front else HEAD + program)
    return run(client, playbook, name, value)


def unworkable(response: httpx.Response) -> str:
    """The run ended `conflict` (409) with the kind `unworkable`, and no `Retry-After`: its detail."""
    body = problem(response, 409, "conflict", "unworkable")
    assert "retry-after" not in response.headers
    detail: str = body["detail"]
    return detail


# The program raised


def test_a_program_that_raises_names_the_line_type_and_text(client: httpx.Client, playbook: str) -> None:
    """`Line N of the program raised T: M`, N the document line of the innermost frame of the program."""
    program = "def main(input):\n    if not input:\n        raise ValueError('no invoices')\n    return 1\n"
    assert unworkable(run_program(client, playbook, program, [])) == (
        "Line 6 of the program raised ValueError: no invoices"
    )


def test_the_innermost_program_frame_is_the_line_that_called(client: httpx.Client, playbook: str) -> None:
    """For an error raised inside `int("x")` or `sorted(...)`, the line that called it; in a helper, the
    helper's line."""
    program = "def parse(text):\n    return int(text)\n\ndef main(input):\n    return parse(input)\n"
    assert unworkable(run_program(client, playbook, program, "x")) == (
        "Line 5 of the program raised ValueError: invalid syntax for integer with base 10: 'x'"
    )
    program = "def main(input):\n    return sorted([1, 'a'])\n"
    detail = unworkable(run_program(client, playbook, program))
    assert detail.startswith("Line 5 of the program raised TypeError")


def test_exception_texts_are_the_sandboxs(client: httpx.Client, playbook: str) -> None:
    """`KeyError: n` where CPython writes `KeyError: 'n'`; `ZeroDivisionError: divide by zero`."""
    assert unworkable(run_program(client, playbook, "def main(input):\n    return input['n']\n", {})) == (
        "Line 5 of the program raised KeyError: n"
    )
    assert unworkable(run_program(client, playbook, "def main(input):\n    return 1 // input\n", 0)) == (
        "Line 5 of the program raised ZeroDivisionError: divide by zero"
    )


def test_an_empty_message_ends_the_detail_at_the_type(client: httpx.Client, playbook: str) -> None:
    """When M is empty the detail ends at T."""
    assert unworkable(run_program(client, playbook, "def main(input):\n    raise KeyError\n")) == (
        "Line 5 of the program raised KeyError"
    )
    assert unworkable(run_program(client, playbook, "def main(input):\n    raise ValueError('')\n")) == (
        "Line 5 of the program raised ValueError"
    )


def test_the_message_is_cut_at_1024_bytes_of_utf8(client: httpx.Client, playbook: str) -> None:
    """M is cut at 1,024 bytes of UTF-8 and marked with `…`."""
    program = "def main(input):\n    raise ValueError('é' * 600)\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 5 of the program raised ValueError: " + "é" * 512 + "…"
    )
    program = "def main(input):\n    raise ValueError('x' * 1024)\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 5 of the program raised ValueError: " + "x" * 1024
    )


def test_top_level_arithmetic_that_raises_names_its_line(client: httpx.Client, playbook: str) -> None:
    """A constant's arithmetic runs when the program loads: its error is the program's."""
    program = "RATE = 1\nBROKEN = 7 // 0\ndef main(input):\n    return BROKEN\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 5 of the program raised ZeroDivisionError: divide by zero"
    )


def test_recursion_stops_at_the_sandboxs_limit(client: httpx.Client, playbook: str) -> None:
    """About 150 nested calls give `RuntimeError: maximum recursion depth exceeded`, which the program may
    catch; otherwise `conflict`, `unworkable`."""
    program = "def down(n):\n    return down(n + 1)\n\ndef main(input):\n    return down(0)\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 5 of the program raised RuntimeError: maximum recursion depth exceeded"
    )
    caught = (
        "def depth(n):\n    try:\n        return depth(n + 1)\n    except RuntimeError:\n        return n\n\n"
        "def main(input):\n    return depth(0)\n"
    )
    first = output_of(run_program(client, playbook, caught))
    assert 130 <= first <= 170
    assert output_of(run_program(client, playbook, caught)) == first


# Work and memory


def test_a_program_that_uses_up_its_work(client: httpx.Client, playbook: str) -> None:
    """`The program used up its 10,000,000,000 units of work and was stopped`."""
    assert unworkable(run_program(client, playbook, RUNS_FOREVER.removeprefix(HEAD))) == (
        "The program used up its 10,000,000,000 units of work and was stopped"
    )


def test_a_program_that_runs_out_of_memory(client: httpx.Client, playbook: str) -> None:
    """An uncaught `MemoryError`: `Line N of the program ran out of memory: a run's heap holds 240 MiB, and
    nothing is freed during a run`."""
    program = "def main(input):\n    kept = []\n    while True:\n        kept.append(bytearray(20000000))\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 7 of the program ran out of memory: a run's heap holds 240 MiB, and nothing is freed during a run"
    )


def test_nothing_is_freed_during_a_run(client: httpx.Client, playbook: str) -> None:
    """Everything a run allocates counts, freed or not: 30 buffers of 10 MB, each dropped at once, fill 240 MiB."""
    program = "def main(input):\n    for i in range(30):\n        bytearray(10000000)\n    return 1\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 6 of the program ran out of memory: a run's heap holds 240 MiB, and nothing is freed during a run"
    )
    fits = "def main(input):\n    for i in range(10):\n        bytearray(10000000)\n    return 1\n"
    assert output_of(run_program(client, playbook, fits)) == 1


def test_a_program_may_catch_memory_error(client: httpx.Client, playbook: str) -> None:
    """A full heap raises a clean `MemoryError`; only an uncaught one ends the run."""
    program = (
        "def main(input):\n    kept = []\n    try:\n        while True:\n            kept.append(bytearray(20000000))\n"
        "    except MemoryError:\n        return len(kept) > 5\n"
    )
    assert output_of(run_program(client, playbook, program)) is True


def test_the_heap_runs_out_while_the_output_is_written(client: httpx.Client, playbook: str) -> None:
    """`The output could not be written within the run's heap of 240 MiB`."""
    program = (
        "def main(input):\n    out = list(range(300000))\n    kept = []\n"
        "    for size in (20000000, 1000000, 100000, 10000, 1000):\n        try:\n            while True:\n"
        "                kept.append(bytearray(size))\n"
        "        except MemoryError:\n            pass\n    return out\n"
    )
    assert unworkable(run_program(client, playbook, program)) == (
        "The output could not be written within the run's heap of 240 MiB"
    )


# The output as JSON


def test_the_output_keys_come_out_in_code_point_order(client: httpx.Client, playbook: str) -> None:
    """A dict's members in the code-point order of their keys; an `OrderedDict`'s in its own order."""
    program = (
        "from collections import OrderedDict\n"
        "def main(input):\n    plain = {'b': 1, 'a': 2, 'é': 3, 'Z': 4, 'aa': 5}\n"
        "    kept = OrderedDict()\n    kept['z'] = 1\n    kept['a'] = 2\n    return {'plain': plain, 'kept': kept}\n"
    )
    response = run_program(client, playbook, program)
    assert response.status_code == 200
    assert response.text.find('"kept":{"z":1,"a":2}') > 0
    assert '"plain":{"Z":4,"a":2,"aa":5,"b":1,"é":3}' in response.text
    assert response.text.find('"kept"') < response.text.find('"plain"')


def test_python_values_and_their_json(client: httpx.Client, playbook: str) -> None:
    """Lists and tuples are arrays; `True`, `False`, `None`; integers to 2^53 − 1; floats written shortest."""
    program = (
        "def main(input):\n    return [(1, 2), True, False, None, 9007199254740991, -9007199254740991,\n"
        "            0.1 + 0.2, 1e16, -0.0, 5e-324, 1.7976931348623157e308, 7 / 2, -7 // 2, -7 % 3, 2.0,\n"
        "            'line\\nbreak\\u0001', 'é😀', str(2 ** 100)]\n"
    )
    response = run_program(client, playbook, program)
    assert response.status_code == 200, response.text
    assert output_of(response) == [
        [1, 2], True, False, None, 9007199254740991, -9007199254740991,
        0.30000000000000004, 1e16, -0.0, 5e-324, 1.7976931348623157e308, 3.5, -4, 2, 2.0,
        "line\nbreak\u0001", "é😀", "1267650600228229401496703205376",
    ]  # fmt: skip
    assert "0.30000000000000004,1e+16,-0.0,5e-324,1.7976931348623157e+308,3.5,-4,2,2.0" in response.text


@pytest.mark.parametrize(
    ("expression", "words", "place"),
    [
        ("{'lines': [{'tags': {'a'}}]}", "a value of type set", "/lines/0/tags"),
        ("[frozenset()]", "a value of type frozenset", "/0"),
        ("{'raw': b'x'}", "a value of type bytes", "/raw"),
        ("{'buf': bytearray(1)}", "a value of type bytearray", "/buf"),
        ("[1, (x for x in input)]", "a value of type generator", "/1"),
        ("{'f': main}", "a value of type function", "/f"),
        ("complex(1, 2)", "a value of type complex", "the top"),
        ("{'a': {1: 2}}", "a key that is not text", "/a"),
        ("{'a': [0, float('nan')]}", "a float that is not finite", "/a/1"),
        ("[float('inf')]", "a float that is not finite", "/0"),
        ("{'n': 2 ** 53}", "an integer outside ±9,007,199,254,740,991", "/n"),
        ("[-(2 ** 53)]", "an integer outside ±9,007,199,254,740,991", "/0"),
        ("{'t': chr(0xD800)}", "text that is not valid Unicode", "/t"),
        ("{'a/b': {'c~d': [set()]}}", "a value of type set", "/a~1b/c~0d/0"),
    ],
)
def test_an_output_json_cannot_write(
    client: httpx.Client, playbook: str, expression: str, words: str, place: str
) -> None:
    """`The output cannot be written as JSON: W at P`, P the JSON Pointer of the place or `the top`."""
    response = run_program(client, playbook, f"def main(input):\n    return {expression}\n", [1])
    assert unworkable(response) == f"{NOT_JSON}{words} at {place}"


def test_a_subclass_is_not_written(client: httpx.Client, playbook: str) -> None:
    """A `namedtuple` or any other subclass of the types above but `OrderedDict` cannot be written."""
    program = (
        "from collections import namedtuple\n"
        "def main(input):\n    Point = namedtuple('Point', ('x', 'y'))\n    return {'p': Point(1, 2)}\n"
    )
    assert unworkable(run_program(client, playbook, program)) == f"{NOT_JSON}a value of type Point at /p"
    program = "def main(input):\n    class Items(list):\n        pass\n    return [Items()]\n"
    assert unworkable(run_program(client, playbook, program)) == f"{NOT_JSON}a value of type Items at /0"


def test_a_container_that_contains_itself_is_named_where_it_appears_again(client: httpx.Client, playbook: str) -> None:
    """For a container that contains itself, the place where it appears again."""
    program = "def main(input):\n    a = [1]\n    a.append(a)\n    return {'a': a}\n"
    assert unworkable(run_program(client, playbook, program)) == f"{NOT_JSON}a container that contains itself at /a/1"
    program = "def main(input):\n    d = {}\n    d['self'] = [d]\n    return d\n"
    assert unworkable(run_program(client, playbook, program)) == (
        f"{NOT_JSON}a container that contains itself at /self/0"
    )
    shared = "def main(input):\n    row = [1]\n    return [row, row, {'r': row}]\n"
    assert output_of(run_program(client, playbook, shared)) == [[1], [1], {"r": [1]}]


def test_the_first_problem_in_writing_order_is_named(client: httpx.Client, playbook: str) -> None:
    """Depth-first in writing order: array items by index, members in key order, a container's own keys
    before its members."""
    program = "def main(input):\n    return {'b': {1}, 'a': [0, b'x']}\n"
    assert unworkable(run_program(client, playbook, program)) == f"{NOT_JSON}a value of type bytes at /a/1"
    program = "def main(input):\n    return {'a': {2}, 1: 'key'}\n"
    assert unworkable(run_program(client, playbook, program)) == f"{NOT_JSON}a key that is not text at the top"


def test_an_output_nested_512_levels_is_written_and_513_is_not(client: httpx.Client, playbook: str) -> None:
    """`[]` is 1 level, `[[1]]` is 2; deeper than 512: `it nests deeper than 512 levels at P`."""
    program = "def main(input):\n    v = []\n    for i in range(input):\n        v = [v]\n    return v\n"
    name = fresh_id("deep")
    saved(client, playbook, name, HEAD + program)
    response = run(client, playbook, name, 511)
    assert response.status_code == 200, response.text
    assert response.json()["output"] is not None
    assert unworkable(run(client, playbook, name, 512)) == (
        f"{NOT_JSON}it nests deeper than 512 levels at " + "/0" * 512
    )
    wrapped = "def main(input):\n    v = []\n    for i in range(600):\n        v = [v]\n    return {'v': v}\n"
    assert unworkable(run_program(client, playbook, wrapped)) == (
        f"{NOT_JSON}it nests deeper than 512 levels at /v" + "/0" * 511
    )


def test_the_output_may_take_1048320_bytes_and_not_one_more(client: httpx.Client, playbook: str) -> None:
    """A text of 1,048,318 characters `x` is 1,048,320 bytes with its quotes and fits; one more does not."""
    name = fresh_id("large")
    saved(client, playbook, name, HEAD + "def main(input):\n    return 'x' * input\n")
    fits = run(client, playbook, name, 1_048_318)
    assert output_of(fits) == "x" * 1_048_318
    record = client.get(f"{fits.request.url.path.rsplit('/definitions', 1)[0]}/runs/{fits.json()['run_id']}")
    assert record.json()["record"]["output_bytes"] == 1_048_320
    assert unworkable(run(client, playbook, name, 1_048_319)) == TOO_LARGE


def test_the_size_counts_utf8_and_escapes(client: httpx.Client, playbook: str) -> None:
    """Non-ASCII characters written as themselves (2 bytes for `é`), control characters escaped (`\\n` is 2)."""
    name = fresh_id("sized")
    saved(client, playbook, name, HEAD + "def main(input):\n    return input[0] * input[1]\n")
    assert output_of(run(client, playbook, name, ["é", 524_159])) == "é" * 524_159
    assert unworkable(run(client, playbook, name, ["é", 524_160])) == TOO_LARGE
    assert output_of(run(client, playbook, name, ["\n", 524_159])) == "\n" * 524_159
    assert unworkable(run(client, playbook, name, ["\n", 524_160])) == TOO_LARGE


def test_the_size_is_checked_as_the_output_is_written(client: httpx.Client, playbook: str) -> None:
    """A value whose text passes the bound before the walk reaches a problem is reported as too large."""
    program = "def main(input):\n    big = 'x' * 1100000\n    return [big, {1}] if input else [{1}, big]\n"
    name = fresh_id("order")
    saved(client, playbook, name, HEAD + program)
    assert unworkable(run(client, playbook, name, True)) == TOO_LARGE
    assert unworkable(run(client, playbook, name, False)) == f"{NOT_JSON}a value of type set at /0"


def test_the_output_is_never_the_sandboxs_json_dumps(client: httpx.Client, playbook: str) -> None:
    """The runtime writes the output in one pass, linear in its size: a large output of many small values
    written within the run, where `json.dumps` in the sandbox would grow with the square of the size."""
    program = "def main(input):\n    return [{'n': i, 't': 'v'} for i in range(40000)]\n"
    output = output_of(run_program(client, playbook, program))
    assert len(output) == 40000 and output[-1] == {"n": 39999, "t": "v"}


# The output schema and shape


def test_an_output_the_schema_refuses_names_the_first_three_issues(client: httpx.Client, playbook: str) -> None:
    """`The output does not match the output schema: ` and the first three issues, with `the output` in
    place of `the input`."""
    front = "output:\n  schema:\n    type: object\n    required: [a, b, c, d]\n"
    response = run_program(client, playbook, "def main(input):\n    return {}\n", front=front)
    assert unworkable(response) == (
        "The output does not match the output schema: The output: expected the field a. "
        "The output: expected the field b. The output: expected the field c."
    )


def test_an_output_schema_issue_names_its_field(client: httpx.Client, playbook: str) -> None:
    """The issues are worded as the HTTP reference words input issues: the field, then the rule it broke."""
    front = (
        "output:\n  schema:\n    type: object\n    properties:\n"
        "      total_cents: { type: integer, description: The total }\n"
    )
    detail = unworkable(
        run_program(client, playbook, "def main(input):\n    return {'total_cents': 'x'}\n", front=front)
    )
    assert detail.startswith("The output does not match the output schema: total_cents, The total: ")


def test_an_output_the_schema_accepts_succeeds(client: httpx.Client, playbook: str) -> None:
    """`succeeded`: the output is JSON within its size and matches the output schema."""
    front = "output:\n  schema:\n    type: array\n    items: { type: integer }\n"
    assert output_of(run_program(client, playbook, "def main(input):\n    return [1, 2]\n", front=front)) == [1, 2]


def test_an_output_shape_must_pass_its_schema_and_its_rules(client: httpx.Client, playbook: str) -> None:
    """`output.shape`: the output must pass the shape's schema and its own rules, else `conflict`, `unworkable`."""
    front = "output:\n  shape: series\n"
    good = "{'period': 'quarter', 'lines': [{'name': 'plan', 'points': [{'period': '2026-Q1', 'value': 1}]}]}"
    response = run_program(client, playbook, f"def main(input):\n    return {good}\n", front=front)
    assert output_of(response)["period"] == "quarter"
    assert response.json()["output_shape"] == "series"
    detail = unworkable(run_program(client, playbook, "def main(input):\n    return {'lines': []}\n", front=front))
    assert detail.startswith("The output does not match the output schema: ")
    bad = "{'period': 'day', 'lines': [{'name': 'plan', 'points': [{'period': '2026-02-30', 'value': 1}]}]}"
    unworkable(run_program(client, playbook, f"def main(input):\n    return {bad}\n", front=front))


# Where the kind shows


def test_get_run_and_list_runs_show_the_kind(client: httpx.Client) -> None:
    """`get_run` shows the `kind` on the rejection, and `list_runs` in the listing."""
    playbook = new_playbook(client)
    name = fresh_id("fails")
    saved(client, playbook, name, HEAD + "def main(input):\n    raise ValueError('no invoices')\n")
    response = run(client, playbook, name, {})
    detail = unworkable(response)
    runs: list[dict[str, Any]] = client.get(f"{playbook}/runs", params={"name": name}).json()["runs"]
    assert runs[0]["rejection"] == {"reason": "conflict", "kind": "unworkable"}
    read = client.get(f"{playbook}/runs/{runs[0]['run_id']}").json()
    assert read["status"] == "rejected"
    assert read["rejection"] == {"reason": "conflict", "kind": "unworkable", "detail": detail}


def test_a_conflict_ending_is_deterministic(client: httpx.Client, playbook: str) -> None:
    """The same program, input and sandbox give the same `conflict` ending again."""
    name = fresh_id("again")
    saved(client, playbook, name, HEAD + "def main(input):\n    return {'s': {input}}\n")
    first = unworkable(run(client, playbook, name, 1))
    assert unworkable(run(client, playbook, name, 1)) == first == f"{NOT_JSON}a value of type set at /s"
