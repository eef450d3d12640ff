"""The overview of a reasoning function: what it needs, what it produces, the model, the tools, what it is told."""

from __future__ import annotations

from auto_runtime.functions.overview import schema_table
from auto_runtime.functions.reasoning.document import ReasoningDocument

SHOWN_TEMPLATE_CHARS = 4000


def _fence(text: str) -> str:
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}liquid\n{text}\n{fence}\n"


def reasoning_overview(document: ReasoningDocument) -> str:
    parts = [f"{document.description or 'A reasoning function: it asks a language model.'}\n"]
    parts.append("## What it needs\n")
    parts.append(schema_table(document.input_schema))
    if document.input_default:
        defaults = ", ".join(f"`{key}`" for key in document.input_default)
        parts.append(f"Fields left out take the document's defaults: {defaults}.\n")
    parts.append("## What it produces\n")
    if document.output_format == "text":
        parts.append("The model's answer as text.\n")
    else:
        if document.shape is not None:
            parts.append(f"It answers the `{document.shape}` output shape.\n")
        parts.append("A JSON value, checked against this schema before the run succeeds:\n")
        parts.append(schema_table(document.output_schema))
    parts.append("## What it does\n")
    parts.append(
        f"It renders its prompt from the input and asks the model `{document.model}` "
        f"(at most {document.config.max_output_tokens:,} tokens in one answer)."
    )
    if document.tools:
        listed = "\n".join(
            f"- every tool the server `{t.server}` offers" if t.tool == "*" else f"- `{t.tool}` of `{t.server}`"
            for t in document.tools
        )
        parts.append(
            " The model may call these tools, at most 25 calls in a run; a tool that changes something may have "
            f"done so even when the run does not finish:\n\n{listed}\n"
        )
    else:
        parts.append(" It calls no tools, so running it again changes nothing outside the playbook.\n")
    parts.append("### What the model is told\n")
    template = document.template_source.strip("\n")
    if len(template) > SHOWN_TEMPLATE_CHARS:
        template = template[:SHOWN_TEMPLATE_CHARS] + "\n…"
    parts.append(
        "The prompt template, with `{% system %}` holding the instructions and the rest the message:\n\n"
        + _fence(template)
    )
    return "\n".join(parts)
