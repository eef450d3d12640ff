"""Each save-time refusal of a program's text, at its document line, in the spec's words."""

from __future__ import annotations

import pytest

from auto_runtime.sandbox.program_rules import check_program, largest_folded_number

MAIN = "def main(input):\n    return input\n"


def sentences(program: str, first_line: int = 1) -> list[tuple[int, str]]:
    return [(line, sentence) for line, _column, sentence in check_program(program, first_line)]


def test_a_valid_program_has_no_problem() -> None:
    program = (
        '"""Docstring."""\nimport math\nimport math as m\nfrom math import floor, ceil\nimport time\n'
        "LIMIT = 2 * 10 + -3 // 2 % 7 - 1.5 / 2\nNAMES: tuple = ('a', b'b', True, None, (1, 2))\n"
        "def helper(x, y=3, *rest, z=-1, **options):\n    def inner():\n        yield 1\n"
        "    class Local:\n        def __init__(self):\n            self.v = 1\n    return [*inner()]\n" + MAIN
    )
    assert sentences(program) == [(14, "The sandbox's Python cannot read this line: *x must be assignment target")]


def test_lines_count_from_the_document() -> None:
    assert sentences("import os\n" + MAIN, first_line=7) == [
        (7, "Only math, re, json, collections, heapq and time can be imported; this line imports os")
    ]


def test_syntax_error_is_the_only_problem() -> None:
    assert sentences("import os\ndef main(x)\n    return 1\n") == [(2, "The program does not parse: expected ':'")]
    assert sentences("x = = 1\n" + MAIN) == [(1, "The program does not parse: invalid syntax")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("match x:\n    case 1:\n        pass", "invalid syntax"),
        ("def f(a, /, b):\n    pass", "invalid syntax"),
        ("x = [*a]", "*x must be assignment target"),
        ("x = (*a, 1)", "*x must be assignment target"),
        ("x = {*a}", "invalid syntax"),
        ("x = {**a}", "invalid syntax"),
        ("try:\n    pass\nexcept* ValueError:\n    pass", "invalid syntax"),
    ],
)
def test_syntax_the_sandbox_cannot_read(line: str, message: str) -> None:
    program = "def f(a, x):\n    " + line.replace("\n", "\n    ") + "\n" + MAIN
    found = sentences(program)
    assert found[0][1] == "The sandbox's Python cannot read this line: " + message
    assert found[0][0] in (2, 4)


@pytest.mark.parametrize(
    ("statement", "module"),
    [
        ("import os", "os"),
        ("import os.path", "os.path"),
        ("from sys import argv", "sys"),
        ("import host", "host"),
    ],
)
def test_imports_outside_the_table(statement: str, module: str) -> None:
    assert sentences(statement + "\n" + MAIN) == [
        (1, f"Only math, re, json, collections, heapq and time can be imported; this line imports {module}")
    ]


@pytest.mark.parametrize(
    "statement", ["from math import *", "from . import x", "def f():\n    import math\n    return math"]
)
def test_imports_that_do_not_stand_at_the_top(statement: str) -> None:
    found = sentences(statement + "\n" + MAIN)
    assert (
        statement.count("\n") + 1 - (1 if "def" in statement else 0),
        "Imports stand at the top level and name their module, as import math or from math import floor",
    ) in found


@pytest.mark.parametrize("name", ["eval", "exec", "print", "open", "getattr", "id", "__import__", "exit"])
def test_refused_builtins(name: str) -> None:
    found = sentences(f"def main(input):\n    return {name}(input)\n")
    if name.startswith("__"):
        assert (
            2,
            f"Names and attributes that begin with two underscores are not available; this line uses {name}",
        ) in found
    else:
        assert found == [(2, f"{name} is not available: a program sees only its input and builds no code at run time")]


def test_a_refused_name_the_program_defines_is_allowed() -> None:
    assert sentences("def print(x):\n    return x\ndef main(input):\n    return print(input)\n") == []


def test_double_underscore_names_and_attributes() -> None:
    program = "def main(input):\n    f = main.__globals__\n    return __name__\n"
    refused = "Names and attributes that begin with two underscores are not available; this line uses "
    assert sentences(program) == [(2, refused + "__globals__"), (3, refused + "__name__")]


