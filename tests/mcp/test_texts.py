"""The texts the MCP endpoints serve: result words, instructions, prompts, the 64 KiB cut, endpoint paths."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auto_runtime.auth.caller import LOCAL_CALLER, Caller, Permission
from auto_runtime.guides import RECIPES, load_guides
from auto_runtime.mcp_server.endpoints import Endpoint, metadata_path_of, parse_endpoint, parse_metadata_path
from auto_runtime.mcp_server.history_cut import cut_large_fields
from auto_runtime.mcp_server.instructions import Instructions, playbook_definition
from auto_runtime.mcp_server.prompts import RecipePrompts, tools_named_in
from auto_runtime.mcp_server.results import refusal_result, success_result
from auto_runtime.mcp_server.toolset import ToolSet
from auto_runtime.mcp_server.words import refusal_words, success_words
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.problems import InputIssue, Rejection, invalid_input

GUIDES = load_guides()
CATALOG = build_catalog(GUIDES)
TOOLS = ToolSet(CATALOG, outside_effects=True)
EVERY_TOOL = {s.name: s for kind in ("own", "org", "playbook") for s in TOOLS.of_kind(kind)}


def _outputs() -> list[Any]:
    long_name = "x" * 2000
    run = {"run_id": "r", "type": "workflow", "name": long_name, "status": "started", "definition_version": 1}
    return [
        {},
        {"id": "pb", "name": long_name, "playbooks": [{"id": long_name}] * 50, "has_more": True},
        {"definitions": [{"name": long_name}] * 30, "type": "reasoning", "name": "n", "version": 3},
        run,
        {**run, "status": "succeeded"},
        {**run, "status": "rejected"},
        {**run, "status": "failed"},
        {"events": [], "runs": [], "has_more": False, "summary": long_name, "type": "run_started"},
    ]


REJECTIONS = [
    invalid_input([InputIssue("x" * 900, f"/input/f{i}") for i in range(20)]),
    Rejection("forbidden", "No." * 300),
    Rejection("not_found", "The org acme has no playbook zz."),
    Rejection("not_found", "No run."),
    Rejection("conflict", "Retired.", kind="retired"),
    Rejection("conflict", "Clash."),
    Rejection("cancelled", "Cancelled.", kind="by_request"),
    Rejection("unanswered", "Nobody.", kind="expired"),
    Rejection("unavailable", "No model.", kind="model_not_offered", because="model_not_allowed"),
    Rejection("unavailable", "No tool.", kind="tool_not_offered"),
    Rejection("unavailable", "Down."),
    Rejection("unavailable", "Stalled.", because="stalled"),
    Rejection("internal", "Broke.", instance="urn:uuid:1"),
]


def test_success_words_are_plain_sentences_within_400_characters() -> None:
    for served in EVERY_TOOL.values():
        for output in _outputs():
            words = success_words(served.operation, output)
            assert 0 < len(words) <= 400, served.name
            assert not words.lstrip().startswith(("{", "["))


def test_refusal_words_say_what_to_change_within_600_characters() -> None:
    for served in EVERY_TOOL.values():
        for rejection in REJECTIONS:
            words = refusal_words(served.operation, rejection)
            assert 0 < len(words) <= 600, (served.name, rejection.reason)
            assert served.name in words
    get_run = EVERY_TOOL["get_run"].operation
    assert "list_models" in refusal_words(get_run, REJECTIONS[8])
    assert "list_playbooks" in refusal_words(get_run, REJECTIONS[2])
    assert "operator" in refusal_words(get_run, REJECTIONS[1])


def test_a_refusal_carries_the_problem_document_and_no_structured_content() -> None:
    operation = EVERY_TOOL["get_run"].operation
    rejection = Rejection("conflict", "Retired.", kind="retired", headers={"Retry-After": "5"})
    result = refusal_result(operation, rejection)
    assert result.is_error is True
    assert result.structured_content is None
    assert len(result.content) == 2
    assert json.loads(result.content[1].text) == rejection.problem()


def test_a_success_carries_words_json_and_structured_content() -> None:
    operation = EVERY_TOOL["list_runs"].operation
    output = {"runs": [], "has_more": False, "next_cursor": None}
    result = success_result(operation, output)
    assert result.is_error is False
    assert result.structured_content == output
    assert json.loads(result.content[1].text) == output
    guide = success_result(EVERY_TOOL["get_guide"].operation, "# Text")
    assert guide.structured_content is None
    assert [c.text for c in guide.content] == ["# Text"]


def test_large_event_fields_are_cut_at_64_kib() -> None:
    small = "a" * 100
    exact = "b" * (65_536 - 2)
    large = "c" * 65_536
    event = {
        "id": "e",
        "type": "tool_call_finished",
        "summary": "s",
        "metadata": {"input": large},
        "data": {"arguments": exact, "result": large, "output": small, "other": large},
    }
    cut = cut_large_fields(event)
    assert cut["data"] == {"arguments": exact, "result_bytes": 65_538, "output": small, "other": large}
    assert cut["metadata"] == event["metadata"]
    assert cut_large_fields({"events": [event], "has_more": False})["events"][0] == cut
    run = {"run_id": "r", "output": large}
    assert cut_large_fields(run) == run


def test_endpoint_paths() -> None:
    assert parse_endpoint("/mcp") == Endpoint("own")
    assert parse_endpoint("/orgs/acme/mcp") == Endpoint("org", org="acme")
    assert parse_endpoint("/orgs/acme/playbooks/sales/mcp") == Endpoint("playbook", org="acme", playbook="sales")
    for other in ("/mcp/", "/v1/mcp", "/orgs//mcp", "/orgs/acme/playbooks/mcp", "/orgs/a/b/mcp", "/mcpx"):
        assert parse_endpoint(other) is None, other
    endpoint = Endpoint("playbook", org="acme", playbook="sales")
    assert metadata_path_of(endpoint) == "/.well-known/oauth-protected-resource/orgs/acme/playbooks/sales/mcp"
    assert parse_metadata_path(metadata_path_of(endpoint)) == endpoint
    assert parse_metadata_path("/.well-known/oauth-protected-resource") == "root"
    assert parse_metadata_path("/.well-known/oauth-protected-resource/v1") is None


@pytest.mark.parametrize("endpoint", [Endpoint("own"), Endpoint("org", org="acme"), Endpoint("playbook", "acme", "s")])
def test_instructions_name_only_listed_tools_within_2000_characters(endpoint: Endpoint) -> None:
    instructions = Instructions(GUIDES["terminology"].text, ["reasoning", "workflow"])
    for caller in (LOCAL_CALLER, Caller(id="k", org="acme", permissions=frozenset({Permission.ORG_READ}))):
        listed = [s.name for s in TOOLS.for_caller(endpoint.kind, caller)]
        text = instructions.build(endpoint, "acme", listed, playbook_tools=endpoint.kind == "own")
        assert len(text) <= 2000
        assert text.startswith(playbook_definition(GUIDES["terminology"].text))
        for name in EVERY_TOOL:
            if name not in listed:
                assert name not in text, (endpoint, name)


def test_recipes_are_offered_only_where_every_tool_they_call_is_listed() -> None:
    """Spec mcp.md §9 and settled point 26: a playbook endpoint offers every recipe but `first-playbook` to a key
    that may write definitions, whatever org-level tools a recipe's text names; the org endpoint offers none."""
    prompts = RecipePrompts(RECIPES, GUIDES, [s.name for s in TOOLS.of_kind("playbook")])
    for recipe in RECIPES.values():
        calls = tools_named_in(GUIDES[recipe.name].text, EVERY_TOOL)
        assert {"create_definition", "update_definition"} & calls, recipe.name
    assert "create_playbook" in tools_named_in(GUIDES["first-playbook"].text, EVERY_TOOL)
    assert "list_models" in tools_named_in(GUIDES["give-tools"].text, EVERY_TOOL)
    assert "list_models" not in prompts.recipes["give-tools"].calls
    expected = {"org": set(), "playbook": set(RECIPES) - {"first-playbook"}, "own": set(RECIPES)}
    writer = Caller(id="k", org="acme", permissions=frozenset({Permission.PLAYBOOK_READ, Permission.PLAYBOOK_WRITE}))
    reader = Caller(id="k", org="acme", permissions=frozenset({Permission.PLAYBOOK_READ, Permission.ORG_READ}))
    for kind in ("org", "playbook", "own"):
        listed = [s.name for s in TOOLS.for_caller(kind, LOCAL_CALLER)]
        assert {o.recipe.name for o in prompts.offered(listed)} == expected[kind], kind
        for name in expected[kind]:
            assert prompts.recipes[name].calls <= set(listed)
        written = {o.recipe.name for o in prompts.offered(s.name for s in TOOLS.for_caller(kind, writer))}
        assert written == expected[kind] - {"first-playbook"}, kind
        assert prompts.offered(s.name for s in TOOLS.for_caller(kind, reader)) == [], kind
    assert prompts.offered([]) == []
