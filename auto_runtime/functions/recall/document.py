"""A recall document: YAML front matter between two `---` lines, then the Python module.

`parse_document` runs passes 1 and 2 of the computation page's check (the front matter, then the module's
text by the computation program's rules with `fold` as the entry) with the recall page's rules in place of the
ones about `main`, and returns the typed document or its problems, each `(line, column, sentence)` with lines
counted from the opening `---`. The MicroPython compile pass (3) is the checker's (`check.py`).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

import yaml

from auto_runtime.functions.computation.document import (
    DESCRIPTION_LENGTH,
    FRONT_MATTER_DOES_NOT_PARSE,
    LANGUAGE_MISSING,
    LANGUAGE_OTHER,
    MAX_FRONT_MATTER_DEPTH,
    NESTS_TOO_DEEP,
    NO_PROGRAM,
    SplitDocument,
    key_lines,
    line_of,
    pointer_lines_of,
    schema_problems,
    split_document,
)
from auto_runtime.functions.recall import filters as rules
from auto_runtime.functions.recall.filters import EventFilter
from auto_runtime.functions.yaml_refusals import NestedTooDeep, read_front_matter_yaml
from auto_runtime.json_limits import compact_json, depth_of
from auto_runtime.json_pointers import escape
from auto_runtime.sandbox.limits import MAX_DEPTH
from auto_runtime.sandbox.program_rules import (
    DOES_NOT_PARSE,
    EntryRule,
    Problem,
    check_program,
    entry_problems,
    own_body_yields,
)
from auto_runtime.schema_issues import check_against_schema

MAX_VIEW_BYTES = 524_288
NOT_A_FIELD = " is not a field of a recall function"
FOLD_RULE = EntryRule(
    name="fold",
    parameters=2,
    missing="The module needs a top-level fold: def fold(view, event)",
    wrong_parameters="fold takes exactly two parameters: def fold(view, event)",
    yields="fold must return its result, not yield it",
)
ANSWER_RULE = EntryRule(
    name="answer",
    parameters=2,
    missing="",
    wrong_parameters="answer takes exactly two parameters: def answer(view, input)",
    yields="answer must return its result, not yield it",
)
INITIAL_TOO_LARGE = "view.initial takes more than the 524,288 bytes a view may"
INITIAL_REFUSED = "view.initial does not match view.schema: "
VIEW_TAKES = "view takes initial and schema"
SOURCE_TAKES = "source takes events"


@dataclass(frozen=True)
class RecallDocument:
    """A document that passed passes 1 and 2."""

    source: str
    description: str | None
    filters: tuple[EventFilter, ...]
    initial: Any
    view_schema: dict[str, Any] | bool | None
    input_schema: dict[str, Any] | bool | None
    output_schema: dict[str, Any] | bool | None
    module: str
    module_first_line: int
    has_answer: bool


@dataclass
class _Fields:
    description: str | None = None
    filters: tuple[EventFilter, ...] = ()
    initial: Any = None
    view_schema: Any = None
    input_schema: Any = None
    output_schema: Any = None


def _front_matter(split: SplitDocument) -> tuple[Any, yaml.Node | None, list[Problem]]:
    offset = 2
    try:
        read = read_front_matter_yaml(split.front_matter, offset, MAX_FRONT_MATTER_DEPTH)
        if isinstance(read, list):
            return None, None, [(refusal.line, 0, refusal.words) for refusal in read]
        node, loaded = read
    except NestedTooDeep as deep:
        return None, None, [(deep.line + offset, 0, FRONT_MATTER_DOES_NOT_PARSE + NESTS_TOO_DEEP)]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + offset if mark is not None else 1
        message = " ".join(str(getattr(error, "problem", None) or error).split())
        return None, None, [(line, 0, FRONT_MATTER_DOES_NOT_PARSE + message)]
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        return None, None, [(2, 0, FRONT_MATTER_DOES_NOT_PARSE + "the front matter must be a mapping of fields")]
    return loaded, node, []


class _Reader:
    """Reads the front matter's fields into `_Fields`, noting each problem at its line."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.lines = key_lines(node, 2) if node is not None else {}
        self.pointers = pointer_lines_of(node, 2) if node is not None else {}
        self.problems: list[Problem] = []
        self.fields = _Fields()
        self.wheres: list[tuple[str, int]] = []

    def add(self, line: int, sentence: str) -> None:
        self.problems.append((line, 0, sentence))

    def read(self, fields: dict[Any, Any]) -> None:
        for key, value in fields.items():
            line = self.lines.get(str(key), 1)
            if key == "description":
                if not isinstance(value, str) or not 1 <= len(value) <= 1000:
                    self.add(line, DESCRIPTION_LENGTH)
                else:
                    self.fields.description = value
            elif key == "language":
                if value != "python":
                    self.add(line, LANGUAGE_OTHER)
            elif key == "source":
                self._source(value, line)
            elif key == "view":
                self._view(value, line)
            elif key in ("input", "output"):
                self._schema_field(str(key), value, line)
            else:
                self.add(line, f"{key}{NOT_A_FIELD}")
        if "language" not in fields:
            self.add(1, LANGUAGE_MISSING)
        source = fields.get("source")
        if not isinstance(source, dict) or "events" not in source:
            self.add(1, rules.EVENTS_MISSING)

    def _schema_field(self, key: str, value: Any, line: int) -> None:
        if not isinstance(value, dict):
            self.add(line, f"{key} takes schema")
            return
        for inner, inner_value in value.items():
            inner_line = self.lines.get(f"{key}.{inner}", line)
            if inner != "schema":
                self.add(inner_line, f"{key}.{inner}{NOT_A_FIELD}")
                continue
            refusals = schema_problems(f"{key}.schema", inner_value, inner_line, self.pointers)
            if refusals:
                self.problems.extend(refusals)
            elif key == "input":
                self.fields.input_schema = inner_value
            else:
                self.fields.output_schema = inner_value

    def _view(self, value: Any, line: int) -> None:
        if not isinstance(value, dict):
            self.add(line, VIEW_TAKES)
            return
        schema_usable = True
        for inner, inner_value in value.items():
            inner_line = self.lines.get(f"view.{inner}", line)
            if inner == "schema":
                refusals = schema_problems("view.schema", inner_value, inner_line, self.pointers)
                if refusals:
                    self.problems.extend(refusals)
                    schema_usable = False
                else:
                    self.fields.view_schema = inner_value
            elif inner != "initial":
                self.add(inner_line, f"view.{inner}{NOT_A_FIELD}")
        initial = value.get("initial")
        initial_line = self.lines.get("view.initial", line)
        if not _writable(initial):
            self.add(initial_line, INITIAL_TOO_LARGE)
            return
        self.fields.initial = initial
        if schema_usable and self.fields.view_schema is not None:
            schema = self.fields.view_schema
            as_schema = schema if isinstance(schema, dict) else ({} if schema else {"not": {}})
            issues = check_against_schema(as_schema, initial, "", "view.initial")
            if issues:
                self.add(initial_line, INITIAL_REFUSED + issues[0].detail)

    def _source(self, value: Any, line: int) -> None:
        if not isinstance(value, dict):
            self.add(line, SOURCE_TAKES)
            return
        for inner in value:
            if inner != "events":
                self.add(self.lines.get(f"source.{inner}", line), f"source.{inner}{NOT_A_FIELD}")
        if "events" not in value:
            return
        events = value["events"]
        events_line = self.lines.get("source.events", line)
        if events is None or events == []:
            self.add(events_line, rules.NO_FILTERS)
            return
        if not isinstance(events, list):
            self.add(events_line, rules.NOT_A_FILTER)
            return
        if len(events) > rules.MAX_FILTERS:
            self.add(events_line, rules.TOO_MANY.format(count=len(events)))
            return
        read: list[EventFilter] = []
        for index, item in enumerate(events):
            found = self._filter(item, f"/source/events/{index}", events_line)
            if found is not None:
                read.append(found)
        self.fields.filters = tuple(read)

    def _filter(self, item: Any, pointer: str, fallback: int) -> EventFilter | None:
        line = line_of(self.pointers, pointer, fallback)
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.add(line, rules.NOT_A_FILTER)
            return None
        attributes: dict[str, str | int | bool] = {}
        where: str | None = None
        ok = True
        for key, value in item.items():
            key_line = line_of(self.pointers, f"{pointer}/{escape(key)}", line)
            if key == "data":
                if not _writable(value):
                    self.add(key_line, rules.COMPARES_WITH.format(key="data"))
                    ok = False
            elif key == "where":
                where = value if isinstance(value, str) else str(value)
                self.wheres.append((where, key_line))
            elif not isinstance(key, str) or not rules.ATTRIBUTE_NAME.match(key):
                self.add(key_line, rules.NOT_AN_ATTRIBUTE.format(key=key))
                ok = False
            elif not rules.is_attribute_value(value):
                self.add(key_line, rules.COMPARES_WITH.format(key=key))
                ok = False
            elif key == "type" and value in rules.REFUSED_TYPES:
                self.add(key_line, rules.NO_SUCH_EVENTS.format(type=value))
                ok = False
            else:
                attributes[key] = value
        if not ok:
            return None
        return EventFilter(attributes, item.get("data"), "data" in item, where)


