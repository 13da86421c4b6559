"""``ember.compiler``: ``torch.compiler``'s helpers for an eager framework (no-ops).

Example::

    >>> ember.compiler.is_compiling()
    False
"""

from __future__ import annotations

from .._dynamo import disable, reset

__all__ = ["disable", "reset", "is_compiling", "is_dynamo_compiling", "allow_in_graph",
           "assume_constant_result"]


def is_compiling():
    """False: nothing in ember runs under a compiler."""
    return False


def is_dynamo_compiling():
    """False: nothing in ember runs under a compiler."""
    return False


def allow_in_graph(fn):
    """Return ``fn`` (there is no graph to allow it in)."""
    return fn


def assume_constant_result(fn):
    """Return ``fn`` (there is no graph to fold it into)."""
    return fn
