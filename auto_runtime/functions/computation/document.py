"""A computation document: YAML front matter between two `---` lines, then the Python program.

`parse_document` checks the front matter (pass 1) and the program's text (pass 2) and returns the typed
document or the problems, each `(line, column, sentence)` with lines counted from the opening `---`.
The MicroPython compile pass (3) is the checker's: see `check.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from auto_runtime.functions.documents import no_longer_parses
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.functions.yaml_refusals import NestedTooDeep, read_front_matter_yaml
from auto_runtime.json_pointers import escape
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.program_rules import Problem, check_program
from auto_runtime.user_schemas import check_user_schema

Parsed = TypeVar("Parsed")

LANGUAGE_OTHER = "Programs are written in Python; set language: python"
LANGUAGE_MISSING = "The front matter names its language: language: python"
NOT_A_FIELD = " is not a field of a computation function"
SCHEMA_OR_SHAPE = "output takes schema or shape, not both"
NOT_A_SCHEMA = " is not a JSON Schema: "
FRONT_MATTER_DOES_NOT_PARSE = "The front matter does not parse: "
MAX_FRONT_MATTER_DEPTH = 256
"""How deep the front matter's collections may nest: PyYAML composes them recursively, two frames a level."""
NESTS_TOO_DEEP = f"it nests deeper than {MAX_FRONT_MATTER_DEPTH} levels"
NO_PROGRAM = "The document holds no program after its front matter"
UNKNOWN_SHAPE = "output.shape names no output shape the runtime knows; the known shapes are "
DESCRIPTION_LENGTH = "description is 1 to 1,000 characters of text"


@dataclass(frozen=True)
class ComputationDocument:
    """A document that passed passes 1 and 2."""

    source: str
    description: str | None
    input_schema: dict[str, Any] | bool | None
    output_schema: dict[str, Any] | bool | None
    shape: str | None
    program: str
    program_first_line: int

    @property
    def details(self) -> dict[str, str] | None:
        return {"shape": self.shape} if self.shape is not None else None


@dataclass(frozen=True)
class SplitDocument:
    """A document cut at its front matter's closing dashes (the recall type cuts its documents alike)."""

    front_matter: str
    program: str
    program_first_line: int
    last_line: int


def split_document(source: str) -> SplitDocument | Problem:
    """The document's front matter and program, or the problem of a document that has no front matter."""
    lines = source.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return (1, 0, FRONT_MATTER_DOES_NOT_PARSE + "a document begins with a line of three dashes, ---")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            program = "\n".join(lines[index + 1 :])
            last_line = len(lines) - 1 if source.endswith("\n") and len(lines) > 1 else len(lines)
            return SplitDocument("\n".join(lines[1:index]), program, index + 2, last_line)
    return (1, 0, FRONT_MATTER_DOES_NOT_PARSE + "the front matter has no closing line of three dashes, ---")


