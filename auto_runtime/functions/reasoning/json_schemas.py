"""The JSON Schema subset a reasoning document may declare (reasoning-format §2), and portability warnings.

`schema_problems` gives each place a schema leaves the subset, as (pointer inside the schema, words);
`portability_warnings` the places some providers reject or do not enforce, as (pointer, providers, words).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.exceptions import SchemaError

from auto_runtime.json_pointers import escape
from auto_runtime.user_schemas import schema_rules

MAX_SCHEMA_BYTES = 65_536
MAX_SCHEMA_DEPTH = 64
MAX_ENUM = 1000
REFUSED_KEYWORDS = (
    "pattern",
    "patternProperties",
    "if",
    "then",
    "else",
    "contains",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "$dynamicRef",
    "$dynamicAnchor",
)
SCHEMA_MAPS = ("properties", "$defs", "definitions")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_VALUES = ("items", "additionalProperties", "not", "propertyNames")
ANTHROPIC_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
BOUNDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "uniqueItems",
)
GEMINI_BYTES = 16_384
GEMINI_DEPTH = 16


def is_draft7(schema: Mapping[str, Any]) -> bool:
    declared = str(schema.get("$schema", ""))
    if "draft-07" in declared:
        return True
    text = json.dumps(schema)
    return '"definitions"' in text and '"$defs"' not in text


def meta_validator(schema: Mapping[str, Any]) -> type[Draft202012Validator] | type[Draft7Validator]:
    """The class whose meta-schema the schema is checked against (values are checked by `user_schemas`)."""
    return Draft7Validator if is_draft7(schema) else Draft202012Validator


def _depth(value: Any) -> int:
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return deepest


def _subschemas(schema: Mapping[str, Any], pointer: str) -> Iterator[tuple[Any, str, bool]]:
    """Each direct subschema, with its pointer and whether it sits below a property or an item."""
    for key in SCHEMA_MAPS:
        children = schema.get(key)
        if isinstance(children, Mapping):
            for name, child in children.items():
                yield child, f"{pointer}/{key}/{escape(name)}", key == "properties"
    for key in SCHEMA_LISTS:
        children = schema.get(key)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield child, f"{pointer}/{key}/{index}", key == "prefixItems"
    for key in SCHEMA_VALUES:
        if key in schema:
            yield schema[key], f"{pointer}/{key}", key in ("items", "additionalProperties")


def _walk(schema: Any, pointer: str = "") -> Iterator[tuple[Mapping[str, Any], str]]:
    if not isinstance(schema, Mapping):
        return
    yield schema, pointer
    for child, child_pointer, _below in _subschemas(schema, pointer):
        yield from _walk(child, child_pointer)


def schema_problems(schema: Any) -> list[tuple[str, str]]:
    """Where `schema` leaves §2's subset, as (pointer inside the schema, words)."""
    if not isinstance(schema, Mapping):
        return [("", "Expected a JSON Schema object")]
    problems: list[tuple[str, str]] = []
    if len(json.dumps(schema).encode("utf-8")) > MAX_SCHEMA_BYTES:
        problems.append(("", f"A schema may be at most {MAX_SCHEMA_BYTES:,} bytes as JSON"))
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        problems.append(("", f"A schema may nest at most {MAX_SCHEMA_DEPTH} levels of objects and arrays"))
    valid = True
    try:
        meta_validator(schema).check_schema(schema)
    except SchemaError as error:
        valid = False
        where = "".join(f"/{escape(part)}" for part in error.absolute_path)
        problems.append((where, f"Not a valid JSON Schema: {error.message}"))
    for node, pointer in _walk(schema):
        problems.extend(
            (f"{pointer}/{escape(keyword)}", f"The keyword {keyword} is not supported")
            for keyword in REFUSED_KEYWORDS
            if keyword in node
        )
        ref = node.get("$ref")
        if ref is not None and (
            not isinstance(ref, str) or not (ref.startswith(("#/$defs/", "#/definitions/")) and ref.count("/") == 2)
        ):
            problems.append((f"{pointer}/$ref", "A $ref may only point to #/$defs/<name> or #/definitions/<name>"))
        if "not" in node and node["not"] != {}:
            problems.append((f"{pointer}/not", "not may only hold the empty schema {}"))
        for keyword in ("enum", "const"):
            values = node.get(keyword)
            candidates = values if keyword == "enum" and isinstance(values, list) else [values]
            if keyword in node and any(isinstance(v, dict | list) for v in candidates):
                problems.append(
                    (f"{pointer}/{keyword}", f"{keyword} may only hold strings, numbers, booleans and null")
                )
        if isinstance(node.get("enum"), list) and len(node["enum"]) > MAX_ENUM:
            problems.append((f"{pointer}/enum", f"An enum may hold at most {MAX_ENUM:,} values"))
        if "properties" in node and isinstance(node.get("additionalProperties"), Mapping):
            problems.append(
                (
                    f"{pointer}/additionalProperties",
                    "A schema for additionalProperties is not supported beside properties",
                )
            )
    if valid:
        said = {pointer for pointer, _words in problems}
        problems.extend((pointer, words) for pointer, words in schema_rules(schema, draft7=True) if pointer not in said)
    return problems


def portability_warnings(schema: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...], str]]:
    """Places of an output schema some providers reject or do not enforce: (pointer, providers, words)."""
    warnings: list[tuple[str, tuple[str, ...], str]] = []
    strict = ("openai", "azure")
    if schema.get("type") != "object":
        warnings.append(("", strict, "The root is not type: object, which strict mode requires"))
    for node, pointer in _walk(schema):
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False:
                warnings.append(
                    (pointer, strict, "An object without additionalProperties: false is refused in strict mode")
                )
            properties = node.get("properties")
            required = node.get("required") or []
            if isinstance(properties, Mapping):
                missing = [name for name in properties if name not in required]
                if missing:
                    warnings.append(
                        (pointer, strict, "Strict mode needs every property in required: " + ", ".join(missing))
                    )
        warnings.extend(
            (
                f"{pointer}/{keyword}",
                ("anthropic", "bedrock-anthropic", "vertex-anthropic"),
                f"{keyword} is not enforced while decoding; the answer is still checked",
            )
            for keyword in BOUNDS
            if keyword in node
        )
        if "oneOf" in node:
            warnings.append(
                (
                    f"{pointer}/oneOf",
                    ("anthropic", "bedrock-anthropic", "vertex-anthropic"),
                    "oneOf is not enforced while decoding; the answer is still checked",
                )
            )
        form = node.get("format")
        if isinstance(form, str) and form not in ANTHROPIC_FORMATS:
            warnings.append(
                (
                    f"{pointer}/format",
                    ("anthropic", "bedrock-anthropic", "vertex-anthropic"),
                    f"The format {form} is not enforced while decoding; the answer is still checked",
                )
            )
    if len(json.dumps(schema).encode()) > GEMINI_BYTES or _depth(schema) > GEMINI_DEPTH:
        warnings.append(("", ("google", "vertex"), "A schema this large or deep may be refused"))
    return warnings
