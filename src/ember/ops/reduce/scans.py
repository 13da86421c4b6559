"""Scans and differences: cumsum, cumprod, cummax, cummin, logcumsumexp, diff, and the
integrals and derivatives of samples (trapezoid, cumulative_trapezoid, gradient)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ... import return_types
from ..._tensor import Tensor
from ...autograd.forward_ad import linear_jvp, select_jvp
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import Op, defop, inplace, write_out
from .._signature import NOT_GIVEN, signature
from .._util import accumulate
from .._vmap_rules import batching
from ._common import (
    _LOW_PRECISION,
    _compute_dtype,
    _one_dim,
    _positions,
    _quiet,
    _reject,
    _scatter_grad,
    _where,
    _write_out_tuple,
)
from .sums import prod_op

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff", "trapezoid", "trapz",
           "cumulative_trapezoid", "gradient"]


# ---------------------------------------------------------------- scans: cumsum, cumprod


def _scan_dtype(input, dtype, kernel):
    """The dtype a running sum or product is computed in (None: the input's); torch has no
    bool kernel (``kernel`` names it in its NotImplementedError)."""
    if dtype is not None:
        dtype = dt.to_dtype(dtype)
        if dtype is dt.bool:
            raise dt.no_kernel_for(kernel, dtype)
        return dtype
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


@cumsum_op.defonnx
def _cumsum_onnx(ctx, x, dim, dtype=None, reverse=False):
    x = ctx.cast(x, ctx.in_dtype(0), ctx.out_dtype())  # (bools and small ints sum in int64)
    if not ctx.in_dims(0):
        return ctx.op("Identity", x)
    return ctx.op("CumSum", x, ctx.scalar(ctx.axis(dim), "int64"), reverse=int(reverse))


cumsum_op.defbatch(batching.along_dim)


@cumsum_op.defderivative
def _cumsum_derivative(ctx, grad, *, dim, dtype=None, reverse=False):
    if grad._data.ndim == 0:
        return (grad,)
    return (cumsum_op(grad, dim=dim, reverse=not reverse),)


cumsum_op.defjvp(linear_jvp(cumsum_op))


@tensor_method
@signature('cumsum(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None) -> Tensor')
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sums along ``dim``; integers and bools sum as int64.

    Example::

        >>> ember.cumsum(ember.tensor([1, 2, 3]), 0)
        tensor([1, 3, 6])
    """
    d = _one_dim(dim, input._data.ndim)
    return write_out(cumsum_op(input, dim=d, dtype=_scan_dtype(input, dtype, "cumsum_out_cpu")),
                     out, "cumsum")


@tensor_method("cumsum_")
def _cumsum_(self, dim, *, dtype=None):
    """``x.cumsum_(dim)``: :func:`cumsum` written back into ``x``, computed in ``x``'s dtype
    (as torch: none for bool)."""
    return inplace(cumsum, self, dim, dtype=self.dtype if dtype is None else dtype)


@defop("cumprod", meta=lambda a, *, dim, dtype=None: (a.shape, dtype or a.dtype),
       save_output=True, kind="scan", autocast={"cuda": "fp32"},
       opt_outs={"onnx": "ONNX has no running product, extremum or log-sum-exp (only CumSum)"})
def cumprod_op(xp, a, *, dim, dtype=None):
    target = dtype.np if dtype else a.dtype
    if a.ndim == 0:
        return a.astype(target, copy=True)
    compute = np.float32 if target in _LOW_PRECISION else target
    return xp.cumprod(a, axis=dim, dtype=compute).astype(target, copy=False)


cumprod_op.defbatch(batching.along_dim)


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
    from .. import creation, pointwise

    n = x._data.shape[dim]
    xm, tm = x.movedim(dim, -1), tx.movedim(dim, -1)
    eye = creation.eye(n, dtype=x.dtype, device=x.device) == 1
    table = pointwise.where(eye, 1.0, xm.unsqueeze(-2)).cumprod(-1)
    upper = creation.ones(n, n, dtype=x.dtype, device=x.device).triu()
    return (table * upper * tm.unsqueeze(-1)).sum(-2).movedim(-1, dim)


@tensor_method
@signature('cumprod(Tensor input, int dim, *, ScalarType? dtype=None, Tensor? out=None) -> Tensor')
def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative products along ``dim``; integers and bools multiply as int64.

    Example::

        >>> ember.cumprod(ember.tensor([1, 2, 3]), 0)
        tensor([1, 2, 6])
    """
    d = _one_dim(dim, input._data.ndim)
    return write_out(cumprod_op(input, dim=d, dtype=_scan_dtype(input, dtype, "cumprod_out_cpu")),
                     out, "cumprod")


@tensor_method("cumprod_")
def _cumprod_(self, dim, *, dtype=None):
    """``x.cumprod_(dim)``: :func:`cumprod` written back into ``x``, computed in ``x``'s dtype
    (as torch: none for bool)."""
    return inplace(cumprod, self, dim, dtype=self.dtype if dtype is None else dtype)


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
cummax_op.opt_out("onnx", "ONNX has no running product, extremum or log-sum-exp (only CumSum)")
cummin_op.opt_out("onnx", "ONNX has no running product, extremum or log-sum-exp (only CumSum)")
cummax_op.defbatch(batching.along_dim)
cummin_op.defbatch(batching.along_dim)


@tensor_method
@signature('cummax(Tensor input, int dim, *, Tensor[]? out=None) -> (Tensor, Tensor)')
def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where it was reached.

    Example::

        >>> ember.cummax(ember.tensor([1, 3, 2]), 0).values
        tensor([1, 3, 3])
    """
    _reject(input, "cummax_cpu")
    result = return_types.cummax(*cummax_op(input, dim=_one_dim(dim, input._data.ndim)))
    return _write_out_tuple(result, out, "cummax")


@tensor_method
@signature('cummin(Tensor input, int dim, *, Tensor[]? out=None) -> (Tensor, Tensor)')
def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and the index where it was reached.

    Example::

        >>> ember.cummin(ember.tensor([3, 1, 2]), 0).values
        tensor([3, 1, 1])
    """
    _reject(input, "cummin_cpu")
    result = return_types.cummin(*cummin_op(input, dim=_one_dim(dim, input._data.ndim)))
    return _write_out_tuple(result, out, "cummin")


@defop("logcumsumexp", meta=lambda a, *, dim, reverse=False: (a.shape, a.dtype),
       save_output=True, kind="scan",
       opt_outs={"onnx": "ONNX has no running product, extremum or log-sum-exp (only CumSum)"})
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


logcumsumexp_op.defbatch(batching.along_dim)


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


@tensor_method
@signature('logcumsumexp(Tensor input, int dim, *, Tensor? out=None) -> Tensor')
def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))``, computed without overflow.

    Example::

        >>> ember.logcumsumexp(ember.tensor([0., 0.]), 0)
        tensor([0.0000, 0.6931])
    """
    _reject(input, "logcumsumexp_out_cpu", "biu")
    if input._data.dtype.kind in "iu":
        input = input.to(dt.get_default_dtype())
    return write_out(logcumsumexp_op(input, dim=_one_dim(dim, input._data.ndim)), out,
                     "logcumsumexp")


# ---------------------------------------------------------------- diff


def _diff_shape(shape, n, dim):
    return tuple(builtins.max(s - n, 0) if i == dim else s for i, s in enumerate(shape))


@defop("diff", meta=lambda a, *, n, dim: (_diff_shape(a.shape, n, dim), a.dtype),
       save_inputs=False, kind="other",
       opt_outs={"onnx": "not mapped yet (composable from ONNX operators)"})
def diff_op(xp, a, *, n, dim):
    if a.dtype == np.bool_:
        for _ in range(n):
            a = xp.not_equal(xp.take(a, xp.arange(1, a.shape[dim]), axis=dim),
                             xp.take(a, xp.arange(0, a.shape[dim] - 1), axis=dim))
        return a
    return xp.diff(a, n=n, axis=dim)


diff_op.defbatch(batching.along_dim)


@diff_op.defderivative
def _diff_derivative(ctx, grad, *, n, dim):
    return (diff_adjoint_op(grad, n=n, dim=dim, size=ctx._input_meta[0][0][dim]),)


diff_op.defjvp(linear_jvp(diff_op))


def _diff_adjoint_shape(shape, dim, size):
    return tuple(size if i == dim else s for i, s in enumerate(shape))


@defop("diff_adjoint", meta=lambda g, *, n, dim, size: (_diff_adjoint_shape(g.shape, dim, size),
                                                          g.dtype), save_inputs=False, kind="other",
       opt_outs={"onnx": "the backward of diff: exported models run inference"})
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


diff_adjoint_op.defbatch(batching.along_dim)


@diff_adjoint_op.defderivative
def _diff_adjoint_derivative(ctx, grad, *, n, dim, size):
    return (diff_op(grad, n=n, dim=dim),)


@tensor_method
@signature("diff(Tensor input, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None, "
           "*, Tensor? out=None) -> Tensor")
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The ``n``-th forward difference along ``dim``, after concatenating ``prepend`` and
    ``append``.

    Example::

        >>> ember.diff(ember.tensor([1, 3, 6, 10]))
        tensor([2, 3, 4])
    """
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # (before ``dim`` is checked, as torch)
        return write_out(input.clone(), out, "diff")
    d = wrap_dim(dim, input._data.ndim)
    if prepend is not None or append is not None:
        from ..shape import cat

        parts = [_as_diff_part(prepend, input, d, "prepend"), input,
                 _as_diff_part(append, input, d, "append")]
        input = cat([p for p in parts if p is not None], d)
    return write_out(diff_op(input, n=n, dim=d), out, "diff")


def _as_diff_part(part, input, dim, name):
    if part is None:
        return None
    if not isinstance(part, Tensor):
        from ..creation import full

        shape = list(input._data.shape)
        shape[dim] = 1
        return full(shape, part, dtype=input.dtype, device=input._device)
    if part._data.ndim == 0:
        shape = list(input._data.shape)
        shape[dim] = 1
        return part.expand(shape)
    return part


def _samples_tensor(y, name, x=None, dx=None):
    """torch's checks of trapezoid's samples ``y``, coordinates ``x`` and spacing ``dx``."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{name}(): argument 'y' (position 1) must be Tensor, not "
                        f"{type(y).__name__}")
    if y.dtype is dt.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    if isinstance(x, Tensor) and x.dtype is dt.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    if isinstance(dx, bool):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


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


