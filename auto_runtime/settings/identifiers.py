"""Text fields with a fixed shape: ids, names, tool names, variable and header names.

Each is a ``str`` checked by a validator that says what it expects in words, and carries its pattern
into the JSON Schema of the configuration file.
"""

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, Field, StrictStr


def matching(pattern: str, expects: str, most: int | None = None) -> Callable[[str], str]:
    """A validator that accepts text matching ``pattern`` (and at most ``most`` characters)."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value) or (most is not None and len(value) > most):
            raise ValueError(expects)
        return value

    return check


ORG_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
PLAYBOOK_PATTERN = r"[a-z][a-z0-9-]{2,47}"
NAME_PATTERN = r"[a-z](?:-?[a-z0-9])*"
TOOL_NAME_PATTERN = r"[A-Za-z0-9_.-]{1,128}"
VARIABLE_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
HEADER_PATTERN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"

OrgId = Annotated[
    StrictStr,
    AfterValidator(matching(ORG_PATTERN, "expects an org id of 1 to 64 letters, digits, _ and -")),
    Field(json_schema_extra={"pattern": f"^{ORG_PATTERN}$"}),
]
PlaybookId = Annotated[
    StrictStr,
    AfterValidator(
        matching(
            PLAYBOOK_PATTERN,
            "expects a playbook id: 3 to 48 lowercase letters, digits and hyphens, from a letter",
        )
    ),
    Field(json_schema_extra={"pattern": f"^{PLAYBOOK_PATTERN}$"}),
]
NAME_EXPECTS = (
    "expects 1 to 32 lowercase letters, digits and hyphens, starting with a letter, "
    "with no two hyphens together and none at the end"
)
ServerName = Annotated[
    StrictStr,
    AfterValidator(matching(NAME_PATTERN, NAME_EXPECTS, most=32)),
    Field(json_schema_extra={"pattern": f"^{NAME_PATTERN}$", "maxLength": 32}),
]
ToolName = Annotated[
    StrictStr,
    AfterValidator(
        matching(
            TOOL_NAME_PATTERN,
            "expects a tool name of 1 to 128 letters, digits, underscores, hyphens and dots, "
            "without the server's name and without *",
        )
    ),
    Field(json_schema_extra={"pattern": f"^{TOOL_NAME_PATTERN}$"}),
]
VariableName = Annotated[
    StrictStr,
    AfterValidator(matching(VARIABLE_PATTERN, "expects a variable name of letters, digits and _, not from a digit")),
    Field(json_schema_extra={"pattern": f"^{VARIABLE_PATTERN}$"}),
]
HeaderName = Annotated[
    StrictStr,
    AfterValidator(matching(HEADER_PATTERN, "expects a header name")),
    Field(json_schema_extra={"pattern": f"^{HEADER_PATTERN}$"}),
]


def is_server_name(name: str) -> bool:
    """A tool server's or gateway's name: the rule of :data:`ServerName`."""
    return len(name) <= 32 and re.fullmatch(NAME_PATTERN, name) is not None
