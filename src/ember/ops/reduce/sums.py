"""Sums and means: sum, nansum, prod, mean, nanmean (and sum_to_size)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ...autograd.forward_ad import linear_jvp, reduction_jvp
from .._methods import tensor_method
from .._operands import varargs_or_keyword
from .._registry import defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._common import (
    _LOW_PRECISION,
    _compute_dtype,
    _count,
    _dims,
    _expand_back,
    _isnan,
    _keep,
    _one_dim,
    _quiet,
    _reduce_meta,
    _reduction_onnx,
    _type_name,
    _where,
)

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "sum_to_size"]


# ---------------------------------------------------------------- sum, nansum, prod


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    if input._data.dtype.kind in "biu":
        return dt.int64
    return None


@defop("sum", meta=_reduce_meta(), save_inputs=False, kind="reduction", autocast={"cuda": "fp32"},
       onnx=_reduction_onnx("ReduceSum"))
def sum_op(xp, a, *, dims, keepdim, dtype=None):
    if dtype is None and a.dtype in _LOW_PRECISION:
        return xp.sum(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(a.dtype)
    return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


sum_op.defbatch(batching.reduction)


@sum_op.defderivative
def _sum_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    return (_expand_back(grad, ctx._input_meta[0][0], dims, keepdim),)


sum_op.defjvp(linear_jvp(sum_op))


@tensor_method
@signature("sum(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor", overloaded=True)
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum over ``dim`` (all dims by default); integers and bools sum as int64.

    Example::

        >>> ember.sum(ember.tensor([[1, 2], [3, 4]]), dim=0)
        tensor([4, 6])
    """
    dims = _dims(dim, input._data.ndim)
    return write_out(sum_op(input, dims=dims, keepdim=keepdim,
                            dtype=_sum_dtype(input, dtype)), out, "sum")


@tensor_method
def sum_to_size(input, *sizes, size=None):
    """Sum ``input`` down to a shape it was broadcast from.

    Example::

        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    size = varargs_or_keyword("sum_to_size", sizes, size)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return sum_to_shape(input, tuple(size))


def sum_to_shape(input, size):
    """:func:`sum_to_size` of a shape tuple, without parsing arguments (autograd's engine
    reduces broadcast gradients with it).

    Example::

        >>> sum_to_shape(ember.ones(4, 3), (1, 3))
        tensor([[4., 4., 4.]])
    """
    shape = input._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    if not size:  # torch sums to a scalar even from a 0-dim tensor (bool becomes int64)
        return sum(input)
    if not dims:
        return input
    result = sum_op(input, dims=dims, keepdim=True, dtype=_sum_dtype(input, None))
    return result.reshape(size) if lead else result


@defop("nansum", meta=_reduce_meta(), kind="reduction",
       opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
def nansum_op(xp, a, *, dims, keepdim, dtype=None):
    if a.dtype.kind not in "biu":  # floating, complex and bfloat16 (kind 'V')
        a = xp.where(a != a, 0, a)
    return sum_op.kernel(xp, a, dims=dims, keepdim=keepdim, dtype=dtype)


nansum_op.defbatch(batching.reduction)


@nansum_op.defderivative
def _nansum_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    x = ctx.inputs[0]
    return (_where(_isnan(x), 0.0, _expand_back(grad, x._data.shape, dims, keepdim)),)


nansum_op.defjvp(reduction_jvp(nansum_op))


@tensor_method
@signature("nansum(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor")
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum over ``dim`` treating NaN as zero.

    Example::

        >>> ember.nansum(ember.tensor([1., float('nan'), 2.]))
        tensor(3.)
    """
    if input._data.dtype.kind == "c":
        raise RuntimeError("nansum does not support complex inputs")
    dims = _dims(dim, input._data.ndim)
    return write_out(nansum_op(input, dims=dims, keepdim=keepdim,
                               dtype=_sum_dtype(input, dtype)), out, "nansum")


@defop("prod", meta=_reduce_meta(), save_output=True, kind="reduction", autocast="fp32",
       onnx=_reduction_onnx("ReduceProd"))
