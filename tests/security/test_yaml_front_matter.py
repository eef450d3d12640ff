"""YAML anchors, aliases and merge keys are refused in every user document's front matter, at their line,
before anything is built: a few hundred bytes of aliases can stand for megabytes."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from auto_runtime.functions.computation.document import parse_document
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess
from tests.security.liveness import kept_live

ANCHORS = "Line {line}: YAML anchors and aliases are not available; write the value out where it is used"
MERGE = "Line {line}: YAML merge keys (<<) are not available; write the value out where it is used"


def _laughs(levels: int = 9) -> str:
    """The front matter lines of an input schema whose aliases double at each level (a 'billion laughs')."""
    lines = ["    $defs:", "      l0: &l0 { type: string, description: laugh }"]
    lines.extend(f"      l{n}: &l{n} {{ anyOf: [*l{n - 1}, *l{n - 1}] }}" for n in range(1, levels))
    return "\n".join(lines) + "\n"


def _details(body: dict[str, Any]) -> list[str]:
    assert all(error["pointer"] == "/source" for error in body["errors"]), body
    return [error["detail"] for error in body["errors"]]


def _save(client: httpx.Client, playbook: str, kind: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/{kind}", json={"name": "aliased", "source": source})


def test_a_billion_laughs_computation_is_refused_at_each_anchor_and_alias(client: httpx.Client) -> None:
    source = f"---\nlanguage: python\ninput:\n  schema:\n{_laughs()}---\ndef main(input):\n    return input\n"
    assert len(source) < 700
    body = problem(_save(client, new_playbook(client), "computation", source), 422, "invalid_input")
    # Line 6 holds the first anchor, each of lines 7 to 14 an anchor and two aliases: one entry per line.
    assert _details(body) == [ANCHORS.format(line=line) for line in range(6, 15)]


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("base: &b { type: string }\ninput: { schema: *b }\n", [ANCHORS.format(line=3), ANCHORS.format(line=4)]),
        ("input:\n  <<: { schema: { type: string } }\n", [MERGE.format(line=4)]),
        ("input:\n  schema:\n    properties:\n      '<<': { type: string }\n", None),
    ],
    ids=["alias", "merge-key", "quoted-key-is-plain-text"],
)
def test_computation_front_matter_refusals(client: httpx.Client, front: str, expected: list[str] | None) -> None:
    source = f"---\nlanguage: python\n{front}---\ndef main(input):\n    return input\n"
    response = _save(client, new_playbook(client), "computation", source)
    if expected is None:
        assert response.status_code == 201, response.text
        return
    body = problem(response, 422, "invalid_input")
    assert _details(body) == expected


def test_a_merge_key_is_not_merged_when_parsed() -> None:
    parsed = parse_document(
        "---\nlanguage: python\ninput:\n  <<: { schema: {} }\n---\ndef main(input):\n    return 1\n"
    )
    assert parsed == [(4, 0, MERGE.format(line=4).split(": ", 1)[1])]


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("model: &m a/b\n", [ANCHORS.format(line=2)]),
        (
            "model: a/b\ndescription: &d hello\ninput:\n  default: { x: *d }\n",
            [ANCHORS.format(line=3), ANCHORS.format(line=5)],
        ),
        ("model: a/b\nconfig:\n  <<: { temperature: 1 }\n", [MERGE.format(line=4)]),
        ("model: a/b\ninput:\n  schema:\n    type: object\n" + _laughs(4), None),
    ],
    ids=["anchor", "alias", "merge-key", "laughs"],
)
def test_reasoning_front_matter_refusals(client: httpx.Client, front: str, expected: list[str] | None) -> None:
    response = _save(client, new_playbook(client), "reasoning", f"---\n{front}---\nHi\n")
    body = problem(response, 422, "invalid_input")
    details = _details(body)
    if expected is None:
        assert details == [ANCHORS.format(line=line) for line in (7, 8, 9, 10)]
    else:
        assert details == expected


NESTED = 30_000
"""Flow collections nested this deep fill most of a 64 KiB document; PyYAML's scanner took tens of seconds to
read such a front matter to its end."""


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_deep_nesting_in_a_computation_front_matter_is_refused_at_its_line(server: ServerProcess) -> None:
    source = f"---\nlanguage: python\ninput:\n  schema: {_nested(NESTED)}\n---\ndef main(input):\n    return input\n"
    with kept_live(server), server.client() as client:
        body = problem(_save(client, new_playbook(client), "computation", source), 422, "invalid_input")
    assert _details(body) == ["Line 4: The front matter does not parse: it nests deeper than 256 levels"]


def test_deep_nesting_in_a_reasoning_front_matter_is_refused_at_its_line(server: ServerProcess) -> None:
    source = f"---\nmodel: openai/gpt-4o\nconfig: {_nested(NESTED)}\n---\nHello\n"
    with kept_live(server), server.client() as client:
        body = problem(_save(client, new_playbook(client), "reasoning", source), 422, "invalid_input")
    assert _details(body) == ["Line 3: The front matter may nest at most 72 levels"]


def test_a_schema_nested_past_64_levels_is_refused_at_save(client: httpx.Client) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"k": schema}}
    source = f"---\nlanguage: python\ninput:\n  schema: {json.dumps(schema)}\n---\ndef main(input):\n    return input\n"
    body = problem(_save(client, new_playbook(client), "computation", source), 422, "invalid_input")
    assert _details(body) == ["Line 4: input.schema is not a JSON Schema: A schema may nest at most 64 levels"]
