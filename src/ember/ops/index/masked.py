"""Masked ops: masked_fill, masked_select, masked_scatter."""

from __future__ import annotations

import numpy as np

from ..._tensor import Tensor
from .._methods import inplace_method, tensor_method
from .._operands import broadcast_shapes, scalar_tensor
from .._registry import write_out
from .._signature import signature
from ..pointwise import where
from ._kernels import _short, _to_device
from .advanced import _getitem, index_op, index_put_op, nonzero

__all__ = ["masked_fill", "masked_scatter", "masked_select"]


# ---------------------------------------------------------------- masks


def _check_bool_mask(name, mask, capital=False):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        kind = _short(mask) if capital else mask.dtype.name.rstrip("0123456789") or "bool"
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {kind}")


@tensor_method
@signature("masked_fill(Tensor input, Tensor mask, PyObject value) -> Tensor", overloaded=True)
def masked_fill(input, mask, value):
    """``value`` where ``mask`` is True, ``input`` elsewhere (``mask`` broadcasts).

    Example::

        >>> ember.tensor([1., 2., 3.]).masked_fill(ember.tensor([True, False, True]), 0.)
        tensor([0., 2., 0.])
    """
    _check_bool_mask("masked_fill_", mask)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        value = value.to(dtype=input.dtype, device=input._device)
    else:
        value = scalar_tensor(value, input.dtype, input._device)
    return where(_to_device(mask, input._device), value, input)


tensor_method(inplace_method(masked_fill), "masked_fill_")


# ---------------------------------------------------------------- masked_select / scatter


def _broadcast_with_mask(input, mask):
    shape = broadcast_shapes(input._data.shape, mask._data.shape)
    if input._data.shape != shape:
        input = input.expand(shape)
    if mask._data.shape != shape:
        mask = mask.expand(shape)
    if not shape:
        input, mask = input.reshape(1), mask.reshape(1)
    return input, _to_device(mask, input._device), shape


@tensor_method
@signature('masked_select(Tensor input, Tensor mask, *, Tensor? out=None) -> Tensor')
def masked_select(input, mask, *, out=None):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor (both broadcast).

    Example::

        >>> ember.masked_select(ember.tensor([1, 2, 3]), ember.tensor([True, False, True]))
        tensor([1, 3])
    """
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    a, m, _ = _broadcast_with_mask(input, mask)
    idx = nonzero(m, as_tuple=True)
    return write_out(index_op(a, *idx, positions=tuple(range(a._data.ndim))), out,
                     "masked_select")


@tensor_method
@signature("masked_scatter(Tensor input, Tensor mask, Tensor source) -> Tensor")
def masked_scatter(input, mask, source):
    """``input`` with the elements where ``mask`` is True replaced, in order, by the first
    elements of ``source``.

    Example::

        >>> ember.zeros(3).masked_scatter(ember.tensor([True, False, True]),
        ...                               ember.tensor([5., 6., 7.]))
        tensor([5., 0., 6.])
    """
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_short(mask) if isinstance(mask, Tensor) else mask}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{_short(input)} and {_short(source)}")
    a, m, shape = _broadcast_with_mask(input, mask)
    idx = nonzero(m, as_tuple=True)
    count = idx[0]._data.shape[0]
    if source._data.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    values = _getitem(source.reshape(-1), slice(0, count))
    result = index_put_op(a, _to_device(values, a._device), *idx,
                          positions=tuple(range(a._data.ndim)), accumulate=False)
    return result.reshape(shape) if not shape else result


tensor_method(inplace_method(masked_scatter), "masked_scatter_")
