"""Liquid expressions read with a property name after a dot, never a keyword.

python-liquid's expression tokenizer turns `limit`, `offset`, `for`, `with`, `in`, `and`, `true` and the other
words of its grammar into keywords wherever they stand, so `{{ input.limit }}` cannot be read. A word after a
dot is always a property name (as in `input.limit`); in every other place the words keep their meaning
(`{% for x in list limit: 2 %}`). The parser reaches expressions three ways, each replaced here: the stream of
a template's tokens (`into_inner` for every tag), the output statement `{{ ... }}`, and the `liquid` tag's own
lines."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from liquid import BlockNode, Node
from liquid.builtin.expressions import tokenize
from liquid.builtin.expressions.filtered import FilteredExpression
from liquid.builtin.output import Output, OutputNode
from liquid.builtin.tags.liquid_tag import LiquidTag
from liquid.parser import get_parser
from liquid.stream import TokenStream
from liquid.token import (
    TOKEN_AND,
    TOKEN_AS,
    TOKEN_BLANK,
    TOKEN_COLS,
    TOKEN_CONTAINS,
    TOKEN_CONTINUE,
    TOKEN_DOT,
    TOKEN_ELSE,
    TOKEN_EMPTY,
    TOKEN_EOF,
    TOKEN_EXPRESSION,
    TOKEN_FALSE,
    TOKEN_FOR,
    TOKEN_IF,
    TOKEN_IN,
    TOKEN_LIMIT,
    TOKEN_NIL,
    TOKEN_NOT,
    TOKEN_NULL,
    TOKEN_OFFSET,
    TOKEN_OR,
    TOKEN_OUTPUT,
    TOKEN_REQUIRED,
    TOKEN_REVERSED,
    TOKEN_TAG,
    TOKEN_TRUE,
    TOKEN_WITH,
    TOKEN_WORD,
    Token,
)

KEYWORDS = frozenset(
    {
        TOKEN_TRUE,
        TOKEN_FALSE,
        TOKEN_NIL,
        TOKEN_NULL,
        TOKEN_EMPTY,
        TOKEN_BLANK,
        TOKEN_AND,
        TOKEN_OR,
        TOKEN_CONTAINS,
        TOKEN_NOT,
        TOKEN_IN,
        TOKEN_OFFSET,
        TOKEN_LIMIT,
        TOKEN_REVERSED,
        TOKEN_COLS,
        TOKEN_CONTINUE,
        TOKEN_WITH,
        TOKEN_FOR,
        TOKEN_AS,
        TOKEN_IF,
        TOKEN_ELSE,
        TOKEN_REQUIRED,
    }
)
"""The words python-liquid's expression tokenizer reads as keywords wherever they stand."""


def property_tokens(tokens: Iterable[Token]) -> Iterator[Token]:
    """The tokens, with any keyword that follows a dot read as a word (a property name)."""
    after_dot = False
    for token in tokens:
        if after_dot and token.kind in KEYWORDS:
            token = Token(TOKEN_WORD, token.value, token.start_index, token.source)
        after_dot = token.kind == TOKEN_DOT
        yield token


def expression_stream(token: Token) -> PropertyTokenStream:
    """The stream of one expression token's tokens, properties after dots included."""
    return PropertyTokenStream(property_tokens(tokenize(token.value, parent_token=token)))


class PropertyTokenStream(TokenStream):
    """A template's token stream whose expressions read a word after a dot as a property."""

    def into_inner(self, *, tag: Token | None = None, eat: bool = True) -> TokenStream:
        token = self.current
        super().into_inner(tag=tag, eat=eat)
        return expression_stream(token)


class PropertyOutput(Output):
    """`{{ ... }}`, its expression read with properties after dots."""

    def parse(self, stream: TokenStream) -> OutputNode:
        token = stream.eat(TOKEN_OUTPUT)
        expression = stream.expect(TOKEN_EXPRESSION)
        return self.node_class(token, FilteredExpression.parse(self.env, expression_stream(expression)))


class PropertyLiquidTag(LiquidTag):
    """The `liquid` tag, its lines read into a stream whose expressions read properties after dots."""

    def parse(self, stream: TokenStream) -> Node:
        token = stream.eat(TOKEN_TAG)
        if stream.current.kind == TOKEN_EOF:
            return self.node_class(token, None, block=BlockNode(token, []))
        if stream.current.kind == TOKEN_TAG:
            return self.node_class(token, None, block=get_parser(self.env).parse_block(stream, end=()))
        lines = stream.expect(TOKEN_EXPRESSION)
        inner = PropertyTokenStream(self._tokenize(lines.value, token=lines), block_depth_carry=stream.block_depth)
        return self.node_class(token, lines, block=get_parser(self.env).parse_block(inner, end=()))
