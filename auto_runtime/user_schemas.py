"""The rules every user JSON Schema keeps, and the validators that check user values against one.

A user schema (a computation's, a reasoning function's or a workflow's `input` and `output` schema) is one
self-contained document. `schema_rules` gives each place a schema breaks these rules, as (pointer inside the
schema, words), and every type refuses them at save:

- a reference (`$ref`, `$dynamicRef`) starts with `#` and names a schema inside the document, by JSON
  pointer or by `$anchor`; nothing is ever fetched, so an http, https or file address is refused;
- `$id` and `$schema` stand only at the root, and `$schema` names the dialect the type reads;
- no reference loop without a property or an item in between (`{"$ref": "#"}`): validating one would
  never end; and at most `MAX_IN_PLACE` subschemas apply to one value through references and `allOf`,
  `anyOf`, `oneOf`, `not`, `if`, `then`, `else`, `dependentSchemas` (a chain of definitions each naming the
  next twice applies 2**n of them);
- every `pattern` and `patternProperties` key is an RE2 expression (within 1 MiB of RE2 program), so
  matching takes linear time; at most `MAX_PATTERNS` of them, so compiling them all takes about a second
  at most.

`validator_for` builds the validator for a schema that keeps them: an explicit `referencing.Registry()` with
no retrieval, so nothing is fetched even for a schema saved before these rules; `pattern`,
`patternProperties`, `additionalProperties` and `unevaluatedProperties` match with RE2; `uniqueItems` hashes
its items (linear, where jsonschema compares unhashable items pairwise); and every keyword applied counts
against the step budget of the check in progress (`checked_errors`), so a check of a value ends within
`MAX_STEPS` steps whatever the schema's branches (failing `anyOf` branches recursing through `items` are
all explored, which doubles the work per level). Measured: a valid 1 MiB list of 45,000 small objects takes
315,000 steps (1 s); the doubling attack at 60 levels stops at the budget after about 7 s, so callers that
can run the check on a worker thread do (computation runs). No format checker is used: `format` is an annotation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import re2
from jsonschema import Draft7Validator, Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from referencing import Registry

from auto_runtime.json_limits import depth_of
from auto_runtime.json_pointers import escape, pointer_of, tokens_of

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_07 = "http://json-schema.org/draft-07/schema"
MAX_IN_PLACE = 10_000
MAX_STEPS = 500_000
MAX_PATTERNS = 200
RE2_MAX_MEMORY = 1 << 20

OUTSIDE = (
    "The reference {ref} is not inside this schema: a reference starts with # and names a schema of the same "
    "document, and an http, https or file address is never fetched"
)
NOT_A_STRING_REFERENCE = "A reference is text that starts with # and names a schema of the same document"
NOTHING_THERE = "The reference {ref} names no schema inside this schema"
ID_BELOW_ROOT = "$id may stand only at the root: a schema is one document, and its references stay inside it"
SCHEMA_BELOW_ROOT = "$schema may stand only at the root"
OTHER_DIALECT = "$schema names {dialects}; nothing else is read"
LOOP = "The reference {ref} reaches itself without a property or item in between"
MAX_SCHEMA_DEPTH = 64
"""How deep a schema's JSON may nest: the meta-schema check and validation recurse about ten frames for each
level of subschemas, so a deeper schema would meet Python's recursion limit instead of an answer."""
TOO_DEEP_SCHEMA = f"A schema may nest at most {MAX_SCHEMA_DEPTH} levels"
TOO_MANY_IN_PLACE = (
    f"More than {MAX_IN_PLACE:,} subschemas would apply to one value through references and allOf, anyOf, "
    "oneOf, not, if, then, else and dependentSchemas"
)
TOO_MANY_PATTERNS = f"A schema may hold at most {MAX_PATTERNS} patterns"
NOT_RE2 = (
    "The pattern {pattern} is not available: patterns are matched in linear time (RE2), which has no "
    "lookaround, backreference or \\Z ({why})"
)

