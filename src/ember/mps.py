"""``ember.mps``: Apple's Metal devices, which ember does not have.

Example::

    >>> ember.mps.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available():
    """False: ember has no MPS backend."""
    return False


def device_count():
    """0: ember has no MPS backend."""
    return 0
