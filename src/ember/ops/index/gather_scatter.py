"""Gather and scatter along a dim: gather, scatter, scatter_add, scatter_reduce, and the
``*_scatter`` ops (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter: a copy
of the input with a view of it overwritten)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from .._methods import inplace_method, tensor_method
from .._operands import scalar_tensor, wrap_dim
from .._registry import defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._kernels import (
    _INDEX_INT,
    _at_least_1d,
    _check_range,
    _prefix,
    _same_shape_meta,
    _scatter_key,
    _to_device,
    _ufunc_at,
    _zeros,
)

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "slice_scatter", "select_scatter",
           "diagonal_scatter", "as_strided_scatter"]


# ---------------------------------------------------------------- gather


_OOB = "index {index} is out of bounds for dimension {dim} with size {size}"


@defop("gather", meta=lambda a, idx, *, dim: (idx.shape, a.dtype), kind="indexing")
def gather_op(xp, a, idx, *, dim):
    shape = idx.shape
    a, idx = _at_least_1d(a, idx)
    _check_range(xp, idx, a.shape[dim], dim, _OOB)
    if idx.size == 0:
        return xp.empty(shape, a.dtype)
    region = tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(idx.shape))
    return xp.take_along_axis(a[region], idx, axis=dim).reshape(shape)


@gather_op.defonnx
def _gather_onnx(ctx, x, index, dim):
    index = ctx.cast(index, ctx.in_dtype(1), "int64")
    if not ctx.in_dims(0):  # GatherElements needs an axis: gather from x as one element
        flat = ctx.int64s([-1])
        picked = ctx.op("GatherElements", ctx.op("Reshape", x, flat),
                        ctx.op("Reshape", index, flat), axis=0)
        return ctx.op("Reshape", picked, ctx.shape_tensor(list(ctx.out_dims())))
    return ctx.op("GatherElements", x, index, axis=ctx.axis(dim))


gather_op.defbatch(batching.along_dim)


@gather_op.defderivative
def _gather_derivative(ctx, grad, *, dim):
    a, idx = ctx.inputs
    if _trace_state.tracer is None:   # traces (jit, vmap) record scatter_add, which they batch
        return _gather_backward_op(grad, idx, dim=dim, shape=tuple(a.shape)), None
    return scatter_add_op(_zeros(a.shape, grad), idx, grad, dim=dim), None


gather_op.defjvp(_forward_ad.first_linear_jvp(gather_op))


@defop("_gather_backward", meta=lambda grad, idx, *, dim, shape: (shape, grad.dtype),
       grad_name="ScatterAddBackward0", kind="indexing",
       opt_outs={"onnx": "a backward kernel: exported models run inference"})
def _gather_backward_op(xp, grad, idx, *, dim, shape):
    """``zeros(shape).scatter_add(dim, idx, grad)``, gather's input gradient, added straight
    into fresh zeros (scatter_add's out-of-place kernel would first copy a zero block as
    large as the input: 28 MB for a 700x10000 cross entropy).

    Example::

        >>> _gather_backward_op(ember.ones(2, 1), ember.tensor([[1], [0]]), dim=1, shape=(2, 2))
        tensor([[0., 1.],
                [1., 0.]])
    """
    out = xp.zeros(shape, grad.dtype)
    if idx.size:
        flat, idx, grad = _at_least_1d(out, idx, grad)
        _ufunc_at(xp, "add", flat, _scatter_key(xp, idx, dim), _prefix(grad, idx.shape))
    return out


@_gather_backward_op.defderivative
def _gather_backward_derivative(ctx, grad, *, dim, shape):
    return gather_op(grad, ctx.inputs[1], dim=dim), None


_gather_backward_op.defjvp(_forward_ad.first_linear_jvp(_gather_backward_op))
_gather_backward_op.opt_out("batch", "used only while no trace records (vmap batches "
                            "gather's derivative as scatter_add)")


def _check_gather_shapes(name, input, dim, index, src=None):
    ndim = builtins.max(input._data.ndim, 1)
    if builtins.max(index._data.ndim, 1) != ndim:
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if name == 'gather' else 'self'} tensor")
    if src is not None and builtins.max(src._data.ndim, 1) != ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ishape = index._data.shape or (1,)
    sshape = input._data.shape or (1,)
    for d in range(len(ishape)):
        if d == dim:
            continue
        if ishape[d] > sshape[d]:
            if name == "gather":
                raise RuntimeError(f"Size does not match at dimension {d} expected index "
                                   f"{list(index.shape)} to be no larger than self "
                                   f"{list(input.shape)} apart from dimension {dim}")
            _scatter_shape_error(input, dim, index, src)
    if src is not None and index._data.size:
        srcshape = src._data.shape or (1,)
        if any(ishape[d] > srcshape[d] for d in range(len(ishape))):
            _scatter_shape_error(input, dim, index, src)


def _scatter_shape_error(input, dim, index, src):
    message = (f"Expected index {list(index.shape)} to be no larger than self "
               f"{list(input.shape)} apart from dimension {dim}")
    if src is not None:
        message += f" and to be no larger size than src {list(src.shape)}"
    raise RuntimeError(message)


def _check_long_index(name, index):
    """``index``, checked to be an integer tensor; an empty one of any dtype passes (as in
    torch), converted to int64."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype not in _INDEX_INT:
        if index._data.size == 0:
            return index.long()
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    return index


