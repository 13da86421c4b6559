"""``ember.backends.opt_einsum``: the ``opt_einsum`` package's contraction-order flags.

``enabled`` and ``strategy`` are kept but have no effect: ember's ``einsum`` uses NumPy's
(and CuPy's) own path optimisation.

Example::

    >>> ember.backends.opt_einsum.strategy in (None, "auto")
    True
"""

from __future__ import annotations

import importlib.util

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]


def is_available():
    """Whether the ``opt_einsum`` package is installed."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The ``opt_einsum`` module, or None when it is not installed."""
    if not is_available():
        return None
    import opt_einsum  # noqa: PLC0415

    return opt_einsum


enabled = is_available()
strategy = "auto" if enabled else None
