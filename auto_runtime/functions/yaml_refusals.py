"""What no user document's YAML may hold: anchors, aliases and merge keys, found before any value is built.

An alias repeats a value without writing it out, so a few hundred bytes can stand for megabytes once built
(each alias of an alias doubles it); a merge key (`<<`) copies a mapping in the same way. `anchor_refusals`
reads only the parser's event stream (PyYAML's parser is an explicit state machine: nothing is composed or
expanded), and gives each place with the words the workflow reader uses. A quoted `"<<"` is an ordinary key.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from auto_runtime.functions.workflow.yaml_reader import NO_ANCHORS

NO_MERGE_KEYS = "YAML merge keys (<<) are not available; write the value out where it is used"


@dataclass(frozen=True)
class YamlRefusal:
    """One refused place: its document line and column (1-based) and the words."""

    line: int
    column: int
    words: str


def anchor_refusals(text: str, first_line: int) -> list[YamlRefusal]:
    """Every anchor, alias and merge key in `text`, whose first line is line `first_line` of the document.

    Text that does not parse gives what it gave before the fault; the caller's reader reports the fault.
    """
    refusals: list[YamlRefusal] = []
    open_mappings: list[list[bool]] = []  # per open collection: [is a mapping, its next node is a key]
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            mark = event.start_mark
            line = (int(mark.line) if mark is not None else 0) + first_line
            column = (int(mark.column) if mark is not None else 0) + 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                refusals.append(YamlRefusal(line, column, NO_ANCHORS))
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
                    refusals.append(YamlRefusal(line, column, NO_MERGE_KEYS))
            if isinstance(event, yaml.MappingStartEvent):
                open_mappings.append([True, True])
            elif isinstance(event, yaml.SequenceStartEvent):
                open_mappings.append([False, False])
    except yaml.YAMLError:
        pass
    return refusals
