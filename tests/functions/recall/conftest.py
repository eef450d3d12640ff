from __future__ import annotations

from tests.sandbox_engine import engine

__all__ = ["engine"]
