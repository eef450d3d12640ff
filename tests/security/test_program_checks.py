"""Hostile programs and expressions, through the real server: each gets the seeds' problem, never a 500.

Save-time: trees too deep for a parser (20,000 `+` terms, attribute chains, nested lambdas, nested lists),
numbers MicroPython would compute while compiling (`7 ** 10000000`), and the two-underscore refusal's
words (settled point 20), in computation programs and in workflow expressions. Run time: a regex that
overflows the sandbox's stack ends as work used up, the program's own recursion as the `RuntimeError` the
page gives, and `dir()` shows only the program's names. The slowest attacks run inside `kept_live`.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conformance.helpers import fresh_id, new_playbook, problem
from tests.e2e.server_process import ServerProcess
from tests.security.liveness import kept_live

HEAD = "---\nlanguage: python\n---\n"
NESTS_TOO_DEEP = "The program does not parse: this line nests more than 500 levels deep; write it in smaller steps"
EXPRESSION_NESTS_TOO_DEEP = (
    "The expression does not parse: it nests more than 500 levels deep; write it in smaller steps"
)
NUMBER_TOO_LARGE = "compiling it computes a number too large for the check's bounds; write a smaller number"
USED_UP = "The program used up its 10,000,000,000 units of work and was stopped"
DUNDER = "Names and attributes that begin with two underscores are not available; "

DEEP_EXPRESSIONS = {
    "20,000 + terms": "+".join(["1"] * 20_000),
    "an attribute chain of 20,000": "input" + ".a" * 20_000,
    "5,000 nested lambdas": "lambda: " * 5_000 + "1",
    "30,000 unary minuses": "-" * 30_000 + "1",
    "20,000 calls in a chain": "input" + "(1)" * 20_000,
    "600 + terms, below CPython's bound and above ours": "+".join(["input"] * 600),
}


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    return new_playbook(client)


def save_computation(client: httpx.Client, playbook: str, source: str, name: str | None = None) -> httpx.Response:
    return client.post(f"{playbook}/definitions/computation", json={"name": name or fresh_id("fn"), "source": source})


def refused_program(client: httpx.Client, playbook: str, source: str) -> list[dict[str, Any]]:
    """The `invalid_input` errors of saving `source`: each at `/source`."""
    body = problem(save_computation(client, playbook, source), 422, "invalid_input")
    errors: list[dict[str, Any]] = body["errors"]
    assert [error["pointer"] for error in errors] == ["/source"] * len(errors), body
    return errors


def workflow(expression: str) -> str:
    """A workflow whose one task sets its data to `expression`; the expression's field stands on line 4."""
    return (
        "document: { dsl: '1.0.3', namespace: tests, name: hostile, version: '1.0.0' }\n"
        "do:\n"
        "  - pick:\n"
        f"      set: '${{ {expression} }}'\n"
    )


def refused_workflow(client: httpx.Client, playbook: str, expression: str) -> str:
    """The one `invalid_input` entry of saving a workflow with `expression`: its detail."""
    response = client.post(
        f"{playbook}/definitions/workflow", json={"name": fresh_id("flow"), "source": workflow(expression)}
    )
    body = problem(response, 422, "invalid_input")
    errors: list[dict[str, Any]] = body["errors"]
    assert len(errors) == 1 and errors[0]["pointer"] == "/source", body
    detail: str = errors[0]["detail"]
    return detail


def run_program(client: httpx.Client, playbook: str, program: str, value: object = None) -> httpx.Response:
    name = fresh_id("fn")
    saved = save_computation(client, playbook, HEAD + program, name)
    assert saved.status_code == 201, saved.text
    return client.post(f"{playbook}/definitions/computation/{name}/run", json={"input": value})


def unworkable(response: httpx.Response) -> str:
    detail: str = problem(response, 409, "conflict", "unworkable")["detail"]
    return detail


# Trees too deep for a parser


