"""An interaction document (interaction-format §1): its keys, templates, pointers and reply rule, checked at once.

`parse_document` returns the typed document, or every problem found as (line, pointer, words), which the type
reports under `/source` as reasoning documents are reported. It reads no setting and calls nothing: servers and
tools are never checked at save.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.functions.durations import DAY_MS, MINUTE_MS, interaction_duration_ms
from auto_runtime.functions.interaction.arguments import (
    CONVERSATION_NAMES,
    DELIVER_NAMES,
    MAX_ARGUMENTS_BYTES,
    REPLIES_NAMES,
    TELL_NAMES,
    TO_NAMES,
    ArgumentText,
    arguments_read_input,
    compile_text,
    render_arguments,
)
from auto_runtime.functions.reasoning.document import issue_lines, read_document
from auto_runtime.functions.reasoning.front_checker import FrontMatterChecker
from auto_runtime.functions.reasoning.front_matter import FrontMatter, Problem
from auto_runtime.functions.reasoning.json_schemas import schema_problems
from auto_runtime.functions.reasoning.template import (
    RenderProblem,
    StructureAmongText,
    Template,
    TemplateProblem,
    render_text,
)
from auto_runtime.json_pointers import escape, tokens_of

MEDIA_TYPE = "text/markdown"
TOP_KEYS = ("description", "call", "to", "from", "expires", "deliver", "replies", "reply", "input", "output")
REQUEST_KEYS = ("to", "expires", "deliver", "replies", "from", "reply")
SERVER = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
TOOL = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
SERVER_WORDS = "Expected a server name: 1 to 32 lowercase letters, digits and hyphens, starting with a letter"
TOOL_WORDS = "Expected a tool name: 1 to 128 letters, digits, _, - and ."
POINTER_WORDS = (
    "Expected a JSON Pointer such as /items: it starts with a slash, writes ~ as ~0 and a slash within a name as ~1"
)
NO_MESSAGE = "The definition has no message: write it after the front matter"
STRUCTURE_WORDS = (
    "The template renders an object or array among text: write | json after it, or write it alone as one {{ }}"
)
ORDERS = ("oldest_first", "newest_first")
MAX_RULE_VALUES = 16
MAX_RULE_WORDS = 16
MAX_RULE_WORD_BYTES = 64
SAMPLE_MOMENT = "2026-01-01T00:00:00Z"
CALL_LONGEST_MS = 70_000


@dataclass(frozen=True)
class ToolPlace:
    """A server and tool a call, a delivery, a read or a telling goes through, with its typed arguments."""

    server: str
    tool: str
    arguments: Any


@dataclass(frozen=True)
class Call:
    place: ToolPlace
    read: str | None


@dataclass(frozen=True)
class RulePart:
    """Where one property of the answer comes from in a reply's words (§1.5)."""

    source: str  # word, rest or text
    words: Mapping[str, tuple[str, ...]] | None = None

    def as_record(self) -> Any:
        if self.source != "word" or self.words is None:
            return self.source
        return {"from": "word", "words": {value: list(words) for value, words in self.words.items()}}


@dataclass(frozen=True)
class InteractionDocument:
    source: str
    description: str | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    call: Call | None
    to: ArgumentText | None
    answerer: ArgumentText | None
    expires_ms: int | None
    deliver: ToolPlace | None
    deliver_written: dict[str, Any] | None
    replies_written: dict[str, Any] | None
    reply_rule: dict[str, RulePart] | None
    message: Template | None
    message_source: str

    @property
    def takes_answer(self) -> bool:
        return self.call is None and self.output_schema is not None

    @property
    def longest_run_ms(self) -> int:
        """A run's longest life: a call's 70 s (§2.1), a request's `expires`."""
        return CALL_LONGEST_MS if self.call is not None else int(self.expires_ms or 0)


def is_pointer(value: Any) -> bool:
    if not isinstance(value, str) or not value.startswith("/"):
        return False
    return re.search(r"~(?![01])", value) is None


