"""Utilities (``ember.utils``): activation checkpointing, safetensors; data loading lives in
``utils.data``.

Example::

    >>> from ember.utils.checkpoint import checkpoint
    >>> y = checkpoint(lambda t: t.sin().exp(), x, use_reentrant=False)
"""

from __future__ import annotations

from . import checkpoint, safetensors

__all__ = ["checkpoint", "safetensors"]
