"""Matrix decompositions: Cholesky (``linalg.cholesky``, ``cholesky_ex``, ``cholesky``), QR
(``linalg.qr``, ``qr``, ``geqrf``, ``orgqr``, ``ormqr``, ``linalg.householder_product``), the
eigendecompositions (``linalg.eigh``, ``eigvalsh``, ``eig``, ``eigvals``) and the SVD
(``linalg.svd``, ``svdvals``, ``svd``).

They run ``xp.linalg`` batched; their derivatives are written with ember operators so that
higher-order gradients work.

Example::

    >>> ember.linalg.eigvalsh(ember.eye(2))
    tensor([1., 1.])
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ... import _dtype as dt
from ... import return_types as _return_types
from ..._device import META
from .._methods import tensor_method
from .._registry import autocast_policy, defop, write_out
from .._signature import signature
from .._util import host_values, linalg_errors
from .._util import svd as _svd
from .._vmap_rules import batching
from ._common import (
    _LOW,
    CholeskyExResult,
    EighResult,
    EigResult,
    LinAlgError,
    QRResult,
    SVDResult,
    _batch_prefix,
    _check_float,
    _check_matrix,
    _check_square,
    _check_tensor,
    _real_np,
    _short,
)
from .contractions import diag_embed
from .lu_ldl import _deprecated, _on_host, _write_tuple
from .products import matmul, matmul_op
from .solvers import linalg_inv, solve_op

# ================================================================ cholesky


@defop("linalg_cholesky", meta=lambda a: (a.shape, a.dtype), save_inputs=False,
       save_output=True, grad_name="LinalgCholeskyExBackward0", kind="linalg",
       autocast={"cpu": "fp32"})
def cholesky_op(xp, a):
    if a.size == 0:
        return xp.empty(a.shape, a.dtype)
    if not host_values(xp, xp.isfinite(a).all())[0]:  # torch's LAPACK fails; NumPy's gives NaN
        _not_pd_error(xp, a, "linalg.cholesky")
    try:
        with linalg_errors(xp):
            return xp.linalg.cholesky(a).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        _not_pd_error(xp, a, "linalg.cholesky")


cholesky_op.opt_out("onnx", "ONNX has no matrix decompositions")


cholesky_op.defbatch(batching.trailing_dims)


def _not_pd_error(xp, a, name):
    host = a if xp is np else xp.asnumpy(a)
    flat = host.reshape((-1,) + host.shape[-2:])
    for index, matrix in enumerate(flat):
        order = _first_bad_minor(matrix)
        if order:
            raise LinAlgError(f"{name}: {_batch_prefix(index, host.ndim > 2)}The factorization "
                              f"could not be completed because the input is not "
                              f"positive-definite (the leading minor of order {order} is not "
                              "positive-definite).")
    raise LinAlgError(f"{name}: The factorization could not be completed because the input is "
                      "not positive-definite.")


def _first_bad_minor(matrix):
    """The order of the first leading minor that is not positive-definite (0 if none)."""
    import scipy.linalg

    try:
        factor = scipy.linalg.cholesky(matrix, lower=True, check_finite=False)
    except np.linalg.LinAlgError as e:
        digits = "".join(itertools.takewhile(str.isdigit, str(e).strip()))
        return int(digits) if digits else 1
    for order, pivot in enumerate(np.diagonal(factor), start=1):
        if math.isnan(pivot):  # LAPACK stops at a NaN pivot; SciPy goes on
            return order
    return 0


@cholesky_op.defderivative
def _cholesky_derivative(ctx, grad):
    L = ctx.output
    phi = matmul_op(L.mH, grad).tril()
    phi = 0.5 * (phi + phi.tril(-1).mH)
    inv_l = linalg_inv(L)
    return (matmul_op(inv_l.mH, matmul_op(phi, inv_l)),)


@autocast_policy(cpu="fp32")
def linalg_cholesky(A, *, upper=False, out=None):
    """The Cholesky factor ``L`` (``A = L L^H``) of a Hermitian positive-definite matrix, or
    ``U = L^H`` with ``upper=True``; raises :class:`LinAlgError` otherwise.

    Example::

        >>> ember.linalg.cholesky(ember.tensor([[4., 2.], [2., 5.]]))
        tensor([[2., 0.],
                [1., 2.]])
    """
    _check_square(A, "linalg.cholesky")
    result = cholesky_op(A.mH).mH if upper else cholesky_op(A)
    return write_out(result, out, "linalg.cholesky")


@tensor_method
@autocast_policy(cpu="fp32")
def cholesky(input, upper=False, *, out=None):
    """Same as :func:`ember.linalg.cholesky` (``upper`` positional, as torch.cholesky).

    Example::

        >>> ember.cholesky(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    if getattr(input, "_data", None) is not None and input._data.size == 0:
        # torch's deprecated cholesky returns any empty input's like before checking it
        return write_out(input.clone(), out, "cholesky")
    _check_square(input, "cholesky")
    result = cholesky_op(input.mH).mH if upper else cholesky_op(input)
    return write_out(result, out, "cholesky")


@autocast_policy(cpu="fp32")
def linalg_cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """The Cholesky factor and an ``info`` tensor (the order of the first failing minor, or
    0).

    Example::

        >>> ember.linalg.cholesky_ex(ember.eye(2)).info
        tensor(0, dtype=ember.int32)
    """
    from ..creation import zeros

    try:
        L = linalg_cholesky(A, upper=upper)
        info = zeros(A._data.shape[:-2], dtype=dt.int32, device=A._device)
    except LinAlgError:
        if check_errors:
            raise
        host = A.detach().cpu()._data
        flat = host.reshape((-1,) + host.shape[-2:])
        codes = np.zeros(flat.shape[0], np.int32)
        factors = np.zeros_like(flat)
        for i, m in enumerate(flat):
            src = m.conj().T if upper else m
            factors[i], codes[i] = _lapack_cholesky(src)
            if upper:
                factors[i] = factors[i].conj().T
        from ..._tensor import tensor

        L = tensor(factors.reshape(host.shape), device=A._device)
        info = tensor(codes.reshape(host.shape[:-2]), device=A._device)
    return CholeskyExResult(L, info)


def _lapack_cholesky(matrix):
    """``(factor, info)`` as LAPACK's unblocked lower Cholesky leaves them, which torch returns
    from ``cholesky_ex``: columns computed one by one until a pivot is not positive (or NaN),
    that pivot stored, the columns after it still the input's lower triangle; ``info`` is
    the failing column, counted from 1 (0 when none fails).

    Example::

        >>> _lapack_cholesky(np.array([[4., 2.], [2., -3.]]))
        (array([[ 2.,  0.],
               [ 1., -4.]]), 2)
    """
    a = np.tril(matrix).astype(matrix.dtype, copy=True)
    with np.errstate(all="ignore"):
        for j in range(a.shape[0]):
            row = a[j, :j]
            pivot = a[j, j] - np.vdot(row, row)
            if not pivot.real > 0:  # (NaN fails too)
                a[j, j] = pivot
                return a, j + 1
            a[j, j] = np.sqrt(pivot.real)
            a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, :j] @ row.conj()) / a[j, j]
            if np.isinf(a[j, j]):  # torch's LAPACK gives NaN below an infinite pivot
                a[j + 1:, j] = np.nan
    return a, 0


