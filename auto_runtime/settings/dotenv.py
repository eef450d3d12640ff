"""The ``.env`` file of the folder the server starts in.

The format, line by line:

* a blank line, or one whose first non-blank character is ``#``, is skipped;
* otherwise the line is ``NAME=value``, optionally preceded by ``export `` and whitespace;
  ``NAME`` is a letter or ``_`` followed by letters, digits and ``_``, written right before ``=``;
* a value in double quotes may use the escapes ``\\n``, ``\\t``, ``\\"`` and ``\\\\``; a value in
  single quotes is taken as written; either may be followed by blanks and a ``#`` comment;
* an unquoted value ends at a ``#`` that follows a blank, and its surrounding blanks are dropped;
* a name given twice takes the later value. Values are not expanded: ``$`` is an ordinary character.

A line that is none of these is refused, naming the file and the line number, never the text.
"""

import re
from pathlib import Path

from auto_runtime.settings.errors import SettingsError

_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_TRAILER = re.compile(r"^\s*(?:#.*)?$")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class _MalformedError(Exception):
    def __init__(self, expects: str) -> None:
        super().__init__(expects)
        self.expects = expects


def parse_dotenv(text: str, file_name: str = ".env") -> dict[str, str]:
    """The variables ``text`` assigns; raises SettingsError naming ``file_name`` and the line."""
    variables: dict[str, str] = {}
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGNMENT.match(line)
        if match is None:
            raise SettingsError(f"{file_name}:{number}: expects NAME=value, a variable name then = and its value")
        name, rest = match.group(1), match.group(2)
        try:
            variables[name] = _value(rest.lstrip())
        except _MalformedError as malformed:
            raise SettingsError(f"{file_name}:{number}: {name}: {malformed.expects}") from None
    return variables


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables of the file at ``path``, or none when there is no such file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise SettingsError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: expects UTF-8 text") from None
    return parse_dotenv(text, str(path))


def _value(rest: str) -> str:
    if rest.startswith('"'):
        return _double_quoted(rest)
    if rest.startswith("'"):
        end = rest.find("'", 1)
        if end < 0:
            raise _MalformedError("expects a closing ' on the same line")
        _check_trailer(rest[end + 1 :])
        return rest[1:end]
    comment = re.search(r"\s#", rest)
    return (rest[: comment.start()] if comment else rest).strip()


def _double_quoted(rest: str) -> str:
    chars: list[str] = []
    index = 1
    while index < len(rest):
        char = rest[index]
        if char == "\\":
            escaped = rest[index + 1 : index + 2]
            if escaped not in _ESCAPES:
                raise _MalformedError('expects only the escapes \\n, \\t, \\" and \\\\ inside double quotes')
            chars.append(_ESCAPES[escaped])
            index += 2
            continue
        if char == '"':
            _check_trailer(rest[index + 1 :])
            return "".join(chars)
        chars.append(char)
        index += 1
    raise _MalformedError('expects a closing " on the same line')


def _check_trailer(trailer: str) -> None:
    if not _TRAILER.match(trailer):
        raise _MalformedError("expects nothing but a # comment after the closing quote")
