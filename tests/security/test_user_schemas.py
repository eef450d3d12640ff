"""User JSON Schemas never make the server fetch, loop forever or backtrack: each refused at save at its
place, and validators that hold no retrieval, match with RE2 and stop within a budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import trio
from referencing.exceptions import Unresolvable

from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.function_type import Rejected, RunRequest
from auto_runtime.problems import Rejection
from auto_runtime.schema_issues import check_against_schema
from auto_runtime.user_schemas import (
    MAX_STEPS,
    NO_RETRIEVAL,
    UnusableSchema,
    UserDraft202012Validator,
    validator_for,
)
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess
from tests.security.liveness import kept_live


class _Recorder:
    """A loopback HTTP server that answers a schema to anyone and records every path it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.asked.append(self.path)
                body = json.dumps({"type": "string", "description": "fetched from the network"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/schema.json"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> _Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()
        self.thread.join()


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    with _Recorder() as running:
        yield running


def _computation(input_schema: str, output: str = "") -> str:
    return f"---\nlanguage: python\ninput:\n  schema:\n{input_schema}{output}---\ndef main(input):\n    return input\n"


def _save(client: httpx.Client, playbook: str, kind: str, source: str, name: str = "fn-under-test") -> httpx.Response:
    return client.post(f"{playbook}/definitions/{kind}", json={"name": name, "source": source})


def _details(body: dict[str, Any]) -> list[str]:
    assert all(error["pointer"] == "/source" for error in body["errors"]), body
    return [error["detail"] for error in body["errors"]]


def test_a_remote_reference_in_a_computation_schema_is_refused_at_its_line(
    client: httpx.Client, recorder: _Recorder
) -> None:
    playbook = new_playbook(client)
    source = _computation(
        f"    type: object\n    properties:\n      who:\n        $ref: {recorder.url}\n",
        "output:\n  schema:\n    $ref: file:///etc/passwd\n",
    )
    body = problem(_save(client, playbook, "computation", source), 422, "invalid_input")
    assert _details(body) == [
        f"Line 8: input.schema is not a JSON Schema: The reference {recorder.url} is not inside this schema: "
        "a reference starts with # and names a schema of the same document, and an http, https or file address "
        "is never fetched (at /properties/who/$ref)",
        "Line 11: output.schema is not a JSON Schema: The reference file:///etc/passwd is not inside this "
        "schema: a reference starts with # and names a schema of the same document, and an http, https or file "
        "address is never fetched (at /$ref)",
    ]
    assert recorder.asked == []


def test_an_id_below_the_root_and_another_dialect_are_refused(client: httpx.Client, recorder: _Recorder) -> None:
    playbook = new_playbook(client)
    source = _computation(
        "    $schema: http://json-schema.org/draft-04/schema#\n"
        "    $defs:\n"
        f"      a: {{ $id: '{recorder.url}', $ref: '#/$defs/b' }}\n"
        "      b: { type: string }\n"
        "    $ref: '#/$defs/a'\n"
    )
    body = problem(_save(client, playbook, "computation", source), 422, "invalid_input")
    assert _details(body) == [
        "Line 5: input.schema is not a JSON Schema: $schema names https://json-schema.org/draft/2020-12/schema; "
        "nothing else is read (at /$schema)",
        "Line 7: input.schema is not a JSON Schema: $id may stand only at the root: a schema is one document, "
        "and its references stay inside it (at /$defs/a/$id)",
    ]
    assert recorder.asked == []


def test_reasoning_schemas_refuse_remote_references_and_ids(client: httpx.Client, recorder: _Recorder) -> None:
    playbook = new_playbook(client)
    source = (
        "---\nmodel: a/b\ninput:\n  schema:\n    type: object\n    $defs:\n"
        f"      a: {{ $id: '{recorder.url}', $ref: '#/$defs/b' }}\n"
        "      b: { type: string }\n"
        "    properties:\n"
        "      x: { $ref: '#/$defs/a' }\n"
        f"      y: {{ $ref: '{recorder.url}' }}\n"
        "---\nHi\n"
    )
    body = problem(_save(client, playbook, "reasoning", source), 422, "invalid_input")
    assert _details(body) == [
        "Line 7, /input/schema/$defs/a/$id: $id may stand only at the root: a schema is one document, and its "
        "references stay inside it",
        "Line 11, /input/schema/properties/y/$ref: A $ref may only point to #/$defs/<name> or #/definitions/<name>",
    ]
    assert recorder.asked == []


def test_workflow_schemas_refuse_remote_references(client: httpx.Client, recorder: _Recorder) -> None:
    playbook = new_playbook(client)
    source = (
        "document: { dsl: '1.0.3', namespace: tests, name: fetcher, version: '1.0.0' }\n"
        "input:\n  schema:\n    document:\n      type: object\n"
        f"      properties: {{ who: {{ $ref: '{recorder.url}' }} }}\n"
        "output:\n  schema:\n    document: { $ref: '#/$defs/missing' }\n"
        "do: [ { a: { set: {} } } ]\n"
    )
    body = problem(_save(client, playbook, "workflow", source), 422, "invalid_input")
    details = _details(body)
    assert len(details) == 2, details
    assert details[0].startswith("Line 6, ") and "at /input/schema/document/properties/who/$ref: " in details[0]
    assert f"It is not a JSON Schema: The reference {recorder.url} is not inside this schema" in details[0]
    assert details[1].startswith("Line 9, ") and "at /output/schema/document/$ref: " in details[1]
    assert details[1].endswith(
        "It is not a JSON Schema: The reference #/$defs/missing names no schema inside this schema"
    )
    assert recorder.asked == []


def test_a_validator_given_a_remote_reference_directly_never_fetches(recorder: _Recorder) -> None:
    schema = {"type": "object", "properties": {"who": {"$ref": recorder.url}}}
    with pytest.raises(UnusableSchema, match="is never fetched"):
        validator_for(schema)
    with pytest.raises(Rejection) as refused:
        check_against_schema(schema, {"who": 1}, "/input")
    assert refused.value.reason == "conflict" and refused.value.kind == "unworkable"
    assert refused.value.detail.startswith("The input schema of this function cannot be used on this server")
    # Even the bare validator class, bypassing the rules, has nowhere to fetch from.
    bare = UserDraft202012Validator(schema, registry=NO_RETRIEVAL)
    with pytest.raises(Unresolvable):
        list(bare.iter_errors({"who": 1}))
    assert recorder.asked == []


@pytest.mark.parametrize(
    ("schema_lines", "line", "pointer", "ref"),
    [
        ("    $ref: '#'\n", 5, "/$ref", "#"),
        ("    allOf: [ { not: { $ref: '#' } } ]\n", 5, "/allOf/0/not/$ref", "#"),
        (
            "    $defs:\n      a: { anyOf: [ { $ref: '#/$defs/b' } ] }\n      b: { oneOf: [ { $ref: '#/$defs/a' } ] }\n"
            "    $ref: '#/$defs/a'\n",
            7,
            "/$defs/b/oneOf/0/$ref",
            "#/$defs/a",
        ),
        ("    $anchor: top\n    if: { $ref: '#top' }\n", 6, "/if/$ref", "#top"),
    ],
    ids=["itself", "through-allOf-not", "through-defs", "through-anchor"],
)
def test_a_reference_loop_is_refused_at_its_reference(
    client: httpx.Client, schema_lines: str, line: int, pointer: str, ref: str
) -> None:
    playbook = new_playbook(client)
    body = problem(_save(client, playbook, "computation", _computation(schema_lines)), 422, "invalid_input")
    assert _details(body) == [
        f"Line {line}: input.schema is not a JSON Schema: The reference {ref} reaches itself without a property "
        f"or item in between (at {pointer})"
    ]


def test_a_recursion_through_items_is_kept(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    run_url = f"{playbook}/definitions/computation/fn-under-test/run"
    source = _computation("    type: array\n    items: { $ref: '#' }\n")
    assert _save(client, playbook, "computation", source).status_code == 201
    ran = client.post(run_url, json={"input": [[[]], [1]]})
    body = problem(ran, 422, "invalid_input")
    assert [error["pointer"] for error in body["errors"]] == ["/input/1/0"]


def test_a_workflow_loop_is_refused(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = (
        "document: { dsl: '1.0.3', namespace: tests, name: loop, version: '1.0.0' }\n"
        "input:\n  schema:\n    document: { $ref: '#' }\n"
        "do: [ { a: { set: {} } } ]\n"
    )
    details = _details(problem(_save(client, playbook, "workflow", source), 422, "invalid_input"))
    assert len(details) == 1 and details[0].startswith("Line 4, ")
    assert details[0].endswith(
        "at /input/schema/document/$ref: It is not a JSON Schema: The reference # reaches itself without a "
        "property or item in between"
    )


def test_a_schema_applying_too_many_subschemas_to_one_value_is_refused(client: httpx.Client) -> None:
    definitions = "".join(
        f"      a{i}: {{ allOf: [ {{ $ref: '#/$defs/a{i + 1}' }}, {{ $ref: '#/$defs/a{i + 1}' }} ] }}\n"
        for i in range(20)
    )
    source = _computation(f"    $defs:\n{definitions}      a20: {{ type: integer }}\n    $ref: '#/$defs/a0'\n")
    playbook = new_playbook(client)
    body = problem(_save(client, playbook, "computation", source), 422, "invalid_input")
    assert _details(body) == [
        "Line 4: input.schema is not a JSON Schema: More than 10,000 subschemas would apply to one value through "
        "references and allOf, anyOf, oneOf, not, if, then, else and dependentSchemas"
    ]


def test_patterns_are_matched_in_linear_time(client: httpx.Client, server: ServerProcess) -> None:
    playbook = new_playbook(client)
    run_url = f"{playbook}/definitions/computation/fn-under-test/run"
    source = _computation(
        "    type: object\n"
        "    properties: { word: { type: string, pattern: '^(a|a)*$' } }\n"
        "    patternProperties: { '^(b|b)*$': { type: integer } }\n"
        "    additionalProperties: false\n"
    )
    assert _save(client, playbook, "computation", source).status_code == 201
    attack = "a" * 100_000 + "!"
    key = "b" * 50_000 + "!"
    with kept_live(server):
        ran = client.post(
            run_url,
            json={"input": {"word": attack, key: 1}},
            timeout=60,
        )
    body = problem(ran, 422, "invalid_input")
    unexpected, word = body["errors"]
    assert unexpected["pointer"].startswith("/input/bbbb") and unexpected["detail"].endswith("…")
    assert word == {"pointer": "/input/word", "detail": "word: expected text matching the pattern ^(a|a)*$."}
    fits = client.post(run_url, json={"input": {"word": "aaaa", "bbb": 2}})
    assert fits.status_code == 200, fits.text


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("^(?=a)b", "invalid perl operator: (?="), ("(a)\\\\1", "invalid escape sequence: \\1")],
    ids=["lookahead", "backreference"],
)
def test_a_pattern_re2_cannot_express_is_refused_at_its_line(client: httpx.Client, pattern: str, why: str) -> None:
    playbook = new_playbook(client)
    source = _computation(f'    type: object\n    properties:\n      x:\n        pattern: "{pattern}"\n')
    body = problem(_save(client, playbook, "computation", source), 422, "invalid_input")
    written = pattern.replace("\\\\", "\\")
    assert _details(body) == [
        f"Line 8: input.schema is not a JSON Schema: The pattern {written} is not available: patterns are matched "
        f"in linear time (RE2), which has no lookaround, backreference or \\Z ({why}) (at /properties/x/pattern)"
    ]


@pytest.mark.slow(seconds=10)
def test_branches_recursing_through_items_stop_within_the_budget(client: httpx.Client, server: ServerProcess) -> None:
    """Failing anyOf branches are all explored, so each level doubles the work; the check stops at its budget."""
    playbook = new_playbook(client)
    run_url = f"{playbook}/definitions/computation/fn-under-test/run"
    source = _computation(
        "    anyOf:\n"
        "      - { type: array, minItems: 2, items: { $ref: '#' } }\n"
        "      - { type: array, items: { $ref: '#' } }\n"
        "      - { type: integer }\n"
    )
    assert _save(client, playbook, "computation", source).status_code == 201
    deep: Any = "x"
    for _ in range(60):
        deep = [deep]
    with kept_live(server):
        ran = client.post(run_url, json={"input": deep}, timeout=120)
    body = problem(ran, 422, "invalid_input")
    assert body["errors"] == [
        {
            "pointer": "/input",
            "detail": f"The input: not checked against its schema, since checking a value took more than "
            f"{MAX_STEPS:,} steps.",
        }
    ]


def test_a_value_too_deep_for_a_recursive_schema_is_not_checked_rather_than_a_500(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    run_url = f"{playbook}/definitions/computation/fn-under-test/run"
    source = _computation("    type: array\n    items: { $ref: '#' }\n")
    assert _save(client, playbook, "computation", source).status_code == 201
    deep: Any = []
    for _ in range(500):
        deep = [deep]
    ran = client.post(run_url, json={"input": deep})
    body = problem(ran, 422, "invalid_input")
    assert body["errors"] == [
        {
            "pointer": "/input",
            "detail": "The input: not checked against its schema, since the value nests too deep below a recursive "
            "schema to be checked.",
        }
    ]


def test_unique_items_over_a_long_list_is_linear(client: httpx.Client, server: ServerProcess) -> None:
    playbook = new_playbook(client)
    run_url = f"{playbook}/definitions/computation/fn-under-test/run"
    assert _save(client, playbook, "computation", _computation("    uniqueItems: true\n")).status_code == 201
    distinct = [{"n": i} for i in range(20_000)]
    with kept_live(server):
        fine = client.post(run_url, json={"input": distinct}, timeout=60)
        twice = client.post(run_url, json={"input": [*distinct, {"n": 7.0}]}, timeout=60)
    assert fine.status_code == 200, fine.text[:300]
    body = problem(twice, 422, "invalid_input")
    assert body["errors"] == [{"pointer": "/input", "detail": "The input: expected items that are all different."}]


def test_a_computation_saved_before_the_rules_ends_its_runs_unworkable(recorder: _Recorder) -> None:
    """A definition saved by an older server with a remote reference: its run ends `conflict`, `unworkable`,
    in the words reasoning uses for a document that no longer parses; nothing is fetched, nothing breaks."""
    source = _computation(f"    $ref: {recorder.url}\n")
    kind = ComputationType(engine=None, pool=None, checkers=None)  # type: ignore[arg-type]
    request = RunRequest(
        org="acme",
        playbook="old",
        run_id="0" * 32,
        definition_type="computation",
        name="fn-under-test",
        version=1,
        source=source,
        input="anything",
        started_at=datetime.now(UTC),
        caller_id="local",
    )
    ending = trio.run(kind.run, request)
    assert isinstance(ending, Rejected)
    assert ending.rejection.reason == "conflict" and ending.rejection.kind == "unworkable"
    assert ending.rejection.detail.startswith(
        "The saved document of this function no longer parses on this server; update it. Line 5: input.schema is "
        f"not a JSON Schema: The reference {recorder.url} is not inside this schema"
    )
    assert recorder.asked == []


def test_a_schema_holds_at_most_200_patterns(client: httpx.Client) -> None:
    fields = "".join(f"      f{i}: {{ pattern: 'a{{{i % 50 + 1}}}' }}\n" for i in range(201))
    source = _computation(f"    properties:\n{fields}")
    body = problem(_save(client, new_playbook(client), "computation", source), 422, "invalid_input")
    assert _details(body) == [
        "Line 206: input.schema is not a JSON Schema: A schema may hold at most 200 patterns "
        "(at /properties/f200/pattern)"
    ]
