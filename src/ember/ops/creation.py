"""Creation operators: tensors from sizes and fill values, ``*_like``, ranges, copies and casts.

Factories take torch's keyword arguments (``dtype``, ``device``, ``requires_grad``, ``out``) and
allocate with the device's array module.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dtype as dt
from .._device import META, canonical
from .._tensor import Tensor
from ._registry import defop, write_out

__all__ = ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like", "arange", "clone", "to_copy", "empty_strided"]


def parse_size(size):
    """Sizes given as ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])``, checked as torch does."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    elif len(size) == 1 and isinstance(size[0], Tensor):
        size = tuple(size[0].tolist()) if size[0].ndim else (int(size[0]),)
    result = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, (int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__} at pos {len(result)}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        result.append(int(s))
    return tuple(result)


def _target(dtype, device):
    return (dt.to_dtype(dtype) if dtype is not None else dt.get_default_dtype(),
            canonical(device) if device is not None else canonical("cpu"))


def _allocate(fill, shape, dtype, device):
    if device is META:
        return np.broadcast_to(np.zeros((), dtype.np), shape)
    xp = device.xp
    if device.type == "cuda":
        with xp.cuda.Device(device.index):
            return _fill(xp, fill, shape, dtype)
    return _fill(xp, fill, shape, dtype)


def _fill(xp, fill, shape, dtype):
    if fill is None:
        return xp.empty(shape, dtype.np)
    if fill == 0:
        return xp.zeros(shape, dtype.np)
    return xp.full(shape, fill, dtype.np)


def _factory(fill, shape, dtype, device, requires_grad, out, name):
    dtype, device = _target(dtype, device)
    result = Tensor._make(_allocate(fill, shape, dtype, device), device)
    if requires_grad:
        result.requires_grad_()
    return write_out(result, out, name) if out is not None else result


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    """A tensor of zeros.

    Example::

        >>> ember.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
    """
    return _factory(0, parse_size(size), dtype, device, requires_grad, out, "zeros")


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ones.

    Example::

        >>> ember.ones(2, dtype=ember.int64)
        tensor([1, 1])
    """
    return _factory(1, parse_size(size), dtype, device, requires_grad, out, "ones")


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None):
    """An uninitialised tensor (its values are whatever the memory held).

    Example::

        >>> ember.empty(2, 3).shape
        ember.Size([2, 3])
    """
    return _factory(None, parse_size(size), dtype, device, requires_grad, out, "empty")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given strides (in elements).

    Example::

        >>> ember.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    dtype, device = _target(dtype, device)
    size = parse_size((size,))
    extent = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    flat = _allocate(None, (extent,), dtype, device)
    if device is META:
        result = Tensor._make(np.broadcast_to(np.zeros((), dtype.np), size), device)
    else:
        array = device.xp.lib.stride_tricks.as_strided(
            flat, size, tuple(s * dtype.itemsize for s in stride))
        result = Tensor._make(array, device)
    if requires_grad:
        result.requires_grad_()
    return result


def _fill_dtype(fill_value):
    if isinstance(fill_value, Tensor):
        return fill_value.dtype
    return dt.scalar_dtype(fill_value)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    """A tensor filled with ``fill_value`` (its dtype inferred from the value, as torch does).

    Example::

        >>> ember.full((2,), 7)
        tensor([7, 7])
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = _fill_dtype(fill_value)
    return _factory(fill_value, parse_size((size,)), dtype, device, requires_grad, out, "full")


