"""Indexing operators: ``__getitem__``/``__setitem__``, gather/scatter, index_* and masks.

The primitives are few, each an :class:`~ember.ops._registry.Op` with kernel, meta rule and
derivative:

* ``_slice`` (a view: ints, slices and None) and its backward ``_slice_backward``;
* ``_index`` (advanced indexing with integer index tensors at given dims) and ``_index_put``
  (its transpose, with or without accumulation);
* ``gather``/``scatter``/``scatter_add``/``scatter_reduce`` along a dim;
* ``index_select``/``index_add``/``index_copy``/``index_fill`` along a dim.

``x[key]`` first applies the basic part of ``key`` as a view (ints select, slices, None, and
a full slice where an advanced index sits), then the advanced part (index tensors, bool masks
as their ``nonzero``) as one ``_index``: torch's layout rules follow from this order. ``x[key] =
v`` writes directly into memory when autograd is not recording, and otherwise computes the new
value out of place (differentiable w.r.t. ``x`` and ``v``) and writes it back with
``assign_inplace``.
"""

from __future__ import annotations

import builtins
import math
import numbers
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype as dt
from .._device import META
from .._tensor import Tensor, _trace_state
from ..autograd import forward_ad as _forward_ad
from ..autograd import grad_mode
from ._operands import scalar_tensor, wrap_dim
from ._registry import defop, inplace, writable_array, write_out
from ._signature import signature
from ._util import host_values, scalar
from ._vmap_rules import batching

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "index_put", "masked_fill", "masked_scatter",
           "masked_select", "take", "take_along_dim", "put", "nonzero", "nonzero_static",
           "argwhere"]

_INDEX_INT = (np.dtype(np.int64), np.dtype(np.int32))
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _short(t):
    return _SHORT[t.dtype.name]


# ---------------------------------------------------------------- kernel helpers


def _check_range(xp, idx, size, dim, message, exc=RuntimeError, negative=False):
    """Raise ``exc(message)`` naming the first index outside ``[0, size)`` (or ``[-size,
    size)`` with ``negative``)."""
    if idx.size == 0:
        return
    low = -size if negative else 0
    smallest, largest = host_values(xp, idx.min(), idx.max())  # one sync on the GPU
    if smallest >= low and largest < size:
        return
    bad = idx[(idx < low) | (idx >= size)].ravel()[0]
    raise exc(message.format(index=int(bad), dim=dim, size=size))


def _ufunc_at(xp, name, out, key, values):
    """``out[key] (op)= values`` with repeated indices combined (``np.<ufunc>.at``)."""
    if xp is np:
        getattr(np, name).at(out, key, values)
        return
    own = getattr(xp, "ufunc_at", None)
    if own is not None:  # the webgpu array module's own (ember.webgpu._xp)
        own(name, out, key, values)
        return
    import cupyx

    fast = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}
    if name in fast:
        try:
            getattr(cupyx, fast[name])(out, key, values)
            return
        except (TypeError, NotImplementedError, ValueError):
            pass
    _ufunc_at_rounds(xp, name, out, key, values)


def _ufunc_at_rounds(xp, name, out, key, values):
    """Generic ``ufunc.at`` on a GPU: rounds of duplicate-free writes (one per repetition)."""
    positions = xp.arange(out.size).reshape(out.shape)[key]
    values = xp.broadcast_to(values, positions.shape).ravel()
    positions = positions.ravel()
    order = xp.argsort(positions, kind="stable")
    positions, values = positions[order], values[order]
    if positions.size == 0:
        return
    # sorted positions: a position's first occurrence is where searchsorted puts it
    rank = xp.arange(positions.size) - xp.searchsorted(positions, positions, side="left")
    flat = out.reshape(-1)
    ufunc = getattr(xp, name)
    (rounds,) = host_values(xp, rank.max())
    for r in range(rounds + 1):
        chosen = rank == r
        where = positions[chosen]
        flat[where] = ufunc(flat[where], values[chosen])