# ================================================================ QR


def _qr_meta(a, *, mode):
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    if mode == "complete":
        return (batch + (m, m), a.dtype), (batch + (m, n), a.dtype)
    if mode == "r":
        return ((0,), a.dtype), (batch + (k, n), a.dtype)
    return (batch + (m, k), a.dtype), (batch + (k, n), a.dtype)


@defop("linalg_qr", meta=_qr_meta, multi_output=True, save_inputs=False, save_output=True,
       grad_name="LinalgQrBackward0", kind="linalg", autocast={"cpu": "fp32"})
def qr_op(xp, a, *, mode):
    if xp is np and a.dtype.kind == "f" and not np.isfinite(a).all():
        q, r = _lapack_qr(a, "reduced" if mode == "r" else mode)
        return (np.zeros((0,), a.dtype) if mode == "r" else q), r
    if mode == "r":
        m, n = a.shape[-2:]
        r = xp.linalg.qr(a, mode="r") if a.size else xp.zeros(
            a.shape[:-2] + (min(m, n), n), a.dtype)
        return xp.zeros((0,), a.dtype), r.astype(a.dtype, copy=False)
    if a.size == 0:
        m, n = a.shape[-2:]
        k = m if mode == "complete" else min(m, n)
        q = xp.zeros(a.shape[:-2] + (m, k), a.dtype)
        if m and k:
            q[...] = xp.eye(m, k, dtype=a.dtype)
        return q, xp.zeros(a.shape[:-2] + (k, n), a.dtype)
    q, r = xp.linalg.qr(a, mode=mode)
    return q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)


def _lapack_qr(a, mode):
    """``(q, r)`` of a real CPU matrix (batch) holding an infinity or NaN as torch's library
    computes it: geqr2's reflectors, then org2r's product of them (NaN where torch's is)."""
    m, n = a.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    flat = a.reshape((-1, m, n))
    qs = np.zeros((flat.shape[0], m, k), a.dtype)
    rs = np.zeros((flat.shape[0], k, n), a.dtype)
    for index, matrix in enumerate(flat):
        packed, tau = _lapack_geqr2(matrix)
        rs[index] = np.triu(packed[:k]) if k <= m else np.triu(packed)
        reflectors = np.zeros((m, k), a.dtype)
        reflectors[:, :min(m, n, k)] = packed[:, :min(m, n, k)]
        qs[index] = _lapack_org2r(reflectors, tau)
    return qs.reshape(a.shape[:-2] + (m, k)), rs.reshape(a.shape[:-2] + (k, n))


