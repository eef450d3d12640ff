"""Spec, computation-format.md: "A function document", "Fields", "The program", "Checked when it is saved".

Each refusal is sent as a real `POST /definitions/computation`: `invalid_input` (422), one entry of `errors`
per problem at `/source`, each `detail` beginning with `Line N: ` (line 1 is the opening `---`), in line
order, at most 20 then `And N more problems`, and nothing saved.
"""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.computation.documents import HEAD, document, save, saved
from tests.conformance.computation.documents import details as source_details
from tests.conformance.computation.example import EXAMPLE
from tests.conformance.helpers import fresh_id, problem

MAIN = "def main(input):\n    return input\n"

NOT_PARSE = "The program does not parse: "
CANNOT_READ = "The sandbox's Python cannot read this line: "
ONLY_MODULES = "Only math, re, json, collections, heapq and time can be imported; this line imports "
IMPORTS_AT_TOP = "Imports stand at the top level and name their module, as import math or from math import floor"
NOT_AVAILABLE = " is not available: a program sees only its input and builds no code at run time"
DUNDER = "Names and attributes that begin with two underscores are not available; this line uses "
TOP_LEVEL = (
    "Only imports, constants and function definitions may stand at the top level, "
    "so that nothing carries over from one call to the next"
)
CONSTANT = (
    "A top-level name must hold a constant: a number, text, bytes, True, False, None, "
    "a tuple of these, or numbers combined with +, -, *, /, // or %"
)
DEFAULT = (
    "A default value of a top-level function must be a constant, so that nothing carries over from one call to the next"
)
GLOBAL = "global is not available: a function cannot rebind a top-level name"
DECORATOR = "Top-level functions take no decorators"
ASYNC = "async and await are not available: a program returns its answer directly"
NO_MAIN = "The program needs a top-level entry function: def main(input)"
MAIN_PARAMETERS = "main takes exactly one parameter, the input: def main(input)"
MAIN_YIELDS = "main must return its output, not yield it"

REFUSED_NAMES = (
    "eval", "exec", "execfile", "compile", "open", "input", "print", "help", "globals", "locals", "vars",
    "getattr", "setattr", "delattr", "id", "breakpoint", "exit", "quit",
)  # fmt: skip


def refused(client: httpx.Client, playbook: str, source: str) -> list[str]:
    """Save `source`; it must be refused and leave nothing saved. The `detail` of each error, in order."""
    name = fresh_id("refused")
    response = save(client, playbook, name, source)
    body = problem(response, 422, "invalid_input")
    found = source_details(body)
    assert body["detail"] == " ".join(found)
    problem(client.get(f"{playbook}/definitions/computation/{name}"), 404, "not_found")
    return found


# The fields and the document


def test_the_spec_example_saves_with_its_fields(client: httpx.Client, playbook: str) -> None:
    """A saved computation definition is `text/markdown`; the document supplies description and schemas."""
    body = saved(client, playbook, "invoice-aging", EXAMPLE)
    assert body["type"] == "computation"
    assert body["media_type"] == "text/markdown"
    assert body["description"] == "Overdue amounts per customer in aging buckets, in cents"
    assert body["input_schema"]["required"] == ["invoices"]
    assert body["output_schema"]["required"] == ["customers", "total_cents"]
    assert body["source"] == EXAMPLE


def test_a_document_without_description_or_schemas_saves(client: httpx.Client, playbook: str) -> None:
    """`description`, `input.schema` and `output.schema` are optional; only `language` is required."""
    body = saved(client, playbook, "bare", HEAD + MAIN)
    assert body.get("description") is None
    assert body.get("input_schema") is None and body.get("output_schema") is None


def test_language_must_be_python(client: httpx.Client, playbook: str) -> None:
    """`language`: required, exactly `python`; another is refused at its line, a missing one at line 1."""
    assert refused(client, playbook, "---\ndescription: x\nlanguage: ruby\n---\n" + MAIN) == [
        "Line 3: Programs are written in Python; set language: python"
    ]
    assert refused(client, playbook, "---\ndescription: x\n---\n" + MAIN) == [
        "Line 1: The front matter names its language: language: python"
    ]


