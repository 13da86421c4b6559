"""``ember._dynamo``: the few ``torch._dynamo`` entry points scripts call. ember runs
eagerly (:func:`ember.compile` compiles nothing), so these are no-ops.

Example::

    >>> ember._dynamo.reset()
"""

from __future__ import annotations

import functools

__all__ = ["reset", "disable", "is_compiling", "config"]


class _Config:
    """``torch._dynamo.config``: accepts and keeps any setting (``suppress_errors``, ...)."""

    suppress_errors = False
    cache_size_limit = 8
    verbose = False


config = _Config()


def reset():
    """Forget compiled code (there is none in ember)."""


def disable(fn=None, recursive=True, *, reason=None):
    """Mark ``fn`` to run eagerly (it always does in ember); a decorator with or without
    arguments.

    Example::

        >>> @ember._dynamo.disable
        ... def f(x):
        ...     return x
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    return fn


def is_compiling():
    """False: ember never traces Python code for compilation."""
    return False