def _along(dim, idx):
    """The key ``(:, ..., :, idx)`` that indexes ``idx`` along ``dim``."""
    return (slice(None),) * dim + (idx,)


def _scatter_key(xp, idx, dim):
    """The advanced key that sends ``idx[i, j, ...]`` along ``dim`` (gather/scatter layout)."""
    key = []
    for d, n in enumerate(idx.shape):
        if d == dim:
            key.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


def _prefix(src, shape):
    """``src`` cut down to its leading ``shape`` block (scatter uses only index's extent)."""
    if src.shape == tuple(shape):
        return src
    return src[tuple(slice(0, n) for n in shape)]


def _at_least_1d(*arrays):
    return tuple(a.reshape(1) if a.ndim == 0 else a for a in arrays)


def _zeros(shape, like):
    from .creation import zeros

    return zeros(shape, dtype=like.dtype, device=like._device)


def _same_shape_meta(a, *rest, **params):
    return a.shape, a.dtype


def _to_device(index, device):
    if index._device is not device:
        return index.to(device)
    return index


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


scatter_reduce_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    from .creation import ones

    return ones(t.shape, dtype=t.dtype, device=t._device)


def _prod_grads(a, idx, src, grad, result, dim, include_self):
    """Gradients of a scatter product, exact where one factor of a product is zero."""
    masked_a = a.masked_fill(a == 0, 1)
    masked_a_result = scatter_reduce_op(masked_a, idx, src, dim=dim, reduce="prod",
                                        include_self=include_self)
    grad_a = grad * masked_a_result / masked_a
    src_zero = src == 0
    zeros_per_slot = scatter_add_op(_zeros(a.shape, a), idx, src_zero.to(a.dtype), dim=dim)
    from .pointwise import where

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
            from .creation import full

            src = full(index.shape, src, dtype=input.dtype, device=input._device)
        result = scatter_reduce_op(input, index, _to_device(src, input._device), dim=dim,
                                   reduce=reduce)
    elif is_tensor:
        result = scatter_op(input, index, _to_device(src, input._device), dim=dim)
    else:
        result = scatter_value_op(input, index, dim=dim, value=src)
    return write_out(result, out, "scatter")


def _scatter_method(self, dim, index, src=None, *, value=None, reduce=None):
    return scatter(self, dim, index, src, value=value, reduce=reduce)


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


scatter_reduce_op.save_output = True


# ---------------------------------------------------------------- index_select / index_add


def _index_dim_meta(a, idx, *, dim):
    shape = list(a.shape)
    if shape:
        shape[dim] = idx.size
    return tuple(shape), a.dtype


@defop("index_select", meta=_index_dim_meta, kind="indexing")
def index_select_op(xp, a, idx, *, dim):
    if a.ndim == 0:
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
    if len(sshape) != len(ishape) or any(
            s != t for d, (s, t) in enumerate(zip(ishape, sshape)) if d != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(ishape)} "
                           f"source.shape = {list(sshape)}")
    source_count = sshape[dim] if len(sshape) else 1
    if count != source_count:
        raise RuntimeError(f"{name}(): Number of indices ({count}) should be equal to "
                           f"source.size(dim): ({source_count}), for dim: {dim}")


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
    index = _to_device(index, input._device)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        if (value._rg and grad_mode.state.enabled) or _forward_ad.is_dual(value):
            from .pointwise import where

            mask = index_fill_op(_zeros(input.shape, input).to(dt.bool), index, dim=dim,
                                 value=True)
            return where(mask, value.to(input.dtype), input)
        value = value.item()
    return index_fill_op(input, index, dim=dim, value=value)


# ---------------------------------------------------------------- masks


def _check_bool_mask(name, mask, capital=False):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask._data.dtype != np.bool_:
        kind = _short(mask) if capital else mask.dtype.name.rstrip("0123456789") or "bool"
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {kind}")