def resolve_pointer(document: Any, pointer: str) -> tuple[bool, Any]:
    """(True, the value at `pointer` in `document`), or (False, None) when nothing is there (RFC 6901)."""
    value = document
    for name in tokens_of(pointer):
        if isinstance(value, dict) and name in value:
            value = value[name]
        elif isinstance(value, list) and name.isdigit() and (name == "0" or not name.startswith("0")):
            index = int(name)
            if index >= len(value):
                return False, None
            value = value[index]
        else:
            return False, None
    return True, value


def normalized_word(word: str) -> str:
    """A word as replies and synonyms are compared: lowercased, punctuation and symbols stripped from both ends."""
    lowered = word.lower()
    start, end = 0, len(lowered)
    while start < end and unicodedata.category(lowered[start])[0] in "PS":
        start += 1
    while end > start and unicodedata.category(lowered[end - 1])[0] in "PS":
        end -= 1
    return lowered[start:end]


class _Checker(FrontMatterChecker):
    """The front matter's checks and an interaction document's templates, whose `input` fields are `closed`
    (the input schema's, when it allows no others)."""

    def __init__(self, front: FrontMatter, closed: frozenset[str] | None) -> None:
        super().__init__(front)
        self.closed = closed

    def template(self, pointer: str, value: Any, names: frozenset[str]) -> ArgumentText | None:
        if not isinstance(value, str):
            self.add(pointer, "Expected a template as text")
            return None
        compiled = compile_text(value, self.front.line_of(pointer), names, self.closed)
        if isinstance(compiled, list):
            for problem in compiled:
                self.problems.append(Problem(problem.line, pointer, problem.words))
            return None
        return compiled

    def arguments(self, pointer: str, value: Any, names: frozenset[str], samples: Mapping[str, Any]) -> Any:
        """A `with` block, typed (§1.3): each text template that reads no `input` rendered once with sample
        values, and the whole block, when it reads no `input`, measured."""
        if not isinstance(value, dict):
            self.add(pointer, "Expected an object of arguments")
            return {}
        before = len(self.problems)
        written = self._typed(pointer, value, names, samples)
        if len(self.problems) > before or arguments_read_input(written):
            return written
        try:
            rendered = render_arguments(written, samples)
        except (StructureAmongText, RenderProblem):
            return written
        if len(json.dumps(rendered, ensure_ascii=False).encode("utf-8")) > MAX_ARGUMENTS_BYTES:
            self.add(pointer, f"The arguments take more than {MAX_ARGUMENTS_BYTES:,} bytes as JSON")
        return written

    def sample_text(self, pointer: str, text: ArgumentText, samples: Mapping[str, Any]) -> None:
        """A text template that reads no `input`, rendered once with sample values (§1.2)."""
        if text.reads_input:
            return
        try:
            render_text(text.template, samples)
        except StructureAmongText:
            self.add(pointer, STRUCTURE_WORDS)
        except RenderProblem:
            return

    def _typed(self, pointer: str, value: Any, names: frozenset[str], samples: Mapping[str, Any]) -> Any:
        if isinstance(value, str):
            text = self.template(pointer, value, names)
            if text is not None and not text.alone:
                self.sample_text(pointer, text, samples)
            return text
        if isinstance(value, dict):
            return {key: self._typed(f"{pointer}/{escape(key)}", item, names, samples) for key, item in value.items()}
        if isinstance(value, list):
            return [self._typed(f"{pointer}/{index}", item, names, samples) for index, item in enumerate(value)]
        return value

    def pointer(self, pointer: str, value: Any) -> str | None:
        if not is_pointer(value):
            self.add(pointer, POINTER_WORDS)
            return None
        return str(value)

    def place(
        self, pointer: str, section: dict[str, Any], names: frozenset[str], samples: Mapping[str, Any]
    ) -> ToolPlace:
        server = section.get("server")
        tool = section.get("tool")
        if "server" not in section:
            self.add(pointer, f"{pointer[1:].replace('/', '.')} needs a server")
        elif not isinstance(server, str) or not SERVER.match(server):
            self.add(f"{pointer}/server", SERVER_WORDS)
        if "tool" not in section:
            self.add(pointer, f"{pointer[1:].replace('/', '.')} needs a tool")
        elif not isinstance(tool, str) or not TOOL.match(tool):
            self.add(f"{pointer}/tool", TOOL_WORDS)
        arguments = self.arguments(f"{pointer}/with", section.get("with", {}), names, samples)
        return ToolPlace(str(server or ""), str(tool or ""), arguments)


