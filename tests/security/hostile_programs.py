"""A corpus of hostile computation programs, each with the ending `computation-format.md` gives it.

Every program is the body of a document with the three-line front matter `HEAD`, so its first line is line 4
of the document, the line numbers the spec's words count. An ending is either a refusal at save (the
"Checked when it is saved" table: `invalid_input`, one error at `/source`, `Line N: ` and the table's words)
or a run's ending (the "How a run ends" table). `check_saved` and `check_ran` compare a response with it:
status, `reason`, `kind`, and the detail's words.

"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import httpx

HEAD = "---\nlanguage: python\n---\n"
FIRST_LINE = 4

USED_UP = "The program used up its 10,000,000,000 units of work and was stopped"
HEAP_FULL = "ran out of memory: a run's heap holds 240 MiB, and nothing is freed during a run"
TOO_LARGE = "The output is larger than the 1,048,320 bytes of JSON a run may return"
NOT_JSON = "The output cannot be written as JSON: "
PAST_TIME = "The run did not finish within the 10 seconds a run may take"
RECURSION = "raised RuntimeError: maximum recursion depth exceeded"
NOT_AVAILABLE = " is not available: a program sees only its input and builds no code at run time"
DUNDER = "Names and attributes that begin with two underscores are not available; this line uses "
ONLY_ALLOWED = "Only math, re, json, collections, heapq and time can be imported; this line imports "
CUT_BYTES = 1024
MAX_DEPTH = 512


@dataclass(frozen=True)
class Refused:
    """Refused at save: `invalid_input` (422), first error at `/source`, `Line N: ` and one of `words`."""

    line: int
    words: tuple[str, ...]


@dataclass(frozen=True)
class Unworkable:
    """`conflict` (409), kind `unworkable`, with exactly `detail`; or, with `rest` `"cut"`, `detail` and then
    the exception's text cut at 1,024 bytes of UTF-8 and marked with `…`; or, with `rest` `"any"`, `detail`
    and any text after it."""

    detail: str
    rest: Literal["none", "cut", "any"] = "none"


@dataclass(frozen=True)
class Unavailable:
    """`unavailable` (503) with `Retry-After: 5` and exactly `detail`."""

    detail: str


@dataclass(frozen=True)
class Succeeds:
    """`succeeded`, with `output` (or one of `alternatives`, where the spec's words allow more than one)."""

    output: Any
    alternatives: tuple[Any, ...] = ()


@dataclass(frozen=True)
class FirstBound:
    """A program that never ends and whose speed the spec does not fix: it ends at whichever bound it meets
    first, its work (`conflict`, `unworkable`, exactly `USED_UP`) or its 10 seconds (`unavailable`, exactly
    `PAST_TIME`). A loop that reads the clock is one: each round calls the host, so how many units it spends in
    10 seconds depends on the machine and its load."""


Ending = Refused | Unworkable | Unavailable | Succeeds | FirstBound


@dataclass(frozen=True)
class Hostile:
    name: str
    program: str
    ending: Ending
    input: Any = None
    repeated: bool = True
    """Whether the memory test runs it again and again. Not a program that holds a worker 10 s, nor one of the
    slow ways to use up the work budget (`SLOW_TO_USE_UP`): the memory test keeps that ending with the ways
    that reach it for less CPU (`loop-forever`, the regexes); each slow one is checked once, alone."""

    @property
    def source(self) -> str:
        return HEAD + self.program


SLOW_TO_USE_UP = False
"""`repeated` for a program that takes several times the CPU of `loop-forever` (about 1 s) to use up its
10,000,000,000 units of work: an exception caught each round, a generator, big integers (3 to 8 s each on a
loaded 2-core machine). The memory test ran each about seven times (two warm-up passes, four in its 200, one
after), a third of the module's CPU, for the ending (the run out of fuel, `sandbox.evaluate`'s `OutOfWork`)
that `loop-forever` and the regexes reach there for less. Each is still run, alone, by the test of each
program's ending."""


def raised(line: int, words: str) -> Unworkable:
    return Unworkable(f"Line {line} of the program {words}")


CORPUS: tuple[Hostile, ...] = (
    # Loops
    Hostile("loop-forever", "def main(input):\n    while True:\n        pass\n", Unworkable(USED_UP)),
    Hostile(
        "loop-huge-range",
        "def main(input):\n    total = 0\n    for i in range(10 ** 15):\n        total += i\n    return total\n",
        Unworkable(USED_UP),
        repeated=SLOW_TO_USE_UP,
    ),
    Hostile(
        "loop-on-the-clock",
        "import time\ndef main(input):\n    while True:\n        time.time_ns()\n",
        FirstBound(),
        repeated=False,
    ),
    Hostile(
        "loop-swallows-errors",
        "def main(input):\n    while True:\n        try:\n            1 // 0\n        except ZeroDivisionError:\n"
        "            pass\n",
        Unworkable(USED_UP),
        repeated=SLOW_TO_USE_UP,
    ),
    # Memory bombs
    Hostile("memory-big-list", "def main(input):\n    a = [0] * (10 ** 9)\n    return len(a)\n", raised(5, HEAP_FULL)),
    Hostile(
        "memory-big-string", "def main(input):\n    s = 'x' * (10 ** 9)\n    return len(s)\n", raised(5, HEAP_FULL)
    ),
    Hostile(
        "memory-string-doubling",
        "def main(input):\n    s = 'x'\n    while True:\n        s = s + s\n",
        raised(7, HEAP_FULL),
    ),
    Hostile(
        "memory-dict-growth",
        "def main(input):\n    d = {}\n    while True:\n        d[len(d)] = bytearray(4000000)\n",
        raised(7, HEAP_FULL),
    ),
    Hostile(
        "memory-bytearray",
        "def main(input):\n    b = bytearray(300 * 1024 * 1024)\n    return len(b)\n",
        raised(5, HEAP_FULL),
    ),
    Hostile(
        "memory-list-of-lists",
        "def main(input):\n    kept = []\n    while True:\n        kept.append([input] * 2000000)\n",
        raised(7, HEAP_FULL),
    ),
    # Recursion
    Hostile(
        "recursion-deep",
        "def main(input):\n    return down(0)\ndef down(n):\n    return down(n + 1)\n",
        raised(7, RECURSION),
    ),
    Hostile(
        "recursion-mutual",
        "def main(input):\n    return ping(0)\ndef ping(n):\n    return pong(n + 1)\n"
        "def pong(n):\n    return ping(n + 1)\n",
        raised(9, RECURSION),
    ),
    Hostile(
        "recursion-caught",
        "def main(input):\n    try:\n        return down(0)\n    except RuntimeError:\n        return 'caught'\n"
        "def down(n):\n    return down(n + 1)\n",
        Succeeds("caught"),
    ),
    Hostile(
        "recursion-in-a-lambda",
        "def main(input):\n    f = lambda g, n: g(g, n + 1)\n    return f(f, 0)\n",
        raised(5, RECURSION),
    ),
    # Introspection (refused at save)
    Hostile(
        "introspection-class",
        "def main(input):\n    return str(input.__class__)\n",
        Refused(5, (DUNDER + "__class__",)),
    ),
    Hostile(
        "introspection-subclasses",
        "def main(input):\n    return len(().__class__.__bases__[0].__subclasses__())\n",
        Refused(5, (DUNDER + "__subclasses__", DUNDER + "__bases__", DUNDER + "__class__")),
    ),
    Hostile(
        "introspection-globals",
        "def main(input):\n    return list(globals())\n",
        Refused(5, ("globals" + NOT_AVAILABLE,)),
    ),
    Hostile(
        "introspection-import-builtin",
        "def main(input):\n    return __import__('os').getcwd()\n",
        Refused(5, ("__import__" + NOT_AVAILABLE, DUNDER + "__import__")),
    ),
    Hostile(
        "introspection-open",
        "def main(input):\n    return open('/etc/passwd').read()\n",
        Refused(5, ("open" + NOT_AVAILABLE,)),
    ),
    Hostile(
        "introspection-getattr",
        "def main(input):\n    return getattr(input, 'x')\n",
        Refused(5, ("getattr" + NOT_AVAILABLE,)),
    ),
    Hostile("import-os", "import os\ndef main(input):\n    return os.getcwd()\n", Refused(4, (ONLY_ALLOWED + "os",))),
    Hostile("import-socket", "import socket\ndef main(input):\n    return 1\n", Refused(4, (ONLY_ALLOWED + "socket",))),
    Hostile(
        "import-sys", "from sys import modules\ndef main(input):\n    return 1\n", Refused(4, (ONLY_ALLOWED + "sys",))
    ),
    Hostile(
        "import-the-bridge",
        "import host\ndef main(input):\n    return host.call('x', '')\n",
        Refused(4, (ONLY_ALLOWED + "host",)),
    ),
    # "dir() shows only the program's names" (issue 14): its function's names as in CPython, or its top level
    Hostile(
        "introspection-dir",
        "LIMIT = 3\ndef main(input):\n    return sorted(name for name in dir() if name != 'input')\n",
        Succeeds([], alternatives=(["LIMIT", "main"],)),
    ),
    # Regexes inside the program: re's steps are work
    Hostile(
        "regex-catastrophic-alternation",
        "import re\ndef main(input):\n    return re.match('(a|a)*$', 'a' * 30 + 'b') is None\n",
        Unworkable(USED_UP),
    ),
    Hostile(
        "regex-nested-star",
        "import re\ndef main(input):\n    return re.match('(a*)*b', 'a' * 40) is None\n",
        Unworkable(USED_UP),
    ),
    Hostile(
        "regex-thousands-of-groups",
        "import re\ndef main(input):\n    return re.match('(' * 3000 + 'a*' + ')*' * 3000 + 'b', 'a' * 30) is None\n",
        Unworkable(USED_UP),
    ),
    # Huge outputs
    Hostile("output-long-text", "def main(input):\n    return 'x' * 2000000\n", Unworkable(TOO_LARGE)),
    Hostile("output-one-byte-too-many", "def main(input):\n    return 'x' * 1048319\n", Unworkable(TOO_LARGE)),
    Hostile("output-just-fits", "def main(input):\n    return len('x' * 1048318)\n", Succeeds(1048318)),
    Hostile("output-long-list", "def main(input):\n    return [12345] * 300000\n", Unworkable(TOO_LARGE)),
    Hostile(
        "output-wide-object",
        "def main(input):\n    return {'k' + str(i): 'v' * 100 for i in range(12000)}\n",
        Unworkable(TOO_LARGE),
    ),
    Hostile("output-escaped-controls", "def main(input):\n    return chr(0) * 200000\n", Unworkable(TOO_LARGE)),
    Hostile(
        "output-too-deep",
        "def main(input):\n    v = []\n    for i in range(100000):\n        v = [v]\n    return v\n",
        Unworkable(NOT_JSON + f"it nests deeper than 512 levels at {'/0' * MAX_DEPTH}"),
    ),
    Hostile(
        "output-contains-itself",
        "def main(input):\n    a = [1]\n    a.append(a)\n    return {'a': a}\n",
        Unworkable(NOT_JSON + "a container that contains itself at /a/1"),
    ),
    Hostile(
        "output-a-generator",
        "def main(input):\n    return forever()\ndef forever():\n    while True:\n        yield 1\n",
        Unworkable(NOT_JSON + "a value of type generator at the top"),
    ),
    Hostile(
        "output-big-integer",
        "def main(input):\n    return [2 ** 64]\n",
        Unworkable(NOT_JSON + "an integer outside ±9,007,199,254,740,991 at /0"),
    ),
    # Unicode tricks
    Hostile(
        "unicode-lone-surrogate-output",
        "def main(input):\n    return ['fine', chr(0xD800)]\n",
        Unworkable(NOT_JSON + "text that is not valid Unicode at /1"),
    ),
    Hostile(
        "unicode-lone-surrogate-top",
        "def main(input):\n    return chr(0xDFFF)\n",
        Unworkable(NOT_JSON + "text that is not valid Unicode at the top"),
    ),
    Hostile(
        "unicode-rtl-override-text",
        "def main(input):\n    return 'abc\u202edef\u2066x\u2069'\n",
        Succeeds("abc\u202edef\u2066x\u2069"),
    ),
    Hostile(
        "unicode-rtl-override-in-code",
        "def main(input):\n    return 1 \u202e+ 2\n",
        Refused(5, ("The program does not parse: invalid non-printable character U+202E",)),
    ),
    Hostile(
        "unicode-homoglyph-entry",
        "def m\u0430in(input):\n    return 1\n",
        Refused(4, ("The program needs a top-level entry function: def main(input)",)),
    ),
    Hostile(
        "unicode-homoglyph-name",
        "def main(input):\n    p\u0430ss = 1\n    pass_ = 2\n    return [p\u0430ss, pass_]\n",
        Succeeds([1, 2]),
    ),
    Hostile(
        "unicode-fullwidth-eval",
        "def main(input):\n    return \uff45\uff56\uff41\uff4c('1')\n",
        Refused(5, ("eval" + NOT_AVAILABLE,)),
    ),
    Hostile(
        "unicode-huge-escapes",
        "def main(input):\n    return '\\U0010FFFF' * 300000\n",
        Unworkable(TOO_LARGE),
    ),
    Hostile(
        "unicode-escape-out-of-range",
        "def main(input):\n    return '\\U00110000'\n",
        Refused(
            5,
            (
                "The program does not parse: (unicode error) 'unicodeescape' codec can't decode bytes in "
                "position 0-9: illegal Unicode character",
            ),
        ),
    ),
    # Exceptions with huge messages
    Hostile(
        "exception-huge-message",
        "def main(input):\n    raise ValueError('x' * 100000)\n",
        Unworkable("Line 5 of the program raised ValueError: ", rest="cut"),
    ),
    Hostile(
        "exception-huge-multibyte-message",
        "def main(input):\n    raise ValueError('\u00e9\u20ac\U0001f600' * 50000)\n",
        Unworkable("Line 5 of the program raised ValueError: ", rest="cut"),
    ),
    Hostile(
        "exception-huge-key",
        "def main(input):\n    return {}['k' * 100000]\n",
        Unworkable("Line 5 of the program raised KeyError: ", rest="cut"),
    ),
    Hostile(
        "exception-lone-surrogate-message",
        "def main(input):\n    raise ValueError(chr(0xD800))\n",
        Unworkable("Line 5 of the program raised ValueError: ", rest="any"),
    ),
    # Generators that never end
    Hostile(
        "generator-summed",
        "def main(input):\n    return sum(forever())\ndef forever():\n    n = 0\n    while True:\n        n += 1\n"
        "        yield n\n",
        Unworkable(USED_UP),
        repeated=SLOW_TO_USE_UP,
    ),
    Hostile(
        "generator-listed",
        "def main(input):\n    return list(forever())\ndef forever():\n    while True:\n"
        "        yield bytearray(4000000)\n",
        raised(8, HEAP_FULL),
    ),
)


def check_saved(hostile: Hostile, response: httpx.Response) -> bool:
    """Check a save's response: the spec's refusal when the program is refused at save. True when saved."""
    if not isinstance(hostile.ending, Refused):
        assert response.status_code == 201, response.text
        return True
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "invalid_input", body
    assert "kind" not in body, body
    first = body["errors"][0]
    assert first["pointer"] == "/source", body
    assert first["detail"] in {f"Line {hostile.ending.line}: {words}" for words in hostile.ending.words}, body
    return False


def check_ran(hostile: Hostile, response: httpx.Response) -> None:
    """Check a run's response against the ending the spec gives the program."""
    ending = hostile.ending
    assert not isinstance(ending, Refused)
    if isinstance(ending, FirstBound):
        ending = Unavailable(PAST_TIME) if response.status_code == 503 else Unworkable(USED_UP)
    if isinstance(ending, Succeeds):
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["status"] == "succeeded", body
        assert body["output"] in (ending.output, *ending.alternatives), body["output"]
        return
    body = response.json()
    assert response.headers["content-type"].startswith("application/problem+json"), response.text[:500]
    if isinstance(ending, Unavailable):
        assert (response.status_code, body["reason"], body.get("kind")) == (503, "unavailable", None), body
        assert response.headers["retry-after"] == "5"
        assert body["detail"] == ending.detail, body
        return
    assert (response.status_code, body["reason"], body.get("kind")) == (409, "conflict", "unworkable"), body
    detail: str = body["detail"]
    detail.encode("utf-8")  # the detail is valid Unicode, whatever text the program raised
    if ending.rest == "none":
        assert detail == ending.detail, detail[:2000]
        return
    assert detail.startswith(ending.detail), detail[:2000]
    if ending.rest == "any":
        return
    text = detail[len(ending.detail) :]
    assert text.endswith("…"), text[-100:]
    assert len(text[:-1].encode("utf-8")) <= CUT_BYTES, len(text[:-1].encode("utf-8"))
    assert len(text[:-1].encode("utf-8")) > CUT_BYTES - 4, len(text[:-1].encode("utf-8"))