def masked_fill(input, mask, value):
    """``value`` where ``mask`` is True, ``input`` elsewhere (``mask`` broadcasts).

    Example::

        >>> ember.tensor([1., 2., 3.]).masked_fill(ember.tensor([True, False, True]), 0.)
        tensor([0., 2., 0.])
    """
    from .pointwise import where

    _check_bool_mask("masked_fill_", mask)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        value = value.to(dtype=input.dtype, device=input._device)
    else:
        value = scalar_tensor(value, input.dtype, input._device)
    return where(_to_device(mask, input._device), value, input)


# ---------------------------------------------------------------- basic indexing (views)


@defop("_slice", save_inputs=False, view=True, grad_name="SliceBackward0", kind="view")
def slice_op(xp, a, *, key):
    result = a[key]
    if None in key:
        # numpy gives inserted dims stride 0; torch (and numpy's reshape) size * next stride
        result = a[tuple(k for k in key if k is not None)].reshape(result.shape)
    return result


@slice_op.defonnx
def _slice_onnx(ctx, x, key):
    """``x[key]`` for a NumPy basic key: ints, slices, None and one Ellipsis."""
    key = key if isinstance(key, tuple) else (key,)
    ndim = len(ctx.in_dims(0))
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - used)
            used = ndim  # a second Ellipsis stands for nothing
        elif isinstance(k, (int, slice)) or k is None:
            items.append(k)
        else:
            ctx.fail(f"indexing with {type(k).__name__} cannot be exported")
    return ctx.basic_index(x, items)


slice_op.defbatch(batching.basic_index)


@slice_op.defderivative
def _slice_derivative(ctx, grad, *, key):
    return (slice_backward_op(grad, shape=ctx.input_shapes[0], key=key),)


@defop("_slice_backward", meta=lambda g, *, shape, key: (shape, g.dtype), save_inputs=False,
       kind="indexing", opt_outs={"onnx": "a backward kernel: exported models run inference"})
def slice_backward_op(xp, grad, *, shape, key):
    out = xp.zeros(shape, grad.dtype)
    out[key] = grad
    return out


slice_backward_op.defbatch(batching.basic_index_backward)


@slice_backward_op.defderivative
def _slice_backward_derivative(ctx, grad, *, shape, key):
    return (slice_op(grad, key=key),)


@defop("_basic_put", meta=_same_shape_meta, save_inputs=False, grad_name="CopySlices",
       kind="indexing", opt_outs={"onnx": "an in-place write: ONNX graphs have no mutation"})
def basic_put_op(xp, a, v, *, key):
    out = a.copy()
    out[key] = v
    return out


basic_put_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@basic_put_op.defderivative
def _basic_put_derivative(ctx, grad, *, key):
    need_a, need_v = ctx.needs_input_grad
    grad_a = grad_v = None
    if need_a:
        grad_a = basic_put_op(grad, scalar_tensor(0, grad.dtype, grad._device), key=key)
    if need_v:
        grad_v = slice_op(grad, key=key)
    return grad_a, grad_v


# ---------------------------------------------------------------- advanced indexing


def _index_shape(shape, index_shapes, positions):
    """The shape of ``a[key]`` when index arrays of ``index_shapes`` sit at ``positions``."""
    broadcast = tuple(np.broadcast_shapes(*index_shapes))
    first, last = positions[0], positions[-1]
    if last - first + 1 == len(positions):
        return tuple(shape[:first]) + broadcast + tuple(shape[last + 1:])
    return broadcast + tuple(s for d, s in enumerate(shape) if d not in positions)


def _adv_key(ndim, idx, positions):
    key = [slice(None)] * ndim
    for p, i in zip(positions, idx):
        key[p] = i
    return tuple(key)


def _check_adv(xp, shape, idx, positions):
    for k, (p, i) in enumerate(zip(positions, idx)):
        _check_range(xp, i, shape[p], k, _OOB, IndexError, negative=True)


