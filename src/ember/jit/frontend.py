"""``torch.jit.frontend``'s exception types: what ``ember.jit.script`` raises for Python it does
not compile.

``NotSupportedError`` (and ``UnsupportedNodeError`` for a kind of statement or expression the
subset lacks) is also a ``NotImplementedError``, which ember raised for these before.

Example::

    >>> issubclass(ember.jit.frontend.UnsupportedNodeError, ember.jit.frontend.FrontendError)
    True
"""

from __future__ import annotations

__all__ = ["FrontendError", "NotSupportedError", "UnsupportedNodeError"]


class FrontendError(Exception):
    """Source that the script compiler cannot read (torch.jit.frontend.FrontendError).

    Example::

        >>> str(FrontendError("lambda at line 3"))
        'lambda at line 3'
    """


class NotSupportedError(FrontendError, NotImplementedError):
    """A Python feature outside TorchScript's subset (``*args``, ``global``...).

    Example::

        >>> isinstance(NotSupportedError("*args"), NotImplementedError)
        True
    """


class UnsupportedNodeError(NotSupportedError):
    """A kind of statement or expression the subset does not have (``lambda``, ``try``).

    Example::

        >>> issubclass(UnsupportedNodeError, NotSupportedError)
        True
    """
