"""The overview of an interaction function: what it needs, whom or what it asks, and what it answers."""

from __future__ import annotations

from auto_runtime.functions.interaction.document import InteractionDocument
from auto_runtime.functions.overview import schema_table

SHOWN_MESSAGE_CHARS = 4000


def _fence(text: str) -> str:
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}liquid\n{text}\n{fence}\n"


def _duration(ms: int) -> str:
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000)):
        if ms % size == 0:
            count = ms // size
            return f"{count:,} {unit}{'' if count == 1 else 's'}"
    return f"{ms / 1000:g} seconds"


def interaction_overview(document: InteractionDocument) -> str:
    call = document.call
    if call is not None:
        default = f"An interaction function: it asks the tool `{call.place.tool}` of `{call.place.server}`."
    elif document.takes_answer:
        default = "An interaction function: it asks a party a question and waits for the answer."
    else:
        default = "An interaction function: it sends a party a notification."
    parts = [f"{document.description or default}\n", "## What it needs\n", schema_table(document.input_schema)]
    parts.append("## What it produces\n")
    if call is not None:
        where = f"the value at `{call.read}` of" if call.read else "the whole of"
        parts.append(f"It calls the tool once and answers {where} its answer, checked against this schema:\n")
        parts.append(schema_table(document.output_schema))
        parts.append("## What it does\n")
        parts.append(
            f"It makes one recorded call of `{call.place.tool}` through the tool server `{call.place.server}` and "
            "ends within the request. A tool that changes something may have done so even when the run does not "
            "finish, so a run that called it is never attempted again under its id.\n"
        )
        return "\n".join(parts)
    if document.takes_answer:
        parts.append("The answer, checked against this schema; the run succeeds with it as its output:\n")
        parts.append(schema_table(document.output_schema))
    else:
        parts.append("A notification takes no answer: the run succeeds once it is delivered.\n")
    parts.append("## What it does\n")
    expires = _duration(document.expires_ms or 0)
    if document.deliver is not None:
        parts.append(
            f"It delivers its request through the tool `{document.deliver.tool}` of `{document.deliver.server}`, "
            f"trying up to 5 times, and waits at most {expires} for the answer.\n"
        )
    else:
        parts.append(
            f"Its request waits in the playbook's inbox (`list_interactions`) at most {expires}, for "
            "`answer_interaction`.\n"
        )
    parts.append("### The message\n")
    message = document.message_source.strip("\n")
    if len(message) > SHOWN_MESSAGE_CHARS:
        message = message[:SHOWN_MESSAGE_CHARS] + "\n…"
    parts.append(_fence(message))
    return "\n".join(parts)
