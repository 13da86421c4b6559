"""``make_tensor``: random test tensors with torch's value ranges per dtype."""

from __future__ import annotations

import collections.abc
import math
import warnings

from .. import _dtype as dt

__all__ = ["make_tensor"]

_INTEGER_DTYPES = (dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)
_FLOAT_DTYPES = (dt.float16, dt.bfloat16, dt.float32, dt.float64)
_COMPLEX_DTYPES = (dt.complex64, dt.complex128)


def _value_range(dtype, low, high):
    """The half-open interval ``[low, high)`` to sample from, checked and clamped.

    Defaults: bool [0, 2), integers [-9, 10) (clamped to the dtype, so uint8 gets [0, 10)),
    floating and complex [-9, 9).
    """
    if dtype is dt.bool:
        lowest, highest, default = 0, 2, (0, 2)
    elif dtype in _INTEGER_DTYPES:
        info = dt.iinfo(dtype)
        # randint cannot draw int64's maximum (its bounds travel as int64), so stop one short.
        lowest, highest, default = info.min, info.max + (dtype is not dt.int64), (-9, 10)
    else:
        info = dt.finfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 9)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    floating = dtype in _FLOAT_DTYPES or dtype in _COMPLEX_DTYPES
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and floating:
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`ember.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not floating:
        # Integers: round low up (stay inside the interval); high is exclusive, so up as well.
        return math.ceil(low), math.ceil(high)
    return low, high


def _fill_uniform(target, low, high):
    """``target.uniform_(low, high)``, halving the range first if its width would overflow."""
    if high - low >= dt.finfo(target.dtype).max:
        return target.uniform_(low / 2, high / 2).mul_(2)
    return target.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)``.

    Default ranges, as torch's: bool ``[0, 2)``, unsigned integers ``[0, 10)``, signed integers
    ``[-9, 10)``, floating and complex (both parts) ``[-9, 9)``. Bounds outside the dtype's
    finite range are clamped to it. ``noncontiguous=True`` returns a strided view (every second
    element of a wider tensor) when the tensor has more than one element. ``exclude_zero=True``
    replaces zeros by one (bool and integers) or by ``finfo(dtype).tiny`` (floating/complex).

    Example::

        >>> t = ember.testing.make_tensor(2, 3, dtype=ember.float32, device="cpu", low=-1, high=1)
        >>> t.shape, bool(((t >= -1) & (t < 1)).all())
        (ember.Size([2, 3]), True)
    """
    from ..ops.creation import empty
    from ..ops.pointwise import view_as_real
    from ..ops.random import randint

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    integral = dtype is dt.bool or dtype in _INTEGER_DTYPES
    if requires_grad and integral:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    if not integral and dtype not in _FLOAT_DTYPES and dtype not in _COMPLEX_DTYPES:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "ember.testing.make_tensor().")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # sample twice the last dim, keep every second
    low, high = _value_range(dtype, low, high)
    if integral:
        result = randint(low, high, shape, device=device, dtype=dtype)
    else:
        result = empty(shape, device=device, dtype=dtype)
        _fill_uniform(view_as_real(result) if dtype in _COMPLEX_DTYPES else result, low, high)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if integral else dt.finfo(dtype).tiny
    if not integral:
        result.requires_grad = requires_grad
    return result