def key_lines(node: yaml.Node, offset: int) -> dict[str, int]:
    """The document line of each key, as dotted paths (`output.schema`)."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                lines[key.value] = key.start_mark.line + offset
                if isinstance(value, yaml.MappingNode):
                    for inner_key, _inner in value.value:
                        if isinstance(inner_key, yaml.ScalarNode):
                            lines[f"{key.value}.{inner_key.value}"] = inner_key.start_mark.line + offset
    return lines


def pointer_lines_of(node: yaml.Node, offset: int) -> dict[str, int]:
    """The document line of every JSON pointer of the front matter (a key's line for a mapping entry)."""
    lines: dict[str, int] = {"": node.start_mark.line + offset}
    stack: list[tuple[yaml.Node, str]] = [(node, "")]
    while stack:
        current, pointer = stack.pop()
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    child = f"{pointer}/{escape(key.value)}"
                    lines.setdefault(child, key.start_mark.line + offset)
                    stack.append((value, child))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                child = f"{pointer}/{index}"
                lines.setdefault(child, item.start_mark.line + offset)
                stack.append((item, child))
    return lines


def line_of(lines: dict[str, int], pointer: str, fallback: int) -> int:
    """The line of `pointer`, or of its nearest parent with one, else `fallback`."""
    while pointer and pointer not in lines:
        pointer = pointer.rsplit("/", 1)[0]
    return lines.get(pointer, fallback)


def schema_problems(name: str, schema: Any, line: int, lines: dict[str, int]) -> list[Problem]:
    """The refusals of a user schema (`user_schemas`), each at the line of its place inside the schema."""
    if not isinstance(schema, dict | bool):
        return [(line, 0, f"{name}{NOT_A_SCHEMA}a schema is an object or a boolean")]
    base = "/" + name.replace(".", "/")
    return [
        (
            line_of(lines, base + pointer, line),
            0,
            f"{name}{NOT_A_SCHEMA}{words}" + (f" (at {pointer})" if pointer else ""),
        )
        for pointer, words in check_user_schema(schema)
    ]


def parse_document(source: str) -> ComputationDocument | list[Problem]:
    """The document, or its problems from passes 1 and 2 sorted by line then column."""
    split = split_document(source)
    if not isinstance(split, SplitDocument):
        return [split]
    problems: list[Problem] = []
    fields: dict[str, Any] = {}
    offset = 2
    node: yaml.Node | None
    loaded: Any
    try:
        read = read_front_matter_yaml(split.front_matter, offset, MAX_FRONT_MATTER_DEPTH)
        if isinstance(read, list):
            problems.extend((refusal.line, 0, refusal.words) for refusal in read)
            node, loaded = None, None
        else:
            node, loaded = read
    except NestedTooDeep as deep:
        problems.append((deep.line + offset, 0, FRONT_MATTER_DOES_NOT_PARSE + NESTS_TOO_DEEP))
        node, loaded = None, None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + offset if mark is not None else 1
        message = " ".join(str(getattr(error, "problem", None) or error).split())
        problems.append((line, 0, FRONT_MATTER_DOES_NOT_PARSE + message))
        node, loaded = None, None
    if loaded is None and not problems:
        loaded = {}
    if not problems and not isinstance(loaded, dict):
        problems.append((2, 0, FRONT_MATTER_DOES_NOT_PARSE + "the front matter must be a mapping of fields"))
    elif not problems:
        fields = loaded
    lines = key_lines(node, offset) if node is not None else {}
    pointer_lines = pointer_lines_of(node, offset) if node is not None else {}
    description: str | None = None
    input_schema: Any = None
    output_schema: Any = None
    shape: str | None = None
    for key, value in fields.items():
        line = lines.get(str(key), 1)
        if key == "description":
            if not isinstance(value, str) or not 1 <= len(value) <= 1000:
                problems.append((line, 0, DESCRIPTION_LENGTH))
            else:
                description = value
        elif key == "language":
            if value != "python":
                problems.append((line, 0, LANGUAGE_OTHER))
        elif key in ("input", "output"):
            if not isinstance(value, dict):
                problems.append(
                    (
                        line,
                        0,
                        f"{key} takes schema or shape" if key == "output" else f"{key} takes schema",
                    )
                )
                continue
            for inner, inner_value in value.items():
                inner_line = lines.get(f"{key}.{inner}", line)
                if inner == "schema":
                    refusals = schema_problems(f"{key}.schema", inner_value, inner_line, pointer_lines)
                    if refusals:
                        problems.extend(refusals)
                    elif key == "input":
                        input_schema = inner_value
                    else:
                        output_schema = inner_value
                elif key == "output" and inner == "shape":
                    if not isinstance(inner_value, str) or inner_value not in SHAPES:
                        known = ", ".join(sorted(SHAPES))
                        problems.append(
                            (
                                inner_line,
                                0,
                                UNKNOWN_SHAPE + known,
                            )
                        )
                    else:
                        shape = inner_value
                else:
                    problems.append((inner_line, 0, f"{key}.{inner}{NOT_A_FIELD}"))
            if key == "output" and "schema" in value and "shape" in value:
                problems.append((line, 0, SCHEMA_OR_SHAPE))
        else:
            problems.append((line, 0, f"{key}{NOT_A_FIELD}"))
    if node is not None and isinstance(loaded, dict) and "language" not in fields:
        problems.append((1, 0, LANGUAGE_MISSING))
    if not split.program.strip():
        problems.append((split.last_line, 0, NO_PROGRAM))
    else:
        problems.extend(check_program(split.program, split.program_first_line))
    if problems:
        return sorted(set(problems))
    if shape is not None:
        output_schema = SHAPES[shape].schema
    return ComputationDocument(
        source=source,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        shape=shape,
        program=split.program,
        program_first_line=split.program_first_line,
    )


MAX_LISTED = 20


def problem_details(problems: list[Problem]) -> list[str]:
    """`Line N: sentence` for at most 20 problems, then `And N more problems`."""
    details = [f"Line {line}: {sentence}" for line, _column, sentence in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        details.append(f"And {len(problems) - MAX_LISTED} more problems")
    return details


def as_saved(parsed: Parsed | list[Problem]) -> Parsed | Rejection:
    """A saved program document (a computation's or a recall function's) parsed again for a run, or
    `no_longer_parses` with its problems' details when it was saved before a rule it breaks held."""
    if isinstance(parsed, list):
        return no_longer_parses(" ".join(problem_details(parsed)))
    return parsed