@pytest.mark.parametrize(
    ("front_matter", "line", "key"),
    [
        ("model: openai/gpt\n", 3, "model"),
        ("config:\n  temperature: 0\n", 3, "config"),
        ("tools: []\n", 3, "tools"),
        ("output:\n  format: json\n", 4, "output.format"),
        ("input:\n  default: {}\n", 4, "input.default"),
        ("colour: blue\n", 3, "colour"),
    ],
)
def test_every_other_key_is_refused_at_its_line(
    client: httpx.Client, playbook: str, front_matter: str, line: int, key: str
) -> None:
    """Every other key is refused at its line, the keys of a reasoning function among them."""
    assert refused(client, playbook, document(MAIN, front_matter)) == [
        f"Line {line}: {key} is not a field of a computation function"
    ]


def test_output_takes_schema_or_shape_not_both(client: httpx.Client, playbook: str) -> None:
    """A document gives `output.schema` or `output.shape`, never both."""
    front = "output:\n  shape: series\n  schema: {type: object}\n"
    assert refused(client, playbook, document(MAIN, front)) == ["Line 3: output takes schema or shape, not both"]


def test_a_schema_must_be_a_json_schema(client: httpx.Client, playbook: str) -> None:
    """`input.schema` and `output.schema` must each be a JSON Schema 2020-12: `X is not a JSON Schema: ` and why."""
    found = refused(client, playbook, document(MAIN, "input:\n  schema:\n    type: 12\n"))
    assert len(found) == 1 and found[0].startswith("Line 5: input.schema is not a JSON Schema: ")
    assert found[0].endswith(" (at /type)")
    found = refused(client, playbook, document(MAIN, "output:\n  schema:\n    minimum: high\n"))
    assert len(found) == 1 and found[0].startswith("Line 5: output.schema is not a JSON Schema: ")


def test_front_matter_that_does_not_parse(client: httpx.Client, playbook: str) -> None:
    """`The front matter does not parse: ` and the YAML parser's message."""
    found = refused(client, playbook, "---\nlanguage: python\ninput: [unclosed\n---\n" + MAIN)
    assert len(found) == 1
    assert found[0].startswith("Line ") and ": The front matter does not parse: " in found[0]


def test_a_description_is_1_to_1000_characters(client: httpx.Client, playbook: str) -> None:
    """`description`: optional, 1 to 1,000 characters."""
    body = saved(client, playbook, "long-words", document(MAIN, f"description: {'d' * 1000}\n"))
    assert body["description"] == "d" * 1000
    found = refused(client, playbook, document(MAIN, f"description: {'d' * 1001}\n"))
    assert len(found) == 1 and found[0].startswith("Line 3: ")


def test_a_document_with_no_program_is_refused_at_its_last_line(client: httpx.Client, playbook: str) -> None:
    """`The document holds no program after its front matter`, at its last line."""
    assert refused(client, playbook, "---\nlanguage: python\n---\n") == [
        "Line 3: The document holds no program after its front matter"
    ]
    assert refused(client, playbook, "---\nlanguage: python\n---\n\n   \n") == [
        "Line 5: The document holds no program after its front matter"
    ]


def test_an_input_schema_need_not_be_an_object(client: httpx.Client, playbook: str) -> None:
    """Whatever JSON value the input schema accepts is a valid input."""
    saved(
        client,
        playbook,
        "doubles",
        document("def main(input):\n    return input * 2\n", "input:\n  schema:\n    type: integer\n"),
    )
    response = client.post(f"{playbook}/definitions/computation/doubles/run", json={"input": 21})
    assert response.status_code == 200 and response.json()["output"] == 42


# The program's rules


