"""The runtime's catalog: every operation it serves, assembled once at start."""

from __future__ import annotations

from collections.abc import Mapping

from auto_runtime.guides import Guide
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.guide_operations import guide_operation
from auto_runtime.operations.playbook_operations import PLAYBOOK_OPERATIONS


def build_catalog(guides: Mapping[str, Guide]) -> Catalog:
    return Catalog([*PLAYBOOK_OPERATIONS, guide_operation(guides)])
