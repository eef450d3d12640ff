"""Scoring tools against search terms, and the summary a search shows of each (HTTP page "Searching the tools").

Each word of the terms, and each part of it split at `_`, `.`, `-` and case changes, scores in any letter case:
3 where it is a word of the tool's name (split the same way), else 2 where it is a word of the name of one of the
tool's arguments, else 1 where it is a word of the tool's description. A tool's score is the sum over the distinct
words and parts of the terms; a tool that scores 0 is not found.

Everything here is pure and bounded: the terms are at most 8 words of 64 characters, a description is read once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from auto_runtime.tools.kinds import ListedTool

MAX_TERMS = 8
MAX_TERM_CHARACTERS = 64
TERMS_PATTERN = r"^ *[^ ]{1,64}( +[^ ]{1,64}){0,7} *$"
"""Up to 8 words of up to 64 characters, separated by spaces."""
SUMMARY_CHARACTERS = 300
NAME_SCORE = 3
ARGUMENT_SCORE = 2
DESCRIPTION_SCORE = 1
_SEPARATORS = re.compile(r"[_.\-]+")
_CASE_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_DESCRIPTION_WORDS = re.compile(r"[A-Za-z0-9_.\-]+")
_FIRST_SENTENCE = re.compile(r"^(.*?[.!?])(?=\s|$)", re.DOTALL)


def parts_of(word: str) -> set[str]:
    """The word in lower case and each part of it split at `_`, `.`, `-` and case changes, in lower case."""
    found = {word.lower()} if word else set()
    for piece in _SEPARATORS.split(word):
        if not piece:
            continue
        found.add(piece.lower())
        found.update(part.lower() for part in _CASE_PARTS.findall(piece))
    return found


def words_of(text: str) -> set[str]:
    """Every word of a text and every part of each, in lower case."""
    found: set[str] = set()
    for word in _DESCRIPTION_WORDS.findall(text):
        found |= parts_of(word)
    return found


def term_words(terms: str) -> set[str]:
    """The distinct words and parts of the terms that score."""
    found: set[str] = set()
    for word in terms.split():
        found |= parts_of(word)
    return found


def argument_names(schema: Mapping[str, Any]) -> Iterable[str]:
    properties = schema.get("properties")
    return [str(name) for name in properties] if isinstance(properties, Mapping) else []


def score_of(tool: ListedTool, wanted: set[str]) -> int:
    """The tool's score for the words of the terms (see the module docstring)."""
    name_words = parts_of(tool.name)
    argument_words: set[str] = set()
    for name in argument_names(tool.input_schema):
        argument_words |= parts_of(name)
    description_words = words_of(tool.description)
    score = 0
    for word in wanted:
        if word in name_words:
            score += NAME_SCORE
        elif word in argument_words:
            score += ARGUMENT_SCORE
        elif word in description_words:
            score += DESCRIPTION_SCORE
    return score


def summary_of(description: str) -> str:
    """The first sentence of a description, cut at 300 characters."""
    text = description.strip()
    match = _FIRST_SENTENCE.match(text)
    sentence = match.group(1) if match else text
    return sentence[:SUMMARY_CHARACTERS]
