"""Views that pick elements: narrow, select, slicing, diagonal, unfold, as_strided, and the
strided scatter/gather pair their derivatives scatter the gradient back with."""

from __future__ import annotations

import builtins

import numpy as np

from ..._device import META
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import Op, defop, write_out
from .._signature import signature
from .._util import scatter_add
from .._vmap_rules import batching
from ._geometry import (
    _array_strides,
    _contiguous_strides,
    _inplace_view,
    _int,
    _overlapping,
    _strided,
)

__all__ = ["narrow", "narrow_copy", "select", "diagonal", "as_strided"]


# ================================================================ strided scatter / gather
#
# Gradients of views that pick (possibly repeated) elements. Both ops address a *contiguous*
# array of shape ``shape`` through (size, stride, offset); each is the other's derivative.


def _flat_indices(xp, size, stride, offset):
    index = xp.full((), offset, dtype=np.int64)
    for n, s in zip(size, stride):
        index = index[..., None] + xp.arange(n, dtype=np.int64) * s
    return index.reshape(-1)


_add_at = scatter_add  # ``out[index] += values``, accumulating repeated indices


@defop("strided_scatter", meta=lambda g, *, shape, **_: (shape, g.dtype), save_inputs=False,
       grad_name="AsStridedBackward0", kind="shape",
       opt_outs={"onnx": "arbitrary strides: ONNX tensors have none"})
def strided_scatter_op(xp, g, *, shape, size, stride, offset):
    out = xp.zeros(shape, dtype=g.dtype)
    if not _overlapping(size, stride):
        _strided(xp, out, size, stride, offset)[...] = g
        return out
    flat = out.reshape(-1)
    _add_at(xp, flat, _flat_indices(xp, size, stride, offset), g.reshape(-1))
    return out


strided_scatter_op.defbatch(batching.strided)


@defop("strided_gather", meta=lambda a, *, size, **_: (size, a.dtype), save_inputs=False,
       grad_name="AsStridedBackward1", kind="shape",
       opt_outs={"onnx": "arbitrary strides: ONNX tensors have none"})
def strided_gather_op(xp, a, *, size, stride, offset):
    a = xp.ascontiguousarray(a)
    return _strided(xp, a, size, stride, offset).copy()


strided_gather_op.defbatch(batching.strided)


@strided_scatter_op.defderivative
def _strided_scatter_derivative(ctx, grad, *, shape, size, stride, offset):
    return (strided_gather_op(grad, size=size, stride=stride, offset=offset),)


@strided_gather_op.defderivative
def _strided_gather_derivative(ctx, grad, *, size, stride, offset):
    return (strided_scatter_op(grad, shape=ctx._input_meta[0][0], size=size, stride=stride,
                               offset=offset),)


# ================================================================ slicing views