@pytest.mark.parametrize("expression", DEEP_EXPRESSIONS.values(), ids=DEEP_EXPRESSIONS.keys())
def test_a_program_nesting_too_deep_does_not_parse_at_its_line(
    client: httpx.Client, playbook: str, expression: str
) -> None:
    source = HEAD + f"def main(input):\n    total = 1\n    return {expression}\n"
    assert refused_program(client, playbook, source) == [{"pointer": "/source", "detail": f"Line 6: {NESTS_TOO_DEEP}"}]


def test_a_deep_top_level_constant_and_deep_lists_are_refused_at_their_lines(
    client: httpx.Client, playbook: str
) -> None:
    """A 20,000-term top-level constant; lists nested past CPython's 200 levels, in the parser's words."""
    constant = "LIMIT = " + "+".join(["1"] * 20_000) + "\ndef main(input):\n    return LIMIT\n"
    assert refused_program(client, playbook, HEAD + constant) == [
        {"pointer": "/source", "detail": f"Line 4: {NESTS_TOO_DEEP}"}
    ]
    lists = "def main(input):\n    return " + "[" * 250 + "1" + "]" * 250 + "\n"
    assert refused_program(client, playbook, HEAD + lists) == [
        {"pointer": "/source", "detail": "Line 5: The program does not parse: too many nested parentheses"}
    ]


def test_a_tree_within_the_bound_saves_and_runs(client: httpx.Client, playbook: str) -> None:
    """400 `+` terms nest 400 levels, within the 500; the rules walk them without recursing."""
    response = run_program(client, playbook, "def main(input):\n    return " + "+".join(["input"] * 400) + "\n", 2)
    assert response.status_code == 200, response.text
    assert response.json()["output"] == 800


@pytest.mark.parametrize("expression", DEEP_EXPRESSIONS.values(), ids=DEEP_EXPRESSIONS.keys())
def test_a_workflow_expression_nesting_too_deep_does_not_parse_at_its_field(
    client: httpx.Client, playbook: str, expression: str
) -> None:
    expression = expression.replace("input", "data")
    assert refused_workflow(client, playbook, expression) == (
        f"Line 4, column 12: at /do/0/pick/set: {EXPRESSION_NESTS_TOO_DEEP}"
    )


def test_deep_attacks_leave_the_server_answering(server: ServerProcess, client: httpx.Client, playbook: str) -> None:
    """The checks run on checker threads of their own: while they refuse, `/health` and another org's run
    keep answering."""
    with kept_live(server):
        for expression in DEEP_EXPRESSIONS.values():
            source = HEAD + f"def main(input):\n    return {expression}\n"
            assert refused_program(client, playbook, source)[0]["detail"] == f"Line 5: {NESTS_TOO_DEEP}"


# Numbers MicroPython computes while compiling


def test_a_number_too_large_to_fold_is_refused_at_its_line(
    server: ServerProcess, client: httpx.Client, playbook: str
) -> None:
    source = HEAD + "def main(input):\n    small = 7 ** 100\n    return 7 ** 10000000 + small\n"
    with kept_live(server):
        errors = refused_program(client, playbook, source)
    assert errors == [
        {"pointer": "/source", "detail": f"Line 6: The sandbox's Python cannot read this line: {NUMBER_TOO_LARGE}"}
    ]


def test_a_literal_too_large_to_read_is_refused_at_its_line(client: httpx.Client, playbook: str) -> None:
    """A hexadecimal literal (CPython reads it; decimal ones past 4,300 digits it refuses itself)."""
    source = HEAD + "HUGE = 0x" + "f" * 60_000 + "\ndef main(input):\n    return 1\n"
    assert refused_program(client, playbook, source) == [
        {"pointer": "/source", "detail": f"Line 4: The sandbox's Python cannot read this line: {NUMBER_TOO_LARGE}"}
    ]


