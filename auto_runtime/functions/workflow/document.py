"""A workflow document checked at save (spec 2 and 2.1): every field and task kind, every refusal at its place.

`check_document(source, max_duration_ms)` reads the YAML and walks the whole document, collecting every issue
at the pointer and line where the value starts. A document without issues comes back as a
`WorkflowDocument`: the value as written, its description, schemas, shape, triggers, the functions it
calls, and each expression with its place (for the sandbox's compile pass).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.events.cloudevents import RESERVED_ATTRIBUTES, RESERVED_TYPES
from auto_runtime.functions.durations import duration_ms
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.functions.workflow import places
from auto_runtime.functions.workflow.cron import parse_cron
from auto_runtime.functions.workflow.expressions import (
    check_expression,
    condition_expression,
    variable_name_problem,
    words_at,
    wrapped_expression,
)
from auto_runtime.functions.workflow.issues import Issue
from auto_runtime.functions.workflow.yaml_reader import ReadDocument, read_yaml
from auto_runtime.json_pointers import escape, tokens_of
from auto_runtime.user_schemas import check_user_schema

TASK_KINDS = ("call", "do", "emit", "for", "fork", "listen", "raise", "set", "switch", "try", "wait")
COMMON_TASK_FIELDS = ("if", "input", "output", "export", "timeout", "then", "metadata")
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "call": ("call", "with"),
    "do": ("do",),
    "emit": ("emit",),
    "for": ("for", "while", "do"),
    "fork": ("fork",),
    "listen": ("listen",),
    "raise": ("raise",),
    "set": ("set",),
    "switch": ("switch",),
    "try": ("try", "catch"),
    "wait": ("wait",),
}
RESERVED_SOURCES = ("/runs/", "/definitions/", "/callers/")
MAX_TASK_LIST_DEPTH = 64
MAX_VALUE_DEPTH = 512
MAX_FORK_BRANCHES = 32
MAX_FILTERS = 64
MIN_EVERY_MS = 60_000
FLOW_DIRECTIVES = ("continue", "exit", "end")

EVALUATE_WORDS = (
    "Workflow expressions are written in Python; leave evaluate out or write evaluate: { language: python }"
)
NOT_A_FIELD = "{key} is not a field of {where}"
NEEDS = "It needs {key}"
NO_KIND = "A task needs one kind: " + ", ".join(TASK_KINDS)
TWO_KINDS = "A task has one kind; this one has {kinds}"
RUN_TASK = (
    "run tasks are not available: the world is reached only through the playbook's functions (call: run_definition)"
)
OTHER_CALL = "Only call: run_definition is available: the world is reached only through the playbook's functions"
WITH_KEYS = "run_definition takes with: { type, name, input }"
WITH_STRINGS = "run_definition needs a string type and a string name"
USE_REFUSED = "use.{key} is not available: a workflow reaches the world only through the playbook's functions"
TASK_SCHEMA = "Schemas stand only on the document's input and output, not on a task"
SCHEMA_INLINE = "A schema is written inline, as schema: { document: <JSON Schema> }"
NOT_A_SCHEMA = "It is not a JSON Schema: "
SCHEMA_OR_SHAPE = "output takes schema or shape, not both"
UNKNOWN_SHAPE = "output.shape names no output shape the runtime knows; the known shapes are "
LISTEN_REFUSED = "listen.{key} is not available: a listen takes its events with to and reads them with read"
LISTEN_READ = "listen.read is data, envelope or raw"
LISTEN_TO = "listen.to takes one of one, any or all"
SCHEDULE_AFTER = "schedule.after is not available: a workflow starts on on, cron or every"
ON_ALL = "on.all is not available: a trigger starts on one event, with one or any"
ON_UNTIL = "on.until is not available: a trigger starts on one event, with one or any"
ON_FORM = "on takes one: <filter> or any: [filters]"
EMPTY_SCHEDULE = "schedule names at least one of on, cron and every"
TOO_MANY_FILTERS = "A trigger takes at most 64 filters"
FILTER_TYPE = "A trigger filter needs a literal type: with: { type: <event type> }"
FILTER_REPEATED = "This filter is the same as an earlier one"
FILTER_ATTRIBUTE = (
    "A trigger filter matches literal type, source and subject, data, and the extensions caller, triggerkind, depth, "
    "calldepth and definitionversion"
)
EVERY_LITERAL = "every is a literal duration, not an expression"
EVERY_TOO_SHORT = "every is at least one minute (PT1M)"
EMIT_NEEDS = "An emitted event needs a type and a source"
EMIT_ID = "An emitted event takes no id: the runtime derives it, so a resumed run emits it once"
EMIT_RESERVED_TYPE = "The type {value} is reserved for what the runtime records itself"
EMIT_RESERVED_SOURCE = (
    "Sources beginning /runs/, /definitions/ or /callers/ are reserved for what the runtime records itself"
)
EMIT_RESERVED_ATTRIBUTE = "The attribute {key} is reserved for what the runtime records itself"
EMIT_SOURCE_URI = "A literal source is an absolute URI; write a relative one as an expression, '${ \"/billing\" }'"
THEN_NO_TASK = "then: {name} names no task in the same list"
BRANCH_THEN = "A fork branch's then is continue, exit or end"
SAME_NAME = "The task name {name} is used twice in this list"
TASK_ENTRY = "A task is a mapping of one name to its definition: - <name>: <definition>"
TASK_LIST = "A task list is a sequence of tasks: - <name>: <definition>"
USE_MISSING = "use.{component} has no {what} named {name}"
DURATION_TOO_LONG = "The duration is longer than WORKFLOW_MAX_DURATION ({limit})"
LIST_TOO_DEEP = "Task lists are nested at most 64 deep"
VALUE_TOO_DEEP = "Values are nested at most 512 deep"
TOO_MANY_BRANCHES = "A fork has at most 32 branches"
DSL_VERSION = "document.dsl is one of 1.0.0, 1.0.1, 1.0.2 and 1.0.3"
DNS_NAME = "It is lowercase letters and digits with single hyphens between them, such as month-close"
SEMVER = "It is a semantic version such as 1.0.0"
TEXT = "It is text"
MAPPING = "It is a mapping"
SEQUENCE = "It is a sequence"
INTEGER = "It is a whole number"
BOOLEAN = "It is true or false"
SET_VALUE = "set is a mapping or one expression written ${ … }"
SWITCH_CASE_THEN = "A switch case needs then"
CATCH_AS = "catch.as"
BACKOFF = "backoff is one of constant, linear and exponential"
ERROR_REF = "raise.error is an error (type, status, and optionally title, detail, instance) or a name in use.errors"

_DSL_VERSIONS = ("1.0.0", "1.0.1", "1.0.2", "1.0.3")


def _is_dns_name(value: object) -> bool:
    import re

    return isinstance(value, str) and re.fullmatch(r"[a-z0-9](-?[a-z0-9])*", value) is not None


def _is_semver(value: object) -> bool:
    import re

    return (
        isinstance(value, str)
        and re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?", value)
        is not None
    )


@dataclass(frozen=True)
class Expression:
    """One expression of the document: where it stands, its text and the names its place binds."""

    pointer: str
    text: str
    place: tuple[str, ...]


@dataclass(frozen=True)
class Trigger:
    """One trigger of `schedule`, as the definition shows it."""

    kind: str
    reference: str
    filters: tuple[dict[str, Any], ...] = ()
    expression: str | None = None
    milliseconds: int | None = None

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"kind": self.kind, "reference": self.reference}
        if self.kind == "event":
            shown["filters"] = [dict(f) for f in self.filters]
        elif self.kind == "cron":
            shown["expression"] = self.expression
        else:
            shown["milliseconds"] = self.milliseconds
        return shown


@dataclass(frozen=True)
class Call:
    """A `run_definition` call whose type and name are literal, for the **Used by** lines."""

    reference: str
    type: str
    name: str


@dataclass(frozen=True)
class WorkflowDocument:
    """A document that passed every save-time check but the sandbox's compile pass."""

    source: str
    value: dict[str, Any]
    description: str | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    shape: str | None
    triggers: tuple[Trigger, ...]
    calls: tuple[Call, ...]
    expressions: tuple[Expression, ...]
    steps: tuple[tuple[int, str, str], ...]
    """(nesting level, reference, kind) of every task, in document order."""
    marks: dict[str, tuple[int, int]]
    """Where the value at each pointer starts (line, column)."""


