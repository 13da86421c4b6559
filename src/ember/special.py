"""ember.special: special functions as torch.special (being written)."""

from __future__ import annotations

__all__ = []