def _larf(c, v, tau):
    """``c -= tau v (v^T c)`` in place as LAPACK's larf with BLAS's ger: rows past ``v``'s
    last non-zero entry and columns whose ``v^T c`` is zero are left alone (so a NaN ``tau``
    spreads only where ``v`` and ``v^T c`` reach)."""
    nonzero = np.flatnonzero(v != 0)
    if nonzero.size == 0:
        return
    rows = nonzero[-1] + 1
    w = v[:rows] @ c[:rows]
    cols = np.flatnonzero(w != 0)
    c[:rows, cols] -= tau * np.outer(v[:rows], w[cols])


def _lapack_org2r(a, tau):
    """The first ``a.shape[1]`` columns of ``H_0 ... H_(k-1)`` as LAPACK's org2r forms them
    (``H_i`` touches rows i: of columns i: only; column i is ``e_i - tau_i v_i``)."""
    q = np.array(a, copy=True)
    m, n = q.shape
    k = tau.shape[0]
    q[:, k:] = np.eye(m, n, dtype=q.dtype)[:, k:]
    with np.errstate(all="ignore"):
        for i in reversed(range(k)):
            v = np.concatenate([[1], q[i + 1:, i]]).astype(q.dtype)
            if i + 1 < n:
                _larf(q[i:, i + 1:], v, tau[i])
            q[i + 1:, i] = -tau[i] * v[1:]
            q[i, i] = 1 - tau[i]
            q[:i, i] = 0
    return q


qr_op.opt_out("onnx", "ONNX has no matrix decompositions")


qr_op.defbatch(batching.trailing_dims)


@qr_op.defderivative
def _qr_derivative(ctx, grad_q, grad_r, *, mode):
    q, r = ctx.output
    m, n = q._data.shape[-2], r._data.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    if m < n:
        # A = [A1 A2] with A1 = Q R1 square and R2 = Q^H A2: A2 adds A2 gR2^H to Q's gradient
        # and gets Q gR2 itself.
        from ..shape import cat

        r1, r2 = r[..., :m], r[..., m:]
        a2 = matmul_op(q, r2)
        grad_q1 = grad_q + matmul_op(a2, grad_r[..., m:].mH)
        grad_a1 = _qr_square_grad(q, r1, grad_q1, grad_r[..., :m])
        return (cat([grad_a1, matmul_op(q, grad_r[..., m:])], -1),)
    return (_qr_square_grad(q, r, grad_q, grad_r),)


def _qr_square_grad(q, r, grad_q, grad_r):
    """gA = (gQ + Q copyltu(M)) R^{-H} with M = R gR^H - gQ^H Q (for m >= n)."""
    m_ = matmul_op(r, grad_r.mH) - matmul_op(grad_q.mH, q)
    lower = m_.tril(-1)
    copyltu = lower + lower.mH + _real_diag(m_)
    b = grad_q + matmul_op(q, copyltu)
    # X R^H = B  <=>  R X^H = B^H
    return solve_op(r, b.mH).mH


def _real_diag(x):
    d = x.diagonal(0, -2, -1)
    if x.dtype.is_complex:
        d = d.real.to(x.dtype)
    return diag_embed(d)


