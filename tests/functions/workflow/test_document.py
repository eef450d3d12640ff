"""Every save-time refusal of a workflow document (spec 2.1, 4.2, 4.4, 10): its pointer, line, column, words."""

from __future__ import annotations

import pytest

from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.issues import ordered, refusal
from auto_runtime.problems import InputIssue

MAX = 30 * 86_400_000
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: refusals, version: '1.0.0' }\n"


def details(source: str) -> list[str]:
    checked = check_document(source, MAX)
    assert isinstance(checked, list), "the document was accepted"
    return [issue.detail() for issue in ordered(checked)]


def one_task(body: str) -> str:
    """A document whose only task is `- t:` with `body` (indented under it) at line 3."""
    indented = "\n".join("      " + line for line in body.strip("\n").split("\n"))
    return HEAD + "do:\n  - t:\n" + indented + "\n"


def test_the_spec_example_shape_of_a_detail() -> None:
    source = HEAD + "do:\n  - first: { set: {} }\n  - loop:\n      for: { each: x }\n      do: [ { s: { set: {} } } ]\n"
    assert "Line 5, column 12: at /do/1/loop/for: It needs in" in details(source)


CASES: list[tuple[str, str, list[str]]] = [
    (
        "evaluate language",
        HEAD + "evaluate: { language: jq }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 23: at /evaluate/language: Workflow expressions are written in Python; leave evaluate "
            "out or write evaluate: { language: python }"
        ],
    ),
    (
        "evaluate mode",
        HEAD + "evaluate: { language: python, mode: loose }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 37: at /evaluate/mode: Workflow expressions are written in Python; leave evaluate "
            "out or write evaluate: { language: python }"
        ],
    ),
    (
        "run task",
        one_task("run: { shell: { command: ls } }"),
        [
            "Line 4, column 12: at /do/0/t/run: run tasks are not available: the world is reached only through the "
            "playbook's functions (call: run_definition)"
        ],
    ),
    (
        "call http",
        one_task("call: http\nwith: { method: get }"),
        [
            "Line 4, column 13: at /do/0/t/call: Only call: run_definition is available: the world is reached only "
            "through the playbook's functions"
        ],
    ),
    (
        "with keys and strings",
        one_task("call: run_definition\nwith: { type: 3, name: x, version: 2 }"),
        [
            "Line 5, column 21: at /do/0/t/with/type: run_definition needs a string type and a string name",
            "Line 5, column 42: at /do/0/t/with/version: run_definition takes with: { type, name, input }",
        ],
    ),
    (
        "use refused",
        HEAD + "use: { functions: {}, secrets: [a] }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 19: at /use/functions: use.functions is not available: a workflow reaches the world "
            "only through the playbook's functions",
            "Line 2, column 32: at /use/secrets: use.secrets is not available: a workflow reaches the world only "
            "through the playbook's functions",
        ],
    ),
    (
        "schema on a task",
        one_task("set: {}\ninput: { schema: { document: { type: object } } }"),
        [
            "Line 5, column 24: at /do/0/t/input/schema: Schemas stand only on the document's input and output, "
            "not on a task"
        ],
    ),
    (
        "schema not inline",
        HEAD + "input: { schema: { resource: { endpoint: https://x.example/s.json } } }\ndo: [ { a: { set: {} } } ]\n",
        ["Line 2, column 18: at /input/schema: A schema is written inline, as schema: { document: <JSON Schema> }"],
    ),
    (
        "listen refusals",
        one_task("listen: { to: { one: { with: { type: a, subject: '${ input }' } } }, read: all, until: x }"),
        [
            "Line 4, column 56: at /do/0/t/listen/to/one/with/subject: input is not a variable here; "
            "this place has data",
            "Line 4, column 82: at /do/0/t/listen/read: listen.read is data, envelope or raw",
            "Line 4, column 94: at /do/0/t/listen/until: listen.until is not available: a listen takes its events "
            "with to and reads them with read",
        ],
    ),
    (
        "emit refusals",
        one_task("emit: { event: { with: { type: run_started, id: x } } }"),
        [
            "Line 4, column 30: at /do/0/t/emit/event/with: An emitted event needs a type and a source",
            "Line 4, column 38: at /do/0/t/emit/event/with/type: The type run_started is reserved for what the "
            "runtime records itself",
            "Line 4, column 55: at /do/0/t/emit/event/with/id: An emitted event takes no id: the runtime derives "
            "it, so a resumed run emits it once",
        ],
    ),
    (
        "emit reserved source",
        one_task("emit: { event: { with: { type: a.b, source: /runs/x } } }"),
        [
            "Line 4, column 51: at /do/0/t/emit/event/with/source: Sources beginning /runs/, /definitions/ or "
            "/callers/ are reserved for what the runtime records itself"
        ],
    ),
    (
        "then and names",
        HEAD + "do:\n  - a: { set: {}, then: nowhere }\n  - a: { set: {} }\n",
        [
            "Line 3, column 25: at /do/0/a/then: then: nowhere names no task in the same list",
            "Line 4, column 8: at /do/1/a: The task name a is used twice in this list",
        ],
    ),
    (
        "fork branch then",
        one_task("fork: { branches: [ { b: { set: {}, then: t } } ] }"),
        ["Line 4, column 49: at /do/0/t/fork/branches/0/b/then: A fork branch's then is continue, exit or end"],
    ),
    (
        "names missing from use",
        HEAD
        + "do:\n  - r: { raise: { error: gone } }\n  - w: { wait: PT1S, timeout: slow }\n"
        + "  - g: { try: [ { a: { set: {} } } ], catch: { retry: often } }\n",
        [
            "Line 3, column 26: at /do/0/r/raise/error: use.errors has no error named gone",
            "Line 4, column 31: at /do/1/w/timeout: use.timeouts has no timeout named slow",
            "Line 5, column 55: at /do/2/g/catch/retry: use.retries has no retry policy named often",
        ],
    ),
    (
        "durations",
        HEAD + "do:\n  - a: { wait: P1M }\n  - b: { wait: soon }\n  - c: { wait: P31D }\n",
        [
            "Line 3, column 16: at /do/0/a/wait: A duration cannot count years or months, whose length varies; "
            "write days or weeks",
            "Line 4, column 16: at /do/1/b/wait: A duration is ISO 8601 in weeks, days, hours, minutes and seconds, "
            "such as PT30S or P1DT2H, or a mapping of days, hours, minutes, seconds and milliseconds",
            "Line 5, column 16: at /do/2/c/wait: The duration is longer than WORKFLOW_MAX_DURATION (P30D)",
        ],
    ),
    (
        "loop and catch names",
        HEAD
        + "do:\n  - l: { for: { in: '${ [] }', each: len, at: _i }, do: [ { a: { set: {} } } ] }\n"
        + "  - g: { try: [ { a: { set: {} } } ], catch: { as: context } }\n",
        [
            "Line 3, column 38: at /do/0/l/for/each: len cannot name a variable",
            "Line 3, column 47: at /do/0/l/for/at: _i cannot name a variable",
            "Line 4, column 52: at /do/1/g/catch/as: context cannot name a variable",
        ],
    ),
    (
        "yaml anchors",
        HEAD + "do:\n  - a: &x { set: {} }\n  - b: *x\n",
        [
            "Line 3, column 8: at /: YAML anchors and aliases are not available; write the value out where it is used",
            "Line 4, column 8: at /: YAML anchors and aliases are not available; write the value out where it is used",
        ],
    ),
    (
        "yaml tags",
        HEAD + "do:\n  - a: { set: !custom 1 }\n",
        ["Line 3, column 15: at /: YAML tags are not available; write plain values"],
    ),
    (
        "duplicate keys",
        HEAD + "do:\n  - a: { set: {}, set: 1 }\n",
        ["Line 3, column 19: at /do/0/a/set: The key set is written twice in the same mapping"],
    ),
    (
        "unknown keys and header",
        "document: { dsl: '2.0', namespace: Tests, name: x, version: '1' }\nextra: 1\n"
        "do: [ { a: { set: {}, bogus: 1 } } ]\n",
        [
            "Line 1, column 18: at /document/dsl: document.dsl is one of 1.0.0, 1.0.1, 1.0.2 and 1.0.3",
            "Line 1, column 36: at /document/namespace: It is lowercase letters and digits with single hyphens "
            "between them, such as month-close",
            "Line 1, column 61: at /document/version: It is a semantic version such as 1.0.0",
            "Line 2, column 8: at /extra: extra is not a field of a workflow document",
            "Line 3, column 30: at /do/0/a/bogus: bogus is not a field of a set task",
        ],
    ),
    (
        "fork branches",
        one_task("fork:\n  branches:\n" + "".join(f"    - b{i}: {{ set: {{}} }}\n" for i in range(33))),
        ["Line 6, column 11: at /do/0/t/fork/branches: A fork has at most 32 branches"],
    ),
]


