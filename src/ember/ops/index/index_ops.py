"""The ``index_*`` ops along a dim: index_select, index_add, index_copy, index_fill,
index_reduce."""

from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from .._methods import inplace_method, tensor_method
from .._operands import wrap_dim
from .._registry import defop, write_out
from .._signature import signature
from .._util import scalar
from .._vmap_rules import batching
from ._kernels import (
    _INDEX_INT,
    _along,
    _at_least_1d,
    _check_range,
    _same_shape_meta,
    _short,
    _to_device,
    _ufunc_at,
    _zeros,
)
from .gather_scatter import _OOB, scatter_reduce

__all__ = ["index_select", "index_add", "index_copy", "index_fill", "index_reduce"]


# ---------------------------------------------------------------- index_select / index_add


def _index_dim_meta(a, idx, *, dim):
    shape = list(a.shape)
    if shape:
        shape[dim] = idx.size
    return tuple(shape), a.dtype


@defop("index_select", meta=_index_dim_meta, kind="indexing")
def index_select_op(xp, a, idx, *, dim):
    if a.ndim == 0:
        if idx.size != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{idx.size} value(s)")
        _check_range(xp, idx, 1, dim, "index out of range in self", IndexError)
        return a.copy()
    idx = idx.reshape(-1)
    _check_range(xp, idx, a.shape[dim], dim, "index out of range in self", IndexError)
    return xp.take(a, idx, axis=dim)


@index_select_op.defonnx
def _index_select_onnx(ctx, x, index, dim):
    return ctx.op("Gather", x, ctx.cast(index, ctx.in_dtype(1), "int64"), axis=ctx.axis(dim))


index_select_op.defbatch(batching.index_along_dim)


@index_select_op.defderivative
def _index_select_derivative(ctx, grad, *, dim):
    a, idx = ctx.inputs
    return index_add_op(_zeros(a.shape, grad), idx, grad, dim=dim, alpha=1), None


index_select_op.defjvp(_forward_ad.first_linear_jvp(index_select_op))


@tensor_method
@signature('index_select(Tensor input, int dim, Tensor index, *, Tensor? out=None) -> Tensor')
def index_select(input, dim, index, *, out=None):
    """The entries of ``input`` at positions ``index`` (a 1-D integer tensor) along ``dim``.

    Example::

        >>> ember.index_select(ember.tensor([[1, 2], [3, 4]]), 1, ember.tensor([1]))
        tensor([[2],
                [4]])
    """
    if not isinstance(index, Tensor):
        raise TypeError(f"index_select(): argument 'index' must be Tensor, not "
                        f"{type(index).__name__}")
    if index._data.dtype not in _INDEX_INT:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    dim = wrap_dim(dim, input._data.ndim)
    result = index_select_op(input, _to_device(index, input._device), dim=dim)
    return write_out(result, out, "index_select")


@defop("index_add", meta=_same_shape_meta, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def index_add_op(xp, a, idx, src, *, dim, alpha=1):
    out = a.copy()
    shape = out.shape
    out, src = _at_least_1d(out, src)
    idx = idx.reshape(-1)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        if alpha != 1:
            if out.dtype.kind in "iub":
                alpha = scalar(int(alpha), src.dtype)  # wraps, as torch's integer arithmetic
            src = (src * alpha).astype(out.dtype)
        _ufunc_at(xp, "add", out, _along(dim, idx), src)
    return out.reshape(shape)


index_add_op.defbatch(batching.index_along_dim)


@index_add_op.defderivative
def _index_add_derivative(ctx, grad, *, dim, alpha=1):
    _, idx, _ = ctx.inputs
    grad_src = None
    if ctx.needs_input_grad[2]:
        grad_src = index_select_op(grad, idx, dim=dim)
        src_shape = ctx.input_shapes[2]
        if grad_src._data.shape != src_shape:
            grad_src = grad_src.reshape(src_shape)
        if alpha != 1:
            grad_src = grad_src * alpha
    return grad, None, grad_src


def _check_index_along(name, input, dim, index, source):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    count = index._data.size
    if source is None:
        return
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(f"{name}(): self ({_short(input)}) and source ({_short(source)}) must "
                           f"have the same scalar type")
    sshape = source._data.shape
    ishape = input._data.shape
    if not sshape and count == 1 and name == "index_copy_" and len(ishape) == 1 and ishape[0]:
        return  # (torch copies a 0-dim source into the one indexed element)
    if not sshape and count != 1:  # a 0-dim source has no dim to count: torch's IndexError
        if name == "index_copy_":
            raise IndexError(f"index_copy_(): When source is scalar, index should have one "
                             f"element (got {count})")
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if len(sshape) != len(ishape) or any(
            s != t for d, (s, t) in enumerate(zip(ishape, sshape)) if d != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(ishape)} "
                           f"source.shape = {list(sshape)}")
    source_count = sshape[dim] if len(sshape) else 1
    if count != source_count:
        raise RuntimeError(f"{name}(): Number of indices ({count}) should be equal to "
                           f"source.size(dim): ({source_count}), for dim: {dim}")


