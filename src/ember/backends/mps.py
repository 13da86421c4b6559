"""``ember.backends.mps``: Apple's Metal backend, which ember does not have.

Example::

    >>> ember.backends.mps.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available():
    """False: ember has no MPS backend."""
    return False


def is_built():
    """False: ember has no MPS backend."""
    return False
