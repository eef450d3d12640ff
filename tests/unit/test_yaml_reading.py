"""The one YAML reader (`functions.yaml_refusals`): one reading of the text, the same with or without libyaml.

The C parser's events are taken only where they equal the Python parser's: every text below is read by both and
compared event by event (type, value, tag, implicit flags, anchor, marks), and a text the C parser refuses is
answered with the Python parser's error, word for word. `compose` and `construct` over the events read once
give what `yaml.compose` and `yaml.safe_load` give for the text.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from auto_runtime.functions import yaml_refusals
from auto_runtime.functions.yaml_refusals import (
    NO_ANCHORS,
    NO_MERGE_KEYS,
    NestedTooDeep,
    YamlRefusal,
    compose,
    construct,
    read_events,
    read_front_matter_yaml,
    refusals_in,
)

TEXTS = [
    "a: 1\nb: [1, 2, {c: d}]\n",
    "é: ü\nname: 'x'\nt: \"\\u00e9\"\n",
    "😀: 1\nb: 😀😀 x\nc: [😀, {😀: 😀}]\n",
    "a: |\n  line\n  two\nb: >-\n  folded\n  text\n",
    "a: &x 1\nb: *x\n",
    "<<: {a: 1}\n",
    '"<<": 1\n',
    "x: !!str 1\ny: !custom 2\nz: !!binary aGk=\n",
    "%YAML 1.1\n---\na: 1\n",
    "a: 1\n...\n",
    "a: 1\n---\nb: 2\n",
    "a: 1\r\nb: 2\r\n",
    "a: 1\x85b: 2\n",
    "a: 1\u2028b: 2\n",
    "\ufeffa: 1\n",
    "? [a]\n: b\n",
    "? complex key\n: value\n",
    "{a: b, c: [d, e], f: {g: h}}",
    "[a:b, c: d]\n",
    "{a:b}\n",
    "- - - a\n- b\n",
    "a: 'it''s'\nb: \"esc \\t \\n \\\\ \\x41\"\n",
    "key with spaces: value # comment\n# only a comment\n",
    "",
    "# only\n",
    "~\n",
    "- null\n- true\n- 0o17\n- 0x1F\n- 1e3\n- .inf\n- .nan\n- 2001-12-14\n",
    "a:\n  b:\n    c:\n      - d\n      - e: f\n        g: h\n",
    "a: " + "x" * 2000 + "\n",
    "x" * 1100 + ": 1\n",
    "a: b: c\n",
    "a:\n\t- 1\n",
    "- [\n",
    "a: [1, 2\nb: 3\n",
    "a: 'open\n",
    'a: "\\q"\n',
    "a: 1\n a: 2\n",
    "- a\nb: c\n",
    "a: \x07\n",
    "&a [*a]\n",
    "a: *missing\n",
    "[" * 20 + "]" * 20,
    "{a: 1, a: 2}\n",
    "? - a\n: b\n",
    "a: 2001-12-14\nb: 2001-12-14 21:59:43.10 -5\n",
]
TEXTS += [text + "\n" for text in TEXTS if not text.endswith("\n")]  # each also as libyaml reads it


def _python_events(text: str) -> tuple[list[yaml.Event], yaml.YAMLError | None]:
    events: list[yaml.Event] = []
    try:
        events.extend(yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as error:
        return events, error
    return events, None


def _shape(event: yaml.Event) -> tuple[Any, ...]:
    start, end = event.start_mark, event.end_mark
    return (
        type(event).__name__,
        getattr(event, "value", None),
        getattr(event, "tag", None),
        getattr(event, "implicit", None),
        getattr(event, "anchor", None),
        getattr(event, "style", None) or None,  # libyaml writes a plain scalar's style as "", Python as None
        getattr(event, "flow_style", None),
        getattr(event, "explicit", None),
        (start.line, start.column, end.line, end.column),
    )


def _error_shape(error: yaml.YAMLError | None) -> tuple[Any, ...] | None:
    if error is None:
        return None
    mark = getattr(error, "problem_mark", None)
    return (type(error).__name__, str(error) if mark is None else getattr(error, "problem", None), mark and mark.line)


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_events_and_the_error_are_the_python_parsers(text: str) -> None:
    expected, error = _python_events(text)
    read = read_events(text, 512)
    assert [_shape(event) for event in read.events] == [_shape(event) for event in expected]
    assert _error_shape(read.fault if isinstance(read.fault, yaml.YAMLError) else None) == _error_shape(error)


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml here")
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_where_libyaml_reads_a_text_its_events_are_the_python_parsers(text: str) -> None:
    """The premise of taking the C parser's events for a text that ends with a line feed: equal, or a failure
    (then the Python parser answers)."""
    text = text if text.endswith("\n") else text + "\n"
    c_events: list[yaml.Event] = []
    try:
        c_events.extend(yaml.parse(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return
    expected, error = _python_events(text)
    assert error is None, "libyaml read a text the Python parser refuses"
    assert [_shape(event) for event in c_events] == [_shape(event) for event in expected]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_compose_and_construct_give_what_yaml_gives(text: str) -> None:
    read = read_events(text, 512)
    try:
        expected_node = yaml.compose(text, Loader=yaml.SafeLoader)
        expected_value = yaml.safe_load(text)
    except yaml.YAMLError as error:
        expected = _error_shape(error)
        if read.fault is not None:
            assert isinstance(read.fault, yaml.YAMLError)
            assert _error_shape(read.fault) == expected
            return
        with pytest.raises(yaml.YAMLError) as raised:
            construct(compose(read.events))
        assert _error_shape(raised.value) == expected
        return
    assert read.fault is None
    node = compose(read.events)
    assert (node is None) == (expected_node is None)
    assert repr(construct(node)) == repr(expected_value)


def test_a_value_the_safe_constructor_cannot_make_is_a_yaml_error() -> None:
    """PyYAML's own `safe_load` raises `ValueError` for this date; the reader says it as any unreadable value."""
    with pytest.raises(ValueError, match=r"month must be in 1\.\.12"):
        yaml.safe_load("a: 2001-13-45\n")
    with pytest.raises(yaml.constructor.ConstructorError, match=r"month must be in 1\.\.12"):
        construct(compose(read_events("a: 2001-13-45\n", 512).events))


