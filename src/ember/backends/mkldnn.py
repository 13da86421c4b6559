"""``ember.backends.mkldnn``: oneDNN (MKL-DNN) switches; ember's CPU kernels are NumPy's, so
oneDNN is never available and the flags are kept without effect.

Example::

    >>> ember.backends.mkldnn.is_available()
    False
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "flags", "set_flags", "enabled", "deterministic"]

enabled = True
deterministic = False
VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2


def is_available():
    """Whether oneDNN is built in: never in ember."""
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the flags; returns their previous values (torch's form)."""
    global enabled, deterministic
    previous = (enabled, deterministic)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    return previous


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the flags inside the block."""
    previous = set_flags(enabled, deterministic)
    try:
        yield
    finally:
        set_flags(*previous)
