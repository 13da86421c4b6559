"""``ember.backends.opt_einsum``: the ``opt_einsum`` package's contraction-order flags.

``enabled`` and ``strategy`` are plain attributes, as in torch (assigning one is not
checked); :func:`set_flags` and :func:`flags` check them by torch's rules (both need the
package installed; the strategy is one of ``auto``, ``greedy``, ``optimal``). They have no
effect: ember's ``einsum`` uses NumPy's (and CuPy's) own path optimisation.

Example::

    >>> ember.backends.opt_einsum.strategy in (None, "auto")
    True
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import sys

from . import ContextProp, PropModule, _allow_mutation  # noqa: F401  (torch's names)

__all__ = ["is_available", "get_opt_einsum", "flags", "set_flags", "OptEinsumModule"]


@functools.cache
def is_available():
    """Whether the ``opt_einsum`` package is installed.

    Example::

        >>> isinstance(ember.backends.opt_einsum.is_available(), bool)
        True
    """
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The ``opt_einsum`` module, or None when it is not installed."""
    return importlib.import_module("opt_einsum") if is_available() else None


enabled = is_available()
strategy = "auto" if is_available() else None


def _set_enabled(value):
    if value and not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {value} will "
                         "not reap the benefits of calculating an optimal path for einsum. "
                         "Install opt-einsum to enable it.")
    global enabled
    enabled = value


def _set_strategy(value):
    if not is_available():
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {value} will "
                         "not be meaningful. Install opt_einsum or unset `strategy`.")
    if not enabled:
        raise ValueError(f"opt_einsum is not enabled, so setting a `strategy` to {value} will "
                         "not be meaningful. Set `enabled` to `True` as well or unset "
                         "`strategy`.")
    if value not in ("auto", "greedy", "optimal"):
        raise ValueError("`strategy` must be one of the following: [auto, greedy, optimal] "
                         f"but is {value}")
    global strategy
    strategy = value


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled`` and ``strategy`` (None keeps one); returns the previous values.

    Example::

        >>> previous = ember.backends.opt_einsum.set_flags()
    """
    previous = (enabled, strategy if is_available() else None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return previous


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """Set the flags inside the block."""
    with _allow_mutation():
        previous = set_flags(enabled, strategy)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*previous)


class OptEinsumModule(PropModule):
    """``ember.backends.opt_einsum``: the module as torch wraps it (its flags are plain
    attributes of the wrapped module)."""


sys.modules[__name__] = OptEinsumModule(sys.modules[__name__], __name__)