@autocast_policy(cpu="fp32")
def linalg_qr(A, mode="reduced", *, out=None):
    """The QR decomposition ``A = QR``: ``mode`` is ``'reduced'``, ``'complete'`` or ``'r'``
    (R only, Q empty).

    Example::

        >>> Q, R = ember.linalg.qr(ember.tensor([[3., 0.], [4., 5.]]))
        >>> R.shape
        ember.Size([2, 2])
    """
    _check_matrix(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    q, r = qr_op(A, mode=mode)
    if out is not None:
        write_out(q, out[0], "linalg.qr")
        write_out(r, out[1], "linalg.qr")
        return QRResult(*out)
    return QRResult(q, r)


# ================================================================ eigh / eig


def _eigh_meta(a, *, UPLO):
    return (a.shape[:-1], _real_np(a.dtype)), (a.shape, a.dtype)


@defop("linalg_eigh", meta=_eigh_meta, multi_output=True, save_inputs=False, save_output=True,
       grad_name="LinalgEighBackward0", kind="linalg", autocast={"cpu": "fp32"})
def eigh_op(xp, a, *, UPLO):
    if a.size == 0:
        return xp.zeros(a.shape[:-1], _real_np(a.dtype)), xp.zeros(a.shape, a.dtype)
    w, v = xp.linalg.eigh(a, UPLO=UPLO)
    return w.astype(_real_np(a.dtype), copy=False), v.astype(a.dtype, copy=False)


eigh_op.opt_out("onnx", "ONNX has no matrix decompositions")


eigh_op.defbatch(batching.trailing_dims)


def _is_zero(t):
    # through ops and bool(): a vmap recording guards the branch taken on it per element
    return t._device is META or not bool(t.any())


@eigh_op.defderivative
def _eigh_derivative(ctx, grad_l, grad_v, *, UPLO):
    lam, v = ctx.output
    if _is_zero(grad_v):
        inner = diag_embed(grad_l.to(v.dtype))
    else:
        vhgv = matmul_op(v.mH, grad_v)
        skew = 0.5 * (vhgv - vhgv.mH)
        e = lam.unsqueeze(-2) - lam.unsqueeze(-1)
        from ..creation import eye
        n = lam._data.shape[-1]
        e = e + eye(n, dtype=e.dtype, device=e._device)
        off = skew / e.to(v.dtype)
        off = off - diag_embed(off.diagonal(0, -2, -1))
        inner = off + diag_embed(grad_l.to(v.dtype))
    return (matmul_op(v, matmul_op(inner, v.mH)),)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@autocast_policy(cpu="fp32")
def linalg_eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of a Hermitian matrix, read from the
    ``UPLO`` triangle.

    Example::

        >>> ember.linalg.eigh(ember.tensor([[2., 0.], [0., 1.]])).eigenvalues
        tensor([1., 2.])
    """
    _check_square(A, "linalg.eigh")
    _check_uplo(UPLO)
    w, v = eigh_op(A, UPLO=UPLO)
    if out is not None:
        write_out(w, out[0], "linalg.eigh")
        write_out(v, out[1], "linalg.eigh")
        return EighResult(*out)
    return EighResult(w, v)


@autocast_policy(cpu="fp32")
def linalg_eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of a Hermitian matrix.

    Example::

        >>> ember.linalg.eigvalsh(ember.tensor([[2., 0.], [0., 1.]]))
        tensor([1., 2.])
    """
    _check_square(A, "linalg.eigvalsh")
    _check_uplo(UPLO)
    return write_out(eigh_op(A, UPLO=UPLO)[0], out, "linalg.eigvalsh")


def _eig_meta(a):
    c = dt.from_numpy_dtype(a.dtype).to_complex().np
    return (a.shape[:-1], c), (a.shape, c)


def _host_linalg(xp, fn_name, a):
    """Run ``numpy.linalg.<fn_name>`` (for functions CuPy lacks) on a host copy."""
    if xp is np:
        return getattr(np.linalg, fn_name)(a)
    results = getattr(np.linalg, fn_name)(xp.asnumpy(a))
    if isinstance(results, tuple):
        return tuple(xp.asarray(r) for r in results)
    return xp.asarray(results)


@defop("linalg_eig", meta=_eig_meta, multi_output=True, save_inputs=False, save_output=True,
       grad_name="LinalgEigBackward0", kind="linalg", autocast={"cpu": "fp32"})
def eig_op(xp, a):
    c = dt.from_numpy_dtype(a.dtype).to_complex().np
    if a.size == 0:
        return xp.zeros(a.shape[:-1], c), xp.zeros(a.shape, c)
    w, v = _host_linalg(xp, "eig", a)
    # LAPACK normalises each eigenvector to norm 1 with a real largest component; torch does
    # the same, so values agree up to LAPACK's own choices.
    return w.astype(c, copy=False), v.astype(c, copy=False)


eig_op.opt_out("onnx", "ONNX has no matrix decompositions")


eig_op.defbatch(batching.trailing_dims)


@eig_op.defderivative
def _eig_derivative(ctx, grad_l, grad_v):
    lam, v = ctx.output
    vhgv = matmul_op(v.mH, grad_v)
    diag_re = vhgv.diagonal(0, -2, -1).real.to(v.dtype)
    vhgv = vhgv - matmul_op(v.mH, v * diag_re.unsqueeze(-2))
    e = (lam.unsqueeze(-2) - lam.unsqueeze(-1)).conj()
    from ..creation import eye
    n = lam._data.shape[-1]
    e = e + eye(n, dtype=e.dtype, device=e._device)
    inner = vhgv / e
    inner = inner - diag_embed(inner.diagonal(0, -2, -1)) + diag_embed(grad_l)
    return (solve_op(v.mH, matmul_op(inner, v.mH)),)


def _eig_jvp(p, t, y):
    """The tangents of ``A = V diag(L) V^-1``: with ``dP = V^-1 dA V``, ``dL = diag(dP)``
    and ``dV = V (dP / (L_j - L_i), zero diagonal)`` less ``V Re(diag(V^H dV))``, which keeps
    each eigenvector's unit norm (torch's convention)."""
    from ..creation import eye

    (lam, v), ta = y, t[0]
    if ta is None:
        return None, None
    dp = solve_op(v, matmul_op(ta.to(v.dtype), v))
    n = lam._data.shape[-1]
    off = eye(n, dtype=dt.bool, device=lam._device).logical_not()
    gaps = lam.unsqueeze(-2) - lam.unsqueeze(-1)
    scaled = (dp / gaps.masked_fill(off.logical_not(), 1)).masked_fill(off.logical_not(), 0)
    dx = matmul_op(v, scaled)
    norm_part = matmul_op(v.mH, dx).diagonal(0, -2, -1).real.to(v.dtype)
    return dp.diagonal(0, -2, -1), dx - v * norm_part.unsqueeze(-2)


eig_op.jvp = _eig_jvp


@autocast_policy(cpu="fp32")
def linalg_eig(A, *, out=None):
    """Eigenvalues and eigenvectors of a square matrix (always complex).

    Example::

        >>> ember.linalg.eig(ember.tensor([[2., 0.], [0., 1.]])).eigenvalues
        tensor([2.+0.j, 1.+0.j])
    """
    _check_square(A, "linalg.eig")
    w, v = eig_op(A)
    if out is not None:
        write_out(w, out[0], "linalg.eig")
        write_out(v, out[1], "linalg.eig")
        return EigResult(*out)
    return EigResult(w, v)


@autocast_policy(cpu="fp32")
def linalg_eigvals(A, *, out=None):
    """The eigenvalues of a square matrix (complex).

    Example::

        >>> ember.linalg.eigvals(ember.tensor([[2., 0.], [0., 1.]]))
        tensor([2.+0.j, 1.+0.j])
    """
    _check_square(A, "linalg.eigvals")
    return write_out(eig_op(A)[0], out, "linalg.eigvals")


# ================================================================ SVD


def _svd_meta(a, *, full_matrices):
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = tuple(a.shape[:-2])
    r = _real_np(a.dtype)
    if full_matrices:
        return (batch + (m, m), a.dtype), (batch + (k,), r), (batch + (n, n), a.dtype)
    return (batch + (m, k), a.dtype), (batch + (k,), r), (batch + (k, n), a.dtype)


@defop("linalg_svd", meta=_svd_meta, multi_output=True, save_inputs=False, save_output=True,
       grad_name="LinalgSvdBackward0", kind="linalg", autocast={"cpu": "fp32"})
def svd_op(xp, a, *, full_matrices):
    if a.size == 0:
        (su, _), (ss, sd), (sv, _) = _svd_meta(a, full_matrices=full_matrices)
        u = xp.zeros(su, a.dtype)
        vh = xp.zeros(sv, a.dtype)
        if full_matrices:
            u[...] = xp.eye(su[-1], dtype=a.dtype)
            vh[...] = xp.eye(sv[-1], dtype=a.dtype)
        return u, xp.zeros(ss, sd), vh
    u, s, vh = _svd(xp, a, full_matrices=full_matrices)
    return (u.astype(a.dtype, copy=False), s.astype(_real_np(a.dtype), copy=False),
            vh.astype(a.dtype, copy=False))


svd_op.opt_out("onnx", "ONNX has no matrix decompositions")


svd_op.defbatch(batching.trailing_dims)


@svd_op.defderivative
def _svd_derivative(ctx, grad_u, grad_s, grad_vh, *, full_matrices):
    u, s, vh = ctx.output
    m, n = u._data.shape[-2], vh._data.shape[-1]
    k = s._data.shape[-1]
    if full_matrices and m != n:
        # as torch: the complete SVD's extra vectors span a null space in no particular
        # basis, so their gradients are dropped and the thin SVD's formula applies
        u = u[..., :k]
        vh = vh[..., :k, :]
        grad_u = grad_u[..., :k]
        grad_vh = grad_vh[..., :k, :]
    use_u, use_v = not _is_zero(grad_u), not _is_zero(grad_vh)
    sc = s.to(u.dtype)
    if not use_u and not use_v:
        return (matmul_op(u * sc.unsqueeze(-2) * 0 + u * grad_s.to(u.dtype).unsqueeze(-2),
                          vh),)
    v = vh.mH
    grad_v = grad_vh.mH
    s2 = s * s
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1)
    from ..creation import eye

    e = (e + eye(k, dtype=e.dtype, device=e._device)).to(u.dtype)
    ret = None
    if use_u:
        uhgu = matmul_op(u.mH, grad_u)
        uhgu = uhgu - uhgu.mH
        ret = uhgu * sc.unsqueeze(-2)
    if use_v:
        vhgv = matmul_op(v.mH, grad_v)
        vhgv = vhgv - vhgv.mH
        term = sc.unsqueeze(-1) * vhgv
        ret = term if ret is None else ret + term
    ret = ret / e
    ret = ret - diag_embed(ret.diagonal(0, -2, -1)) + diag_embed(grad_s.to(u.dtype))
    if u.dtype.is_complex and use_u:
        imag_diag = uhgu.diagonal(0, -2, -1) / (2 * sc)
        ret = ret + diag_embed(imag_diag)
    if m > k and use_u:
        ga = matmul_op(u, ret)
        gus = grad_u / sc.unsqueeze(-2)
        ga = ga + gus - matmul_op(u, matmul_op(u.mH, gus))
        return (matmul_op(ga, vh),)
    if n > k and use_v:
        ga = matmul_op(ret, vh)
        sgv = grad_vh / sc.unsqueeze(-1)
        ga = ga + sgv - matmul_op(matmul_op(sgv, v), vh)
        return (matmul_op(u, ga),)
    return (matmul_op(u, matmul_op(ret, vh)),)