@tensor_method
@signature("index_add(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1, "
           "Tensor? out=None) -> Tensor")
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """Add ``alpha * source`` into ``input`` at positions ``index`` along ``dim``
    (repeated indices accumulate).

    Example::

        >>> ember.zeros(3, 2).index_add(0, ember.tensor([0, 0]), ember.ones(2, 2))
        tensor([[2., 2.],
                [0., 0.],
                [0., 0.]])
    """
    dim = wrap_dim(dim, input._data.ndim)
    if isinstance(index, Tensor) and index._data.dtype not in _INDEX_INT:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_short(index)}")
    _check_index_along("index_add_", input, dim, index, source)
    result = index_add_op(input, _to_device(index, input._device),
                          _to_device(source, input._device), dim=dim, alpha=alpha)
    return write_out(result, out, "index_add")


tensor_method(inplace_method(index_add), "index_add_")


# ---------------------------------------------------------------- index_copy / index_fill


@defop("index_copy", meta=_same_shape_meta, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def index_copy_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, src = _at_least_1d(out, src)
    idx = idx.reshape(-1)
    _check_range(xp, idx, out.shape[dim], dim, "index_copy_(): " + _OOB, IndexError)
    if idx.size:
        out[_along(dim, idx)] = src
    return out.reshape(shape)


index_copy_op.defbatch(batching.index_along_dim)


@index_copy_op.defderivative
def _index_copy_derivative(ctx, grad, *, dim):
    _, idx, _ = ctx.inputs
    need_a, _, need_src = ctx.needs_input_grad
    grad_a = index_fill_op(grad, idx, dim=dim, value=0) if need_a else None
    grad_src = None
    if need_src:
        grad_src = index_select_op(grad, idx, dim=dim)
        if grad_src._data.shape != ctx.input_shapes[2]:
            grad_src = grad_src.reshape(ctx.input_shapes[2])
    return grad_a, None, grad_src


@tensor_method
@signature("index_copy(Tensor input, int dim, Tensor index, Tensor source, *, "
           "Tensor? out=None) -> Tensor")
def index_copy(input, dim, index, source, *, out=None):
    """Copy the slices of ``source`` into ``input`` at positions ``index`` along ``dim``.

    Example::

        >>> ember.zeros(3).index_copy(0, ember.tensor([2, 0]), ember.tensor([5., 6.]))
        tensor([6., 0., 5.])
    """
    dim = wrap_dim(dim, input._data.ndim)
    if isinstance(index, Tensor) and index._data.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_short(index)}")
    _check_index_along("index_copy_", input, dim, index, source)
    result = index_copy_op(input, _to_device(index, input._device),
                           _to_device(source, input._device), dim=dim)
    return write_out(result, out, "index_copy")


tensor_method(inplace_method(index_copy), "index_copy_")


