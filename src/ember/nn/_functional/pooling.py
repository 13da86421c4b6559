"""nn.functional: pooling (being written)."""

from __future__ import annotations

__all__ = []
