"""ember.linalg: linear algebra as torch.linalg (being written)."""

from __future__ import annotations

__all__ = []