def _index_meta(a, *idx, positions):
    return _index_shape(a.shape, [i.shape for i in idx], positions), a.dtype


def _reads_nothing(a, idx):
    """Torch checks bounds per element read: when nothing is read, nothing is out of range."""
    return a.size == 0 or 0 in np.broadcast_shapes(*(i.shape for i in idx))


@defop("index", meta=_index_meta, grad_name="IndexBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's GatherND computes it)"})
def index_op(xp, a, *idx, positions):
    if _reads_nothing(a, idx):
        return xp.empty(_index_shape(a.shape, [i.shape for i in idx], positions), a.dtype)
    _check_adv(xp, a.shape, idx, positions)
    return a[_adv_key(a.ndim, idx, positions)]


index_op.defbatch(batching.advanced_index)


@index_op.defderivative
def _index_derivative(ctx, grad, *, positions):
    a, *idx = ctx.inputs
    grad_a = index_put_op(_zeros(a.shape, grad), grad, *idx, positions=positions,
                          accumulate=True)
    return (grad_a,) + (None,) * len(idx)


index_op.defjvp(_forward_ad.first_linear_jvp(index_op))


@defop("index_put", meta=_same_shape_meta, grad_name="IndexPutBackward0", kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's ScatterND computes it)"})
def index_put_op(xp, a, v, *idx, positions, accumulate):
    out = a.copy()
    if _reads_nothing(out, idx):
        return out
    _check_adv(xp, out.shape, idx, positions)
    key = _adv_key(out.ndim, idx, positions)
    if accumulate:
        _ufunc_at(xp, "add", out, key, v)
    else:
        out[key] = v
    return out


index_put_op.defbatch(batching.advanced_index_put)


@index_put_op.defderivative
def _index_put_derivative(ctx, grad, *, positions, accumulate):
    _, _, *idx = ctx.inputs
    need_a, need_v = ctx.needs_input_grad[:2]
    grad_a = grad_v = None
    if need_a:
        grad_a = grad if accumulate else index_put_op(
            grad, scalar_tensor(0, grad.dtype, grad._device), *idx, positions=positions,
            accumulate=False)
    if need_v:
        grad_v = index_op(grad, *idx, positions=positions)
    return (grad_a, grad_v) + (None,) * len(idx)


# ---------------------------------------------------------------- parsing an index


_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
              "are valid indices (got {})")
_BAD_TENSOR = "tensors used as indices must be long, int, byte or bool tensors"
_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and "
                      "will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In "
                      "pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], "
                      "which will result either in an error or a different result")


def _is_sequence(obj):
    """Whether torch reads ``obj`` as a sequence of indices (Python's sequence protocol:
    lists, tuples, ranges, strings, NumPy arrays...), to be turned into an index tensor."""
    return isinstance(obj, (Sequence, np.ndarray)) and not isinstance(obj, Tensor)


def _as_tuple(key, warn=True):
    """The elements of an index, by torch's (NumPy's old) rule: a tuple is a tuple; a short
    non-tuple sequence holding a slice, None, Ellipsis, a tensor or another sequence counts as
    a tuple too (with torch's deprecation warning); anything else is one element.

    >>> _as_tuple([0, slice(None)])  # doctest: +SKIP
    (0, slice(None, None, None))
    """
    if type(key) is tuple:
        return key
    if isinstance(key, Tensor) or type(key) is np.ndarray or not _is_sequence(key) or \
            len(key) >= 32:
        return (key,)
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (slice, Tensor)) or _is_sequence(k):
            if warn:
                warnings.warn(_SEQUENCE_AS_TUPLE, UserWarning, stacklevel=4)
            return tuple(key)
    return (key,)


def _type_name(item):
    """The type's name as torch's messages give it (``range``, ``numpy.float64``)."""
    kind = type(item)
    if kind.__module__ == "builtins" or kind.__flags__ & _HEAP_TYPE:
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python, named without its module


