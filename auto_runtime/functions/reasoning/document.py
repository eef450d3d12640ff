"""A reasoning document (reasoning-format §1): front matter keys, schemas and the prompt template, checked at once.

`parse_document` returns the typed document, or every problem found as (line, pointer, words). It reads no
setting and calls nothing, so a document parses the same on every server.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.functions.reasoning.front_checker import FrontMatterChecker
from auto_runtime.functions.reasoning.front_matter import FrontMatter, Problem, read_front_matter
from auto_runtime.functions.reasoning.json_schemas import is_draft7, portability_warnings, schema_problems
from auto_runtime.functions.reasoning.template import Template, parse_template
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.json_pointers import escape
from auto_runtime.models.provider_options import offered_option_problems
from auto_runtime.user_schemas import TooManySteps, UnusableSchema, checked_errors, validator_for

MEDIA_TYPE = "text/markdown"
DEFAULT_MAX_OUTPUT_TOKENS = 1024
MAX_WARNINGS = 100
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
TOP_KEYS = ("description", "model", "config", "input", "output", "provider_options", "tools")
CONFIG_KEYS = ("max_output_tokens", "temperature", "top_p", "seed", "stop_sequences", "reasoning")
TOOL_ENTRY = re.compile(r"^[a-z][a-z0-9-]{0,31}/(?:\*|[A-Za-z0-9_.-]{1,128})$")


@dataclass(frozen=True)
class Config:
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop_sequences: tuple[str, ...] | None = None
    reasoning: str | None = None

    def as_record(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"max_output_tokens": self.max_output_tokens}
        for name in ("temperature", "top_p", "seed", "reasoning"):
            if getattr(self, name) is not None:
                settings[name] = getattr(self, name)
        if self.stop_sequences is not None:
            settings["stop_sequences"] = list(self.stop_sequences)
        return settings


@dataclass(frozen=True)
class ToolName:
    server: str
    tool: str  # "*" for every tool the server offers

    @property
    def written(self) -> str:
        return f"{self.server}/{self.tool}"


@dataclass(frozen=True)
class ReasoningDocument:
    source: str
    description: str | None
    model: str
    config: Config
    input_schema: dict[str, Any] | None
    input_default: dict[str, Any]
    output_format: str
    output_schema: dict[str, Any] | None
    shape: str | None
    provider_options: dict[str, dict[str, Any]]
    tools: tuple[ToolName, ...]
    template: Template
    template_source: str
    warnings: tuple[dict[str, Any], ...] = field(default=())


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def split_source(source: str) -> tuple[str, str, int, int] | Problem:
    lines = source.split("\n")
    if lines[0].rstrip("\r") != "---":
        return Problem(1, "", "The front matter must open on line 1 with a line of exactly ---")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]), 2, index + 2
    return Problem(1, "", "The front matter opened on line 1 is never closed with a line of exactly ---")


def _config(check: FrontMatterChecker, value: Any) -> Config:
    config = check.mapping("/config", value, CONFIG_KEYS, "an object of settings")
    if config is None:
        return Config()
    max_tokens = config.get("max_output_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
    if not _is_int(max_tokens) or not 1 <= max_tokens <= 64_000:
        check.add("/config/max_output_tokens", "Expected an integer from 1 to 64,000")
        max_tokens = DEFAULT_MAX_OUTPUT_TOKENS
    numbers: dict[str, float | None] = {}
    for name in ("temperature", "top_p"):
        if name in config and not _is_number(config[name]):
            check.add(f"/config/{name}", "Expected a finite number")
        numbers[name] = config[name] if name in config and _is_number(config[name]) else None
    seed: Any = config.get("seed")
    if "seed" in config and (not _is_int(seed) or int(seed) < 0):
        check.add("/config/seed", "Expected an integer of 0 or more")
        seed = None
    stops = config.get("stop_sequences")
    if "stop_sequences" in config and (not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)):
        check.add("/config/stop_sequences", "Expected a list of strings")
        stops = None
    effort = config.get("reasoning")
    if "reasoning" in config and effort not in REASONING_EFFORTS:
        check.add("/config/reasoning", "Expected one of " + ", ".join(REASONING_EFFORTS))
        effort = None
    return Config(
        max_output_tokens=max_tokens,
        temperature=numbers["temperature"],
        top_p=numbers["top_p"],
        seed=seed if _is_int(seed) else None,
        stop_sequences=tuple(stops) if isinstance(stops, list) else None,
        reasoning=effort if isinstance(effort, str) else None,
    )


def _schema(check: FrontMatterChecker, pointer: str, schema: Any) -> dict[str, Any] | None:
    if not isinstance(schema, dict):
        check.add(pointer, "Expected a JSON Schema object")
        return None
    problems = schema_problems(schema)
    for inner, words in problems:
        check.add(pointer + inner, words)
    return None if problems else schema


def _input(check: FrontMatterChecker, value: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    section = check.mapping("/input", value, ("schema", "default"), "an object with schema and default")
    if section is None:
        return None, {}
    schema = None
    if "schema" in section:
        schema = _schema(check, "/input/schema", section["schema"])
        if schema is not None and schema.get("type") != "object":
            check.add("/input/schema/type", "The input schema's root must be type: object")
            schema = None
    default = section.get("default", {})
    if not isinstance(default, dict):
        check.add("/input/default", "Expected a JSON object of default values")
        return schema, {}
    if schema is not None:
        found = schema.get("properties")
        properties: dict[str, Any] = found if isinstance(found, dict) else {}
        closed = schema.get("additionalProperties") is False
        extras = {k: schema[k] for k in ("$defs", "definitions", "$schema") if k in schema}
        for key, item in default.items():
            pointer = f"/input/default/{escape(key)}"
            if key not in properties:
                if closed:
                    check.add(pointer, f"The input schema has no field {key}")
                continue
            field_schema = properties[key]
            whole = {**field_schema, **extras} if isinstance(field_schema, dict) else field_schema
            try:
                errors = checked_errors(validator_for(whole, draft7=is_draft7(schema)), item)
            except (UnusableSchema, TooManySteps) as unchecked:
                check.add(pointer, f"The default could not be checked against the schema of {key}: {unchecked}")
                continue
            if errors:
                check.add(pointer, f"The default does not match the schema of {key}: {errors[0].message}")
    return schema, default


def _output(check: FrontMatterChecker, value: Any) -> tuple[str, dict[str, Any] | None, str | None]:
    section = check.mapping("/output", value, ("format", "schema", "shape"), "an object with format and schema")
    if section is None:
        return "text", None, None
    form = section.get("format")
    if form is not None and form not in ("text", "json"):
        check.add("/output/format", "Expected text or json")
        form = None
    shape = section.get("shape")
    if "shape" in section:
        if shape not in SHAPES:
            check.add("/output/shape", "Expected the name of an output shape: " + ", ".join(sorted(SHAPES)))
            shape = None
        if "schema" in section:
            check.add("/output/shape", "output.shape cannot stand beside output.schema")
        if form == "text":
            check.add("/output/shape", "output.shape gives JSON, so it cannot stand beside format: text")
        if shape is not None:
            return "json", SHAPES[shape].schema, shape
        return "json", None, None
    if "schema" in section:
        if form != "json":
            check.add("/output/schema", "output.schema needs format: json")
            return "text", None, None
        return "json", _schema(check, "/output/schema", section["schema"]), None
    if form == "json":
        check.add("/output/format", "format: json needs output.schema or output.shape")
    return "text", None, None


def _tools(check: FrontMatterChecker, value: Any) -> tuple[ToolName, ...]:
    if not isinstance(value, list):
        check.add("/tools", "Expected a list of server/tool or server/*")
        return ()
    names: list[ToolName] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        pointer = f"/tools/{index}"
        if not isinstance(entry, str) or not TOOL_ENTRY.match(entry):
            check.add(
                pointer,
                "Expected server/tool or server/*: a server of 1 to 32 lowercase letters, digits and hyphens "
                "starting with a letter, a tool of 1 to 128 letters, digits, _, - and .",
            )
            continue
        if entry in seen:
            check.add(pointer, f"The tool {entry} is listed twice")
            continue
        seen.add(entry)
        server, tool = entry.split("/", 1)
        names.append(ToolName(server, tool))
    return tuple(names)


def _provider_options(check: FrontMatterChecker, value: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        check.add("/provider_options", "Expected an object of objects keyed by namespace")
        return {}
    for pointer, words in offered_option_problems(value):
        check.add(pointer, words)
    return value


def _model(check: FrontMatterChecker, value: Any) -> str:
    if not isinstance(value, str) or "/" not in value or not all(value.split("/", 1)):
        check.add("/model", "Expected a model written provider/model")
        return ""
    return value


def read_document(source: str) -> tuple[FrontMatter, str, int] | list[Problem]:
    """A front-matter document's front matter read, and the text after it with the line it starts on; or the
    problem of the `---` lines, or the front matter's problems. Reasoning and interaction documents share it."""
    split = split_source(source)
    if isinstance(split, Problem):
        return [split]
    front_text, body, offset, body_line = split
    front = read_front_matter(front_text, offset)
    if front.problems:
        return front.problems
    return front, body, body_line


