"""Front-matter refusals, the program's refusals at document lines, and what a definition shows."""

from __future__ import annotations

from auto_runtime.functions.computation.document import ComputationDocument, parse_document, problem_details
from auto_runtime.functions.computation.run import describe
from auto_runtime.functions.shapes import SERIES_SCHEMA

PROGRAM = "def main(input):\n    return input\n"


def details(source: str) -> list[str]:
    parsed = parse_document(source)
    assert isinstance(parsed, list), parsed
    return problem_details(parsed)


def test_a_document_and_its_description() -> None:
    source = "---\ndescription: Adds\nlanguage: python\ninput:\n  schema: {type: integer}\n---\n" + PROGRAM
    document = parse_document(source)
    assert isinstance(document, ComputationDocument)
    assert document.program_first_line == 7
    assert describe(document) == {
        "media_type": "text/markdown",
        "description": "Adds",
        "input_schema": {"type": "integer"},
        "output_schema": None,
    }


def test_a_shape_gives_the_output_schema_and_details() -> None:
    document = parse_document("---\nlanguage: python\noutput:\n  shape: series\n---\n" + PROGRAM)
    assert isinstance(document, ComputationDocument)
    shown = describe(document)
    assert shown["output_schema"] == SERIES_SCHEMA
    assert shown["details"] == {"shape": "series"}


def test_language() -> None:
    assert details("---\nlanguage: ruby\n---\n" + PROGRAM) == [
        "Line 2: Programs are written in Python; set language: python"
    ]
    assert details("---\ndescription: x\n---\n" + PROGRAM) == [
        "Line 1: The front matter names its language: language: python"
    ]


def test_unknown_keys_among_them_a_reasoning_functions() -> None:
    front_matter = "language: python\nmodel: small\ntools: []\ninput:\n  default: {}\noutput:\n  format: json\n"
    source = "---\n" + front_matter + "---\n" + PROGRAM
    assert details(source) == [
        "Line 3: model is not a field of a computation function",
        "Line 4: tools is not a field of a computation function",
        "Line 6: input.default is not a field of a computation function",
        "Line 8: output.format is not a field of a computation function",
    ]


def test_schema_or_shape_not_both_and_schemas() -> None:
    source = "---\nlanguage: python\noutput:\n  schema: {type: object}\n  shape: series\n---\n" + PROGRAM
    assert details(source) == ["Line 3: output takes schema or shape, not both"]
    found = details("---\nlanguage: python\ninput:\n  schema: {type: 5}\n---\n" + PROGRAM)
    assert len(found) == 1
    assert found[0].startswith("Line 4: input.schema is not a JSON Schema: ")


def test_front_matter_that_does_not_parse() -> None:
    found = details("---\nlanguage: [python\n---\n" + PROGRAM)
    assert len(found) == 1
    assert found[0].startswith("Line 2: The front matter does not parse: ")


def test_a_date_that_does_not_exist_is_front_matter_that_does_not_parse() -> None:
    """PyYAML's safe loader raises ValueError for it; the reader says it as any unreadable value."""
    assert details("---\ndescription: 2001-13-45\n---\n" + PROGRAM) == [
        "Line 2: The front matter does not parse: found a value that cannot be read (month must be in 1..12)"
    ]


def test_no_program() -> None:
    assert details("---\nlanguage: python\n---\n") == ["Line 3: The document holds no program after its front matter"]
    assert details("---\nlanguage: python\n---\n\n  \n") == [
        "Line 5: The document holds no program after its front matter"
    ]


def test_front_matter_and_program_problems_together_in_line_order() -> None:
    source = "---\nlanguage: ruby\n---\nimport os\ndef main(x)\n"
    assert details(source) == [
        "Line 2: Programs are written in Python; set language: python",
        "Line 5: The program does not parse: expected ':'",
    ]


def test_at_most_20_problems_then_and_n_more() -> None:
    source = "---\nlanguage: python\n---\n" + "".join(f"import os{i}\n" for i in range(25)) + PROGRAM
    found = details(source)
    assert len(found) == 21
    assert found[0] == "Line 4: Only math, re, json, collections, heapq and time can be imported; this line imports os0"
    assert found[19].startswith("Line 23: ")
    assert found[20] == "And 5 more problems"