def _key_geometry(shape, strides, key):
    """Shape, strides and offset of ``a[key]`` (``key``: per leading dim an int or a
    normalised ``(start, stop, step)``), computed as torch does, even for empty slices."""
    size, stride, offset = [], [], 0
    for d, k in enumerate(key):
        if isinstance(k, tuple):
            start, stop, step = k
            if start is None:
                size.append(shape[d])
                stride.append(strides[d])
                continue
            size.append(builtins.max(0, -(-(stop - start) // step)))
            stride.append(strides[d] * step)
            offset += start * strides[d]
        else:
            offset += k * strides[d]
    rest = len(key)
    return tuple(size) + tuple(shape[rest:]), tuple(stride) + tuple(strides[rest:]), offset


def _key_kernel(xp, a, *, key):
    result = a[tuple(slice(*k) if isinstance(k, tuple) else k for k in key) + (Ellipsis,)]
    if result.size:  # NumPy's slicing has torch's strides and offset when not empty
        return result
    size, stride, offset = _key_geometry(a.shape, _array_strides(a), key)
    return _strided(xp, a, size, stride, offset)


def _key_meta(a, *, key):
    return _key_geometry(a.shape, _contiguous_strides(a.shape), key)[0], a.dtype


slice_op = Op("slice", _key_kernel, meta=_key_meta, save_inputs=False, view=True, kind="view")
select_op = Op("select", _key_kernel, meta=_key_meta, save_inputs=False, view=True,
               grad_name="SelectBackward0", kind="view")


def _key_onnx(ctx, x, key):
    """slice/select: a key normalised by the traced call, one item per axis (``(start, stop,
    step)``, ``(None, ...)`` for the whole axis, or an int)."""
    items = [slice(*k) if isinstance(k, tuple) and k[0] is not None
             else slice(None) if isinstance(k, tuple) else k for k in key]
    return ctx.basic_index(x, items)


slice_op.defonnx(_key_onnx)
select_op.defonnx(_key_onnx)
select_op.defbatch(batching.leading_key)
slice_op.defbatch(batching.leading_key)


@defop("slice_backward", meta=lambda g, *, shape, key: (shape, g.dtype), save_inputs=False,
       kind="shape", opt_outs={"onnx": "a backward kernel: exported models run inference"})
def slice_backward_op(xp, g, *, shape, key):
    out = xp.zeros(shape, dtype=g.dtype)
    size, stride, offset = _key_geometry(shape, _contiguous_strides(shape), key)
    _strided(xp, out, size, stride, offset)[...] = g
    return out


slice_backward_op.defbatch(batching.leading_key)


def _key_derivative(ctx, grad, *, key):
    return (slice_backward_op(grad, shape=ctx._input_meta[0][0], key=key),)


slice_op.defderivative(_key_derivative)
select_op.defderivative(_key_derivative)


@slice_backward_op.defderivative
def _slice_backward_derivative(ctx, grad, *, shape, key):
    return (slice_op(grad, key=key),)


def _slice(input, dim, start, stop, step=1):
    key = ((None, None, None),) * dim + ((start, stop, step),)
    return slice_op(input, key=key)


@tensor_method
@signature("narrow(Tensor input, int dim, PyObject start, SymInt length) -> Tensor",
           overloaded="all")
def narrow(input, dim, start, length):
    """A view of ``length`` elements of dim ``dim`` from ``start`` (which may be negative).

    Example::

        >>> ember.arange(6).narrow(0, 2, 3)
        tensor([2, 3, 4])
    """
    if input._data.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(_int(dim, "dim"), input._data.ndim)
    start, length = _int(start, "start"), _int(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return _slice(input, dim, start, start + length)


@tensor_method
@signature("narrow_copy(Tensor input, int dim, SymInt start, SymInt length, *, "
           "Tensor? out=None) -> Tensor")
def narrow_copy(input, dim, start, length, *, out=None):
    """A contiguous copy of ``length`` elements of dim ``dim`` from ``start`` (as
    :func:`narrow`, but in new memory).

    Example::

        >>> ember.arange(6).view(2, 3).narrow_copy(1, 1, 2)
        tensor([[1, 2],
                [4, 5]])
    """
    from ..creation import clone_op

    if isinstance(dim, int) and 0 < input._data.ndim <= dim:
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.")
    return write_out(clone_op(narrow(input, dim, start, length), memory_format="contiguous"),
                     out, "narrow_copy")


@tensor_method
@signature('select(Tensor input, int dim, SymInt index) -> Tensor')
def select(input, dim, index):
    """A view of the slice at ``index`` of dim ``dim``, without that dim.

    Example::

        >>> ember.arange(6).view(2, 3).select(1, -1)
        tensor([2, 5])
    """
    ndim = input._data.ndim
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(_int(dim, "dim"), ndim)
    index = _int(index, "index")
    size = input._data.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input._data.shape)} at dimension {dim}")
    if index < 0:
        index += size
    return select_op(input, key=((None, None, None),) * dim + (index,))


# ================================================================ diagonal / unfold / as_strided


def _diagonal_geometry(shape, strides, offset, dim1, dim2):
    n1, n2 = shape[dim1], shape[dim2]
    if offset >= 0:
        length = builtins.max(builtins.min(n1, n2 - offset), 0)
        start = offset * strides[dim2] if length else 0
    else:
        length = builtins.max(builtins.min(n1 + offset, n2), 0)
        start = -offset * strides[dim1] if length else 0
    keep = [i for i in range(len(shape)) if i not in (dim1, dim2)]
    size = tuple(shape[i] for i in keep) + (length,)
    stride = tuple(strides[i] for i in keep) + (strides[dim1] + strides[dim2],)
    return size, stride, start


@defop("diagonal", meta=lambda a, *, offset, dim1, dim2: (
    _diagonal_geometry(a.shape, _contiguous_strides(a.shape), offset, dim1, dim2)[0], a.dtype),
    save_inputs=False, view=True, kind="view",
       opt_outs={"onnx": "not mapped yet (a Gather of the diagonal's positions)"})
def diagonal_op(xp, a, *, offset, dim1, dim2):
    size, stride, start = _diagonal_geometry(a.shape, _array_strides(a), offset, dim1, dim2)
    return _strided(xp, a, size, stride, start)


diagonal_op.defbatch(batching.diagonal)


@diagonal_op.defderivative
def _diagonal_derivative(ctx, grad, *, offset, dim1, dim2):
    shape = ctx._input_meta[0][0]
    size, stride, start = _diagonal_geometry(shape, _contiguous_strides(shape), offset, dim1,
                                             dim2)
    return (strided_scatter_op(grad, shape=shape, size=size, stride=stride, offset=start),)


@tensor_method
@signature('diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor')
def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of dims ``dim1``/``dim2`` (above it for ``offset > 0``), as the
    last dim.

    Example::

        >>> ember.arange(9).view(3, 3).diagonal(1)
        tensor([1, 5])
    """
    ndim = input._data.ndim
    if ndim < 2:
        wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    d1, d2 = wrap_dim(_int(dim1, "dim1"), ndim), wrap_dim(_int(dim2, "dim2"), ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op(input, offset=_int(offset, "offset"), dim1=d1, dim2=d2)


def _unfold_geometry(shape, strides, dim, size, step):
    if not shape:
        return (size,), (1,)
    new_shape = list(shape) + [size]
    new_strides = list(strides) + [strides[dim]]
    new_shape[dim] = (shape[dim] - size) // step + 1
    new_strides[dim] = step * strides[dim]
    return tuple(new_shape), tuple(new_strides)


@defop("unfold", meta=lambda a, *, dimension, size, step: (
    _unfold_geometry(a.shape, _contiguous_strides(a.shape), dimension, size, step)[0], a.dtype),
    save_inputs=False, view=True, kind="view",
       opt_outs={"onnx": "not mapped yet (torch composes it from Gather nodes)"})
def unfold_op(xp, a, *, dimension, size, step):
    shape, strides = _unfold_geometry(a.shape, _array_strides(a), dimension, size, step)
    return _strided(xp, a, shape, strides, check_overlap=True)


unfold_op.defbatch(batching.unfold)


@unfold_op.defderivative
def _unfold_derivative(ctx, grad, *, dimension, size, step):
    shape = ctx._input_meta[0][0]
    out_shape, strides = _unfold_geometry(shape, _contiguous_strides(shape), dimension, size,
                                          step)
    return (strided_scatter_op(grad, shape=shape, size=out_shape, stride=strides, offset=0),)


@tensor_method("unfold")
def _unfold(self, dimension, size, step):
    """A view of all windows of ``size`` elements along ``dimension``, ``step`` apart, as a new
    last dim.

    Example::

        >>> ember.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    ndim = self._data.ndim
    dimension = wrap_dim(_int(dimension, "dimension"), ndim)
    size, step = _int(size, "size"), _int(step, "step")
    max_size = self._data.shape[dimension] if ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {dimension} is {max_size} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return unfold_op(self, dimension=dimension, size=size, step=step)


@defop("as_strided", meta=lambda a, *, size, **_: (size, a.dtype), save_inputs=False,
       view=True, kind="view", opt_outs={"onnx": "arbitrary strides: ONNX tensors have none"})
def as_strided_op(xp, a, *, size, stride, offset, in_geometry):
    return _strided(xp, a, size, stride, offset - in_geometry[2], check_overlap=True)


as_strided_op.defbatch(batching.as_strided)


@as_strided_op.defderivative
def _as_strided_derivative(ctx, grad, *, size, stride, offset, in_geometry):
    in_shape, in_stride, in_offset = in_geometry
    lo = builtins.min(offset, in_offset)
    extent = builtins.max(_extent(size, stride, offset), _extent(in_shape, in_stride, in_offset))
    length = builtins.max(extent - lo, 0)
    storage = strided_scatter_op(grad, shape=(length,), size=size, stride=stride,
                                 offset=offset - lo)
    if _overlapping(in_shape, in_stride):
        from ..creation import ones

        count = strided_scatter_op(ones(in_shape, dtype=grad.dtype, device=grad.device),
                                   shape=(length,), size=in_shape, stride=in_stride,
                                   offset=in_offset - lo)
        storage = storage / (count + (count == 0))
    return (strided_gather_op(storage, size=in_shape, stride=in_stride,
                              offset=in_offset - lo),)


def _extent(shape, strides, offset):
    if any(s == 0 for s in shape):
        return offset
    return offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1


@tensor_method
def as_strided(input, size, stride, storage_offset=None):
    """A view with any ``size``, ``stride`` and ``storage_offset`` (counted from the start of
    the tensor's storage, as torch does; default: the tensor's own offset).

    Example::

        >>> ember.arange(6).as_strided((2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]])
    """
    size = tuple(_int(s, "size") for s in size)
    stride = tuple(_int(s, "stride") for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    own_offset = input.storage_offset()
    offset = own_offset if storage_offset is None else _int(storage_offset, "storage_offset")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if input._device is not META:
        item = input._data.dtype.itemsize
        available = input.untyped_storage().nbytes()
        needed = _extent(size, stride, offset) * item if all(size) else 0
        if needed > available:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                               f"offset {offset}, and itemsize {item} requiring a storage size "
                               f"of {needed} are out of bounds for storage of size {available}")
    geometry = (input._data.shape, input.stride(), own_offset)
    return as_strided_op(input, size=size, stride=stride, offset=offset, in_geometry=geometry)


tensor_method(_inplace_view(as_strided), "as_strided_")
