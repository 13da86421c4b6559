"""The errors of ``ember.mps``: ember has no Metal backend, so calls that need one raise
torch's RuntimeError ("Cannot execute X() without MPS backend.", as its CPU build says).

Example::

    >>> no_mps("deviceSynchronize")
    RuntimeError('Cannot execute deviceSynchronize() without MPS backend.')
"""

from __future__ import annotations

__all__ = ["no_mps", "MpsBindingMissingError"]


def no_mps(operation):
    """torch's RuntimeError for ``operation`` without the MPS backend."""
    return RuntimeError(f"Cannot execute {operation}() without MPS backend.")


class MpsBindingMissingError(RuntimeError, AttributeError):
    """Where torch's CPU build lacks the MPS binding (AttributeError); also a RuntimeError."""
