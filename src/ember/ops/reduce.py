"""Reductions, scans, sorting and counting: sum, mean, var, max, norm, cumsum, sort, unique...

The shared helpers (dim handling, the meta rule :func:`reduced_shape`, gradients that route to
selected indices) live at the top; each family follows as ops (kernel, meta rule, derivative)
and the public functions with torch's signatures. Methods are attached to Tensor at the bottom.

Gradients that go to selected elements (``max(dim)``, ``sort``, ``topk``, ``median``...) use
:func:`_select_grad` (one selected element per slice: a one-hot comparison and ``where``) or
:func:`_scatter_grad` (several, possibly repeated: ``scatter_add`` from ``ops.index``).
"""

from __future__ import annotations

import builtins
import contextlib
import math
import warnings

import numpy as np

from .. import _dtype as dt
from .. import return_types
from .._device import META
from .._tensor import Tensor
from ..autograd.forward_ad import linear_jvp, reduction_jvp, select_jvp
from ._operands import varargs_or_keyword, wrap_dim, wrap_dims
from ._registry import Op, autocast_policy, defop, inplace, write_out
from ._signature import signature
from ._util import accumulate, host_values

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "std", "var", "std_mean", "var_mean",
           "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "all", "any", "norm",
           "logsumexp", "median", "nanmedian", "mode", "quantile", "nanquantile",
           "count_nonzero", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff",
           "sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
           "bincount", "histc", "histogram", "searchsorted", "bucketize", "sum_to_size"]

_LOW_PRECISION = dt.LOW_PRECISION


# ---------------------------------------------------------------- shared helpers


def reduced_shape(shape, dims, keepdim):
    """The shape after reducing ``dims`` (already wrapped and sorted)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduce_meta(out_dtype=None):
    def meta(a, *, dims, keepdim, **params):
        dtype = params.get("dtype") or out_dtype or a.dtype
        return reduced_shape(a.shape, dims, keepdim), dtype
    return meta


def _real_meta(a, *, dims, keepdim, **params):
    return reduced_shape(a.shape, dims, keepdim), dt.from_numpy_dtype(a.dtype).to_real()


def _dims(dim, ndim):
    """Wrapped, sorted dims; None or an empty sequence mean all dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return wrap_dims(dim, ndim)


def _one_dim(dim, ndim):
    return wrap_dim(int(dim), ndim) if ndim else 0


