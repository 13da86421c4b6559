"""Spreads and norms: var, std (and their _mean forms), logsumexp, norm, renorm, dist."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from ...autograd.forward_ad import reduction_jvp
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import defop, inplace, write_out
from .._signature import signature
from .._util import svd
from .._vmap_rules import batching
from ._common import (
    _check_tensor,
    _compute_dtype,
    _count,
    _dims,
    _expand_back,
    _keep,
    _quiet,
    _real_meta,
    _reduce_meta,
    _reduction_onnx,
    _type_name,
    _unsqueeze_all,
    _where,
    _write_out_tuple,
    reduced_shape,
)
from .sums import mean_op

__all__ = ["std", "var", "std_mean", "var_mean", "norm", "logsumexp", "renorm", "dist"]


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


def _var_onnx(ctx, x, dims=None, correction=1, keepdim=False):
    axes = ctx.axes(dims)
    centred = ctx.op("Sub", x, ctx.reduce("ReduceMean", x, axes, True))
    squares = ctx.reduce("ReduceSum", ctx.op("Mul", centred, centred), axes, keepdim)
    count = _count_onnx(ctx, x, axes)
    if correction:  # torch divides by max(0, count - correction): 0 / 0 is nan
        zero = ctx.scalar(0, ctx.out_dtype())
        count = ctx.op("Max", ctx.op("Sub", count, ctx.scalar(correction, ctx.out_dtype())),
                       zero)
    return ctx.op("Div", squares, count)


def _count_onnx(ctx, x, axes):
    """The number of elements a reduction over ``axes`` averages, as a 0-dim tensor of the
    result's dtype (computed at run time when a reduced size follows a dynamic axis)."""
    sizes = [ctx.in_dims(0)[a] for a in axes]
    if not any(ctx.is_dynamic(s) for s in sizes):
        return ctx.scalar(math.prod(sizes), ctx.out_dtype())
    count = ctx.reduce("ReduceProd", ctx.shape_tensor(sizes, (x, ctx.in_dims(0))), None, False)
    return ctx.cast(count, "int64", ctx.out_dtype())


var_op.defonnx(_var_onnx)


var_op.defbatch(batching.reduction)


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


@std_op.defonnx
def _std_onnx(ctx, x, dims=None, correction=1, keepdim=False):
    return ctx.op("Sqrt", _var_onnx(ctx, x, dims, correction, keepdim))


std_op.defbatch(batching.reduction)


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


@tensor_method
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """The variance over ``dim`` with Bessel's ``correction`` (1 by default).

    Example::

        >>> ember.var(ember.tensor([1., 2., 3., 4.]))
        tensor(1.6667)
    """
    dims, correction = _var_args("var", input, dim, unbiased, keepdim, correction)
    return write_out(var_op(input, dims=dims, correction=correction, keepdim=keepdim), out,
                     "var")


@tensor_method
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
    # torch's mean here is Welford's running one, which differs on infinities
    result = (var_op(input, dims=dims, correction=correction, keepdim=keepdim),
              mean_op(input, dims=dims, keepdim=keepdim, welford=True))
    return _write_out_tuple(result, out, "var_mean") if out is not None else result


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """``(std(input, ...), mean(input, ...))`` in one call.

    Example::

        >>> ember.std_mean(ember.tensor([1., 2., 3.]))
        (tensor(1.), tensor(2.))
    """
    dims, correction = _var_args("std_mean", input, dim, unbiased, keepdim, correction)
    # torch's mean here is Welford's running one, which differs on infinities
    result = (std_op(input, dims=dims, correction=correction, keepdim=keepdim),
              mean_op(input, dims=dims, keepdim=keepdim, welford=True))
    return _write_out_tuple(result, out, "std_mean") if out is not None else result


# ---------------------------------------------------------------- logsumexp, norm


@defop("logsumexp", meta=_reduce_meta(), save_output=True, kind="reduction",
       autocast={"cuda": "fp32"}, onnx=_reduction_onnx("ReduceLogSumExp"))
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


logsumexp_op.defbatch(batching.reduction)


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


@tensor_method
@signature('logsumexp(Tensor input, int[1] dim, bool keepdim=False, *, Tensor? out=None) -> Tensor')
def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed without overflow.

    Example::

        >>> ember.logsumexp(ember.tensor([0., 0.]), 0)
        tensor(0.6931)
    """
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


@norm_op.defonnx
def _norm_onnx(ctx, x, p=2.0, dims=None, keepdim=False):
    axes = ctx.axes(dims)
    magnitude = ctx.op("Abs", x)
    if p == 0:  # the number of nonzero elements
        nonzero = ctx.op("Not", ctx.op("Equal", x, ctx.scalar(0, ctx.in_dtype(0))))
        magnitude = ctx.cast(nonzero, "bool", ctx.out_dtype())
    if not ctx.in_dims(0):
        return magnitude  # the norm of one element
    if p == 0:
        return ctx.reduce("ReduceSum", magnitude, axes, keepdim)
    if p == 2:
        return ctx.reduce("ReduceL2", x, axes, keepdim)
    if p == 1:
        return ctx.reduce("ReduceL1", x, axes, keepdim)
    if p == math.inf:
        return ctx.reduce("ReduceMax", magnitude, axes, keepdim)
    if p == -math.inf:
        return ctx.reduce("ReduceMin", magnitude, axes, keepdim)
    power = ctx.scalar(p, ctx.out_dtype())
    total = ctx.reduce("ReduceSum", ctx.op("Pow", magnitude, power), axes, keepdim)
    return ctx.op("Pow", total, ctx.scalar(1.0 / p, ctx.out_dtype()))


norm_op.defbatch(batching.reduction)


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
    grad_name="LinalgMatrixNormBackward0", kind="linalg", autocast={"cuda": "fp32"},
       opt_outs={"onnx": "ONNX has no matrix decompositions (it needs an SVD)"})
def nuclear_norm_op(xp, a, *, dims, keepdim):
    moved = xp.moveaxis(a, dims, (-2, -1))
    result = svd(xp, moved, compute_uv=False).sum(-1)
    if keepdim:
        result = xp.expand_dims(result, dims)
    return result.astype(dt.from_numpy_dtype(a.dtype).to_real().np, copy=False)


nuclear_norm_op.defbatch(batching.reduction)


@nuclear_norm_op.defderivative
def _nuclear_norm_derivative(ctx, grad, *, dims, keepdim):
    # d||A||_* = U V^H : computed with the SVD's factors, which ops.linalg provides.
    from ... import linalg

    x = ctx.inputs[0]
    moved = x.movedim(dims, (-2, -1))
    u, _, vh = linalg.svd(moved, full_matrices=False)
    g = grad if keepdim else grad.unsqueeze(-1).unsqueeze(-1)
    if keepdim:
        g = g.movedim(dims, (-2, -1))
    return ((u @ vh * g).movedim((-2, -1), dims),)


@tensor_method
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


@tensor_method
@signature("renorm(Tensor input, Scalar p, int dim, Scalar maxnorm, *, Tensor? out=None) -> Tensor")
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
    from ...linalg import vector_norm
    from ..pointwise import where

    norms = vector_norm(input, p, dim=others, keepdim=True) if others else input.abs()

    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return write_out(input * factor.to(input.dtype), out, "renorm")


def _type_word(dtype):
    from .._registry import _short_name

    return _short_name(dtype)


@tensor_method("renorm_")
def _renorm_(self, p, dim, maxnorm):
    return inplace(renorm, self, p, dim, maxnorm)


_renorm_.__name__, _renorm_.__doc__ = "renorm_", "In-place version of :func:`renorm`."


@tensor_method
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
