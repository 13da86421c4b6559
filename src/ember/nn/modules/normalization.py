"""nn modules: normalization (being written)."""

from __future__ import annotations

__all__ = []
