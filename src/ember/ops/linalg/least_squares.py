"""Pseudo-inverses, rank and least squares: ``linalg.pinv`` (and ``pinverse``),
``linalg.matrix_rank`` and ``linalg.lstsq``, all through the SVD or eigendecomposition.

Example::

    >>> ember.linalg.matrix_rank(ember.ones(3, 3))
    tensor(1)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from .._methods import tensor_method
from .._registry import Op, autocast_policy, defop, write_out
from .._vmap_rules import batching
from ._common import _LOW, LstsqResult, _check_matrix, _check_tensor, _real_np, _short
from .decompositions import linalg_eigh, linalg_eigvalsh, linalg_svd, linalg_svdvals
from .products import matmul, matmul_op

# ================================================================ pinv, rank, lstsq


def _tolerance(s, atol, rtol, A, hermitian=False):
    """torch's cutoff: max(atol, rtol * largest singular value)."""
    smax = s.amax(-1, keepdim=True) if s._data.shape[-1] else s.sum(-1, keepdim=True)
    if rtol is None:
        eps = np.finfo(_real_np(A._data.dtype)).eps
        default = eps * max(A._data.shape[-2:])
        if isinstance(atol, Tensor):  # per matrix: no relative cutoff where atol > 0
            from ..pointwise import where

            rtol = where(atol > 0, atol * 0, atol * 0 + default)
        else:
            rtol = 0.0 if (atol is not None and atol > 0) else default
    tol = smax * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)  # one per matrix
    if atol is not None:
        from ..pointwise import maximum

        tol = maximum(tol, tol * 0 + atol) if not isinstance(atol, Tensor) else maximum(
            tol, atol.unsqueeze(-1))
    return tol


@defop("linalg_pinv", meta=lambda a, p: (p.shape, p.dtype), save_output=True,
       grad_name="LinalgPinvBackward0", kind="linalg")
def pinv_op(xp, a, p):
    """Attaches pinv's own derivative to ``p``, the pseudo-inverse of ``a`` computed without
    recording (torch differentiates pinv by its formula, not through the SVD, so that the
    gradient holds at rank-deficient matrices too)."""
    return p


pinv_op.opt_out("onnx", "ONNX has no pseudo-inverse (it needs an SVD)")


pinv_op.defbatch(batching.trailing_dims)


@pinv_op.defderivative
def _pinv_derivative(ctx, grad):
    return _pinv_vjp(grad, ctx.output, ctx.inputs[0]), None


def _pinv_jvp(p, t, y):
    """The tangent of ``P = pinv(A)``: ``-P dA P + P P^H dA^H (I - A P) +
    (I - P A) dA^H P^H P``."""
    a, ta = p[0], t[0]
    if ta is None:
        return None
    tah, yh = ta.mH, y.mH
    term1 = -matmul_op(matmul_op(y, ta), y)
    term2 = matmul_op(matmul_op(y, yh), tah - matmul_op(matmul_op(tah, a), y))
    term3 = matmul_op(tah - matmul_op(matmul_op(y, a), tah), matmul_op(yh, y))
    return term1 + term2 + term3


pinv_op.jvp = _pinv_jvp


