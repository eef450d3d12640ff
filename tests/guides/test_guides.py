"""The guides: every name loads, bounds hold, recipes name real tools, nothing builder-only leaks."""

from __future__ import annotations

import re

import pytest

from auto_runtime.guides import (
    FORMAT_GUIDES,
    GUIDE_NAMES,
    MAX_GUIDE_BYTES,
    MAX_RECIPE_BYTES,
    RECIPES,
    Guide,
    load_guides,
    render_request,
)

# Every tool of mcp.md section 4 (4.1 org tools, 4.2 playbook tools, 4.3 the guide tool).
MCP_TOOLS = frozenset(
    {
        "create_playbook",
        "list_playbooks",
        "update_playbook",
        "retire_playbook",
        "list_models",
        "search",
        "add_connection",
        "list_connections",
        "remove_connection",
        "create_definition",
        "list_definitions",
        "get_definition",
        "update_definition",
        "retire_definition",
        "run_definition",
        "get_run",
        "cancel_run",
        "send_run_event",
        "list_interactions",
        "answer_interaction",
        "publish_event",
        "list_runs",
        "list_playbook_events",
        "get_event",
        "introspect",
        "dry_run",
        "execute",
        "get_guide",
    }
)

# Operations served over HTTP only (mcp.md section 4.4): a recipe must never tell an agent to call them.
HTTP_ONLY = frozenset(
    {
        "upload_dataset",
        "read_build_brief",
        "read_build_rows",
        "upload_candidate",
        "activate_version",
        "read_link",
        "approve",
        "give_credential",
        "get_playbook",
        "get_connection",
        "get_run_history",
        "get_playbook_analytics",
        "validate",
    }
)

EXPECTED_NAMES = (
    "terminology",
    "reasoning-function",
    "interaction-function",
    "prediction-function",
    "recall-function",
    "computation-function",
    "workflow",
    "first-playbook",
    "remember",
    "give-tools",
    "schedule",
)

RECIPE_TITLES = {
    "first-playbook": "Create your first playbook",
    "remember": "Make the playbook remember something",
    "give-tools": "Give the playbook tools",
    "schedule": "Run a workflow on a schedule",
}

RECIPE_FORMAT_GUIDES = {
    "first-playbook": "reasoning-function",
    "remember": "recall-function",
    "give-tools": "reasoning-function",
    "schedule": "workflow",
}

# Spot checks: fields each format guide must name.
REQUIRED_FIELDS = {
    "reasoning-function": ["`model`", "`provider/model`", "`output.format`", "`output.schema`", "`tools`"],
    "interaction-function": ["`call.server`", "`call.tool`", "`to`", "`expires`", "`deliver.server`"],
    "prediction-function": ["`dataset`", "`period`", "`target`", "`lags`", "`horizons`", "`trainer`"],
    "recall-function": ["`language`", "`source.events`", "def fold(view, event)", "`view.initial`"],
    "computation-function": ["`language`", "def main(input)", "`input.schema`", "`output.shape`"],
    "workflow": ["`document.dsl`", "`document.namespace`", "`document.version`", "`do`", "`schedule`"],
}

LEAKS = [
    "[S]",
    "[P]",
    "[N]",
    "wasmtime internals",
    "ledger table",
    " actor",
    "actors",
    "pykka",
    "(design)",
    "(decision)",
    "What to verify",
    "## Measured",
    "seeds",
    "README",
    "-format.md",
    "output-shapes.md",
    "host lease",
]

TOOL_WORD = re.compile(r"`([a-z][a-z_]+)`")
CALLED = re.compile(r"\b[Cc]all `([a-z][a-z_]+)`")
TOOL_VERBS = frozenset({"create", "list", "get", "update", "retire", "run", "cancel", "send", "answer", "publish"})
# Snake-case words a recipe may write that are fields or event types, not tools.
NOT_TOOLS = frozenset({"run_id", "run_started", "run_succeeded", "run_rejected", "run_failed"})


@pytest.fixture(scope="module")
def guides() -> dict[str, Guide]:
    return load_guides()


def test_every_name_loads_in_order(guides: dict[str, Guide]) -> None:
    assert tuple(guides) == EXPECTED_NAMES == GUIDE_NAMES
    for name, guide in guides.items():
        assert guide.name == name
        assert guide.title
        assert guide.description.endswith(".")
        assert guide.text.startswith("# ")
        assert guide.text.endswith("\n")


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_guide_within_64_kib(guides: dict[str, Guide], name: str) -> None:
    assert len(guides[name].text.encode("utf-8")) <= MAX_GUIDE_BYTES


@pytest.mark.parametrize("name", list(FORMAT_GUIDES.values()))
def test_format_guides_are_substantial(guides: dict[str, Guide], name: str) -> None:
    assert len(guides[name].text.encode("utf-8")) >= 20 * 1024


