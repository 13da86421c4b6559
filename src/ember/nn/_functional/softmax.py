"""nn.functional: the softmax family (softmax, softmin, log_softmax, gumbel_softmax) and
Tensor's softmax/log_softmax methods.

softmax and log_softmax are :class:`~ember.ops._registry.Op` primitives: their kernels shift by
the maximum (blocked over rows on the CPU), their derivatives use the saved output, and
log_softmax's backward is one fused op.

Example::

    >>> import ember
    >>> ember.nn.functional.softmax(ember.tensor([0., 0.]), dim=0)
    tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.forward_ad import symmetric_jvp
from ...func import _batching_rules as _batching
from ...ops._methods import tensor_method
from ...ops._operands import wrap_dim
from ...ops._registry import Op
from ...ops._signature import signature
from ...ops.pointwise import _check_dtype
from .activation import _F32, _LOW, _check_input

__all__ = ["softmax", "softmin", "log_softmax", "gumbel_softmax"]


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_meta(a, *, dim):
    return a.shape, a.dtype


def _shifted(xp, a, dim):
    """``a - max(a, dim)`` (in float32 for low precision), 0-dim as 1-element."""
    return a - a.max(axis=dim, keepdims=True)


# Softmax over the last dim of a contiguous CPU array walks blocks of rows of about this many
# elements, so that each block's intermediates (shifted values, exponentials) are still in
# cache for the next pass; whole-array passes are bound by memory traffic (a 700 x 10000
# log_softmax measured 2.5x slower than torch's fused loop that way).
_ROW_BLOCK = 1 << 16


def _row_blocks(rows, cols):
    step = max(1, _ROW_BLOCK // max(cols, 1))
    return [slice(start, start + step) for start in range(0, rows, step)]


def _by_rows(xp, a, dim):
    """``a`` as (rows, cols) with ``dim`` the contiguous last one, or None where the blocked
    CPU kernels do not apply."""
    if xp is not np or dim != a.ndim - 1 or not a.flags.c_contiguous or a.size == 0:
        return None
    return a.reshape(-1, a.shape[-1])


def _softmax_rows(a2, log):
    """(log_)softmax of each row of ``a2``, block by block, with the whole-array formula's
    operations in the same order; narrow-spread values share one shift (see
    :func:`_shared_shift`)."""
    out = np.empty_like(a2)
    ones = np.ones(a2.shape[1], a2.dtype)
    for rows in _row_blocks(*a2.shape):
        block, o = a2[rows], out[rows]
        shift = _shared_shift(block)
        np.subtract(block, block.max(axis=1, keepdims=True) if shift is None else shift, out=o)
        if log:
            o -= np.log(_row_sums(np.exp(o), ones))
        else:
            np.exp(o, out=o)
            o /= _row_sums(o, ones)
    return out


def _shared_shift(a2):
    """The largest value of a block of rows ``a2`` where every value lies within ``log(cols)``
    of it, else None (each row then subtracts its own maximum; infinities and NaN too).

    Within that span no exponential underflows and the shifted values round by at most half
    an ulp of ``log(cols)``, while every log-probability is at most ``-log(1 + (cols-1)/cols)``,
    so float32's relative precision holds; a whole-array max and min and a scalar subtraction
    cost about a third of the per-row maxima and their broadcast subtraction.
    """
    top = a2.max()
    if top - a2.min() < math.log(max(a2.shape[1], 2)):
        return top
    return None


def _row_sums(rows, ones):
    """Each row's sum (kept as a column) as a product with ``ones``: BLAS's matrix-vector
    product sums rows 3-9x faster than NumPy's reduction along them (1024 x 256: 56 -> 14 us),
    accumulating as torch's vectorised kernels do."""
    return np.matmul(rows, ones)[:, None]