def _closed_fields(schema: dict[str, Any] | None) -> frozenset[str] | None:
    if schema is None or schema.get("additionalProperties") is not False:
        return None
    properties = schema.get("properties")
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def _schema(check: _Checker, section: Any, pointer: str) -> dict[str, Any] | None:
    found = check.mapping(pointer, section, ("schema",), "an object with schema")
    if found is None or "schema" not in found:
        return None
    schema = found["schema"]
    if not isinstance(schema, dict):
        check.add(f"{pointer}/schema", "Expected a JSON Schema object")
        return None
    problems = schema_problems(schema)
    for inner, words in problems:
        check.add(f"{pointer}/schema{inner}", words)
    return None if problems else schema


def _samples(output_schema: dict[str, Any] | None) -> dict[str, Any]:
    sent = {"conversation": "conversation", "id": "id"}
    return {
        "today": SAMPLE_MOMENT[:10],
        "now": SAMPLE_MOMENT,
        "to": "party",
        "message": "message",
        "run_id": "00000000-0000-0000-0000-000000000000",
        "function": "function",
        "expires_at": SAMPLE_MOMENT,
        "answer_schema": output_schema,
        "sent": sent,
        "conversation": "conversation:id",
        "since": "",
    }


def _rule(check: _Checker, value: Any, output_schema: dict[str, Any] | None) -> dict[str, RulePart] | None:
    if not isinstance(value, dict):
        check.add("/reply", "Expected an object of answer properties")
        return None
    if output_schema is None:
        return None
    rule = value
    properties = output_schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    parts: dict[str, RulePart] = {}
    for name, part in rule.items():
        pointer = f"/reply/{escape(name)}"
        field = properties.get(name)
        if output_schema.get("type") != "object" or not isinstance(field, dict) or field.get("type") != "string":
            check.add(pointer, f"The answer schema has no top-level string property {name}")
            continue
        if part in ("rest", "text"):
            parts[name] = RulePart(str(part))
            continue
        words: dict[str, Any] = {}
        if isinstance(part, dict):
            check.mapping(pointer, part, ("from", "words"), "word, rest, text or { from: word, words }")
            if part.get("from") != "word":
                check.add(f"{pointer}/from", "Expected from: word")
            found = part.get("words", {})
            if not isinstance(found, dict):
                check.add(f"{pointer}/words", "Expected an object of enum values to their words")
                found = {}
            words = found
        elif part != "word":
            check.add(pointer, "Expected word, rest, text or { from: word, words }")
            continue
        enum = field.get("enum")
        if not isinstance(enum, list) or not all(isinstance(item, str) for item in enum):
            check.add(pointer, f"A word fills only a property with enum, and {name} has none")
            continue
        if len(enum) > MAX_RULE_VALUES:
            check.add(pointer, f"A word may stand for at most {MAX_RULE_VALUES} values")
        meaning: dict[str, str] = {normalized_word(item): item for item in enum}
        synonyms: dict[str, tuple[str, ...]] = {}
        for value_name, listed in words.items():
            at = f"{pointer}/words/{escape(value_name)}"
            if value_name not in enum:
                check.add(at, f"{value_name} is not a value of the enum of {name}")
                continue
            if not isinstance(listed, list) or not all(isinstance(word, str) for word in listed):
                check.add(at, "Expected a list of words")
                continue
            if len(listed) > MAX_RULE_WORDS:
                check.add(at, f"A value may have at most {MAX_RULE_WORDS} words")
            for word in listed:
                if len(word.encode("utf-8")) > MAX_RULE_WORD_BYTES:
                    check.add(at, f"A word may be at most {MAX_RULE_WORD_BYTES} bytes")
                key = normalized_word(word)
                if meaning.setdefault(key, value_name) != value_name:
                    check.add(at, f"The word {word} means {meaning[key]} already")
            synonyms[value_name] = tuple(listed)
        parts[name] = RulePart("word", synonyms)
    return parts