def _expand_back(grad, shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims."""
    if not keepdim and dims:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


def _keep(t, shape, dims, keepdim):
    """A reduced tensor with its reduced dims restored as size 1 (for broadcasting)."""
    if not keepdim and dims:
        for d in dims:
            t = t.unsqueeze(d)
    return t


def _count(shape, dims):
    return math.prod(shape[d] for d in dims)


def _quiet(xp):
    """Silence NumPy's floating-point warnings (0/0 and friends give NaN/inf as in torch)."""
    return np.errstate(all="ignore") if xp is np else contextlib.nullcontext()


def _compute_dtype(a):
    """float16/bfloat16 accumulate in float32, as torch does."""
    return np.float32 if a.dtype in _LOW_PRECISION else None


def _positions(n, dim, ndim, device):
    """``arange(n)`` shaped to broadcast along ``dim`` of an ``ndim``-dim tensor."""
    from .creation import arange

    shape = [1] * ndim
    shape[dim] = n
    return arange(n, device=device).reshape(shape)


def _where(condition, a, b):
    from .pointwise import where

    return where(condition, a, b)


def _isnan(t):
    return t != t


def _select_grad(grad, indices, dim, shape, keepdim):
    """Gradient of a selection of one element per slice along ``dim`` (max(dim), median...)."""
    if len(shape) == 0:
        return grad
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    mask = _positions(shape[dim], dim, len(shape), grad._device) == indices
    return _where(mask, grad, 0.0)


def _scatter_grad(grad, indices, dim, shape):
    """Gradient of a gather along ``dim``: ``grad`` summed into zeros at ``indices``."""
    if len(shape) == 0:
        return grad.reshape(())
    from . import index

    scatter_add = getattr(index, "scatter_add", None)
    if scatter_add is not None:
        return scatter_add(grad.new_zeros(shape), dim, indices, grad)
    # Fallback until ops.index has scatter_add: compare positions with every index (n x k).
    ndim = len(shape)
    positions = _positions(shape[dim], dim, ndim + 1, grad._device)
    mask = positions == indices.unsqueeze(dim)
    return _where(mask, grad.unsqueeze(dim), 0.0).sum(dim + 1)


def _write_out_tuple(results, out, name):
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors")
    for r, o in zip(results, out):
        write_out(r, o, name)
    return type(results)(*out)


def _check_tensor(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _type_name(d):
    from ._registry import _short_name

    return _short_name(d)


def _no_complex(input, name):
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")


def _reject(input, kernel, kinds="c"):
    """torch's NotImplementedError for a dtype its CPU kernel ``kernel`` lacks."""
    if input._data.dtype.kind in kinds:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")


def _check_nonempty_dims(input, dims, name):
    shape = input._data.shape
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _unsqueeze_all(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


# ---------------------------------------------------------------- sum, nansum, prod


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    if input._data.dtype.kind in "biu":
        return dt.int64
    return None


@defop("sum", meta=_reduce_meta(), save_inputs=False, kind="reduction", autocast={"cuda": "fp32"})
def sum_op(xp, a, *, dims, keepdim, dtype=None):
    if dtype is None and a.dtype in _LOW_PRECISION:
        return xp.sum(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(a.dtype)
    return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


@sum_op.defderivative
def _sum_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    return (_expand_back(grad, ctx._input_meta[0][0], dims, keepdim),)


sum_op.defjvp(linear_jvp(sum_op))


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


def sum_to_size(input, *sizes, size=None):
    """Sum ``input`` down to a shape it was broadcast from.

    Example::

        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    size = varargs_or_keyword("sum_to_size", sizes, size)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
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


@defop("nansum", meta=_reduce_meta(), kind="reduction")
def nansum_op(xp, a, *, dims, keepdim, dtype=None):
    if a.dtype.kind not in "biu":  # floating, complex and bfloat16 (kind 'V')
        a = xp.where(a != a, 0, a)
    return sum_op.kernel(xp, a, dims=dims, keepdim=keepdim, dtype=dtype)


@nansum_op.defderivative
def _nansum_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    x = ctx.inputs[0]
    return (_where(_isnan(x), 0.0, _expand_back(grad, x._data.shape, dims, keepdim)),)


nansum_op.defjvp(reduction_jvp(nansum_op))


@signature("nansum(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor")
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum over ``dim`` treating NaN as zero.

    Example::

        >>> ember.nansum(ember.tensor([1., float('nan'), 2.]))
        tensor(3.)
    """
    _check_tensor(input, "nansum")
    if input._data.dtype.kind == "c":
        raise RuntimeError("nansum does not support complex inputs")
    dims = _dims(dim, input._data.ndim)
    return write_out(nansum_op(input, dims=dims, keepdim=keepdim,
                               dtype=_sum_dtype(input, dtype)), out, "nansum")


@defop("prod", meta=_reduce_meta(), save_output=True, kind="reduction", autocast="fp32")
def prod_op(xp, a, *, dims, keepdim, dtype=None):
    if dtype is None and a.dtype in _LOW_PRECISION:
        return xp.prod(a, axis=dims, keepdims=keepdim, dtype=np.float32).astype(a.dtype)
    return xp.prod(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


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
    from .shape import cat, flip, narrow

    n = x._data.shape[dim]
    if reverse:
        x = flip(x, (dim,))
    ones_shape = list(x._data.shape)
    ones_shape[dim] = 1
    shifted = cat([x.new_ones(ones_shape), narrow(x, dim, 0, n - 1)], dim)
    result = cumprod_op(shifted, dim=dim)
    return flip(result, (dim,)) if reverse else result


@signature("prod(Tensor input, int? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor", overloaded=True)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The product over ``dim`` (all elements by default); integers multiply as int64.

    Example::

        >>> ember.prod(ember.tensor([[1., 2.], [3., 4.]]), 1)
        tensor([ 2., 12.])
    """
    _check_tensor(input, "prod")
    if dim is None:
        dims = tuple(range(input._data.ndim))
    else:
        dims = (_one_dim(dim, input._data.ndim),) if input._data.ndim else ()
    return write_out(prod_op(input, dims=dims, keepdim=keepdim,
                             dtype=_sum_dtype(input, dtype)), out, "prod")


# ---------------------------------------------------------------- mean, nanmean


@defop("mean", meta=_reduce_meta(), save_inputs=False, kind="reduction")
def mean_op(xp, a, *, dims, keepdim, dtype=None):
    if dtype is not None:
        a = a.astype(dtype.np)
    compute = _compute_dtype(a)
    with _quiet(xp):
        result = xp.mean(a, axis=dims, keepdims=keepdim, dtype=compute)
    return result.astype(a.dtype) if compute is not None else result


@mean_op.defderivative
def _mean_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    shape = ctx._input_meta[0][0]
    return (_expand_back(grad, shape, dims, keepdim) / _count(shape, dims),)


mean_op.defjvp(linear_jvp(mean_op))


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


@signature("nanmean(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " ScalarType? dtype=None, Tensor? out=None) -> Tensor")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean over ``dim`` of the non-NaN elements.

    Example::

        >>> ember.nanmean(ember.tensor([1., float('nan'), 3.]))
        tensor(2.)
    """
    _check_tensor(input, "nanmean")
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


# ---------------------------------------------------------------- var, std


def _var_kernel(xp, a, dims, correction, keepdim):
    compute = _compute_dtype(a)
    if compute is not None:
        a = a.astype(compute)
    n = _count(a.shape, dims)
    with _quiet(xp):
        centred = a - xp.sum(a, axis=dims, keepdims=True) / n
        if centred.dtype.kind == "c":
            squares = centred.real * centred.real + centred.imag * centred.imag
        else:
            squares = centred * centred
        result = xp.sum(squares, axis=dims, keepdims=keepdim) / builtins.max(n - correction, 0)
    return result


def _warn_dof(n, correction, name):
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=4)


@defop("var", meta=_real_meta, kind="reduction")
def var_op(xp, a, *, dims, correction, keepdim):
    result = _var_kernel(xp, a, dims, correction, keepdim)
    return result.astype(dt.from_numpy_dtype(a.dtype).to_real().np, copy=False)


@var_op.defderivative
def _var_derivative(ctx, grad, *, dims, correction, keepdim):
    x = ctx.inputs[0]
    dof = _count(x._data.shape, dims) - correction
    scale = 2.0 / dof if dof > 0 else math.inf
    grad = _expand_back(grad, x._data.shape, dims, keepdim)
    return (grad * scale * (x - x.mean(dims, keepdim=True)),)


var_op.defjvp(reduction_jvp(var_op))


@defop("std", meta=_real_meta, save_output=True, kind="reduction")
def std_op(xp, a, *, dims, correction, keepdim):
    result = xp.sqrt(_var_kernel(xp, a, dims, correction, keepdim))
    return result.astype(dt.from_numpy_dtype(a.dtype).to_real().np, copy=False)


@std_op.defderivative
def _std_derivative(ctx, grad, *, dims, correction, keepdim):
    x = ctx.inputs[0]
    shape = x._data.shape
    dof = _count(shape, dims) - correction
    scale = 1.0 / dof if dof > 0 else math.inf
    grad = _expand_back(grad / ctx.output, shape, dims, keepdim)
    return (grad * scale * (x - x.mean(dims, keepdim=True)),)


std_op.defjvp(reduction_jvp(std_op))


def _var_args(name, input, dim, unbiased, keepdim, correction):
    """torch's overloads: (dim, unbiased, keepdim), (unbiased) and (dim, *, correction)."""
    _check_tensor(input, name)
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        "(Tensor, correction=int, unbiased=bool)")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = _dims(dim, input._data.ndim)
    if input._device is not META:
        _warn_dof(_count(input._data.shape, dims), correction, name)
    return dims, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """The variance over ``dim`` with Bessel's ``correction`` (1 by default).

    Example::

        >>> ember.var(ember.tensor([1., 2., 3., 4.]))
        tensor(1.6667)
    """
    dims, correction = _var_args("var", input, dim, unbiased, keepdim, correction)
    return write_out(var_op(input, dims=dims, correction=correction, keepdim=keepdim), out,
                     "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """The standard deviation over ``dim`` with Bessel's ``correction`` (1 by default).

    Example::

        >>> ember.std(ember.tensor([1., 2., 3., 4.]))
        tensor(1.2910)
    """
    dims, correction = _var_args("std", input, dim, unbiased, keepdim, correction)
    return write_out(std_op(input, dims=dims, correction=correction, keepdim=keepdim), out,
                     "std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """``(var(input, ...), mean(input, ...))`` in one call.

    Example::

        >>> ember.var_mean(ember.tensor([1., 2., 3.]))
        (tensor(1.), tensor(2.))
    """
    dims, correction = _var_args("var_mean", input, dim, unbiased, keepdim, correction)
    result = (var_op(input, dims=dims, correction=correction, keepdim=keepdim),
              mean_op(input, dims=dims, keepdim=keepdim))
    return _write_out_tuple(result, out, "var_mean") if out is not None else result


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """``(std(input, ...), mean(input, ...))`` in one call.

    Example::

        >>> ember.std_mean(ember.tensor([1., 2., 3.]))
        (tensor(1.), tensor(2.))
    """
    dims, correction = _var_args("std_mean", input, dim, unbiased, keepdim, correction)
    result = (std_op(input, dims=dims, correction=correction, keepdim=keepdim),
              mean_op(input, dims=dims, keepdim=keepdim))
    return _write_out_tuple(result, out, "std_mean") if out is not None else result


# ---------------------------------------------------------------- max, min, amax, amin


def _evenly_distribute(ctx, grad, nan_aware):
    """Gradient of a full reduction that picks a value: split evenly among the elements equal
    to it (for ``max()``/``median()``, NaN results go to the NaN elements)."""
    x = ctx.inputs[0]
    value = ctx.output
    mask = x == value
    if nan_aware and x._device is not META and value._data.dtype.kind in "fc" \
            and bool(np.isnan(value._host_array())):
        mask = _isnan(x)
    count = mask.sum()
    return (_where(mask, grad / count, 0.0),)


def _scale_by_count(ctx, grad, dims, keepdim):
    """amax/amin: the gradient over the elements equal to the result, divided by their count."""
    x = ctx.inputs[0]
    shape = x._data.shape
    mask = x == _keep(ctx.output, shape, dims, keepdim)
    count = mask.sum(dims, keepdim=True)
    return ((_keep(grad, shape, dims, keepdim) / count) * mask.to(grad.dtype),)


def _extreme_all(name, reducer):
    op = Op(name, lambda xp, a: getattr(xp, reducer)(a),
            meta=lambda a: ((), a.dtype), save_output=True, kind="reduction")
    op.defderivative(lambda ctx, grad: _evenly_distribute(ctx, grad, nan_aware=True))
    op.defjvp(reduction_jvp(op))
    return op


max_all_op = _extreme_all("max", "max")
min_all_op = _extreme_all("min", "min")


def _extreme_dim(name, arg):
    def kernel(xp, a, *, dim, keepdim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        indices = getattr(xp, arg)(a, axis=dim, keepdims=True)
        values = xp.take_along_axis(a, indices, axis=dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values, indices.astype(np.int64, copy=False)

    def meta(a, *, dim, keepdim):
        shape = reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim)
        return (shape, a.dtype), (shape, np.dtype(np.int64))

    op = Op(name, kernel, meta=meta, save_inputs=False, save_output=True, multi_output=True,
            differentiable_outputs=(0,), kind="reduction")

    @op.defderivative
    def _(ctx, grad, grad_indices, *, dim, keepdim):
        return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)

    op.defjvp(select_jvp)
    return op


max_dim_op = _extreme_dim("max_dim", "argmax")
min_dim_op = _extreme_dim("min_dim", "argmin")
max_dim_op.grad_name = "MaxBackward0"
min_dim_op.grad_name = "MinBackward0"
max_all_op.grad_name = "MaxBackward1"
min_all_op.grad_name = "MinBackward1"


def _extreme(name, input, dim, keepdim, other, out):
    _check_tensor(input, name)
    if isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        from . import pointwise

        return getattr(pointwise, "maximum" if name == "max" else "minimum")(input, other,
                                                                            out=out)
    if dim is None:
        _reject(input, f"{name}_all")
        if input._data.size == 0 and input._device is not META:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return write_out((max_all_op if name == "max" else min_all_op)(input), out, name)
    _no_complex(input, name)
    d = _one_dim(dim, input._data.ndim)
    if input._data.ndim:
        _check_nonempty_dims(input, (d,), name)
    op = max_dim_op if name == "max" else min_dim_op
    result = getattr(return_types, name)(*op(input, dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, name)


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """The largest element; with ``dim``, ``(values, indices)`` along it; with a tensor as the
    second argument, the elementwise :func:`maximum`. NaN propagates.

    Example::

        >>> ember.max(ember.tensor([[1, 5], [7, 2]]), dim=1)
        ember.return_types.max(
        values=tensor([5, 7]),
        indices=tensor([1, 0]))
    """
    return _extreme("max", input, dim, keepdim, other, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """The smallest element; with ``dim``, ``(values, indices)`` along it; with a tensor as the
    second argument, the elementwise :func:`minimum`. NaN propagates.

    Example::

        >>> ember.min(ember.tensor([[1, 5], [7, 2]]), dim=1).values
        tensor([1, 2])
    """
    return _extreme("min", input, dim, keepdim, other, out)


def _amax_kernel(reducer):
    def kernel(xp, a, *, dims, keepdim):
        return getattr(xp, reducer)(a, axis=dims, keepdims=keepdim)
    return kernel


amax_op = Op("amax", _amax_kernel("amax"), meta=_reduce_meta(), save_output=True, kind="reduction")
amin_op = Op("amin", _amax_kernel("amin"), meta=_reduce_meta(), save_output=True, kind="reduction")
amax_op.defderivative(lambda ctx, grad, *, dims, keepdim: _scale_by_count(ctx, grad, dims,
                                                                          keepdim))
amin_op.defderivative(lambda ctx, grad, *, dims, keepdim: _scale_by_count(ctx, grad, dims,
                                                                          keepdim))
amax_op.defjvp(reduction_jvp(amax_op))
amin_op.defjvp(reduction_jvp(amin_op))


def _amax_args(name, input, dim):
    _check_tensor(input, name)
    _reject(input, f"{name[1:]}_values_cpu")
    dims = _dims(dim, input._data.ndim)
    if input._data.size == 0 and input._device is not META:
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        _check_nonempty_dims(input, dims, name)
    return dims


@signature('amax(Tensor input, int[1] dim=[], bool keepdim=False, *, Tensor? out=None) -> Tensor')
def amax(input, dim=(), keepdim=False, *, out=None):
    """The maximum over ``dim`` (all dims by default); the gradient is split among ties.

    Example::

        >>> ember.amax(ember.tensor([[1, 5], [7, 2]]), dim=0)
        tensor([7, 5])
    """
    dims = _amax_args("amax", input, dim)
    return write_out(amax_op(input, dims=dims, keepdim=keepdim), out, "amax")


@signature('amin(Tensor input, int[1] dim=[], bool keepdim=False, *, Tensor? out=None) -> Tensor')
def amin(input, dim=(), keepdim=False, *, out=None):
    """The minimum over ``dim`` (all dims by default); the gradient is split among ties.

    Example::

        >>> ember.amin(ember.tensor([[1, 5], [7, 2]]), dim=0)
        tensor([1, 2])
    """
    dims = _amax_args("amin", input, dim)
    return write_out(amin_op(input, dims=dims, keepdim=keepdim), out, "amin")


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``(min, max)`` over ``dim`` (all elements by default).

    Example::

        >>> ember.aminmax(ember.tensor([3, 1, 2]))
        ember.return_types.aminmax(
        min=tensor(1),
        max=tensor(3))
    """
    _check_tensor(input, "aminmax")
    _reject(input, "aminmax_cpu")
    if dim is None:
        if input._data.size == 0 and input._device is not META:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        dims = tuple(range(input._data.ndim))
    else:
        dims = (_one_dim(dim, input._data.ndim),) if input._data.ndim else ()
        if input._device is not META:
            for d in dims:
                if input._data.shape[d] == 0:
                    raise IndexError("aminmax(): Expected reduction dim " + str(d) +
                                     " to have non-zero size.")
    result = return_types.aminmax(amin_op(input, dims=dims, keepdim=keepdim),
                                  amax_op(input, dims=dims, keepdim=keepdim))
    return _write_out_tuple(result, out, "aminmax")


def _arg_kernel(reducer):
    def kernel(xp, a, *, dim, keepdim):
        if dim is None:
            result = getattr(xp, reducer)(a)
            if keepdim:
                result = xp.reshape(result, (1,) * a.ndim)
        else:
            result = getattr(xp, reducer)(a, axis=dim, keepdims=keepdim) if a.ndim else \
                xp.zeros((), np.int64)
        return xp.asarray(result).astype(np.int64, copy=False)
    return kernel


def _arg_meta(a, *, dim, keepdim):
    if dim is None:
        return ((1,) * a.ndim if keepdim else ()), np.dtype(np.int64)
    return reduced_shape(a.shape, (dim,) if a.ndim else (), keepdim), np.dtype(np.int64)


argmax_op = Op("argmax", _arg_kernel("argmax"), meta=_arg_meta, kind="other")
argmin_op = Op("argmin", _arg_kernel("argmin"), meta=_arg_meta, kind="other")
for _op in (argmax_op, argmin_op):
    _op.opt_out("derivative", "an index result has no gradient")


def _arg(name, input, dim, keepdim, out):
    _check_tensor(input, name)
    if input._data.dtype.kind in "cb":
        kind = "complex" if input._data.dtype.kind == "c" else "bool"
        raise RuntimeError(f"{name}(): does not support {kind} input")
    if dim is not None:
        dim = _one_dim(dim, input._data.ndim)
    if input._device is not META and input._data.size == 0:
        if dim is None:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        if input._data.ndim:
            _check_nonempty_dims(input, (dim,), name)
    op = argmax_op if name == "argmax" else argmin_op
    return write_out(op(input, dim=dim, keepdim=keepdim), out, name)


@signature('argmax(Tensor input, int? dim=None, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def argmax(input, dim=None, keepdim=False, *, out=None):
    """The index of the largest element (of the flattened input, or along ``dim``).

    Example::

        >>> ember.argmax(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([1, 0])
    """
    return _arg("argmax", input, dim, keepdim, out)


@signature('argmin(Tensor input, int? dim=None, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def argmin(input, dim=None, keepdim=False, *, out=None):
    """The index of the smallest element (of the flattened input, or along ``dim``).

    Example::

        >>> ember.argmin(ember.tensor([[1, 5], [7, 2]]), dim=1)
        tensor([0, 1])
    """
    return _arg("argmin", input, dim, keepdim, out)


# ---------------------------------------------------------------- all, any, count_nonzero


def _logical_meta(a, *, dims, keepdim):
    out = np.dtype(np.uint8) if a.dtype == np.uint8 else np.dtype(np.bool_)
    return reduced_shape(a.shape, dims, keepdim), out


def _logical_kernel(reducer):
    def kernel(xp, a, *, dims, keepdim):
        result = getattr(xp, reducer)(a, axis=dims, keepdims=keepdim)
        return xp.asarray(result).astype(np.uint8 if a.dtype == np.uint8 else np.bool_,
                                         copy=False)
    return kernel


all_op = Op("all", _logical_kernel("all"), meta=_logical_meta, kind="reduction")
any_op = Op("any", _logical_kernel("any"), meta=_logical_meta, kind="reduction")
for _op in (all_op, any_op):
    _op.opt_out("derivative", "a boolean result has no gradient")


@signature("all(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " Tensor? out=None) -> Tensor", overloaded="all")
def all(input, dim=None, keepdim=False, *, out=None):
    """Whether every element (along ``dim``) is non-zero; uint8 inputs give uint8.

    Example::

        >>> ember.all(ember.tensor([[True, False], [True, True]]), dim=1)
        tensor([False,  True])
    """
    _check_tensor(input, "all")
    return write_out(all_op(input, dims=_dims(dim, input._data.ndim), keepdim=keepdim), out,
                     "all")


@signature("any(Tensor input, int[1]? dim=None, bool keepdim=False, *,"
           " Tensor? out=None) -> Tensor", overloaded="all")
def any(input, dim=None, keepdim=False, *, out=None):
    """Whether any element (along ``dim``) is non-zero; uint8 inputs give uint8.

    Example::

        >>> ember.any(ember.tensor([[True, False], [False, False]]), dim=1)
        tensor([ True, False])
    """
    _check_tensor(input, "any")
    return write_out(any_op(input, dims=_dims(dim, input._data.ndim), keepdim=keepdim), out,
                     "any")


@defop("count_nonzero", meta=lambda a, *, dims: (reduced_shape(a.shape, dims, False),
                                                   np.dtype(np.int64)), kind="reduction")
def count_nonzero_op(xp, a, *, dims):
    return xp.asarray(xp.sum(a != 0, axis=dims)).astype(np.int64, copy=False)


count_nonzero_op.opt_out("derivative", "a count has no gradient")


@signature('count_nonzero(Tensor input, int[1]? dim=None) -> Tensor', overloaded=True)
def count_nonzero(input, dim=None):
    """The number of non-zero elements (along ``dim``), as int64.

    Example::

        >>> ember.count_nonzero(ember.tensor([[0, 1], [2, 3]]), dim=1)
        tensor([1, 2])
    """
    _check_tensor(input, "count_nonzero")
    return count_nonzero_op(input, dims=_dims(dim, input._data.ndim))


# ---------------------------------------------------------------- logsumexp, norm


@defop("logsumexp", meta=_reduce_meta(), save_output=True, kind="reduction",
       autocast={"cuda": "fp32"})
def logsumexp_op(xp, a, *, dims, keepdim):
    compute = _compute_dtype(a)
    x = a.astype(compute) if compute is not None else a
    with _quiet(xp):
        if x.size and builtins.all(a.shape[d] for d in dims):
            # a real shift for complex input too, so the imaginary part is log's principal one
            shift = xp.amax(x.real, axis=dims, keepdims=True)
            shift = xp.where(xp.isinf(shift), 0, shift)
        else:
            shift = xp.zeros(_unsqueeze_all(a.shape, dims), x.real.dtype)
        result = xp.log(xp.sum(xp.exp(x - shift), axis=dims, keepdims=True)) + shift
    if not keepdim:
        result = result.reshape(reduced_shape(a.shape, dims, False))
    return result.astype(a.dtype, copy=False)


@logsumexp_op.defderivative
def _logsumexp_derivative(ctx, grad, *, dims, keepdim):
    x = ctx.inputs[0]
    shape = x._data.shape
    softmax = (x - _keep(ctx.output, shape, dims, keepdim)).exp()
    if softmax.is_complex():
        softmax = softmax.conj()  # torch's gradient convention for complex inputs
    return (_keep(grad, shape, dims, keepdim) * softmax,)


@logsumexp_op.defjvp
def _logsumexp_jvp(p, t, y, /, *, dims, keepdim):
    """``sum(t * exp(x - y))`` over ``dims`` (holomorphic: the same formula for complex)."""
    (x,), (tx,) = p, t
    kept = y
    if not keepdim:
        for d in sorted(dims):
            kept = kept.unsqueeze(d)
    prod = tx * (x - kept).exp()
    return prod.sum(dims, keepdim=keepdim) if dims else prod


@signature('logsumexp(Tensor input, int[1] dim, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed without overflow.

    Example::

        >>> ember.logsumexp(ember.tensor([0., 0.]), 0)
        tensor(0.6931)
    """
    _check_tensor(input, "logsumexp")
    if input._data.dtype.kind in "biu":
        input = input.to(dt.get_default_dtype())
    return write_out(logsumexp_op(input, dims=_dims(dim, input._data.ndim), keepdim=keepdim),
                     out, "logsumexp")


@defop("norm", meta=_real_meta, save_output=True, grad_name="LinalgVectorNormBackward0",
       kind="reduction", autocast={"cuda": "fp32"})
def norm_op(xp, a, *, p, dims, keepdim):
    compute = _compute_dtype(a)
    x = xp.abs(a.astype(compute) if compute is not None else a)
    with _quiet(xp):
        if p == 2:
            result = xp.sqrt(xp.sum(x * x, axis=dims, keepdims=keepdim))
        elif p == math.inf:
            result = xp.amax(x, axis=dims, keepdims=keepdim)
        elif p == -math.inf:
            result = xp.amin(x, axis=dims, keepdims=keepdim)
        elif p == 0:
            result = xp.sum(x != 0, axis=dims, keepdims=keepdim).astype(x.dtype)
        elif p == 1:
            result = xp.sum(x, axis=dims, keepdims=keepdim)
        else:
            result = xp.sum(x ** p, axis=dims, keepdims=keepdim) ** (1.0 / p)
    return xp.asarray(result).astype(dt.from_numpy_dtype(a.dtype).to_real().np, copy=False)


@norm_op.defderivative
def _norm_derivative(ctx, grad, *, p, dims, keepdim):
    x = ctx.inputs[0]
    shape = x._data.shape
    result = _keep(ctx.output, shape, dims, keepdim)
    grad = _keep(grad, shape, dims, keepdim)
    if p == 0:
        return (x * 0,)
    if p == 1:
        return (x.sgn() * grad,)
    if p == 2:
        return (x * _where(result == 0, 0.0, grad / result),)
    if p in (math.inf, -math.inf):
        mask = (x.abs() == result).to(grad.dtype)
        return (x.sgn() * (grad / mask.sum(dims, keepdim=True)) * mask,)
    magnitude = x.abs()
    if p < 1:
        scaled = x.sgn() * _where(x == 0, 0.0, magnitude ** (p - 1))
        return (scaled * grad * result ** (1 - p),)
    if p < 2:
        scaled = x.sgn() * magnitude ** (p - 1)
        return (scaled * _where(result == 0, 0.0, grad / result ** (p - 1)),)
    return (x * magnitude ** (p - 2) * _where(result == 0, 0.0, grad / result ** (p - 1)),)


norm_op.defjvp(reduction_jvp(norm_op))


@defop("nuclear_norm", meta=lambda a, *, dims, keepdim: (
    reduced_shape(a.shape, dims, keepdim), dt.from_numpy_dtype(a.dtype).to_real()),
    grad_name="LinalgMatrixNormBackward0", kind="linalg", autocast={"cuda": "fp32"})
def nuclear_norm_op(xp, a, *, dims, keepdim):
    moved = xp.moveaxis(a, dims, (-2, -1))
    result = xp.linalg.svd(moved, compute_uv=False).sum(-1)
    if keepdim:
        result = xp.expand_dims(result, dims)
    return result.astype(dt.from_numpy_dtype(a.dtype).to_real().np, copy=False)


nuclear_norm_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@nuclear_norm_op.defderivative
def _nuclear_norm_derivative(ctx, grad, *, dims, keepdim):
    # d||A||_* = U V^H : computed with the SVD's factors, which ops.linalg provides.
    from .. import linalg

    x = ctx.inputs[0]
    moved = x.movedim(dims, (-2, -1))
    u, _, vh = linalg.svd(moved, full_matrices=False)
    g = grad if keepdim else grad.unsqueeze(-1).unsqueeze(-1)
    if keepdim:
        g = g.movedim(dims, (-2, -1))
    return ((u @ vh * g).movedim((-2, -1), dims),)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector ``p``-norm over ``dim`` (all elements by default), the Frobenius norm
    (``'fro'``) or the nuclear norm (``'nuc'``, over two dims).

    Example::

        >>> ember.norm(ember.tensor([3., 4.]))
        tensor(5.)
    """
    _check_tensor(input, "norm")
    if dtype is not None:
        input = input.to(dt.to_dtype(dtype))
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        kind = "linalg.matrix_norm" if p == "nuc" else "linalg.vector_norm"
        raise RuntimeError(f"{kind}: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(input.dtype)}")
    ndim = input._data.ndim
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    if p == "nuc":
        if dim is None:
            if ndim != 2:
                raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                                   "dimensions.") if ndim < 2 else \
                    RuntimeError("norm(): input dim must be 2 for 'nuc' when dim is None")
            dim = (0, 1)
        if len(dim) != 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {list(dim)}")
        dims = tuple(wrap_dim(int(d), ndim) for d in dim)
        if dims[0] == dims[1]:
            raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                               f"{dims[1]})")
        return write_out(nuclear_norm_op(input, dims=dims, keepdim=keepdim), out, "norm")
    if p == "fro":
        p = 2
    elif isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported norm type {p!r}")
    dims = _dims(dim, ndim)
    p = float(p)
    if input._device is not META and input._data.size == 0 and p < 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor "
                           "because the operation does not have an identity")
    return write_out(norm_op(input, p=p, dims=dims, keepdim=keepdim), out, "norm")


# ---------------------------------------------------------------- scans: cumsum, cumprod


def _scan_dtype(input, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    return dt.int64 if input._data.dtype.kind in "biu" else None


def _cumsum_kernel(xp, a, dim, reverse, dtype):
    if a.ndim == 0:
        return a.astype(dtype.np if dtype else a.dtype, copy=True)
    target = dtype.np if dtype else a.dtype
    compute = np.float32 if target in _LOW_PRECISION else target
    if reverse:
        a = xp.flip(a, dim)
    result = xp.cumsum(a, axis=dim, dtype=compute)
    if reverse:
        result = xp.flip(result, dim)
    return result.astype(target, copy=False)


@defop("cumsum", meta=lambda a, *, dim, dtype=None, reverse=False: (a.shape, dtype or a.dtype),
       save_inputs=False, kind="scan", autocast={"cuda": "fp32"})
def cumsum_op(xp, a, *, dim, dtype=None, reverse=False):
    return _cumsum_kernel(xp, a, dim, reverse, dtype)


@cumsum_op.defderivative
def _cumsum_derivative(ctx, grad, *, dim, dtype=None, reverse=False):
    if grad._data.ndim == 0:
        return (grad,)
    return (cumsum_op(grad, dim=dim, reverse=not reverse),)


cumsum_op.defjvp(linear_jvp(cumsum_op))


@signature('cumsum(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None) -> Tensor')
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sums along ``dim``; integers and bools sum as int64.

    Example::

        >>> ember.cumsum(ember.tensor([1, 2, 3]), 0)
        tensor([1, 3, 6])
    """
    _check_tensor(input, "cumsum")
    d = _one_dim(dim, input._data.ndim)
    return write_out(cumsum_op(input, dim=d, dtype=_scan_dtype(input, dtype)), out, "cumsum")


@defop("cumprod", meta=lambda a, *, dim, dtype=None: (a.shape, dtype or a.dtype),
       save_output=True, kind="scan", autocast={"cuda": "fp32"})
def cumprod_op(xp, a, *, dim, dtype=None):
    target = dtype.np if dtype else a.dtype
    if a.ndim == 0:
        return a.astype(target, copy=True)
    compute = np.float32 if target in _LOW_PRECISION else target
    return xp.cumprod(a, axis=dim, dtype=compute).astype(target, copy=False)


@cumprod_op.defderivative
def _cumprod_derivative(ctx, grad, *, dim, dtype=None):
    x = ctx.inputs[0]
    out = ctx.output
    shape = x._data.shape
    if not shape:
        return (grad,)
    n = shape[dim]
    if n == 0:
        return (grad,)
    pos = _positions(n, dim, len(shape), x._device)
    is_zero = x == 0
    # z: the first zero of each slice (n where there is none).
    first_zero = _where(is_zero, pos, n).amin(dim, keepdim=True)
    before = pos < first_zero
    safe = _where(before, x, 1.0)
    # Elements before the first zero: sum_{j>=i} g_j out_j / x_i.
    grad_before = cumsum_op(grad * out.conj(), dim=dim, reverse=True) / safe.conj()
    # The first zero itself: prod_{k<z} x_k * sum_{j>=z} g_j prod_{z<k<=j} x_k.
    at_zero = pos == first_zero
    after = _where(pos > first_zero, x, 1.0)
    tail = cumprod_op(after, dim=dim)
    prefix = prod_op(_where(before, x, 1.0), dims=(dim,), keepdim=True)
    grad_zero = prefix.conj() * _where(pos >= first_zero, grad * tail.conj(), 0.0).sum(
        dim, keepdim=True)
    return (_where(before, grad_before, _where(at_zero, grad_zero, 0.0)),)


@cumprod_op.defjvp
def _cumprod_jvp(p, t, y, *, dim, dtype=None):
    (x,), (tx,) = p, t
    if x._data.ndim == 0:
        return tx
    if x._device._xp is None or not bool((x._data == 0).any()):
        return y * (tx / x).cumsum(dim)
    # With zeros: d y_k = sum_{i<=k} t_i * prod_{j<=k, j!=i} x_j, from a (n x n) table per
    # position: row i is x with x_i replaced by 1, cumulated along k and masked to k >= i.
    from . import creation, pointwise

    n = x._data.shape[dim]
    xm, tm = x.movedim(dim, -1), tx.movedim(dim, -1)
    eye = creation.eye(n, dtype=x.dtype, device=x.device) == 1
    table = pointwise.where(eye, 1.0, xm.unsqueeze(-2)).cumprod(-1)
    upper = creation.ones(n, n, dtype=x.dtype, device=x.device).triu()
    return (table * upper * tm.unsqueeze(-1)).sum(-2).movedim(-1, dim)


@signature('cumprod(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None) -> Tensor')
def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative products along ``dim``; integers and bools multiply as int64.

    Example::

        >>> ember.cumprod(ember.tensor([1, 2, 3]), 0)
        tensor([1, 2, 6])
    """
    _check_tensor(input, "cumprod")
    d = _one_dim(dim, input._data.ndim)
    return write_out(cumprod_op(input, dim=d, dtype=_scan_dtype(input, dtype)), out, "cumprod")


def _running_extreme(name, ufunc):
    def kernel(xp, a, *, dim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        values = accumulate(xp, ufunc, a, dim)
        if a.dtype.kind not in "biu":  # floating, complex, bfloat16 (kind 'V')
            nan_seen = xp.cumsum(a != a, axis=dim) > 0
            values = xp.where(nan_seen, np.nan, values).astype(a.dtype, copy=False)
            hit = (a == values) | ((a != a) & nan_seen)
        else:
            hit = a == values
        shape = [1] * a.ndim
        shape[dim] = a.shape[dim]
        pos = xp.arange(a.shape[dim], dtype=np.int64).reshape(shape)
        indices = accumulate(xp, "maximum", xp.where(hit, pos, 0), dim)
        return values, indices

    op = Op(name, kernel, meta=lambda a, *, dim: ((a.shape, a.dtype),
                                                   (a.shape, np.dtype(np.int64))),
            save_inputs=False, save_output=True, multi_output=True,
            differentiable_outputs=(0,), kind="scan")

    @op.defderivative
    def _(ctx, grad, grad_indices, *, dim):
        shape = ctx._input_meta[0][0]
        return (_scatter_grad(grad, ctx.output[1], dim, shape),)

    op.defjvp(select_jvp)
    return op


cummax_op = _running_extreme("cummax", "maximum")
cummin_op = _running_extreme("cummin", "minimum")


@signature('cummax(Tensor input, int dim, *, Tensor[]? out=None) -> (Tensor, Tensor)')
def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where it was reached.

    Example::

        >>> ember.cummax(ember.tensor([1, 3, 2]), 0).values
        tensor([1, 3, 3])
    """
    _check_tensor(input, "cummax")
    _reject(input, "cummax_cpu")
    result = return_types.cummax(*cummax_op(input, dim=_one_dim(dim, input._data.ndim)))
    return _write_out_tuple(result, out, "cummax")


@signature('cummin(Tensor input, int dim, *, Tensor[]? out=None) -> (Tensor, Tensor)')
def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and the index where it was reached.

    Example::

        >>> ember.cummin(ember.tensor([3, 1, 2]), 0).values
        tensor([3, 1, 1])
    """
    _check_tensor(input, "cummin")
    _reject(input, "cummin_cpu")
    result = return_types.cummin(*cummin_op(input, dim=_one_dim(dim, input._data.ndim)))
    return _write_out_tuple(result, out, "cummin")


@defop("logcumsumexp", meta=lambda a, *, dim, reverse=False: (a.shape, a.dtype),
       save_output=True, kind="scan")
def logcumsumexp_op(xp, a, *, dim, reverse=False):
    if a.ndim == 0:
        return a.copy()
    compute = _compute_dtype(a)
    x = a.astype(compute) if compute is not None else a
    if reverse:
        x = xp.flip(x, dim)
    with _quiet(xp):
        if x.dtype.kind == "c":
            result = _logcumsumexp_complex(xp, x, dim)
        elif xp is np:
            result = np.logaddexp.accumulate(x, axis=dim)
        else:
            shift = xp.amax(x.real, axis=dim, keepdims=True) if x.size else \
                xp.zeros((), x.real.dtype)
            shift = xp.where(xp.isinf(shift), 0, shift)
            result = xp.log(xp.cumsum(xp.exp(x - shift), axis=dim)) + shift
    if reverse:
        result = xp.flip(result, dim)
    return result.astype(a.dtype, copy=False)


def _logcumsumexp_complex(xp, x, dim):
    """torch's scan for complex input, one step per position along ``dim`` (in complex128).

    Each step adds the next element to the running total with :func:`_log_add_exp_complex`,
    whose imaginary part follows the larger operand: it is not wrapped into (-pi, pi], as
    ``log(cumsum(exp(x)))`` would wrap it.
    """
    steps = xp.moveaxis(x.astype(np.complex128), dim, 0)
    result = xp.empty_like(steps)
    total = xp.full(steps.shape[1:], complex(-math.inf, 0.0))
    for i in range(steps.shape[0]):
        total = _log_add_exp_complex(xp, steps[i], total)
        result[i] = total
    return xp.moveaxis(result, 0, dim)


def _log_add_exp_complex(xp, x, y):
    """``log(exp(x) + exp(y))`` for complex arrays as torch computes it: the operand with the
    larger real part plus ``log1p(exp(smaller - larger))``; nan anywhere gives nan.

    Example::

        >>> _log_add_exp_complex(np, np.array([3j]), np.array([0j])).imag  # not wrapped
        array([1.5])
    """
    x_smaller = x.real < y.real
    low, high = xp.where(x_smaller, x, y), xp.where(x_smaller, y, x)
    result = _log1p_complex(xp, xp.exp(low - high)) + high
    both_infinite = ~xp.isfinite(low.real) & (low.real == high.real)
    if both_infinite.any():
        same = xp.where(low.real < 0, low, xp.log(xp.exp(low) + xp.exp(high)))
        result = xp.where(both_infinite, same, result)
    has_nan = xp.isnan(x) | xp.isnan(y)
    return xp.where(has_nan, complex(math.nan, math.nan), result)


def _log1p_complex(xp, z):
    """``log(1 + z)`` for complex ``z``, accurate for small ``z`` (c10's formula)."""
    x, y = z.real, z.imag
    angle = xp.arctan2(y, x + 1)
    small = x * (2 + x) + y * y
    modulus = xp.where(small == 0, x, 0.5 * xp.log1p(small))
    modulus = xp.where(xp.abs(z) < 0.5, modulus, xp.log(xp.hypot(x + 1, y)))
    return modulus + 1j * angle


@logcumsumexp_op.defderivative
def _logcumsumexp_derivative(ctx, grad, *, dim, reverse=False):
    # grad_i = sum_{j>=i} g_j exp(x_i - out_j), done in log space for the positive and the
    # negative parts of g so that nothing overflows.
    x = ctx.inputs[0]
    if x._data.ndim == 0:
        return (grad,)
    out = ctx.output
    # Zero parts of the gradient get the lowest finite value as their log (not -inf), so that
    # no inf - inf appears when this is differentiated again.
    lowest = float(np.finfo(grad._data.dtype).min) if grad._data.dtype.kind == "f" else -1e300
    log_abs = grad.abs().log()
    log_positive = _where(grad > 0, log_abs, lowest)
    log_negative = _where(grad < 0, log_abs, lowest)
    back = not reverse
    pos_part = (logcumsumexp_op(log_positive - out, dim=dim, reverse=back) + x).exp()
    neg_part = (logcumsumexp_op(log_negative - out, dim=dim, reverse=back) + x).exp()
    return (pos_part - neg_part,)


@logcumsumexp_op.defjvp
def _logcumsumexp_jvp(p, t, y, /, *, dim, reverse=False):
    """``cumsum(t * e) / cumsum(e)`` with ``e = exp(x - max(x, dim))`` (torch's formula, the
    max taken over the real part of complex ``x``).

    torch adds 1e-13 to the denominator, so its tangents fall to 0 where ``x`` lies far
    below the max; this rule stays exact there.
    """
    (x,), (tx,) = p, t
    if x._data.ndim == 0:
        return tx
    e = (x - (x.real if x.is_complex() else x).amax(dim, keepdim=True)).exp()
    if reverse:
        return (tx * e).flip(dim).cumsum(dim).flip(dim) / e.flip(dim).cumsum(dim).flip(dim)
    return (tx * e).cumsum(dim) / e.cumsum(dim)


@signature('logcumsumexp(Tensor input, int dim, *, Tensor? out=None) -> Tensor')
def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))``, computed without overflow.

    Example::

        >>> ember.logcumsumexp(ember.tensor([0., 0.]), 0)
        tensor([0.0000, 0.6931])
    """
    _check_tensor(input, "logcumsumexp")
    _reject(input, "logcumsumexp_out_cpu", "biu")
    if input._data.dtype.kind in "iu":
        input = input.to(dt.get_default_dtype())
    return write_out(logcumsumexp_op(input, dim=_one_dim(dim, input._data.ndim)), out,
                     "logcumsumexp")


# ---------------------------------------------------------------- diff


def _diff_shape(shape, n, dim):
    return tuple(builtins.max(s - n, 0) if i == dim else s for i, s in enumerate(shape))


@defop("diff", meta=lambda a, *, n, dim: (_diff_shape(a.shape, n, dim), a.dtype),
       save_inputs=False, kind="other")
def diff_op(xp, a, *, n, dim):
    if a.dtype == np.bool_:
        for _ in range(n):
            a = xp.not_equal(xp.take(a, xp.arange(1, a.shape[dim]), axis=dim),
                             xp.take(a, xp.arange(0, a.shape[dim] - 1), axis=dim))
        return a
    return xp.diff(a, n=n, axis=dim)


diff_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@diff_op.defderivative
def _diff_derivative(ctx, grad, *, n, dim):
    return (diff_adjoint_op(grad, n=n, dim=dim, size=ctx._input_meta[0][0][dim]),)


diff_op.defjvp(linear_jvp(diff_op))


def _diff_adjoint_shape(shape, dim, size):
    return tuple(size if i == dim else s for i, s in enumerate(shape))


@defop("diff_adjoint", meta=lambda g, *, n, dim, size: (_diff_adjoint_shape(g.shape, dim, size),
                                                          g.dtype), save_inputs=False, kind="other")
def diff_adjoint_op(xp, g, *, n, dim, size):
    # The transpose of one difference: x_k gets g_{k-1} - g_k (zero outside the range).
    for _ in range(builtins.min(n, size)):
        pad = [(0, 0)] * g.ndim
        pad[dim] = (1, 1)
        g = -xp.diff(xp.pad(g, pad), axis=dim)
    if g.shape[dim] != size:
        shape = list(g.shape)
        shape[dim] = size
        g = xp.zeros(shape, g.dtype)
    return g


diff_adjoint_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@diff_adjoint_op.defderivative
def _diff_adjoint_derivative(ctx, grad, *, n, dim, size):
    return (diff_op(grad, n=n, dim=dim),)


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and
    ``append``.

    Example::

        >>> ember.diff(ember.tensor([1, 3, 6, 10]))
        tensor([2, 3, 4])
    """
    _check_tensor(input, "diff")
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input._data.ndim)
    if n == 0:
        return write_out(input.clone(), out, "diff")
    if prepend is not None or append is not None:
        from .shape import cat

        parts = [_as_diff_part(prepend, input, d, "prepend"), input,
                 _as_diff_part(append, input, d, "append")]
        input = cat([p for p in parts if p is not None], d)
    return write_out(diff_op(input, n=n, dim=d), out, "diff")


def _as_diff_part(part, input, dim, name):
    if part is None:
        return None
    if not isinstance(part, Tensor):
        from .creation import full

        shape = list(input._data.shape)
        shape[dim] = 1
        return full(shape, part, dtype=input.dtype, device=input._device)
    if part._data.ndim == 0:
        shape = list(input._data.shape)
        shape[dim] = 1
        return part.expand(shape)
    return part


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
       differentiable_outputs=(0,), kind="other")
def sort_op(xp, a, *, dim, descending):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = _argsort(xp, a, dim, descending).astype(np.int64, copy=False)
    return xp.take_along_axis(a, order, axis=dim), order


@sort_op.defderivative
def _sort_derivative(ctx, grad, grad_indices, *, dim, descending):
    return (_scatter_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0]),)


