"""How a reasoning run ends when it cannot answer (reasoning-format §7.7 and §8), in the caller's words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auto_runtime.problems import Rejection

MODEL_UNAVAILABLE = "model_unavailable"
SERVER_FAILED = "server_failed"
RUN_BOUND = "run_bound"
NO_ANSWER = "no_answer"


@dataclass(frozen=True)
class CalledTool:
    server: str
    tool: str
    read_only: bool

    @property
    def words(self) -> str:
        return f"the {self.tool} tool of {self.server}"


def names_of(called: Sequence[CalledTool]) -> list[str]:
    return [tool.words for tool in called]


def tools_in_words(called: Sequence[CalledTool]) -> str:
    names: list[str] = []
    for tool in called:
        if tool.words not in names:
            names.append(tool.words)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def after_tools(because: str, why: str, called: Sequence[CalledTool]) -> Rejection:
    """The ending of a run that recorded a tool call and could not finish: `tools_unfinished` when every tool
    it called only reads, else `effect_unknown`. Neither carries a Retry-After."""
    named = tools_in_words(called)
    if all(tool.read_only for tool in called):
        return Rejection(
            "unavailable",
            f"{why} The run had called {named}, which only read, so nothing was changed and running it again "
            "under a new id is safe.",
            kind="tools_unfinished",
            because=because,
        )
    subject = "tool" if len(set(names_of(called))) == 1 else "tools"
    return Rejection(
        "conflict",
        f"{why} The run had called {named}; whether the {subject} changed "
        "something is not known. A person, or a workflow rule naming effect_unknown, decides what happens next.",
        kind="effect_unknown",
        because=because,
    )


def invalid_answer(issues: Sequence[str]) -> Rejection:
    shown = " ".join(issues)
    return Rejection("unavailable", f"The model's answer did not fit the output; try again. {shown}")