def _sequence_index(item, device):
    """A sequence used as an index, as the index tensor torch makes of it: bool (a mask) and
    uint8 (a deprecated mask) stay, any other element type becomes int64 (floats truncate)."""
    from .._tensor import tensor

    if isinstance(item, range):
        return tensor(np.arange(item.start, item.stop, item.step, dtype=np.int64), device=device)
    if isinstance(item, (list, tuple)) and len(item) == 0:
        return tensor([], dtype=dt.int64, device=device)
    result = tensor(item, device=device)
    if result._data.dtype not in (np.bool_, np.uint8, np.int64):
        result = result.to(dt.int64)
    return result


def _slice_bound(v):
    if v is None or type(v) is int:
        return v
    if isinstance(v, Tensor):
        return v.__index__()
    if isinstance(v, numbers.Integral):
        return int(v)
    raise TypeError("slice indices must be integers or None or have an __index__ method")


def _norm_slice(s):
    step = _slice_bound(s.step)
    if step is not None:
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step < 0:
            raise ValueError("step must be greater than zero")
    return slice(_slice_bound(s.start), _slice_bound(s.stop), step)


def _classify(item, device, tensor_scalars_as_int):
    """(kind, payload) for one element of an index."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, bool):
        return "bool", item
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, slice):
        return "slice", _norm_slice(item)
    if not isinstance(item, Tensor) and _is_sequence(item):
        item = _sequence_index(item, device)
    if isinstance(item, Tensor):
        kind = item._data.dtype
        if kind == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                          "torch.bool instead.", UserWarning, stacklevel=4)
            item = item.to(dt.bool)
            kind = item._data.dtype
        if kind == np.bool_:
            if item._data.ndim == 0:
                return "bool", bool(item.item())
            return "mask", _to_device(item, device)
        if kind not in _INDEX_INT:
            raise IndexError(_BAD_TENSOR)
        if item._data.ndim == 0 and tensor_scalars_as_int and item._device is not META:
            return "int", int(item.item())
        return "index", _to_device(item, device)
    if hasattr(type(item), "__index__"):
        return "int", operator.index(item)
    raise IndexError(_BAD_INDEX.format(_type_name(item)))


def _parse(self, key, tensor_scalars_as_int=True):
    """Split an index into a basic key (ints, slices, None, Ellipsis-terminated) applied as a
    view, and advanced index tensors with their dims in that view."""
    device = self._device
    items = [_classify(k, device, tensor_scalars_as_int) for k in _as_tuple(key)]
    shape = self._data.shape
    ndim = len(shape)
    consumed = 0
    ellipses = 0
    for kind, payload in items:
        if kind in ("int", "slice", "index"):
            consumed += 1
        elif kind == "mask":
            consumed += payload._data.ndim
        elif kind == "ellipsis":
            ellipses += 1
    if consumed > ndim:
        if ndim == 0:
            raise IndexError(_ZERO_DIM)
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, idx, positions = [], [], []
    d = v = 0
    for kind, payload in items:
        if kind == "int":
            size = shape[d]
            if not -size <= payload < size:
                raise IndexError(f"index {payload} is out of bounds for dimension {d} with size "
                                 f"{size}")
            basic.append(payload)
            d += 1
        elif kind == "slice":
            basic.append(payload)
            d += 1
            v += 1
        elif kind == "none":
            basic.append(None)
            v += 1
        elif kind == "ellipsis":
            n = ndim - consumed if ellipses else 0  # torch: only the first one expands
            ellipses = 0
            basic.extend([slice(None)] * n)
            d += n
            v += n
        elif kind == "bool":
            from .creation import zeros

            basic.append(None)
            idx.append(zeros(1 if payload else 0, dtype=dt.int64, device=device))
            positions.append(v)
            v += 1
        elif kind == "index":
            basic.append(slice(None))
            idx.append(payload)
            positions.append(v)
            d += 1
            v += 1
        else:
            mask = payload
            k = mask._data.ndim
            for j in range(k):
                if mask._data.shape[j] != shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor {list(shape)} at "
                                     f"index {d + j}")
            basic.extend([slice(None)] * k)
            idx.extend(nonzero(mask, as_tuple=True))
            positions.extend(range(v, v + k))
            d += k
            v += k
    if len(idx) > 1:
        shapes = [i._data.shape for i in idx]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes " + ", ".join(str(list(s)) for s in shapes)) from None
    trivial = all(type(b) is slice and b == _FULL for b in basic)
    return tuple(basic) + (Ellipsis,), trivial, idx, tuple(positions)


def _has_tensor_index(key):
    """Whether an index holds index tensors or masks (not just Python bools): torch then
    requires a value of the same dtype."""
    return any(isinstance(k, Tensor) or _is_sequence(k) for k in _as_tuple(key, warn=False))


_FULL = slice(None)


def _getitem(self, key):
    """``self[key]``: a view for ints, slices, None and Ellipsis; a copy with index tensors,
    lists or bool masks (torch's rules and errors)."""
    if type(key) is int:
        shape = self._data.shape
        if not shape:
            raise IndexError(_ZERO_DIM)
        if not -shape[0] <= key < shape[0]:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                             f"{shape[0]}")
        return slice_op(self, key=(key, Ellipsis))
    if type(key) is slice and self._data.ndim:
        return slice_op(self, key=(_norm_slice(key), Ellipsis))
    basic, trivial, idx, positions = _parse(self, key)
    if not idx:
        return slice_op(self, key=basic)
    source = self if trivial else slice_op(self, key=basic)
    return index_op(source, *idx, positions=positions)