def test_recipes_match_the_prompt_table() -> None:
    assert list(RECIPES) == list(RECIPE_TITLES)
    for name, recipe in RECIPES.items():
        assert recipe.name == name
        assert recipe.title == RECIPE_TITLES[name]
        assert recipe.format_guide == RECIPE_FORMAT_GUIDES[name]
    assert [(a.name, a.required) for a in RECIPES["first-playbook"].arguments] == []
    assert [(a.name, a.required) for a in RECIPES["remember"].arguments] == [("what", True)]
    assert [(a.name, a.required) for a in RECIPES["give-tools"].arguments] == [("server", False)]
    assert [(a.name, a.required) for a in RECIPES["schedule"].arguments] == [
        ("workflow", True),
        ("when", True),
    ]


@pytest.mark.parametrize("name", list(RECIPE_TITLES))
def test_recipe_text_within_4_kib(guides: dict[str, Guide], name: str) -> None:
    recipe = RECIPES[name]
    filled = render_request(recipe, {a.name: "x" * 200 for a in recipe.arguments})
    prompt_text = filled + "\n\n" + guides[name].text
    assert len(prompt_text.encode("utf-8")) <= MAX_RECIPE_BYTES


@pytest.mark.parametrize("name", list(RECIPE_TITLES))
def test_recipe_names_only_real_tools(guides: dict[str, Guide], name: str) -> None:
    text = guides[name].text
    words = set(TOOL_WORD.findall(text))
    tools = words & (MCP_TOOLS | HTTP_ONLY)
    assert tools, "a recipe names the tools to call"
    assert not words & HTTP_ONLY, f"HTTP-only operations named: {sorted(words & HTTP_ONLY)}"
    called = set(CALLED.findall(text))
    assert called, "a recipe says which tools to call"
    assert called <= MCP_TOOLS, f"unknown tools called: {sorted(called - MCP_TOOLS)}"
    verbs = {w for w in words if "_" in w and w.split("_")[0] in TOOL_VERBS} - NOT_TOOLS
    assert verbs <= MCP_TOOLS, f"unknown tools named: {sorted(verbs - MCP_TOOLS)}"
    assert re.search(r"^\d+\. ", text, re.MULTILINE), "a recipe is numbered steps"


@pytest.mark.parametrize("name", list(RECIPE_TITLES))
def test_recipe_names_its_format_guide(guides: dict[str, Guide], name: str) -> None:
    assert f"`{RECIPES[name].format_guide}`" in guides[name].text


def test_recipe_requests_take_the_persons_words() -> None:
    assert "{what}" in RECIPES["remember"].request_template
    assert "{server}" in RECIPES["give-tools"].request_template
    assert "{workflow}" in RECIPES["schedule"].request_template
    assert "{when}" in RECIPES["schedule"].request_template
    filled = render_request(RECIPES["schedule"], {"workflow": "weekly-digest", "when": "Mondays at 8"})
    assert "weekly-digest" in filled
    assert "Mondays at 8" in filled
    assert "{" not in render_request(RECIPES["give-tools"], {})
    assert render_request(RECIPES["remember"], {"what": "the {braces} stay"}).endswith("the {braces} stay")
    with pytest.raises(KeyError):
        render_request(RECIPES["remember"], {})


@pytest.mark.parametrize(("name", "fields"), list(REQUIRED_FIELDS.items()))
def test_format_guides_mention_required_fields(guides: dict[str, Guide], name: str, fields: list[str]) -> None:
    text = guides[name].text
    missing = [field for field in fields if field not in text]
    assert not missing


@pytest.mark.parametrize("name", ["reasoning-function", "computation-function", "workflow", "prediction-function"])
def test_shape_guides_fold_in_series(guides: dict[str, Guide], name: str) -> None:
    text = guides[name].text
    assert "series" in text
    assert "`low ≤ value ≤ high`" in text or "low ≤ value ≤ high" in text


@pytest.mark.parametrize("name", EXPECTED_NAMES)
def test_no_builder_only_text_leaks(guides: dict[str, Guide], name: str) -> None:
    lowered = guides[name].text.lower()
    leaked = [word for word in LEAKS if word.lower() in lowered]
    assert not leaked


def test_reasoning_guide_ends_cleanly_for_the_server_sentence(guides: dict[str, Guide]) -> None:
    text = guides["reasoning-function"].text
    assert text.endswith(".\n")
    assert not text.endswith("\n\n")


def test_terminology_defines_the_words(guides: dict[str, Guide]) -> None:
    text = guides["terminology"].text
    for word in (
        "playbook",
        "definition",
        "function",
        "workflow",
        "run",
        "request",
        "event",
        "org",
        "version",
        "retire",
        "output shape",
        "record",
        "tool server",
        "connection",
        "trigger",
    ):
        assert f"| **{word}** |" in text, word
