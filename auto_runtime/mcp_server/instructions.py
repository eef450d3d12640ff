"""The instructions of a connection, built from the tools it lists (spec mcp.md §9).

They never name a tool the connection does not list and hold at most 2,000 characters. In order: what a
playbook is (the terminology guide's definition) and one sentence per definition type the server runs; what the
connection acts on; where the formats and recipes are; models, tools and calling a tool by hand; what answers
`started`; answering a request; paging; how to tell the person what happened; that a refusal says what to change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from auto_runtime.mcp_server.endpoints import Endpoint
from auto_runtime.mcp_server.words import fit

MAX_INSTRUCTIONS_CHARACTERS = 2000
TYPE_SENTENCES: Mapping[str, str] = {
    "reasoning": "A reasoning function asks a language model, and may let it call tools.",
    "interaction": "An interaction function asks a person, an agent or a system, and waits for the answer.",
    "prediction": "A prediction function forecasts a number column of a time series a few periods ahead.",
    "recall": "A recall function keeps a view built from the playbook's own events, so the playbook remembers.",
    "computation": "A computation function runs a small Python program that computes its output exactly.",
    "workflow": "A workflow calls the playbook's functions step by step, and may start by itself on a schedule or "
    "an event.",
}
PLAYBOOK_ROW = re.compile(r"^\|\s*\*\*playbook\*\*\s*\|\s*(.+?)\s*\|\s*$", re.MULTILINE)


def playbook_definition(terminology: str) -> str:
    """The terminology guide's definition of a playbook, as one sentence beginning "A playbook is"."""
    match = PLAYBOOK_ROW.search(terminology)
    if match is None:
        raise ValueError("the terminology guide does not define the word playbook")
    first = match.group(1).split(". ")[0].rstrip(".")
    return f"A playbook is {first[:1].lower()}{first[1:]}."


def _acts_on(endpoint: Endpoint, org: str, playbook_tools: bool) -> str:
    if endpoint.kind == "playbook":
        return f"This connection acts in one playbook, {endpoint.playbook}, of the org {org}."
    if endpoint.kind == "org":
        return f"This connection acts on the org {org} and its playbooks as a whole."
    sentence = f"This connection acts on the org {org}"
    if playbook_tools:
        sentence += "; each playbook tool takes the id of the playbook to act in as its playbook argument"
    return sentence + "."


def _models_and_tools(listed: set[str]) -> str:
    parts = []
    if "list_models" in listed:
        parts.append("names a model list_models lists")
    if "search" in listed:
        parts.append("names tools search finds")
    sentence = f"A reasoning function {' and '.join(parts)}." if parts else ""
    if "execute" in listed:
        sentence += " execute calls a tool by hand."
    return sentence.strip()


class Instructions:
    def __init__(self, terminology: str, definition_types: Iterable[str]) -> None:
        self.opening = " ".join(
            [playbook_definition(terminology), *(TYPE_SENTENCES[t] for t in definition_types if t in TYPE_SENTENCES)]
        )

    def build(self, endpoint: Endpoint, org: str, listed_tools: Iterable[str], playbook_tools: bool) -> str:
        """The instructions of one connection, never longer than 2,000 characters."""
        return fit(self.compose(endpoint, org, listed_tools, playbook_tools), MAX_INSTRUCTIONS_CHARACTERS)

    def compose(self, endpoint: Endpoint, org: str, listed_tools: Iterable[str], playbook_tools: bool) -> str:
        """The instructions as written, before any cut (the start-up check measures these)."""
        listed = set(listed_tools)
        sentences = [self.opening, _acts_on(endpoint, org, playbook_tools)]
        guides = "The format of each definition type and recipes for common tasks are in the guides"
        sentences.append(guides + (", read as resources or with get_guide." if "get_guide" in listed else "."))
        sentences.append(_models_and_tools(listed))
        if "get_run" in listed:
            sentences.append(
                "A workflow run, an interaction function's request and a prediction build answer started, and "
                "get_run shows whether they ended."
            )
        if "answer_interaction" in listed:
            sentences.append(
                "When the person answers what a run waits on, answer its request with answer_interaction rather "
                "than starting a new run."
            )
        if listed & {"list_runs", "list_playbook_events", "list_interactions"}:
            sentences.append("Runs, events and requests come a page at a time: pass next_cursor as cursor.")
        sentences.append(
            "Tell the person what was done and what they can do next, in plain words, with ids only when they "
            "need them to act."
        )
        sentences.append("A refused call says why, and what to change.")
        return " ".join(s for s in sentences if s)
