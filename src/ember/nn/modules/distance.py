"""nn modules: distance (being written)."""

from __future__ import annotations

__all__ = []
