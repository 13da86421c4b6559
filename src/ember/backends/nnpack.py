"""``ember.backends.nnpack``: torch's NNPACK convolution switch. :func:`is_available` is True
as on torch's CPU build; the flag is kept, and ember's CPU convolution (an im2col GEMM) gives
the same results either way.

Example::

    >>> with ember.backends.nnpack.flags(enabled=False):
    ...     pass
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "flags", "set_flags"]

_state = {"enabled": True}


def is_available():
    """True, as torch's CPU build (the switch below is honoured as a no-op).

    Example::

        >>> ember.backends.nnpack.is_available()
        True
    """
    return True


def set_flags(_enabled):
    """Set the NNPACK flag; returns the previous value as a one-element tuple (torch's form)."""
    previous = (_state["enabled"],)
    _state["enabled"] = bool(_enabled)
    return previous


@contextlib.contextmanager
def flags(enabled=False):
    """Set the NNPACK flag inside the block."""
    previous = set_flags(enabled)
    try:
        yield
    finally:
        set_flags(previous[0])
