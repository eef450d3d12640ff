"""Reading a workflow document's YAML into JSON values, with where each value starts.

The reader resolves scalars as JSON would (YAML 1.2 core): only `true`/`false` are booleans, so the
`on:` key of a `schedule` stays the text `on`, and dates stay text. Anchors, aliases, custom tags and
duplicate keys are refused, each at the place it stands. The events are read once by the one YAML reader
(`functions.yaml_refusals.read_events`). `marks` maps every JSON pointer of the value
to the 1-based line and column where the value written at it starts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from auto_runtime.functions.workflow.issues import Issue
from auto_runtime.functions.yaml_refusals import NO_ANCHORS, NestedTooDeep, read_events
from auto_runtime.json_pointers import escape

NO_TAGS = "YAML tags are not available; write plain values"
DUPLICATE_KEY = "The key {key} is written twice in the same mapping"
DOES_NOT_PARSE = "The document does not parse: "
NOT_A_MAPPING = "A workflow document is a mapping with document and do"

_STANDARD_TAG = "tag:yaml.org,2002:"


class _Resolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core schema scalars: null, true/false, integers, floats; everything else is text."""


_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_Resolver.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])


Mark = tuple[int, int]


@dataclass(frozen=True)
class ReadDocument:
    """The document's value and the (line, column) where the value at each pointer starts."""

    value: Any
    marks: dict[str, Mark]


NOT_FINITE = "Numbers are finite: .inf and .nan have no JSON form"
VALUE_TOO_DEEP = "Values are nested at most 512 deep"
MAX_DEPTH = 512


def _scalar(resolver: _Resolver, event: yaml.ScalarEvent) -> Any:
    """The JSON value of a scalar, by the YAML 1.2 core schema (quoted scalars are always text)."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = resolver.resolve(yaml.ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
    text = event.value
    if tag == _STANDARD_TAG + "null":
        return None
    if tag == _STANDARD_TAG + "bool":
        return text.lower() == "true"
    if tag == _STANDARD_TAG + "int":
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)
    if tag == _STANDARD_TAG + "float":
        lowered = text.lower()
        if lowered.endswith(".inf"):
            return float("-inf") if lowered.startswith("-") else float("inf")
        if lowered == ".nan":
            return float("nan")
        return float(text)
    return text


class _Frame:
    """A mapping or sequence being read: its value, pointer, and (for a mapping) the key read last."""

    def __init__(self, value: dict[str, Any] | list[Any], pointer: str) -> None:
        self.value = value
        self.pointer = pointer
        self.key: str | None = None


def _read(source: str) -> tuple[Any, dict[str, Mark]] | list[Issue]:
    """Build the value from the parser's events, iteratively, with the mark of every pointer; raises the
    parser's `yaml.YAMLError` where the text does not parse (once what stands before the fault is read)."""
    read = read_events(source, MAX_DEPTH)
    resolver = _Resolver()
    issues: list[Issue] = []
    marks: dict[str, Mark] = {}
    stack: list[_Frame] = []
    root: Any = None
    for event in read.events:
        start = event.start_mark
        mark = (start.line + 1, start.column + 1) if start is not None else (1, 1)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            issues.append(Issue(mark[0], mark[1], "", NO_ANCHORS))
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!" and not tag.startswith(_STANDARD_TAG):
            issues.append(Issue(mark[0], mark[1], "", NO_TAGS))
        if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
            stack.pop()
            continue
        if not isinstance(event, yaml.ScalarEvent | yaml.SequenceStartEvent | yaml.MappingStartEvent | yaml.AliasEvent):
            continue
        frame = stack[-1] if stack else None
        if frame is not None and isinstance(frame.value, dict) and frame.key is None:
            if not isinstance(event, yaml.ScalarEvent):
                return [Issue(mark[0], mark[1], frame.pointer, "A key is plain text")]
            key = event.value
            if key in frame.value:
                child = f"{frame.pointer}/{escape(key)}"
                issues.append(Issue(mark[0], mark[1], child, DUPLICATE_KEY.format(key=key)))
            frame.key = key
            continue
        opens = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if len(stack) + (1 if opens else 0) > MAX_DEPTH:
            return [Issue(mark[0], mark[1], "", VALUE_TOO_DEEP)]
        value: Any
        if isinstance(event, yaml.ScalarEvent):
            value = _scalar(resolver, event)
            if isinstance(value, float) and not math.isfinite(value):
                issues.append(Issue(mark[0], mark[1], "", NOT_FINITE))
        elif isinstance(event, yaml.SequenceStartEvent):
            value = []
        elif isinstance(event, yaml.MappingStartEvent):
            value = {}
        else:
            value = None
        if frame is None:
            pointer = ""
            root = value
        elif isinstance(frame.value, dict):
            assert frame.key is not None
            pointer = f"{frame.pointer}/{escape(frame.key)}"
            frame.value[frame.key] = value
            frame.key = None
        else:
            pointer = f"{frame.pointer}/{len(frame.value)}"
            frame.value.append(value)
        marks[pointer] = mark
        if isinstance(value, dict | list):
            stack.append(_Frame(value, pointer))
    if isinstance(read.fault, NestedTooDeep):  # the last event opened past the bound, refused above
        return [Issue(read.fault.line + 1, read.fault.column + 1, "", VALUE_TOO_DEEP)]
    if read.fault is not None:
        raise read.fault
    if issues:
        return issues
    return root, marks


def read_yaml(source: str) -> ReadDocument | list[Issue]:
    """The document, or the issues that keep it from being read (the pointer `""` is the whole document)."""
    try:
        read = _read(source)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        message = " ".join(str(error.problem or error.context or "").split())
        return [Issue(line, column, "", DOES_NOT_PARSE + message)]
    except yaml.YAMLError as error:
        return [Issue(1, 1, "", DOES_NOT_PARSE + " ".join(str(error).split()))]
    if isinstance(read, list):
        return read
    value, marks = read
    if not isinstance(value, dict):
        return [Issue(1, 1, "", NOT_A_MAPPING)]
    return ReadDocument(value, marks)