def test_a_syntax_error_is_the_programs_only_problem(client: httpx.Client, playbook: str) -> None:
    """A syntax error stops the check of the program; front-matter problems are still listed."""
    assert refused(client, playbook, HEAD + "import os\ndef main(x)\n    return 1\n") == [
        f"Line 5: {NOT_PARSE}expected ':'"
    ]
    assert refused(client, playbook, "---\nlanguage: python\nmodel: x\n---\nimport os\nx = = 1\n" + MAIN) == [
        "Line 3: model is not a field of a computation function",
        f"Line 6: {NOT_PARSE}invalid syntax",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("match input:\n        case 1:\n            return 1\n    return 0", "invalid syntax"),
        ("def f(a, /, b):\n        return a\n    return 0", "invalid syntax"),
        ("return [*input]", "*x must be assignment target"),
        ("return {**input}", "invalid syntax"),
        ("try:\n        pass\n    except* ValueError:\n        pass\n    return 0", "invalid syntax"),
        ("with (open_a() as a, open_b() as b):\n        return a\n    return 0", "invalid syntax"),
    ],
)
def test_syntax_the_sandbox_cannot_read(client: httpx.Client, playbook: str, body: str, message: str) -> None:
    """Syntax CPython reads and the sandbox does not: the third pass, MicroPython's compile, refuses it."""
    helpers = "def open_a():\n    return 1\ndef open_b():\n    return 2\n"
    found = refused(client, playbook, HEAD + helpers + "def main(input):\n    " + body + "\n")
    assert len(found) == 1
    line, sentence = found[0].split(": ", 1)
    assert sentence == CANNOT_READ + message
    assert 9 <= int(line.removeprefix("Line ")) <= 9 + body.count("\n")


@pytest.mark.parametrize(
    ("statement", "written"),
    [
        ("import os", "os"),
        ("import os.path", "os.path"),
        ("from sys import argv", "sys"),
        ("import random", "random"),
        ("import io", "io"),
        ("import gc", "gc"),
        ("import micropython", "micropython"),
        ("import struct", "struct"),
        ("import uctypes", "uctypes"),
        ("import host", "host"),
    ],
)
def test_an_import_of_a_module_not_allowed(client: httpx.Client, playbook: str, statement: str, written: str) -> None:
    """`Only math, re, json, collections, heapq and time can be imported; this line imports X`, X as written."""
    assert refused(client, playbook, HEAD + statement + "\n" + MAIN) == [f"Line 4: {ONLY_MODULES}{written}"]


def test_the_allowed_modules_import(client: httpx.Client, playbook: str) -> None:
    """`import math`, `import math as m`, `from math import floor, ceil`, and the other allowed modules."""
    program = (
        "import math\nimport math as m\nfrom math import floor, ceil\nimport re\nimport json\n"
        "from collections import OrderedDict, deque, namedtuple\nimport heapq\nimport time\n" + MAIN
    )
    saved(client, playbook, "imports", HEAD + program)


@pytest.mark.parametrize(
    ("program", "line"),
    [
        ("def main(input):\n    import math\n    return math.pi\n", 5),
        ("from math import *\n" + MAIN, 4),
        ("from . import helper\n" + MAIN, 4),
    ],
)
def test_imports_stand_at_the_top_and_name_their_module(
    client: httpx.Client, playbook: str, program: str, line: int
) -> None:
    """An import inside a function, `from m import *`, a relative import."""
    assert f"Line {line}: {IMPORTS_AT_TOP}" in refused(client, playbook, HEAD + program)


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_a_name_that_builds_code_or_reaches_out(client: httpx.Client, playbook: str, name: str) -> None:
    """`X is not available: a program sees only its input and builds no code at run time`."""
    assert refused(client, playbook, HEAD + f"def main(value):\n    return {name}(value)\n") == [
        f"Line 5: {name}{NOT_AVAILABLE}"
    ]


