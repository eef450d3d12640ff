"""Interaction functions (interaction-format): the document, a call's run, and what a request needs."""

from auto_runtime.functions.interaction.interaction_type import InteractionType

__all__ = ["InteractionType"]