def _writable(value: Any) -> bool:
    """JSON as a view must be: writable, at most 512 levels and 524,288 bytes."""
    try:
        text = compact_json(value)
    except (TypeError, ValueError):
        return False
    if json.loads(text) != value:
        return False
    return depth_of(value) <= MAX_DEPTH and len(text.encode("utf-8", errors="surrogatepass")) <= MAX_VIEW_BYTES


def _module_problems(module: str, first_line: int, wheres: list[tuple[str, int]]) -> tuple[list[Problem], bool]:
    """The module's problems (the computation rules with `fold` as the entry, then `answer` and the `where`
    functions), and whether it has a top-level `answer`."""
    problems = check_program(module, first_line, FOLD_RULE)
    if any(sentence.startswith(DOES_NOT_PARSE) for _line, _column, sentence in problems):
        return problems, False
    offset = first_line - 1
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for statement in ast.parse(module, filename="program", feature_version=(3, 11)).body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.setdefault(statement.name, statement)
    answer = functions.get("answer")
    if answer is not None:
        problems.extend(entry_problems(answer, offset, ANSWER_RULE))
    for name, line in wheres:
        function = functions.get(name)
        if function is None or name in ("fold", "answer") or not _takes_one_parameter(function):
            problems.append((line, 0, rules.WHERE_NAMES.format(name=name)))
        elif own_body_yields(function):
            problems.append(
                (function.lineno + offset, function.col_offset, f"{name} must return its result, not yield it")
            )
    return problems, answer is not None


