"""``ember.backends.nnpack``: torch's NNPACK convolution switch (ember's CPU convolutions
do not use NNPACK; the flag is kept).

Example::

    >>> with ember.backends.nnpack.flags(enabled=False):
    ...     pass
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "flags", "set_flags"]

_state = {"enabled": True}


def is_available():
    """Whether NNPACK is built in: ember's convolutions use NumPy/CuPy instead.

    Example::

        >>> ember.backends.nnpack.is_available()
        False
    """
    return False


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