@autocast_policy(cpu="fp32")
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """The singular value decomposition ``A = U diag(S) Vh`` (singular values descending).

    Example::

        >>> ember.linalg.svd(ember.tensor([[3., 0.], [0., 4.]])).S
        tensor([4., 3.])
    """
    _check_matrix(A, "linalg.svd")
    u, s, vh = svd_op(A, full_matrices=bool(full_matrices))
    if out is not None:
        for value, target in zip((u, s, vh), out):
            write_out(value, target, "linalg.svd")
        return SVDResult(*out)
    return SVDResult(u, s, vh)


@autocast_policy(cpu="fp32")
def linalg_svdvals(A, *, driver=None, out=None):
    """The singular values, descending.

    Example::

        >>> ember.linalg.svdvals(ember.tensor([[3., 0.], [0., 4.]]))
        tensor([4., 3.])
    """
    _check_matrix(A, "linalg.svd")
    return write_out(svd_op(A, full_matrices=False)[1], out, "linalg.svdvals")


@tensor_method
def svd(input, some=True, compute_uv=True, *, out=None):
    """The SVD as torch.svd: ``(U, S, V)`` with V (not Vh), reduced when ``some``.

    Example::

        >>> ember.svd(ember.eye(2)).S
        tensor([1., 1.])
    """
    u, s, vh = linalg_svd(input, full_matrices=not some)
    result = _return_types.svd(u, s, vh.mH)
    if not compute_uv:
        from ..creation import zeros_like

        result = _return_types.svd(zeros_like(u), s, zeros_like(vh.mH))
    return result