@defop("index_fill", meta=_same_shape_meta, grad_name="IndexFillBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def index_fill_op(xp, a, idx, *, dim, value):
    out = a.copy()
    shape = out.shape
    (out,) = _at_least_1d(out)
    idx = idx.reshape(-1)
    _check_range(xp, idx, out.shape[dim], dim, "index {index} is out of bounds for dimension "
                 "{dim} with size {size}", IndexError, negative=True)
    if idx.size:
        out[_along(dim, idx)] = value
    return out.reshape(shape)


index_fill_op.defbatch(batching.index_along_dim)


@index_fill_op.defderivative
def _index_fill_derivative(ctx, grad, *, dim, value):
    return index_fill_op(grad, ctx.inputs[1], dim=dim, value=0), None


def _check_fill_storage(input, dim, index):
    """torch's RuntimeError for filling a non-empty slice of a tensor that holds no elements
    (its kernel finds the storage too small before any index check): an empty ``dim`` and
    elements in the other dims."""
    shape = input._data.shape
    if not index._data.size or (shape and shape[dim] != 0) or not shape:
        return
    if all(n for i, n in enumerate(shape) if i != dim):
        raise RuntimeError(f"index_fill_(): index {int(index._data.reshape(-1)[0])} is out of "
                           f"bounds for dimension {dim} with size 0: the tensor holds no "
                           f"elements to fill")


@tensor_method
@signature("index_fill(Tensor input, int dim, Tensor index, PyObject value) -> Tensor",
           overloaded="all")
def index_fill(input, dim, index, value):
    """Fill the slices of ``input`` at positions ``index`` along ``dim`` with ``value``
    (a number or a 0-dim tensor).

    Example::

        >>> ember.zeros(2, 3).index_fill(1, ember.tensor([0, 2]), 7.)
        tensor([[7., 0., 7.],
                [7., 0., 7.]])
    """
    dim = wrap_dim(dim, input._data.ndim)
    if isinstance(index, Tensor) and index._data.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    _check_index_along("index_fill_", input, dim, index, None)
    _check_fill_storage(input, dim, index)
    if not input._data.size:  # nothing to fill, nor to check the indices against (as torch)
        return input.clone()
    index = _to_device(index, input._device)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        if (value._rg and grad_mode.state.enabled) or _forward_ad.is_dual(value):
            from ..pointwise import where

            mask = index_fill_op(_zeros(input.shape, input).to(dt.bool), index, dim=dim,
                                 value=True)
            return where(mask, value.to(input.dtype), input)
        value = value.item()
    return index_fill_op(input, index, dim=dim, value=value)


tensor_method(inplace_method(index_fill), "index_fill_")


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


@tensor_method
@signature("index_reduce(Tensor input, int dim, Tensor index, Tensor source, str reduce, *, "
           "bool include_self=True, Tensor? out=None) -> Tensor")
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """Reduce the slices of ``source`` into ``input`` at positions ``index`` along ``dim``
    with ``prod``, ``mean``, ``amax`` or ``amin`` (``include_self=False``: the old values of
    the reached slices take no part).

    Example::

        >>> ember.ones(3).index_reduce(0, ember.tensor([0, 0, 2]), ember.tensor([2., 4., 8.]),
        ...                            "prod")
        tensor([8., 1., 8.])
    """
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    dim = wrap_dim(dim, input._data.ndim)
    if isinstance(index, Tensor) and index._data.dtype not in _INDEX_INT:
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_short(index)}")
    _check_index_along("index_reduce_", input, dim, index, source)
    index = _to_device(index, input._device).to(dt.int64)
    limit = input.shape[dim] if input.ndim else 1
    if index.numel() and (int(index.max()) >= limit or int(index.min()) < 0):
        raise IndexError("index out of range in self")
    # each slice of ``source`` goes to one position: spread the index over source's shape
    spread = index.reshape([-1 if d == dim else 1 for d in range(source.ndim)])
    spread = spread.expand(source.shape) if source.ndim else spread.reshape(())
    result = scatter_reduce(input, dim, spread, _to_device(source, input._device), reduce,
                            include_self=include_self)
    return write_out(result, out, "index_reduce")


tensor_method(inplace_method(index_reduce), "index_reduce_")
