"""The save-time rules of a program, read by the server's own parser (`ast`, Python 3.11 grammar).

`check_program` returns every problem it finds as `(line, column, sentence)`, lines counted in the
document (the program's first line stands on `first_line`). A syntax error is the program's only problem.
The sentences are the spec's, word for word (spec/computation-format.md, "Checked when it is saved").

Nothing here recurses on Python's stack with the depth of the tree: a tree nesting deeper than
`MAX_NESTING` levels is refused as not parsing (as CPython's parser refuses one deeper than its own bound,
which raises `RecursionError` or `MemoryError` rather than `SyntaxError`), and the rules walk the tree with
a stack of their own (`TreeRules`).
"""

from __future__ import annotations

import ast
import io
import operator
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

ALLOWED_MODULES = ("math", "re", "json", "collections", "heapq", "time")
REFUSED_NAMES = frozenset(
    {
        "eval", "exec", "execfile", "compile", "open", "input", "print", "help", "__import__", "globals",
        "locals", "vars", "getattr", "setattr", "delattr", "id", "breakpoint", "exit", "quit",
    }
)  # fmt: skip

DOES_NOT_PARSE = "The program does not parse: "
SANDBOX_CANNOT_READ = "The sandbox's Python cannot read this line: "
ONLY_ALLOWED_IMPORTS = "Only math, re, json, collections, heapq and time can be imported; this line imports "
IMPORTS_AT_TOP = "Imports stand at the top level and name their module, as import math or from math import floor"
NOT_AVAILABLE = " is not available: a program sees only its input and builds no code at run time"
DUNDER = "Names and attributes that begin with two underscores are not available; this line uses "
TOP_LEVEL_ONLY = (
    "Only imports, constants and function definitions may stand at the top level, "
    "so that nothing carries over from one call to the next"
)
CONSTANT_ONLY = (
    "A top-level name must hold a constant: a number, text, bytes, True, False, None, "
    "a tuple of these, or numbers combined with +, -, *, /, // or %"
)
DEFAULT_CONSTANT = (
    "A default value of a top-level function must be a constant, so that nothing carries over from one call to the next"
)
NO_GLOBAL = "global is not available: a function cannot rebind a top-level name"
NO_DECORATORS = "Top-level functions take no decorators"
NO_ASYNC = "async and await are not available: a program returns its answer directly"
DEFINED_TWICE = " is defined more than once at the top level"
MAX_NESTING = 500
"""Levels of the syntax tree a program or an expression may nest: far below CPython's parser's own bound
(about 3,000), so what is accepted never depends on the stack the check runs on."""
NESTS_TOO_DEEP = "this line nests more than 500 levels deep; write it in smaller steps"

Problem = tuple[int, int, str]


@dataclass(frozen=True)
class EntryRule:
    """What the entry function must look like, and the sentences that refuse it."""

    name: str = "main"
    parameters: int = 1
    missing: str = "The program needs a top-level entry function: def main(input)"
    wrong_parameters: str = "main takes exactly one parameter, the input: def main(input)"
    yields: str = "main must return its output, not yield it"


_NUMBER_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)


def _is_number_expression(node: ast.expr) -> bool:
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Constant):
            if type(current.value) not in (int, float, complex):
                return False
        elif isinstance(current, ast.UnaryOp) and isinstance(current.op, ast.USub):
            pending.append(current.operand)
        elif isinstance(current, ast.BinOp) and isinstance(current.op, _NUMBER_OPERATORS):
            pending.extend((current.left, current.right))
        else:
            return False
    return True


def is_constant(node: ast.expr) -> bool:
    """A number, text, bytes, True, False, None, a tuple of these, or numbers combined with + - * / // %."""
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Constant):
            if current.value is Ellipsis:
                return False
        elif isinstance(current, ast.Tuple):
            pending.extend(current.elts)
        elif not _is_number_expression(current):
            return False
    return True


def nesting_too_deep(tree: ast.AST, limit: int = MAX_NESTING) -> int | None:
    """The line (in the parsed text) of the first node, in the order of the text, that stands more than
    `limit` levels deep, or None. A node without a line (an operator, a context) takes its parent's."""
    pending: list[tuple[ast.AST, int, int]] = [(tree, 0, 1)]
    while pending:
        node, depth, parent_line = pending.pop()
        line = getattr(node, "lineno", parent_line)
        if depth > limit:
            return int(line)
        children = list(ast.iter_child_nodes(node))
        pending.extend((child, depth + 1, line) for child in reversed(children))
    return None


