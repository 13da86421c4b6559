"""``ember.xpu``: Intel XPU devices, which ember does not have.

Example::

    >>> ember.xpu.is_available()
    False
"""

from __future__ import annotations

__all__ = ["is_available", "device_count"]


def is_available():
    """False: ember has no XPU backend."""
    return False


def device_count():
    """0: ember has no XPU backend."""
    return 0