sort_op.defjvp(select_jvp)


def _check_sortable(input, name):
    _check_tensor(input, name)
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): Sort does not support complex dtypes on CPU")


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


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort ``input`` along ``dim``.

    Example::

        >>> ember.argsort(ember.tensor([3, 1, 2]))
        tensor([1, 2, 0])
    """
    return sort(input, dim, descending, stable=stable).indices


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
       differentiable_outputs=(0,), kind="other")
def topk_op(xp, a, *, k, dim, largest):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = _argsort(xp, a, dim, largest)
    order = xp.take(order, xp.arange(k), axis=dim).astype(np.int64, copy=False)
    return xp.take_along_axis(a, order, axis=dim), order


@topk_op.defderivative
def _topk_derivative(ctx, grad, grad_indices, *, k, dim, largest):
    return (_scatter_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0]),)


topk_op.defjvp(select_jvp)


@signature("topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True, *,"
           " Tensor[]? out=None) -> (Tensor, Tensor)")
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``, sorted: ``(values, indices)``.

    Example::

        >>> ember.topk(ember.tensor([1, 5, 3, 4]), 2).values
        tensor([5, 4])
    """
    _check_tensor(input, "topk")
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
       differentiable_outputs=(0,), kind="reduction")
def kthvalue_op(xp, a, *, k, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = xp.argsort(a, axis=dim, kind="stable")
    indices = xp.take(order, xp.asarray([k - 1]), axis=dim).astype(np.int64, copy=False)
    values = xp.take_along_axis(a, indices, axis=dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


kthvalue_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@kthvalue_op.defderivative
def _kthvalue_derivative(ctx, grad, grad_indices, *, k, dim, keepdim):
    return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)


kthvalue_op.defjvp(select_jvp)


@signature("kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False, *,"
           " Tensor[]? out=None) -> (Tensor, Tensor)")
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim`` (1-based): ``(values, indices)``.

    Example::

        >>> ember.kthvalue(ember.tensor([3, 1, 2]), 2).values
        tensor(2)
    """
    _check_tensor(input, "kthvalue")
    _reject(input, "kthvalue_cpu", "cb")
    d = _one_dim(dim, input._data.ndim)
    size = input._data.shape[d] if input._data.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    result = return_types.kthvalue(*kthvalue_op(input, k=int(k), dim=d, keepdim=keepdim))
    return _write_out_tuple(result, out, "kthvalue")


# ---------------------------------------------------------------- median, nanmedian, mode


def _median_all_kernel(ignore_nan):
    def kernel(xp, a):
        flat = a.reshape(-1)
        ordered = xp.sort(flat)  # NaN sorts last
        if flat.dtype.kind not in "biu" and flat.size:
            # decided on the device: no synchronisation on the GPU
            if ignore_nan:
                count = xp.sum(flat == flat)
                return xp.take(ordered, xp.maximum(count - 1, 0) // 2)
            return xp.where(xp.isnan(ordered[-1]), xp.asarray(np.nan, dtype=a.dtype),
                            ordered[(flat.size - 1) // 2])
        return ordered[builtins.max(flat.size - 1, 0) // 2]
    return kernel


median_all_op = Op("median", _median_all_kernel(False), meta=lambda a: ((), a.dtype),
                   save_output=True, kind="reduction")


median_all_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
nanmedian_all_op = Op("nanmedian", _median_all_kernel(True), meta=lambda a: ((), a.dtype),
                      save_output=True, kind="reduction")


nanmedian_all_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
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


median_dim_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
nanmedian_dim_op = _median_dim_op("nanmedian")


nanmedian_dim_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    from .creation import full

    fill = math.nan if input.dtype.is_floating_point else 0
    return full((), fill, dtype=input.dtype, device=input._device)


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN
    propagates.

    Example::

        >>> ember.median(ember.tensor([4., 1., 3., 2.]))
        tensor(2.)
    """
    return _median("median", input, dim, keepdim, out)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """The lower median ignoring NaN (of all elements, or ``(values, indices)`` along ``dim``).

    Example::

        >>> ember.nanmedian(ember.tensor([4., float('nan'), 3., 2.]))
        tensor(3.)
    """
    return _median("nanmedian", input, dim, keepdim, out)


@defop("mode", meta=_dim_pair_meta, save_inputs=False, save_output=True, multi_output=True,
       differentiable_outputs=(0,), kind="reduction")
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


mode_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@mode_op.defderivative
def _mode_derivative(ctx, grad, grad_indices, *, dim, keepdim):
    return (_select_grad(grad, ctx.output[1], dim, ctx._input_meta[0][0], keepdim),)


mode_op.defjvp(select_jvp)


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


@defop("quantile", meta=_quantile_meta, kind="reduction", autocast={"cpu": "fp32"})
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


quantile_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@quantile_op.defderivative
def _quantile_derivative(ctx, grad, *, dim, keepdim, scalar_q, ignore_nan, interpolation):
    x, q = ctx.inputs
    xp = x._device.xp
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
    from .shape import cat

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
        from .creation import full

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


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles along ``dim`` (of all elements by default); ``q`` is a number or
    a 1-D tensor (whose size becomes the first dim of the result).

    Example::

        >>> ember.quantile(ember.tensor([1., 2., 3., 4.]), 0.5)
        tensor(2.5000)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out)


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