def test_the_c_parser_is_used_when_pyyaml_has_it() -> None:
    assert (yaml_refusals._C_PARSER is not None) == yaml.__with_libyaml__


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml here")
def test_a_text_ending_with_a_line_feed_is_read_by_libyaml_and_one_without_by_python() -> None:
    assert read_events("a: 1\n", 8).events[-1].start_mark.__class__.__module__ == "yaml._yaml"
    assert read_events("a: 1", 8).events[-1].start_mark.__class__.__module__ == "yaml.error"
    assert read_events("a: b: c\n", 8).fault.problem == "mapping values are not allowed here"  # type: ignore[union-attr]


def test_a_text_holding_a_lone_surrogate_gets_the_python_readers_error() -> None:
    read = read_events("a: \ud800\n", 512)
    assert isinstance(read.fault, yaml.reader.ReaderError)
    assert read.events == []


def test_nesting_to_the_bound_is_read_and_one_more_stops_at_that_collection() -> None:
    assert read_events("[" * 72 + "]" * 72, 72).fault is None
    text = "a:\n  b: " + "[" * 72 + "]" * 72 + "\n"
    read = read_events(text, 72)
    assert isinstance(read.fault, NestedTooDeep)
    assert (read.fault.line, read.fault.column) == (1, 5 + 70)
    last = read.events[-1]
    assert isinstance(last, yaml.SequenceStartEvent)
    assert (last.start_mark.line, last.start_mark.column) == (1, 75)


def test_a_long_run_of_open_brackets_stops_at_the_bound() -> None:
    read = read_events("[" * 65_536, 512)
    assert isinstance(read.fault, NestedTooDeep)
    assert len(read.events) == 2 + 513  # the stream and document starts, then the collections read


def test_the_refusals_name_each_anchor_alias_and_merge_key_in_document_lines() -> None:
    text = "a: &x 1\nb: *x\n<<: {c: 1}\n'<<': 2\n"
    assert list(refusals_in(read_events(text, 512).events, 2)) == [
        YamlRefusal(2, 4, NO_ANCHORS),
        YamlRefusal(3, 4, NO_ANCHORS),
        YamlRefusal(4, 1, NO_MERGE_KEYS),
    ]


def test_front_matter_refusals_before_a_fault_win_and_the_fault_is_raised_otherwise() -> None:
    assert read_front_matter_yaml("a: &x 1\nb: [\n", 2, 256) == [YamlRefusal(2, 4, NO_ANCHORS)]
    with pytest.raises(yaml.YAMLError):
        read_front_matter_yaml("a: 1\nb: [\n", 2, 256)
    with pytest.raises(NestedTooDeep):
        read_front_matter_yaml("a: &x " + "[" * 257, 2, 256)
    node, value = read_front_matter_yaml("a: [1, {b: c}]\n", 2, 256)  # type: ignore[misc]
    assert value == {"a": [1, {"b": "c"}]}
    assert isinstance(node, yaml.MappingNode)
