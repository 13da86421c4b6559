"""``ember.cpu``: the CPU device's namespace, as ``torch.cpu`` (``ember.cpu.amp``).

Example::

    >>> ember.cpu.is_available()
    True
"""

from __future__ import annotations

from . import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available():
    """Always True: the CPU is always there."""
    return True


def device_count():
    """1, as torch."""
    return 1


def current_device():
    """``'cpu'``, as torch."""
    return "cpu"


def synchronize(device=None):
    """A no-op: CPU work is synchronous."""