def test_a_refused_name_the_program_defines_is_its_own(client: httpx.Client, playbook: str) -> None:
    """Only a name the program does not define is refused."""
    saved(
        client,
        playbook,
        "own-print",
        HEAD + "def print(x):\n    return x\n\ndef main(input):\n    return print(input)\n",
    )


@pytest.mark.parametrize(
    ("expression", "written"),
    [
        ("__builtins__", "__builtins__"),
        ("__name__", "__name__"),
        ("__import__('os')", "__import__"),
        ("main.__globals__", "__globals__"),
        ("input.__class__", "__class__"),
    ],
)
def test_names_and_attributes_with_two_underscores(
    client: httpx.Client, playbook: str, expression: str, written: str
) -> None:
    """`Names and attributes that begin with two underscores are not available; this line uses X`."""
    assert f"Line 5: {DUNDER}{written}" in refused(
        client, playbook, HEAD + f"def main(input):\n    return {expression}\n"
    )


def test_a_method_may_be_named_with_two_underscores(client: httpx.Client, playbook: str) -> None:
    """A method may still be *named* `__init__` or `__eq__`; a class is written inside a function."""
    program = (
        "def main(input):\n    class Box:\n        def __init__(self, v):\n            self.v = v\n"
        "        def __eq__(self, other):\n            return self.v == other.v\n"
        "    return Box(input) == Box(input)\n"
    )
    saved(client, playbook, "dunder-methods", HEAD + program)
    response = client.post(f"{playbook}/definitions/computation/dunder-methods/run", json={"input": 3})
    assert response.json()["output"] is True


@pytest.mark.parametrize(
    "statement",
    [
        "class Helper:\n    pass",
        "for i in (1, 2):\n    pass",
        "while False:\n    pass",
        "if True:\n    X = 1",
        "len('x')",
        "X = 1\nX += 1",
        "A, B = 1, 2",
        "try:\n    pass\nexcept ValueError:\n    pass",
    ],
)
def test_only_imports_constants_and_functions_at_the_top(client: httpx.Client, playbook: str, statement: str) -> None:
    """No class, no loop, no `if`, no call, no augmented assignment, no tuple of targets at the top level."""
    line = 4 + statement.count("\n") if "+=" in statement else 4
    assert f"Line {line}: {TOP_LEVEL}" in refused(client, playbook, HEAD + statement + "\n" + MAIN)


@pytest.mark.parametrize("value", ["{}", "[]", "2 ** 10", "len('abc')", "'a' + 'b'", "(1, [2])", "{1, 2}"])
def test_a_top_level_name_holds_a_constant(client: httpx.Client, playbook: str, value: str) -> None:
    """`CACHE = {}` or `LIMIT = 2 ** 10`: a top-level name must hold a constant."""
    assert refused(client, playbook, HEAD + f"CACHE = {value}\n" + MAIN) == [f"Line 4: {CONSTANT}"]


def test_what_may_stand_at_the_top_level(client: httpx.Client, playbook: str) -> None:
    """A docstring, imports, constants (numbers, text, bytes, True, False, None, tuples, + - * / // % and
    unary -, `NAME: type = value`) and function definitions whose defaults are constants."""
    program = (
        '"""Docstring."""\nimport math\nRATE = 3\nHALF: float = 1 / 2\nMIXED = -7 * 3 + 10 // 3 - 4 % 3 / 2\n'
        "NAME = 'text'\nRAW = b'bytes'\nFLAGS = (True, False, None, (1, 'x'))\n"
        "def helper(x, scale=3, label='n', pair=(1, 2), neg=-1):\n    return x * scale\n"
        "def main(input):\n    return [helper(1), HALF, MIXED, NAME, FLAGS[0], RAW.decode()]\n"
    )
    saved(client, playbook, "top-level", HEAD + program)
    response = client.post(f"{playbook}/definitions/computation/top-level/run", json={"input": None})
    assert response.json()["output"] == [3, 0.5, -18.5, "text", True, "bytes"]