def parse_document(source: str) -> ReasoningDocument | list[Problem]:
    read = read_document(source)
    if isinstance(read, list):
        return read
    front, template_source, template_line = read
    check = FrontMatterChecker(front)
    fields = front.value
    if not isinstance(fields, dict):
        check.add("", "The front matter must be an object of keys")
        fields = {}
    check.top_keys(fields, TOP_KEYS)
    description = check.description(fields)
    if "model" not in fields:
        check.add("", "The front matter must name a model: model: provider/model")
        model = ""
    else:
        model = _model(check, fields["model"])
    config = _config(check, fields["config"]) if "config" in fields else Config()
    input_schema, input_default = _input(check, fields["input"]) if "input" in fields else (None, {})
    output_format, output_schema, shape = (
        _output(check, fields["output"]) if "output" in fields else ("text", None, None)
    )
    options = _provider_options(check, fields["provider_options"]) if "provider_options" in fields else {}
    tools = _tools(check, fields["tools"]) if "tools" in fields else ()
    closed: frozenset[str] | None = None
    if input_schema is not None and input_schema.get("additionalProperties") is False:
        properties = input_schema.get("properties")
        closed = frozenset(properties) if isinstance(properties, dict) else frozenset()
    template = parse_template(template_source, template_line, closed)
    if isinstance(template, list):
        check.problems.extend(Problem(p.line, "", p.words) for p in template)
    if check.problems or isinstance(template, list):
        return check.problems
    warnings: list[dict[str, Any]] = []
    if output_schema is not None and shape is None:
        for pointer, providers, words in portability_warnings(output_schema):
            full = "/output/schema" + pointer
            warnings.append(
                {"line": front.line_of(full), "pointer": full, "providers": list(providers), "detail": words}
            )
    return ReasoningDocument(
        source=source,
        description=description,
        model=model,
        config=config,
        input_schema=input_schema,
        input_default=input_default,
        output_format=output_format,
        output_schema=output_schema,
        shape=shape,
        provider_options=options,
        tools=tools,
        template=template,
        template_source=template_source,
        warnings=tuple(warnings[:MAX_WARNINGS]),
    )


MAX_SHOWN = 20


def issue_lines(problems: list[Problem]) -> list[str]:
    """Each distinct issue once, in line order, at most 20, then `Line N: K more issues are not shown`."""
    distinct = sorted(set(problems), key=lambda p: (p.line, p.pointer, p.words))
    shown = [f"Line {p.line}, {p.pointer}: {p.words}" if p.pointer else f"Line {p.line}: {p.words}" for p in distinct]
    if len(shown) > MAX_SHOWN:
        rest = len(shown) - MAX_SHOWN
        more = "issue is" if rest == 1 else "issues are"
        return [*shown[:MAX_SHOWN], f"Line {distinct[MAX_SHOWN].line}: {rest} more {more} not shown"]
    return shown


def closed_fields(document: ReasoningDocument) -> Mapping[str, Any]:
    schema = document.input_schema or {}
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}
