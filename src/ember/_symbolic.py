"""torch's ``sym_*`` helpers and the ``SymInt``/``SymFloat``/``SymBool`` classes.

In torch these accept symbolic sizes (from ``torch.compile``'s shape tracing) as well as plain
numbers. ember traces no symbolic shapes, so they act on plain Python numbers exactly as torch's
do on them (``sym_max(2, 3.0) == 3.0``, ``sym_int(-3.7) == -3``), and the ``Sym*`` classes
exist for ``isinstance`` checks (nothing in ember is one) but cannot be made.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_max", "sym_min",
           "sym_not", "sym_ite", "sym_sqrt", "sym_sum", "sym_fresh_size", "sym_constrain_range",
           "sym_constrain_range_for_size", "_assert"]

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_NUMBERS = (np.integer, np.floating, int, float)


class _Symbolic:
    """A symbolic number of torch's shape tracing: ember has none to wrap."""

    __slots__ = ()

    def __init__(self, node=None):
        raise NotImplementedError(
            f"torch.{type(self).__name__} wraps a symbolic size of torch.compile's shape "
            f"tracing; ember traces no symbolic shapes, so plain Python numbers stand in for "
            f"them (use int/float/bool).")


class SymInt(_Symbolic):
    """torch's symbolic int; ember's sizes are plain ints (``isinstance(3, SymInt)`` is
    False, as in torch).

    Example::

        >>> isinstance(ember.zeros(2).shape[0], ember.SymInt)
        False
    """

    __slots__ = ()


class SymFloat(_Symbolic):
    """torch's symbolic float; ember uses plain floats.

    Example::

        >>> isinstance(1.5, ember.SymFloat)
        False
    """

    __slots__ = ()


class SymBool(_Symbolic):
    """torch's symbolic bool; ember uses plain bools.

    Example::

        >>> isinstance(True, ember.SymBool)
        False
    """

    __slots__ = ()


def sym_int(a):
    """``int(a)``, truncating toward zero.

    Example::

        >>> ember.sym_int(-3.7)
        -3
    """
    return builtins.int(a)


def sym_float(a):
    """``float(a)``.

    Example::

        >>> ember.sym_float(3)
        3.0
    """
    return builtins.float(a)


def _check_number(value):
    if not isinstance(value, _NUMBERS):
        raise AssertionError(f"expected {_NUMBERS}, got {type(value)}")


def _extreme(choose, a, b):
    _check_number(a)
    _check_number(b)
    result = choose(a, b)
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        return builtins.float(result)
    return result


def sym_max(a, b):
    """The larger number; a float if either is a float (as torch's).

    Example::

        >>> ember.sym_max(2, 3.0)
        3.0
    """
    return _extreme(builtins.max, a, b)


def sym_min(a, b):
    """The smaller number; a float if either is a float (as torch's).

    Example::

        >>> ember.sym_min(2.0, 3)
        2.0
    """
    return _extreme(builtins.min, a, b)


def sym_not(a):
    """``not a``.

    Example::

        >>> ember.sym_not(0)
        True
    """
    return not a


def sym_ite(b, t, f):
    """``t if b else f``; ``b`` must be a bool.

    Example::

        >>> ember.sym_ite(True, 1, 2)
        1
    """
    if not isinstance(b, (SymBool, bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    return t if b else f


def sym_sqrt(a):
    """``math.sqrt(a)``.

    Example::

        >>> ember.sym_sqrt(4)
        2.0
    """
    return math.sqrt(a)


def sym_sum(args):
    """The sum of ``args`` starting from 0 (tensors included).

    Example::

        >>> ember.sym_sum([1, 2, 3])
        6
    """
    return builtins.sum(args)


def sym_fresh_size(expr):
    """``expr`` itself: only a symbolic size can be made fresh.

    Example::

        >>> ember.sym_fresh_size(3)
        3
    """
    return expr


def _check_range(size, low, high):
    if not low <= size <= high:
        raise RuntimeError(f"Invalid value range for {size} between [{low}, {high}].")


def sym_constrain_range(size, *, min=None, max=None):  # noqa: A002 - torch's names
    """Check that ``size`` lies in ``[min, max]`` (RuntimeError otherwise, as torch).

    Example::

        >>> ember.sym_constrain_range(3, min=0, max=5)
    """
    _check_range(size, _INT64_MIN if min is None else min, _INT64_MAX if max is None else max)


def sym_constrain_range_for_size(size, *, min=None, max=None):  # noqa: A002 - torch's names
    """Check that ``size`` is a valid size in ``[min, max]`` (``min`` defaults to 0).

    Example::

        >>> ember.sym_constrain_range_for_size(0)
    """
    _check_range(size, 0 if min is None else min, _INT64_MAX if max is None else max)


def _assert(condition, message):
    """Python's ``assert`` as a function, so that symbolic tracing (ember.fx) can record it:
    a tensor-like condition with ``__torch_function__`` (an fx Proxy) is handed to it.

    Example::

        >>> ember._assert(ember.tensor(True), "never raised")
        >>> ember._assert(False, "shape mismatch")
        Traceback (most recent call last):
        AssertionError: shape mismatch
    """
    from . import _tensor, overrides

    if type(condition) is not _tensor.Tensor and overrides.has_torch_function((condition,)):
        return overrides.handle_torch_function(_assert, (condition,), condition, message)
    if not condition:
        raise AssertionError(message)