def test_a_default_of_a_top_level_function_is_a_constant(client: httpx.Client, playbook: str) -> None:
    """`def f(x, seen=[])`."""
    program = "def f(x, seen=[]):\n    return x\n" + MAIN
    assert refused(client, playbook, HEAD + program) == [f"Line 4: {DEFAULT}"]


def test_global_is_not_available(client: httpx.Client, playbook: str) -> None:
    """`global` anywhere."""
    program = "X = 1\ndef main(input):\n    global X\n    return X\n"
    assert refused(client, playbook, HEAD + program) == [f"Line 6: {GLOBAL}"]


def test_top_level_functions_take_no_decorators(client: httpx.Client, playbook: str) -> None:
    """A decorator on a top-level function."""
    program = "def deco(f):\n    return f\n@deco\ndef helper(x):\n    return x\n" + MAIN
    assert refused(client, playbook, HEAD + program) == [f"Line 6: {DECORATOR}"]


def test_async_and_await_are_not_available(client: httpx.Client, playbook: str) -> None:
    """`async def`, `await`, `async for`, `async with`."""
    program = (
        "async def helper(x):\n    await x\n    async for i in x:\n        pass\n"
        "    async with x as y:\n        pass\n" + MAIN
    )
    found = refused(client, playbook, HEAD + program)
    assert found[0] == f"Line 4: {ASYNC}"
    assert {f"Line {line}: {ASYNC}" for line in (5, 6, 8)} <= set(found)


def test_a_top_level_name_defined_twice(client: httpx.Client, playbook: str) -> None:
    """`X is defined more than once at the top level`."""
    program = "X = 1\nimport math as X\n" + MAIN + MAIN
    assert refused(client, playbook, HEAD + program) == [
        "Line 5: X is defined more than once at the top level",
        "Line 8: main is defined more than once at the top level",
    ]


def test_the_program_needs_an_entry_function(client: httpx.Client, playbook: str) -> None:
    """No top-level `def main`, reported at the program's first line."""
    assert refused(client, playbook, HEAD + "\ndef helper(x):\n    return x\n") == [f"Line 4: {NO_MAIN}"]
    nested = "def outer(x):\n    def main(input):\n        return input\n    return main\n"
    assert refused(client, playbook, HEAD + nested) == [f"Line 4: {NO_MAIN}"]


@pytest.mark.parametrize("parameters", ["", "a, b", "input=1", "*args", "**kwargs", "input, *rest"])
def test_main_takes_exactly_one_parameter(client: httpx.Client, playbook: str, parameters: str) -> None:
    """`main` with no parameter or more than one, a default, `*args` or `**kwargs`, at the line of its `def`."""
    program = f"X = 1\n\ndef main({parameters}):\n    return 1\n"
    assert refused(client, playbook, HEAD + program) == [f"Line 6: {MAIN_PARAMETERS}"]


def test_main_with_any_parameter_name(client: httpx.Client, playbook: str) -> None:
    """Exactly one parameter, any name."""
    saved(client, playbook, "any-name", HEAD + "def main(payload):\n    return payload\n")


def test_main_returns_and_does_not_yield(client: httpx.Client, playbook: str) -> None:
    """`main` with `yield` in its own body is refused; a helper generator is fine."""
    assert refused(client, playbook, HEAD + "X = 1\ndef main(input):\n    yield input\n") == [f"Line 5: {MAIN_YIELDS}"]
    helper = "def main(input):\n    def count():\n        yield 1\n        yield 2\n    return list(count())\n"
    saved(client, playbook, "helper-generator", HEAD + helper)


def test_async_main_is_refused(client: httpx.Client, playbook: str) -> None:
    """The entry function is a plain function, not `async`."""
    found = refused(client, playbook, HEAD + "async def main(input):\n    return input\n")
    assert f"Line 4: {ASYNC}" in found


# Order and count