def _value_for(self, value, target_shape, advanced, strict=True):
    """``value`` as a tensor (or scalar) of ``self``'s dtype that broadcasts to the target."""
    if not isinstance(value, Tensor):
        if isinstance(value, (numbers.Number, np.generic)):
            return value
        from .._tensor import tensor

        value = tensor(value, dtype=self.dtype, device=self._device)
    elif value._data.ndim == 0 and value._data.dtype != self._data.dtype and \
            not (value._rg and grad_mode.state.enabled) and value._device is not META:
        return value.item()  # a 0-dim tensor acts as a scalar (cast to self's dtype)
    vshape = value._data.shape
    while len(vshape) > len(target_shape) and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != value._data.shape:
        value = value.reshape(vshape)
    try:
        ok = np.broadcast_shapes(vshape, target_shape) == tuple(target_shape)
    except ValueError:
        ok = False
    if not ok:
        if advanced:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot "
                               f"be broadcast to indexing result of shape {list(target_shape)}")
        from .shape import expand

        expand(value, target_shape)  # raises torch's expand error
        raise RuntimeError(f"expand: cannot broadcast {list(vshape)} to {list(target_shape)}")
    if value._data.dtype != self._data.dtype:
        if advanced and strict:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{_short(self)} for the destination and {_short(value)} for the "
                               f"source.")
        value = value.to(self.dtype)
    if value._device is not self._device:
        value = value.to(self._device)
    return value


def _functional_put(x, value, basic, trivial, idx, positions, accumulate=False):
    """The value of ``x`` after ``x[key] = value`` (or ``+=`` with ``accumulate``), out of
    place and differentiable w.r.t. ``x`` and ``value``."""
    if not idx:
        return basic_put_op(x, value, key=basic)
    if trivial:
        return index_put_op(x, value, *idx, positions=positions, accumulate=accumulate)
    part = index_put_op(slice_op(x, key=basic), value, *idx, positions=positions,
                        accumulate=accumulate)
    return basic_put_op(x, part, key=basic)


