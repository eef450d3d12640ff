"""Liquid expressions: literals, variable paths, ranges, filters and conditions, parsed to small trees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>'[^']*'|"[^"]*")
  | (?P<number>-?\d+\.\d+|-?\d+)
  | (?P<op>==|!=|<>|<=|>=|<|>|\.\.|[|:,.\[\]()=])
  | (?P<name>[A-Za-z_][\w-]*\??)
    )""",
    re.VERBOSE,
)
KEYWORD_VALUES: dict[str, Any] = {"true": True, "false": False, "nil": None, "null": None}


class ExpressionError(Exception):
    """An expression the parser cannot read."""


class Empty:
    """The `empty` literal."""


class Blank:
    """The `blank` literal."""


EMPTY = Empty()
BLANK = Blank()


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Path:
    """`root.part[expr]...`: parts are names (str) or index expressions."""

    root: str
    parts: tuple[Any, ...] = ()


@dataclass(frozen=True)
class RangeOf:
    start: Any
    stop: Any


@dataclass(frozen=True)
class FilterCall:
    name: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Filtered:
    value: Any
    filters: tuple[FilterCall, ...] = ()


@dataclass(frozen=True)
class Compare:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Logic:
    op: str  # "and" | "or"
    left: Any
    right: Any


@dataclass
class Tokens:
    items: list[tuple[str, str]]
    position: int = 0
    names: int = 0
    paths: list[Path] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        index = self.position + offset
        return self.items[index] if index < len(self.items) else None

    def take(self) -> tuple[str, str]:
        item = self.peek()
        if item is None:
            raise ExpressionError("the expression ends too early")
        self.position += 1
        return item

    def accept(self, kind: str, text: str | None = None) -> bool:
        item = self.peek()
        if item is not None and item[0] == kind and (text is None or item[1] == text):
            self.position += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None) -> str:
        item = self.take()
        if item[0] != kind or (text is not None and item[1] != text):
            raise ExpressionError(f"expected {text or kind} but found {item[1]}")
        return item[1]

    @property
    def done(self) -> bool:
        return self.position >= len(self.items)


def tokenize(markup: str) -> Tokens:
    items: list[tuple[str, str]] = []
    position = 0
    text = markup.rstrip()
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ExpressionError(f"cannot read {text[position:].strip()[:40]!r}")
        kind = match.lastgroup or ""
        items.append((kind, match.group(kind)))
        position = match.end()
    tokens = Tokens(items)
    tokens.names = sum(1 for kind, _ in items if kind == "name")
    return tokens


MAX_PARENS = 2000


def parse_primary(tokens: Tokens, depth: int = 0) -> Any:
    if depth > MAX_PARENS:
        raise RecursionError
    kind, text = tokens.take()
    if kind == "string":
        return Literal(text[1:-1])
    if kind == "number":
        return Literal(float(text) if "." in text else int(text))
    if kind == "op" and text == "(":
        start = parse_primary(tokens, depth + 1)
        tokens.expect("op", "..")
        stop = parse_primary(tokens, depth + 1)
        tokens.expect("op", ")")
        return RangeOf(start, stop)
    if kind == "op" and text == "[":
        key = parse_primary(tokens, depth + 1)
        tokens.expect("op", "]")
        return _path_rest(tokens, Path("", (key,)), depth)
    if kind != "name":
        raise ExpressionError(f"unexpected {text}")
    if text in KEYWORD_VALUES and not _continues(tokens):
        return Literal(KEYWORD_VALUES[text])
    if text == "empty" and not _continues(tokens):
        return Literal(EMPTY)
    if text == "blank" and not _continues(tokens):
        return Literal(BLANK)
    return _path_rest(tokens, Path(text), depth)


def _continues(tokens: Tokens) -> bool:
    item = tokens.peek()
    return item is not None and item[0] == "op" and item[1] in (".", "[")


def _path_rest(tokens: Tokens, path: Path, depth: int) -> Path:
    parts = list(path.parts)
    while True:
        if tokens.accept("op", "."):
            parts.append(tokens.expect("name"))
        elif tokens.accept("op", "["):
            parts.append(parse_primary(tokens, depth + 1))
            tokens.expect("op", "]")
        else:
            break
    found = Path(path.root, tuple(parts))
    tokens.paths.append(found)
    return found


def parse_filtered(tokens: Tokens) -> Filtered:
    value = parse_primary(tokens)
    filters: list[FilterCall] = []
    while tokens.accept("op", "|"):
        name = tokens.expect("name")
        tokens.filters.append(name)
        args: list[Any] = []
        kwargs: list[tuple[str, Any]] = []
        if tokens.accept("op", ":"):
            while True:
                item, after = tokens.peek(), tokens.peek(1)
                if item is not None and item[0] == "name" and after == ("op", ":"):
                    tokens.position += 2
                    kwargs.append((item[1], parse_primary(tokens)))
                else:
                    args.append(parse_primary(tokens))
                if not tokens.accept("op", ","):
                    break
        filters.append(FilterCall(name, tuple(args), tuple(kwargs)))
    return Filtered(value, tuple(filters))


def parse_output(markup: str) -> tuple[Filtered, Tokens]:
    tokens = tokenize(markup)
    if tokens.done:
        return Filtered(Literal(None)), tokens
    expression = parse_filtered(tokens)
    _finish(tokens)
    return expression, tokens


def _finish(tokens: Tokens) -> None:
    if not tokens.done:
        raise ExpressionError(f"unexpected {tokens.take()[1]}")


COMPARISONS = ("==", "!=", "<>", "<", ">", "<=", ">=")


def _comparison(tokens: Tokens) -> Any:
    left = parse_primary(tokens)
    item = tokens.peek()
    if item is not None and ((item[0] == "op" and item[1] in COMPARISONS) or item == ("name", "contains")):
        tokens.position += 1
        return Compare(item[1], left, parse_primary(tokens))
    return left


def parse_condition_tokens(tokens: Tokens) -> Any:
    left = _comparison(tokens)
    item = tokens.peek()
    if item is not None and item[0] == "name" and item[1] in ("and", "or"):
        tokens.position += 1
        return Logic(item[1], left, parse_condition_tokens(tokens))
    return left


def parse_condition(markup: str) -> tuple[Any, Tokens]:
    tokens = tokenize(markup)
    condition = parse_condition_tokens(tokens)
    if not tokens.done:
        raise ExpressionError(f"unexpected {tokens.take()[1]}")
    return condition, tokens