def _softmax_along(xp, a, dim, log):
    """softmax (``log=False``) or log_softmax of ``a`` along ``dim``: in float32 for half
    precision, blocked over rows where :func:`_by_rows` allows, else whole-array."""
    dtype = a.dtype
    if dtype in _LOW:
        a = a.astype(_F32)
    if a.size == 0:
        return xp.empty(a.shape, dtype)
    shape = a.shape
    if a.ndim == 0:
        a = a.reshape(1)
    # exp of -inf - -inf is nan (invalid); log_softmax takes the log of a sum that may be 0
    quiet = {"invalid": "ignore", "divide": "ignore"} if log else {"invalid": "ignore"}
    rows = _by_rows(xp, a, dim)
    if rows is not None:
        with np.errstate(over="ignore", **quiet):
            out = _softmax_rows(rows, log)
    else:
        with np.errstate(**quiet):
            out = _shifted(xp, a, dim)
            if log:
                out -= xp.log(xp.exp(out).sum(axis=dim, keepdims=True))
            else:
                out = xp.exp(out)
                out /= out.sum(axis=dim, keepdims=True)
    return out.reshape(shape).astype(dtype, copy=False)


def _softmax_kernel(xp, a, *, dim):
    return _softmax_along(xp, a, dim, log=False)


def _log_softmax_kernel(xp, a, *, dim):
    return _softmax_along(xp, a, dim, log=True)


softmax_op = Op("softmax", _softmax_kernel, meta=_softmax_meta, save_inputs=False,
                save_output=True, kind="nn", autocast={"cuda": "fp32"})
log_softmax_op = Op("log_softmax", _log_softmax_kernel, meta=_softmax_meta, save_inputs=False,
                    save_output=True, kind="nn", autocast={"cuda": "fp32"})
def _softmax_onnx(onnx_type):
    """Softmax/LogSoftmax along ``dim`` (a 0-dim input as a one-element vector)."""
    def mapping(ctx, x, dim):
        if not ctx.in_dims(0):
            return ctx.squeeze(ctx.op(onnx_type, ctx.unsqueeze(x, [0]), axis=0), [0])
        return ctx.op(onnx_type, x, axis=ctx.axis(dim))
    return mapping


softmax_op.defonnx(_softmax_onnx("Softmax"))
log_softmax_op.defonnx(_softmax_onnx("LogSoftmax"))
log_softmax_op.defbatch(_batching.along_dim)
softmax_op.defbatch(_batching.along_dim)


@softmax_op.defderivative
def _softmax_derivative(ctx, grad, *, dim):
    y = ctx.output
    gy = grad * y
    return (gy - y * gy.sum(dim, keepdim=True),)


softmax_op.defjvp(symmetric_jvp(softmax_op))  # its Jacobian is symmetric


def _log_softmax_backward_kernel(xp, grad, y, *, dim):
    """``grad - exp(y) * grad.sum(dim)``: the first-order input gradient of log_softmax, by
    blocks of rows on the CPU (one pass per block, no full-size temporaries)."""
    g2, y2 = _by_rows(xp, grad, dim), _by_rows(xp, y, dim)
    if xp is np and g2 is not None and y2 is not None and grad.dtype == y.dtype \
            and grad.dtype.kind == "f":
        return _log_softmax_backward_rows(g2, y2, grad.shape)
    return grad - xp.exp(y) * grad.sum(axis=dim, keepdims=True)


def _log_softmax_backward_rows(g2, y2, shape):
    """The CPU path of :func:`_log_softmax_backward_kernel` on (rows, cols) NumPy arrays."""
    total = _row_sums(g2, np.ones(g2.shape[1], g2.dtype))
    result = np.empty(shape, g2.dtype)   # a base array: .grad may take it uncopied
    out = result.reshape(g2.shape)
    for rows in _row_blocks(*g2.shape):
        o = out[rows]
        np.exp(y2[rows], out=o)
        o *= total[rows]
        np.subtract(g2[rows], o, out=o)
    return result