@signature("linalg_householder_product(Tensor A, Tensor tau, *, Tensor? out=None) -> Tensor")
@autocast_policy(cpu="fp32")
def linalg_householder_product(A, tau, *, out=None):
    """The first ``n`` columns of the product of Householder reflectors
    ``H_i = I - tau_i v_i v_i^H`` stored below the diagonal of ``A`` (as LAPACK's orgqr).

    Example::

        >>> ember.linalg.householder_product(ember.zeros(3, 2), ember.zeros(2)).shape
        ember.Size([3, 2])
    """
    _check_tensor(A, "torch.linalg.householder_product")
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 "
                           "dimensions.")
    m, n = A._data.shape[-2:]
    k = tau._data.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    _check_householder_args(A, tau, "torch.linalg.householder_product")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.householder_product: tau dtype {_short(tau)} does not "
                           f"match input dtype {_short(A)}")
    _check_float(A, "torch.linalg.householder_product")  # (after the dtypes agree, as torch)
    from ..creation import eye
    from ..shape import cat

    ident = eye(m, dtype=A.dtype, device=A._device)
    strict = A.tril(-1) + ident[:, :n]  # columns v_i: 1 on the diagonal, zero above
    q = ident[:, :n].expand(A._data.shape[:-2] + (m, n))
    # As LAPACK's org2r: H_i touches only rows i: of columns i:, and column i is e_i - tau v
    # (so an infinite v meets no zeros there: NaN only where torch's has it).
    for i in reversed(range(k)):
        v = strict[..., i:, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        rest = q[..., i:, i + 1:]
        rest = rest - matmul(v * t, matmul(v.mH, rest))
        lower = cat([q[..., i:, :i], ident[i:, i:i + 1] - v * t, rest], -1)
        q = cat([q[..., :i, :], lower], -2)
    return write_out(q, out, "linalg.householder_product")


# ================================================================ torch.qr (linalg.qr's older form)

PlainQRResult = _return_types.qr


@tensor_method
def qr(input, some=True, *, out=None):
    """Deprecated torch.qr: :func:`ember.linalg.qr` in mode ``'reduced'`` (``some``) or
    ``'complete'``.

    Example::

        >>> ember.qr(ember.tensor([[3., 0.], [4., 5.]])).R.shape
        ember.Size([2, 2])
    """
    _deprecated("qr", "qr")
    q, r = linalg_qr(input, "reduced" if some else "complete")
    return _write_tuple(PlainQRResult(q, r), out, "qr", PlainQRResult)


# ================================================================ geqrf, orgqr, ormqr
# geqrf is LAPACK's compact QR (host kernel, not differentiable, as in torch). orgqr is torch's
# old name of linalg.householder_product; ormqr applies the same reflectors to another matrix
# without forming Q, composed from ember ops so that its derivative comes for free.

GeqrfResult = _return_types.geqrf


def _geqrf_meta(a):
    batch, (m, n) = tuple(a.shape[:-2]), a.shape[-2:]
    return (a.shape, a.dtype), (batch + (min(m, n),), a.dtype)


@defop("geqrf", meta=_geqrf_meta, multi_output=True, differentiable_outputs=(0, 1), kind="linalg")
def geqrf_op(xp, a):
    if xp is not np:  # pragma: no cover - _on_host gives this kernel host arrays only
        raise RuntimeError("geqrf: the kernel runs on the host")
    import scipy.linalg

    m, n = a.shape[-2:]
    flat = a.reshape((int(np.prod(a.shape[:-2])), m, n))
    packed = np.array(flat, copy=True)
    tau = np.zeros((flat.shape[0], min(m, n)), a.dtype)
    for index, matrix in enumerate(flat if m and n else ()):
        if matrix.dtype.kind == "f" and not np.isfinite(matrix).all():
            packed[index], tau[index] = _lapack_geqr2(matrix)
            continue
        factor, = scipy.linalg.get_lapack_funcs(("geqrf",), (matrix,))
        packed[index], tau[index], _, _ = factor(matrix)
    return packed.reshape(a.shape), tau.reshape(a.shape[:-2] + (min(m, n),))


geqrf_op.opt_out("onnx", "ONNX has no matrix decompositions")


def _scaled_norm(x):
    """The 2-norm as reference BLAS's nrm2 sums it, scaled by the largest entry so far: an
    infinity gives ``inf / inf`` (NaN) once it meets another non-zero entry."""
    scale, ssq = 0.0, 1.0
    for value in np.abs(x).tolist():
        if value != 0:
            if scale < value:
                ssq, scale = 1 + ssq * (scale / value) ** 2, value
            else:
                ssq += (value / scale) ** 2 if scale else math.nan
    return scale * math.sqrt(ssq)


def _hypot(x, y):
    """LAPACK's lapy2 as torch's library computes it: ``w * sqrt(1 + (z/w)^2)`` for the larger
    and smaller magnitudes ``w`` and ``z``, picked as x86's max and min do (a NaN ``x`` gives
    both as ``|y|``, a NaN ``y`` both NaN), with no shortcut for an infinite ``w`` (two
    infinities give NaN).

    Example::

        >>> _hypot(math.nan, 1.0) == math.sqrt(2)
        True
    """
    xa, ya = abs(x), abs(y)
    w, z = (xa if xa > ya else ya), (xa if xa < ya else ya)
    return w if z == 0 else w * math.sqrt(1 + (z / w) ** 2)


def _householder_beta(alpha, norm):
    """larfg's ``-sign(lapy2(alpha, norm), alpha)``; Fortran's SIGN as torch's library
    computes it takes a NaN ``alpha`` as negative."""
    size = _hypot(alpha, norm)
    return size if math.isnan(alpha) else -math.copysign(size, alpha)


def _lapack_geqr2(matrix):
    """``(packed, tau)`` as LAPACK's unblocked Householder QR (geqr2 with larfg and larf),
    which torch's library follows on infinities and NaN where SciPy's differs.

    Example::

        >>> _lapack_geqr2(np.array([[np.inf, 1.], [1., 2.]]))[1]
        array([nan,  0.])
    """
    a = np.array(matrix, copy=True)
    m, n = a.shape
    tau = np.zeros(min(m, n), a.dtype)
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            alpha = float(a[j, j])
            below = a[j + 1:, j]
            norm = _scaled_norm(below) if below.size else 0.0
            if norm != 0:  # (a zero norm: the identity reflector, tau 0)
                beta = _householder_beta(alpha, norm)
                tau[j] = (beta - alpha) / beta if beta == beta else math.nan
                a[j + 1:, j] = below * a.dtype.type(1 / (alpha - beta)
                                                    if alpha - beta else math.inf)
                alpha = beta
            if j + 1 < n:  # (torch's library applies a zero tau too: 0 * inf is NaN)
                v = np.concatenate([[1], a[j + 1:, j]]).astype(a.dtype)
                a[j:, j + 1:] -= tau[j] * np.outer(v, v @ a[j:, j + 1:])
            a[j, j] = alpha
    return a, tau


geqrf_op.defbatch(batching.trailing_dims)


@geqrf_op.defderivative
def _geqrf_derivative(ctx, *grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


@tensor_method
def geqrf(input, *, out=None):
    """LAPACK's QR factorisation in compact form: ``R`` on and above the diagonal of ``a``,
    the Householder vectors below it, their scales in ``tau``. Not differentiable, as in torch.

    Example::

        >>> a, tau = ember.geqrf(ember.tensor([[3., 1.], [4., 2.]]))
        >>> a[0, 0]
        tensor(-5.)
    """
    _check_tensor(input, "geqrf")
    if input._data.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input._data.dtype in _LOW or not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"\"geqrf_cpu\" not implemented for '{_short(input)}'")
    result = GeqrfResult(*_on_host(geqrf_op, input._device, input))
    return _write_tuple(result, out, "geqrf", GeqrfResult)


@tensor_method
@signature("orgqr(Tensor input, Tensor tau, *, Tensor? out=None) -> Tensor")
def orgqr(input, tau, *, out=None):
    """The explicit ``Q`` of :func:`geqrf`'s reflectors: torch's alias of
    :func:`ember.linalg.householder_product`.

    Example::

        >>> a, tau = ember.geqrf(ember.eye(2))
        >>> ember.orgqr(a, tau).abs()
        tensor([[1., 0.],
                [0., 1.]])
    """
    return linalg_householder_product(input, tau, out=out)


def _check_householder_args(input, tau, name):
    """torch's shared checks of orgqr/ormqr's ``tau`` against ``input``."""
    if input._data.ndim - tau._data.ndim != 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau._data.ndim} and input.ndim is equal to "
                           f"{input._data.ndim}")
    if input._data.ndim > 2 and tau._data.shape[:-1] != input._data.shape[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau._data.shape[:-1])}")