@signature("gather(Tensor input, int dim, Tensor index, *, bool sparse_grad=False,"
           " Tensor? out=None) -> Tensor")
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Pick values along ``dim``: ``out[i][j] = input[index[i][j]][j]`` for ``dim=0``.

    Example::

        >>> ember.gather(ember.tensor([[1, 2], [3, 4]]), 1, ember.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    index = _check_long_index("gather", index)
    dim = wrap_dim(dim, input._data.ndim)
    if index._data.size == 0 and index._data.ndim != input._data.ndim:
        # torch accepts an empty index of any shape: an empty result of that shape
        return write_out(input.reshape(-1)[:0].reshape(index.shape), out, "gather")
    _check_gather_shapes("gather", input, dim, index)
    return write_out(gather_op(input, _to_device(index, input._device), dim=dim), out, "gather")


@tensor_method("gather")
def _gather_method(self, dim, index, *, sparse_grad=False):
    return gather(self, dim, index, sparse_grad=sparse_grad)


# ---------------------------------------------------------------- scatter family


@defop("scatter", meta=_same_shape_meta, grad_name="ScatterBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def scatter_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, idx, src = _at_least_1d(out, idx, src)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        out[_scatter_key(xp, idx, dim)] = _prefix(src, idx.shape)
    return out.reshape(shape)


scatter_op.defbatch(batching.along_dim)


@scatter_op.defderivative
def _scatter_derivative(ctx, grad, *, dim):
    _, idx, _ = ctx.inputs
    need_a, _, need_src = ctx.needs_input_grad
    grad_a = scatter_value_op(grad, idx, dim=dim, value=0) if need_a else None
    grad_src = gather_op(grad, idx, dim=dim) if need_src else None
    return grad_a, None, grad_src


def _scatter_jvp(p, t, y, *, dim):
    """scatter is linear in ``input`` and ``src``: the same scatter of their tangents, so
    where an index repeats the tangent comes from the same (last) write as the value."""
    (a, idx, src), (ta, _, tsrc) = p, t
    ta = a.new_zeros(a._data.shape) if ta is None else ta
    tsrc = src.new_zeros(src._data.shape) if tsrc is None else tsrc
    return scatter_op(ta, idx, tsrc, dim=dim)


scatter_op.jvp = _scatter_jvp


@defop("scatter_value", meta=_same_shape_meta, grad_name="ScatterBackward1", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def scatter_value_op(xp, a, idx, *, dim, value):
    out = a.copy()
    shape = out.shape
    out, idx = _at_least_1d(out, idx)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        out[_scatter_key(xp, idx, dim)] = value
    return out.reshape(shape)


scatter_value_op.defbatch(batching.along_dim)


@scatter_value_op.defderivative
def _scatter_value_derivative(ctx, grad, *, dim, value):
    return scatter_value_op(grad, ctx.inputs[1], dim=dim, value=0), None


@defop("scatter_add", meta=_same_shape_meta, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def scatter_add_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, idx, src = _at_least_1d(out, idx, src)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        _ufunc_at(xp, "add", out, _scatter_key(xp, idx, dim), _prefix(src, idx.shape))
    return out.reshape(shape)


scatter_add_op.defbatch(batching.along_dim)


@scatter_add_op.defderivative
def _scatter_add_derivative(ctx, grad, *, dim):
    idx = ctx.inputs[1]
    need_src = ctx.needs_input_grad[2]
    return grad, None, (gather_op(grad, idx, dim=dim) if need_src else None)


_REDUCE_UFUNC = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum",
                 "mean": "add", "add": "add", "multiply": "multiply"}


def _identity(xp, reduce, dtype):
    if reduce in ("sum", "mean", "add"):
        return 0
    if reduce in ("prod", "multiply"):
        return 1
    if dtype.kind == "f" or dt.is_bfloat16_array_dtype(dtype):
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@defop("scatter_reduce", meta=_same_shape_meta, grad_name="ScatterReduceBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterElements computes it)"})
def scatter_reduce_op(xp, a, idx, src, *, dim, reduce, include_self=True):
    out = a.copy()
    shape = out.shape
    out, idx, src = _at_least_1d(out, idx, src)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if not idx.size:
        return out.reshape(shape)
    key = _scatter_key(xp, idx, dim)
    src = _prefix(src, idx.shape)
    if not include_self:
        out[key] = _identity(xp, reduce, out.dtype)
    _ufunc_at(xp, _REDUCE_UFUNC[reduce], out, key, src)
    if reduce == "mean":
        count = xp.full(out.shape, 1 if include_self else 0, dtype=np.int64)
        _ufunc_at(xp, "add", count, key, xp.ones(idx.shape, np.int64))
        count = xp.maximum(count, 1)
        if out.dtype.kind in "iub":
            out = xp.floor_divide(out, count).astype(out.dtype)
        else:
            out = (out / count.astype(out.dtype)).astype(out.dtype)
    return out.reshape(shape)


scatter_reduce_op.defbatch(batching.along_dim)


@scatter_reduce_op.defderivative
def _scatter_reduce_derivative(ctx, grad, *, dim, reduce, include_self=True):
    a, idx, src = ctx.inputs
    if reduce in ("add", "multiply"):
        raise RuntimeError("derivative for aten::scatter is not implemented")
    result = ctx.output
    if reduce == "sum":
        grad_a, grad_src = grad, gather_op(grad, idx, dim=dim)
    elif reduce == "prod":
        grad_a, grad_src = _prod_grads(a, idx, src, grad, result, dim, include_self)
    elif reduce == "mean":
        ones_src = _ones_like(src)
        count = scatter_add_op(_ones_like(a) if include_self else _zeros(a.shape, a), idx,
                               ones_src, dim=dim)
        count = count.masked_fill(count == 0, 1)
        grad_a = grad / count
        grad_src = gather_op(grad_a, idx, dim=dim)
    else:
        value = gather_op(result, idx, dim=dim)
        a_is_result = (a == result).to(grad.dtype)
        src_is_result = (src == value).to(grad.dtype)
        count = scatter_add_op(a_is_result, idx, src_is_result, dim=dim)
        distributed = grad / count
        grad_a = a_is_result * distributed
        grad_src = src_is_result * gather_op(distributed, idx, dim=dim)
    if not include_self:
        grad_a = scatter_value_op(grad_a, idx, dim=dim, value=0)
    return grad_a, None, grad_src


def _ones_like(t):
    from ..creation import ones

    return ones(t.shape, dtype=t.dtype, device=t._device)


def _prod_grads(a, idx, src, grad, result, dim, include_self):
    """Gradients of a scatter product, exact where one factor of a product is zero."""
    masked_a = a.masked_fill(a == 0, 1)
    masked_a_result = scatter_reduce_op(masked_a, idx, src, dim=dim, reduce="prod",
                                        include_self=include_self)
    grad_a = grad * masked_a_result / masked_a
    src_zero = src == 0
    zeros_per_slot = scatter_add_op(_zeros(a.shape, a), idx, src_zero.to(a.dtype), dim=dim)
    from ..pointwise import where

    single_zero = where(src_zero, gather_op(zeros_per_slot, idx, dim=dim) == 1, src_zero)
    masked_src = src.masked_fill(single_zero, 1)
    masked_src_result = scatter_reduce_op(a, idx, masked_src, dim=dim, reduce="prod",
                                          include_self=include_self)

    grad_src = where(single_zero, gather_op(grad * masked_src_result, idx, dim=dim),
                     gather_op(grad * result, idx, dim=dim) / src.masked_fill(src_zero, 1))
    return grad_a, grad_src


def _scalar_value(value, dtype, device):
    if isinstance(value, Tensor):
        return value.to(dtype=dtype, device=device)
    return scalar_tensor(value, dtype, device)


@signature("scatter(Tensor input, int dim, Tensor index, Tensor? src=None, *, "
           "Scalar? value=None, str? reduce=None, Tensor? out=None) -> Tensor",
           overloaded="all", numbers_as_tensors=("src",))
def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """Write ``src`` (a tensor or a number) into ``input`` at ``index`` along ``dim``.

    ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``. ``reduce='add'|'multiply'`` combines
    with the existing values instead.

    Example::

        >>> ember.zeros(2, 3).scatter(0, ember.tensor([[1, 0, 1]]), 5.)
        tensor([[0., 5., 0.],
                [5., 0., 5.]])
    """
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    index = _check_long_index("scatter", index)
    dim = wrap_dim(dim, input._data.ndim)
    index = _to_device(index, input._device)
    is_tensor = isinstance(src, Tensor)
    if is_tensor and src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_gather_shapes("scatter", input, dim, index, src if is_tensor else None)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if not is_tensor:
            from ..creation import full

            src = full(index.shape, src, dtype=input.dtype, device=input._device)
        result = scatter_reduce_op(input, index, _to_device(src, input._device), dim=dim,
                                   reduce=reduce)
    elif is_tensor:
        result = scatter_op(input, index, _to_device(src, input._device), dim=dim)
    else:
        result = scatter_value_op(input, index, dim=dim, value=src)
    return write_out(result, out, "scatter")


@tensor_method("scatter")
def _scatter_method(self, dim, index, src=None, *, value=None, reduce=None):
    return scatter(self, dim, index, src, value=value, reduce=reduce)


tensor_method(inplace_method(_scatter_method, "scatter"), "scatter_")


@tensor_method
@signature("scatter_add(Tensor input, int dim, Tensor index, Tensor src, *, "
           "Tensor? out=None) -> Tensor")
def scatter_add(input, dim, index, src, *, out=None):
    """Add ``src`` into ``input`` at ``index`` along ``dim`` (repeated indices accumulate).

    Example::

        >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.tensor([1., 2., 3.]))
        tensor([3., 0., 3.])
    """
    index = _check_long_index("scatter", index)
    dim = wrap_dim(dim, input._data.ndim)
    if src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    index = _to_device(index, input._device)
    _check_gather_shapes("scatter_add", input, dim, index, src)
    return write_out(scatter_add_op(input, index, _to_device(src, input._device), dim=dim),
                     out, "scatter_add")


tensor_method(inplace_method(scatter_add), "scatter_add_")


@tensor_method
@signature("scatter_reduce(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, "
           "bool include_self=True, Tensor? out=None) -> Tensor")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with ``sum``, ``prod``,
    ``mean``, ``amax`` or ``amin`` (``include_self=False`` leaves out the old values).

    Example::

        >>> ember.tensor([1., 2.]).scatter_reduce(0, ember.tensor([0, 0]),
        ...                                      ember.tensor([5., 3.]), "amax")
        tensor([5., 2.])
    """
    index = _check_long_index("scatter", index)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    dim = wrap_dim(dim, input._data.ndim)
    if src._data.dtype != input._data.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    index = _to_device(index, input._device)
    _check_gather_shapes("scatter_reduce", input, dim, index, src)
    result = scatter_reduce_op(input, index, _to_device(src, input._device), dim=dim,
                               reduce=reduce, include_self=builtins.bool(include_self))
    return write_out(result, out, "scatter_reduce")


tensor_method(inplace_method(scatter_reduce), "scatter_reduce_")


scatter_reduce_op.save_output = True


def _scatter_into_view(input, src, name, view_of):
    """A copy of ``input`` whose view ``view_of(copy)`` holds ``src``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not isinstance(src, Tensor):
        raise TypeError(f"{name}(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    result = input.clone(memory_format=None)
    target = view_of(result)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(target.shape)}")
    target.copy_(src)
    return result


@tensor_method
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by
    ``src``.

    Example::

        >>> ember.slice_scatter(ember.zeros(4), ember.ones(2), 0, 1, 3)
        tensor([0., 1., 1., 0.])
    """
    if step <= 0:
        raise RuntimeError("slice step must be positive")

    def view_of(t):
        key = [slice(None)] * t.ndim
        key[wrap_dim(dim, t.ndim)] = slice(start, end, step)
        return t[tuple(key)]
    return _scatter_into_view(input, src, "slice_scatter", view_of)


@tensor_method
def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src``.

    Example::

        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    return _scatter_into_view(input, src, "select_scatter", lambda t: t.select(dim, index))


@tensor_method
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``.

    Example::

        >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _scatter_into_view(input, src, "diagonal_scatter",
                              lambda t: t.diagonal(offset, dim1, dim2))


@tensor_method
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``input.as_strided(size, stride, storage_offset)`` replaced by
    ``src`` (the geometry counts in the copy's contiguous storage).

    Example::

        >>> ember.as_strided_scatter(ember.zeros(4), ember.ones(2), (2,), (2,))
        tensor([1., 0., 1., 0.])
    """
    def view_of(t):
        return t.as_strided(size, stride, storage_offset)
    # check the arguments on a throwaway copy, then scatter src into the flat positions the
    # geometry addresses (a differentiable scatter: autograd through as_strided views of a
    # clone would not give torch's gradient)
    _scatter_into_view(input.detach() if isinstance(input, Tensor) else input,
                       src.detach() if isinstance(src, Tensor) else src,
                       "as_strided_scatter", view_of)
    grids = np.indices(tuple(size), dtype=np.int64).reshape(len(size), math.prod(size))
    positions = (storage_offset or 0) + (np.asarray(stride, np.int64)[:, None] * grids).sum(0)
    index = Tensor._make(positions, input._device) if input._device.type == "cpu" else \
        Tensor._make(positions, canonical_cpu()).to(input._device)
    flat = input.reshape(-1)
    return flat.scatter(0, index, src.reshape(-1).to(flat.dtype)).reshape(input.shape)


def canonical_cpu():
    from ..._device import canonical

    return canonical("cpu")
