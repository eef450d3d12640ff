"""The plain words of a tool result: `content[0]` of a success and of a refusal (spec mcp.md §6, §7, §4.5).

A success says in one or two sentences what was done and what can come next, in the product's words, with ids
only where the person needs them to act: at most 400 characters. A refusal says what could not be done, why,
and what to change, naming the tool that resolves it where one does, and separates what the agent can fix
from what only the operator can: at most 600 characters. Neither is JSON, and neither is ever parsed.
Operations without words of their own get words made from their title, so a new operation needs nothing here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from auto_runtime.operations.operation import Operation
from auto_runtime.problems import Rejection

MAX_SUCCESS_CHARACTERS = 400
MAX_REFUSAL_CHARACTERS = 600
LISTED_NAMES = 5

TYPE_WORDS: Mapping[str, str] = {
    "reasoning": "reasoning function",
    "interaction": "interaction function",
    "prediction": "prediction function",
    "recall": "recall function",
    "computation": "computation function",
    "workflow": "workflow",
}


def fit(text: str, limit: int) -> str:
    """The text within `limit` characters, cut at a word and ended with an ellipsis when it is longer."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.") + "…"


def _definition(output: Mapping[str, Any]) -> str:
    kind = TYPE_WORDS.get(str(output.get("type", "")), "definition")
    return f"the {kind} {output.get('name', '')}".rstrip()


def _names(items: Sequence[Any], key: str) -> str:
    names = [str(item.get(key)) for item in items[:LISTED_NAMES] if isinstance(item, Mapping)]
    more = len(items) - len(names)
    text = ", ".join(names)
    return text + (f" and {more} more" if more > 0 else "")


def _count(items: Sequence[Any], one: str, many: str) -> str:
    if not items:
        return f"no {many}"
    return f"1 {one}" if len(items) == 1 else f"{len(items)} {many}"


def _more_pages(output: Mapping[str, Any]) -> str:
    return " More come on the next page: pass next_cursor as cursor." if output.get("has_more") else ""


def _playbook_created(output: Mapping[str, Any]) -> str:
    return (
        f"Created the playbook {output.get('name')} with the id {output.get('id')}. "
        "It holds no definitions yet: add a function or workflow to it next."
    )


def _playbooks_listed(output: Mapping[str, Any]) -> str:
    items = output.get("playbooks") or []
    found = _count(items, "playbook", "playbooks")
    return f"Found {found}" + (f": {_names(items, 'id')}." if items else ".")


def _playbook_updated(output: Mapping[str, Any]) -> str:
    return f"The playbook {output.get('id')} is now named {output.get('name')}, with the description given."


def _playbook_retired(output: Mapping[str, Any]) -> str:
    return f"Retired the playbook {output.get('id')} for good: it stays readable, but nothing in it can change or run."


def _definition_saved(output: Mapping[str, Any]) -> str:
    return (
        f"Saved {_definition(output)} as version {output.get('version')}. "
        "It can run now; its overview says what it does."
    )


def _definitions_listed(output: Mapping[str, Any]) -> str:
    items = output.get("definitions") or []
    found = _count(items, "definition", "definitions")
    return f"Found {found}" + (f": {_names(items, 'name')}." if items else ".")


def _definition_read(output: Mapping[str, Any]) -> str:
    return f"Read {_definition(output)}, version {output.get('version')}, which is {output.get('status')}."


def _definition_retired(output: Mapping[str, Any]) -> str:
    return f"Retired {_definition(output)} for good: it stays readable with its runs, but cannot change or run again."


def _run_words(output: Mapping[str, Any]) -> str:
    what = _definition(output)
    status = output.get("status")
    if status == "started":
        return (
            f"The run of {what} started and finishes later. Read it again with its run id "
            f"{output.get('run_id')} to see when it ends."
        )
    if status == "succeeded":
        return f"The run of {what} succeeded; its output is in the result."
    if status == "rejected":
        return f"The run of {what} was rejected; the result holds its rejection and why."
    return f"The run of {what} failed inside the server; the result holds its incident reference."


def _runs_listed(output: Mapping[str, Any]) -> str:
    items = output.get("runs") or []
    return f"Found {_count(items, 'run', 'runs')} on this page." + _more_pages(output)


def _events_listed(output: Mapping[str, Any]) -> str:
    items = output.get("events") or []
    return f"Found {_count(items, 'event', 'events')} on this page." + _more_pages(output)


def _event_read(output: Mapping[str, Any]) -> str:
    return f"Read one event of type {output.get('type')}: {output.get('summary', '')}"


