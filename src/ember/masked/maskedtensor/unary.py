"""Unary pointwise operations on MaskedTensors: the operation on the data, the mask kept.

torch's list: out-of-place forms and (but for ``angle``, ``positive``, ``signbit``, ``isnan``)
in-place ones. Extra arguments may be scalars only, and keyword-only arguments are refused.

Example::

    >>> mt = masked_tensor(ember.tensor([0., 1.]), ember.tensor([True, False]))
    >>> ember.exp(mt)
    MaskedTensor(
      [  1.0000,       --]
    )
"""

from __future__ import annotations

from ..._tensor import Tensor
from ._autograd import gated
from .core import _plain, _wrap

__all__ = []

UNARY_NAMES = (
    "abs absolute acos arccos acosh arccosh angle asin arcsin asinh arcsinh atan arctan atanh "
    "arctanh bitwise_not ceil clamp clip conj_physical cos cosh deg2rad digamma erf erfc erfinv "
    "exp exp2 expm1 fix floor frac lgamma log log10 log1p log2 logit i0 isnan nan_to_num neg "
    "negative positive pow rad2deg reciprocal round rsqrt sigmoid sign sgn signbit sin sinc "
    "sinh sqrt square tan tanh trunc").split()

INPLACE_UNARY_NAMES = [name + "_" for name in UNARY_NAMES
                       if name not in ("angle", "positive", "signbit", "isnan")]

# Tensor's operators that are unary operations of the list
UNARY_DUNDERS = {"__neg__": "neg", "__abs__": "abs", "__pos__": "positive",
                 "__invert__": "bitwise_not", "__pow__": "pow", "__ipow__": "pow_"}


def _check_arguments(args, kwargs):
    if kwargs:
        raise ValueError("MaskedTensor unary ops require that len(kwargs) == 0. If you need "
                         "support for this, please open an issue on Github.")
    if any(isinstance(arg, Tensor) for arg in args[1:]):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")


def apply_unary(func, args, kwargs):
    """``func`` (an ember function or Tensor method) on the MaskedTensor ``args[0]``'s data.

    Example::

        >>> mt = masked_tensor(ember.tensor([4., 9.]), ember.tensor([False, True]))
        >>> apply_unary(ember.sqrt, (mt,), {}).get_data()
        tensor([2., 3.])
    """
    _check_arguments(args, kwargs)
    result = func(gated(args[0]), *args[1:])
    return _wrap(result, args[0]._masked_mask)


def apply_inplace_unary(func, args, kwargs):
    """The in-place ``func`` on the data of ``args[0]``, which is returned."""
    _check_arguments(args, kwargs)
    func(_plain(args[0]), *args[1:])
    return args[0]