@dataclass
class _Scope:
    """The names expressions may read at a place inside the task tree."""

    loop: tuple[str, ...] = ()
    catch: tuple[str, ...] = ()

    def t(self) -> tuple[str, ...]:
        return ("context", "workflow", "runtime", "task", *self.loop, *self.catch)


@dataclass
class _Walk:
    read: ReadDocument
    max_duration_ms: int
    issues: list[Issue] = field(default_factory=list)
    expressions: list[Expression] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    steps: list[tuple[int, str, str]] = field(default_factory=list)
    uses: dict[str, dict[str, Any]] = field(default_factory=dict)

    # -- issues -------------------------------------------------------------------------------------------
    def add(self, pointer: str, words: str) -> None:
        line, column = self._mark(pointer)
        self.issues.append(Issue(line, column, pointer, words))

    def _mark(self, pointer: str) -> tuple[int, int]:
        marks = self.read.marks
        while pointer not in marks and pointer:
            pointer = pointer.rsplit("/", 1)[0]
        return marks.get(pointer, (1, 1))

    def mapping(self, value: Any, pointer: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.add(pointer, MAPPING)
            return None
        return value

    def known_keys(self, value: dict[str, Any], pointer: str, keys: tuple[str, ...], where: str) -> None:
        for key in value:
            if key not in keys:
                self.add(f"{pointer}/{escape(key)}", NOT_A_FIELD.format(key=key, where=where))

    # -- expressions and values -------------------------------------------------------------------------
    def expression(self, text: str, pointer: str, place: tuple[str, ...]) -> None:
        problems = check_expression(text, place)
        for problem in problems:
            self.add(pointer, words_at(problem))
        if not problems:
            self.expressions.append(Expression(pointer, text, place))

    def condition(self, value: Any, pointer: str, place: tuple[str, ...]) -> None:
        if not isinstance(value, str):
            self.add(pointer, TEXT)
            return
        self.expression(condition_expression(value), pointer, place)

    def template(self, value: Any, pointer: str, place: tuple[str, ...], depth: int = 0) -> None:
        if depth > MAX_VALUE_DEPTH:
            self.add(pointer, VALUE_TOO_DEEP)
            return
        text = wrapped_expression(value)
        if text is not None:
            self.expression(text, pointer, place)
        elif isinstance(value, dict):
            for key, item in value.items():
                self.template(item, f"{pointer}/{escape(key)}", place, depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                self.template(item, f"{pointer}/{index}", place, depth + 1)

    def shaping(self, value: Any, pointer: str, place: tuple[str, ...]) -> None:
        """`input.from`, `output.as`, `export.as`: an expression string (with or without `${ }`) or a template."""
        if isinstance(value, str):
            self.expression(condition_expression(value), pointer, place)
        else:
            self.template(value, pointer, place)

    def duration(self, value: Any, pointer: str, place: tuple[str, ...]) -> None:
        text = wrapped_expression(value)
        if text is not None:
            self.expression(text, pointer, place)
            return
        ms = duration_ms(value)
        if isinstance(ms, str):
            self.add(pointer, ms)
        elif ms > self.max_duration_ms:
            from auto_runtime.functions.durations import iso_ms

            self.add(pointer, DURATION_TOO_LONG.format(limit=iso_ms(self.max_duration_ms)))

    def timeout(self, value: Any, pointer: str, place: tuple[str, ...]) -> None:
        if isinstance(value, str):
            if value not in self.uses.get("timeouts", {}):
                self.add(pointer, USE_MISSING.format(component="timeouts", what="timeout", name=value))
            return
        timeout = self.mapping(value, pointer)
        if timeout is None:
            return
        self.known_keys(timeout, pointer, ("after",), "a timeout")
        if "after" not in timeout:
            self.add(pointer, NEEDS.format(key="after"))
        else:
            self.duration(timeout["after"], f"{pointer}/after", place)

    def schema(self, value: Any, pointer: str) -> dict[str, Any] | None:
        schema = self.mapping(value, pointer)
        if schema is None:
            return None
        if "resource" in schema or "document" not in schema:
            self.add(pointer, SCHEMA_INLINE)
            return None
        self.known_keys(schema, pointer, ("format", "document"), "a schema")
        if schema.get("format", "json") != "json":
            self.add(f"{pointer}/format", SCHEMA_INLINE)
        document = schema["document"]
        if not isinstance(document, dict | bool):
            self.add(f"{pointer}/document", NOT_A_SCHEMA + "a schema is an object or a boolean")
            return None
        refusals = check_user_schema(document)
        for inner, words in refusals:
            self.add(f"{pointer}/document{inner}", NOT_A_SCHEMA + words)
        if refusals:
            return None
        return document if isinstance(document, dict) else None


def check_document(source: str, max_duration_ms: int) -> WorkflowDocument | list[Issue]:
    """The checked document, or every issue found (unordered; see `issues.ordered`)."""
    read = read_yaml(source)
    if not isinstance(read, ReadDocument):
        return read
    walk = _Walk(read, max_duration_ms)
    root: dict[str, Any] = read.value
    description, input_schema, output_schema, shape = _top_level(walk, root)
    if walk.issues:
        return walk.issues
    return WorkflowDocument(
        source=source,
        value=root,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        shape=shape,
        triggers=tuple(walk.triggers),
        calls=tuple(walk.calls),
        expressions=tuple(walk.expressions),
        steps=tuple(walk.steps),
        marks=read.marks,
    )


TOP_FIELDS = ("document", "input", "output", "evaluate", "use", "timeout", "schedule", "do")


def _top_level(
    walk: _Walk, root: dict[str, Any]
) -> tuple[str | None, dict[str, Any] | None, dict[str, Any] | None, str | None]:
    walk.known_keys(root, "", TOP_FIELDS, "a workflow document")
    description = _header(walk, root)
    if "evaluate" in root:
        evaluate = root["evaluate"]
        if not isinstance(evaluate, dict):
            walk.add("/evaluate", EVALUATE_WORDS)
        else:
            for key, item in evaluate.items():
                allowed = {"language": "python", "mode": "strict"}
                if key not in allowed or item != allowed[key]:
                    walk.add(f"/evaluate/{escape(key)}", EVALUATE_WORDS)
    if "use" in root:
        _use(walk, root["use"])
    input_schema: dict[str, Any] | None = None
    if "input" in root:
        shaping = walk.mapping(root["input"], "/input")
        if shaping is not None:
            walk.known_keys(shaping, "/input", ("schema", "from"), "the document's input")
            if "schema" in shaping:
                input_schema = walk.schema(shaping["schema"], "/input/schema")
            if "from" in shaping:
                walk.shaping(shaping["from"], "/input/from", places.DOCUMENT_INPUT)
    output_schema: dict[str, Any] | None = None
    shape: str | None = None
    if "output" in root:
        shaping = walk.mapping(root["output"], "/output")
        if shaping is not None:
            walk.known_keys(shaping, "/output", ("schema", "shape", "as"), "the document's output")
            if "schema" in shaping and "shape" in shaping:
                walk.add("/output", SCHEMA_OR_SHAPE)
            if "schema" in shaping:
                output_schema = walk.schema(shaping["schema"], "/output/schema")
            if "shape" in shaping:
                if not isinstance(shaping["shape"], str) or shaping["shape"] not in SHAPES:
                    walk.add("/output/shape", UNKNOWN_SHAPE + ", ".join(sorted(SHAPES)))
                else:
                    shape = shaping["shape"]
                    output_schema = dict(SHAPES[shape].schema)
            if "as" in shaping:
                walk.shaping(shaping["as"], "/output/as", places.DOCUMENT_OUTPUT)
    if "timeout" in root:
        walk.timeout(root["timeout"], "/timeout", places.DOCUMENT_INPUT)
    if "schedule" in root:
        _schedule(walk, root["schedule"])
    if "do" not in root:
        walk.add("", NEEDS.format(key="do"))
    else:
        _task_list(walk, root["do"], "/do", _Scope(), 1, branches=False)
    return description, input_schema, output_schema, shape


def _header(walk: _Walk, root: dict[str, Any]) -> str | None:
    if "document" not in root:
        walk.add("", NEEDS.format(key="document"))
        return None
    header = walk.mapping(root["document"], "/document")
    if header is None:
        return None
    walk.known_keys(
        header, "/document", ("dsl", "namespace", "name", "version", "title", "summary", "tags", "metadata"),
        "document",
    )  # fmt: skip
    for key in ("dsl", "namespace", "name", "version"):
        if key not in header:
            walk.add("/document", NEEDS.format(key=key))
    if "dsl" in header and header["dsl"] not in _DSL_VERSIONS:
        walk.add("/document/dsl", DSL_VERSION)
    for key in ("namespace", "name"):
        if key in header and not _is_dns_name(header[key]):
            walk.add(f"/document/{key}", DNS_NAME)
    if "version" in header and not _is_semver(header["version"]):
        walk.add("/document/version", SEMVER)
    for key in ("title", "summary"):
        if key in header and not isinstance(header[key], str):
            walk.add(f"/document/{key}", TEXT)
    if "tags" in header and not isinstance(header["tags"], dict):
        walk.add("/document/tags", MAPPING)
    if "metadata" in header and not isinstance(header["metadata"], dict):
        walk.add("/document/metadata", MAPPING)
    for key in ("summary", "title"):
        text = header.get(key)
        if isinstance(text, str) and text.strip():
            return text
    return None


USE_FIELDS = ("errors", "retries", "timeouts", "functions", "extensions", "secrets", "authentications", "catalogs")


def _use(walk: _Walk, value: Any) -> None:
    use = walk.mapping(value, "/use")
    if use is None:
        return
    walk.known_keys(use, "/use", USE_FIELDS, "use")
    for key in ("functions", "extensions", "secrets", "authentications", "catalogs"):
        if key in use:
            walk.add(f"/use/{key}", USE_REFUSED.format(key=key))
    for key in ("errors", "retries", "timeouts"):
        if key in use:
            components = walk.mapping(use[key], f"/use/{key}")
            walk.uses[key] = components or {}
    for name, error in walk.uses.get("errors", {}).items():
        _error_template(walk, error, f"/use/errors/{escape(name)}", places.ANYWHERE)
    for name, retry in walk.uses.get("retries", {}).items():
        _retry(walk, retry, f"/use/retries/{escape(name)}", places.ANYWHERE)
    for name, timeout in walk.uses.get("timeouts", {}).items():
        pointer = f"/use/timeouts/{escape(name)}"
        if isinstance(timeout, str):
            walk.add(pointer, MAPPING)
        else:
            walk.timeout(timeout, pointer, places.ANYWHERE)


def _error_template(walk: _Walk, value: Any, pointer: str, place: tuple[str, ...]) -> None:
    if wrapped_expression(value) is not None:
        walk.template(value, pointer, place)
        return
    error = walk.mapping(value, pointer)
    if error is None:
        return
    walk.known_keys(error, pointer, ("type", "status", "instance", "title", "detail", "kind", "because"), "an error")
    for key in ("type", "status"):
        if key not in error:
            walk.add(pointer, NEEDS.format(key=key))
    status = error.get("status")
    if (
        "status" in error
        and wrapped_expression(status) is None
        and (isinstance(status, bool) or not isinstance(status, int))
    ):
        walk.add(f"{pointer}/status", INTEGER)
    kind = error.get("type")
    if "type" in error and wrapped_expression(kind) is None and not isinstance(kind, str):
        walk.add(f"{pointer}/type", TEXT)
    walk.template(error, pointer, place)


def _retry(walk: _Walk, value: Any, pointer: str, place: tuple[str, ...]) -> None:
    retry = walk.mapping(value, pointer)
    if retry is None:
        return
    walk.known_keys(retry, pointer, ("when", "exceptWhen", "limit", "delay", "backoff", "jitter"), "a retry policy")
    for key in ("when", "exceptWhen"):
        if key in retry:
            walk.condition(retry[key], f"{pointer}/{key}", place)
    if "delay" in retry:
        walk.duration(retry["delay"], f"{pointer}/delay", place)
    if "backoff" in retry:
        backoff = retry["backoff"]
        if isinstance(backoff, str):
            if backoff not in ("constant", "linear", "exponential"):
                walk.add(f"{pointer}/backoff", BACKOFF)
        elif isinstance(backoff, dict) and len(backoff) == 1 and next(iter(backoff)) in (
            "constant", "linear", "exponential",
        ):  # fmt: skip
            pass
        else:
            walk.add(f"{pointer}/backoff", BACKOFF)
    if "jitter" in retry:
        jitter = walk.mapping(retry["jitter"], f"{pointer}/jitter")
        if jitter is not None:
            walk.known_keys(jitter, f"{pointer}/jitter", ("from", "to"), "jitter")
            for key in ("from", "to"):
                if key not in jitter:
                    walk.add(f"{pointer}/jitter", NEEDS.format(key=key))
                else:
                    walk.duration(jitter[key], f"{pointer}/jitter/{key}", place)
    if "limit" in retry:
        limit = walk.mapping(retry["limit"], f"{pointer}/limit")
        if limit is not None:
            walk.known_keys(limit, f"{pointer}/limit", ("attempt", "duration"), "a retry limit")
            if "duration" in limit:
                walk.duration(limit["duration"], f"{pointer}/limit/duration", place)
            if "attempt" in limit:
                attempt = walk.mapping(limit["attempt"], f"{pointer}/limit/attempt")
                if attempt is not None:
                    walk.known_keys(attempt, f"{pointer}/limit/attempt", ("count", "duration"), "limit.attempt")
                    count = attempt.get("count")
                    if "count" in attempt and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                        walk.add(f"{pointer}/limit/attempt/count", INTEGER)
                    if "duration" in attempt:
                        walk.duration(attempt["duration"], f"{pointer}/limit/attempt/duration", place)


# -- schedule ----------------------------------------------------------------------------------------------

TRIGGER_FILTER_KEYS = (
    "type",
    "source",
    "subject",
    "data",
    "caller",
    "triggerkind",
    "depth",
    "calldepth",
    "definitionversion",
)


def _schedule(walk: _Walk, value: Any) -> None:
    schedule = walk.mapping(value, "/schedule")
    if schedule is None:
        return
    walk.known_keys(schedule, "/schedule", ("on", "cron", "every", "after"), "schedule")
    if "after" in schedule:
        walk.add("/schedule/after", SCHEDULE_AFTER)
    if not any(key in schedule for key in ("on", "cron", "every")):
        walk.add("/schedule", EMPTY_SCHEDULE)
    for key in schedule:
        if key == "on":
            _on(walk, schedule["on"])
        elif key == "cron":
            cron = parse_cron(schedule["cron"])
            if isinstance(cron, str):
                walk.add("/schedule/cron", cron)
            else:
                walk.triggers.append(Trigger("cron", "/schedule/cron", expression=str(schedule["cron"])))
        elif key == "every":
            if wrapped_expression(schedule["every"]) is not None:
                walk.add("/schedule/every", EVERY_LITERAL)
                continue
            ms = duration_ms(schedule["every"])
            if isinstance(ms, str):
                walk.add("/schedule/every", ms)
            elif ms < MIN_EVERY_MS:
                walk.add("/schedule/every", EVERY_TOO_SHORT)
            else:
                walk.triggers.append(Trigger("every", "/schedule/every", milliseconds=ms))


def _on(walk: _Walk, value: Any) -> None:
    on = walk.mapping(value, "/schedule/on")
    if on is None:
        return
    for key in on:
        if key == "all":
            walk.add("/schedule/on/all", ON_ALL)
        elif key == "until":
            walk.add("/schedule/on/until", ON_UNTIL)
        elif key not in ("one", "any"):
            walk.add(f"/schedule/on/{escape(key)}", NOT_A_FIELD.format(key=key, where="on"))
    forms = [key for key in ("one", "any") if key in on]
    if len(forms) != 1:
        if not any(key in on for key in ("all", "until")) or forms:
            walk.add("/schedule/on", ON_FORM)
        return
    filters: list[tuple[str, Any]]
    if forms[0] == "one":
        filters = [("/schedule/on/one", on["one"])]
    else:
        listed = on["any"]
        if not isinstance(listed, list) or not listed:
            walk.add("/schedule/on/any", ON_FORM)
            return
        if len(listed) > MAX_FILTERS:
            walk.add("/schedule/on/any", TOO_MANY_FILTERS)
            return
        filters = [(f"/schedule/on/any/{i}", item) for i, item in enumerate(listed)]
    shown: list[dict[str, Any]] = []
    seen: list[Any] = []
    before = len(walk.issues)
    for pointer, item in filters:
        attributes = _trigger_filter(walk, item, pointer)
        if attributes is None:
            continue
        if item in seen:
            walk.add(pointer, FILTER_REPEATED)
        seen.append(item)
        kind = attributes.pop("type")
        shown.append({"reference": pointer, "type": kind, "attributes": attributes})
    if len(walk.issues) == before:
        walk.triggers.append(Trigger("event", "/schedule/on", filters=tuple(shown)))


def _trigger_filter(walk: _Walk, value: Any, pointer: str) -> dict[str, Any] | None:
    item = walk.mapping(value, pointer)
    if item is None:
        return None
    walk.known_keys(item, pointer, ("with",), "a trigger filter")
    attributes = item.get("with")
    if (
        not isinstance(attributes, dict)
        or not isinstance(attributes.get("type"), str)
        or wrapped_expression(attributes.get("type")) is not None
    ):
        walk.add(f"{pointer}/with" if "with" in item else pointer, FILTER_TYPE)
        return None
    ok = True
    for key, attribute in attributes.items():
        at = f"{pointer}/with/{escape(key)}"
        if key not in TRIGGER_FILTER_KEYS:
            walk.add(at, FILTER_ATTRIBUTE)
            ok = False
        elif key == "data":
            walk.template(attribute, at, places.FILTER)
        elif wrapped_expression(attribute) is not None:
            walk.add(at, FILTER_ATTRIBUTE)
            ok = False
        elif key in ("source", "subject", "caller", "triggerkind") and not isinstance(attribute, str):
            walk.add(at, TEXT)
            ok = False
        elif key in ("depth", "calldepth", "definitionversion") and (
            isinstance(attribute, bool) or not isinstance(attribute, int)
        ):
            walk.add(at, INTEGER)
            ok = False
    return dict(attributes) if ok else None


# -- tasks ------------------------------------------------------------------------------------------------


def _task_list(walk: _Walk, value: Any, pointer: str, scope: _Scope, depth: int, *, branches: bool) -> None:
    if depth > MAX_TASK_LIST_DEPTH:
        walk.add(pointer, LIST_TOO_DEEP)
        return
    if not isinstance(value, list):
        walk.add(pointer, TASK_LIST)
        return
    names: list[str] = []
    entries: list[tuple[int, str, Any]] = []
    for index, entry in enumerate(value):
        at = f"{pointer}/{index}"
        if not isinstance(entry, dict) or len(entry) != 1:
            walk.add(at, TASK_ENTRY)
            continue
        name, task = next(iter(entry.items()))
        name = str(name)
        if name in names:
            walk.add(f"{at}/{escape(name)}", SAME_NAME.format(name=name))
        names.append(name)
        entries.append((index, name, task))
    for index, name, task in entries:
        at = f"{pointer}/{index}/{escape(name)}"
        _task(walk, task, at, scope, depth, names, branch=branches)


_KIND_KEYS: tuple[str, ...] = ("call", "emit", "for", "fork", "listen", "raise", "set", "switch", "try", "wait", "run")


def _kind(task: dict[str, Any]) -> list[str]:
    kinds: list[str] = [key for key in _KIND_KEYS if key in task]
    if "do" in task and "for" not in task:
        kinds.append("do")
    return kinds


def _task(
    walk: _Walk, value: Any, pointer: str, scope: _Scope, depth: int, siblings: list[str], *, branch: bool
) -> None:
    task = walk.mapping(value, pointer)
    if task is None:
        return
    kinds = _kind(task)
    if "run" in kinds:
        walk.add(f"{pointer}/run", RUN_TASK)
        return
    if not kinds:
        walk.add(pointer, NO_KIND)
        return
    if len(kinds) > 1:
        walk.add(pointer, TWO_KINDS.format(kinds=" and ".join(kinds)))
        return
    kind = kinds[0]
    walk.steps.append((depth, pointer, kind))
    walk.known_keys(task, pointer, COMMON_TASK_FIELDS + KIND_FIELDS[kind], f"a {kind} task")
    t = scope.t()
    if "if" in task:
        walk.condition(task["if"], f"{pointer}/if", places.RAW_INPUT + t)
    if "timeout" in task:
        walk.timeout(task["timeout"], f"{pointer}/timeout", places.RAW_INPUT + t)
    if "input" in task:
        shaping = walk.mapping(task["input"], f"{pointer}/input")
        if shaping is not None:
            if "schema" in shaping:
                walk.add(f"{pointer}/input/schema", TASK_SCHEMA)
            walk.known_keys(shaping, f"{pointer}/input", ("from", "schema"), "a task's input")
            if "from" in shaping:
                walk.shaping(shaping["from"], f"{pointer}/input/from", places.RAW_INPUT + t)
    if "output" in task:
        shaping = walk.mapping(task["output"], f"{pointer}/output")
        if shaping is not None:
            if "schema" in shaping:
                walk.add(f"{pointer}/output/schema", TASK_SCHEMA)
            walk.known_keys(shaping, f"{pointer}/output", ("as", "schema"), "a task's output")
            if "as" in shaping:
                walk.shaping(shaping["as"], f"{pointer}/output/as", places.BODY + t + ("input",))
    if "export" in task:
        shaping = walk.mapping(task["export"], f"{pointer}/export")
        if shaping is not None:
            if "schema" in shaping:
                walk.add(f"{pointer}/export/schema", TASK_SCHEMA)
            walk.known_keys(shaping, f"{pointer}/export", ("as", "schema"), "a task's export")
            if "as" in shaping:
                walk.shaping(shaping["as"], f"{pointer}/export/as", places.BODY + t + ("input", "output"))
    if "then" in task:
        then = task["then"]
        if branch:
            if then not in FLOW_DIRECTIVES:
                walk.add(f"{pointer}/then", BRANCH_THEN)
        elif not isinstance(then, str):
            walk.add(f"{pointer}/then", TEXT)
        elif then not in FLOW_DIRECTIVES and then not in siblings:
            walk.add(f"{pointer}/then", THEN_NO_TASK.format(name=then))
    body = places.BODY + t + ("input",)
    KIND_CHECKS[kind](walk, task, pointer, scope, depth, body)


def _call(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    if task["call"] != "run_definition":
        walk.add(f"{pointer}/call", OTHER_CALL)
        return
    if "with" not in task:
        walk.add(pointer, NEEDS.format(key="with"))
        return
    arguments = task["with"]
    if wrapped_expression(arguments) is not None:
        walk.template(arguments, f"{pointer}/with", body)
        return
    if not isinstance(arguments, dict):
        walk.add(f"{pointer}/with", WITH_KEYS)
        return
    for key in arguments:
        if key not in ("type", "name", "input"):
            walk.add(f"{pointer}/with/{escape(key)}", WITH_KEYS)
    for key in ("type", "name"):
        if key not in arguments:
            walk.add(f"{pointer}/with", NEEDS.format(key=key))
        elif not isinstance(arguments[key], str):
            walk.add(f"{pointer}/with/{key}", WITH_STRINGS)
    walk.template(arguments, f"{pointer}/with", body)
    kind, name = arguments.get("type"), arguments.get("name")
    if (
        isinstance(kind, str)
        and isinstance(name, str)
        and wrapped_expression(kind) is None
        and wrapped_expression(name) is None
    ):
        walk.calls.append(Call(pointer, kind, name))


def _set(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    value = task["set"]
    if not isinstance(value, dict) and wrapped_expression(value) is None:
        walk.add(f"{pointer}/set", SET_VALUE)
    else:
        walk.template(value, f"{pointer}/set", body)


def _do(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    _task_list(walk, task["do"], f"{pointer}/do", scope, depth + 1, branches=False)


def _switch(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    cases = task["switch"]
    if not isinstance(cases, list):
        walk.add(f"{pointer}/switch", SEQUENCE)
        return
    siblings = _sibling_names(walk, pointer)
    for index, case in enumerate(cases):
        at = f"{pointer}/switch/{index}"
        if not isinstance(case, dict) or len(case) != 1:
            walk.add(at, "A switch case is a mapping of one name to { when, then }")
            continue
        name, definition = next(iter(case.items()))
        at = f"{at}/{escape(name)}"
        definition = walk.mapping(definition, at)
        if definition is None:
            continue
        walk.known_keys(definition, at, ("when", "then"), "a switch case")
        if "when" in definition:
            walk.condition(definition["when"], f"{at}/when", body)
        if "then" not in definition:
            walk.add(at, NEEDS.format(key="then"))
        else:
            then = definition["then"]
            if not isinstance(then, str):
                walk.add(f"{at}/then", TEXT)
            elif then not in FLOW_DIRECTIVES and then not in siblings:
                walk.add(f"{at}/then", THEN_NO_TASK.format(name=then))


def _sibling_names(walk: _Walk, pointer: str) -> list[str]:
    """The names of the tasks in the list holding the task at `pointer`."""
    list_pointer = pointer.rsplit("/", 2)[0]
    value: Any = walk.read.value
    for token in tokens_of(list_pointer):
        value = value[int(token)] if isinstance(value, list) else value[token]
    return [str(next(iter(entry))) for entry in value if isinstance(entry, dict) and len(entry) == 1]


def _for(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    loop = walk.mapping(task["for"], f"{pointer}/for")
    if loop is None:
        return
    walk.known_keys(loop, f"{pointer}/for", ("in", "each", "at"), "for")
    names: dict[str, str] = {"each": "item", "at": "index"}
    for key in ("each", "at"):
        if key in loop:
            problem = variable_name_problem(loop[key])
            if problem is not None:
                walk.add(f"{pointer}/for/{key}", problem)
            else:
                names[key] = loop[key]
    if "in" not in loop:
        walk.add(f"{pointer}/for", NEEDS.format(key="in"))
    else:
        walk.condition(loop["in"], f"{pointer}/for/in", body)
    inner = _Scope(loop=(*scope.loop, names["each"], names["at"]), catch=scope.catch)
    if "while" in task:
        walk.condition(task["while"], f"{pointer}/while", (*body, names["each"], names["at"]))
    if "do" not in task:
        walk.add(pointer, NEEDS.format(key="do"))
    else:
        _task_list(walk, task["do"], f"{pointer}/do", inner, depth + 1, branches=False)


def _fork(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    fork = walk.mapping(task["fork"], f"{pointer}/fork")
    if fork is None:
        return
    walk.known_keys(fork, f"{pointer}/fork", ("branches", "compete"), "fork")
    if "compete" in fork and not isinstance(fork["compete"], bool):
        walk.add(f"{pointer}/fork/compete", BOOLEAN)
    if "branches" not in fork:
        walk.add(f"{pointer}/fork", NEEDS.format(key="branches"))
        return
    if isinstance(fork["branches"], list) and len(fork["branches"]) > MAX_FORK_BRANCHES:
        walk.add(f"{pointer}/fork/branches", TOO_MANY_BRANCHES)
        return
    _task_list(walk, fork["branches"], f"{pointer}/fork/branches", scope, depth + 1, branches=True)


def _try(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    _task_list(walk, task["try"], f"{pointer}/try", scope, depth + 1, branches=False)
    if "catch" not in task:
        walk.add(pointer, NEEDS.format(key="catch"))
        return
    catch = walk.mapping(task["catch"], f"{pointer}/catch")
    if catch is None:
        return
    at = f"{pointer}/catch"
    walk.known_keys(catch, at, ("errors", "as", "when", "exceptWhen", "retry", "do"), "catch")
    name = "error"
    if "as" in catch:
        problem = variable_name_problem(catch["as"])
        if problem is not None:
            walk.add(f"{at}/as", problem)
        else:
            name = catch["as"]
    place = (*body, name)
    if "errors" in catch:
        errors = walk.mapping(catch["errors"], f"{at}/errors")
        if errors is not None:
            walk.known_keys(errors, f"{at}/errors", ("with",), "catch.errors")
            if "with" in errors:
                matched = walk.mapping(errors["with"], f"{at}/errors/with")
                if matched is not None:
                    walk.known_keys(
                        matched, f"{at}/errors/with",
                        ("type", "status", "instance", "title", "details", "kind", "because"), "catch.errors.with",
                    )  # fmt: skip
    for key in ("when", "exceptWhen"):
        if key in catch:
            walk.condition(catch[key], f"{at}/{key}", place)
    if "retry" in catch:
        retry = catch["retry"]
        if isinstance(retry, str):
            if retry not in walk.uses.get("retries", {}):
                walk.add(f"{at}/retry", USE_MISSING.format(component="retries", what="retry policy", name=retry))
        else:
            _retry(walk, retry, f"{at}/retry", place)
    if "do" in catch:
        inner = _Scope(loop=scope.loop, catch=(*scope.catch, name))
        _task_list(walk, catch["do"], f"{at}/do", inner, depth + 1, branches=False)


def _raise(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    raised = walk.mapping(task["raise"], f"{pointer}/raise")
    if raised is None:
        return
    walk.known_keys(raised, f"{pointer}/raise", ("error",), "raise")
    if "error" not in raised:
        walk.add(f"{pointer}/raise", NEEDS.format(key="error"))
        return
    error = raised["error"]
    if isinstance(error, str) and wrapped_expression(error) is None:
        if error not in walk.uses.get("errors", {}):
            walk.add(f"{pointer}/raise/error", USE_MISSING.format(component="errors", what="error", name=error))
        return
    _error_template(walk, error, f"{pointer}/raise/error", body)


def _wait(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    walk.duration(task["wait"], f"{pointer}/wait", body)


def _listen(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    listen = walk.mapping(task["listen"], f"{pointer}/listen")
    if listen is None:
        return
    at = f"{pointer}/listen"
    for key in listen:
        if key in ("until", "foreach", "correlate"):
            walk.add(f"{at}/{key}", LISTEN_REFUSED.format(key=key))
        elif key not in ("to", "read"):
            walk.add(f"{at}/{escape(key)}", NOT_A_FIELD.format(key=key, where="listen"))
    if "read" in listen and listen["read"] not in ("data", "envelope", "raw"):
        walk.add(f"{at}/read", LISTEN_READ)
    if "to" not in listen:
        walk.add(at, NEEDS.format(key="to"))
        return
    to = walk.mapping(listen["to"], f"{at}/to")
    if to is None:
        return
    forms = [key for key in to if key in ("one", "any", "all")]
    for key in to:
        if key not in ("one", "any", "all"):
            walk.add(f"{at}/to/{escape(key)}", LISTEN_TO if key != "until" else LISTEN_REFUSED.format(key=key))
    if len(forms) != 1:
        walk.add(f"{at}/to", LISTEN_TO)
        return
    form = forms[0]
    if form == "one":
        _listen_filter(walk, to["one"], f"{at}/to/one")
    elif not isinstance(to[form], list):
        walk.add(f"{at}/to/{form}", SEQUENCE)
    else:
        if len(to[form]) > MAX_FILTERS:
            walk.add(f"{at}/to/{form}", TOO_MANY_FILTERS.replace("trigger", "listen"))
        for index, item in enumerate(to[form]):
            _listen_filter(walk, item, f"{at}/to/{form}/{index}")


def _listen_filter(walk: _Walk, value: Any, pointer: str) -> None:
    if not isinstance(value, dict):
        return
    attributes = value.get("with")
    if isinstance(attributes, dict):
        for key, attribute in attributes.items():
            walk.template(attribute, f"{pointer}/with/{escape(key)}", places.FILTER)


def _emit(walk: _Walk, task: dict[str, Any], pointer: str, scope: _Scope, depth: int, body: tuple[str, ...]) -> None:
    emit = walk.mapping(task["emit"], f"{pointer}/emit")
    if emit is None:
        return
    walk.known_keys(emit, f"{pointer}/emit", ("event",), "emit")
    event = walk.mapping(emit.get("event"), f"{pointer}/emit/event" if "event" in emit else f"{pointer}/emit")
    if event is None:
        return
    walk.known_keys(event, f"{pointer}/emit/event", ("with",), "emit.event")
    at = f"{pointer}/emit/event/with"
    attributes = walk.mapping(event.get("with"), at if "with" in event else f"{pointer}/emit/event")
    if attributes is None:
        return
    if "type" not in attributes or "source" not in attributes:
        walk.add(at, EMIT_NEEDS)
    if "id" in attributes:
        walk.add(f"{at}/id", EMIT_ID)
    for key in attributes:
        if key in RESERVED_ATTRIBUTES:
            walk.add(f"{at}/{escape(key)}", EMIT_RESERVED_ATTRIBUTE.format(key=key))
    kind = attributes.get("type")
    if isinstance(kind, str) and wrapped_expression(kind) is None and kind in RESERVED_TYPES:
        walk.add(f"{at}/type", EMIT_RESERVED_TYPE.format(value=kind))
    source = attributes.get("source")
    if isinstance(source, str) and wrapped_expression(source) is None:
        if source.startswith(RESERVED_SOURCES):
            walk.add(f"{at}/source", EMIT_RESERVED_SOURCE)
        elif ":" not in source:
            walk.add(f"{at}/source", EMIT_SOURCE_URI)
    walk.template(attributes, at, body)


KindCheck = Callable[[_Walk, dict[str, Any], str, _Scope, int, tuple[str, ...]], None]
KIND_CHECKS: dict[str, KindCheck] = {
    "call": _call,
    "do": _do,
    "emit": _emit,
    "for": _for,
    "fork": _fork,
    "listen": _listen,
    "raise": _raise,
    "set": _set,
    "switch": _switch,
    "try": _try,
    "wait": _wait,
}