def _like(input, fill, dtype, device, requires_grad):
    dtype = dt.to_dtype(dtype) if dtype is not None else input.dtype
    device = canonical(device) if device is not None else input._device
    return _factory(fill, input._data.shape, dtype, device, requires_grad, None, "like")


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """Zeros with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.zeros_like(ember.tensor([1, 2]))
        tensor([0, 0])
    """
    return _like(input, 0, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """Ones with the shape (and by default dtype and device) of ``input``.

    Example::

        >>> ember.ones_like(ember.tensor([1., 2.]))
        tensor([1., 1.])
    """
    return _like(input, 1, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None):
    """An uninitialised tensor shaped like ``input``.

    Example::

        >>> ember.empty_like(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return _like(input, None, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """``fill_value`` everywhere, shaped like ``input``.

    Example::

        >>> ember.full_like(ember.zeros(2), 3.5)
        tensor([3.5000, 3.5000])
    """
    return _like(input, fill_value, dtype, device, requires_grad)


def _new_factory(fill):
    def new(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
            pin_memory=False):
        shape = parse_size(size)
        return _factory(fill, shape, dtype or self.dtype, device or self._device, requires_grad,
                        None, "new")
    return new


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False):
    return _factory(fill_value, parse_size((size,)), dtype or self.dtype,
                    device or self._device, requires_grad, None, "new_full")


Tensor.new_zeros = _new_factory(0)
Tensor.new_ones = _new_factory(1)
Tensor.new_empty = _new_factory(None)
Tensor.new_full = _new_full


# ---------------------------------------------------------------- ranges


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 if all are ints.

    Example::

        >>> ember.arange(5)
        tensor([0, 1, 2, 3, 4])
    """
    if end is None:
        start, end = 0, start
    start, end, step = (x.item() if isinstance(x, Tensor) else x for x in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        all_int = all(isinstance(x, (int, np.integer)) for x in (start, end, step))
        dtype = dt.int64 if all_int else dt.get_default_dtype()
    dtype, device = _target(dtype, device)
    count = builtins.max(0, math.ceil((end - start) / step))
    if device is META:
        array = np.broadcast_to(np.zeros((), dtype.np), (count,))
    else:
        xp = device.xp
        compute = np.float64 if dtype.is_floating_point else np.int64
        array = (xp.arange(count, dtype=compute) * step + start).astype(dtype.np)
    result = Tensor._make(array, device)
    if requires_grad:
        result.requires_grad_()
    return write_out(result, out, "arange") if out is not None else result


# ---------------------------------------------------------------- copies and casts


@defop("clone", meta=lambda a, **_: (a.shape, a.dtype), save_inputs=False)
def clone_op(xp, a, *, memory_format=None):
    return a.copy(order="C" if memory_format == "contiguous" else "K")


@clone_op.defderivative
def _clone_derivative(ctx, grad, **_):
    return (grad,)


def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own memory, still connected to the graph.

    Example::

        >>> a = ember.tensor([1, 2]); b = a.clone(); b[0] = 5; a
        tensor([1, 2])
    """
    return clone_op(input)


def _copy_kernel(xp, a, *, dtype, device):
    target = dtype.np if dtype is not None else a.dtype
    if device is None:
        return a.astype(target, copy=True)
    if device.type == "cuda":
        cupy = device.xp
        with cupy.cuda.Device(device.index):
            return cupy.asarray(a, dtype=target)
    if hasattr(a, "get"):
        return a.get().astype(target, copy=False)
    return np.array(a, dtype=target, copy=True)


@defop("_to_copy", meta=lambda a, *, dtype, device: (a.shape, dtype or a.dtype),
       save_inputs=False, grad_name="ToCopyBackward0")
def to_copy_op(xp, a, *, dtype, device):
    return _copy_kernel(xp, a, dtype=dtype, device=device)


@to_copy_op.defderivative
def _to_copy_derivative(ctx, grad, *, dtype, device):
    shape, np_dtype, source_device = ctx._input_meta[0]
    source_dtype = dt.from_numpy_dtype(np_dtype)
    if grad._data.dtype.kind == "c" and np_dtype.kind != "c":
        grad = grad.real
    return (grad.to(dtype=source_dtype, device=source_device),)


def to_copy(input, dtype=None, device=None):
    """A copy of ``input`` converted to ``dtype`` and/or moved to ``device``."""
    if device is not None and device != input._device:
        result = _move(input, device, dtype)
    else:
        result = to_copy_op(input, dtype=dtype, device=None)
    return result


def _move(input, device, dtype):
    from ..autograd import grad_mode
    from ..autograd.graph import record

    source = input._data
    if device is META:
        array = np.broadcast_to(np.zeros((), (dtype or input.dtype).np), source.shape)
    elif input._device is META:
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    else:
        array = _copy_kernel(None, source, dtype=dtype, device=device)
    result = Tensor._make(array, device)
    if input._rg and grad_mode.state.enabled:
        record(to_copy_op, (input,), {"dtype": dtype, "device": device}, result)
    return result


def contiguous(input, memory_format=None):
    """``input`` itself if contiguous, else a contiguous copy.

    Example::

        >>> ember.zeros(2, 3).t().contiguous().is_contiguous()
        True
    """
    if input.is_contiguous():
        return input
    return clone_op(input, memory_format="contiguous")


Tensor.clone = clone
Tensor.contiguous = contiguous
