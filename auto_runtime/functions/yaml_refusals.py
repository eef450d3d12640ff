"""The one reader of user documents' YAML: the refusal pre-scan and the parse are one reading of the text.

`read_events` reads a text's parser events once, stopping at the first collection nested past a bound; every
user document's YAML (computation, recall, reasoning, interaction and prediction front matter, workflow
documents, OpenAPI documents of tool connections) is read through it, and what a caller needs is made from those
events without reading the text again: the refusals (`refusals_in`), the node tree (`compose`, as
`yaml.compose` with the safe loader would make it) and the values (`construct`, as `yaml.safe_load` would).

What no user document's YAML may hold, found before any value is built: anchors, aliases, merge keys, and
collections nested past a bound. An alias repeats a value without writing it out, so a few hundred bytes can
stand for megabytes once built (each alias of an alias doubles it); a merge key (`<<`) copies a mapping in the
same way. `refusals_in` reads only the parser's events (nothing is composed or expanded), and gives each place
with the words the workflow reader uses. A quoted `"<<"` is an ordinary key.

Depth: PyYAML's pure-Python scanner keeps a possible simple key for every open flow collection and looks at all
of them for every token, so reading a 64 KiB run of `[[[[…` to its end takes tens of seconds; reading stops at
the first collection nested past `max_depth`, which bounds the work by the depth (the scanner looks at most
1,024 characters ahead of a possible key), not by the document's length.

libyaml: when PyYAML was built with it and the text ends with a line feed, the events come from its C parser,
which gives the same events many times faster (values, tags, implicit flags, anchors, marks; a plain scalar's
style is `""` where Python says None, and no reader here tells them apart). A text without a final line feed is
read by the Python parser: libyaml puts the ends of the last line's collections, document and stream at the
start of a line after it. Its error words differ from the Python parser's, and it takes no text holding a lone
surrogate, so on any failure of the C parser the Python parser reads the text again and its events and error
are the answer: every refusal reads the same with or without libyaml (`tests/unit/test_yaml_reading.py` reads
each of its texts with both).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

NO_ANCHORS = "YAML anchors and aliases are not available; write the value out where it is used"
NO_MERGE_KEYS = "YAML merge keys (<<) are not available; write the value out where it is used"

_C_PARSER: type[Any] | None = getattr(getattr(yaml, "cyaml", None), "CParser", None)
"""libyaml's parser, or None when PyYAML was built without it (then `yaml.cyaml` holds no `CParser`)."""


@dataclass(frozen=True)
class YamlRefusal:
    """One refused place: its document line and column (1-based) and the words."""

    line: int
    column: int
    words: str


class NestedTooDeep(Exception):
    """A collection opens more than `max_depth` levels deep, at `line` and `column` (0-based in the text)."""

    def __init__(self, line: int, column: int = 0) -> None:
        super().__init__(f"a collection nested too deep at line {line + 1}")
        self.line = line
        self.column = column


@dataclass(frozen=True)
class ReadEvents:
    """A text's parser events up to where reading stopped, and why it stopped early, if it did.

    `fault` is None when the whole text was read; a `NestedTooDeep` when a collection opened past the bound (that
    collection's start is the last event); a `yaml.YAMLError` when the text does not parse there (the events are
    those the parser gave before the fault)."""

    events: list[yaml.Event]
    fault: NestedTooDeep | yaml.YAMLError | None


def read_events(text: str, max_depth: int) -> ReadEvents:
    """Read `text`'s events once, stopping at the first collection nested past `max_depth` levels."""
    if _C_PARSER is not None and text.endswith("\n"):
        try:
            read = _bounded(_C_PARSER(text), max_depth)
        except Exception:  # any failure of libyaml: the Python parser reads the text again, below
            read = None
        if read is not None and not isinstance(read.fault, yaml.YAMLError):
            return read
    try:
        return _bounded(yaml.SafeLoader(text), max_depth)
    except yaml.YAMLError as error:  # the reader's fault on the first characters, before any event
        return ReadEvents([], error)