_FLAT_TOKENS = frozenset({",", ":", ";", "=", ")", "]", "}", "->", "@"})
_NESTING_WORDS = frozenset({"lambda", "not", "if", "else", "await", "for"})


def deepest_line(text: str) -> int:
    """The line with the most tokens that nest a tree (operators, dots, brackets, lambda, not, if), for a
    text CPython's parser gave up on as too deep without naming a line; 1 when the tokens cannot be read."""
    counts: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            nests = (token.type == tokenize.OP and token.string not in _FLAT_TOKENS) or (
                token.type == tokenize.NAME and token.string in _NESTING_WORDS
            )
            if nests:
                counts[token.start[0]] = counts.get(token.start[0], 0) + 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return max(counts, key=lambda line: (counts[line], -line)) if counts else 1


def _bound_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif (isinstance(node, ast.ExceptHandler) and node.name) or (
            isinstance(node, ast.MatchAs | ast.MatchStar) and node.name
        ):
            names.add(node.name)
    return names


class TreeRules:
    """A visitor that walks a tree with a stack of its own, never Python's, in `ast.NodeVisitor`'s order:
    a rule's `visit_X(node)` runs before the node's children, its `leave_X(node)` after them."""

    def walk(self, tree: ast.AST) -> None:
        pending: list[tuple[ast.AST, bool]] = [(tree, False)]
        while pending:
            node, leaving = pending.pop()
            name = type(node).__name__
            rule: Callable[[ast.AST], None] | None = getattr(self, ("leave_" if leaving else "visit_") + name, None)
            if rule is not None:
                rule(node)
            if not leaving:
                pending.append((node, True))
                pending.extend((child, False) for child in reversed(list(ast.iter_child_nodes(node))))


class MicroPythonDisplays(TreeRules):
    """The displays MicroPython's parser cannot read (`[*a, 1]`, `{*a}`, `{**a, "k": 1}`), for a checker of a
    program or of an expression; the subclass says how to report one (`cannot_read`)."""

    def cannot_read(self, node: ast.AST, message: str) -> None:
        raise NotImplementedError

    def _display(self, node: ast.List | ast.Tuple | ast.Set, message: str) -> None:
        if isinstance(node.ctx if not isinstance(node, ast.Set) else ast.Load(), ast.Load):
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    self.cannot_read(element, message)
                    break

    def visit_List(self, node: ast.List) -> None:
        self._display(node, "*x must be assignment target")

    def visit_Tuple(self, node: ast.Tuple) -> None:
        self._display(node, "*x must be assignment target")

    def visit_Set(self, node: ast.Set) -> None:
        self._display(node, "invalid syntax")

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is None for key in node.keys):
            self.cannot_read(node, "invalid syntax")


class _Walker(MicroPythonDisplays):
    """Collects the problems found anywhere in the program (not only at the top level)."""

    def __init__(self, offset: int, bound: set[str]) -> None:
        self.offset = offset
        self.bound = bound
        self.problems: list[Problem] = []
        self.function_depth = 0

    def add(self, node: ast.AST, sentence: str) -> None:
        self.problems.append((getattr(node, "lineno", 1) + self.offset, getattr(node, "col_offset", 0), sentence))

    def cannot_read(self, node: ast.AST, message: str) -> None:
        self.add(node, SANDBOX_CANNOT_READ + message)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function(node)

    def leave_FunctionDef(self, _node: ast.FunctionDef) -> None:
        self.function_depth -= 1

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.add(node, NO_ASYNC)
        self._function(node)

    def leave_AsyncFunctionDef(self, _node: ast.AsyncFunctionDef) -> None:
        self.function_depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        if node.args.posonlyargs:
            self.cannot_read(node, "invalid syntax")
        self.function_depth += 1

    def leave_Lambda(self, _node: ast.Lambda) -> None:
        self.function_depth -= 1

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.args.posonlyargs:
            self.cannot_read(node, "invalid syntax")
        self.function_depth += 1

    def visit_Import(self, node: ast.Import) -> None:
        if self.function_depth:
            self.add(node, IMPORTS_AT_TOP)
            return
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                self.add(node, ONLY_ALLOWED_IMPORTS + alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if self.function_depth or node.level or node.module is None or any(a.name == "*" for a in node.names):
            self.add(node, IMPORTS_AT_TOP)
            return
        if node.module not in ALLOWED_MODULES:
            self.add(node, ONLY_ALLOWED_IMPORTS + node.module)
        for alias in node.names:
            if alias.name.startswith("__"):
                self.add(node, DUNDER + alias.name)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("__"):
            self.add(node, DUNDER + node.id)
        elif node.id in REFUSED_NAMES and node.id not in self.bound:
            self.add(node, node.id + NOT_AVAILABLE)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__"):
            self.add(node, DUNDER + node.attr)

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, NO_GLOBAL)

    def visit_Await(self, node: ast.Await) -> None:
        self.add(node, NO_ASYNC)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.add(node, NO_ASYNC)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self.add(node, NO_ASYNC)

    def visit_Match(self, node: ast.Match) -> None:
        self.cannot_read(node, "invalid syntax")

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self.cannot_read(node.handlers[0] if node.handlers else node, "invalid syntax")