@pytest.mark.parametrize(("source", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_refusals(source: str, expected: list[str]) -> None:
    assert details(source) == expected


EXPRESSIONS: list[tuple[str, str]] = [
    ("data[", "The expression does not parse: '[' was never closed"),
    ("$data['a']", "Variables are plain Python names: write data, not $data"),
    ("{**data, 'k': 1}", "The sandbox's Python cannot read this expression: invalid syntax"),
    ("[*data, 1]", "The sandbox's Python cannot read this expression: *x must be assignment target"),
    (
        "data.__class__",
        "Names and attributes that begin with two underscores are not available; this expression uses __class__",
    ),
    (
        "__import__('os')",
        "Names and attributes that begin with two underscores are not available; this expression uses __import__",
    ),
    ("eval('1')", "eval is not available: an expression sees only its variables and builds no code at run time"),
    (
        "getattr(data, 'x')",
        "getattr is not available: an expression sees only its variables and builds no code at run time",
    ),
    ("foo", "foo is not a variable here; this place has data, context, workflow, runtime, task, input"),
    (
        "data.append(1)",
        'append changes a value in place, which an expression may not do; write sorted(a), a + [v] or a | {"k": v}',
    ),
    (
        "data.difference_update(x)",
        "difference_update changes a value in place, which an expression may not do; "
        'write sorted(a), a + [v] or a | {"k": v}',
    ),
    ("[x async for x in data]", "async for is not available in an expression"),
    ("(input := 1)", ":= cannot rebind input"),
]


@pytest.mark.parametrize(("expression", "words"), EXPRESSIONS)
def test_expression_rules(expression: str, words: str) -> None:
    source = HEAD + "do:\n  - a:\n      set:\n        v: >-\n          ${ " + expression + " }\n"
    assert details(source)[0] == f"Line 5, column 12: at /do/0/a/set/v: {words}"


def test_allowed_expressions_pass() -> None:
    source = HEAD + (
        "do:\n  - a:\n      set:\n"
        "        v: '${ sorted(k for k in data) + [len(data)] }'\n"
        "        w: '${ (lambda x: x * 2)(3) if isinstance(data, dict) else None }'\n"
        "        x: '${ [y for x in [1] if (y := x)] }'\n"
        "        y: '${ f\"{data.get(''a'')}\" }'\n"
        "        z: literal ${ not an expression }\n"
    )
    assert isinstance(check_document(source, MAX), WorkflowDocument)


def test_a_problem_past_the_first_line_names_its_line() -> None:
    source = HEAD + "do:\n  - a:\n      if: |-\n        data\n        and foo\n      set: {}\n"
    assert details(source) == [
        "Line 4, column 11: at /do/0/a/if: foo is not a variable here; this place has data, context, workflow, "
        "runtime, task (line 2 of the expression)"
    ]


def test_places_bind_their_names() -> None:
    source = HEAD + (
        "input: { from: '${ context }' }\n"
        "output: { as: '${ task }' }\n"
        "do:\n"
        "  - l:\n"
        "      for: { in: '${ item }', each: row }\n"
        "      while: '${ row and index is None }'\n"
        "      do:\n"
        "        - a: { set: '${ row + index }', output: { as: '${ output }' }, export: { as: '${ output }' } }\n"
        "  - g:\n"
        "      try: [ { b: { set: '${ error }' } } ]\n"
        "      catch: { as: failure, when: '${ failure }', do: [ { c: { set: '${ failure }' } } ] }\n"
    )
    assert details(source) == [
        "Line 2, column 16: at /input/from: context is not a variable here; this place has data, workflow, runtime",
        "Line 3, column 15: at /output/as: task is not a variable here; this place has data, workflow, runtime, "
        "context",
        "Line 6, column 18: at /do/0/l/for/in: item is not a variable here; this place has data, context, workflow, "
        "runtime, task, input",
        "Line 9, column 55: at /do/0/l/do/0/a/output/as: output is not a variable here; this place has data, "
        "context, workflow, runtime, task, row, index, input",
        "Line 11, column 26: at /do/1/g/try/0/b/set: error is not a variable here; this place has data, context, "
        "workflow, runtime, task, input",
    ]


def test_refusal_lists_at_most_twenty_then_a_count() -> None:
    source = HEAD + "do:\n" + "".join(f"  - a{i}: {{ wait: soon }}\n" for i in range(23))
    rejection = refusal(check_document(source, MAX))  # type: ignore[arg-type]
    assert rejection.reason == "invalid_input"
    assert len(rejection.errors) == 21
    assert rejection.errors[-1] == InputIssue("And 3 more problems", "/source")
    assert all(issue.pointer == "/source" for issue in rejection.errors)


def test_an_emitted_event_claims_no_reserved_attribute() -> None:
    source = one_task("emit: { event: { with: { type: a.b, source: 'https://x.example', depth: 1 } } }")
    assert details(source) == [
        "Line 4, column 79: at /do/0/t/emit/event/with/depth: The attribute depth is reserved for what the runtime "
        "records itself"
    ]


def _nested_do(depth: int) -> str:
    task = "{ leaf: { set: {} } }"
    for level in range(depth - 1):
        task = f"{{ d{level}: {{ do: [ {task} ] }} }}"
    return HEAD + f"do: [ {task} ]\n"


def test_task_lists_nest_at_most_64_deep() -> None:
    assert isinstance(check_document(_nested_do(64), MAX), WorkflowDocument)
    found = details(_nested_do(65))
    assert len(found) == 1 and found[0].endswith(": Task lists are nested at most 64 deep")


def test_values_nest_at_most_512_deep() -> None:
    # The document, do, the task entry, the task and set hold the value: five levels before it.
    deep = HEAD + "do: [ { a: { set: { v: " + "[" * 507 + "]" * 507 + " } } } ]\n"
    assert isinstance(check_document(deep, MAX), WorkflowDocument)
    deeper = HEAD + "do: [ { a: { set: { v: " + "[" * 508 + "]" * 508 + " } } } ]\n"
    assert details(deeper) == ["Line 2, column 531: at /: Values are nested at most 512 deep"]


def test_numbers_are_finite() -> None:
    assert details(HEAD + "do: [ { a: { set: { v: .inf } } } ]\n") == [
        "Line 2, column 24: at /: Numbers are finite: .inf and .nan have no JSON form"
    ]


MORE_CASES: list[tuple[str, str, list[str]]] = [
    (
        "schema invalid",
        HEAD + "input: { schema: { document: { type: 12 } } }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 38: at /input/schema/document/type: It is not a JSON Schema: 12 is not valid under "
            "any of the given schemas",
        ],
    ),
    (
        "unknown shape",
        HEAD + "output: { shape: chart }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 18: at /output/shape: output.shape names no output shape the runtime knows; the "
            "known shapes are series",
        ],
    ),
    (
        "schema and shape",
        HEAD + "output: { shape: series, schema: { document: {} } }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 9: at /output: output takes schema or shape, not both",
        ],
    ),
    (
        "no do, no document",
        "input: {}\n",
        [
            "Line 1, column 1: at /: It needs document",
            "Line 1, column 1: at /: It needs do",
        ],
    ),
    (
        "header fields missing",
        "document: { dsl: '1.0.0' }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 1, column 11: at /document: It needs namespace",
            "Line 1, column 11: at /document: It needs name",
            "Line 1, column 11: at /document: It needs version",
        ],
    ),
    (
        "call without with",
        one_task("call: run_definition"),
        [
            "Line 4, column 7: at /do/0/t: It needs with",
        ],
    ),
    (
        "no kind",
        one_task("then: end"),
        [
            "Line 4, column 7: at /do/0/t: A task needs one kind: call, do, emit, for, fork, listen, raise, "
            "set, switch, try, wait",
        ],
    ),
    (
        "two kinds",
        one_task("set: {}\nwait: PT1S"),
        [
            "Line 4, column 7: at /do/0/t: A task has one kind; this one has set and wait",
        ],
    ),
    (
        "entry not single",
        HEAD + "do:\n  - a: { set: {} }\n    b: { set: {} }\n  - plain\n",
        [
            "Line 3, column 5: at /do/0: A task is a mapping of one name to its definition: - <name>: <definition>",
            "Line 5, column 5: at /do/1: A task is a mapping of one name to its definition: - <name>: <definition>",
        ],
    ),
    (
        "backoff and jitter",
        one_task("try: [ { a: { set: {} } } ]\ncatch: { retry: { backoff: random, jitter: { from: PT1S } } }"),
        [
            "Line 5, column 34: at /do/0/t/catch/retry/backoff: backoff is one of constant, linear and exponential",
            "Line 5, column 50: at /do/0/t/catch/retry/jitter: It needs to",
        ],
    ),
    (
        "listen forms",
        one_task("listen: { to: { one: {}, any: [] } }"),
        [
            "Line 4, column 21: at /do/0/t/listen/to: listen.to takes one of one, any or all",
        ],
    ),
    (
        "timeout needs after",
        one_task("wait: PT1S\ntimeout: { before: PT1S }"),
        [
            "Line 5, column 16: at /do/0/t/timeout: It needs after",
            "Line 5, column 26: at /do/0/t/timeout/before: before is not a field of a timeout",
        ],
    ),
    (
        "do not a list",
        one_task("do: { a: 1 }"),
        [
            "Line 4, column 11: at /do/0/t/do: A task list is a sequence of tasks: - <name>: <definition>",
        ],
    ),
    (
        "switch case without then",
        one_task("switch: [ { a: { when: 'True' } } ]"),
        [
            "Line 4, column 22: at /do/0/t/switch/0/a: It needs then",
        ],
    ),
    (
        "raise needs status",
        one_task("raise: { error: { type: validation } }"),
        [
            "Line 4, column 23: at /do/0/t/raise/error: It needs status",
        ],
    ),
    (
        "use timeouts",
        HEAD + "use: { timeouts: { slow: { after: P1Y } }, extensions: [] }\ndo: [ { a: { set: {} } } ]\n",
        [
            "Line 2, column 35: at /use/timeouts/slow/after: A duration cannot count years or months, whose "
            "length varies; write days or weeks",
            "Line 2, column 56: at /use/extensions: use.extensions is not available: a workflow reaches the "
            "world only through the playbook's functions",
        ],
    ),
]


@pytest.mark.parametrize(("source", "expected"), [(c[1], c[2]) for c in MORE_CASES], ids=[c[0] for c in MORE_CASES])
def test_more_refusals(source: str, expected: list[str]) -> None:
    assert details(source) == expected
