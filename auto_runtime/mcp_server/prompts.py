"""The recipes as prompts (spec mcp.md §9).

A recipe is offered only on a connection that lists every tool its steps call. The tools a recipe calls are
read from its text: every tool name it writes in backticks. `prompts/get` answers two `user` messages: the
person's words filled into the recipe's request followed by the recipe, then its format guide as an embedded
resource. An unknown prompt, or a missing required argument, is `-32602`.
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


def tools_named_in(text: str, tool_names: Iterable[str]) -> frozenset[str]:
    """The tool names a recipe's text writes in backticks."""
    known = SPEC_TOOL_NAMES | set(tool_names)
    return frozenset(word for word in CODE_WORD.findall(text) if word in known)


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
    def __init__(self, recipes: Mapping[str, Recipe], guides: Mapping[str, Guide], tool_names: Iterable[str]) -> None:
        names = set(tool_names)
        self.recipes: dict[str, OfferedRecipe] = {}
        for recipe in recipes.values():
            guide = guides.get(recipe.name)
            format_guide = guides.get(recipe.format_guide)
            if guide is None or format_guide is None:
                raise ValueError(f"the recipe {recipe.name} needs its guide and the format guide {recipe.format_guide}")
            self.recipes[recipe.name] = OfferedRecipe(recipe, guide, format_guide, tools_named_in(guide.text, names))

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
