"""How admission refusals and failed calls become the operation layer's rejections (reasoning-format §8).

For a run that has not called a tool. Once a tool call was recorded, §7.7 turns the ``unavailable``
endings into ``tools_unfinished`` or ``effect_unknown``, which only the run can decide.
"""

from __future__ import annotations

from auto_runtime.models.failures import ModelCallFailure
from auto_runtime.models.provider_options import ProviderOptionRefused
from auto_runtime.models.resolution import ModelNotOffered
from auto_runtime.problems import InputIssue, Rejection


def not_offered_rejection(refusal: ModelNotOffered) -> Rejection:
    """``unavailable``, kind ``model_not_offered``, with its ``because``; no Retry-After."""
    return Rejection("unavailable", refusal.detail, kind="model_not_offered", because=refusal.because)


def option_rejection(refusal: ProviderOptionRefused) -> Rejection:
    """``conflict``, kind ``unworkable``, naming the field."""
    return Rejection("conflict", refusal.detail, kind="unworkable", errors=[InputIssue(refusal.detail, refusal.field)])


def failure_rejection(failure: ModelCallFailure) -> Rejection:
    """The ending of a failed call in a run that called no tool.

    Content refused is ``invalid_input`` at ``/input``; a refused request is ``conflict`` ``unworkable``;
    an untrusted certificate is ``model_not_offered`` / ``provider_not_configured``; everything else is
    ``unavailable`` with the default Retry-After, the detail carrying the provider's wait in words.
    """
    if failure.kind == "content_refused":
        return Rejection("invalid_input", failure.detail, errors=[InputIssue(failure.detail, "/input")])
    if failure.kind == "request_refused":
        return Rejection("conflict", failure.detail, kind="unworkable")
    if failure.kind == "certificate_untrusted":
        return Rejection("unavailable", failure.detail, kind="model_not_offered", because="provider_not_configured")
    return Rejection("unavailable", failure.detail)
