"""Reading a reasoning document's front matter: YAML 1.2 core schema, with the line of every value.

PyYAML speaks YAML 1.1 (`yes`, `on` and dates become booleans and dates), so the values are built here from the
parser's events, resolving plain scalars by the 1.2 core schema: `null`/`~`/empty, `true`/`false`, integers
(decimal, `0o`, `0x`) and finite floats; everything else is a string. Anchors, aliases and merge keys are
refused first, every one at its line and in the workflow reader's words (`yaml_refusals`); so are tags,
duplicate keys, keys that are not plain text, non-finite numbers and nesting past 72 levels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from auto_runtime.functions.yaml_refusals import NestedTooDeep, read_events, refusals_in
from auto_runtime.json_pointers import escape

MAX_DEPTH = 72
TOO_DEEP = "The front matter may nest at most 72 levels"

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INFINITE = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


@dataclass(frozen=True)
class Problem:
    """One issue of a document: its line, the pointer of the field at fault (or ""), and the words."""

    line: int
    pointer: str
    words: str


@dataclass
class FrontMatter:
    """The values read, and the document line of each JSON pointer (a key's line for a mapping entry)."""

    value: Any
    lines: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line_of(self, pointer: str) -> int:
        while pointer and pointer not in self.lines:
            pointer = pointer.rsplit("/", 1)[0]
        return self.lines.get(pointer, 1)


class _NotReadable(Exception):
    def __init__(self, line: int, words: str) -> None:
        super().__init__(words)
        self.line = line
        self.words = words


def _scalar(event: yaml.ScalarEvent, line: int) -> Any:
    text = event.value
    if event.style is not None and event.style != "":
        return text
    if _NULL.match(text):
        return None
    if _TRUE.match(text):
        return True
    if _FALSE.match(text):
        return False
    if _INT.match(text):
        return int(text)
    if _OCT.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        number = float(text)
        if not math.isfinite(number):
            raise _NotReadable(line, f"The number {text} is not finite")
        return number
    if _INFINITE.match(text):
        raise _NotReadable(line, f"The number {text} is not finite")
    return text


class _Builder:
    def __init__(self, events: list[yaml.Event], offset: int) -> None:
        self.events = events
        self.index = 0
        self.offset = offset
        self.lines: dict[str, int] = {}

    def line(self, event: yaml.Event) -> int:
        mark = event.start_mark
        return (int(mark.line) if mark is not None else 0) + self.offset

    def next(self) -> yaml.Event:
        event = self.events[self.index]
        self.index += 1
        return event

    def check_node(self, event: yaml.Event) -> None:
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!":
            raise _NotReadable(self.line(event), f"Tags ({tag}) are not allowed in the front matter")

    def value(self, pointer: str, depth: int) -> Any:
        event = self.next()
        self.check_node(event)
        line = self.line(event)
        self.lines.setdefault(pointer, line)
        if isinstance(event, yaml.ScalarEvent):
            return _scalar(event, line)
        if depth > MAX_DEPTH:
            raise _NotReadable(line, TOO_DEEP)
        if isinstance(event, yaml.SequenceStartEvent):
            items: list[Any] = []
            while not isinstance(self.events[self.index], yaml.SequenceEndEvent):
                items.append(self.value(f"{pointer}/{len(items)}", depth + 1))
            self.next()
            return items
        if isinstance(event, yaml.MappingStartEvent):
            mapping: dict[str, Any] = {}
            while not isinstance(self.events[self.index], yaml.MappingEndEvent):
                key_event = self.next()
                self.check_node(key_event)
                key_line = self.line(key_event)
                if not isinstance(key_event, yaml.ScalarEvent):
                    raise _NotReadable(key_line, "A key of the front matter must be plain text")
                key = key_event.value
                child = f"{pointer}/{escape(key)}"
                if key in mapping:
                    raise _NotReadable(key_line, f"The key {key} is written twice")
                self.lines[child] = key_line
                mapping[key] = self.value(child, depth + 1)
            self.next()
            return mapping
        raise _NotReadable(line, "The front matter could not be read")


def read_front_matter(text: str, offset: int) -> FrontMatter:
    """The values of `text`, whose first line is line `offset` of the document."""
    read = read_events(text, MAX_DEPTH)
    events, error = read.events, read.fault
    if isinstance(error, NestedTooDeep):
        return FrontMatter(None, problems=[Problem(error.line + offset, "", TOO_DEEP)])
    if error is not None:
        mark = getattr(error, "problem_mark", None)
        line = int(mark.line) + offset if mark is not None else offset
        words = " ".join(str(getattr(error, "problem", None) or error).split())
        return FrontMatter(None, problems=[Problem(line, "", f"The front matter is not readable YAML: {words}")])
    refused = list(refusals_in(events, offset))
    if refused:
        return FrontMatter(None, problems=[Problem(refusal.line, "", refusal.words) for refusal in refused])
    documents = [e for e in events if isinstance(e, yaml.DocumentStartEvent)]
    if len(documents) > 1:
        return FrontMatter(None, problems=[Problem(offset, "", "The front matter holds more than one YAML document")])
    body = [e for e in events if not isinstance(e, yaml.StreamStartEvent | yaml.StreamEndEvent)]
    body = [e for e in body if not isinstance(e, yaml.DocumentStartEvent | yaml.DocumentEndEvent)]
    if not body:
        return FrontMatter({})
    builder = _Builder(body, offset)
    try:
        value = builder.value("", 1)
    except _NotReadable as problem:
        return FrontMatter(None, builder.lines, [Problem(problem.line, "", problem.words)])
    except RecursionError:
        return FrontMatter(None, builder.lines, [Problem(offset, "", TOO_DEEP)])
    return FrontMatter(value, builder.lines)
