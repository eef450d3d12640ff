"""The one JSON Pointer module: escaping, unescaping, joining and splitting (RFC 6901)."""

from __future__ import annotations

import pytest

from auto_runtime.json_pointers import escape, pointer_of, tokens_of, unescape

# RFC 6901 §5: the pointers of its example document and the keys they name.
RFC_EXAMPLES: list[tuple[str, list[str]]] = [
    ("", []),
    ("/foo", ["foo"]),
    ("/foo/0", ["foo", "0"]),
    ("/", [""]),
    ("/a~1b", ["a/b"]),
    ("/c%d", ["c%d"]),
    ("/e^f", ["e^f"]),
    ("/g|h", ["g|h"]),
    ("/i\\j", ["i\\j"]),
    ('/k"l', ['k"l']),
    ("/ ", [" "]),
    ("/m~0n", ["m~n"]),
]


@pytest.mark.parametrize(("pointer", "tokens"), RFC_EXAMPLES, ids=[p or "(whole)" for p, _ in RFC_EXAMPLES])
def test_the_rfc_examples_split_and_join(pointer: str, tokens: list[str]) -> None:
    assert tokens_of(pointer) == tokens
    assert pointer_of(tokens) == pointer


@pytest.mark.parametrize(
    ("token", "escaped"),
    [("~1", "~01"), ("/0", "~10"), ("~/", "~0~1"), ("~~", "~0~0"), ("//", "~1~1"), ("", ""), ("plain", "plain")],
)
def test_escape_writes_the_tilde_first_and_unescape_reads_it_last(token: str, escaped: str) -> None:
    """`~01` is the key `~1`, never `/`: escaping turns `~` before `/`, unescaping `~1` before `~0`."""
    assert escape(token) == escaped
    assert unescape(escaped) == token


def test_every_mix_of_tildes_slashes_and_digits_round_trips() -> None:
    alphabet = ["~", "/", "0", "1", "a"]
    tokens = [a + b + c for a in alphabet for b in alphabet for c in alphabet]
    for token in tokens:
        assert unescape(escape(token)) == token
    assert tokens_of(pointer_of(tokens)) == tokens


def test_indexes_are_tokens_written_as_their_digits() -> None:
    assert pointer_of(["items", 0, "a/b", 12]) == "/items/0/a~1b/12"
    assert escape(7) == "7"
    assert tokens_of("/items/0") == ["items", "0"]
