"""Orderings: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile,
nanquantile, unique, unique_consecutive."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ... import return_types
from ..._device import META
from ..._tensor import Tensor, _traced_to_python
from ...autograd.forward_ad import reduction_jvp, select_jvp
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import Op, autocast_policy, defop, write_out
from .._signature import signature
from .._util import accumulate
from .._vmap_rules import batching
from ._common import (
    _check_nonempty_dims,
    _check_tensor,
    _one_dim,
    _reject,
    _scatter_grad,
    _select_grad,
    _unsqueeze_all,
    _write_out_tuple,
    reduced_shape,
)
from .extrema import _evenly_distribute

__all__ = ["median", "nanmedian", "mode", "quantile", "nanquantile", "sort", "argsort", "msort",
           "topk", "kthvalue", "unique", "unique_consecutive"]


# ---------------------------------------------------------------- sort, argsort, topk, kthvalue


def _argsort(xp, a, dim, descending):
    """Stable sort order along ``dim``: ascending with NaN last, or descending with NaN first
    and ties still in their original order."""
    if not descending:
        return xp.argsort(a, axis=dim, kind="stable")
    n = a.shape[dim]
    order = xp.argsort(xp.flip(a, dim), axis=dim, kind="stable")
    return (n - 1) - xp.flip(order, dim)


def _sort_meta(a, *, dim, descending):
    return (a.shape, a.dtype), (a.shape, np.dtype(np.int64))


@defop("sort", meta=_sort_meta, save_inputs=False, save_output=True, multi_output=True,
       differentiable_outputs=(0,), kind="other",
       opt_outs={"onnx": "not mapped yet (ONNX's TopK computes it)"})
def sort_op(xp, a, *, dim, descending):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = _argsort(xp, a, dim, descending).astype(np.int64, copy=False)
    return xp.take_along_axis(a, order, axis=dim), order


sort_op.defbatch(batching.along_dim)


@sort_op.defderivative
def _sort_derivative(ctx, grad, grad_indices, *, dim, descending):
    return (_scatter_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0]),)


sort_op.defjvp(select_jvp)


def _check_sortable(input, name):
    _check_tensor(input, name)
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): Sort does not support complex dtypes on CPU")


@tensor_method
def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """Sort along ``dim``: ``(values, indices)``. NaN sorts as the largest value; equal
    elements keep their order.

    Example::

        >>> ember.sort(ember.tensor([3, 1, 2]))
        ember.return_types.sort(
        values=tensor([1, 2, 3]),
        indices=tensor([1, 2, 0]))
    """
    _check_sortable(input, "sort")
    result = return_types.sort(*sort_op(input, dim=_one_dim(dim, input._data.ndim),
                                        descending=builtins.bool(descending)))
    return _write_out_tuple(result, out, "sort")


@tensor_method
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort ``input`` along ``dim``.

    Example::

        >>> ember.argsort(ember.tensor([3, 1, 2]))
        tensor([1, 2, 0])
    """
    return sort(input, dim, descending, stable=stable).indices


@tensor_method
@signature('msort(Tensor input, *, Tensor? out=None) -> Tensor')
def msort(input, *, out=None):
    """``sort(input, dim=0).values``.

    Example::

        >>> ember.msort(ember.tensor([[3, 1], [1, 2]]))
        tensor([[1, 1],
                [3, 2]])
    """
    return write_out(sort(input, 0).values, out, "msort")


def _topk_meta(a, *, k, dim, largest):
    shape = tuple(k if i == dim else s for i, s in enumerate(a.shape))
    return (shape, a.dtype), (shape, np.dtype(np.int64))


@defop("topk", meta=_topk_meta, save_inputs=False, save_output=True, multi_output=True,
       differentiable_outputs=(0,), kind="other",
       opt_outs={"onnx": "not mapped yet (ONNX's TopK computes it)"})
def topk_op(xp, a, *, k, dim, largest):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = _argsort(xp, a, dim, largest)
    order = xp.take(order, xp.arange(k), axis=dim).astype(np.int64, copy=False)
    return xp.take_along_axis(a, order, axis=dim), order


topk_op.defbatch(batching.along_dim)