SUCCESS_WORDS: Mapping[str, Callable[[Mapping[str, Any]], str]] = {
    "create_playbook": _playbook_created,
    "list_playbooks": _playbooks_listed,
    "update_playbook": _playbook_updated,
    "retire_playbook": _playbook_retired,
    "create_definition": _definition_saved,
    "update_definition": _definition_saved,
    "list_definitions": _definitions_listed,
    "get_definition": _definition_read,
    "retire_definition": _definition_retired,
    "run_definition": _run_words,
    "get_run": _run_words,
    "list_runs": _runs_listed,
    "list_playbook_events": _events_listed,
    "get_event": _event_read,
}


def success_words(operation: Operation, output: Any) -> str:
    """What was done, in one or two sentences of at most 400 characters."""
    words = SUCCESS_WORDS.get(operation.name)
    if words is not None and isinstance(output, Mapping):
        return fit(words(output), MAX_SUCCESS_CHARACTERS)
    title = operation.title[:1].lower() + operation.title[1:]
    if operation.hints.read_only:
        text = f"Done: {title}. The result holds what it found." + (
            _more_pages(output) if isinstance(output, Mapping) else ""
        )
    else:
        text = f"Done: {title}. The result holds what is there now."
    return fit(text, MAX_SUCCESS_CHARACTERS)


LIST_TOOL_OF_TAG: Mapping[str, str] = {
    "playbooks": "list_playbooks",
    "definitions": "list_definitions",
    "runs": "list_runs",
    "events": "list_playbook_events",
}


def _pointers(rejection: Rejection) -> str:
    pointers = list(dict.fromkeys(issue.pointer or "/" for issue in rejection.errors))
    if not pointers:
        return ""
    shown = ", ".join(pointers[:LISTED_NAMES]) + (" and others" if len(pointers) > LISTED_NAMES else "")
    return f" at {shown}"


def _remedy(operation: Operation, rejection: Rejection) -> str:
    reason, kind = rejection.reason, rejection.kind
    if reason == "invalid_input":
        return (
            f"You can fix this: correct the arguments{_pointers(rejection)} as the errors say, "
            f"and call {operation.name} again."
        )
    if reason == "forbidden":
        return (
            "The key this connection uses does not allow it; only the operator can give the key that "
            "permission or playbook, so tell the person."
        )
    if reason == "not_found":
        if "no playbook" in rejection.detail:
            return "Check the playbook id; list_playbooks lists the playbooks this key may use."
        if " definition " in rejection.detail:
            return "Check the type and name; list_definitions lists the definitions of each type."
        lister = LIST_TOOL_OF_TAG.get(operation.tag)
        return "Check the name or id" + (f"; {lister} lists what exists." if lister else ".")
    if reason == "conflict":
        if kind == "retired":
            return "A retired playbook or definition stays readable but never changes again; use another."
        return "It clashes with what is there now: read the current state, then change the arguments."
    if reason == "cancelled":
        return "The run was cancelled, so it has no result; run it again under a new run id if it is still wanted."
    if reason == "unanswered":
        return "Nobody answered what the run waited on; run it again if the answer is still needed."
    if reason == "unavailable":
        if kind == "model_not_offered":
            return "Choose a model list_models lists; only the operator can add a provider or allow a model."
        if kind == "tool_not_offered":
            return "Choose a tool search finds; only the operator can add a tool server."
        if kind == "tools_unfinished":
            return "Only read-only tools were called, so running it again under a new run id is safe."
        if rejection.effective_retry_after() is None:
            return "Waiting will not help; the operator or a change of the arguments must resolve it."
        return "Something the server relies on cannot serve now; try again shortly, and tell the operator if it lasts."
    if reason == "internal":
        reference = f" Give them the incident reference {rejection.instance}." if rejection.instance else ""
        return "Something went wrong inside the server; only its operator can fix it." + reference
    return "Change the request as the detail says and call again."


def refusal_words(operation: Operation, rejection: Rejection) -> str:
    """What could not be done, why, and what to change, in at most 600 characters."""
    remedy = _remedy(operation, rejection)
    opening = f"{operation.name} could not be done: "
    room = MAX_REFUSAL_CHARACTERS - len(opening) - len(remedy) - 1
    why = fit(rejection.detail, max(room, 40))
    if not why.endswith((".", "…", "!", "?")):
        why += "."
    return fit(f"{opening}{why} {remedy}", MAX_REFUSAL_CHARACTERS)