def _is_docstring(index: int, statement: ast.stmt) -> bool:
    return (
        index == 0
        and isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _top_level(tree: ast.Module, offset: int, entry: EntryRule) -> list[Problem]:
    problems: list[Problem] = []

    def add(node: ast.AST, sentence: str) -> None:
        problems.append((getattr(node, "lineno", 1) + offset, getattr(node, "col_offset", 0), sentence))

    seen: set[str] = set()

    def define(node: ast.AST, name: str) -> None:
        if name in seen:
            add(node, name + DEFINED_TWICE)
        seen.add(name)

    entry_found = False
    for index, statement in enumerate(tree.body):
        if _is_docstring(index, statement):
            continue
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                define(statement, (alias.asname or alias.name).split(".")[0])
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    define(statement, alias.asname or alias.name)
        elif isinstance(statement, ast.Assign):
            if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
                add(statement, TOP_LEVEL_ONLY)
                continue
            define(statement, statement.targets[0].id)
            if not is_constant(statement.value):
                add(statement.value, CONSTANT_ONLY)
        elif isinstance(statement, ast.AnnAssign):
            if not isinstance(statement.target, ast.Name) or statement.value is None:
                add(statement, TOP_LEVEL_ONLY)
                continue
            define(statement, statement.target.id)
            if not is_constant(statement.value):
                add(statement.value, CONSTANT_ONLY)
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            define(statement, statement.name)
            for decorator in statement.decorator_list:
                add(decorator, NO_DECORATORS)
            defaults = [*statement.args.defaults, *(d for d in statement.args.kw_defaults if d is not None)]
            for default in defaults:
                if not is_constant(default):
                    add(default, DEFAULT_CONSTANT)
            if statement.name == entry.name and not entry_found:
                entry_found = True
                problems.extend(entry_problems(statement, offset, entry))
        else:
            add(statement, TOP_LEVEL_ONLY)
    if not entry_found:
        problems.append((1 + offset, 0, entry.missing))
    return problems


def own_body_yields(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


def entry_problems(function: ast.FunctionDef | ast.AsyncFunctionDef, offset: int, entry: EntryRule) -> list[Problem]:
    problems: list[Problem] = []
    arguments = function.args
    line = function.lineno + offset
    if (
        len(arguments.args) != entry.parameters
        or arguments.posonlyargs
        or arguments.vararg
        or arguments.kwarg
        or arguments.kwonlyargs
        or arguments.defaults
    ):
        problems.append((line, function.col_offset, entry.wrong_parameters))
    if own_body_yields(function):
        problems.append((line, function.col_offset, entry.yields))
    return problems


FOLDED_BITS = 16_384
"""An integer this large (in bits) the sandbox's compiler computes takes a good part of the check's work:
when the compile pass runs out of its bounds, the line of the largest one above it is blamed."""
_HUGE_BITS = 1 << 62
_SMALL_BITS = 64


@dataclass(frozen=True)
class _Folded:
    """A number MicroPython's parser computes while compiling: its size in bits (bounded above), its exact
    value while it is small, and whether it is a float."""

    bits: int
    value: int | None = None
    is_float: bool = False


_FLOAT = _Folded(64, None, True)
_INT_OPERATIONS: dict[type[ast.operator], Callable[[int, int], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
}
_UNARY_OPERATIONS: dict[type[ast.unaryop], Callable[[int], int]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}


def _folded_literal(node: ast.Constant) -> _Folded | None:
    if type(node.value) is int:
        bits = max(1, node.value.bit_length())
        return _Folded(bits, node.value if bits <= _SMALL_BITS else None)
    return _FLOAT if type(node.value) is float else None


def _folded_int_bits(op: ast.operator, left: _Folded, right: _Folded) -> int | None:
    a, b, exponent = left.bits, right.bits, right.value
    if isinstance(op, ast.Add | ast.Sub | ast.BitOr | ast.BitXor | ast.BitAnd):
        return max(a, b) + 1
    if isinstance(op, ast.Mult):
        return a + b
    if isinstance(op, ast.FloorDiv | ast.Mod):
        return None if exponent == 0 else (a if isinstance(op, ast.FloorDiv) else b)
    if isinstance(op, ast.Pow):
        if left.value in (0, 1, -1):
            return 1
        if exponent is None:
            return _HUGE_BITS
        return None if exponent < 0 else a * exponent
    if isinstance(op, ast.LShift):
        if exponent is None:
            return 1 if left.value == 0 else _HUGE_BITS
        return None if exponent < 0 else a + exponent
    if isinstance(op, ast.RShift) and exponent is not None and exponent >= 0:
        return max(1, a - exponent)
    return None


def _folded_binary(node: ast.BinOp, left: _Folded, right: _Folded) -> _Folded | None:
    if left.is_float or right.is_float:
        arithmetic = isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div | ast.FloorDiv | ast.Mod | ast.Pow)
        return _FLOAT if arithmetic else None
    if isinstance(node.op, ast.Div) or (isinstance(node.op, ast.Pow) and right.value is not None and right.value < 0):
        return _FLOAT
    bits = _folded_int_bits(node.op, left, right)
    if bits is None:
        return None
    bits = min(bits, _HUGE_BITS)
    value: int | None = None
    compute = _INT_OPERATIONS.get(type(node.op))
    if bits <= _SMALL_BITS and compute is not None and left.value is not None and right.value is not None:
        try:
            computed = compute(left.value, right.value)
        except ArithmeticError:
            return None
        value = computed if type(computed) is int else None
    return _Folded(bits, value)


def largest_folded_number(source: str) -> tuple[int, int] | None:
    """The line and the size in bits of the largest integer MicroPython's compiler computes while compiling
    `source`, or None. It folds integer literals combined with + - * / // % ** << >> & | ^ and unary - + ~
    (as CPython's `ast` groups them: a bound above what the sandbox folds, which never folds part of a chain);
    the sizes are bounds, never computed past 64 bits, so a check of `7 ** 10000000` costs nothing."""
    try:
        tree = ast.parse(source, filename="program", feature_version=(3, 11))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    in_order: list[ast.AST] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        in_order.append(node)
        pending.extend(ast.iter_child_nodes(node))
    folded: dict[int, _Folded] = {}
    largest: tuple[int, int] | None = None
    for node in reversed(in_order):
        number: _Folded | None = None
        if isinstance(node, ast.Constant):
            number = _folded_literal(node)
        elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not) and id(node.operand) in folded:
            operand = folded[id(node.operand)]
            if not (operand.is_float and isinstance(node.op, ast.Invert)):
                value = None if operand.value is None else _UNARY_OPERATIONS[type(node.op)](operand.value)
                number = _Folded(operand.bits + 1, value, operand.is_float)
        elif isinstance(node, ast.BinOp) and id(node.left) in folded and id(node.right) in folded:
            number = _folded_binary(node, folded[id(node.left)], folded[id(node.right)])
        if number is None:
            continue
        folded[id(node)] = number
        line = int(getattr(node, "lineno", 1))
        if largest is None or number.bits > largest[1] or (number.bits == largest[1] and line < largest[0]):
            largest = (line, number.bits)
    return largest


def check_program(source: str, first_line: int, entry: EntryRule | None = None) -> list[Problem]:
    """Every problem of the program's text, sorted by line then column; a syntax error alone."""
    offset = first_line - 1
    try:
        tree = ast.parse(source, filename="program", feature_version=(3, 11))
    except SyntaxError as error:
        return [((error.lineno or 1) + offset, 0, DOES_NOT_PARSE + (error.msg or "invalid syntax"))]
    except ValueError as error:
        return [(first_line, 0, DOES_NOT_PARSE + str(error))]
    except (RecursionError, MemoryError):
        return [(deepest_line(source) + offset, 0, DOES_NOT_PARSE + NESTS_TOO_DEEP)]
    too_deep = nesting_too_deep(tree)
    if too_deep is not None:
        return [(too_deep + offset, 0, DOES_NOT_PARSE + NESTS_TOO_DEEP)]
    walker = _Walker(offset, _bound_names(tree))
    walker.walk(tree)
    problems = walker.problems + _top_level(tree, offset, entry or EntryRule())
    unique = sorted(set(problems))
    return unique