def prod_op(xp, a, *, dims, keepdim, dtype=None):
    if dtype is None and a.dtype in _LOW_PRECISION:
        return xp.prod(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(a.dtype)
    return xp.prod(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


prod_op.defbatch(batching.reduction)


@prod_op.defderivative
def _prod_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    x = ctx.inputs[0]
    shape = x._data.shape
    if not dims:
        return (grad,)
    grad = _keep(grad, shape, dims, keepdim)
    if x._device is META or not bool((x._data == 0).any()):
        return (grad * (_keep(ctx.output, shape, dims, keepdim) / x).conj(),)
    # With zeros: the product of the other elements as (product before) * (product after),
    # from exclusive cumulative products, which stay differentiable for double backward.
    flat, d = (x, dims[0]) if len(dims) == 1 else (x.reshape(-1), 0)
    others = _exclusive_cumprod(flat, d, False) * _exclusive_cumprod(flat, d, True)
    return (grad * others.reshape(shape).conj(),)


prod_op.defjvp(reduction_jvp(prod_op))


def _exclusive_cumprod(x, dim, reverse):
    """``prod(x[..., :i])`` (or of ``x[..., i+1:]`` when ``reverse``) at every position i."""
    from ..shape import cat, flip, narrow
    from .scans import cumprod_op

    n = x._data.shape[dim]
    if reverse:
        x = flip(x, (dim,))
    ones_shape = list(x._data.shape)
    ones_shape[dim] = 1
    shifted = cat([x.new_ones(ones_shape), narrow(x, dim, 0, n - 1)], dim)
    result = cumprod_op(shifted, dim=dim)
    return flip(result, (dim,)) if reverse else result


@tensor_method
@signature("prod(Tensor input, int? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor", overloaded=True)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The product over ``dim`` (all elements by default); integers multiply as int64.

    Example::

        >>> ember.prod(ember.tensor([[1., 2.], [3., 4.]]), 1)
        tensor([ 2., 12.])
    """
    if dim is None:
        dims = tuple(range(input._data.ndim))
    else:
        dims = (_one_dim(dim, input._data.ndim),) if input._data.ndim else ()
    return write_out(prod_op(input, dims=dims, keepdim=keepdim,
                             dtype=_sum_dtype(input, dtype)), out, "prod")


# ---------------------------------------------------------------- mean, nanmean


def _mean_onnx(ctx, x, dims=None, keepdim=False, dtype=None, welford=False):
    # (an infinity before the last element stays infinite here: the plain mean)
    return _reduction_onnx("ReduceMean")(ctx, x, dims, keepdim, dtype)


@defop("mean", meta=_reduce_meta(), save_inputs=False, kind="reduction", onnx=_mean_onnx)
def mean_op(xp, a, *, dims, keepdim, dtype=None, welford=False):
    if xp is np and dtype is None and not welford and a.dtype in _MEAN_FLOATS and a.size \
            and a.ndim:
        return _float_mean(a, dims, keepdim)
    if dtype is not None:
        a = a.astype(dtype.np)
    compute = _compute_dtype(a)
    with _quiet(xp):
        result = xp.mean(a, axis=dims, keepdims=keepdim, dtype=compute)
    result = result.astype(a.dtype) if compute is not None else result
    return _welford_infinities(xp, a, dims, result) if welford else result


_MEAN_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _float_mean(a, dims, keepdim):
    """``np.mean`` of a non-empty float32/float64 array of at least one dim, computed as it
    computes it (NumPy's sum, then one division by the count in float64, rounded back)
    without its Python layers: 3 of its 7 us on a loss-sized array.

    Example::

        >>> _float_mean(np.array([[1., 2.], [3., 5.]]), (1,), False)
        array([1.5, 4. ])
    """
    with np.errstate(all="ignore"):  # (an overflowing sum is inf, as in torch)
        total = np.add.reduce(a, axis=dims, keepdims=True)
        np.true_divide(total, np.intp(_count(a.shape, dims)), out=total, casting="unsafe")
    if keepdim:
        return total
    return total.reshape(tuple(n for d, n in enumerate(a.shape) if d not in dims))


def _welford_infinities(xp, a, dims, mean):
    """``mean`` with NaN where torch's running (Welford) mean, ``m += (x - m) / k``, meets an
    infinity before the last element of a reduced slice: any later element then makes it
    ``inf - inf``. ``var_mean`` and ``std_mean`` compute their mean so.

    Example::

        >>> _welford_infinities(np, np.array([np.inf, 1.]), (0,), np.float64(np.inf))
        array(nan)
    """
    if a.dtype.kind != "f" or (xp is np and not np.isinf(mean).any()):
        return mean  # (only an infinite mean can change; the check would sync a GPU)
    kept = a.ndim - len(dims)
    rows = xp.moveaxis(a, dims, tuple(range(kept, a.ndim)))
    rows = rows.reshape(rows.shape[:kept] + (_count(a.shape, dims),))
    lost = xp.isinf(rows[..., :-1]).any(axis=-1).reshape(xp.shape(mean))
    return xp.where(lost, xp.asarray(math.nan, dtype=mean.dtype), mean)


mean_op.defbatch(batching.reduction)


@mean_op.defderivative
def _mean_derivative(ctx, grad, *, dims, keepdim, dtype=None, welford=False):
    shape = ctx._input_meta[0][0]
    return (_expand_back(grad, shape, dims, keepdim) / _count(shape, dims),)


mean_op.defjvp(linear_jvp(mean_op))


@tensor_method
@signature("mean(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor", overloaded=True)
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean over ``dim`` (all dims by default); needs a floating or complex input.

    Example::

        >>> ember.mean(ember.tensor([[1., 2.], [3., 4.]]), dim=1)
        tensor([1.5000, 3.5000])
    """
    dtype = dt.to_dtype(dtype) if dtype is not None else None
    target = dtype or input.dtype
    if not (target.is_floating_point or target.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_type_name(target)}")
    dims = _dims(dim, input._data.ndim)
    return write_out(mean_op(input, dims=dims, keepdim=keepdim, dtype=dtype), out, "mean")


@tensor_method
@signature("nanmean(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean over ``dim`` of the non-NaN elements.

    Example::

        >>> ember.nanmean(ember.tensor([1., float('nan'), 3.]))
        tensor(2.)
    """
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_type_name(input.dtype)}")
    if input.dtype.is_complex:
        raise RuntimeError("nansum does not support complex inputs")
    dims = _dims(dim, input._data.ndim)
    count = sum_op(input == input, dims=dims, keepdim=keepdim, dtype=None)
    total = nansum_op(input, dims=dims, keepdim=keepdim, dtype=None)
    result = total / count
    if dtype is not None:
        result = result.to(dt.to_dtype(dtype))
    return write_out(result, out, "nanmean")