def test_a_compile_past_its_bounds_without_one_large_number_is_refused_without_a_line(
    client: httpx.Client, playbook: str
) -> None:
    """Hundreds of numbers each below the size blamed on its own: the compile pass runs out of its work all
    the same, and the refusal says so at `/source` without a line."""
    lines = "".join(f"    a{index} = 7 ** 5400\n" for index in range(600))
    source = HEAD + "def main(input):\n" + lines + "    return 1\n"
    assert refused_program(client, playbook, source) == [
        {
            "pointer": "/source",
            "detail": "The sandbox's Python could not compile the program within the check's bounds; "
            "make the program smaller or simpler",
        }
    ]


def test_a_workflow_expression_with_a_number_too_large_to_fold_is_refused_at_its_field(
    client: httpx.Client, playbook: str
) -> None:
    assert refused_workflow(client, playbook, "7 ** 10000000") == (
        f"Line 4, column 12: at /do/0/pick/set: The sandbox's Python cannot read this expression: {NUMBER_TOO_LARGE}"
    )


# Two underscores (settled point 20)


def test_the_two_underscore_refusal_names_the_attribute_itself(client: httpx.Client, playbook: str) -> None:
    source = HEAD + "def main(input):\n    f = main\n    return f.__globals__\n"
    assert refused_program(client, playbook, source) == [
        {"pointer": "/source", "detail": f"Line 6: {DUNDER}this line uses __globals__"}
    ]
    assert refused_workflow(client, playbook, "data . __class__") == (
        f"Line 4, column 12: at /do/0/pick/set: {DUNDER}this expression uses __class__"
    )


# Run time


def test_a_regex_that_overflows_the_stack_uses_up_its_work(
    server: ServerProcess, client: httpx.Client, playbook: str
) -> None:
    """re's steps are work: `(a*)*b` recurses without bound, and so does a pattern of 100,000 nested groups."""
    program = "import re\ndef main(input):\n    return str(re.match('(a*)*b', input))\n"
    nested = "import re\ndef main(input):\n    return str(re.compile('(' * input + 'a' + ')' * input))\n"
    with kept_live(server):
        assert unworkable(run_program(client, playbook, program, "a" * 26)) == USED_UP
        assert unworkable(run_program(client, playbook, nested, 100_000)) == USED_UP


def test_a_regex_nested_too_deep_for_re_raises_at_its_line(client: httpx.Client, playbook: str) -> None:
    """A literal pattern of 1,000 nested groups: re refuses it itself, an exception at its line."""
    pattern = "(" * 1000 + "a" + ")" * 1000
    program = f"import re\ndef main(input):\n    return str(re.match('{pattern}', input))\n"
    assert unworkable(run_program(client, playbook, program, "a")) == (
        "Line 6 of the program raised ValueError: regex too complex"
    )


def test_the_programs_own_recursion_raises_runtime_error(client: httpx.Client, playbook: str) -> None:
    """The sandbox's own limit: a `RuntimeError` at the recursing line, which the program may catch."""
    program = "def down(n):\n    return down(n + 1)\n\ndef main(input):\n    return down(0)\n"
    assert unworkable(run_program(client, playbook, program)) == (
        "Line 5 of the program raised RuntimeError: maximum recursion depth exceeded"
    )
    caught = (
        "def down(n):\n    return down(n + 1)\n\ndef main(input):\n"
        "    try:\n        return down(0)\n    except RuntimeError as error:\n        return str(error)\n"
    )
    response = run_program(client, playbook, caught)
    assert response.status_code == 200, response.text
    assert response.json()["output"] == "maximum recursion depth exceeded"


def test_dir_shows_only_the_programs_names(client: httpx.Client, playbook: str) -> None:
    program = (
        "import math\nLIMIT = 3\n\ndef helper(x):\n    return sorted(dir())\n\n"
        "def main(input):\n    return {'main': sorted(dir()), 'helper': helper(1), 'of': 'x' in dir(input)}\n"
    )
    response = run_program(client, playbook, program, {"x": 1})
    assert response.status_code == 200, response.text
    names = ["LIMIT", "helper", "main", "math"]
    assert response.json()["output"] == {"helper": names, "main": names, "of": False}
