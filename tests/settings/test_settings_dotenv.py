from pathlib import Path

import pytest

from auto_runtime.settings import SettingsError
from auto_runtime.settings.dotenv import parse_dotenv
from tests.settings.start_folder import StartFolder


def test_plain_exported_quoted_and_commented_assignments() -> None:
    text = "\n".join(
        [
            "# a comment",
            "",
            "PLAIN=value",
            "export EXPORTED=yes",
            'DOUBLE="two words # not a comment" # a comment',
            "SINGLE='$literal \\n' ",
            'ESCAPED="line\\nnext \\"quoted\\" back\\\\slash"',
            "TRAILING=value # comment",
            "EMPTY=",
            "HASH=a#b",
        ]
    )
    assert parse_dotenv(text) == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "DOUBLE": "two words # not a comment",
        "SINGLE": "$literal \\n",
        "ESCAPED": 'line\nnext "quoted" back\\slash',
        "TRAILING": "value",
        "EMPTY": "",
        "HASH": "a#b",
    }


def test_a_later_assignment_wins() -> None:
    assert parse_dotenv("A=1\nA=2\n") == {"A": "2"}


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("just-some-secret-text", "just-some-secret-text"),
        ("1NAME=secret-value", "secret-value"),
        ('QUOTED="secret-unclosed', "secret-unclosed"),
        ("QUOTED='secret-unclosed", "secret-unclosed"),
        ('QUOTED="secret-value" trailing-secret', "trailing-secret"),
        ('QUOTED="bad \\q escape-secret"', "escape-secret"),
        ("NAME = spaced-secret", "spaced-secret"),
    ],
)
def test_a_malformed_line_is_refused_naming_the_line_never_the_value(line: str, secret: str) -> None:
    with pytest.raises(SettingsError) as caught:
        parse_dotenv(f"GOOD=1\n{line}\n", ".env")
    assert str(caught.value).startswith(".env:2:")
    assert secret not in str(caught.value)


def test_the_command_line_reads_dotenv_and_the_image_does_not(start: StartFolder) -> None:
    start.dotenv("PORT=6000\n")
    assert start.load().settings.port == 6000
    assert start.load().dotenv_file == start.cwd / ".env"
    assert start.load({"HOST": "127.0.0.1"}, mode="image").settings.port == 5555


def test_dotenv_that_is_not_utf8_is_refused(start: StartFolder) -> None:
    (start.cwd / ".env").write_bytes(b"A=\xff\xfe\n")
    assert "expects UTF-8 text" in start.refused()


def test_no_dotenv_is_fine(tmp_path: Path) -> None:
    assert parse_dotenv("") == {}
