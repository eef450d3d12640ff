"""One save-time issue of a workflow document, and how issues become the `invalid_input` entries.

Each issue is written `Line <l>, column <c>: at <document pointer>: <words>` (spec 2.1), the line and column
(both from 1) where the field's value starts. Issues are listed in line order, then column order, at most
`MAX_LISTED`, then one entry `And N more problems`, as for the other documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.problems import InputIssue, Rejection, invalid_input

MAX_LISTED = 20


@dataclass(frozen=True, order=True)
class Issue:
    """A problem at (line, column) of the document, about the value at `pointer` (`""` is the document)."""

    line: int
    column: int
    pointer: str
    words: str

    def detail(self) -> str:
        return f"Line {self.line}, column {self.column}: at {self.pointer or '/'}: {self.words}"


def ordered(issues: list[Issue]) -> list[Issue]:
    """Distinct issues in line, then column order; issues at one place keep the order they were found."""
    seen: set[Issue] = set()
    unique: list[Issue] = []
    for issue in issues:
        if issue not in seen:
            seen.add(issue)
            unique.append(issue)
    return sorted(unique, key=lambda issue: (issue.line, issue.column))


def refusal(issues: list[Issue]) -> Rejection:
    """The `invalid_input` rejection listing the issues at `/source`."""
    listed = ordered(issues)
    details = [issue.detail() for issue in listed[:MAX_LISTED]]
    if len(listed) > MAX_LISTED:
        details.append(f"And {len(listed) - MAX_LISTED} more problems")
    return invalid_input([InputIssue(detail, "/source") for detail in details])
