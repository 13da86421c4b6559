"""Half-precision products computed as torch's CPU kernels compute them.

torch's CPU matrix products, convolutions and attention take float16/bfloat16 operands,
accumulate in float32 and round the result to the half dtype once; a composition of ember
operators would round after every step instead (the scores, the scaled scores, the weights...),
which after a cancellation can move a result by many units of its last place.
:func:`in_float32` runs such a composition on float32 copies and rounds once.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor

_HALF = (dt.float16, dt.bfloat16)


def is_half(tensor):
    """Whether ``tensor`` is float16 or bfloat16: the cheap test callers make first, so that
    other dtypes skip :func:`in_float32` altogether.

    Example::

        >>> is_half(ember.ones(2, dtype=ember.float16)), is_half(ember.ones(2))
        (True, False)
    """
    data = tensor._data
    return data.itemsize == 2 and data.dtype in dt.LOW_PRECISION


def in_float32(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with its float16/bfloat16 tensor arguments as float32 copies,
    the (tensor or tuple of tensors) result rounded back to their dtype once.

    Arguments of any other dtype (a bool mask, float32 or float64 operands) pass unchanged,
    and so does the whole call when no argument is in half precision; gradients flow
    through the casts.

    Example::

        >>> q = ember.randn(2, 3, dtype=ember.bfloat16)
        >>> in_float32(lambda a: a @ a.t() + 1, q).dtype
        ember.bfloat16
    """
    half = next((a.dtype for a in args if isinstance(a, Tensor) and a.dtype in _HALF), None)
    if half is None:
        return fn(*args, **kwargs)
    widened = [a.float() if isinstance(a, Tensor) and a.dtype is half else a for a in args]
    result = fn(*widened, **kwargs)
    if isinstance(result, tuple):
        return type(result)(_round(r, half) for r in result)
    return _round(result, half)


def _round(result, half):
    if isinstance(result, Tensor) and result.dtype is dt.float32:
        return result.to(half)
    return result