@signature("trapezoid(Tensor y, Tensor x=None, *, Scalar dx=None, int dim=-1) -> Tensor",
           overloaded=True)
def trapezoid(y, x=NOT_GIVEN, *, dx=NOT_GIVEN, dim=-1):
    """The trapezoidal rule along ``dim``: samples ``y`` at coordinates ``x`` (a 1-D tensor
    along ``dim`` or a tensor that broadcasts with ``y``), or evenly ``dx`` apart (default 1).

    Example::

        >>> ember.trapezoid(ember.tensor([1., 2., 4.]))
        tensor(4.5000)
    """
    x = None if x is NOT_GIVEN else x
    dx = None if dx is NOT_GIVEN else dx
    _samples_tensor(y, "trapezoid", x, dx)
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


@signature("trapz(Tensor y, Tensor x=None, *, Scalar dx=None, int dim=-1) -> Tensor",
           overloaded=True)
def trapz(y, x=NOT_GIVEN, *, dx=NOT_GIVEN, dim=-1):
    """:func:`trapezoid` (its older name).

    Example::

        >>> ember.trapz(ember.ones(3), dx=0.5)
        tensor(1.)
    """
    return trapezoid(y, x, dx=dx, dim=dim)


@signature("cumulative_trapezoid(Tensor y, Tensor x=None, *, Scalar dx=None, "
           "int dim=-1) -> Tensor", overloaded=True)
def cumulative_trapezoid(y, x=NOT_GIVEN, *, dx=NOT_GIVEN, dim=-1):
    """The running trapezoidal integral along ``dim`` (one value fewer than ``y`` has).

    Example::

        >>> ember.cumulative_trapezoid(ember.tensor([1., 2., 4.]))
        tensor([1.5000, 4.5000])
    """
    x = None if x is NOT_GIVEN else x
    dx = None if dx is NOT_GIVEN else dx
    _samples_tensor(y, "cumulative_trapezoid", x, dx)
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "give x or dx, not both")
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


@signature("gradient(Tensor input, *, PyObject spacing=1, PyObject? dim=None, "
           "int edge_order=1) -> Tensor[]", overloaded=True)
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
    if input.dtype is dt.bool:
        from ..pointwise import sub

        sub(input, input)  # raises torch's error: the differences subtract bool tensors
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
    from ..shape import cat

    return cat([first, interior, last], dim)


def _gradient_coordinates(f, dim, x, edge_order):
    """Non-uniform samples at coordinates ``x``: the weights of the second-order
    Lagrange-interpolating stencil on each uneven pair of steps."""
    from ..shape import cat

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
