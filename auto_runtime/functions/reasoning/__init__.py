"""The reasoning definition type: Markdown documents whose Liquid prompt goes to a language model, with tools."""

from auto_runtime.functions.reasoning.document import ReasoningDocument, issue_lines, parse_document
from auto_runtime.functions.reasoning.reasoning_type import ReasoningType

__all__ = ["ReasoningDocument", "ReasoningType", "issue_lines", "parse_document"]