def _reflector_columns(input):
    """The Householder vectors ``v_i`` as the columns of one matrix: ``input``'s strictly lower
    part with ones on the diagonal."""
    m, n = input._data.shape[-2:]
    from ..creation import eye

    return input.tril(-1) + eye(m, n, dtype=input.dtype, device=input._device)


def _apply_reflector(c, v, t, left, i):
    """``H c`` (``left``) or ``c H`` with ``H = I - t v v^H``; ``v`` is a column that is zero
    above row ``i``, ``t`` a ``(..., 1, 1)`` scale. As LAPACK's unblocked ormqr, only the
    rows (or columns) from ``i`` on are touched, and ``t == 0`` touches nothing: an infinite
    ``t`` or ``c`` spreads no further than in torch."""
    from ..pointwise import where
    from ..shape import cat

    v = v[..., i:, :]
    if left:
        kept, touched = c[..., :i, :], c[..., i:, :]
        update = matmul(v * t, matmul(v.mH, touched))
    else:
        kept, touched = c[..., :, :i], c[..., :, i:]
        update = matmul(matmul(touched, v) * t, v.mH)
    if not bool(touched.isfinite().all()):  # (0 * inf would be NaN)
        update = where(t == 0, update.new_zeros(()), update)
    return cat([kept, touched - update], -2 if left else -1)


