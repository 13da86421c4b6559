"""nn modules: dropout (being written)."""

from __future__ import annotations

__all__ = []