def linalg_pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The Moore-Penrose pseudo-inverse, from the SVD (singular values below
    ``max(atol, rtol * s_max)`` count as zero). ``rcond`` is torch's older name for ``rtol``
    (it cannot be combined with ``atol``/``rtol``).

    Example::

        >>> ember.linalg.pinv(ember.tensor([[2., 0.], [0., 0.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    _check_tensor(A, "linalg.pinv", "A")
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or A._data.ndim < 2:
        raise RuntimeError(f"linalg.pinv({_short(A)}{{{list(A._data.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or "
                           "cdouble types")
    _check_matrix(A, "linalg.pinv")
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_pinv() received an invalid combination of arguments: "
                            "rcond cannot be given with atol or rtol")
        rtol = rcond
    if A._data.size == 0:  # as torch: the transposed empty shape, the tolerances unused
        shape = tuple(A._data.shape[:-2]) + (A._data.shape[-1], A._data.shape[-2])
        return write_out(A.new_zeros(shape), out, "linalg.pinv")
    from ...autograd import forward_ad
    from ...autograd.grad_mode import no_grad, state

    differentiable = (A.requires_grad and state.enabled) or forward_ad.is_dual(A)
    if not differentiable:
        return write_out(_pinv_value(A, atol, rtol, hermitian), out, "linalg.pinv")
    with no_grad():
        value = _pinv_value(A.detach(), atol, rtol, hermitian)
    return write_out(pinv_op(A, value), out, "linalg.pinv")


def _pinv_value(A, atol, rtol, hermitian):
    """The pseudo-inverse through the eigendecomposition (``hermitian``: of the lower
    triangle, as torch) or the SVD, singular values below the cutoff counted as zero."""
    from ..pointwise import where

    if hermitian:
        w, v = linalg_eigh(A)
        tol = _tolerance(w.abs(), atol, rtol, A)
        w_inv = where(w.abs() > tol, 1 / where(w.abs() > tol, w, w * 0 + 1), w * 0)
        return matmul(v * w_inv.to(A.dtype).unsqueeze(-2), v.mH)
    u, s, vh = linalg_svd(A, full_matrices=False)
    tol = _tolerance(s, atol, rtol, A)
    s_inv = where(s > tol, 1 / where(s > tol, s, s * 0 + 1), s * 0)
    return matmul(vh.mH * s_inv.to(A.dtype).unsqueeze(-2), u.mH)


@tensor_method
@autocast_policy(cpu="fp32")
def pinverse(input, rcond=1e-15):
    """The pseudo-inverse (``rcond`` relative cutoff), as torch.pinverse.

    Example::

        >>> ember.pinverse(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return linalg_pinv(input, rtol=rcond)


@autocast_policy(cpu="fp32")
def linalg_matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None, tol=None):
    """The number of singular values above ``max(atol, rtol * s_max)``.

    Example::

        >>> ember.linalg.matrix_rank(ember.tensor([[1., 2.], [2., 4.]]))
        tensor(1)
    """
    _check_tensor(A, "linalg.matrix_rank", "A")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError("This function doesn't handle types other than float and double")
    _check_matrix(A, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    from ...autograd.grad_mode import no_grad

    with no_grad():
        s = linalg_svdvals(A) if not hermitian else linalg_eigvalsh(A).abs()
        t = _tolerance(s, atol, rtol, A)
        result = (s > t).sum(-1)
    return write_out(result, out, "linalg.matrix_rank")


def _lstsq_meta(a, b, *, driver, rcond):
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    m, n = a.shape[-2:]
    real = _real_np(a.dtype)
    rank = (a.shape[:-2] if driver != "gels" else (0,), np.dtype(np.int64))
    svals = (a.shape[:-2] + (min(m, n),) if driver in ("gelsd", "gelss") else (0,), real)
    return (batch + (n, b.shape[-1]), a.dtype), rank, svals


def _gels(a, b):
    """LAPACK ``?gels`` (QR/LQ, full rank assumed) on one matrix, as torch's 'gels' driver."""
    import scipy.linalg

    m, n = a.shape
    gels, = scipy.linalg.get_lapack_funcs(("gels",), (a, b))
    rhs = np.zeros((max(m, n), b.shape[1]), b.dtype)
    rhs[:m] = b
    _, x, _ = gels(a, rhs)
    return x[:n]


def _lstsq_kernel(xp, a, b, *, driver, rcond):
    (sx, dx), (sr, _), (ss, ds) = _lstsq_meta(a, b, driver=driver, rcond=rcond)
    m, n = a.shape[-2:]
    if xp is not np:  # CuPy: the 'gels' driver only (checked by the caller), via pinv
        return xp.matmul(xp.linalg.pinv(a), b).astype(dx, copy=False), xp.zeros(sr, np.int64), \
            xp.zeros(ss, ds)
    import scipy.linalg

    batch = sx[:-2]
    count = math.prod(batch)
    flat_a = np.broadcast_to(a, batch + (m, n)).reshape((count, m, n))
    flat_b = np.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
    x = np.zeros((count,) + sx[-2:], dx)
    rank = np.zeros(count, np.int64)
    svals = np.zeros((count, min(m, n)), ds)
    if m and n:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(flat_a.shape[0]):
                if driver == "gels":
                    x[i] = _gels(flat_a[i], flat_b[i])
                    continue
                x[i], _, rank[i], sv = scipy.linalg.lstsq(
                    flat_a[i], flat_b[i], cond=rcond, lapack_driver=driver,
                    check_finite=False)
                if sv is not None and driver != "gelsy":
                    svals[i] = sv
    # rank and singular values describe A's own batch (torch does not broadcast them)
    pick = tuple(0 if size == 1 and full != 1 else slice(None)
                 for size, full in zip(a.shape[:-2], batch))
    if driver == "gels":
        rank_out = np.zeros(sr, np.int64)
    else:
        rank_out = np.ascontiguousarray(rank.reshape(batch)[pick]).reshape(sr)
    if driver in ("gelsd", "gelss"):
        svals_out = np.ascontiguousarray(svals.reshape(batch + (min(m, n),))[pick]).reshape(ss)
    else:
        svals_out = np.zeros(ss, ds)
    return x.reshape(sx), rank_out, svals_out


lstsq_op = Op("linalg_lstsq", _lstsq_kernel, meta=_lstsq_meta, multi_output=True,
              differentiable_outputs=(0,), grad_name="LinalgLstsqBackward0", kind="linalg",
              autocast={"cpu": "fp32"})


lstsq_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


lstsq_op.defbatch(batching.lstsq)


@lstsq_op.defderivative
def _lstsq_derivative(ctx, grad, grad_rank, grad_svals, *, driver, rcond):
    # As torch: the gradient of pinv(A) @ B (pinv with its default cutoff, not rcond)
    a, b = ctx.inputs
    pinv = linalg_pinv(a)
    grad_a = grad_b = None
    if ctx.needs_input_grad[1]:
        grad_b = matmul_op(pinv.mH, grad)
    if ctx.needs_input_grad[0]:
        grad_a = _pinv_vjp(matmul_op(grad, b.mH), pinv, a)
    return grad_a, grad_b


def _pinv_vjp(grad, pinv, a):
    """The gradient reaching ``A`` from ``grad`` on ``P = pinv(A)``:
    ``-P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)``."""
    ph, gh = pinv.mH, grad.mH
    term1 = -matmul_op(matmul_op(ph, grad), ph)
    term2 = matmul_op(gh - matmul_op(a, matmul_op(pinv, gh)), matmul_op(pinv, ph))
    term3 = matmul_op(matmul_op(ph, pinv), gh - matmul_op(matmul_op(gh, pinv), a))
    return term1 + term2 + term3


@autocast_policy(cpu="fp32")
def linalg_lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B``: ``(solution, residuals, rank,
    singular_values)``. As torch, the fields depend on ``driver`` ('gelsy' by default on the
    CPU, 'gels' on CUDA): ``rank`` is empty for 'gels', ``singular_values`` only for 'gelsd' and
    'gelss', ``residuals`` (squared column norms of ``A X - B``) only for tall ``A`` with
    'gels', or with 'gelsd'/'gelss' when every matrix has full rank. The solution (and the
    residuals) are differentiable, through ``pinv(A) @ B`` as in torch.

    Example::

        >>> ember.linalg.lstsq(ember.tensor([[1.], [1.]]), ember.tensor([[1.], [3.]])).solution
        tensor([[2.]])
    """
    _check_tensor(A, "linalg.lstsq", "A")
    _check_tensor(B, "linalg.lstsq", "B")
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B._data.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or A._data.dtype in _LOW:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_short(A)} and other's dtype "
                           f"{_short(B)}")
    if A._device is not B._device:
        raise RuntimeError(f"torch.linalg.lstsq: Expected all tensors to be on the same device, "
                           f"but found at least two devices, {A._device} and {B._device}!")
    cuda = A._device.type == "cuda"
    if driver is None:
        driver = "gels" if cuda else "gelsy"
    elif driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    elif cuda and driver != "gels":
        raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported on "
                           "CUDA")
    diff = A._data.ndim - B._data.ndim
    if not 0 <= diff <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = diff == 1
    m, n = A._data.shape[-2:]
    b = B.unsqueeze(-1) if vector else B
    _broadcast_batch(A._data.shape[:-2], b._data.shape[:-2])
    if vector and B._data.shape[-1] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
    if not vector and B._data.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if rcond is None:
        rcond = float(np.finfo(_real_np(A._data.dtype)).eps) * max(m, n)
    solution, rank, svals = lstsq_op(A, b, driver=driver, rcond=float(rcond))
    from ..creation import zeros

    real = dt.from_numpy_dtype(_real_np(A._data.dtype))
    residuals = zeros(0, dtype=real, device=A._device)
    if m > n and driver != "gelsy":
        full = driver == "gels" or A._device is META or bool((rank._data == n).all())
        if full:
            residuals = ((matmul(A, solution) - b).abs() ** 2).sum(-2)
            if driver == "gels" and n == 0:
                residuals = residuals * 0  # LAPACK's quick return for an empty A
    if vector:
        solution = solution.squeeze(-1)
    return LstsqResult(solution, residuals, rank, svals)


def _broadcast_batch(sa, sb):
    """torch's broadcasting error for the batch dims of lstsq's operands."""
    for i, (x, y) in enumerate(zip(sa[::-1], sb[::-1])):
        if x != y and x != 1 and y != 1:
            dim = max(len(sa), len(sb)) - 1 - i
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {dim}")
