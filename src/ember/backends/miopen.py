"""``ember.backends.miopen``: AMD MIOpen switches (ember has no MIOpen kernels; the flag is
kept without effect).

Example::

    >>> ember.backends.miopen.immediate
    False
    >>> with ember.backends.miopen.flags(immediate=True):
    ...     ember.backends.miopen.immediate
    True
"""

from __future__ import annotations

import contextlib
import sys

from . import ContextProp, PropModule, _allow_mutation

__all__ = ["flags", "set_flags", "MiopenModule"]

_flags = {"immediate": False}


def set_flags(_immediate=None):
    """Set MIOpen's immediate mode (None keeps it); returns the previous value as a tuple.

    Example::

        >>> ember.backends.miopen.set_flags()
        (False,)
    """
    previous = (_flags["immediate"],)
    if _immediate is not None:
        _flags["immediate"] = bool(_immediate)
    return previous


@contextlib.contextmanager
def flags(immediate=False):
    """Set MIOpen's immediate mode inside the block."""
    with _allow_mutation():
        previous = set_flags(immediate)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*previous)


class MiopenModule(PropModule):
    """``ember.backends.miopen``: ``immediate`` as a property."""

    immediate = ContextProp(lambda: _flags["immediate"], lambda value: set_flags(value))


sys.modules[__name__] = MiopenModule(sys.modules[__name__], __name__)