@tensor_method
def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """Multiplies ``input3`` by the ``Q`` of :func:`geqrf`'s reflectors (``input``, ``tau`` =
    ``input2``) without forming it: ``Q C``, ``Q^H C``, ``C Q`` or ``C Q^H`` as chosen by
    ``left`` and ``transpose``.

    Example::

        >>> a, tau = ember.geqrf(ember.tensor([[3., 1.], [4., 2.]]))
        >>> q = ember.orgqr(a, tau)
        >>> ember.allclose(ember.ormqr(a, tau, ember.eye(2)), q)
        True
    """
    name = "torch.ormqr"
    for arg, tensor in (("input", input), ("input2", input2), ("input3", input3)):
        _check_tensor(tensor, "ormqr", arg)
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input3._data.ndim < 2:
        raise RuntimeError(f"{name}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    m, n = input._data.shape[-2:]
    k = tau_size = input2._data.shape[-1] if input2._data.ndim else 1
    if input3._data.shape[side] != m:
        raise RuntimeError(f"{name}: other.shape[{side}] must be equal to input.shape[-2]")
    if tau_size != min(input3._data.shape[side], n):
        raise RuntimeError(f"{name}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    _check_householder_args(input, input2, name)
    if input3._data.ndim != input._data.ndim:
        raise RuntimeError(f"{name}: Expected other to have the same number of dimensions as "
                           f"input, but got other.ndim equal to {input3._data.ndim} and "
                           f"input.ndim is equal to {input._data.ndim}")
    if input._data.ndim > 2 and input3._data.shape[:-2] != input._data.shape[:-2]:
        raise RuntimeError(f"{name}: Expected batch dimensions of other to be equal to "
                           f"input.shape[:-2], but got {list(input3._data.shape[:-2])}")
    if input2.dtype != input.dtype:
        raise RuntimeError(f"{name}: Expected input and tau to have the same dtype, but input "
                           f"has dtype{_short(input)} and tau has dtype {_short(input2)}")
    if input3.dtype != input.dtype:
        raise RuntimeError(f"{name}: Expected input and other to have the same dtype, but input "
                           f"has dtype{_short(input)} and other has dtype {_short(input3)}")
    if input._data.dtype in _LOW or not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{_short(input)}'")
    vectors = _reflector_columns(input)
    scales = input2.conj() if transpose and input.dtype.is_complex else input2
    # Q = H_0 H_1 ... H_{k-1}: Q C applies the last reflector first, Q^H C the first
    order = range(k) if left == bool(transpose) else reversed(range(k))
    result = input3
    for i in order:
        result = _apply_reflector(result, vectors[..., :, i:i + 1],
                                  scales[..., i:i + 1].unsqueeze(-1), left, i)
    return write_out(result, out, "ormqr")