def test_problems_are_listed_in_line_order_front_matter_and_program_together(
    client: httpx.Client, playbook: str
) -> None:
    """Every problem found, each at `/source` with `Line N: `, in line order."""
    source = (
        "---\nlanguage: ruby\nmodel: x\n---\nimport os\nclass A:\n    pass\ndef main(input):\n    return eval(input)\n"
    )
    assert refused(client, playbook, source) == [
        "Line 2: Programs are written in Python; set language: python",
        "Line 3: model is not a field of a computation function",
        f"Line 5: {ONLY_MODULES}os",
        f"Line 6: {TOP_LEVEL}",
        f"Line 9: eval{NOT_AVAILABLE}",
    ]


def test_at_most_20_problems_then_and_n_more(client: httpx.Client, playbook: str) -> None:
    """At most 20, then one entry `And N more problems`."""
    program = "".join(f"import os{n}\n" for n in range(25)) + MAIN
    found = refused(client, playbook, HEAD + program)
    assert found == [f"Line {4 + n}: {ONLY_MODULES}os{n}" for n in range(20)] + ["And 5 more problems"]


def test_the_sandbox_pass_runs_only_when_the_first_two_found_nothing(client: httpx.Client, playbook: str) -> None:
    """Pass 3 runs only when passes 1 and 2 found nothing, and reports the first line it cannot read.

    `f"{x!a}"` is read by CPython and not by the sandbox's MicroPython."""
    unreadable = 'def main(input):\n    a = f"{input!a}"\n    return f"{a!a}"\n'
    assert refused(client, playbook, HEAD + unreadable) == [f"Line 5: {CANNOT_READ}invalid syntax"]
    assert refused(client, playbook, HEAD + "import os\n" + unreadable) == [f"Line 4: {ONLY_MODULES}os"]
    assert refused(client, playbook, document(unreadable, "model: x\n")) == [
        "Line 3: model is not a field of a computation function"
    ]


def test_lines_count_from_the_opening_dashes(client: httpx.Client, playbook: str) -> None:
    """Line 1 of the document is the opening `---`; every line number counts from there."""
    front = "description: Lines\ninput:\n  schema:\n    type: object\n"
    source = document("\n\n" + "def main(input):\n    return open(input)\n", front)
    assert refused(client, playbook, source) == [f"Line 11: open{NOT_AVAILABLE}"]


def test_problems_on_one_line_are_listed_in_column_order(client: httpx.Client, playbook: str) -> None:
    """Problems are listed in line order, then column order."""
    program = "def main(value):\n    return [exec(value), eval(value), vars(value)]\n"
    assert refused(client, playbook, HEAD + program) == [
        f"Line 5: exec{NOT_AVAILABLE}",
        f"Line 5: eval{NOT_AVAILABLE}",
        f"Line 5: vars{NOT_AVAILABLE}",
    ]


@pytest.mark.parametrize(
    "program",
    [
        "def main[T](input):\n    return input\n",
        "type Rows = list\ndef main(input):\n    return input\n",
        'def main(input):\n    return f"{input["a"]}"\n',
    ],
)
def test_what_is_accepted_never_depends_on_the_servers_python(
    client: httpx.Client, playbook: str, program: str
) -> None:
    """The program is read as Python 3.11 (`feature_version=(3, 11)`): syntax of later versions does not parse."""
    found = refused(client, playbook, HEAD + program)
    assert len(found) == 1
    assert found[0].split(": ", 1)[1].startswith(NOT_PARSE)


def test_an_output_shape_names_a_known_shape(client: httpx.Client, playbook: str) -> None:
    """`output.shape` names an output shape such as `series`; its schema becomes the `output_schema`, with
    `details.shape`; a name that is no shape is refused at its line."""
    body = saved(client, playbook, "chart", document(MAIN, "output:\n  shape: series\n"))
    assert body["details"] == {"shape": "series"}
    assert body["output_schema"]["required"] == ["period", "lines"]
    found = refused(client, playbook, document(MAIN, "output:\n  shape: pie\n"))
    assert len(found) == 1 and found[0].startswith("Line 4: ")