IN_PLACE_VALUES = ("not", "if", "then", "else")
IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
IN_PLACE_MAPS = ("dependentSchemas",)
BELOW_VALUES = (
    "items",
    "additionalItems",
    "additionalProperties",
    "propertyNames",
    "contains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
BELOW_LISTS = ("prefixItems", "items")
BELOW_MAPS = ("properties", "patternProperties")
UNAPPLIED_MAPS = ("$defs", "definitions")
REFERENCES = ("$ref", "$dynamicRef")


@dataclass(frozen=True)
class _Child:
    schema: Any
    pointer: str
    in_place: bool


def _children(node: Mapping[str, Any], pointer: str) -> Iterator[_Child]:
    """Each subschema written in `node` (schema positions only), and whether it applies to the same value."""
    for key in IN_PLACE_VALUES + BELOW_VALUES:
        child = node.get(key)
        if isinstance(child, dict | bool):
            yield _Child(child, f"{pointer}/{escape(key)}", key in IN_PLACE_VALUES)
    for key in IN_PLACE_LISTS + BELOW_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for index, child in enumerate(children):
                if isinstance(child, dict | bool):
                    yield _Child(child, f"{pointer}/{escape(key)}/{index}", key in IN_PLACE_LISTS)
    for key in IN_PLACE_MAPS + BELOW_MAPS + UNAPPLIED_MAPS + ("dependencies",):
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                if isinstance(child, dict | bool):
                    in_place = key in IN_PLACE_MAPS or key == "dependencies"
                    yield _Child(child, f"{pointer}/{escape(key)}/{escape(name)}", in_place)


def schema_positions(schema: Any) -> dict[str, Any]:
    """Every schema of the document by its pointer, the root at `""`, in document order."""
    positions: dict[str, Any] = {}
    stack: list[tuple[Any, str]] = [(schema, "")]
    while stack:
        node, pointer = stack.pop()
        positions[pointer] = node
        if isinstance(node, Mapping):
            stack.extend((child.schema, child.pointer) for child in reversed(list(_children(node, pointer))))
    return positions


def _target(ref: str, positions: Mapping[str, Any], anchors: Mapping[str, str]) -> str | None:
    """The pointer of the schema a `#…` reference names, or None."""
    fragment = unquote(ref[1:])
    if fragment == "":
        return ""
    if fragment.startswith("/"):
        pointer = pointer_of(tokens_of(fragment))
        return pointer if pointer in positions else None
    return anchors.get(fragment)


def _references(positions: Mapping[str, Any], problems: list[tuple[str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """Each schema's references that resolve, as (keyword, reference, target); the others become problems."""
    anchors: dict[str, str] = {}
    for pointer, node in positions.items():
        if isinstance(node, Mapping):
            for keyword in ("$anchor", "$dynamicAnchor"):
                name = node.get(keyword)
                if isinstance(name, str):
                    anchors.setdefault(name, pointer)
    edges: dict[str, list[tuple[str, str, str]]] = {}
    for pointer, node in positions.items():
        if not isinstance(node, Mapping):
            continue
        for keyword in REFERENCES:
            if keyword not in node:
                continue
            ref = node[keyword]
            where = f"{pointer}/{escape(keyword)}"
            if not isinstance(ref, str):
                problems.append((where, NOT_A_STRING_REFERENCE))
            elif not ref.startswith("#"):
                problems.append((where, OUTSIDE.format(ref=ref)))
            else:
                target = _target(ref, positions, anchors)
                if target is None:
                    problems.append((where, NOTHING_THERE.format(ref=ref)))
                else:
                    edges.setdefault(pointer, []).append((keyword, ref, target))
    return edges


def _in_place(
    positions: Mapping[str, Any], references: Mapping[str, list[tuple[str, str, str]]], pointer: str
) -> list[tuple[str, str | None]]:
    """The schemas that apply to the same value as the one at `pointer`: (target, the `$ref` place or None)."""
    node = positions[pointer]
    if not isinstance(node, Mapping):
        return []
    found: list[tuple[str, str | None]] = [
        (child.pointer, None) for child in _children(node, pointer) if child.in_place
    ]
    found.extend((target, f"{pointer}/{escape(keyword)}") for keyword, _ref, target in references.get(pointer, []))
    return found


def _loop(positions: Mapping[str, Any], references: Mapping[str, list[tuple[str, str, str]]]) -> tuple[str, str] | None:
    """The place and text of the first reference that reaches itself through in-place schemas only."""
    state: dict[str, int] = {}  # 1 while on the path, 2 when finished
    for start in positions:
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[str, Iterator[tuple[str, str | None]]]] = [
            (start, iter(_in_place(positions, references, start)))
        ]
        while stack:
            pointer, pending = stack[-1]
            step = next(pending, None)
            if step is None:
                state[pointer] = 2
                stack.pop()
                continue
            target, via = step
            if state.get(target) == 1:
                assert via is not None, "a tree edge cannot close a loop"
                keyword = via.rsplit("/", 1)[1]
                return via, str(positions[pointer][keyword])
            if target not in state:
                state[target] = 1
                stack.append((target, iter(_in_place(positions, references, target))))
    return None


def _in_place_counts(
    positions: Mapping[str, Any], references: Mapping[str, list[tuple[str, str, str]]]
) -> dict[str, int]:
    """How many schemas apply to one value at each schema (itself included), for a document without loops."""
    counts: dict[str, int] = {}
    for start in positions:
        stack = [start]
        while stack:
            pointer = stack[-1]
            if pointer in counts:
                stack.pop()
                continue
            targets = [target for target, _via in _in_place(positions, references, pointer)]
            waiting = [target for target in targets if target not in counts]
            if waiting:
                stack.extend(waiting)
                continue
            counts[pointer] = min(1 + sum(counts[target] for target in targets), MAX_IN_PLACE + 1)
            stack.pop()
    return counts


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.max_mem = RE2_MAX_MEMORY  # a pattern past it is refused; compiling one takes a few ms at most


@lru_cache(maxsize=1024)
def compiled_pattern(pattern: str) -> Any:
    """The RE2 program of `pattern`; raises `re2.error` for what RE2 cannot express."""
    return re2.compile(pattern, _RE2_OPTIONS)


def pattern_problem(pattern: str) -> str | None:
    try:
        compiled_pattern(pattern)
    except re2.error as error:
        why = error.args[0] if error.args else error
        text = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        return NOT_RE2.format(pattern=pattern, why=text)
    return None


def _patterns(positions: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for pointer, node in positions.items():
        if not isinstance(node, Mapping):
            continue
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            yield f"{pointer}/pattern", pattern
        keyed = node.get("patternProperties")
        if isinstance(keyed, Mapping):
            for key in keyed:
                yield f"{pointer}/patternProperties/{escape(key)}", str(key)


def _placement(positions: Mapping[str, Any], dialects: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for pointer, node in positions.items():
        if not isinstance(node, Mapping):
            continue
        if pointer and "$id" in node:
            yield f"{pointer}/$id", ID_BELOW_ROOT
        if pointer and "$schema" in node:
            yield f"{pointer}/$schema", SCHEMA_BELOW_ROOT
    root = positions.get("")
    if isinstance(root, Mapping) and "$schema" in root:
        declared = root["$schema"]
        if not isinstance(declared, str) or declared.rstrip("#") not in dialects:
            yield "/$schema", OTHER_DIALECT.format(dialects=" or ".join(dialects))


def schema_rules(schema: Any, *, draft7: bool = False) -> list[tuple[str, str]]:
    """Where `schema` breaks the rules of a user schema (the module's list), as (pointer, words).

    `draft7` admits `$schema` of draft-07 beside 2020-12 (reasoning functions read both). The schema is
    assumed to pass its meta-schema (`check_schema`) already.
    """
    positions = schema_positions(schema)
    problems: list[tuple[str, str]] = list(
        _placement(positions, (DRAFT_2020_12, DRAFT_07) if draft7 else (DRAFT_2020_12,))
    )
    references = _references(positions, problems)
    for index, (pointer, pattern) in enumerate(_patterns(positions)):
        if index == MAX_PATTERNS:
            problems.append((pointer, TOO_MANY_PATTERNS))
            break
        problem = pattern_problem(pattern)
        if problem is not None:
            problems.append((pointer, problem))
    loop = _loop(positions, references)
    if loop is not None:
        place, ref = loop
        problems.append((place, LOOP.format(ref=ref)))
    else:
        counts = _in_place_counts(positions, references)
        crowded = next((pointer for pointer in positions if counts[pointer] > MAX_IN_PLACE), None)
        if crowded is not None:
            problems.append((crowded, TOO_MANY_IN_PLACE))
    return problems


def check_user_schema(schema: Any, *, draft7: bool = False) -> list[tuple[str, str]]:
    """`check_schema` against the meta-schema, then `schema_rules`: every reason to refuse `schema` at save."""
    base = Draft7Validator if draft7 else Draft202012Validator
    if depth_of(schema) > MAX_SCHEMA_DEPTH:
        return [("", TOO_DEEP_SCHEMA)]
    try:
        base.check_schema(schema)
    except SchemaError as error:
        where = "".join(f"/{escape(part)}" for part in error.absolute_path)
        return [(where, error.message)]
    return schema_rules(schema, draft7=draft7)


# -- Validators ------------------------------------------------------------------------------------------


class TooManySteps(Exception):
    """A check applied more than `MAX_STEPS` keywords: it stops, and the value is not checked."""


class _Steps:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise TooManySteps(f"checking a value took more than {self.limit:,} steps")


_STEPS: ContextVar[_Steps | None] = ContextVar("user_schema_steps", default=None)

Keyword = Callable[[Any, Any, Any, Any], Iterable[ValidationError] | None]


def _counted(keyword: Keyword) -> Keyword:
    """`keyword`, taking one step when applied and one for each error it hands up (an error found deep in
    a value passes through every level above it, which is where deep checks spend their time)."""

    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        steps = _STEPS.get()
        if steps is not None:
            steps.take()
        for error in keyword(validator, value, instance, schema) or ():
            if steps is not None:
                steps.take()
            yield error

    return counted


def _matches(pattern: str, text: str) -> bool:
    try:
        return compiled_pattern(pattern).search(text) is not None
    except (re2.error, UnicodeEncodeError):
        return False


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _extra_keys(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    return [
        key for key in instance if key not in properties and not any(_matches(pattern, key) for pattern in patterns)
    ]


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _extra_keys(instance, schema)
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        yield ValidationError(
            "Additional properties are not allowed (" + ", ".join(repr(key) for key in sorted(extras)) + " unexpected)"
        )


def _resolved(validator: Any, ref: str) -> tuple[Any, Any]:
    resolved = validator._resolver.lookup(ref)
    return validator.evolve(schema=resolved.contents, _resolver=resolved.resolver), resolved.contents


def _evaluated_keys(validator: Any, instance: Mapping[str, Any], schema: Any) -> set[str]:
    """jsonschema's `find_evaluated_property_keys_by_schema`, matching `patternProperties` with RE2."""
    steps = _STEPS.get()
    if steps is not None:
        steps.take()
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for keyword in REFERENCES:
        ref = schema.get(keyword)
        if ref is not None:
            inner, contents = _resolved(validator, ref)
            keys |= _evaluated_keys(inner, instance, contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {key for key, value in instance.items() if not any(validator.descend(value, subschema))}
    for pattern in schema.get("patternProperties", {}):
        keys |= {key for key in instance if _matches(pattern, key)}
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in IN_PLACE_LISTS:
        for subschema in schema.get(keyword, []):
            if not any(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys


def _unevaluated_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failing = [
        key
        for key in instance
        if key not in evaluated and any(validator.descend(instance[key], allowed, path=key, schema_path=key))
    ]
    if failing:
        listed = ", ".join(repr(key) for key in sorted(failing))
        if allowed is False:
            yield ValidationError(f"Unevaluated properties are not allowed ({listed} unexpected)")
        else:
            yield ValidationError(f"Unevaluated properties are not valid under the given schema ({listed})")


def _canonical(value: Any) -> Any:
    """A hashable form equal for two values exactly when JSON Schema calls them equal (1 and 1.0 are)."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float) and value.is_integer():
        return ("n", int(value))
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, list):
        return ("a", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("o", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("v", value)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if unique and validator.is_type(instance, "array"):
        seen: set[Any] = set()
        for item in instance:
            canonical = _canonical(item)
            if canonical in seen:
                yield ValidationError("The array has non-unique elements")
                return
            seen.add(canonical)


def _extended(base: Any, own: Mapping[str, Keyword]) -> Any:
    keywords = {**base.VALIDATORS, **own}
    return validators.extend(base, {name: _counted(keyword) for name, keyword in keywords.items()})  # type: ignore[no-untyped-call]


UserDraft202012Validator = _extended(
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "unevaluatedProperties": _unevaluated_properties,
        "uniqueItems": _unique_items,
    },
)
UserDraft7Validator = _extended(
    Draft7Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": _unique_items,
    },
)
NO_RETRIEVAL: Registry[Any] = Registry()


class UnusableSchema(ValueError):
    """A schema that breaks the rules (saved before they held): it is never used to check a value."""

    def __init__(self, pointer: str, words: str) -> None:
        super().__init__(f"{words} (at {pointer or 'the root'})")
        self.pointer = pointer
        self.words = words


@lru_cache(maxsize=512)
def _validator(schema_json: str, draft7: bool) -> Validator:
    schema = json.loads(schema_json)
    problems = check_user_schema(schema, draft7=draft7)
    if problems:
        raise UnusableSchema(*problems[0])
    cls = UserDraft7Validator if draft7 else UserDraft202012Validator
    validator: Validator = cls(schema, registry=NO_RETRIEVAL)
    return validator


def validator_for(schema: Mapping[str, Any] | bool, *, draft7: bool = False) -> Validator:
    """The validator of a user schema; raises `UnusableSchema` for one that breaks the rules."""
    return _validator(json.dumps(schema, sort_keys=True), draft7)


def checked_errors(validator: Validator, instance: Any, max_steps: int = MAX_STEPS) -> list[ValidationError]:
    """Every error of `instance`; raises `TooManySteps` past `max_steps` steps, or when the value nests so
    deep below a recursive schema that jsonschema's own recursion runs out (a few hundred levels)."""
    token = _STEPS.set(_Steps(max_steps))
    try:
        return list(validator.iter_errors(instance))
    except RecursionError:
        raise TooManySteps("the value nests too deep below a recursive schema to be checked") from None
    finally:
        _STEPS.reset(token)
