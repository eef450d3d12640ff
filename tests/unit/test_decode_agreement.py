"""The strict model path of `decode_input` agrees with the checked path (the JSON Schema, then the lax model) on
every operation of the catalog: the same typed input, or the same refusal, for a set of tricky inputs built from
each operation's schema. And the strict model accepts nothing its schema refuses, except where `SCHEMA_FIRST`
says so, which the same inputs show is needed."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import pytest

from auto_runtime.guides import load_guides
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.decode import (
    SCHEMA_FIRST,
    OperationInputValidator,
    checked_decode,
    decode_input,
    input_issues,
    keeps_both_rules,
)
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.problems import Rejection

RUN_ID = "0b5c3e9a-4f1d-4c8e-9a7b-2d6f1e3c5a90"
DEEP = 2_000
"""Nesting past the JSON encoder's recursion, which the strict path leaves to the checked one."""


def _deep_list(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


SCALARS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    7,
    5.0,
    1.5,
    100,
    101,
    10**100,
    math.inf,
    -math.inf,
    "",
    " ",
    "\t\n",
    "\x1c",
    "\x1c\x1d\x1e\x1f",
    " \x1f x",
    "\x85",
    "\u3000",
    "abc",
    "abc\n",
    "bench",
    "Bench",
    "sales-2",
    "Sales",
    "\ud800",
    "a\udfff b",
    "\U0001f600",
    "x" * 49,
    "x" * 257,
    "x" * 1025,
    "x" * 2001,
    "7",
    "true",
    "asc",
    "desc",
    "started",
    "computation",
    "workflow",
    "reasoning",
    "anthropic",
    "Anthropic",
    "2026-09-01",
    "2026-02-30",
    "no\x00nul",
    "line\x7f",
    RUN_ID,
    RUN_ID.upper(),
    RUN_ID + "\n",
    "get-started",
    "mcp",
    "none",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
)
CONTAINERS: tuple[Any, ...] = (
    [],
    {},
    [1, "a", None],
    {"a": None, "b": [True]},
    {"n": math.inf},
    ["\ud800"],
    {"\ud800": 1},
    _deep_list(DEEP),
    {"type": "com.acme.approved"},
    {"source": "/a", "type": "t", "extra": None},
)
EXTRA_FIELDS = ("from_", "unknown", "org", "")


@cache
def catalog() -> Catalog:
    return build_catalog(load_guides())


def _valid_for(schema: Mapping[str, Any]) -> Any:
    """A value that fits `schema` (a property's schema), built or picked from the candidates."""
    if schema.get("type") == "object" and "properties" in schema:
        return _base_object(schema)
    validator = OperationInputValidator(schema)
    for candidate in (*SCALARS, *CONTAINERS):
        if keeps_both_rules({"v": candidate}) and validator.is_valid(candidate):
            return candidate
    raise AssertionError(f"no candidate fits {schema}")


def _base_object(schema: Mapping[str, Any]) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    return {name: _valid_for(properties[name]) for name in schema.get("required", [])}


def _variants(schema: Mapping[str, Any], depth: int = 0) -> Iterator[Any]:
    """Tricky values for `schema`: every candidate, and for an object with properties its valid form, that form
    without each required field, with an extra field, and with each property set to each variant of it."""
    yield from SCALARS
    yield from CONTAINERS
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not properties or depth > 1:
        return
    base = _base_object(schema)
    yield base
    for name in schema.get("required", []):
        yield {key: value for key, value in base.items() if key != name}
    for extra in EXTRA_FIELDS:
        yield {**base, extra: "x"}
    for name, sub in properties.items():
        for value in _variants(sub, depth + 1):
            yield {**base, name: value}


def _inputs(operation: Operation) -> Iterator[dict[str, Any]]:
    schema = input_schema_of(operation.name, operation.input_model)
    yield {}
    for value in _variants(schema):
        if isinstance(value, dict):
            yield value


def _outcome(decode: Any, operation: Operation, raw: dict[str, Any]) -> tuple[Any, ...]:
    try:
        decoded = decode(operation, raw)
    except Rejection as rejection:
        return ("refused", rejection.problem())
    return ("decoded", type(decoded), decoded.model_dump(), decoded.model_fields_set)


OPERATIONS = [pytest.param(operation, id=f"{operation.name}:{operation.scope}") for operation in catalog()]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_both_paths_decode_or_refuse_alike(operation: Operation) -> None:
    tried = 0
    for raw in _inputs(operation):
        assert _outcome(decode_input, operation, raw) == _outcome(checked_decode, operation, raw), raw
        tried += 1
    has_fields = bool(input_schema_of(operation.name, operation.input_model).get("properties"))
    assert tried > (50 if has_fields else len([value for value in CONTAINERS if isinstance(value, dict)]))


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_strict_model_accepts_nothing_the_schema_refuses(operation: Operation) -> None:
    looser = []
    accepted = 0
    for raw in _inputs(operation):
        if not keeps_both_rules(raw):
            continue
        try:
            operation.input_model.model_validate(raw, strict=True)
        except ValueError:
            continue
        accepted += 1
        if input_issues(operation, raw):
            looser.append(raw)
    assert accepted > 0
    if operation.name in SCHEMA_FIRST:
        assert looser, f"{operation.name} is in SCHEMA_FIRST, but its model refuses all the schema refuses here"
    else:
        assert looser == []


def test_the_strict_path_leaves_the_two_rules_to_the_checked_path() -> None:
    assert keeps_both_rules({"a": [1, 2.5, "b", {"c": None}], "\U0001f600": True})
    assert not keeps_both_rules({"a": [math.inf]})
    assert not keeps_both_rules({"a": {"b": "\ud800"}})
    assert not keeps_both_rules({"\udc00": 1})
    assert not keeps_both_rules({"a": _deep_list(DEEP)})
    assert not keeps_both_rules({"a": "no\x00nul"})
    assert not keeps_both_rules({"\x00": 1})


def test_nul_is_refused_in_a_text_field_and_kept_in_data() -> None:
    """The checked path tells a text field (refused at its pointer) from JSON data (kept)."""
    create = catalog().named("create_playbook")
    refused = _outcome(decode_input, create, {"playbook": "bench", "name": "Be\x00nch"})
    assert refused[0] == "refused"
    words = "name, The name of the playbook, 1 to 100 characters: expected text without the character U+0000."
    assert refused[1]["errors"] == [{"detail": words, "pointer": "/name"}]
    run = catalog().named("run_definition")
    decoded = _outcome(decode_input, run, {"type": "computation", "name": "echo", "input": {"\x00": "a\x00"}})
    assert decoded[0] == "decoded"
    assert decoded[2]["input"] == {"\x00": "a\x00"}


@pytest.mark.parametrize(("name", "field"), [("create_playbook", "name"), ("list_runs", "status")])
def test_a_value_nested_past_the_recursion_limit_is_refused_as_a_shallow_one(name: str, field: str) -> None:
    """The `type` and `enum` keywords word a list where text goes without its `repr`, which would raise."""
    operation = catalog().named(name)
    base = {"playbook": "bench", "name": "Bench"} if name == "create_playbook" else {}
    deep, shallow = (
        _outcome(decode_input, operation, {**base, field: _deep_list(DEEP)}),
        _outcome(decode_input, operation, {**base, field: [[]]}),
    )
    assert deep[0] == "refused"
    assert deep == shallow
    assert {issue["pointer"] for issue in deep[1]["errors"]} == {f"/{field}"}