def _setitem(self, key, value):
    """``self[key] = value``: writes in place (bumping the version); recorded by autograd as an
    out-of-place put written back, so gradients reach both ``self`` and ``value``."""
    basic, trivial, idx, positions = _parse(self, key)
    view_shape = self._data[basic].shape
    target_shape = _index_shape(view_shape, [i._data.shape for i in idx], positions) if idx \
        else view_shape
    value = _value_for(self, value, target_shape, builtins.bool(idx),
                       strict=builtins.bool(idx) and _has_tensor_index(key))
    recording = grad_mode.state.enabled and (
        self._rg or (isinstance(value, Tensor) and value._rg))
    if not recording:
        if self._device is not META:
            xp = self._device.xp
            data = value._data if isinstance(value, Tensor) else value
            if xp is not np and isinstance(value, Tensor):
                data = data.copy()
            view = writable_array(self._data[basic])
            if idx and not _reads_nothing(view, [i._data for i in idx]):
                arrays = [i._data for i in idx]
                _check_adv(xp, view.shape, arrays, positions)
                view[_adv_key(view.ndim, arrays, positions)] = data
            elif not idx:
                view[...] = data
        self._vc[0] += 1
        return
    if not isinstance(value, Tensor):
        value = scalar_tensor(value, self.dtype, self._device)
    inplace(_functional_put, self, value, basic, trivial, idx, positions)


# ---------------------------------------------------------------- index_put


def index_put(input, indices, values, accumulate=False):
    """``input`` with ``values`` put at ``indices`` (a tuple of index tensors, one per leading
    dim); ``accumulate=True`` adds instead, summing repeated indices.

    Example::

        >>> ember.zeros(3).index_put((ember.tensor([0, 0]),), ember.tensor(1.), accumulate=True)
        tensor([2., 0., 0.])
    """
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_short(input)} for the destination and {_short(values)} for the "
                           f"source.")
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(i).__name__}")
    key = tuple(indices)
    basic, trivial, idx, positions = _parse(input, key, tensor_scalars_as_int=False)
    if not idx:
        values = _value_for(input, values, input._data.shape, True)
        return input + values if accumulate else basic_put_op(input, values, key=basic)
    target = _index_shape(input._data.shape, [i._data.shape for i in idx], positions)
    values = _value_for(input, values, target, True)
    return index_put_op(input, values, *idx, positions=positions,
                        accumulate=builtins.bool(accumulate))


# ---------------------------------------------------------------- masked_select / scatter


def _broadcast_with_mask(input, mask):
    from ._operands import broadcast_shapes

    shape = broadcast_shapes(input._data.shape, mask._data.shape)
    if input._data.shape != shape:
        input = input.expand(shape)
    if mask._data.shape != shape:
        mask = mask.expand(shape)
    if not shape:
        input, mask = input.reshape(1), mask.reshape(1)
    return input, _to_device(mask, input._device), shape


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


# ---------------------------------------------------------------- take / put


def _check_flat_range(input, index, name=None):
    if input._device is META:
        return
    n = input._data.size
    _check_range(input._device.xp, index._data, n, 0, "out of range: tried to access index "
                 "{index} on a tensor of " + f"{n} elements.", IndexError, negative=True)


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


def take_along_dim(input, indices, dim=None, *, out=None):
    """Gather ``indices`` along ``dim`` with broadcasting (of the flattened input if ``dim`` is
    None); with a ``dim``, negative indices count from the end.

    Example::

        >>> ember.take_along_dim(ember.tensor([[10, 30], [20, 5]]), ember.tensor([[1], [0]]), 1)
        tensor([[30],
                [20]])
    """
    from .pointwise import where

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
    from ._operands import broadcast_shapes

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


# ---------------------------------------------------------------- nonzero / argwhere


def _nonzero_meta(a):
    raise NotImplementedError("The register_meta function for torch.nonzero() raises "
                              "unimplemented by default, as a correct data-independent "
                              "implementation does not exist.")


