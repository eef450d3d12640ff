"""Parsing is validation (reasoning-format §1.2): every problem at once, each with its line and pointer."""

from __future__ import annotations

import pytest

from auto_runtime.functions.reasoning import issue_lines, parse_document
from auto_runtime.functions.reasoning.document import ReasoningDocument
from auto_runtime.functions.reasoning.front_matter import Problem

EXAMPLE = """---
description: Sorts a support ticket into a queue and drafts a first reply
model: openai/gpt-5-mini
config:
  max_output_tokens: 600
input:
  schema:
    type: object
    properties:
      ticket: { type: string }
      customer_id: { type: string }
      language: { type: string }
    required: [ticket, customer_id]
    additionalProperties: false
  default:
    language: en
output:
  format: json
  schema:
    type: object
    properties:
      queue: { type: string, enum: [billing, outage, how_to, other] }
      urgent: { type: boolean }
      reply: { type: string }
    required: [queue, urgent, reply]
    additionalProperties: false
tools: [helpdesk/get_customer, status-page/*]
---
{% system %}You triage tickets for a hosting company. Write the reply in {{ input.language }}.{% endsystem %}
Customer {{ input.customer_id }} wrote on {{ today }}:

{{ input.ticket | clip: 4000 }}
"""


def issues(source: str) -> list[str]:
    parsed = parse_document(source)
    assert isinstance(parsed, list), "the document parsed"
    return issue_lines(parsed)


def test_the_spec_example_parses() -> None:
    document = parse_document(EXAMPLE)
    assert isinstance(document, ReasoningDocument)
    assert document.model == "openai/gpt-5-mini"
    assert document.config.max_output_tokens == 600
    assert document.input_default == {"language": "en"}
    assert document.output_format == "json"
    assert [tool.written for tool in document.tools] == ["helpdesk/get_customer", "status-page/*"]
    assert document.warnings == ()


def test_an_issue_gives_its_line_and_pointer() -> None:
    source = "---\nmodel: a/b\nconfig:\n  max_output_tokens: 10\n  temperature: 1\n  top_p: 1\n  seed: -1\n---\nHi\n"
    assert issues(source) == ["Line 7, /config/seed: Expected an integer of 0 or more"]


def test_every_problem_is_reported_at_once_in_line_order() -> None:
    source = """---
model: nope
config:
  max_output_tokens: 0
  reasoning: extreme
  unknown: 1
output:
  format: text
  schema: { type: object }
tools: [Helpdesk/x, a/b, a/b]
provider_options:
  openai: { store: true }
---
Hi
"""
    assert issues(source) == [
        "Line 2, /model: Expected a model written provider/model",
        "Line 4, /config/max_output_tokens: Expected an integer from 1 to 64,000",
        "Line 5, /config/reasoning: Expected one of none, minimal, low, medium, high, xhigh",
        "Line 6, /config/unknown: Unknown key unknown; the keys here are max_output_tokens, temperature, top_p, "
        "seed, stop_sequences, reasoning",
        "Line 9, /output/schema: output.schema needs format: json",
        "Line 10, /tools/0: Expected server/tool or server/*: a server of 1 to 32 lowercase letters, digits and "
        "hyphens starting with a letter, a tool of 1 to 128 letters, digits, _, - and .",
        "Line 10, /tools/2: The tool a/b is listed twice",
        "Line 12, /provider_options/openai/store: openai.store is not offered",
    ]


def test_at_most_twenty_issues_then_how_many_more() -> None:
    problems = [Problem(line, f"/k{line}", "Bad") for line in range(2, 34)]
    shown = issue_lines(problems + problems[:3])
    assert len(shown) == 21
    assert shown[19] == "Line 21, /k21: Bad"
    assert shown[20] == "Line 22: 12 more issues are not shown"


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("model: a/b\nwhen: 2026-10-01\n", "Line 3, /when: Unknown key when"),
        ("model: a/b\nmodel: c/d\n", "Line 3: The key model is written twice"),
        ("model: &m a/b\n", "Line 2: YAML anchors and aliases are not available; write the value out where it is used"),
        ("model: !!str a/b\n", "Line 2: Tags (tag:yaml.org,2002:str) are not allowed in the front matter"),
        ("model: a/b\nconfig: {temperature: .nan}\n", "Line 3: The number .nan is not finite"),
        ("config: {}\n", "Line 2: The front matter must name a model: model: provider/model"),
        ("model: a/\n", "Line 2, /model: Expected a model written provider/model"),
    ],
)
def test_front_matter_problems(front: str, expected: str) -> None:
    assert issues(f"---\n{front}---\nHi\n")[0].startswith(expected)


def test_yaml_1_2_keeps_yes_and_dates_as_strings() -> None:
    source = "---\nmodel: a/b\ninput:\n  default: { answer: yes, day: 2026-10-01, flag: on }\n---\nHi\n"
    document = parse_document(source)
    assert isinstance(document, ReasoningDocument)
    assert document.input_default == {"answer": "yes", "day": "2026-10-01", "flag": "on"}


def test_deep_front_matter_is_refused() -> None:
    deep = "model: a/b\nx: " + "[" * 80 + "]" * 80 + "\n"
    assert issues(f"---\n{deep}---\nHi\n") == ["Line 3: The front matter may nest at most 72 levels"]