# first order only (the derivative below calls it when no graph of the gradient is recorded)
_log_softmax_backward_op = Op("_log_softmax_backward_fused", _log_softmax_backward_kernel,
                              meta=lambda grad, y, *, dim: (grad.shape, grad.dtype),
                              save_inputs=False, kind="nn")
_log_softmax_backward_op.defbatch(_batching.along_dim)


_log_softmax_backward_op.opt_out("derivative", "a first-order backward kernel (no graph recorded)")
_log_softmax_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


@log_softmax_op.defderivative
def _log_softmax_derivative(ctx, grad, *, dim):
    y = ctx.output
    if not grad_mode.is_grad_enabled() and grad.dtype is y.dtype and grad.shape == y.shape:
        return (_log_softmax_backward_op(grad, y, dim=dim),)
    return (grad - y.exp() * grad.sum(dim, keepdim=True),)


@log_softmax_op.defjvp
def _log_softmax_jvp(p, t, y, *, dim):
    return t[0] - (t[0] * y.exp()).sum(dim, keepdim=True)


def _softmax_input(input, name, dim, dtype, stacklevel):
    _check_input(input, name)
    if dim is None:
        dim = _softmax_dim(name, input.dim(), stacklevel + 1)
    dim = wrap_dim(dim, input.dim())
    if dtype is not None:
        input = input.to(dtype)
    _check_dtype(f"{name}_lastdim_kernel_impl", input.dtype, "bic")
    return input, dim


@signature("softmax(Tensor input, int? dim=None, PyObject _stacklevel=3, "
           "ScalarType? dtype=None) -> Tensor")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x), dim)``, computed stably; ``dtype`` casts the input first.

    Example::

        >>> F.softmax(ember.tensor([0., 0.]), dim=0)
        tensor([0.5000, 0.5000])
    """
    input, dim = _softmax_input(input, "softmax", dim, dtype, _stacklevel)
    return softmax_op(input, dim=dim)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input)``.

    Example::

        >>> F.softmin(ember.tensor([0., 0.]), dim=0)
        tensor([0.5000, 0.5000])
    """
    _check_input(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel + 1)
    # torch negates before the cast, so an unsigned input wraps around
    return softmax(-input, dim, dtype=dtype)


@signature("log_softmax(Tensor input, int? dim=None, PyObject _stacklevel=3, "
           "ScalarType? dtype=None) -> Tensor")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(input))``, computed stably (finite for logits like +-1e4).

    Example::

        >>> F.log_softmax(ember.tensor([0., 0.]), dim=0)
        tensor([-0.6931, -0.6931])
    """
    input, dim = _softmax_input(input, "log_softmax", dim, dtype, _stacklevel)
    return log_softmax_op(input, dim=dim)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Sample from the Gumbel-softmax distribution; ``hard=True`` returns one-hot samples
    with the soft sample's gradient (straight-through).

    Example::

        >>> F.gumbel_softmax(ember.randn(2, 5), tau=0.5, hard=True).sum(-1)
        tensor([1., 1.])
    """
    _check_input(logits, "gumbel_softmax")
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -logits.detach().new_empty(logits.shape).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().argmax(dim, keepdim=True)
    y_hard = y_soft.detach().new_zeros(y_soft.shape).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _tensor_softmax(self, dim, dtype=None):
    """Softmax along ``dim`` (see :func:`ember.nn.functional.softmax`)."""
    return softmax(self, dim, dtype=dtype)


def _tensor_log_softmax(self, dim, dtype=None):
    """Log-softmax along ``dim`` (see :func:`ember.nn.functional.log_softmax`)."""
    return log_softmax(self, dim, dtype=dtype)


if not hasattr(Tensor, "softmax"):
    tensor_method(_tensor_softmax, "softmax")
if not hasattr(Tensor, "log_softmax"):
    tensor_method(_tensor_log_softmax, "log_softmax")
