"""The recipes as prompts (spec mcp.md §9, settled point 26).

A recipe is offered only on a connection that lists every tool its steps call. The tools its steps call are
the tools that act in a playbook its text writes in backticks, the two that write a definition (every recipe
creates or changes one), and `create_playbook` where the text names it (`first-playbook` makes the playbook it
works in). The other org-level tools a text names (`list_models` in `give-tools`) only help a step and decide
nothing. So the org endpoint, and a key that may not write definitions, offer no recipe; a playbook endpoint
offers every recipe but `first-playbook` to a key that may.

`prompts/get` answers two `user` messages: the person's words filled into the recipe's request followed by the
recipe, then its format guide as an embedded resource. An unknown prompt, or a missing required argument, is
`-32602`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import mcp_types as types
from mcp.shared.exceptions import MCPError

from auto_runtime.guides import Guide, Recipe, render_request
from auto_runtime.mcp_server.guide_resources import MARKDOWN, guide_uri

SPEC_TOOL_NAMES = frozenset(
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
"""Every tool name of the spec's tables, whether or not the catalog has its operation yet."""
CODE_WORD = re.compile(r"`([a-z][a-z_]*)`")
WRITES_DEFINITIONS = frozenset({"create_definition", "update_definition"})
"""Every recipe creates or changes a definition: a connection that lists neither tool offers no recipe."""
ORG_TOOLS_A_STEP_NEEDS = frozenset({"create_playbook"})
"""The org-level tools a recipe's step cannot do without when its text names them: making the playbook it works
in. Any other org-level tool a text names only helps (settled point 26)."""


def tools_named_in(text: str, tool_names: Iterable[str]) -> frozenset[str]:
    """The tool names a recipe's text writes in backticks."""
    known = SPEC_TOOL_NAMES | set(tool_names)
    return frozenset(word for word in CODE_WORD.findall(text) if word in known)


def tools_called_by(text: str, playbook_tools: Iterable[str]) -> frozenset[str]:
    """The tools a recipe's steps call: the playbook tools its text names, `WRITES_DEFINITIONS`, and the org-level
    tools of `ORG_TOOLS_A_STEP_NEEDS` it names. `playbook_tools` are the tools a playbook endpoint serves."""
    acting_in_a_playbook = set(playbook_tools) | WRITES_DEFINITIONS
    named = tools_named_in(text, acting_in_a_playbook)
    return (named & (acting_in_a_playbook | ORG_TOOLS_A_STEP_NEEDS)) | WRITES_DEFINITIONS


@dataclass(frozen=True)
class OfferedRecipe:
    recipe: Recipe
    guide: Guide
    format_guide: Guide
    calls: frozenset[str]

    def prompt(self) -> types.Prompt:
        return types.Prompt(
            name=self.recipe.name,
            title=self.recipe.title,
            description=self.guide.description,
            arguments=[
                types.PromptArgument(name=a.name, description=a.description, required=a.required)
                for a in self.recipe.arguments
            ]
            or None,
        )


class RecipePrompts:
    """The recipes as prompts; `playbook_tools` are the tools a playbook endpoint serves (to anyone)."""

    def __init__(
        self, recipes: Mapping[str, Recipe], guides: Mapping[str, Guide], playbook_tools: Iterable[str]
    ) -> None:
        names = set(playbook_tools)
        self.recipes: dict[str, OfferedRecipe] = {}
        for recipe in recipes.values():
            guide = guides.get(recipe.name)
            format_guide = guides.get(recipe.format_guide)
            if guide is None or format_guide is None:
                raise ValueError(f"the recipe {recipe.name} needs its guide and the format guide {recipe.format_guide}")
            self.recipes[recipe.name] = OfferedRecipe(recipe, guide, format_guide, tools_called_by(guide.text, names))

    def offered(self, listed_tools: Iterable[str]) -> list[OfferedRecipe]:
        """The recipes whose every called tool the connection lists."""
        listed = set(listed_tools)
        return [offered for offered in self.recipes.values() if offered.calls <= listed]

    def listed(self, listed_tools: Iterable[str]) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[offered.prompt() for offered in self.offered(listed_tools)])

    def get(self, listed_tools: Iterable[str], name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
        offered = next((o for o in self.offered(listed_tools) if o.recipe.name == name), None)
        if offered is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        given = {key: value for key, value in (arguments or {}).items() if isinstance(value, str)}
        missing = [a.name for a in offered.recipe.arguments if a.required and not given.get(a.name, "").strip()]
        if missing:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"The prompt {name} needs the argument {', '.join(missing)}",
            )
        request = render_request(offered.recipe, given)
        return types.GetPromptResult(
            description=offered.guide.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=f"{request}\n\n{offered.guide.text}")),
                types.PromptMessage(
                    role="user",
                    content=types.EmbeddedResource(
                        resource=types.TextResourceContents(
                            uri=guide_uri(offered.format_guide.name),
                            mime_type=MARKDOWN,
                            text=offered.format_guide.text,
                        )
                    ),
                ),
            ],
        )