def test_front_matter_must_open_on_line_1_and_close() -> None:
    assert issues("\n---\nmodel: a/b\n---\nHi")[0].startswith("Line 1: The front matter must open on line 1")
    assert issues("---\nmodel: a/b\nHi")[0].startswith("Line 1: The front matter opened on line 1 is never closed")


def test_schemas_outside_the_subset_and_defaults_that_do_not_match() -> None:
    source = """---
model: a/b
input:
  schema:
    type: object
    properties:
      code: { type: string, pattern: "^[a-z]+$" }
      count: { type: integer }
      nested: { $ref: "https://example.com/x" }
    additionalProperties: false
  default:
    count: many
    other: 1
output:
  format: json
---
Hi {{ input.code }} {{ input.missing }}
"""
    assert issues(source) == [
        "Line 7, /input/schema/properties/code/pattern: The keyword pattern is not supported",
        "Line 9, /input/schema/properties/nested/$ref: A $ref may only point to #/$defs/<name> or #/definitions/<name>",
        "Line 15, /output/format: format: json needs output.schema or output.shape",
    ]
    fixed = source.replace('pattern: "^[a-z]+$" ', "").replace('$ref: "https://example.com/x"', "type: object")
    fixed = fixed.replace("format: json", "shape: series")
    assert issues(fixed) == [
        "Line 12, /input/default/count: The default does not match the schema of count: 'many' is not of type "
        "'integer'",
        "Line 13, /input/default/other: The input schema has no field other",
        "Line 17: The template reads input.missing, which the input schema does not list",
    ]


def test_an_input_schema_whose_root_is_not_an_object() -> None:
    source = "---\nmodel: a/b\ninput:\n  schema: { type: array }\n---\nHi\n"
    assert issues(source) == ["Line 4, /input/schema/type: The input schema's root must be type: object"]


def test_a_reference_loop_without_a_property_between_is_refused() -> None:
    source = """---
model: a/b
output:
  format: json
  schema:
    $defs:
      a: { anyOf: [{ $ref: "#/$defs/b" }] }
      b: { allOf: [{ $ref: "#/$defs/a" }] }
      tree: { type: object, properties: { children: { type: array, items: { $ref: "#/$defs/tree" } } } }
    $ref: "#/$defs/tree"
---
Hi
"""
    assert issues(source) == [
        "Line 8, /output/schema/$defs/b/allOf/0/$ref: "
        "The reference #/$defs/a reaches itself without a property or item in between"
    ]


def test_shape_implies_json_and_refuses_a_schema_or_text() -> None:
    document = parse_document("---\nmodel: a/b\noutput: { shape: series }\n---\nHi\n")
    assert isinstance(document, ReasoningDocument)
    assert document.output_format == "json" and document.shape == "series"
    assert issues("---\nmodel: a/b\noutput: { shape: series, schema: {} }\n---\nHi\n") == [
        "Line 3, /output/shape: output.shape cannot stand beside output.schema"
    ]
    assert issues("---\nmodel: a/b\noutput: { shape: series, format: text }\n---\nHi\n") == [
        "Line 3, /output/shape: output.shape gives JSON, so it cannot stand beside format: text"
    ]


def test_portability_warnings_carry_line_pointer_and_providers() -> None:
    source = """---
model: a/b
output:
  format: json
  schema:
    type: object
    properties:
      n: { type: integer, minimum: 1 }
---
Hi
"""
    document = parse_document(source)
    assert isinstance(document, ReasoningDocument)
    pointers = [(w["line"], w["pointer"]) for w in document.warnings]
    assert (5, "/output/schema") in pointers
    assert (8, "/output/schema/properties/n/minimum") in pointers
    minimum = next(w for w in document.warnings if w["pointer"].endswith("minimum"))
    assert "anthropic" in minimum["providers"]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{% system %}only{% endsystem %}", "Line 4: The template must write text outside its system block"),
        ("Hi {{ customer }}", "Line 4: The template reads customer, which is neither input, today, now"),
        ("Hi {{ today.year }}", "Line 4: today has no properties"),
        ("Hi {% include 'x' %}", "Line 4: The include tag is not available in a prompt template"),
        ("Hi {% capture x %}y{% endcapture %}", "Line 4: The capture tag is not available"),
        ("Hi {{ input.a | sample }}", "Line 4: There is no filter named sample"),
        ("Hi\n{% if input.a %}", "Line 5: The if block opened here is never closed with endif"),
        ("Hi {% if x %}{% system %}a{% endsystem %}{% endif %}", "Line 4: The system block must be at the top level"),
        ("Hi {% system x %}a{% endsystem %}", "Line 4: The system tag takes no arguments"),
        ("Hi {% system %}a{% endsystem %}{% system %}b{% endsystem %}", "Line 4: A template holds at most one"),
        ("Hi " + "{% if true %}" * 2100, "Line 4: The tags or parentheses of the template nest too deeply to be read"),
    ],
)
def test_template_problems_are_refused_at_parse(template: str, expected: str) -> None:
    assert issues(f"---\nmodel: a/b\n---\n{template}\n")[0].startswith(expected)


def test_names_the_template_creates_may_be_read() -> None:
    template = (
        "{% assign greeting = 'Hi' %}{% for item in input.items %}{{ forloop.index }}{{ item }}{% endfor %}"
        "{% increment n %}{{ n }} {{ greeting }}"
    )
    assert isinstance(parse_document(f"---\nmodel: a/b\n---\n{template}\n"), ReasoningDocument)