@defop("nonzero", meta=_nonzero_meta, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's NonZero computes it)"})
def nonzero_op(xp, a):
    return xp.argwhere(a).astype(np.int64, copy=False)


nonzero_op.opt_out("batch", "its shape depends on the values: vmap runs it element by element")
nonzero_op.opt_out("derivative", "an index result has no gradient")


@defop("nonzero_tuple", meta=_nonzero_meta, multi_output=True, kind="indexing",
       opt_outs={"onnx": "not mapped yet (ONNX's NonZero computes it)"})
def nonzero_tuple_op(xp, a):
    if a.ndim == 0:
        a = a.reshape(1)
    return tuple(i.astype(np.int64, copy=False) for i in xp.nonzero(a))


nonzero_tuple_op.opt_out("batch", "its shape depends on the values: vmap runs it per element")
nonzero_tuple_op.opt_out("derivative", "an index result has no gradient")


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the non-zero elements: an ``(n, ndim)`` tensor, or with ``as_tuple``
    one 1-D tensor per dim.

    Example::

        >>> ember.nonzero(ember.tensor([0, 3, 0, 5]))
        tensor([[1],
                [3]])
    """
    if as_tuple:
        return nonzero_tuple_op(input)
    return write_out(nonzero_op(input), out, "nonzero")


def nonzero_static(input, *, size, fill_value=-1):
    """The ``(size, ndim)`` indices of the first ``size`` non-zero elements, rows past the
    last one filled with ``fill_value`` (a fixed output shape, as torch).

    Example::

        >>> ember.nonzero_static(ember.tensor([0, 3, 0]), size=2)
        tensor([[ 1],
                [-1]])
    """
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"{size}")
    found = nonzero_op(input)[:size]
    if found.shape[0] == size:
        return found.clone()
    from .creation import full
    from .shape import cat

    padding = full((size - found.shape[0], input.dim()), fill_value, dtype=found.dtype,
                   device=found.device)
    return cat([found, padding])


def argwhere(input):
    """The indices of the non-zero elements as an ``(n, ndim)`` tensor.

    Example::

        >>> ember.argwhere(ember.tensor([[0, 1], [1, 0]]))
        tensor([[0, 1],
                [1, 0]])
    """
    return nonzero_op(input)


# ---------------------------------------------------------------- methods


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return inplace(fn, self, *args, **kwargs)
    method.__name__ = name + "_"
    method.__doc__ = f"In-place version of :func:`{name}`."
    return method


Tensor.gather = _gather_method
Tensor.scatter = _scatter_method
Tensor.scatter_ = _inplace_method(_scatter_method, "scatter")
for _fn in (scatter_add, scatter_reduce, index_select, index_add, index_copy, index_fill,
            masked_fill, index_put, masked_scatter, masked_select, take, take_along_dim, put,
            nonzero, nonzero_static, argwhere):
    setattr(Tensor, _fn.__name__, _fn)
for _fn in (scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_fill,
            index_put, masked_scatter, put):
    setattr(Tensor, _fn.__name__ + "_", _inplace_method(_fn, _fn.__name__))
Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem


# ================================================================ toplevel-helper section:
# unravel_index, index_reduce, and the *_scatter ops (a copy of the input with a view of it
# overwritten; differentiable through the in-place write on a fresh clone)

__all__ += ["unravel_index", "index_reduce", "slice_scatter", "select_scatter",
            "diagonal_scatter", "as_strided_scatter"]


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
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    indices = indices.to(dt.int64)
    coordinates, stride = [], 1
    for size in reversed(shape):
        coordinates.append(indices.div(stride, rounding_mode="floor").remainder(size))
        stride *= size
    return tuple(reversed(coordinates))


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


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


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src``.

    Example::

        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    return _scatter_into_view(input, src, "select_scatter", lambda t: t.select(dim, index))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``.

    Example::

        >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _scatter_into_view(input, src, "diagonal_scatter",
                              lambda t: t.diagonal(offset, dim1, dim2))


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
    from .._device import canonical

    return canonical("cpu")


Tensor.index_reduce = index_reduce
Tensor.index_reduce_ = _inplace_method(index_reduce, "index_reduce")
for _fn in (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter):
    setattr(Tensor, _fn.__name__, _fn)
del _fn
