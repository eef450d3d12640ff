"""Runtime expressions: where a string is one, its text, and the save-time rules of spec 4.2.

An expression is the text between `${` and the last `}` of a string that is exactly `${ … }` (surrounding
whitespace allowed), or the whole string in the places that always take one (`if`, `when`, …). It is read
as if in parentheses, so it may span lines. `check_expression` returns each problem as
`(line of the expression, words)`; `words_at` adds ` (line k of the expression)` past line 1.
"""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Iterable

from auto_runtime.sandbox.program_rules import MicroPythonDisplays, deepest_line, nesting_too_deep

ALLOWED_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bin", "bool", "callable", "chr", "dict", "divmod", "enumerate", "filter", "float",
        "frozenset", "hex", "int", "isinstance", "iter", "len", "list", "map", "max", "min", "next", "oct", "ord",
        "pow", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    }
)  # fmt: skip
REFUSED_BUILTINS = frozenset(
    {
        "eval", "exec", "execfile", "compile", "open", "print", "help", "globals",
        "locals", "vars", "getattr", "setattr", "delattr", "id", "breakpoint", "exit", "quit",
    }
)  # fmt: skip
IN_PLACE_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault", "popitem"}
    | {"add", "discard"}
)
VARIABLES = frozenset({"data", "input", "output", "context", "task", "workflow", "runtime"})
"""The fixed variables; `item`, `index` and `error` are only the default names a document may write again."""

DOES_NOT_PARSE = "The expression does not parse: "
NESTS_TOO_DEEP = "it nests more than 500 levels deep; write it in smaller steps"
DOLLAR = "Variables are plain Python names: write data, not $data"
SANDBOX_CANNOT_READ = "The sandbox's Python cannot read this expression: "
DUNDER = "Names and attributes that begin with two underscores are not available; this expression uses "
NOT_AVAILABLE = " is not available: an expression sees only its variables and builds no code at run time"
NOT_A_VARIABLE = " is not a variable here; this place has "
IN_PLACE = ' changes a value in place, which an expression may not do; write sorted(a), a + [v] or a | {"k": v}'
NOT_IN_EXPRESSION = " is not available in an expression"
REBIND = ":= cannot rebind "
CANNOT_NAME = " cannot name a variable"

_WRAPPED = re.compile(r"^\s*\$\{(.*)\}\s*$", re.DOTALL)
_DOLLAR_NAME = re.compile(r"\$[A-Za-z_]")

ExpressionProblem = tuple[int, str]


def wrapped_expression(value: object) -> str | None:
    """The expression of a string that is exactly `${ … }`, else None (a literal)."""
    if not isinstance(value, str):
        return None
    match = _WRAPPED.match(value)
    return match.group(1).strip() if match is not None else None


def condition_expression(value: str) -> str:
    """The expression of a place that always takes one: with or without `${ }`."""
    wrapped = wrapped_expression(value)
    return wrapped if wrapped is not None else value.strip()


def words_at(problem: ExpressionProblem) -> str:
    line, words = problem
    return words if line <= 1 else f"{words} (line {line} of the expression)"


def parse_expression(text: str) -> ast.Expression:
    """The expression read as if in parentheses; raises SyntaxError."""
    return ast.parse("(" + text + "\n)", filename="expression", mode="eval", feature_version=(3, 11))


def _bound(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


class _Rules(MicroPythonDisplays):
    def __init__(self, place: tuple[str, ...], bound: set[str]) -> None:
        self.place = place
        self.bound = bound
        self.problems: list[ExpressionProblem] = []

    def add(self, node: ast.AST, words: str) -> None:
        self.problems.append((getattr(node, "lineno", 1), words))

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name.startswith("__"):
            self.add(node, DUNDER + name)
        elif isinstance(node.ctx, ast.Load) and name not in self.bound:
            if name in REFUSED_BUILTINS:
                self.add(node, name + NOT_AVAILABLE)
            elif name not in self.place and name not in ALLOWED_BUILTINS:
                self.add(node, name + NOT_A_VARIABLE + ", ".join(self.place))

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        if isinstance(node.target, ast.Name) and node.target.id in self.place:
            self.add(node, REBIND + node.target.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__"):
            self.add(node, DUNDER + node.attr)
        elif node.attr in IN_PLACE_METHODS or node.attr.endswith("_update"):
            self.add(node, node.attr + IN_PLACE)

    def visit_Await(self, node: ast.Await) -> None:
        self.add(node, "await" + NOT_IN_EXPRESSION)

    def visit_Yield(self, node: ast.Yield) -> None:
        self.add(node, "yield" + NOT_IN_EXPRESSION)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> None:
        self.add(node, "yield" + NOT_IN_EXPRESSION)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self.add(node.target, "async for" + NOT_IN_EXPRESSION)

    def cannot_read(self, node: ast.AST, message: str) -> None:
        self.add(node, SANDBOX_CANNOT_READ + message)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        if node.args.posonlyargs:
            self.cannot_read(node, "invalid syntax")


def check_expression(text: str, place: Iterable[str]) -> list[ExpressionProblem]:
    """Every problem of one expression at a place whose variables are `place`; a syntax error alone."""
    names = tuple(place)
    try:
        tree = parse_expression(text)
    except SyntaxError as error:
        lines = text.count("\n") + 1
        if (error.lineno or 1) > lines:
            try:
                ast.parse(text, filename="expression", mode="eval", feature_version=(3, 11))
            except SyntaxError as plain:
                error = plain
            except (ValueError, RecursionError, MemoryError):
                pass
        line = min(error.lineno or 1, lines)
        if _DOLLAR_NAME.search(text):
            return [(line, DOLLAR)]
        return [(line, DOES_NOT_PARSE + (error.msg or "invalid syntax"))]
    except ValueError as error:
        return [(1, DOES_NOT_PARSE + str(error))]
    except (RecursionError, MemoryError):
        return [(deepest_line(text), DOES_NOT_PARSE + NESTS_TOO_DEEP)]
    too_deep = nesting_too_deep(tree)
    if too_deep is not None:
        return [(min(too_deep, text.count("\n") + 1), DOES_NOT_PARSE + NESTS_TOO_DEEP)]
    rules = _Rules(names, _bound(tree))
    rules.walk(tree)
    seen: set[ExpressionProblem] = set()
    problems: list[ExpressionProblem] = []
    for problem in rules.problems:
        if problem not in seen:
            seen.add(problem)
            problems.append(problem)
    return problems


def variable_name_problem(name: object) -> str | None:
    """Why a `for.each`, `for.at` or `catch.as` value cannot name a variable, or None (spec 4.4)."""
    text = str(name)
    if (
        not isinstance(name, str)
        or not name.isascii()
        or not name.isidentifier()
        or keyword.iskeyword(name)
        or name.startswith("_")
        or name in VARIABLES
        or name in ALLOWED_BUILTINS
    ):
        return text + CANNOT_NAME
    return None