def _bounded(parser: Any, max_depth: int) -> ReadEvents:
    events: list[yaml.Event] = []
    depth = 0
    try:
        while parser.check_event():
            event = parser.get_event()
            events.append(event)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > max_depth:
                    mark = event.start_mark
                    line, column = (int(mark.line), int(mark.column)) if mark is not None else (0, 0)
                    return ReadEvents(events, NestedTooDeep(line, column))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as error:
        return ReadEvents(events, error)
    finally:
        parser.dispose()
    return ReadEvents(events, None)


def refusals_in(events: Iterable[yaml.Event], first_line: int) -> Iterator[YamlRefusal]:
    """Every anchor, alias and merge key among `events`, in order; `first_line` is the text's first line in its
    document."""
    open_mappings: list[list[bool]] = []  # per open collection: [is a mapping, its next node is a key]
    for event in events:
        mark = event.start_mark
        line = (int(mark.line) if mark is not None else 0) + first_line
        column = (int(mark.column) if mark is not None else 0) + 1
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            yield YamlRefusal(line, column, NO_ANCHORS)
        if isinstance(event, yaml.CollectionEndEvent):
            open_mappings.pop()
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        parent = open_mappings[-1] if open_mappings else None
        if parent is not None and parent[0]:
            is_key = parent[1]
            parent[1] = not is_key
            if is_key and isinstance(event, yaml.ScalarEvent) and event.value == "<<" and event.implicit[0]:
                yield YamlRefusal(line, column, NO_MERGE_KEYS)
        if isinstance(event, yaml.MappingStartEvent):
            open_mappings.append([True, True])
        elif isinstance(event, yaml.SequenceStartEvent):
            open_mappings.append([False, False])


class _Replay(Composer, SafeConstructor, Resolver):
    """The safe loader's composer, constructor and resolver, fed from events already read."""

    def __init__(self, events: list[yaml.Event]) -> None:
        self._events = events
        self._next = 0
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    def check_event(self, *choices: type[yaml.Event]) -> bool:
        if self._next >= len(self._events):
            return False
        return not choices or isinstance(self._events[self._next], choices)

    def peek_event(self) -> yaml.Event:
        return self._events[self._next]

    def get_event(self) -> yaml.Event:
        event = self._events[self._next]
        self._next += 1
        return event


Composed = tuple[yaml.Node | None, Any]
"""A text's node tree (None for an empty text) and its values."""


def compose(events: list[yaml.Event]) -> yaml.Node | None:
    """The node tree of a whole text's events, as `yaml.compose(text, Loader=yaml.SafeLoader)` makes it (raising
    its `yaml.YAMLError` for more than one document)."""
    node: yaml.Node | None = _Replay(events).get_single_node()
    return node


def construct(node: yaml.Node | None) -> Any:
    """The values of a node tree, as `yaml.safe_load` makes them (raising its `yaml.YAMLError`).

    A scalar the safe constructor cannot make (a timestamp such as `2001-13-45`, where PyYAML raises
    `ValueError`) raises a `yaml.YAMLError` saying so at the document's start, as any other unreadable value."""
    if node is None:
        return None
    try:
        return _Replay([]).construct_document(node)
    except ValueError as error:
        raise yaml.constructor.ConstructorError(
            None, None, f"found a value that cannot be read ({error})", node.start_mark
        ) from None


def read_front_matter_yaml(text: str, first_line: int, max_depth: int) -> Composed | list[YamlRefusal]:
    """Front matter read once into its node tree and its values, or the refusals found in it.

    Raises `NestedTooDeep` when a collection nests past `max_depth` before any fault; otherwise the refusals
    found before a fault win over the fault, which is raised as the parser's (or the composer's or the
    constructor's) `yaml.YAMLError` when nothing was refused.
    """
    read = read_events(text, max_depth)
    if isinstance(read.fault, NestedTooDeep):
        raise read.fault
    refused = list(refusals_in(read.events, first_line))
    if refused:
        return refused
    if read.fault is not None:
        raise read.fault
    node = compose(read.events)
    return node, construct(node)