@defop("unique", meta=_data_dependent_meta("unique"), multi_output=True, kind="other")
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


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The sorted unique elements (or slices along ``dim``), optionally with the inverse
    indices and the counts.

    Example::

        >>> ember.unique(ember.tensor([3, 1, 3, 2]), return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    return _unique("unique", input, return_inverse, return_counts, dim, consecutive=False)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``).

    Example::

        >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 1]))
        tensor([1, 2, 1])
    """
    return _unique("unique_consecutive", input, return_inverse, return_counts, dim,
                   consecutive=True)


# ---------------------------------------------------------------- bincount, histc, histogram


@defop("bincount", meta=_data_dependent_meta("bincount"), kind="other")
def bincount_op(xp, a, *weights, minlength, out_dtype):
    size = builtins.max(host_values(xp, a.max())[0] + 1 if a.size else 0, minlength)
    if weights:
        w = weights[0].astype(np.float64)
        return xp.bincount(a, weights=w, minlength=size).astype(out_dtype)
    return xp.bincount(a, minlength=size).astype(np.int64)


bincount_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
bincount_op.opt_out("derivative", "torch does not differentiate bincount")


def bincount(input, weights=None, minlength=0):
    """Count the occurrences of each value in a 1-D non-negative integer tensor (summing
    ``weights`` instead of ones when given).

    Example::

        >>> ember.bincount(ember.tensor([0, 2, 2]))
        tensor([1, 0, 2])
    """
    _check_tensor(input, "bincount")
    if input._data.dtype.kind not in "iub":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input._data.ndim != 1 or (input._device is not META and input._data.size
                                 and bool((input._data < 0).any())):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return bincount_op(input, minlength=int(minlength), out_dtype=np.dtype(np.int64))
    if weights._data.ndim != 1 or weights._data.shape[0] != input._data.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = np.dtype(np.float32) if weights._data.dtype == np.float32 else \
        np.dtype(np.float64)
    return bincount_op(input, weights.detach(), minlength=int(minlength), out_dtype=out_dtype)


def _histogram_range(xp, a, low, high):
    if low == high and a.size:
        low, high = host_values(xp, a.min(), a.max())  # data-dependent bins: one sync
        low, high = float(low), float(high)
    if low == high:
        low, high = low - 1, high + 1
    return low, high


@defop("histc", meta=lambda a, *, bins, low, high: ((bins,), a.dtype), kind="other")
def histc_op(xp, a, *, bins, low, high):
    flat = a.reshape(-1)
    low, high = _histogram_range(xp, flat, low, high)
    # torch's histc bins by division, each step rounded in the input's dtype (its edges are
    # never returned, so it skips histogram's check against them).
    first, last = xp.asarray(low, a.dtype), xp.asarray(high, a.dtype)
    with _quiet(xp):
        values = flat[(flat >= first) & (flat <= last)]
        scaled = (values - first) * xp.asarray(bins, a.dtype) / (last - first)
    index = xp.minimum(scaled.astype(np.int64), bins - 1)
    return xp.bincount(index, minlength=bins).astype(a.dtype)


histc_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
histc_op.opt_out("derivative", "torch does not differentiate histc")


def bin_positions(xp, edges, values):
    """``(kept, bins)``: which ``values`` fall within ``[edges[0], edges[-1]]`` (nan does
    not), and the bin of each kept one, found as torch's histogram kernels find it.

    A value goes to the last edge at or below it, by C++'s ``upper_bound`` (a binary search
    whose answer on unsorted edges, which torch accepts, is torch's too); the last edge
    belongs to the last bin.

    Example::

        >>> kept, bins = bin_positions(np, np.array([0., 1., 2.]), np.array([-1., 1., 2.]))
        >>> kept, bins
        (array([False,  True,  True]), array([1, 1]))
    """
    kept = (values >= edges[0]) & (values <= edges[-1])
    targets = values[kept]
    n = edges.shape[0]
    if bool((edges[1:] >= edges[:-1]).all()):  # sorted: the library's search finds the same
        return kept, xp.minimum(xp.searchsorted(edges, targets, side="right") - 1, n - 2)
    first = xp.zeros(targets.shape, np.int64)
    count = xp.full(targets.shape, n, np.int64)
    for _ in range(n.bit_length()):  # each round halves the range still searched
        step = count // 2
        probe = first + step
        right = (count > 0) & ~(targets < edges[xp.minimum(probe, n - 1)])
        first = xp.where(right, probe + 1, first)
        count = xp.where(right, count - step - 1, step)
    return kept, xp.minimum(first - 1, n - 2)


@signature("histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0, *,"
           " Tensor? out=None) -> Tensor")
def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram with ``bins`` equal bins between ``min`` and ``max`` (the data's range when
    both are 0); elements outside are ignored.

    Example::

        >>> ember.histc(ember.tensor([1., 2., 1.]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    _check_tensor(input, "histc")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins) + " for dim 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    if math.isinf(min) or math.isinf(max) or math.isnan(min) or math.isnan(max):
        raise RuntimeError(f"torch.histc: range of [{min}, {max}] is not finite")
    return write_out(histc_op(input, bins=int(bins), low=float(min), high=float(max)), out,
                     "histc")


def _histogram_meta(a, *weight, bins, low, high, density, edges):
    n = bins if edges is None else len(edges) - 1
    return ((n,), a.dtype), ((n + 1,), a.dtype)


@defop("histogram", meta=_histogram_meta, multi_output=True, kind="other")
def histogram_op(xp, a, *weight, bins, low, high, density, edges):
    flat = a.reshape(-1)
    if edges is None:
        if low is None:  # the data's range; torch's [0, 1] without data
            low, high = host_values(xp, flat.min(), flat.max()) if flat.size else (0.0, 1.0)
            low, high = float(low), float(high)
        if low == high:
            low, high = low - 0.5, high + 0.5
        edges_array = xp.linspace(low, high, bins + 1).astype(a.dtype)
    else:
        edges_array = xp.asarray(edges, dtype=a.dtype)
    n = edges_array.shape[0] - 1
    keep, index = bin_positions(xp, edges_array, flat)
    w = weight[0].reshape(-1)[keep].astype(np.float64) if weight else None
    hist = xp.bincount(index, weights=w, minlength=n).astype(np.float64)
    if density:
        with _quiet(xp):
            hist = hist / (hist.sum() * xp.diff(edges_array.astype(np.float64)))
    return hist.astype(a.dtype), edges_array


histogram_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
histogram_op.opt_out("derivative", "torch does not differentiate histogram")


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """A histogram of ``input``: ``(hist, bin_edges)``; ``bins`` is a count of equal bins
    (over ``range``, or the data's range) or a 1-D tensor of increasing edges.

    Example::

        >>> ember.histogram(ember.tensor([1., 2., 1.]), bins=2).hist
        tensor([2., 1.])
    """
    _check_tensor(input, "histogram")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    edges = None
    low = high = None
    if isinstance(bins, Tensor):
        edges = tuple(bins.to(input.dtype).tolist())
        if len(edges) < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have at least 1 dimension "
                               "and 2 elements")
        bins = len(edges) - 1
    elif bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None:
        low, high = float(range[0]), float(range[1])
        if low > high:
            raise ValueError(f"torch.histogram(): min should not exceed max, but got min {low} "
                             f"max {high}")
    args = (input,) if weight is None else (input, weight.detach())
    result = return_types.histogram(*histogram_op(*args, bins=int(bins), low=low, high=high,
                                                  density=builtins.bool(density), edges=edges))
    return _write_out_tuple(result, out, "histogram")


# ---------------------------------------------------------------- searchsorted, bucketize


def _searchsorted_meta(seq, values, *sorter, right, out_int32, scalar):
    return values.shape, np.dtype(np.int32 if out_int32 else np.int64)


@defop("searchsorted", meta=_searchsorted_meta, kind="other")
def searchsorted_op(xp, seq, values, *sorter, right, out_int32, scalar):
    side = "right" if right else "left"
    if sorter:
        seq = xp.take_along_axis(seq, sorter[0], axis=-1)
    if seq.ndim == 1:
        result = xp.searchsorted(seq, values, side=side)
    else:
        # Batched: rank every value against the boundaries of its own row. Joint ranks keep
        # the order; rows are separated by adding row * (number of ranks).
        rows = math.prod(seq.shape[:-1])
        flat_seq = seq.reshape(rows, seq.shape[-1])  # explicit sizes: rows may be 0
        flat_values = values.reshape(rows, values.shape[-1])
        joined = xp.concatenate([flat_seq.reshape(-1), flat_values.reshape(-1)])
        _, ranks = xp.unique(joined, return_inverse=True)
        ranks = ranks.reshape(-1)
        span = builtins.max(joined.size, 1)  # > every rank, known without a sync
        offsets = xp.arange(rows)[:, None] * span
        seq_keys = ranks[:flat_seq.size].reshape(flat_seq.shape) + offsets
        value_keys = ranks[flat_seq.size:].reshape(flat_values.shape) + offsets
        found = xp.searchsorted(seq_keys.reshape(-1), value_keys.reshape(-1), side=side)
        found = found.reshape(flat_values.shape) - xp.arange(rows)[:, None] * flat_seq.shape[1]
        result = found.reshape(values.shape)
    return xp.asarray(result).astype(np.int32 if out_int32 else np.int64, copy=False)


searchsorted_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")
searchsorted_op.opt_out("derivative", "an index result has no gradient")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """Indices where ``input``'s values would be inserted into ``sorted_sequence`` (along its
    last dim) to keep it sorted.

    Example::

        >>> ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3, 6]))
        tensor([1, 3])
    """
    _check_tensor(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar:
        from .creation import full

        input = full((), input, dtype=dt.result_type(sorted_sequence, input),
                     device=sorted_sequence._device)
    seq = sorted_sequence
    if seq._data.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq._data.ndim > 1 and (input._data.ndim != seq._data.ndim
                               or input._data.shape[:-1] != seq._data.shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq._data.shape)} and "
                           f"input value tensor {list(input._data.shape)}")
    if seq.dtype is not input.dtype:
        common = dt.promote_types(seq.dtype, input.dtype)
        seq, input = seq.to(common), input.to(common)
    args = (seq, input)
    if sorter is not None:
        if sorter._data.shape != sorted_sequence._data.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq._data.shape)}and got "
                               f"sorter tensor {list(sorter._data.shape)}")
        if sorter.dtype is not dt.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got dtype {_type_name(sorter.dtype)}")
        args += (sorter,)
    result = searchsorted_op(*args, right=builtins.bool(right),
                             out_int32=builtins.bool(out_int32), scalar=scalar)
    return write_out(result, out, "searchsorted")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each element given 1-D increasing ``boundaries``: ``i`` such that
    ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` swapped with ``right=True``).

    Example::

        >>> ember.bucketize(ember.tensor([1, 4, 6]), ember.tensor([1, 3, 5]))
        tensor([0, 2, 3])
    """
    _check_tensor(boundaries, "bucketize")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ---------------------------------------------------------------- methods