def derived_rule(output_schema: dict[str, Any] | None) -> dict[str, RulePart] | None:
    """The rule of §1.5 when `reply` is left out: one required string property, `word` with `enum`, else `text`."""
    if output_schema is None or output_schema.get("type") != "object":
        return None
    required = output_schema.get("required")
    properties = output_schema.get("properties")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(properties, dict):
        return None
    field = properties.get(required[0])
    if not isinstance(field, dict) or field.get("type") != "string":
        return None
    return {str(required[0]): RulePart("word" if isinstance(field.get("enum"), list) else "text")}


def _call(check: _Checker, value: Any, samples: Mapping[str, Any]) -> Call | None:
    section = check.mapping("/call", value, ("server", "tool", "with", "read"), "an object with server and tool")
    if section is None:
        return None
    place = check.place("/call", section, TO_NAMES, samples)
    read = check.pointer("/call/read", section["read"]) if "read" in section else None
    return Call(place, read)


def _replies(check: _Checker, value: Any, samples: Mapping[str, Any]) -> None:
    keys = ("conversation", "tool", "with", "read", "wait", "tell")
    section = check.mapping("/replies", value, keys, "an object saying how replies are read")
    if section is None:
        return
    if "conversation" in section:
        check.template("/replies/conversation", section["conversation"], CONVERSATION_NAMES)
    if "tool" in section and (not isinstance(section["tool"], str) or not TOOL.match(section["tool"])):
        check.add("/replies/tool", TOOL_WORDS)
    check.arguments("/replies/with", section.get("with", {}), REPLIES_NAMES, samples)
    read = check.mapping("/replies/read", section.get("read"), ("list", "order", "each"), "read: { list, order, each }")
    if read is not None:
        if "list" not in read:
            check.add("/replies/read", "replies.read needs list")
        else:
            check.pointer("/replies/read/list", read["list"])
        if read.get("order") not in ORDERS:
            check.add(
                "/replies/read/order" if "order" in read else "/replies/read",
                "Expected order: oldest_first or newest_first",
            )
        each = check.mapping(
            "/replies/read/each", read.get("each"), ("id", "sender", "text", "to"), "each: { id, sender, text }"
        )
        if each is not None:
            for name in ("id", "sender", "text"):
                if name not in each:
                    check.add("/replies/read/each", f"replies.read.each needs {name}")
            for name, item in each.items():
                if name in ("id", "sender", "text", "to"):
                    check.pointer(f"/replies/read/each/{name}", item)
    if "wait" in section:
        wait = interaction_duration_ms(section["wait"])
        if wait is None or not 5_000 <= wait <= 3_600_000:
            check.add("/replies/wait", "Expected a duration from PT5S to PT1H")
    if "tell" in section:
        tell = check.mapping("/replies/tell", section["tell"], ("tool", "with"), "tell: { tool, with }")
        if tell is not None:
            if "tool" in tell and (not isinstance(tell["tool"], str) or not TOOL.match(tell["tool"])):
                check.add("/replies/tell/tool", TOOL_WORDS)
            check.arguments("/replies/tell/with", tell.get("with", {}), TELL_NAMES, samples)


def _deliver(check: _Checker, value: Any, samples: Mapping[str, Any]) -> ToolPlace | None:
    section = check.mapping("/deliver", value, ("server", "tool", "with", "sent"), "an object with server and tool")
    if section is None:
        return None
    place = check.place("/deliver", section, DELIVER_NAMES, samples)
    if "sent" in section:
        sent = check.mapping("/deliver/sent", section["sent"], ("conversation", "id"), "sent: { conversation, id }")
        if sent is not None:
            if ("conversation" in sent) != ("id" in sent):
                check.add("/deliver/sent", "deliver.sent takes both conversation and id, or neither")
            for name in ("conversation", "id"):
                if name in sent:
                    check.pointer(f"/deliver/sent/{name}", sent[name])
    return place


