"""Reading a workflow document's YAML into JSON values, with where each value starts.

The reader resolves scalars as JSON would (YAML 1.2 core): only `true`/`false` are booleans, so the
`on:` key of a `schedule` stays the text `on`, and dates stay text. Anchors, aliases, custom tags and
duplicate keys are refused, each at the place it stands. `marks` maps every JSON pointer of the value
to the 1-based line and column where the value written at it starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from auto_runtime.functions.workflow.issues import Issue

NO_ANCHORS = "YAML anchors and aliases are not available; write the value out where it is used"
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


class _Constructor(yaml.constructor.SafeConstructor):
    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)


_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # type: ignore[type-var]


class _Loader(
    yaml.reader.Reader,
    yaml.scanner.Scanner,
    yaml.parser.Parser,
    yaml.composer.Composer,
    _Constructor,
    _Resolver,
):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)


Mark = tuple[int, int]


@dataclass(frozen=True)
class ReadDocument:
    """The document's value and the (line, column) where the value at each pointer starts."""

    value: Any
    marks: dict[str, Mark]


def escape(token: str) -> str:
    """One JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _mark(node: yaml.Node) -> Mark:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _event_issues(source: str) -> list[Issue]:
    issues: list[Issue] = []
    for event in yaml.parse(source, Loader=_Loader):  # type: ignore[arg-type]
        start = event.start_mark
        mark = (start.line + 1, start.column + 1) if start is not None else (1, 1)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            issues.append(Issue(mark[0], mark[1], "", NO_ANCHORS))
        tag = getattr(event, "tag", None)
        if tag is not None and not tag.startswith(_STANDARD_TAG):
            issues.append(Issue(mark[0], mark[1], "", NO_TAGS))
    return issues


def _walk(node: yaml.Node, pointer: str, marks: dict[str, Mark], issues: list[Issue]) -> None:
    marks[pointer] = _mark(node)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            text = str(key.value) if isinstance(key, yaml.ScalarNode) else ""
            child = f"{pointer}/{escape(text)}"
            if text in seen:
                line, column = _mark(key)
                issues.append(Issue(line, column, child, DUPLICATE_KEY.format(key=text)))
            seen.add(text)
            _walk(value, child, marks, issues)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, f"{pointer}/{index}", marks, issues)


def read_yaml(source: str) -> ReadDocument | list[Issue]:
    """The document, or the issues that keep it from being read (the pointer `""` is the whole document)."""
    try:
        issues = _event_issues(source)
        if issues:
            return issues
        loader = _Loader(source)
        try:
            node = loader.get_single_node()
            if node is None:
                return [Issue(1, 1, "", NOT_A_MAPPING)]
            marks: dict[str, Mark] = {}
            _walk(node, "", marks, issues)
            if issues:
                return issues
            value = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        message = " ".join(str(error.problem or error.context or "").split())
        return [Issue(line, column, "", DOES_NOT_PARSE + message)]
    except yaml.YAMLError as error:
        return [Issue(1, 1, "", DOES_NOT_PARSE + " ".join(str(error).split()))]
    if not isinstance(value, dict):
        return [Issue(1, 1, "", NOT_A_MAPPING)]
    return ReadDocument(value, marks)
