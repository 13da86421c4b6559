"""Positions: take, take_along_dim, put, unravel_index."""

from __future__ import annotations

import builtins

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from .._methods import inplace_method, tensor_method
from .._operands import wrap_dim
from .._registry import write_out
from .._signature import signature
from ._kernels import _check_range, _short, _to_device
from .advanced import index_op, index_put_op
from .gather_scatter import gather_op

__all__ = ["take", "take_along_dim", "put", "unravel_index"]


# ---------------------------------------------------------------- take / put


def _check_flat_range(input, index, name=None):
    if input._device is META:
        return
    n = input._data.size
    _check_range(input._device.xp, index._data, n, 0, "out of range: tried to access index "
                 "{index} on a tensor of " + f"{n} elements.", IndexError, negative=True)


@tensor_method
@signature('take(Tensor input, Tensor index) -> Tensor')
def take(input, index):
    """The elements of ``input`` (read as 1-D) at ``index``; the result has index's shape.

    Example::

        >>> ember.take(ember.tensor([[1, 2], [3, 4]]), ember.tensor([0, 3]))
        tensor([1, 4])
    """
    if index._data.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_short(index)}")
    index = _to_device(index, input._device)
    _check_flat_range(input, index)
    return index_op(input.reshape(-1), index, positions=(0,))


@tensor_method
@signature("take_along_dim(Tensor input, Tensor indices, int? dim=None, *, "
           "Tensor? out=None) -> Tensor")
def take_along_dim(input, indices, dim=None, *, out=None):
    """Gather ``indices`` along ``dim`` with broadcasting (of the flattened input if ``dim`` is
    None); with a ``dim``, negative indices count from the end.

    Example::

        >>> ember.take_along_dim(ember.tensor([[10, 30], [20, 5]]), ember.tensor([[1], [0]]), 1)
        tensor([[30],
                [20]])
    """
    from ..pointwise import where

    if indices._data.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_short(indices)}")
    indices = _to_device(indices, input._device)
    if dim is None:
        flat = input.reshape(-1)
        return write_out(gather_op(flat, indices.reshape(-1), dim=0), out, "take_along_dim")
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input._data.ndim} dimensions for "
                           f"input, and {indices._data.ndim} dimensions for indices")
    dim = wrap_dim(dim, input._data.ndim)
    from .._operands import broadcast_shapes

    sizes = list(input._data.shape)
    if sizes:
        sizes[dim] = indices._data.shape[dim]
    shape = list(broadcast_shapes(tuple(sizes), indices._data.shape))
    if tuple(shape) != indices._data.shape:
        indices = indices.expand(shape)
    if shape:
        shape[dim] = input._data.shape[dim]
    if tuple(shape) != input._data.shape:
        input = input.expand(shape)
    size = input._data.shape[dim] if input._data.ndim else 1
    indices = where(indices < 0, indices + size, indices)
    return write_out(gather_op(input, indices, dim=dim), out, "take_along_dim")


@tensor_method
@signature("put(Tensor input, Tensor index, Tensor source, bool accumulate=False) -> Tensor")
def put(input, index, source, accumulate=False):
    """``input`` (read as 1-D) with ``source`` written at ``index``; ``accumulate`` adds.

    Example::

        >>> ember.zeros(2, 2).put(ember.tensor([3, 0]), ember.tensor([1., 2.]))
        tensor([[2., 0.],
                [0., 1.]])
    """
    if index._data.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_short(index)}")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_short(input)} and source.dtype = {_short(source)}")
    if index._data.size != source._data.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source._data.size}, "
                         f"index.numel() = {index._data.size}")
    index = _to_device(index, input._device)
    _check_flat_range(input, index)
    result = index_put_op(input.reshape(-1), _to_device(source, input._device).reshape(-1),
                          index.reshape(-1), positions=(0,), accumulate=builtins.bool(accumulate))
    return result.reshape(input._data.shape)


tensor_method(inplace_method(put), "put_")


def _unravel_shape(shape):
    """``shape`` as a tuple of ints, with torch's TypeErrors for anything else (a float, a
    str, a tensor: torch's Python code checks the types itself)."""
    if isinstance(shape, int):
        return (shape,)
    if not isinstance(shape, (list, tuple)) and not isinstance(shape, str):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape)}")
    for size in shape:
        if not isinstance(size, int):
            kind = "<class 'torch.Tensor'>" if isinstance(size, Tensor) else str(type(size))
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {kind}")
    return tuple(shape)


def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of the flat (row-major) ``indices``: a tuple
    of int64 tensors, one per dim, shaped like ``indices``. As torch, indices wrap around
    (``-1`` is the last element).

    Example::

        >>> ember.unravel_index(ember.tensor([4, 1, 7]), (3, 3))
        (tensor([1, 0, 2]), tensor([1, 1, 1]))
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): expected 'indices' to be a Tensor, but got "
                        f"{type(indices).__name__}")
    if indices.dtype.category != dt._INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"{repr(indices.dtype).replace('ember.', 'torch.')}")
    shape = _unravel_shape(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    indices = indices.to(dt.int64)
    coordinates, stride = [], 1
    for size in reversed(shape):
        coordinates.append(indices.div(stride, rounding_mode="floor").remainder(size))
        stride *= size
    return tuple(reversed(coordinates))