for _name in ("sum", "nansum", "mean", "nanmean", "prod", "std", "var", "max", "min", "amax",
              "amin", "aminmax", "argmax", "argmin", "all", "any", "norm", "logsumexp",
              "median", "nanmedian", "mode", "quantile", "nanquantile", "count_nonzero",
              "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "sort",
              "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
              "bincount", "histc", "histogram", "sum_to_size"):
    setattr(Tensor, _name, globals()[_name])
Tensor.cumsum_ = lambda self, dim, *, dtype=None: inplace(cumsum, self, dim, dtype=dtype)
Tensor.cumprod_ = lambda self, dim, *, dtype=None: inplace(cumprod, self, dim, dtype=dtype)
del _name


# ================================================================ toplevel-helper section:
# integrals and derivatives of samples (trapezoid, cumulative_trapezoid, gradient), renorm,
# dist; all composed of differentiable ember ops

__all__ += ["trapezoid", "trapz", "cumulative_trapezoid", "gradient", "renorm", "dist"]


def _samples_tensor(y, name):
    if not isinstance(y, Tensor):
        raise TypeError(f"{name}(): argument 'y' (position 1) must be Tensor, not "
                        f"{type(y).__name__}")


def _trapezoid_spacing(y, x, dim):
    """The spacings between samples along ``dim`` (shaped to broadcast with ``y``)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        x = x.reshape([-1 if d == dim else 1 for d in range(y.ndim)])
    return x.diff(dim=dim)


def _left_right(y, dim):
    n = y.shape[dim]
    return y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: samples ``y`` at coordinates ``x`` (a 1-D tensor
    along ``dim`` or a tensor that broadcasts with ``y``), or evenly ``dx`` apart (default 1).

    Example::

        >>> ember.trapezoid(ember.tensor([1., 2., 4.]))
        tensor(4.5000)
    """
    _samples_tensor(y, "trapezoid")
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: give x or "
                        "dx, not both")
    dim = wrap_dim(dim, y.ndim)
    if y.shape[dim] == 0:
        return y.sum(dim) * 0.0  # nothing to integrate: zeros, in floating point
    if isinstance(x, Tensor):
        left, right = _left_right(y, dim)
        return (_trapezoid_spacing(y, x, dim) * (left + right)).sum(dim) / 2
    spacing = 1 if x is None and dx is None else (dx if dx is not None else x)
    ends = y.select(dim, 0) + y.select(dim, -1)
    return (y.sum(dim) - ends * 0.5) * spacing


