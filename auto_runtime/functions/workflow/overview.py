"""The overview a saved workflow shows: what it needs and produces, what starts it, and its steps."""

from __future__ import annotations

from auto_runtime.functions.overview import schema_table
from auto_runtime.functions.workflow.document import WorkflowDocument
from auto_runtime.json_pointers import unescape

_KIND_WORDS = {
    "call": "calls a function",
    "do": "runs its steps in order",
    "emit": "emits an event",
    "for": "repeats its steps for each item",
    "fork": "runs branches at once",
    "listen": "waits for events",
    "raise": "raises an error",
    "set": "sets the data",
    "switch": "chooses the next step",
    "try": "tries its steps and catches errors",
    "wait": "waits",
}


def _trigger_line(kind: str, detail: str) -> str:
    return f"- {kind}: {detail}"


def workflow_overview(document: WorkflowDocument) -> str:
    """Markdown for a person who does not read the document (the **Used by** part is added elsewhere)."""
    parts = [document.description or "A workflow.", ""]
    parts += ["## What it needs", "", schema_table(document.input_schema)]
    shape = f"It answers the `{document.shape}` output shape.\n\n" if document.shape else ""
    parts += ["## What it produces", "", shape + schema_table(document.output_schema)]
    if document.triggers:
        parts += ["## What starts it", ""]
        for trigger in document.triggers:
            if trigger.kind == "event":
                types = ", ".join(f"`{f['type']}`" for f in trigger.filters)
                parts.append(_trigger_line("an event", types))
            elif trigger.kind == "cron":
                parts.append(_trigger_line("a cron schedule", f"`{trigger.expression}` (UTC)"))
            else:
                parts.append(_trigger_line("a period", f"every {trigger.milliseconds} ms"))
        parts.append("")
    parts += ["## What it does", ""]
    calls = {call.reference: call for call in document.calls}
    for level, reference, kind in document.steps:
        name = unescape(reference.rsplit("/", 1)[1])
        words = _KIND_WORDS.get(kind, kind)
        call = calls.get(reference)
        if call is not None:
            words = (
                f"calls the {call.type} function `{call.name}`"
                if call.type != "workflow"
                else f"runs the workflow `{call.name}`"
            )
        parts.append(f"{'  ' * (level - 1)}- `{name}` {words}")
    return "\n".join(parts) + "\n"
