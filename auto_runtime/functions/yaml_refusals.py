"""What no user document's YAML may hold, found before any value is built: anchors, aliases, merge keys, and
collections nested past a bound.

An alias repeats a value without writing it out, so a few hundred bytes can stand for megabytes once built
(each alias of an alias doubles it); a merge key (`<<`) copies a mapping in the same way. `anchor_refusals`
reads only the parser's event stream (PyYAML's parser is an explicit state machine: nothing is composed or
expanded), and gives each place with the words the workflow reader uses. A quoted `"<<"` is an ordinary key.

`bounded_events` is the one way a user document's YAML is read into events. PyYAML's scanner keeps a possible
simple key for every open flow collection and looks at all of them for every token, so reading a 64 KiB run of
`[[[[…` to its end takes tens of seconds; reading stops at the first collection nested past `max_depth`, which
bounds the work by the depth (the scanner looks at most 1,024 characters ahead of a possible key), not by the
document's length.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import yaml

NO_ANCHORS = "YAML anchors and aliases are not available; write the value out where it is used"
NO_MERGE_KEYS = "YAML merge keys (<<) are not available; write the value out where it is used"


@dataclass(frozen=True)
class YamlRefusal:
    """One refused place: its document line and column (1-based) and the words."""

    line: int
    column: int
    words: str


class NestedTooDeep(Exception):
    """A collection opens more than `max_depth` levels deep, at `line` (0-based in the text)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"a collection nested too deep at line {line + 1}")
        self.line = line


def bounded_events(text: str, max_depth: int) -> Iterator[yaml.Event]:
    """The parser's events of `text`, one at a time; raises `NestedTooDeep` where a collection opens past
    `max_depth` levels, and `yaml.YAMLError` where the text does not parse."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                mark = event.start_mark
                raise NestedTooDeep(int(mark.line) if mark is not None else 0)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        yield event


def anchor_refusals(text: str, first_line: int, max_depth: int) -> list[YamlRefusal]:
    """Every anchor, alias and merge key in `text`, whose first line is line `first_line` of the document.

    Text that does not parse gives what it gave before the fault (the caller's reader reports the fault);
    text nesting past `max_depth` raises `NestedTooDeep`, so the caller never reads it further.
    """
    refusals: list[YamlRefusal] = []
    with contextlib.suppress(yaml.YAMLError):
        refusals.extend(refusals_in(bounded_events(text, max_depth), first_line))
    return refusals


def refusals_in(events: Iterable[yaml.Event], first_line: int) -> Iterator[YamlRefusal]:
    """Every anchor, alias and merge key among `events` (read already, for a caller that keeps them), in order."""
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