def _takes_one_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    arguments = function.args
    return (
        len(arguments.args) == 1
        and not arguments.posonlyargs
        and not arguments.vararg
        and not arguments.kwarg
        and not arguments.kwonlyargs
        and not arguments.defaults
    )


def parse_document(source: str) -> RecallDocument | list[Problem]:
    """The document, or its problems from passes 1 and 2 sorted by line then column."""
    split = split_document(source)
    if not isinstance(split, SplitDocument):
        return [split]
    loaded, node, problems = _front_matter(split)
    reader = _Reader(node)
    if loaded is not None:
        reader.read(loaded)
    problems.extend(reader.problems)
    has_answer = False
    if not split.program.strip():
        problems.append((split.last_line, 0, NO_PROGRAM))
    else:
        module_problems, has_answer = _module_problems(split.program, split.program_first_line, reader.wheres)
        problems.extend(module_problems)
    if problems:
        return sorted(set(problems))
    fields = reader.fields
    return RecallDocument(
        source=source,
        description=fields.description,
        filters=fields.filters,
        initial=fields.initial,
        view_schema=fields.view_schema,
        input_schema=fields.input_schema,
        output_schema=fields.output_schema,
        module=split.program,
        module_first_line=split.program_first_line,
        has_answer=has_answer,
    )
