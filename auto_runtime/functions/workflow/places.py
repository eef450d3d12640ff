"""The variables each place of a document binds (spec 4.4), in the order a refusal lists them.

Task places add *T* (`context`, `workflow`, `runtime`, `task` and the loop and catch names in scope) and the
names of their row; the document walker composes them.
"""

from __future__ import annotations

DOCUMENT_INPUT: tuple[str, ...] = ("data", "workflow", "runtime")
DOCUMENT_OUTPUT: tuple[str, ...] = ("data", "workflow", "runtime", "context")
RAW_INPUT: tuple[str, ...] = ("data",)
BODY: tuple[str, ...] = ("data",)
FILTER: tuple[str, ...] = ("data",)
ANYWHERE: tuple[str, ...] = ("data", "context", "workflow", "runtime", "task", "input", "error")
"""`use.*` components are evaluated as at their place of use, which the document does not fix."""
