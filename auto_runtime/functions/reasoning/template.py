"""The prompt template (reasoning-format §3), parsed at save and rendered per run by python-liquid 2.x.

The environment is set up as §3 says: no loader, `FalsyStrictUndefined`, only the tags and filters of §3.3 (the
library's others removed, the ones it does not ship and the `system` block registered as our own). The runtime
counts the limits of §3.4 itself. `parse_template` gives the template or its problems (line, words); `render` fills
it with `input`, `today` and `now` and returns the instructions (the `system` block) and the message, or raises
`RenderProblem`.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from liquid import BlockNode, BoundTemplate, Environment, FalsyStrictUndefined, Node, RenderContext, Tag, Undefined
from liquid.builtin.content import ContentNode
from liquid.builtin.output import OutputNode
from liquid.builtin.tags.for_tag import BreakNode, ContinueNode, ForNode
from liquid.builtin.tags.tablerow_tag import TablerowNode
from liquid.exceptions import (
    BlockNestingError,
    FilterArgumentError,
    FilterError,
    FilterItemTypeError,
    FilterValueError,
    LiquidError,
    LiquidSyntaxError,
    LiquidTypeError,
    ResourceLimitError,
    UndefinedError,
)
from liquid.parser import get_parser
from liquid.stream import TokenStream
from liquid.stringify import to_liquid_string
from liquid.token import TOKEN_EXPRESSION, TOKEN_TAG, Token
from liquid.undefined import UNDEFINED

from auto_runtime.functions.reasoning.liquid_filters import FILTERS
from auto_runtime.functions.reasoning.property_tokens import PropertyLiquidTag, PropertyOutput, PropertyTokenStream
from auto_runtime.json_pointers import escape

MAX_TEMPLATE_CHARS = 65_536
MAX_NAMES = 1000
# Tag nesting python-liquid reads and renders well within Python's default recursion limit, whatever the stack
# the render starts from: its parser and renderer recurse, about eight frames for each nested `case`, so §3.4's
# "about 2,000" of the predecessor's parser is out of reach; deeper templates are refused with the same words.
MAX_NESTING = 64
RENDER_SECONDS = 0.2
MAX_CHARGE = 5_000_000
MAX_RENDERED = 200_000
TOO_DEEP = "The tags or parentheses of the template nest too deeply to be read"
BUILT_INS = frozenset({"input", "today", "now"})
LOOP_NAMES = frozenset({"forloop", "tablerowloop"})
# The library's tags and filters §3 removes.
REMOVED_TAGS = ("capture", "include", "render", "ifchanged", "doc")
REMOVED_FILTERS = (
    "date",
    "strip_html",
    "url_encode",
    "url_decode",
    "base64_url_safe_encode",
    "base64_url_safe_decode",
    "escapejs",
    "safe",
)
UNAVAILABLE_TAGS = frozenset({*REMOVED_TAGS, "layout", "block"})
PROMPT_ONLY_FILTERS = frozenset({"money", "clip", "words"})
"""Filters of a reasoning prompt that other templates (an interaction function's) do not have."""

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NAME = re.compile(r"[A-Za-z_][\w-]*\??")
_PROPERTY = re.compile(r"[A-Za-z_][\w-]*")
_UNEXPECTED_TAG = re.compile(r"^unexpected tag '([^']*)'$")
_UNCLOSED = re.compile(r"^expected tag (end\w+)")


@dataclass(frozen=True)
class TemplateProblem:
    line: int
    words: str


@dataclass
class Template:
    bound: BoundTemplate
    first_line: int
    has_system: bool = False


class RenderProblem(Exception):
    """The render stopped: the run ends `invalid_input` at `pointer`, with the words and the line."""

    def __init__(self, line: int, words: str, pointer: str = "/input") -> None:
        super().__init__(words)
        self.line = line
        self.words = words
        self.pointer = pointer


@dataclass(frozen=True)
class Rendered:
    instructions: str | None
    message: str


class _Refusal(LiquidSyntaxError):
    """A template problem in our own words."""


STRUCTURE_AMONG_TEXT = "write | json after it, or write it alone as one {{ }}"


class StructureAmongText(LiquidError):
    """An output of a text-only template gave an object or an array (interaction-format §1.3)."""


class _Limit(ResourceLimitError):
    """A §3.4 limit reached while rendering, in our own words."""


# --- the render context: limits and the strict reading's words -------------------------------------


class _Writer(io.StringIO):
    """An output that refuses to grow past `MAX_RENDERED` characters, checked while writing."""

    def __init__(self, what: str, context: _PromptContext | None = None) -> None:
        super().__init__()
        self.what = what
        self.size = 0
        self.context = context

    def write(self, words: str) -> int:
        if self.context is not None:
            self.context.tick()
        self.size += len(words)
        if self.size > MAX_RENDERED:
            raise _Limit(f"The rendered {self.what} would be longer than {MAX_RENDERED:,} characters", token=None)
        return super().write(words)


_ABSENT = object()


class _PromptContext(RenderContext):
    """python-liquid's render context, counting §3.4's time and memory and naming what the template misses."""

    def __init__(self, template: BoundTemplate, **options: Any) -> None:
        super().__init__(template, **options)
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.charge = 0
        self.pointers: dict[str, str] = {}
        self.instructions = _Writer("instructions", self)

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _Limit("The template took longer than 200 ms to render", token=None)

    def charge_for(self, value: object) -> None:
        if isinstance(value, str | list | tuple | dict | range):
            self.charge += len(value)
            if self.charge > MAX_CHARGE:
                raise _Limit(
                    "The template's filters and ranges used more than 5,000,000 characters or items", token=None
                )

    def get(self, path: list[object], *, token: Token | None, default: object = UNDEFINED) -> object:
        self.tick()
        found = super().get(path, token=token, default=_ABSENT)
        if found is not _ABSENT:
            return found
        if default is not UNDEFINED:
            return default
        return self._missing(path, token)

    def _missing(self, path: list[object], token: Token | None) -> Undefined:
        root, shown = path[0], path[:1]
        try:
            value: Any = self.scope[root] if isinstance(root, str) else _ABSENT
        except (KeyError, TypeError, IndexError):
            value = _ABSENT
        if value is not _ABSENT:
            for segment in path[1:]:
                shown.append(segment)
                try:
                    value = self.get_item(value, segment)
                except (KeyError, TypeError, IndexError):
                    break
        dotted = str(root) + "".join(
            f".{s}" if isinstance(s, str) and _PROPERTY.fullmatch(s) else f"[{s!r}]" for s in shown[1:]
        )
        if root == "input":
            words = f"The template reads {dotted}, which the input does not have"
            self.pointers[words] = "/input" + "".join(f"/{escape(str(s))}" for s in shown[1:])
        else:
            words = f"The template reads {dotted}, which has no value"
        return self.env.undefined(str(root), hint=words, token=token)

    @contextmanager
    def loop(self, namespace: Mapping[str, object], forloop: Any) -> Iterator[RenderContext]:
        self.charge_for(range(forloop.length))
        forloop.it = self._ticking(forloop.it)
        with super().loop(namespace, forloop) as context:
            yield context

    def _ticking(self, items: Iterator[object]) -> Iterator[object]:
        for item in items:
            self.tick()
            yield item


class _PromptTemplate(BoundTemplate):
    context_class = _PromptContext


# --- filters ----------------------------------------------------------------------------------------


def _counted(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that reads strictly (an undefined value fails anywhere but `default`) and charges its result."""
    wants_context = getattr(func, "with_context", False)
    wants_environment = getattr(func, "with_environment", False)

    def counted(value: object, *args: object, context: RenderContext, **kwargs: object) -> object:
        if isinstance(context, _PromptContext):
            context.tick()
            if isinstance(value, range):
                context.charge_for(value)
        for given in (value, *args, *kwargs.values()) if name != "default" else (*args, *kwargs.values()):
            if isinstance(given, Undefined):
                raise UndefinedError(given.msg if hasattr(given, "msg") else str(given.hint), token=given.token)
        if wants_context:
            kwargs["context"] = context
        if wants_environment:
            kwargs["environment"] = context.env
        try:
            result = func(value, *args, **kwargs)
        except (ValueError, OverflowError, ArithmeticError, RecursionError) as error:
            raise FilterValueError(f"{name}: {error}", token=None) from None
        if isinstance(context, _PromptContext):
            context.charge_for(result)
        return result

    counted.with_context = True  # type: ignore[attr-defined]
    return counted


# --- the system block -------------------------------------------------------------------------------


class SystemNode(Node):
    """`{% system %}...{% endsystem %}`: renders its block into the instructions, nothing into the message."""

    __slots__ = ("block",)

    def __init__(self, token: Token, block: BlockNode) -> None:
        super().__init__(token)
        self.block = block
        self.blank = True

    def __str__(self) -> str:
        return f"{{% system %}}{self.block}{{% endsystem %}}"

    def render_to_output(self, context: RenderContext, buffer: TextIO) -> int:
        if isinstance(context, _PromptContext):
            self.block.render(context, context.instructions)
        return 0

    def children(self, static_context: RenderContext, *, include_partials: bool = True) -> Iterable[Node]:
        return [self.block]


class SystemTag(Tag):
    name = "system"
    end = "endsystem"
    block = True
    node_class = SystemNode

    def parse(self, stream: TokenStream) -> Node:
        token = stream.eat(TOKEN_TAG)
        if stream.current.kind == TOKEN_EXPRESSION:
            raise _Refusal("The system tag takes no arguments", token=token)
        if stream.block_depth > 0:
            raise _Refusal("The system block must be at the top level of the template", token=token)
        block = get_parser(self.env).parse_block(stream, (self.end,))
        stream.expect(TOKEN_TAG, value=self.end)
        return SystemNode(token, block)


# --- the environment --------------------------------------------------------------------------------


class PromptEnvironment(Environment):
    """A property name after a dot is never a keyword (`input.limit`, property_tokens)."""

    block_nesting_limit = MAX_NESTING
    context_depth_limit = MAX_NESTING + 30
    template_class = _PromptTemplate

    def _parse(self, source: str) -> list[Node]:
        return get_parser(self).parse(PropertyTokenStream(self.tokenizer()(source)))


class _TextOutputNode(OutputNode):
    """`{{ ... }}` in a template that renders text only: an object or array among the text stops the render."""

    __slots__ = ()

    def render_to_output(self, context: RenderContext, buffer: TextIO) -> int:
        value = self.expression.evaluate(context)
        if isinstance(value, Undefined):
            str(value)  # a missing name or field: the strict undefined raises its `UndefinedError` here
        if isinstance(value, Mapping | list | tuple):
            raise StructureAmongText(STRUCTURE_AMONG_TEXT, token=self.token)
        return buffer.write(to_liquid_string(value, context.autoescape))


class _TextOutput(PropertyOutput):
    node_class = _TextOutputNode


def _environment(*, prompt: bool = True) -> PromptEnvironment:
    environment = PromptEnvironment(undefined=FalsyStrictUndefined)
    for tag in REMOVED_TAGS:
        del environment.tags[tag]
    for name in REMOVED_FILTERS:
        del environment.filters[name]
    environment.add_tag(PropertyLiquidTag)
    if prompt:
        environment.add_tag(SystemTag)
        environment.add_tag(PropertyOutput)
    else:
        environment.add_tag(_TextOutput)
    for name, func in FILTERS.items():
        if prompt or name not in PROMPT_ONLY_FILTERS:
            environment.add_filter(name, func)
    for name, func in list(environment.filters.items()):
        environment.add_filter(name, _counted(name, func))
    return environment


ENVIRONMENT = _environment()
TEXT_ENVIRONMENT = _environment(prompt=False)
"""The environment of templates that render text (an interaction function's, interaction-format §1.2): no
`system` block, no `money`, `clip` or `words`, and no object or array among the text."""


# --- parsing ----------------------------------------------------------------------------------------


def _line(source: str, index: int, first_line: int) -> int:
    return first_line + source.count("\n", 0, max(index, 0))


def _error_line(error: LiquidError, first_line: int) -> int:
    token = error.token
    if token is None or token.start_index < 0:
        return first_line
    return _line(token.source, token.start_index, first_line)


def _syntax_problem(error: LiquidError, source: str, first_line: int) -> TemplateProblem:
    line = _error_line(error, first_line)
    message = str(error.message)
    if isinstance(error, _Refusal):
        return TemplateProblem(line, message)
    if isinstance(error, BlockNestingError) or isinstance(error.__cause__, RecursionError):
        return TemplateProblem(line, TOO_DEEP)
    unexpected = _UNEXPECTED_TAG.match(message)
    if unexpected:
        name = unexpected.group(1)
        if name == "raw":
            return TemplateProblem(line, "The raw tag is never closed with endraw")
        if name in UNAVAILABLE_TAGS:
            return TemplateProblem(line, f"The {name} tag is not available in a prompt template")
        if name.startswith("end") and name != "end":
            return TemplateProblem(line, f"The {name} tag closes no open {name[3:]} block")
        return TemplateProblem(line, f"There is no tag named {name or '(empty)'}")
    unclosed = _UNCLOSED.match(message)
    if unclosed and (error.token is None or error.token.start_index < 0):
        opening = unclosed.group(1)[3:]
        spans = ENVIRONMENT.analyze_tags_from_string(source).unclosed_tags.get(opening)
        if spans:
            line = _line(source, spans[-1].index, first_line)
        return TemplateProblem(line, f"The {opening} block opened here is never closed with end{opening}")
    if message == "comment tag was never closed":
        return TemplateProblem(line, "The comment tag is never closed with endcomment")
    return TemplateProblem(line, f"The template cannot be read: {message}")


def _count_names(source: str) -> int:
    names = 0
    for token in ENVIRONMENT.tokenizer()(source):
        if token.kind == TOKEN_TAG:
            names += 1
        elif token.kind == TOKEN_EXPRESSION:
            names += len(_NAME.findall(_QUOTED.sub("", token.value)))
    return names


def _walk(nodes: Iterable[Node], static: RenderContext) -> Iterator[Node]:
    for node in nodes:
        yield node
        yield from _walk(node.children(static, include_partials=False), static)


def _loose_interrupts(nodes: Iterable[Node], static: RenderContext) -> Iterator[Node]:
    """The `break` and `continue` tags outside every loop."""
    for node in nodes:
        if isinstance(node, BreakNode | ContinueNode):
            yield node
        elif not isinstance(node, ForNode | TablerowNode):
            yield from _loose_interrupts(node.children(static, include_partials=False), static)


def _writes_outside_system(nodes: Iterable[Node], static: RenderContext) -> bool:
    for node in nodes:
        if isinstance(node, SystemNode):
            continue
        if isinstance(node, ContentNode):
            if node.text.strip():
                return True
            continue
        if not node.blank:
            return True
        if _writes_outside_system(node.children(static, include_partials=False), static):
            return True
    return False


def parse_template(
    source: str,
    first_line: int,
    closed_fields: frozenset[str] | None,
    *,
    names: frozenset[str] = BUILT_INS,
    prompt: bool = True,
) -> Template | list[TemplateProblem]:
    """The parsed template, or every problem found. `closed_fields` lists the input's fields when its schema
    is closed (`properties` with `additionalProperties: false`).

    `names` are the names the template may read besides those it creates; `prompt` is a reasoning prompt's
    template (a `system` block allowed, text required outside it). Any other template (an interaction
    function's, interaction-format §1.2) has no `system` block, nor the `money`, `clip` and `words` filters,
    and may render empty text (its caller judges what it rendered)."""
    if len(source) > MAX_TEMPLATE_CHARS:
        return [TemplateProblem(first_line, f"The template may be at most {MAX_TEMPLATE_CHARS:,} characters")]
    environment = ENVIRONMENT if prompt else TEXT_ENVIRONMENT
    try:
        bound = environment.from_string(source)
        analysis = bound.analyze(include_partials=False)
    except LiquidError as error:
        return [_syntax_problem(error, source, first_line)]
    except RecursionError:
        return [TemplateProblem(first_line, TOO_DEEP)]
    problems: list[TemplateProblem] = []
    if _count_names(source) > MAX_NAMES:
        problems.append(TemplateProblem(first_line, f"The template may use at most {MAX_NAMES:,} names"))
    static = RenderContext(bound)
    created = set(analysis.locals)
    for node in _walk(bound.nodes, static):
        created.update(str(name) for name in (*node.template_scope(), *node.block_scope()))
    known = names | LOOP_NAMES | created
    for root, variables in analysis.variables.items():
        for variable in variables:
            line = _line(source, variable.span.index, first_line)
            segments = variable.segments
            if root not in known:
                problems.append(TemplateProblem(line, f"The template reads {root}, which {_neither(names)}"))
            elif root in ("today", "now") and len(segments) > 1:
                problems.append(TemplateProblem(line, f"{root} has no properties"))
            elif (
                root == "input"
                and len(segments) > 1
                and isinstance(segments[1], str)
                and closed_fields is not None
                and segments[1] not in closed_fields
            ):
                problems.append(
                    TemplateProblem(
                        line, f"The template reads input.{segments[1]}, which the input schema does not list"
                    )
                )
    for name, spans in analysis.filters.items():
        if name not in environment.filters:
            problems.extend(
                TemplateProblem(_line(source, s.index, first_line), f"There is no filter named {name}") for s in spans
            )
    problems.extend(
        TemplateProblem(
            _line(source, node.token.start_index, first_line),
            f"The {node.token.value} tag is only available inside a for or tablerow loop",
        )
        for node in _loose_interrupts(bound.nodes, static)
    )
    systems = [node for node in bound.nodes if isinstance(node, SystemNode)]
    if len(systems) > 1:
        problems.append(
            TemplateProblem(
                _line(source, systems[1].token.start_index, first_line), "A template holds at most one system block"
            )
        )
    if prompt and not _writes_outside_system(bound.nodes, static):
        problems.append(TemplateProblem(first_line, "The template must write text outside its system block"))
    if problems:
        return sorted(problems, key=lambda problem: problem.line)
    return Template(bound, first_line, bool(systems))


def _neither(names: frozenset[str]) -> str:
    """`is neither input, today, now nor a name it creates`, naming what the template's place allows."""
    ordered = [name for name in ("input", "today", "now") if name in names] + sorted(names - {"input", "today", "now"})
    return "is neither " + ", ".join(ordered) + " nor a name it creates"


# --- rendering --------------------------------------------------------------------------------------


def _render_problem(error: LiquidError, context: _PromptContext, first_line: int) -> RenderProblem:
    line = _error_line(error, first_line)
    message = str(error.message)
    if isinstance(error, UndefinedError):
        return RenderProblem(line, message, context.pointers.get(message, "/input"))
    if isinstance(error, _Limit):
        return RenderProblem(line, message)
    if isinstance(error, FilterError | FilterArgumentError | FilterValueError | FilterItemTypeError | LiquidTypeError):
        return RenderProblem(line, f"A filter stopped the render: {message}")
    return RenderProblem(line, f"The render stopped: {message}")


def render(template: Template, input_value: Mapping[str, Any], today: str, now: str) -> Rendered:
    """The instructions (None without a system block) and the message; raises `RenderProblem`."""
    bound = template.bound
    context = _PromptContext(
        bound, globals=bound.make_globals({"input": dict(input_value), "today": today, "now": now})
    )
    message = _Writer("message", context)
    try:
        bound.render_with_context(context, message)
    except LiquidError as error:
        raise _render_problem(error, context, template.first_line) from None
    except RecursionError:
        raise RenderProblem(template.first_line, TOO_DEEP) from None
    text = message.getvalue()
    if not text.strip():
        raise RenderProblem(template.first_line, "The template rendered an empty message")
    return Rendered(context.instructions.getvalue() if template.has_system else None, text)


def render_text(template: Template, values: Mapping[str, Any]) -> str:
    """The text `template` renders with the names in `values` (no `system` block, empty text allowed); raises
    `RenderProblem` as `render` does, and `StructureAmongText` (the template's fault, not the input's)."""
    bound = template.bound
    context = _PromptContext(bound, globals=bound.make_globals(dict(values)))
    written = _Writer("text", context)
    try:
        bound.render_with_context(context, written)
    except StructureAmongText:
        raise
    except LiquidError as error:
        raise _render_problem(error, context, template.first_line) from None
    except RecursionError:
        raise RenderProblem(template.first_line, TOO_DEEP) from None
    return written.getvalue()


def is_one_output(template: Template) -> bool:
    """Whether the template is exactly one output tag, `{{ expr }}` and nothing else."""
    nodes = template.bound.nodes
    return len(nodes) == 1 and isinstance(nodes[0], OutputNode)


def evaluate_output(template: Template, values: Mapping[str, Any]) -> Any:
    """The value the one output tag of `template` yields (`is_one_output`), of any JSON type; raises
    `RenderProblem` as `render_text` does."""
    bound = template.bound
    node = bound.nodes[0]
    assert isinstance(node, OutputNode)
    context = _PromptContext(bound, globals=bound.make_globals(dict(values)))
    try:
        value = node.expression.evaluate(context)
    except LiquidError as error:
        raise _render_problem(error, context, template.first_line) from None
    except RecursionError:
        raise RenderProblem(template.first_line, TOO_DEEP) from None
    if isinstance(value, Undefined):
        try:
            str(value)  # a missing name or field: the strict undefined raises its `UndefinedError`
        except LiquidError as error:
            raise _render_problem(error, context, template.first_line) from None
        return None
    if isinstance(value, range | tuple):
        return list(value)
    return value


__all__ = ["RenderProblem", "Rendered", "Template", "TemplateProblem", "parse_template", "render", "render_text"]