@topk_op.defderivative
def _topk_derivative(ctx, grad, grad_indices, *, k, dim, largest):
    return (_scatter_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0]),)


topk_op.defjvp(select_jvp)


@tensor_method
@signature("topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True, *,"
           " Tensor[]? out=None) -> (Tensor, Tensor)")
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``, sorted: ``(values, indices)``.

    Example::

        >>> ember.topk(ember.tensor([1, 5, 3, 4]), 2).values
        tensor([5, 4])
    """
    if input._data.dtype.kind in "cb":
        kind = "complex" if input._data.dtype.kind == "c" else "bool"
        raise RuntimeError(f"topk does not support {kind} dtypes on CPU")
    d = _one_dim(dim, input._data.ndim)
    size = input._data.shape[d] if input._data.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    result = return_types.topk(*topk_op(input, k=int(k), dim=d, largest=builtins.bool(largest)))
    return _write_out_tuple(result, out, "topk")


def _kth_meta(a, *, k, dim, keepdim):
    shape = reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim)
    return (shape, a.dtype), (shape, np.dtype(np.int64))


@defop("kthvalue", meta=_kth_meta, save_inputs=False, save_output=True, multi_output=True,
       differentiable_outputs=(0,), kind="reduction",
       opt_outs={"onnx": "not mapped yet (ONNX's TopK computes it)"})
def kthvalue_op(xp, a, *, k, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = xp.argsort(a, axis=dim, kind="stable")
    indices = xp.take(order, xp.asarray([k - 1]), axis=dim).astype(np.int64, copy=False)
    values = xp.take_along_axis(a, indices, axis=dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


kthvalue_op.defbatch(batching.along_dim)


@kthvalue_op.defderivative
def _kthvalue_derivative(ctx, grad, grad_indices, *, k, dim, keepdim):
    return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)


kthvalue_op.defjvp(select_jvp)


@tensor_method
@signature("kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False, *,"
           " Tensor[]? out=None) -> (Tensor, Tensor)")
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim`` (1-based): ``(values, indices)``.

    Example::

        >>> ember.kthvalue(ember.tensor([3, 1, 2]), 2).values
        tensor(2)
    """
    _reject(input, "kthvalue_cpu", "cb")
    d = _one_dim(dim, input._data.ndim)
    size = input._data.shape[d] if input._data.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    result = return_types.kthvalue(*kthvalue_op(input, k=int(k), dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, "kthvalue")


# ---------------------------------------------------------------- median, nanmedian, mode


def _median_rows(xp, rows, ignore_nan):
    """The lower median of each row of a 2-D array: NaN for a row holding a NaN, or with
    ``ignore_nan`` the median of the row's other values."""
    ordered = xp.sort(rows, axis=-1)  # NaN sorts last
    size = rows.shape[-1]
    if rows.dtype.kind in "biu" or not size:
        return ordered[:, builtins.max(size - 1, 0) // 2]
    # decided on the device: no synchronisation on the GPU
    if ignore_nan:
        count = xp.sum(rows == rows, axis=-1, keepdims=True)
        return xp.take_along_axis(ordered, xp.maximum(count - 1, 0) // 2, axis=-1)[:, 0]
    return xp.where(xp.isnan(ordered[:, -1]), xp.asarray(np.nan, dtype=rows.dtype),
                    ordered[:, (size - 1) // 2])


def _median_all_kernel(ignore_nan):
    def kernel(xp, a):
        return _median_rows(xp, a.reshape(1, a.size), ignore_nan)[0]
    return kernel


def _median_all_rule(ignore_nan):
    """vmap's rule for the median of all elements: each batch element is one row."""
    def rule(xp, step, arrays, batched, batch_size):
        return _median_rows(xp, arrays[0].reshape(batch_size, -1 if batch_size == 0 else
                                                  arrays[0].size // batch_size), ignore_nan)
    return rule


median_all_op = Op("median", _median_all_kernel(False), meta=lambda a: ((), a.dtype),
                   save_output=True, kind="reduction",
                   opt_outs={"onnx": "not mapped yet (ONNX's TopK computes it)"})


median_all_op.defbatch(_median_all_rule(False))
nanmedian_all_op = Op("nanmedian", _median_all_kernel(True), meta=lambda a: ((), a.dtype),
                      save_output=True, kind="reduction",
                      opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})


nanmedian_all_op.defbatch(_median_all_rule(True))
median_all_op.defderivative(lambda ctx, grad: _evenly_distribute(ctx, grad, nan_aware=True))
nanmedian_all_op.defderivative(lambda ctx, grad: _evenly_distribute(ctx, grad,
                                                                    nan_aware=True))
median_all_op.defjvp(reduction_jvp(median_all_op))
nanmedian_all_op.defjvp(reduction_jvp(nanmedian_all_op))


def _median_dim_kernel(ignore_nan):
    def kernel(xp, a, *, dim, keepdim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        order = xp.argsort(a, axis=dim, kind="stable")
        n = a.shape[dim]
        if a.dtype.kind not in "biu":
            nan = a != a
            if ignore_nan:
                count = n - xp.sum(nan, axis=dim, keepdims=True)
                pick = xp.maximum(count - 1, 0) // 2
                indices = xp.take_along_axis(order, pick, axis=dim)
            else:
                indices = xp.take(order, xp.asarray([(n - 1) // 2]), axis=dim)
                has_nan = xp.any(nan, axis=dim, keepdims=True)
                first_nan = xp.argmax(nan, axis=dim, keepdims=True)
                indices = xp.where(has_nan, first_nan, indices)
        else:
            indices = xp.take(order, xp.asarray([(n - 1) // 2]), axis=dim)
        indices = indices.astype(np.int64, copy=False)
        values = xp.take_along_axis(a, indices, axis=dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values, indices
    return kernel


def _median_dim_op(name):
    op = Op(name + "_dim", _median_dim_kernel(name == "nanmedian"), meta=_dim_pair_meta,
            save_inputs=False, save_output=True, multi_output=True, differentiable_outputs=(0,),
            grad_name=name.capitalize() + "Backward1", kind="reduction")

    @op.defderivative
    def _(ctx, grad, grad_indices, *, dim, keepdim):
        return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)

    op.defjvp(select_jvp)
    return op


def _dim_pair_meta(a, *, dim, keepdim):
    shape = reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim)
    return (shape, a.dtype), (shape, np.dtype(np.int64))


median_dim_op = _median_dim_op("median")
median_dim_op.opt_out("onnx", "not mapped yet (ONNX's TopK computes it)")


median_dim_op.defbatch(batching.along_dim)
nanmedian_dim_op = _median_dim_op("nanmedian")
nanmedian_dim_op.opt_out("onnx", "not mapped yet (composable from ONNX operators)")


nanmedian_dim_op.defbatch(batching.along_dim)


def _median(name, input, dim, keepdim, out):
    _check_tensor(input, name)
    _reject(input, "median_cpu" if dim is None else "median_out", "cb")
    if dim is None:
        if input._data.size == 0 and input._device is not META:
            return write_out(_empty_median(input), out, name)
        op = median_all_op if name == "median" else nanmedian_all_op
        return write_out(op(input), out, name)
    d = _one_dim(dim, input._data.ndim)
    if input._data.ndim and input._device is not META:
        _check_nonempty_dims(input, (d,), name)
    op = median_dim_op if name == "median" else nanmedian_dim_op
    result = getattr(return_types, name)(*op(input, dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, name)


def _empty_median(input):
    from ..creation import full

    fill = math.nan if input.dtype.is_floating_point else 0
    return full((), fill, dtype=input.dtype, device=input._device)


@tensor_method
def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
    propagates.

    Example::

        >>> ember.median(ember.tensor([4., 1., 3., 2.]))
        tensor(2.)
    """
    return _median("median", input, dim, keepdim, out)


@tensor_method
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """The lower median ignoring NaN (of all elements, or ``(values, indices)`` along ``dim``).

    Example::

        >>> ember.nanmedian(ember.tensor([4., float('nan'), 3., 2.]))
        tensor(3.)
    """
    return _median("nanmedian", input, dim, keepdim, out)


@defop("mode", meta=_dim_pair_meta, save_inputs=False, save_output=True, multi_output=True,
       differentiable_outputs=(0,), kind="reduction",
       opt_outs={"onnx": "ONNX has no operator for it"})
def mode_op(xp, a, *, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    moved = xp.moveaxis(a, dim, -1)
    n = moved.shape[-1]
    ordered = xp.sort(moved, axis=-1)
    pos = xp.arange(n, dtype=np.int64)
    starts = xp.ones(ordered.shape, dtype=np.bool_)
    starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    run_start = accumulate(xp, "maximum", xp.where(starts, pos, 0), -1)
    run_length = pos - run_start + 1
    # The first run (smallest value) reaching the largest count ends at its argmax.
    end = xp.argmax(run_length, axis=-1)[..., None]
    value = xp.take_along_axis(ordered, end, axis=-1)
    # torch reports the last position holding that value.
    last = xp.where(moved == value, pos, -1).max(axis=-1, keepdims=True)
    values = xp.moveaxis(value, -1, dim)
    indices = xp.moveaxis(last, -1, dim).astype(np.int64, copy=False)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


mode_op.defbatch(batching.along_dim)


@mode_op.defderivative
def _mode_derivative(ctx, grad, grad_indices, *, dim, keepdim):
    return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)


mode_op.defjvp(select_jvp)


@tensor_method
def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and
    the last index where it occurs.

    Example::

        >>> ember.mode(ember.tensor([2, 1, 2, 3])).values
        tensor(2)
    """
    _check_tensor(input, "mode")
    _reject(input, "mode_cpu")
    d = _one_dim(dim, input._data.ndim)
    if input._data.ndim and input._device is not META:
        _check_nonempty_dims(input, (d,), "mode")
    result = return_types.mode(*mode_op(input, dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, "mode")


# ---------------------------------------------------------------- quantile, nanquantile


def _lerp(xp, low, high, weight):
    # The formula torch's lerp uses: exact at both ends.
    return xp.where(weight < 0.5, low + weight * (high - low), high - (high - low) * (1 - weight))


def _quantile_plan(xp, a, q, dim, ignore_nan, interpolation):
    """Positions (in ``a`` along ``dim``) of the two elements each quantile interpolates, and
    the weight of the upper one. Shapes: (len(q),) + a.shape with ``dim`` of size 1."""
    order = xp.argsort(a, axis=dim, kind="stable")
    n = a.shape[dim]
    if ignore_nan and a.dtype.kind == "f":
        count = n - xp.sum(a != a, axis=dim, keepdims=True)
    else:
        count = xp.full(_unsqueeze_all(a.shape, (dim,)), n, dtype=np.int64)
    q = q.reshape((-1,) + (1,) * a.ndim)
    rank = q * xp.maximum(count - 1, 0).astype(q.dtype)
    if interpolation == "lower":
        rank = xp.floor(rank)
    elif interpolation == "higher":
        rank = xp.ceil(rank)
    elif interpolation == "nearest":
        rank = xp.round(rank)
    low = xp.floor(rank).astype(np.int64)
    high = xp.ceil(rank).astype(np.int64)
    weight = rank - low
    if interpolation == "midpoint":
        weight = xp.where(high > low, 0.5, 0.0).astype(q.dtype)
    expanded = xp.broadcast_to(order, (q.shape[0],) + order.shape)
    low_idx = xp.take_along_axis(expanded, low, axis=dim + 1)
    high_idx = xp.take_along_axis(expanded, high, axis=dim + 1)
    return low_idx, high_idx, weight, count


def _quantile_meta(a, q, *, dim, keepdim, scalar_q, ignore_nan, interpolation):
    shape = reduced_shape(a.shape, (dim,), keepdim)
    return (shape if scalar_q else (q.shape[0],) + shape), a.dtype


@defop("quantile", meta=_quantile_meta, kind="reduction", autocast={"cpu": "fp32"},
       opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
def quantile_op(xp, a, q, *, dim, keepdim, scalar_q, ignore_nan, interpolation):
    low_idx, high_idx, weight, count = _quantile_plan(xp, a, q, dim, ignore_nan, interpolation)
    values = xp.broadcast_to(a, (low_idx.shape[0],) + a.shape)
    low = xp.take_along_axis(values, low_idx, axis=dim + 1)
    high = xp.take_along_axis(values, high_idx, axis=dim + 1)
    result = _lerp(xp, low, high, weight.astype(a.dtype))
    if a.dtype.kind == "f":
        if ignore_nan:
            result = xp.where(count == 0, np.nan, result)
        else:
            result = xp.where(xp.any(a != a, axis=dim, keepdims=True), np.nan, result)
    result = result.astype(a.dtype, copy=False)
    if not keepdim:
        result = result.squeeze(dim + 1)
    return result[0] if scalar_q else result


quantile_op.defbatch(batching.quantile)


@quantile_op.defderivative
def _quantile_derivative(ctx, grad, *, dim, keepdim, scalar_q, ignore_nan, interpolation):
    x, q = ctx.inputs
    xp = x._device.xp
    # the positions come from x's values outside any operator: vmap's replay may reuse them
    # only for batch elements equal to the recorded one (else it loops)
    _traced_to_python(x, "the positions quantile's gradient reads")
    low_idx, high_idx, weight, count = _quantile_plan(xp, x._data, q._data, dim, ignore_nan,
                                                      interpolation)
    if scalar_q:
        grad = grad.unsqueeze(0)
    if not keepdim:
        grad = grad.unsqueeze(dim + 1)
    grad_q = _quantile_q_grad(x, q, grad, low_idx, high_idx, count, dim, interpolation)
    shape = x._data.shape
    k = weight.shape[0]
    weight = Tensor._make(weight.astype(x._data.dtype), x._device)
    low = Tensor._make(low_idx, x._device)
    high = Tensor._make(high_idx, x._device)
    # Move the quantile axis next to dim, then gather-transpose both endpoints at once.
    grad_low = (grad * (1 - weight)).movedim(0, dim + 1)
    grad_high = (grad * weight).movedim(0, dim + 1)
    flat = [*shape[:dim], k, *shape[dim + 1:]]
    indices = _cat2(low.movedim(0, dim + 1).reshape(flat), high.movedim(0, dim + 1).reshape(flat),
                    dim)
    grads = _cat2(grad_low.reshape(flat), grad_high.reshape(flat), dim)
    return _scatter_grad(grads, indices, dim, shape), grad_q


def _quantile_q_grad(x, q, grad, low_idx, high_idx, count, dim, interpolation):
    """The gradient for a tensor ``q``: with linear interpolation the result moves by
    ``(high - low) * (n - 1)`` per unit of q; the other modes are piecewise constant."""
    if interpolation != "linear":
        return q.detach() * 0
    values = x.unsqueeze(0).expand(grad.shape[0], *x.shape)
    low = values.gather(dim + 1, Tensor._make(low_idx, x._device))
    high = values.gather(dim + 1, Tensor._make(high_idx, x._device))
    steps = Tensor._make(np.maximum(count - 1, 0).astype(x._data.dtype), x._device)
    slope = grad * (high - low) * steps
    return slope.reshape(grad.shape[0], -1).sum(1).reshape(q.shape)


def _cat2(a, b, dim):
    from ..shape import cat

    return cat([a, b], dim)


def _quantile(name, input, q, dim, keepdim, interpolation, out):
    _check_tensor(input, name)
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        from ..creation import full

        q = full((1,), float(q), dtype=input.dtype, device=input._device)
    else:
        if q._data.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q._data.ndim == 0:
            scalar_q = True
            q = q.reshape(1)
        if q._device is not META and q._data.size and not bool(
                ((q._data >= 0) & (q._data <= 1)).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input._data.size == 0 and input._device is not META:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    original_ndim = input._data.ndim
    if dim is None:
        flat = input.reshape(-1)
        d = 0
    else:
        flat = input if original_ndim else input.reshape(1)
        d = wrap_dim(dim, original_ndim)
    result = quantile_op(flat, q, dim=d,
                         keepdim=keepdim and dim is not None and original_ndim > 0,
                         scalar_q=scalar_q, ignore_nan=name == "nanquantile",
                         interpolation=interpolation)
    if dim is None and keepdim:
        lead = () if scalar_q else (q._data.shape[0],)
        result = result.reshape(lead + (1,) * original_ndim)
    return write_out(result, out, name)


@tensor_method
@autocast_policy(cpu="fp32")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles along ``dim`` (of all elements by default); ``q`` is a number or
    a 1-D tensor (whose size becomes the first dim of the result).

    Example::

        >>> ember.quantile(ember.tensor([1., 2., 3., 4.]), 0.5)
        tensor(2.5000)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out)


@tensor_method
@autocast_policy(cpu="fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring NaN values.

    Example::

        >>> ember.nanquantile(ember.tensor([1., float('nan'), 3.]), 0.5)
        tensor(2.)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out)


# ---------------------------------------------------------------- unique, unique_consecutive


def _data_dependent_meta(name):
    def meta(*arrays, **params):
        raise NotImplementedError(f"{name}: the output shape depends on the data, which the "
                                  "'meta' device does not have")
    return meta


def _unique_consecutive_flat(xp, flat):
    n = flat.shape[0]
    if n == 0:
        return flat, xp.zeros(0, np.int64), xp.zeros(0, np.int64)
    starts = xp.ones(n, dtype=np.bool_)
    starts[1:] = flat[1:] != flat[:-1]
    inverse = xp.cumsum(starts) - 1
    positions = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([positions, xp.asarray([n])]))
    return flat[starts], inverse.astype(np.int64), counts.astype(np.int64)


def _unique_rows(xp, moved, consecutive):
    """Unique slices of ``moved`` (slices along axis 0, compared whole)."""
    n = moved.shape[0]
    rows = moved.reshape(n, math.prod(moved.shape[1:]))
    if n == 0:
        return moved, xp.zeros(0, np.int64), xp.zeros(0, np.int64)
    if consecutive:
        order = xp.arange(n)
    else:
        keys = [rows[:, j] for j in range(rows.shape[1] - 1, -1, -1)] if rows.shape[1] else []
        order = xp.lexsort(xp.stack(keys)) if keys else xp.arange(n)
    ordered = rows[order]
    starts = xp.ones(n, dtype=np.bool_)
    if rows.shape[1]:
        starts[1:] = xp.any(ordered[1:] != ordered[:-1], axis=1)
    else:
        starts[1:] = False
    group = xp.cumsum(starts) - 1
    inverse = xp.empty(n, np.int64)
    inverse[order] = group
    positions = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([positions, xp.asarray([n])]))
    return moved[order[starts]], inverse, counts.astype(np.int64)


@defop("unique", meta=_data_dependent_meta("unique"), multi_output=True, kind="other",
       opt_outs={"onnx": "not mapped yet (ONNX's Unique computes it)"})
def unique_op(xp, a, *, dim, consecutive):
    if dim is None:
        flat = a.reshape(-1)
        if consecutive:
            values, inverse, counts = _unique_consecutive_flat(xp, flat)
        else:
            order = xp.argsort(flat, kind="stable")
            values, group, counts = _unique_consecutive_flat(xp, flat[order])
            inverse = xp.empty(flat.shape[0], np.int64)
            inverse[order] = group
        return values, inverse.reshape(a.shape), counts
    moved = xp.moveaxis(a, dim, 0)
    values, inverse, counts = _unique_rows(xp, moved, consecutive)
    return xp.moveaxis(values, 0, dim), inverse, counts


unique_op.opt_out("batch", "its shape depends on the values: vmap runs it element by element")
unique_op.opt_out("derivative", "torch does not differentiate unique")


def _unique(name, input, return_inverse, return_counts, dim, consecutive):
    _check_tensor(input, name)
    _reject(input, "unique")
    if dim is not None:
        dim = wrap_dim(dim, input._data.ndim)
        if input._data.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    values, inverse, counts = unique_op(input, dim=dim, consecutive=consecutive)
    if not return_inverse and not return_counts:
        return values
    result = (values,)
    if return_inverse:
        result += (inverse,)
    if return_counts:
        result += (counts,)
    return result


@tensor_method
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The sorted unique elements (or slices along ``dim``), optionally with the inverse
    indices and the counts.

    Example::

        >>> ember.unique(ember.tensor([3, 1, 3, 2]), return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    return _unique("unique", input, return_inverse, return_counts, dim, consecutive=False)


@tensor_method
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``).

    Example::

        >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 1]))
        tensor([1, 2, 1])
    """
    return _unique("unique_consecutive", input, return_inverse, return_counts, dim,
                   consecutive=True)
