"""``ember.profiler.itt``: Intel ITT annotations for VTune. ember has no ITT backend:
:func:`is_available` is False and the annotations are accepted and do nothing.

Example::

    >>> from ember.profiler import itt
    >>> with itt.range("step {}", 1):
    ...     pass
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]

_depth = [0]


def is_available():
    """Whether ITT annotations reach a profiler: never in ember.

    Example::

        >>> is_available()
        False
    """
    return False


def range_push(msg):
    """Open a nested range named ``msg``; returns its zero-based depth."""
    _depth[0] += 1
    return _depth[0] - 1


def range_pop():
    """Close the innermost range; returns the depth of the closed range."""
    _depth[0] = max(_depth[0] - 1, 0)
    return _depth[0]


def mark(msg):
    """An instantaneous marker named ``msg`` (nothing to record it in ember)."""


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001  (torch's name)
    """A range around a ``with`` block; ``msg`` is formatted with ``args``/``kwargs``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
