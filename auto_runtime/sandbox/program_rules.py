"""The save-time rules of a program, read by the server's own parser (`ast`, Python 3.11 grammar).

`check_program` returns every problem it finds as `(line, column, sentence)`, lines counted in the
document (the program's first line stands on `first_line`). A syntax error is the program's only problem.
The sentences are the spec's, word for word (spec/computation-format.md, "Checked when it is saved").
"""

from __future__ import annotations

import ast
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

Problem = tuple[int, int, str]


@dataclass(frozen=True)
class EntryRule:
    """What the entry function must look like, and the sentences that refuse it."""

    name: str = "main"
    parameters: int = 1
    missing: str = "The program needs a top-level entry function: def main(input)"
    wrong_parameters: str = "main takes exactly one parameter, the input: def main(input)"
    yields: str = "main must return its output, not yield it"


def _is_number_expression(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float, complex)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_number_expression(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(
        node.op, ast.Add | ast.Sub | ast.Mult | ast.Div | ast.FloorDiv | ast.Mod
    ):
        return _is_number_expression(node.left) and _is_number_expression(node.right)
    return False


def is_constant(node: ast.expr) -> bool:
    """A number, text, bytes, True, False, None, a tuple of these, or numbers combined with + - * / // %."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, ast.Tuple):
        return all(is_constant(element) for element in node.elts)
    return _is_number_expression(node)


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


class MicroPythonDisplays(ast.NodeVisitor):
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
        self.generic_visit(node)

    def visit_List(self, node: ast.List) -> None:
        self._display(node, "*x must be assignment target")

    def visit_Tuple(self, node: ast.Tuple) -> None:
        self._display(node, "*x must be assignment target")

    def visit_Set(self, node: ast.Set) -> None:
        self._display(node, "invalid syntax")

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is None for key in node.keys):
            self.cannot_read(node, "invalid syntax")
        self.generic_visit(node)


class _Walker(MicroPythonDisplays):
    """Collects the problems found anywhere in the program (not only at the top level)."""

    def __init__(self, source: str, offset: int, bound: set[str]) -> None:
        self.source = source
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

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.add(node, NO_ASYNC)
        self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        if node.args.posonlyargs:
            self.cannot_read(node, "invalid syntax")
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.args.posonlyargs:
            self.cannot_read(node, "invalid syntax")
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

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
            written = ast.get_source_segment(self.source, node) or node.attr
            self.add(node, DUNDER + " ".join(written.split()))
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, NO_GLOBAL)

    def visit_Await(self, node: ast.Await) -> None:
        self.add(node, NO_ASYNC)
        self.generic_visit(node)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.add(node, NO_ASYNC)
        self.generic_visit(node)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self.add(node, NO_ASYNC)
        self.generic_visit(node)

    def visit_Match(self, node: ast.Match) -> None:
        self.cannot_read(node, "invalid syntax")
        self.generic_visit(node)

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self.cannot_read(node.handlers[0] if node.handlers else node, "invalid syntax")
        self.generic_visit(node)


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
                problems.extend(_entry_problems(statement, offset, entry))
        else:
            add(statement, TOP_LEVEL_ONLY)
    if not entry_found:
        problems.append((1 + offset, 0, entry.missing))
    return problems


def _own_body_yields(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return False


def _entry_problems(function: ast.FunctionDef | ast.AsyncFunctionDef, offset: int, entry: EntryRule) -> list[Problem]:
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
    if _own_body_yields(function):
        problems.append((line, function.col_offset, entry.yields))
    return problems


def check_program(source: str, first_line: int, entry: EntryRule | None = None) -> list[Problem]:
    """Every problem of the program's text, sorted by line then column; a syntax error alone."""
    offset = first_line - 1
    try:
        tree = ast.parse(source, filename="program", feature_version=(3, 11))
    except SyntaxError as error:
        return [((error.lineno or 1) + offset, 0, DOES_NOT_PARSE + (error.msg or "invalid syntax"))]
    except ValueError as error:
        return [(first_line, 0, DOES_NOT_PARSE + str(error))]
    walker = _Walker(source, offset, _bound_names(tree))
    walker.visit(tree)
    problems = walker.problems + _top_level(tree, offset, entry or EntryRule())
    unique = sorted(set(problems))
    return unique
