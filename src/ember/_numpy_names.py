"""NumPy's argument names, which torch's functions accept for their own: ``axis`` for
``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for ``input`` and ``x2`` for
``other`` (``x.sum(axis=0, keepdims=True)``).

ember's public wrappers (``ember.overrides``) call :func:`with_torch_names` only after a call
failed with a TypeError, so the common call pays nothing for it.
"""

from __future__ import annotations

__all__ = []

ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input",
           "x2": "other"}


def with_torch_names(kwargs):
    """``kwargs`` with NumPy's names replaced by torch's, or None when there is none to
    replace or a name would be given twice.

    Example::

        >>> with_torch_names({"axis": 0, "keepdims": True})
        {'dim': 0, 'keepdim': True}
    """
    if not kwargs or ALIASES.keys().isdisjoint(kwargs):
        return None
    translated = {}
    for name, value in kwargs.items():
        torch_name = ALIASES.get(name, name)
        if torch_name in translated:
            return None
        translated[torch_name] = value
    return translated
