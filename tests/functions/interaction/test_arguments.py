"""Interaction-format §1.3 and §3.1: a template of a `with` block reads the input strictly. A field the input
lacks stops the render at `/input/<field>` (the run ends `invalid_input`), alone or among text, except under
`default` and in conditions; an object among text is the definition's fault."""

from __future__ import annotations

import pytest

from auto_runtime.functions.interaction.arguments import DELIVER_NAMES, compile_arguments, render_arguments
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText

INPUT = {"input": {"team": {"name": "ops"}}}


def rendered(text: str) -> object:
    return render_arguments(compile_arguments({"value": text}, DELIVER_NAMES)["value"], INPUT)


@pytest.mark.parametrize(
    ("text", "pointer", "dotted"),
    [
        ("{{ input.missing }}", "/input/missing", "input.missing"),
        ("ask {{ input.missing }} now", "/input/missing", "input.missing"),
        ("{{ input.team.lead }}", "/input/team/lead", "input.team.lead"),
        ("for {{ input.team.lead }}", "/input/team/lead", "input.team.lead"),
    ],
)
def test_a_field_the_input_lacks_stops_the_render_at_its_pointer(text: str, pointer: str, dotted: str) -> None:
    with pytest.raises(RenderProblem) as stopped:
        rendered(text)
    assert stopped.value.pointer == pointer
    assert stopped.value.words == f"The template reads {dotted}, which the input does not have"


def test_default_and_conditions_read_a_missing_field_as_nothing() -> None:
    assert rendered("{{ input.missing | default: 'none' }}") == "none"
    assert rendered("{% if input.missing %}yes{% else %}no{% endif %}") == "no"


def test_present_values_keep_their_type_alone_and_render_as_text_among_text() -> None:
    assert rendered("{{ input.team }}") == {"name": "ops"}
    assert rendered("team {{ input.team.name }}") == "team ops"
    with pytest.raises(StructureAmongText):
        rendered("team {{ input.team }}")