def _request_rules(check: _Checker, fields: dict[str, Any], output_schema: dict[str, Any] | None) -> None:
    if "to" in fields and "expires" not in fields:
        check.add("/to", "A request needs expires: an ISO 8601 duration from PT1M to P30D, such as PT6H")
    if "replies" in fields:
        deliver = fields.get("deliver")
        if "deliver" not in fields:
            check.add("/replies", "replies needs deliver: replies are read through the tool server that delivers")
        elif isinstance(deliver, dict) and "sent" not in deliver:
            check.add("/replies", "replies needs deliver.sent, which says where the message landed")
        if output_schema is None and "output" not in fields:
            check.add("/replies", "replies needs output.schema: a notification takes no reply")
    for key in ("from", "reply"):
        if key in fields and output_schema is None and "output" not in fields:
            check.add(f"/{key}", f"{key} needs output.schema: a notification takes no answer")


def parse_document(source: str) -> InteractionDocument | list[Problem]:
    read = read_document(source)
    if isinstance(read, list):
        return read
    front, body, body_line = read
    fields = front.value
    probe = _Checker(front, None)
    if not isinstance(fields, dict):
        probe.add("", "The front matter must be an object of keys")
        return probe.problems
    input_schema = _schema(probe, fields["input"], "/input") if "input" in fields else None
    if input_schema is not None and input_schema.get("type") != "object":
        probe.add("/input/schema/type", "The input schema's root must be type: object")
        input_schema = None
    output_schema = _schema(probe, fields["output"], "/output") if "output" in fields else None
    check = _Checker(front, _closed_fields(input_schema))
    check.problems.extend(probe.problems)
    check.top_keys(fields, TOP_KEYS)
    description = check.description(fields)
    samples = _samples(output_schema)
    call: Call | None = None
    to = answerer = None
    expires: int | None = None
    deliver: ToolPlace | None = None
    rule: dict[str, RulePart] | None = None
    message: Template | None = None
    if "call" in fields:
        call = _call(check, fields["call"], samples)
        for key in REQUEST_KEYS:
            if key in fields:
                check.add(f"/{key}", f"{key} cannot stand beside call: a call asks a system, not a party")
        if body.strip():
            check.problems.append(
                Problem(body_line, "", "A function with call has no message: remove the text after the front matter")
            )
        if "output" not in fields or "schema" not in (fields.get("output") or {}):
            check.add("/call", "A function with call needs output.schema, the schema of the value it reads")
    else:
        if "to" not in fields:
            check.add("", "The front matter needs call (to ask a system) or to (to ask a party)")
        else:
            to = check.template("/to", fields["to"], TO_NAMES)
        if "from" in fields:
            answerer = check.template("/from", fields["from"], TO_NAMES)
        if "expires" in fields:
            expires = interaction_duration_ms(fields["expires"])
            if expires is None or not MINUTE_MS <= expires <= 30 * DAY_MS:
                check.add("/expires", "Expected an ISO 8601 duration from PT1M to P30D, such as PT6H")
        if "deliver" in fields:
            deliver = _deliver(check, fields["deliver"], samples)
        if "replies" in fields:
            _replies(check, fields["replies"], samples)
        _request_rules(check, fields, output_schema)
        if "reply" in fields:
            rule = _rule(check, fields["reply"], output_schema)
        elif output_schema is not None:
            rule = derived_rule(output_schema)
        if not body.strip():
            check.problems.append(Problem(body_line, "", NO_MESSAGE))
        else:
            compiled = compile_text(body, body_line, TO_NAMES, check.closed)
            if isinstance(compiled, list):
                check.problems.extend(Problem(p.line, "", p.words) for p in compiled)
            else:
                message = compiled.template
                check.sample_text("", compiled, samples)
        for pointer, text in (("/to", to), ("/from", answerer)):
            if text is not None:
                check.sample_text(pointer, text, samples)
    if check.problems:
        return check.problems
    return InteractionDocument(
        source=source,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        call=call,
        to=to,
        answerer=answerer,
        expires_ms=expires,
        deliver=deliver,
        deliver_written=fields.get("deliver"),
        replies_written=fields.get("replies"),
        reply_rule=rule,
        message=message,
        message_source=body,
    )


__all__ = ["MEDIA_TYPE", "InteractionDocument", "Problem", "TemplateProblem", "issue_lines", "parse_document"]