TOP_LEVEL = (
    "Only imports, constants and function definitions may stand at the top level, "
    "so that nothing carries over from one call to the next"
)
CONSTANT = (
    "A top-level name must hold a constant: a number, text, bytes, True, False, None, "
    "a tuple of these, or numbers combined with +, -, *, /, // or %"
)


TOP_LEVEL_STATEMENTS = (
    "class A:\n    pass",
    "for i in (1,):\n    pass",
    "if True:\n    pass",
    "main(1)",
    "X = 1\nX += 1",
    "A, B = 1, 2",
    "A = B = 1",
    "x: int",
)


@pytest.mark.parametrize("statement", TOP_LEVEL_STATEMENTS)
def test_top_level_statements(statement: str) -> None:
    found = sentences(statement + "\n" + MAIN)
    assert any(sentence == TOP_LEVEL for _line, sentence in found)


@pytest.mark.parametrize("value", ["{}", "[]", "2 ** 10", "len('x')", "'a' + 'b'", "-'a'", "..."])
def test_top_level_names_hold_constants(value: str) -> None:
    assert sentences(f"CACHE = {value}\n" + MAIN) == [(1, CONSTANT)]


def test_defaults_of_top_level_functions() -> None:
    program = "def f(x, seen=[], *, k={}):\n    return x\n" + MAIN
    sentence = (
        "A default value of a top-level function must be a constant, "
        "so that nothing carries over from one call to the next"
    )
    assert sentences(program) == [(1, sentence), (1, sentence)]


def test_global_decorators_async() -> None:
    program = (
        "def f():\n    global X\n    return 1\n@staticmethod\ndef g():\n    return 1\n"
        "async def h():\n    await h()\n" + MAIN
    )
    assert sentences(program) == [
        (2, "global is not available: a function cannot rebind a top-level name"),
        (4, "Top-level functions take no decorators"),
        (7, "async and await are not available: a program returns its answer directly"),
        (8, "async and await are not available: a program returns its answer directly"),
    ]


def test_defined_twice() -> None:
    assert sentences("X = 1\nimport math as X\n" + MAIN + MAIN) == [
        (2, "X is defined more than once at the top level"),
        (5, "main is defined more than once at the top level"),
    ]


def test_entry_function() -> None:
    assert sentences("def helper(x):\n    return x\n", first_line=4) == [
        (4, "The program needs a top-level entry function: def main(input)")
    ]
    wrong = "main takes exactly one parameter, the input: def main(input)"
    for signature in ("", "a, b", "a=1", "*args", "**kwargs", "a, *, b"):
        assert sentences(f"X = 1\ndef main({signature}):\n    return 1\n") == [(2, wrong)], signature
    assert sentences("def main(input):\n    yield input\n") == [(1, "main must return its output, not yield it")]
    assert sentences("def main(input):\n    def inner():\n        yield 1\n    return list(inner())\n") == []


DEEP = "The program does not parse: this line nests more than 500 levels deep; write it in smaller steps"


def test_a_tree_deeper_than_500_levels_does_not_parse_at_the_line_of_its_501st_level() -> None:
    """Spread over lines: a chain of `+` nests from its first term on (each level starts there); unary
    minuses nest where each is written: the 498th, on line 501, holds the 501st level (its operator)."""
    terms = "\n".join(["        + input"] * 700)
    assert sentences(f"def main(input):\n    return (\n        input\n{terms}\n    )\n") == [(3, DEEP)]
    minuses = "\n".join(["        -"] * 600)
    assert sentences(f"def main(input):\n    x = 1\n    return (\n{minuses}\n        1)\n") == [(501, DEEP)]


def test_a_tree_too_deep_for_cpythons_parser_is_refused_at_its_busiest_line() -> None:
    program = "def main(input):\n    x = 1\n    return " + "+".join(["1"] * 20_000) + "\n"
    assert sentences(program) == [(3, DEEP)]


def test_the_largest_folded_number_is_bounded_without_computing_it() -> None:
    assert largest_folded_number("x = 7 ** 10000000\ny = 2 ** 10\n") == (1, 30_000_000)
    assert largest_folded_number("x = 1\ny = (1 << 100000) * 3\n") == (2, 100_003)
    assert largest_folded_number("x = 2 ** -3\ny = 2.0 ** 1000\n") == (1, 64)
    assert largest_folded_number("z = 1 ** (2 ** 70)\n") == (1, 140)
    assert largest_folded_number("x = input ** 1000\n") == (1, 10)
