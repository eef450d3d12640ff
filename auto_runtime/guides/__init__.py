"""The guides the server serves at ``GET /v1/guides/{guide}`` and as MCP resources ``guide://{guide}``.

Each guide is a Markdown file of this package, written for AI agents that build playbooks for a person.
Four of them are recipes, which the MCP endpoints also offer as prompts (see :data:`RECIPES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Final

__all__ = [
    "FORMAT_GUIDES",
    "GUIDE_NAMES",
    "GUIDE_TITLES_AND_DESCRIPTIONS",
    "MAX_GUIDE_BYTES",
    "MAX_RECIPE_BYTES",
    "RECIPES",
    "RECIPE_NAMES",
    "Guide",
    "Recipe",
    "RecipeArgument",
    "load_guides",
    "render_request",
]

MAX_GUIDE_BYTES: Final = 64 * 1024
"""A guide is at most 64 KiB of UTF-8 (mcp.md section 4.5)."""

MAX_RECIPE_BYTES: Final = 4 * 1024
"""A recipe's prompt text is at most 4 KiB of UTF-8, its embedded format guide aside (mcp.md section 4.5)."""


@dataclass(frozen=True, slots=True)
class Guide:
    """One guide: its name (the ``{guide}`` of the route and of ``guide://``), title, description and text."""

    name: str
    title: str
    description: str
    text: str


@dataclass(frozen=True, slots=True)
class RecipeArgument:
    """One argument of a recipe's prompt."""

    name: str
    description: str
    required: bool


@dataclass(frozen=True, slots=True)
class Recipe:
    """A recipe offered as an MCP prompt.

    ``request_template`` is the line that precedes the recipe's text in the prompt, filled with the
    person's words: each ``{argument}`` placeholder is replaced by the argument's value (see
    :func:`render_request`). ``format_guide`` names the guide embedded as the prompt's second message.
    """

    name: str
    title: str
    arguments: tuple[RecipeArgument, ...]
    request_template: str
    format_guide: str


GUIDE_TITLES_AND_DESCRIPTIONS: Final[MappingProxyType[str, tuple[str, str]]] = MappingProxyType(
    {
        "terminology": (
            "Terminology",
            "What the product's words mean: playbook, definition, function, workflow, run, request, event "
            "and the other words an agent meets.",
        ),
        "reasoning-function": (
            "Reasoning function format",
            "The complete format of a reasoning function: front matter, prompt template, models, tools, "
            "endings and bounds, with examples.",
        ),
        "interaction-function": (
            "Interaction function format",
            "The complete format of an interaction function: calls, requests, deliveries, replies, answers, "
            "endings and bounds, with examples.",
        ),
        "prediction-function": (
            "Prediction function format",
            "The complete format of a prediction function: fields, datasets, builds, versions, questions, "
            "the series answer, endings and bounds.",
        ),
        "recall-function": (
            "Recall function format",
            "The complete format of a recall function: filters, the events a view folds, the Python module, "
            "standing, endings and bounds.",
        ),
        "computation-function": (
            "Computation function format",
            "The complete format of a computation function: fields, the Python program and its sandbox, "
            "numbers, output, endings and bounds.",
        ),
        "workflow": (
            "Workflow format",
            "The complete format of a workflow: the document, tasks, Python expressions, calls, errors, "
            "events, triggers, endings and limits.",
        ),
        "first-playbook": (
            "Create your first playbook",
            "A recipe: create a playbook with a first reasoning function, run it and show the person the result.",
        ),
        "remember": (
            "Make the playbook remember something",
            "A recipe: add a recall function that keeps what the playbook's functions answered, and read it back.",
        ),
        "give-tools": (
            "Give the playbook tools",
            "A recipe: find the tools of the playbook's tool servers, try them, and name them in a reasoning function.",
        ),
        "schedule": (
            "Run a workflow on a schedule",
            "A recipe: give a workflow a cron or every trigger so it runs by itself, and check its runs.",
        ),
    }
)

FORMAT_GUIDES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "reasoning": "reasoning-function",
        "interaction": "interaction-function",
        "prediction": "prediction-function",
        "recall": "recall-function",
        "computation": "computation-function",
        "workflow": "workflow",
    }
)
"""The format guide of each definition type."""

RECIPE_NAMES: Final = ("first-playbook", "remember", "give-tools", "schedule")

GUIDE_NAMES: Final = ("terminology", *FORMAT_GUIDES.values(), *RECIPE_NAMES)
"""Every guide name, in the order the server lists them."""

RECIPES: Final[MappingProxyType[str, Recipe]] = MappingProxyType(
    {
        "first-playbook": Recipe(
            name="first-playbook",
            title="Create your first playbook",
            arguments=(),
            request_template="The person wants a first playbook that does something useful for them.",
            format_guide="reasoning-function",
        ),
        "remember": Recipe(
            name="remember",
            title="Make the playbook remember something",
            arguments=(
                RecipeArgument(
                    name="what",
                    description="What the playbook should remember, in the person's words.",
                    required=True,
                ),
            ),
            request_template="The person wants the playbook to remember: {what}",
            format_guide="recall-function",
        ),
        "give-tools": Recipe(
            name="give-tools",
            title="Give the playbook tools",
            arguments=(
                RecipeArgument(
                    name="server",
                    description="The tool server to use, by the name a function writes before the slash; "
                    "left out, any server of the playbook.",
                    required=False,
                ),
            ),
            request_template="The person wants to give the playbook tools of the tool server: {server}",
            format_guide="reasoning-function",
        ),
        "schedule": Recipe(
            name="schedule",
            title="Run a workflow on a schedule",
            arguments=(
                RecipeArgument(
                    name="workflow",
                    description="The name of the workflow to run, or what it should do when it has none yet.",
                    required=True,
                ),
                RecipeArgument(
                    name="when",
                    description="When it should run, in the person's words, such as every Monday at 8.",
                    required=True,
                ),
            ),
            request_template="The person wants the workflow {workflow} to run on this schedule: {when}",
            format_guide="workflow",
        ),
    }
)

_ANY_SERVER: Final = "any server of the playbook"


def render_request(recipe: Recipe, arguments: dict[str, str]) -> str:
    """Fill a recipe's request line with the person's words.

    A missing optional argument is filled with words that say it was left out. Missing required
    arguments raise ``KeyError``; the MCP layer refuses them before calling this.
    """
    values: dict[str, str] = {}
    for argument in recipe.arguments:
        value = arguments.get(argument.name, "").strip()
        if not value:
            if argument.required:
                raise KeyError(argument.name)
            value = _ANY_SERVER if argument.name == "server" else "(not given)"
        values[argument.name] = value
    return recipe.request_template.format_map(values)


def load_guides() -> dict[str, Guide]:
    """Read every guide of the package, in :data:`GUIDE_NAMES` order."""
    package = resources.files(__name__)
    guides: dict[str, Guide] = {}
    for name in GUIDE_NAMES:
        title, description = GUIDE_TITLES_AND_DESCRIPTIONS[name]
        text = package.joinpath(f"{name}.md").read_text(encoding="utf-8")
        guides[name] = Guide(name=name, title=title, description=description, text=text)
    return guides
