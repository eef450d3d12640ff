"""Token usage as the two families of providers count it: OpenAI's, whose input and output totals include
their cached and reasoning parts, and Anthropic's and Bedrock Converse's, whose input counts only what was
read afresh, with cache reads and writes counted apart."""

from __future__ import annotations

from typing import Any

from auto_runtime.models.answers import TokenUsage, difference
from auto_runtime.models.protocols.common import dig, number


def openai_usage(usage: Any, given: str, produced: str) -> TokenUsage:
    """``<given>`` with its ``<given>_details.cached_tokens``, ``<produced>`` with its
    ``<produced>_details.reasoning_tokens``, and ``total_tokens``."""
    given_total = number(dig(usage, given))
    produced_total = number(dig(usage, produced))
    cached = number(dig(usage, f"{given}_details", "cached_tokens"))
    reasoning = number(dig(usage, f"{produced}_details", "reasoning_tokens"))
    return TokenUsage(
        input_total=given_total,
        input_uncached=difference(given_total, cached),
        input_cache_read=cached,
        input_cache_write=None,
        output_total=produced_total,
        output_text=difference(produced_total, reasoning),
        output_reasoning=reasoning,
        total=number(dig(usage, "total_tokens")),
    )


def cache_apart_usage(
    usage: Any, *, uncached: str, read: str, written: str, produced: str, total: str | None
) -> TokenUsage:
    """The input total adds the cache reads and writes to the uncached part; the total is read from
    ``total``, or, where the provider gives none (``total`` None), added up."""
    uncached_count = number(dig(usage, uncached))
    read_count = number(dig(usage, read))
    written_count = number(dig(usage, written))
    produced_count = number(dig(usage, produced))
    given = None if uncached_count is None else uncached_count + (read_count or 0) + (written_count or 0)
    if total is not None:
        total_count = number(dig(usage, total))
    else:
        total_count = None if given is None or produced_count is None else given + produced_count
    return TokenUsage(
        input_total=given,
        input_uncached=uncached_count,
        input_cache_read=read_count,
        input_cache_write=written_count,
        output_total=produced_count,
        output_text=None,
        output_reasoning=None,
        total=total_count,
    )
