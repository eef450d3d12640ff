"""The prompt template: the Liquid subset of reasoning-format §3, parsed at save and rendered per run.

`parse_template` gives the tree or its problems (line, words). `render` fills it with `input`, `today` and
`now` and returns the instructions (the `system` block) and the message, or raises `RenderProblem`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.functions.reasoning.front_matter import escape
from auto_runtime.functions.reasoning.liquid_expressions import (
    BLANK,
    EMPTY,
    Blank,
    Compare,
    Empty,
    ExpressionError,
    Filtered,
    Literal,
    Logic,
    Path,
    RangeOf,
    Tokens,
    parse_condition,
    parse_output,
    parse_primary,
    tokenize,
)
from auto_runtime.functions.reasoning.liquid_filters import FILTERS, FilterError, text

MAX_TEMPLATE_CHARS = 65_536
MAX_NAMES = 1000
MAX_NESTING = 2000
RENDER_SECONDS = 0.2
MAX_CHARGE = 5_000_000
MAX_RENDERED = 200_000
ORDERINGS: dict[str, Any] = {
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}
TOO_DEEP = "The tags or parentheses of the template nest too deeply to be read"
BUILT_INS = frozenset({"input", "today", "now"})
LOOP_NAMES = frozenset({"forloop", "tablerowloop"})
BLOCKS = {
    "if": "endif",
    "unless": "endunless",
    "case": "endcase",
    "for": "endfor",
    "tablerow": "endtablerow",
    "system": "endsystem",
}
SIMPLE_TAGS = frozenset({"assign", "echo", "increment", "decrement", "cycle", "break", "continue", "#"})
BRANCH_TAGS = {"if": ("elsif", "else"), "unless": ("elsif", "else"), "case": ("when", "else"), "for": ("else",)}
UNAVAILABLE_TAGS = frozenset({"include", "render", "layout", "block", "capture", "ifchanged", "doc"})

_MARKUP = re.compile(r"\{\{(-?)(.*?)(-?)\}\}|\{%(-?)(.*?)(-?)%\}", re.DOTALL)
_RAW_END = re.compile(r"\{%-?\s*endraw\s*-?%\}")
_COMMENT_END = re.compile(r"\{%-?\s*endcomment\s*-?%\}")


@dataclass(frozen=True)
class TemplateProblem:
    line: int
    words: str


class TemplateError(Exception):
    def __init__(self, line: int, words: str) -> None:
        super().__init__(words)
        self.line = line
        self.words = words


@dataclass
class Node:
    kind: str
    line: int
    value: Any = None
    children: list[Node] = field(default_factory=list)
    branches: list[tuple[Any, list[Node]]] = field(default_factory=list)


@dataclass
class Template:
    nodes: list[Node]
    first_line: int
    input_fields_read: frozenset[str] = frozenset()
    has_system: bool = False


# --- lexing -----------------------------------------------------------------------------------------


@dataclass
class _Token:
    kind: str  # text | output | tag
    line: int
    text: str
    name: str = ""
    strip_left: bool = False
    strip_right: bool = False


def _lex(source: str, first_line: int) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    line = first_line
    while position < len(source):
        match = _MARKUP.search(source, position)
        if match is None:
            tokens.append(_Token("text", line, source[position:]))
            break
        if match.start() > position:
            chunk = source[position : match.start()]
            tokens.append(_Token("text", line, chunk))
            line += chunk.count("\n")
        whole = match.group(0)
        if match.group(2) is not None:
            tokens.append(_Token("output", line, match.group(2), "", match.group(1) == "-", match.group(3) == "-"))
            position = match.end()
            line += whole.count("\n")
            continue
        markup = match.group(5).strip()
        name = markup.split(None, 1)[0] if markup else ""
        if markup.startswith("#"):
            name = "#"
        rest = markup[len(name) :].strip()
        strip_left, strip_right = match.group(4) == "-", match.group(6) == "-"
        if name in ("raw", "comment"):
            end = (_RAW_END if name == "raw" else _COMMENT_END).search(source, match.end())
            if end is None:
                raise TemplateError(line, f"The {name} tag is never closed with end{name}")
            if name == "raw":
                tokens.append(_Token("text", line, source[match.end() : end.start()], strip_left=strip_left))
            line += source[match.start() : end.end()].count("\n")
            position = end.end()
            continue
        if name == "liquid":
            for offset, inner in enumerate(rest.split("\n")):
                inner = inner.strip()
                if inner:
                    inner_name = "#" if inner.startswith("#") else inner.split(None, 1)[0]
                    tokens.append(_Token("tag", line + offset, inner[len(inner_name) :].strip(), inner_name))
        else:
            tokens.append(_Token("tag", line, rest, name, strip_left, strip_right))
        line += whole.count("\n")
        position = match.end()
    for index, token in enumerate(tokens):
        if token.kind == "text":
            if index > 0 and tokens[index - 1].strip_right:
                token.text = token.text.lstrip()
            if index + 1 < len(tokens) and tokens[index + 1].strip_left:
                token.text = token.text.rstrip()
    return tokens


# --- parsing ----------------------------------------------------------------------------------------


@dataclass
class _Reading:
    names: int = 0
    paths: list[tuple[Path, int]] = field(default_factory=list)
    filters: list[tuple[str, int]] = field(default_factory=list)
    created: set[str] = field(default_factory=set)
    problems: list[TemplateProblem] = field(default_factory=list)

    def note(self, tokens: Tokens, line: int) -> None:
        self.names += tokens.names
        self.paths.extend((path, line) for path in tokens.paths)
        self.filters.extend((name, line) for name in tokens.filters)


def _output(markup: str, line: int, reading: _Reading) -> Filtered:
    try:
        expression, tokens = parse_output(markup)
    except ExpressionError as error:
        raise TemplateError(line, f"The expression {markup.strip()[:60]!r} cannot be read: {error}") from None
    reading.note(tokens, line)
    return expression


def _condition(markup: str, line: int, reading: _Reading) -> Any:
    try:
        condition, tokens = parse_condition(markup)
    except ExpressionError as error:
        raise TemplateError(line, f"The condition {markup.strip()[:60]!r} cannot be read: {error}") from None
    reading.note(tokens, line)
    return condition


_ASSIGN = re.compile(r"^([A-Za-z_][\w-]*)\s*=(.*)$", re.DOTALL)
_FOR = re.compile(r"^([A-Za-z_][\w-]*)\s+in\s+(.+)$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][\w-]*$")


def _for_value(markup: str, line: int, reading: _Reading) -> dict[str, Any]:
    match = _FOR.match(markup.strip())
    if match is None:
        raise TemplateError(line, "A for or tablerow tag is written {% for item in list %}")
    try:
        tokens = tokenize(match.group(2))
        iterable = parse_primary(tokens)
        options: dict[str, Any] = {"reversed": False}
        while not tokens.done:
            kind, word = tokens.take()
            if kind == "name" and word == "reversed":
                options["reversed"] = True
            elif kind == "name" and word in ("limit", "offset", "cols"):
                tokens.expect("op", ":")
                options[word] = parse_primary(tokens)
            elif not (kind == "op" and word == ","):
                raise ExpressionError(f"unexpected {word}")
    except ExpressionError as error:
        raise TemplateError(line, f"The for tag cannot be read: {error}") from None
    reading.note(tokens, line)
    reading.created.add(match.group(1))
    return {"name": match.group(1), "iterable": iterable, **options}


def _simple(token: _Token, reading: _Reading) -> Node:
    name, markup, line = token.name, token.text, token.line
    if name == "#":
        return Node("text", line, "")
    if name == "assign":
        match = _ASSIGN.match(markup.strip())
        if match is None:
            raise TemplateError(line, "An assign tag is written {% assign name = value %}")
        reading.created.add(match.group(1))
        return Node("assign", line, (match.group(1), _output(match.group(2), line, reading)))
    if name == "echo":
        return Node("output", line, _output(markup, line, reading))
    if name in ("increment", "decrement"):
        if not _NAME.match(markup.strip()):
            raise TemplateError(line, f"An {name} tag names one variable")
        reading.created.add(markup.strip())
        reading.names += 1
        return Node(name, line, markup.strip())
    if name == "cycle":
        group: Any = None
        body = markup
        head, colon, tail = markup.partition(":")
        if (colon and not head.strip().startswith(("'", '"'))) or (colon and head.count("'") + head.count('"') == 2):
            group, body = head.strip(), tail
        try:
            tokens = tokenize(body)
            values = [parse_primary(tokens)]
            while tokens.accept("op", ","):
                values.append(parse_primary(tokens))
            if not tokens.done:
                raise ExpressionError(f"unexpected {tokens.take()[1]}")
        except ExpressionError as error:
            raise TemplateError(line, f"The cycle tag cannot be read: {error}") from None
        reading.note(tokens, line)
        return Node("cycle", line, (group or body.strip(), values))
    return Node(name, line)  # break, continue


def _parse(tokens: list[_Token], reading: _Reading) -> list[Node]:
    root: list[Node] = []
    # each frame: (block node, the list being filled, opening tag)
    stack: list[tuple[Node, list[Node], str]] = []

    def target() -> list[Node]:
        return stack[-1][1] if stack else root

    for token in tokens:
        if token.kind == "text":
            if token.text:
                target().append(Node("text", token.line, token.text))
            continue
        if token.kind == "output":
            target().append(Node("output", token.line, _output(token.text, token.line, reading)))
            continue
        name, line = token.name, token.line
        reading.names += 1
        if name in BLOCKS:
            if len(stack) >= MAX_NESTING:
                raise TemplateError(line, TOO_DEEP)
            if name == "system":
                if token.text.strip():
                    raise TemplateError(line, "The system tag takes no arguments")
                if stack:
                    raise TemplateError(line, "The system block must be at the top level of the template")
                node = Node("system", line)
                root.append(node)
                stack.append((node, node.children, name))
                continue
            node = Node(name, line)
            if name in ("for", "tablerow"):
                node.value = _for_value(token.text, line, reading)
                body: list[Node] = []
                node.branches.append(("body", body))
            elif name == "case":
                node.value = _output(token.text, line, reading)
                body = []  # text before the first when is ignored
            else:
                condition = _condition(token.text, line, reading)
                body = []
                node.branches.append((condition, body))
            target().append(node)
            stack.append((node, body, name))
            continue
        if stack and name in BRANCH_TAGS.get(stack[-1][2], ()):
            node, _, opening = stack.pop()
            body = []
            if name == "else":
                node.branches.append((None, body))
            elif name == "when":
                try:
                    tokens_ = tokenize(token.text)
                    values = [parse_primary(tokens_)]
                    while tokens_.accept("op", ",") or tokens_.accept("name", "or"):
                        values.append(parse_primary(tokens_))
                    if not tokens_.done:
                        raise ExpressionError(f"unexpected {tokens_.take()[1]}")
                except ExpressionError as error:
                    raise TemplateError(line, f"The when tag cannot be read: {error}") from None
                reading.note(tokens_, line)
                node.branches.append((values, body))
            else:
                node.branches.append((_condition(token.text, line, reading), body))
            stack.append((node, body, opening))
            continue
        if name.startswith("end") and name[3:] in BLOCKS:
            if not stack or stack[-1][2] != name[3:]:
                raise TemplateError(line, f"The {name} tag closes no open {name[3:]} block")
            stack.pop()
            continue
        if name in SIMPLE_TAGS:
            target().append(_simple(token, reading))
            continue
        if name in UNAVAILABLE_TAGS:
            raise TemplateError(line, f"The {name} tag is not available in a prompt template")
        raise TemplateError(line, f"There is no tag named {name or '(empty)'}")
    if stack:
        node, _, opening = stack[-1]
        raise TemplateError(node.line, f"The {opening} block opened here is never closed with {BLOCKS[opening]}")
    return root


def _writes_outside_system(nodes: list[Node]) -> bool:
    for node in nodes:
        if node.kind == "system":
            continue
        if node.kind == "text" and node.value.strip():
            return True
        if node.kind == "output":
            return True
        if any(_writes_outside_system(body) for _cond, body in node.branches):
            return True
    return False


def parse_template(
    source: str, first_line: int, closed_fields: frozenset[str] | None
) -> Template | list[TemplateProblem]:
    """The template's tree, or every problem found. `closed_fields` lists the input's fields when its schema
    is closed (`properties` with `additionalProperties: false`)."""
    if len(source) > MAX_TEMPLATE_CHARS:
        return [TemplateProblem(first_line, f"The template may be at most {MAX_TEMPLATE_CHARS:,} characters")]
    reading = _Reading()
    try:
        nodes = _parse(_lex(source, first_line), reading)
    except TemplateError as error:
        return [TemplateProblem(error.line, error.words)]
    except RecursionError:
        return [TemplateProblem(first_line, TOO_DEEP)]
    problems: list[TemplateProblem] = []
    if reading.names > MAX_NAMES:
        problems.append(TemplateProblem(first_line, f"The template may use at most {MAX_NAMES:,} names"))
    known = BUILT_INS | LOOP_NAMES | reading.created
    fields: set[str] = set()
    for path, line in reading.paths:
        if not path.root:
            continue
        if path.root not in known:
            problems.append(
                TemplateProblem(
                    line, f"The template reads {path.root}, which is neither input, today, now nor a name it creates"
                )
            )
        elif path.root in ("today", "now") and path.parts:
            problems.append(TemplateProblem(line, f"{path.root} has no properties"))
        elif path.root == "input" and path.parts and isinstance(path.parts[0], str | Literal):
            first = path.parts[0].value if isinstance(path.parts[0], Literal) else path.parts[0]
            fields.add(str(first))
            if closed_fields is not None and str(first) not in closed_fields:
                problems.append(
                    TemplateProblem(line, f"The template reads input.{first}, which the input schema does not list")
                )
    for name, line in reading.filters:
        if name not in FILTERS:
            problems.append(TemplateProblem(line, f"There is no filter named {name}"))
    systems = [node for node in nodes if node.kind == "system"]
    if len(systems) > 1:
        problems.append(TemplateProblem(systems[1].line, "A template holds at most one system block"))
    if not _writes_outside_system(nodes):
        problems.append(TemplateProblem(first_line, "The template must write text outside its system block"))
    if problems:
        return problems
    return Template(nodes, first_line, frozenset(fields), bool(systems))


# --- rendering --------------------------------------------------------------------------------------


class RenderProblem(Exception):
    """The render stopped: the run ends `invalid_input` at `pointer`, with the words and the line."""

    def __init__(self, line: int, words: str, pointer: str = "/input") -> None:
        super().__init__(words)
        self.line = line
        self.words = words
        self.pointer = pointer


@dataclass(frozen=True)
class Missing:
    """A field the input does not have; falsy in a condition, fed to `default`, an error anywhere else."""

    path: str
    pointer: str


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Writer:
    def __init__(self, what: str) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.what = what

    def write(self, words: str, line: int) -> None:
        self.size += len(words)
        if self.size > MAX_RENDERED:
            raise RenderProblem(line, f"The rendered {self.what} would be longer than {MAX_RENDERED:,} characters")
        self.parts.append(words)

    def value(self) -> str:
        return "".join(self.parts)


@dataclass(frozen=True)
class Rendered:
    instructions: str | None
    message: str


class _Render:
    def __init__(self, variables: dict[str, Any]) -> None:
        self.variables = variables
        self.counters: dict[str, int] = {}
        self.cycles: dict[str, int] = {}
        self.charge = 0
        self.deadline = time.monotonic() + RENDER_SECONDS
        self.message = _Writer("message")
        self.instructions = _Writer("instructions")
        self.out = self.message

    def tick(self, line: int) -> None:
        if time.monotonic() > self.deadline:
            raise RenderProblem(line, "The template took longer than 200 ms to render")

    def charge_for(self, value: Any, line: int) -> None:
        if isinstance(value, str | list | dict):
            self.charge += len(value)
            if self.charge > MAX_CHARGE:
                raise RenderProblem(
                    line, "The template's filters and ranges used more than 5,000,000 characters or items"
                )

    # values

    def lookup(self, path: Path, line: int) -> Any:
        if not path.root:
            return None
        if path.root not in self.variables:
            return None
        value = self.variables[path.root]
        trail = path.root
        pointer = "" if path.root != "input" else "/input"
        for part in path.parts:
            key = part if isinstance(part, str) else self.value(part, line)
            if isinstance(value, Missing):
                return Missing(f"{value.path}.{key}", f"{value.pointer}/{escape(str(key))}")
            if isinstance(value, dict):
                if isinstance(key, str) and key in value:
                    value = value[key]
                elif key == "size" and isinstance(part, str):
                    value = len(value)
                elif path.root == "input":
                    return Missing(f"{trail}.{key}", f"{pointer}/{escape(str(key))}")
                else:
                    value = None
            elif isinstance(value, list | str):
                if isinstance(key, int) and not isinstance(key, bool):
                    value = value[key] if -len(value) <= key < len(value) else None
                elif key == "size":
                    value = len(value)
                elif key == "first":
                    value = value[0] if value else None
                elif key == "last":
                    value = value[-1] if value else None
                elif path.root == "input":
                    return Missing(f"{trail}.{key}", f"{pointer}/{escape(str(key))}")
                else:
                    value = None
            elif path.root == "input":
                return Missing(f"{trail}.{key}", f"{pointer}/{escape(str(key))}")
            else:
                value = None
            trail = f"{trail}.{key}"
            pointer = f"{pointer}/{escape(str(key))}"
        return value

    def value(self, expression: Any, line: int) -> Any:
        if isinstance(expression, Literal):
            return expression.value
        if isinstance(expression, Path):
            return self.lookup(expression, line)
        if isinstance(expression, RangeOf):
            start = self.strict(self.value(expression.start, line), line)
            stop = self.strict(self.value(expression.stop, line), line)
            try:
                numbers = list(range(int(start), int(stop) + 1))
            except (TypeError, ValueError):
                raise RenderProblem(line, "A range needs whole numbers") from None
            self.charge_for(numbers, line)
            return numbers
        if isinstance(expression, Filtered):
            return self.filtered(expression, line)
        raise RenderProblem(line, "The template holds an expression the renderer does not know")

    def strict(self, value: Any, line: int) -> Any:
        if isinstance(value, Missing):
            raise RenderProblem(line, f"The template reads {value.path}, which the input does not have", value.pointer)
        return value

    def filtered(self, expression: Filtered, line: int) -> Any:
        value = self.value(expression.value, line)
        for call in expression.filters:
            if call.name != "default":
                value = self.strict(value, line)
            args = [self.strict(self.value(a, line), line) for a in call.args]
            kwargs = {k: self.strict(self.value(v, line), line) for k, v in call.kwargs}
            if isinstance(value, Missing):
                value = None
            try:
                value = FILTERS[call.name](value, *args, **kwargs)
            except FilterError as error:
                raise RenderProblem(line, f"The {call.name} filter stopped the render: {error}") from None
            except (TypeError, ValueError, OverflowError, ArithmeticError, RecursionError) as error:
                raise RenderProblem(line, f"The {call.name} filter could not take its value: {error}") from None
            self.charge_for(value, line)
        return value

    def truthy(self, condition: Any, line: int) -> bool:
        if isinstance(condition, Logic):
            if condition.op == "and":
                return self.truthy(condition.left, line) and self.truthy(condition.right, line)
            return self.truthy(condition.left, line) or self.truthy(condition.right, line)
        if isinstance(condition, Compare):
            return self.compare(condition, line)
        value = self.value(condition, line)
        return not (isinstance(value, Missing) or value is None or value is False)

    def compare(self, condition: Compare, line: int) -> bool:
        left = self.value(condition.left, line)
        right = self.value(condition.right, line)
        left = None if isinstance(left, Missing) else left
        right = None if isinstance(right, Missing) else right
        op = condition.op
        if op == "contains":
            if isinstance(left, str):
                return isinstance(right, str | int | float) and str(right) in left
            if isinstance(left, list):
                return right in left
            if isinstance(left, dict):
                return isinstance(right, str) and right in left
            return False
        if op in ("==", "!=", "<>"):
            equal = _equal(left, right)
            return equal if op == "==" else not equal
        pair: tuple[Any, Any]
        if (isinstance(left, int | float) and isinstance(right, int | float)) or (
            isinstance(left, str) and isinstance(right, str)
        ):
            pair = (left, right)
        else:
            return False
        return bool(ORDERINGS[op](*pair))

    # nodes

    def nodes(self, nodes: list[Node]) -> None:
        for node in nodes:
            self.node(node)

    def node(self, node: Node) -> None:
        self.tick(node.line)
        kind = node.kind
        if kind == "text":
            self.out.write(node.value, node.line)
        elif kind == "output":
            self.out.write(text(self.strict(self.value(node.value, node.line), node.line)), node.line)
        elif kind == "assign":
            name, expression = node.value
            self.variables[name] = self.strict(self.value(expression, node.line), node.line)
        elif kind in ("if", "unless"):
            for index, (condition, body) in enumerate(node.branches):
                if condition is None:
                    self.nodes(body)
                    return
                holds = self.truthy(condition, node.line)
                if kind == "unless" and index == 0:
                    holds = not holds
                if holds:
                    self.nodes(body)
                    return
        elif kind == "case":
            subject = self.value(node.value, node.line)
            subject = None if isinstance(subject, Missing) else subject
            matched = False
            for values, body in node.branches:
                if values is None:
                    if not matched:
                        self.nodes(body)
                    return
                if any(_equal(subject, self.value(v, node.line)) for v in values):
                    matched = True
                    self.nodes(body)
        elif kind == "for":
            self.loop(node)
        elif kind == "tablerow":
            self.tablerow(node)
        elif kind == "system":
            self.out = self.instructions
            self.nodes(node.children)
            self.out = self.message
        elif kind in ("increment", "decrement"):
            current = self.counters.get(node.value, 0)
            if kind == "increment":
                self.out.write(str(current), node.line)
                self.counters[node.value] = current + 1
            else:
                self.counters[node.value] = current - 1
                self.out.write(str(current - 1), node.line)
        elif kind == "cycle":
            group, values = node.value
            index = self.cycles.get(str(group), 0)
            self.cycles[str(group)] = index + 1
            self.out.write(text(self.strict(self.value(values[index % len(values)], node.line), node.line)), node.line)
        elif kind == "break":
            raise _Break
        elif kind == "continue":
            raise _Continue

    def items(self, node: Node) -> list[Any]:
        spec = node.value
        items = self.strict(self.value(spec["iterable"], node.line), node.line)
        if isinstance(items, dict):
            items = [[key, value] for key, value in items.items()]
        elif isinstance(items, str):
            items = [items] if items else []
        elif not isinstance(items, list):
            items = []
        offset = int(self.strict(self.value(spec["offset"], node.line), node.line) or 0) if "offset" in spec else 0
        items = items[offset:]
        if "limit" in spec:
            items = items[: max(int(self.strict(self.value(spec["limit"], node.line), node.line) or 0), 0)]
        if spec["reversed"]:
            items = list(reversed(items))
        return list(items)

    def tablerow(self, node: Node) -> None:
        spec = node.value
        items = self.items(node)
        cols = int(self.strict(self.value(spec["cols"], node.line), node.line) or 0) if "cols" in spec else 0
        cols = cols if cols > 0 else max(len(items), 1)
        saved = self.variables.get(spec["name"]), self.variables.get("tablerowloop")
        self.out.write('<tr class="row1">\n', node.line)
        for index, item in enumerate(items):
            self.tick(node.line)
            col = index % cols
            if index and col == 0:
                self.out.write(f'</tr>\n<tr class="row{index // cols + 1}">', node.line)
            self.variables[spec["name"]] = item
            self.variables["tablerowloop"] = {
                "index": index + 1,
                "index0": index,
                "col": col + 1,
                "col0": col,
                "row": index // cols + 1,
                "first": index == 0,
                "last": index == len(items) - 1,
                "col_first": col == 0,
                "col_last": col == cols - 1,
                "length": len(items),
            }
            self.out.write(f'<td class="col{col + 1}">', node.line)
            stop = False
            try:
                self.nodes(node.branches[0][1])
            except _Break:
                stop = True
            except _Continue:
                pass
            self.out.write("</td>", node.line)
            if stop:
                break
        self.out.write("</tr>\n", node.line)
        self.variables[spec["name"]], self.variables["tablerowloop"] = saved

    def loop(self, node: Node) -> None:
        spec = node.value
        items = self.items(node)
        body = node.branches[0][1]
        if not items:
            for condition, otherwise in node.branches[1:]:
                if condition is None:
                    self.nodes(otherwise)
            return
        saved = self.variables.get(spec["name"]), self.variables.get("forloop")
        length = len(items)
        for index, item in enumerate(items):
            self.tick(node.line)
            self.variables[spec["name"]] = item
            self.variables["forloop"] = {
                "index": index + 1,
                "index0": index,
                "rindex": length - index,
                "rindex0": length - index - 1,
                "first": index == 0,
                "last": index == length - 1,
                "length": length,
            }
            try:
                self.nodes(body)
            except _Break:
                break
            except _Continue:
                continue
        self.variables[spec["name"]], self.variables["forloop"] = saved


def _equal(left: Any, right: Any) -> bool:
    for a, b in ((left, right), (right, left)):
        if isinstance(a, Empty):
            return b in ("", [], {}) or isinstance(b, Empty)
        if isinstance(a, Blank):
            return b is None or b is False or (isinstance(b, str) and not b.strip()) or b in ([], {})
    if isinstance(left, bool) != isinstance(right, bool):
        return False
    return bool(left == right)


def render(template: Template, input_value: Mapping[str, Any], today: str, now: str) -> Rendered:
    """The instructions (None without a system block) and the message; raises `RenderProblem`."""
    state = _Render({"input": dict(input_value), "today": today, "now": now})
    try:
        state.nodes(template.nodes)
    except (_Break, _Continue):
        pass
    except RecursionError:
        raise RenderProblem(template.first_line, TOO_DEEP) from None
    message = state.message.value()
    if not message.strip():
        raise RenderProblem(template.first_line, "The template rendered an empty message")
    return Rendered(state.instructions.value() if template.has_system else None, message)


__all__ = ["BLANK", "EMPTY", "RenderProblem", "Rendered", "Template", "TemplateProblem", "parse_template", "render"]