def trapz(y, x=None, *, dx=None, dim=-1):
    """:func:`trapezoid` (its older name).

    Example::

        >>> ember.trapz(ember.ones(3), dx=0.5)
        tensor(1.)
    """
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one value fewer than ``y`` has).

    Example::

        >>> ember.cumulative_trapezoid(ember.tensor([1., 2., 4.]))
        tensor([1.5000, 4.5000])
    """
    _samples_tensor(y, "cumulative_trapezoid")
    dim = wrap_dim(dim, y.ndim)
    if y.shape[dim] == 0:
        return y.narrow(dim, 0, 0) * 0.5
    left, right = _left_right(y, dim)
    if isinstance(x, Tensor):
        return (_trapezoid_spacing(y, x, dim) * (left + right)).cumsum(dim) / 2
    spacing = 1 if x is None and dx is None else (dx if dx is not None else x)
    return ((left + right) * spacing).cumsum(dim) / 2


def _gradient_dims(input, dim):
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [wrap_dim(d, input.ndim) for d in dims]


def _gradient_spacings(spacing, dims):
    """One spacing per differentiated dim: a number (even samples) or 1-D coordinates."""
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar "
                               f"or it's spacing and dim arguments to have the same length, "
                               f"but got a spacing argument of length {len(spacing)} and a dim "
                               f"argument of length {len(dims)}.")
        return list(spacing)
    if isinstance(spacing, Tensor) and spacing.ndim > 0:
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or a "
                           "list")
    return [spacing] * len(dims)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimate the derivative of ``input`` along each of ``dim`` (default: all dims) by
    second-order central differences inside, one-sided differences of order ``edge_order`` at
    the ends; ``spacing``: a number, one per dim, or 1-D coordinate tensors. A tuple of
    tensors, one per dim.

    Example::

        >>> ember.gradient(ember.tensor([1., 2., 4., 8.]))
        (tensor([1.0000, 1.5000, 3.0000, 4.0000]),)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _gradient_dims(input, dim)
    spacings = _gradient_spacings(1 if spacing is None else spacing, dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(dt.get_default_dtype())
    return tuple(_gradient_along(input, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, dim, h, edge_order):
    if isinstance(h, Tensor) and h.ndim == 1:
        if h.shape[0] != f.shape[dim]:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have {f.shape[dim]} elements along dim {dim}")
        dtype = dt.promote_types(f.dtype, h.dtype)
        return _gradient_coordinates(f.to(dtype), dim, h.to(dtype), edge_order)
    h = h.item() if isinstance(h, Tensor) else h
    n = f.shape[dim]

    def part(start, length=1):
        return f.narrow(dim, start, length)
    interior = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (part(1) - part(0)) / h
        last = (part(n - 1) - part(n - 2)) / h
    else:
        first = (part(0) * -1.5 + part(1) * 2 - part(2) * 0.5) / h
        last = (part(n - 3) * 0.5 - part(n - 2) * 2 + part(n - 1) * 1.5) / h
    from .shape import cat

    return cat([first, interior, last], dim)


def _gradient_coordinates(f, dim, x, edge_order):
    """Non-uniform samples at coordinates ``x``: the weights of the second-order
    Lagrange-interpolating stencil on each uneven pair of steps."""
    from .shape import cat

    n = f.shape[dim]
    shape = [-1 if d == dim else 1 for d in range(f.ndim)]
    steps = x.diff()

    def part(start, length=1):
        return f.narrow(dim, start, length)

    def along(t):
        return t.reshape(shape)
    h1, h2 = along(steps[:-1]), along(steps[1:])
    interior = (part(0, n - 2) * (-h2 / (h1 * (h1 + h2))) + part(1, n - 2) * ((h2 - h1) / (h1 * h2))
                + part(2, n - 2) * (h1 / (h2 * (h1 + h2))))
    if edge_order == 1:
        first = (part(1) - part(0)) / along(steps[:1])
        last = (part(n - 1) - part(n - 2)) / along(steps[-1:])
    else:
        a, b = along(steps[:1]), along(steps[1:2])
        first = (part(0) * (-(2 * a + b) / (a * (a + b))) + part(1) * ((a + b) / (a * b))
                 + part(2) * (-a / (b * (a + b))))
        a, b = along(steps[-2:-1]), along(steps[-1:])
        last = (part(n - 3) * (b / (a * (a + b))) + part(n - 2) * (-(a + b) / (a * b))
                + part(n - 1) * ((2 * b + a) / (b * (a + b))))
    return cat([first, interior, last], dim)


def renorm(input, p, dim, maxnorm, *, out=None):
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` to norm
    ``maxnorm`` (the others are kept).

    Example::

        >>> ember.renorm(ember.tensor([[1., 2.], [3., 4.]]), 2, 0, 3)
        tensor([[1.0000, 2.0000],
                [1.8000, 2.4000]])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"renorm(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_type_word(input.dtype)}")
    dim = wrap_dim(dim, input.ndim)
    others = tuple(d for d in range(input.ndim) if d != dim)
    from ..linalg import vector_norm
    from .pointwise import where

    norms = vector_norm(input, p, dim=others, keepdim=True) if others else input.abs()

    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return write_out(input * factor.to(input.dtype), out, "renorm")


def _type_word(dtype):
    from ._registry import _short_name

    return _short_name(dtype)


def _renorm_(self, p, dim, maxnorm):
    return inplace(renorm, self, p, dim, maxnorm)


_renorm_.__name__, _renorm_.__doc__ = "renorm_", "In-place version of :func:`renorm`."


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast), as a 0-dim tensor.

    Example::

        >>> ember.dist(ember.tensor([1., 2.]), ember.tensor([4., 6.]))
        tensor(5.)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"dist(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not isinstance(other, Tensor):
        raise TypeError(f"dist(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    difference = input - other
    if not (difference.dtype.is_floating_point or difference.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {_type_word(difference.dtype)} instead.")
    return norm(difference, p)


Tensor.renorm = renorm
Tensor.renorm_ = _renorm_
Tensor.dist = dist
