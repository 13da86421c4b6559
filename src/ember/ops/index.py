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

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import grad_mode
from ._operands import scalar_tensor, wrap_dim
from ._registry import defop, inplace, write_out

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "masked_fill"]

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
    if int(idx.min()) >= low and int(idx.max()) < size:
        return
    bad = idx[(idx < low) | (idx >= size)].ravel()[0]
    raise exc(message.format(index=int(bad), dim=dim, size=size))


def _ufunc_at(xp, name, out, key, values):
    """``out[key] (op)= values`` with repeated indices combined (``np.<ufunc>.at``)."""
    if xp is np:
        getattr(np, name).at(out, key, values)
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
    starts = xp.concatenate([xp.ones(1, bool), positions[1:] != positions[:-1]])
    group_start = xp.maximum.accumulate(xp.where(starts, xp.arange(positions.size), 0))
    rank = xp.arange(positions.size) - group_start
    flat = out.reshape(-1)
    ufunc = getattr(xp, name)
    for r in range(int(rank.max()) + 1):
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


@defop("gather", meta=lambda a, idx, *, dim: (idx.shape, a.dtype))
def gather_op(xp, a, idx, *, dim):
    shape = idx.shape
    a, idx = _at_least_1d(a, idx)
    _check_range(xp, idx, a.shape[dim], dim, _OOB)
    if idx.size == 0:
        return xp.empty(shape, a.dtype)
    region = tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(idx.shape))
    return xp.take_along_axis(a[region], idx, axis=dim).reshape(shape)


@gather_op.defderivative
def _gather_derivative(ctx, grad, *, dim):
    a, idx = ctx.inputs
    return scatter_add_op(_zeros(a.shape, grad), idx, grad, dim=dim), None


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
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype not in _INDEX_INT:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Pick values along ``dim``: ``out[i][j] = input[index[i][j]][j]`` for ``dim=0``.

    Example::

        >>> ember.gather(ember.tensor([[1, 2], [3, 4]]), 1, ember.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    _check_long_index("gather", index)
    dim = wrap_dim(dim, input._data.ndim)
    _check_gather_shapes("gather", input, dim, index)
    return write_out(gather_op(input, _to_device(index, input._device), dim=dim), out, "gather")


def _gather_method(self, dim, index, *, sparse_grad=False):
    return gather(self, dim, index, sparse_grad=sparse_grad)


# ---------------------------------------------------------------- scatter family


@defop("scatter", meta=_same_shape_meta, grad_name="ScatterBackward0")
def scatter_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, idx, src = _at_least_1d(out, idx, src)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        out[_scatter_key(xp, idx, dim)] = _prefix(src, idx.shape)
    return out.reshape(shape)


@scatter_op.defderivative
def _scatter_derivative(ctx, grad, *, dim):
    _, idx, _ = ctx.inputs
    need_a, _, need_src = ctx.needs_input_grad
    grad_a = scatter_value_op(grad, idx, dim=dim, value=0) if need_a else None
    grad_src = gather_op(grad, idx, dim=dim) if need_src else None
    return grad_a, None, grad_src


@defop("scatter_value", meta=_same_shape_meta, grad_name="ScatterBackward1")
def scatter_value_op(xp, a, idx, *, dim, value):
    out = a.copy()
    shape = out.shape
    out, idx = _at_least_1d(out, idx)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        out[_scatter_key(xp, idx, dim)] = value
    return out.reshape(shape)


@scatter_value_op.defderivative
def _scatter_value_derivative(ctx, grad, *, dim, value):
    return scatter_value_op(grad, ctx.inputs[1], dim=dim, value=0), None


@defop("scatter_add", meta=_same_shape_meta)
def scatter_add_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, idx, src = _at_least_1d(out, idx, src)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        _ufunc_at(xp, "add", out, _scatter_key(xp, idx, dim), _prefix(src, idx.shape))
    return out.reshape(shape)


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
    if dtype.kind == "f" or dtype == dt.bfloat16.np:
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@defop("scatter_reduce", meta=_same_shape_meta, grad_name="ScatterReduceBackward0")
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
    _check_long_index("scatter", index)
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
    _check_long_index("scatter", index)
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
    _check_long_index("scatter", index)
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


@defop("index_select", meta=_index_dim_meta)
def index_select_op(xp, a, idx, *, dim):
    if a.ndim == 0:
        _check_range(xp, idx, 1, dim, "index out of range in self", IndexError)
        return a.copy()
    idx = idx.reshape(-1)
    _check_range(xp, idx, a.shape[dim], dim, "index out of range in self", IndexError)
    return xp.take(a, idx, axis=dim)


@index_select_op.defderivative
def _index_select_derivative(ctx, grad, *, dim):
    a, idx = ctx.inputs
    return index_add_op(_zeros(a.shape, grad), idx, grad, dim=dim, alpha=1), None


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


@defop("index_add", meta=_same_shape_meta)
def index_add_op(xp, a, idx, src, *, dim, alpha=1):
    out = a.copy()
    shape = out.shape
    out, src = _at_least_1d(out, src)
    idx = idx.reshape(-1)
    _check_range(xp, idx, out.shape[dim], dim, _OOB)
    if idx.size:
        if alpha != 1:
            if out.dtype.kind in "iub":
                alpha = int(alpha)
            src = (src * alpha).astype(out.dtype)
        _ufunc_at(xp, "add", out, _along(dim, idx), src)
    return out.reshape(shape)


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


@defop("index_copy", meta=_same_shape_meta)
def index_copy_op(xp, a, idx, src, *, dim):
    out = a.copy()
    shape = out.shape
    out, src = _at_least_1d(out, src)
    idx = idx.reshape(-1)
    _check_range(xp, idx, out.shape[dim], dim, "index_copy_(): " + _OOB, IndexError)
    if idx.size:
        out[_along(dim, idx)] = src
    return out.reshape(shape)


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


@defop("index_fill", meta=_same_shape_meta, grad_name="IndexFillBackward0")
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
        if value._rg and grad_mode.state.enabled:
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
            masked_fill):
    setattr(Tensor, _fn.__name__, _fn)
for _fn in (scatter_add, scatter_reduce, index_add, index_copy, index_fill, masked_fill):
    setattr(Tensor, _fn.__name__ + "_", _inplace_method(_fn, _fn.__name__))
