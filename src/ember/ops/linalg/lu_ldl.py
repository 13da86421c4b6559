"""LU, triangular solves and LDL: ``linalg.lu_factor(_ex)``, ``linalg.lu``, ``lu_unpack``,
``linalg.lu_solve``, ``linalg.solve_triangular``, torch's older ``lu``, ``lu_solve`` and
``triangular_solve``, and the Bunch-Kaufman ``linalg.ldl_factor(_ex)`` and ``ldl_solve``.

Example::

    >>> P, L, U = ember.linalg.lu(ember.tensor([[0., 1.], [1., 0.]]))
    >>> U
    tensor([[1., 0.],
            [0., 1.]])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ... import return_types as _return_types
from ..._device import META
from .._methods import tensor_method
from .._registry import defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._common import (
    _LOW,
    _batch_prefix,
    _check_square_shape,
    _check_tensor,
    _shape_str,
    _short,
)
from .products import matmul_op
from .solvers import _solve_meta

# ================================================================ LU, triangular solves, LDL
#
# LU: one primitive, ``linalg_lu_factor_ex`` (LAPACK getrf on the CPU, cuSOLVER through CuPy),
# with torch's 1-based int32 pivots. Everything else composes: ``lu_unpack`` slices the packed
# factors; ``lu_solve`` is a row permutation and two calls of the ``linalg_solve_triangular``
# primitive, so its gradients (for LU and B) come from the triangular solve's derivative.

LUFactorResult = _return_types.linalg_lu_factor
LUFactorExResult = _return_types.linalg_lu_factor_ex
LUResult = _return_types.linalg_lu
LUUnpackResult = _return_types.lu_unpack
LUWithInfoResult = _return_types._lu_with_info
LDLFactorResult = _return_types.linalg_ldl_factor
LDLFactorExResult = _return_types.linalg_ldl_factor_ex
TriangularSolveResult = _return_types.triangular_solve


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated in favor of torch.linalg.{new} and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=3)


def _first_zero_pivot(xp, lu):
    """LAPACK's info: the 1-based index of the first exactly zero diagonal entry of U, or 0."""
    k = min(lu.shape[-2:])
    zero = xp.diagonal(lu, axis1=-2, axis2=-1)[..., :k] == 0
    if k == 0:
        return xp.zeros(lu.shape[:-2], np.int32)
    first = xp.argmax(zero, axis=-1) + 1
    return xp.where(zero.any(axis=-1), first, 0).astype(np.int32)


def _lu_meta(a, *, pivot):
    batch, k = tuple(a.shape[:-2]), min(a.shape[-2:])
    return (a.shape, a.dtype), (batch + (k,), np.dtype(np.int32)), (batch, np.dtype(np.int32))


def _lu_without_pivoting(xp, a):
    """Doolittle elimination without row exchanges, every matrix of the batch at once (the
    CUDA path of ``pivot=False``; torch has no such CPU kernel)."""
    lu = a.copy()
    m, n = a.shape[-2:]
    k = min(m, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for j in range(k):
            lu[..., j + 1:, j] /= lu[..., j:j + 1, j]
            lu[..., j + 1:, j + 1:] -= lu[..., j + 1:, j:j + 1] * lu[..., j:j + 1, j + 1:]
    pivots = xp.broadcast_to(xp.arange(1, k + 1, dtype=np.int32), a.shape[:-2] + (k,))
    return lu, xp.ascontiguousarray(pivots), _first_zero_pivot(xp, lu)


def _lapack_lu(matrix):
    """``(lu, pivots, info)`` as LAPACK's unblocked getf2 (which torch's library follows on
    infinities and NaN, where SciPy's differs): each column's pivot is the first entry of
    largest magnitude (a NaN only when it comes first), the column below it divided by it, the
    rest updated; ``info`` is the first zero pivot's column, counted from 1. Pivots are 1-based.

    Example::

        >>> _lapack_lu(np.array([[np.inf, 1.], [np.inf, 2.]]))[0]
        array([[inf,  1.],
               [nan, nan]])
    """
    a = np.array(matrix, copy=True)
    m, n = a.shape
    pivots = np.zeros(min(m, n), np.int32)
    info = 0
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            size = np.abs(a[j:, j])
            p = j if np.isnan(size[0]) else j + int(np.argmax(np.where(np.isnan(size), -1.0,
                                                                         size)))
            pivots[j] = p + 1
            if a[p, j] == 0:
                info = info or j + 1
                continue
            a[[j, p]] = a[[p, j]]
            a[j + 1:, j] /= a[j, j]
            a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, pivots, info


@defop("linalg_lu_factor_ex", meta=_lu_meta, multi_output=True, save_inputs=False,
       save_output=True, differentiable_outputs=(0,), grad_name="LinalgLuFactorExBackward0",
       kind="linalg")
def lu_factor_op(xp, a, *, pivot):
    if not pivot:
        return _lu_without_pivoting(xp, a)
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        return a.copy(), xp.zeros(a.shape[:-2] + (k,), np.int32), xp.zeros(a.shape[:-2],
                                                                            np.int32)
    flat = a.reshape((-1, m, n))
    lu = xp.empty_like(flat)
    pivots = xp.empty((flat.shape[0], k), np.int32)
    if xp is np:
        import scipy.linalg

        info = np.zeros(flat.shape[0], np.int32)
        for index, matrix in enumerate(flat):
            if not np.isfinite(matrix).all():
                lu[index], pivots[index], info[index] = _lapack_lu(matrix)
                continue
            getrf, = scipy.linalg.get_lapack_funcs(("getrf",), (matrix,))
            lu[index], pivots[index], info[index] = getrf(matrix)
            pivots[index] += 1  # SciPy's getrf gives 0-based pivots; LAPACK's are 1-based
        return lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (k,)), \
            info.reshape(a.shape[:-2])
    import cupyx.scipy.linalg  # pragma: no cover - GPU only

    for index in range(flat.shape[0]):  # pragma: no cover - GPU only
        lu[index], piv = cupyx.scipy.linalg.lu_factor(flat[index], check_finite=False)
        pivots[index] = piv + 1
    return lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (k,)), \
        _first_zero_pivot(xp, lu).reshape(a.shape[:-2])  # pragma: no cover - GPU only


lu_factor_op.opt_out("onnx", "ONNX has no matrix decompositions")


lu_factor_op.defbatch(batching.trailing_dims)


@lu_factor_op.defderivative
def _lu_factor_derivative(ctx, grad_lu, grad_pivots, grad_info, *, pivot):
    lu, pivots, _ = ctx.output
    lower, upper = _unpack_factors(lu)
    k = lower._data.shape[-1]
    grad_a = _lu_backward(lower, upper, grad_lu[..., :, :k].tril(-1), grad_lu[..., :k, :].triu())
    if pivot:  # A = P B with B = L U: grad_A = P grad_B
        grad_a = _permute_rows(grad_a, _inverse_permutation(_permutation(pivots,
                                                                          lu._data.shape[-2])))
    return (grad_a,)


def _lu_backward(L, U, grad_l, grad_u):
    """The gradient of ``B = L U`` (L unit lower m x k, U upper k x n) from those of L and U.

    Square: ``L^{-H} [tril_{-1}(L^H gL) + triu(gU U^H)] U^{-H}``. A wide B adds its right
    block ``U2 = L^{-1} B2`` and a tall one its lower block ``L2 = B2 U^{-1}``; each folds its
    gradient into the square formula (derived from the chain rule through those solves).
    """
    from ..shape import cat

    m, k = L._data.shape[-2:]
    n = U._data.shape[-1]

    def left_solve_lh(lower, rhs):  # lower^{-H} rhs
        return solve_triangular_op(lower.mH, rhs, upper=True, unitriangular=True)

    def right_solve_uh(lhs, up):  # lhs up^{-H}
        return solve_triangular_op(up, lhs.mH, upper=True, unitriangular=False).mH

    if m == n:
        phi = matmul_op(L.mH, grad_l).tril(-1) + matmul_op(grad_u, U.mH).triu()
        return right_solve_uh(left_solve_lh(L, phi), U)
    if m < n:
        u1, u2 = U[..., :m], U[..., m:]
        g1, g2 = grad_u[..., :m], grad_u[..., m:]
        phi = (matmul_op(L.mH, grad_l) - matmul_op(g2, u2.mH)).tril(-1) \
            + matmul_op(g1, u1.mH).triu()
        return left_solve_lh(L, cat([right_solve_uh(phi, u1), g2], -1))
    l1, l2 = L[..., :n, :], L[..., n:, :]
    g1, g2 = grad_l[..., :n, :], grad_l[..., n:, :]
    phi = matmul_op(l1.mH, g1).tril(-1) \
        + (matmul_op(grad_u, U.mH) - matmul_op(l2.mH, g2)).triu()
    return right_solve_uh(cat([left_solve_lh(l1, phi), g2], -2), U)


def _unpack_factors(lu):
    """L (unit lower, m x k) and U (upper, k x n) from the packed LU factors."""
    from ..creation import eye

    m, n = lu._data.shape[-2:]
    k = min(m, n)
    ident = eye(m, k, dtype=lu.dtype, device=lu._device)
    return lu[..., :, :k].tril(-1) + ident, lu[..., :k, :].triu()


@defop("lu_pivots_to_permutation",
       meta=lambda p, *, rows: (tuple(p.shape[:-1]) + (rows,), np.dtype(np.int64)), kind="linalg")
def _permutation_op(xp, pivots, *, rows):
    """The row order ``perm`` that LAPACK's swaps (row i <-> row pivots[i] - 1, in turn)
    produce: ``A[perm] = L U``."""
    k = pivots.shape[-1]
    count = math.prod(pivots.shape[:-1])
    flat_pivots = pivots.reshape((count, k)).astype(np.int64) - 1
    perm = xp.empty((count, rows), np.int64)
    perm[...] = xp.arange(rows)
    every = xp.arange(perm.shape[0])
    for i in range(k):
        target = flat_pivots[:, i]
        here, there = perm[:, i].copy(), perm[every, target]
        perm[:, i] = there
        perm[every, target] = here
    return perm.reshape(pivots.shape[:-1] + (rows,))


_permutation_op.opt_out("onnx", "reads LU pivots, which no ONNX operator makes")


_permutation_op.defbatch(batching.trailing_dims)


_permutation_op.opt_out("derivative", "an index result has no gradient")


def _permutation(pivots, rows):
    return _permutation_op(pivots, rows=rows)


def _inverse_permutation(perm):
    return perm.argsort(-1)


def _permute_rows(x, perm):
    """``x[..., perm, :]`` with the batch dims of ``x`` and ``perm`` broadcast."""
    from .._operands import broadcast_shapes

    rows, cols = x._data.shape[-2:]
    batch = tuple(broadcast_shapes(x._data.shape[:-2], perm._data.shape[:-1]))
    index = perm.unsqueeze(-1).expand(batch + (rows, cols))
    return x.expand(batch + (rows, cols)).gather(-2, index)


def _check_lu_input(A, name, kernel_name="lu_cpu"):
    _check_tensor(A, name.removeprefix("torch."), "A")
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A._data.shape)} instead")
    if A._data.dtype in _LOW or not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f'"{kernel_name}" not implemented for \'{_short(A)}\'')


def _check_pivoting(A, pivot, name):
    if not pivot and A._device.type != "cuda":
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")


def _raise_zero_pivot(info, name):
    """torch's error for the first matrix whose U has an exactly zero diagonal entry."""
    codes = info.detach().cpu()._data.reshape(-1)
    bad = np.flatnonzero(codes)
    if bad.size:
        index, code = int(bad[0]), int(codes[bad[0]])
        raise RuntimeError(f"{name}: {_batch_prefix(index, info._data.ndim > 0)}U[{code},{code}] "
                           "is zero and using it on lu_solve would result in a division by "
                           "zero. If you still want to perform the factorization, consider "
                           "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _write_tuple(result, out, name, cls):
    if out is None:
        return result
    for value, target in zip(result, out):
        write_out(value, target, name)
    return cls(*out)


def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """The packed LU factorisation ``A = P L U`` with LAPACK's 1-based int32 pivots and an
    ``info`` tensor (the index of the first zero diagonal entry of U, or 0).

    Example::

        >>> ember.linalg.lu_factor_ex(ember.tensor([[0., 1.], [2., 3.]])).pivots
        tensor([2, 2], dtype=ember.int32)
    """
    _check_lu_input(A, "torch.lu_factor")
    _check_pivoting(A, pivot, "linalg.lu_factor")
    lu, pivots, info = lu_factor_op(A, pivot=bool(pivot))
    if check_errors:
        _raise_zero_pivot(info, "torch.linalg.lu_factor_ex")
    return _write_tuple(LUFactorExResult(lu, pivots, info), out, "linalg.lu_factor_ex",
                        LUFactorExResult)


def linalg_lu_factor(A, *, pivot=True, out=None):
    """The packed LU factorisation ``(LU, pivots)``, for :func:`linalg_lu_solve`; raises
    where a diagonal entry of U is exactly zero (use :func:`linalg_lu_factor_ex` to get it).

    Example::

        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[0., 1.], [2., 3.]]))
        >>> LU
        tensor([[2., 3.],
                [0., 1.]])
    """
    _check_lu_input(A, "torch.lu_factor")
    _check_pivoting(A, pivot, "linalg.lu_factor")
    lu, pivots, info = lu_factor_op(A, pivot=bool(pivot))
    _raise_zero_pivot(info, "torch.linalg.lu_factor")
    return _write_tuple(LUFactorResult(lu, pivots), out, "linalg.lu_factor", LUFactorResult)


def linalg_lu(A, *, pivot=True, out=None):
    """The LU decomposition ``A = P L U``: ``P`` a permutation matrix, ``L`` unit lower
    triangular (m x k), ``U`` upper triangular (k x n), ``k = min(m, n)``.

    Example::

        >>> P, L, U = ember.linalg.lu(ember.tensor([[0., 1.], [2., 3.]]))
        >>> P
        tensor([[0., 1.],
                [1., 0.]])
    """
    _check_lu_input(A, "linalg.lu")
    _check_pivoting(A, pivot, "linalg.lu")
    lu, pivots, _ = lu_factor_op(A, pivot=bool(pivot))
    lower, upper = _unpack_factors(lu)
    if pivot:
        perm = _permutation(pivots, A._data.shape[-2])
        P = _permutation_matrix(perm, A.dtype)
    else:
        from ..creation import empty

        P = empty(0, dtype=A.dtype, device=A._device)
    return _write_tuple(LUResult(P, lower, upper), out, "linalg.lu", LUResult)


def _permutation_matrix(perm, dtype):
    """``P`` with ``P[perm[j], j] = 1``, so that ``A = P (A[perm])``."""
    from ..creation import arange

    rows = perm._data.shape[-1]
    ids = arange(rows, device=perm._device).unsqueeze(-1)
    return (ids == perm.unsqueeze(-2)).to(dtype)


def _leading_pivots(LU, pivots, name):
    """The first ``min(m, n)`` pivots, the only ones LAPACK's row swaps read (torch ignores
    any more), each checked to lie in ``1..m``."""
    m, n = LU._data.shape[-2:]
    k = min(m, n)
    short = pivots._data.ndim == 0 or pivots._data.shape[-1] < k
    leading = pivots if short else pivots[..., :k]
    if short or (leading._data.size and bool(((leading < 1) | (leading > m)).any())):
        raise RuntimeError(f"pivots passed to {name} must be between 1 and LU.size(-2) "
                           "inclusive.Did you properly pass the result of lu_factor?")
    return leading


@signature("lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
           "bool unpack_pivots=True, *, Tensor[]? out=None) -> (Tensor P, Tensor L, Tensor U)")
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed factors of :func:`ember.linalg.lu_factor`; a part not
    asked for (``unpack_data``/``unpack_pivots`` False) comes back empty.

    Example::

        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[0., 1.], [2., 3.]]))
        >>> ember.lu_unpack(LU, pivots).U
        tensor([[2., 3.],
                [0., 1.]])
    """
    if LU_data._data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(LU_data._data.shape)} instead")
    if unpack_pivots and LU_pivots._data.dtype != np.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used with "
                           "the output produced by torch.linalg.lu_factor")
    from ..creation import empty

    nothing = empty(0, dtype=LU_data.dtype, device=LU_data._device)
    lower, upper = _unpack_factors(LU_data) if unpack_data else (nothing, nothing)
    P = nothing
    if unpack_pivots:
        pivots = _leading_pivots(LU_data, LU_pivots, "lu_unpack")
        P = _permutation_matrix(_permutation(pivots, LU_data._data.shape[-2]), LU_data.dtype)
    return _write_tuple(LUUnpackResult(P, lower, upper), out, "lu_unpack", LUUnpackResult)


def _check_solve_shapes(A, B, left, name, a_name="A"):
    if B._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    n = A._data.shape[-1]
    if (B._data.shape[-2] if left else B._data.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of {a_name} and B for the equation "
                           f"{equation} ({_shape_str(A._data.shape[-2:])} and "
                           f"{_shape_str(B._data.shape[-2:])})")
    from .._operands import broadcast_shapes

    broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])


@signature("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
           "bool adjoint=False, Tensor? out=None) -> Tensor")
def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution of ``A X = B`` from the LU factors of ``A`` (``A^H X = B`` with
    ``adjoint``, ``X A = B`` with ``left=False``); batch dims broadcast.

    Example::

        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[2., 0.], [0., 4.]]))
        >>> ember.linalg.lu_solve(LU, pivots, ember.tensor([[2.], [4.]]))
        tensor([[1.],
                [1.]])
    """
    name = "linalg.lu_solve"
    _check_tensor(LU, name, "LU")
    _check_tensor(B, name, "B")
    _check_square_shape(LU, f"torch.{name}")
    _check_solve_shapes(LU, B, left, name)
    if LU._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected LU and B to have the same dtype, but found LU of "
                           f"type {_short(LU)} and B of type {_short(B)} instead")
    if pivots._data.dtype != np.int32:
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type torch.int32")
    if pivots._data.shape[-1:] != LU._data.shape[-1:]:
        raise RuntimeError(f"{name}: Number of pivots per batch should be same as the dimension "
                           "of the matrix")
    n = LU._data.shape[-1]
    if pivots._data.size and bool(((pivots < 1) | (pivots > n)).any()):
        raise RuntimeError("Pivots given to lu_solve must all be smaller or equal to "
                           "LU.size(-2). Did you properly pass the result of lu_factor?")
    if left:
        result = _lu_solve_left(LU, pivots, B, adjoint)
    else:  # X A = B  <=>  A^H X^H = B^H;  X A^H = B  <=>  A X^H = B^H
        result = _lu_solve_left(LU, pivots, B.mH, not adjoint).mH
    return write_out(result, out, name)


def _lu_solve_left(LU, pivots, B, adjoint):
    perm = _permutation(pivots, LU._data.shape[-1])
    if not adjoint:  # A = P L U:  X = U^{-1} L^{-1} P^T B, and P^T B = B[perm]
        y = solve_triangular_op(LU, _permute_rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular_op(LU, y, upper=True, unitriangular=False)
    # A^H = U^H L^H P^T:  X = P L^{-H} U^{-H} B
    y = solve_triangular_op(LU.mH, B, upper=False, unitriangular=False)
    z = solve_triangular_op(LU.mH, y, upper=True, unitriangular=True)
    return _permute_rows(z, _inverse_permutation(perm))


def _solve_triangular_flat(a, b, upper, unitriangular):
    """BLAS trsm on each matrix of a (broadcast, flattened) batch: like torch, no check for a
    zero on the diagonal (the solution gets inf/NaN)."""
    import scipy.linalg

    x = np.empty(b.shape, b.dtype)
    with np.errstate(all="ignore"):
        for index in range(a.shape[0]):
            trsm, = scipy.linalg.get_blas_funcs(("trsm",), (a[index], b[index]))
            x[index] = trsm(1.0, a[index], b[index], lower=int(not upper),
                            diag=int(unitriangular))
    return x


@defop("linalg_solve_triangular", meta=_solve_meta, save_output=True,
       grad_name="LinalgSolveTriangularBackward0", kind="linalg")
def solve_triangular_op(xp, a, b, *, upper, unitriangular):
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    shape = batch + b.shape[-2:]
    if 0 in shape:
        return xp.zeros(shape, b.dtype)
    a = xp.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
    b = xp.broadcast_to(b, shape).reshape((-1,) + b.shape[-2:])
    if xp is np:
        return _solve_triangular_flat(a, b, upper, unitriangular).reshape(shape)
    import cupyx.scipy.linalg  # pragma: no cover - GPU only

    x = xp.empty(b.shape, b.dtype)  # pragma: no cover - GPU only
    for index in range(a.shape[0]):  # pragma: no cover - GPU only
        x[index] = cupyx.scipy.linalg.solve_triangular(
            a[index], b[index], lower=not upper, unit_diagonal=unitriangular,
            check_finite=False)
    return x.reshape(shape)  # pragma: no cover - GPU only


solve_triangular_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


solve_triangular_op.defbatch(batching.broadcast_matrices)


@solve_triangular_op.defderivative
def _solve_triangular_derivative(ctx, grad, *, upper, unitriangular):
    a, _ = ctx.inputs
    grad_b = solve_triangular_op(a.mH, grad, upper=not upper, unitriangular=unitriangular)
    grad_a = None
    if ctx.needs_input_grad[0]:
        # only the triangle that was read (without its diagonal when it is taken as ones)
        full = -matmul_op(grad_b, ctx.output.mH)
        grad_a = full.triu(int(unitriangular)) if upper else full.tril(-int(unitriangular))
    return grad_a, grad_b if ctx.needs_input_grad[1] else None


def linalg_solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A``: only
    its upper (``upper=True``) or lower triangle is read, its diagonal taken as ones with
    ``unitriangular``. Batch dims broadcast; a zero on the diagonal gives inf/NaN, as torch.

    Example::

        >>> A = ember.tensor([[2., 1.], [0., 4.]])
        >>> ember.linalg.solve_triangular(A, ember.tensor([[3.], [4.]]), upper=True)
        tensor([[1.],
                [1.]])
    """
    name = "linalg.solve_triangular"
    _check_tensor(A, name, "A")
    _check_tensor(B, name, "B")
    _check_square_shape(A, name)
    _check_solve_shapes(A, B, left, name)
    _check_triangular_dtype(A)
    if B._data.dtype != A._data.dtype:
        B = B.to(A.dtype)  # torch computes in A's dtype
    if left:
        result = solve_triangular_op(A, B, upper=bool(upper), unitriangular=bool(unitriangular))
    else:  # X A = B  <=>  A^T X^T = B^T
        result = solve_triangular_op(A.mT, B.mT, upper=not upper,
                                     unitriangular=bool(unitriangular)).mT
    return write_out(result, out, name)


def _check_triangular_dtype(A):
    if A._data.dtype in _LOW or not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_short(A)}'")


@tensor_method
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Deprecated torch.triangular_solve: the solution of ``A X = b`` (``A^T X = b`` with
    ``transpose``) and a copy of ``A``, as a ``(solution, cloned_coefficient)`` named tuple.

    Example::

        >>> A = ember.tensor([[2., 1.], [0., 4.]])
        >>> ember.triangular_solve(ember.tensor([[3.], [4.]]), A).solution
        tensor([[1.],
                [1.]])
    """
    _check_tensor(b, "triangular_solve", "input")
    _check_tensor(A, "triangular_solve", "A")
    _deprecated("triangular_solve", "solve_triangular")
    if b._data.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, "
                           f"but it has {b._data.ndim} dimensions instead")
    if A._data.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, "
                           f"but it has {A._data.ndim} dimensions instead")
    if b._data.dtype != A._data.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_short(b)} and A of type {_short(A)} instead.")
    n = A._data.shape[-1]
    if A._data.shape[-2] != n or b._data.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is "
                           f"{A._data.shape[-2]} by {n} but each b matrix is "
                           f"{b._data.shape[-2]} by {b._data.shape[-1]}")
    _check_triangular_dtype(A)
    from .._operands import broadcast_shapes

    batch = tuple(broadcast_shapes(b._data.shape[:-2], A._data.shape[:-2]))
    coefficient = A.mT if transpose else A
    solution = solve_triangular_op(coefficient, b, upper=bool(upper) != bool(transpose),
                                   unitriangular=bool(unitriangular))
    result = TriangularSolveResult(solution, A.expand(batch + A._data.shape[-2:]).clone())
    return _write_tuple(result, out, "triangular_solve", TriangularSolveResult)


@tensor_method
def lu(A, pivot=True, get_infos=False, out=None):
    """Deprecated torch.lu: ``(LU, pivots)``, and ``info`` with ``get_infos``, as
    :func:`ember.linalg.lu_factor_ex` (never raises for singular matrices).

    Example::

        >>> LU, pivots = ember.lu(ember.tensor([[0., 1.], [2., 3.]]))
        >>> pivots
        tensor([2, 2], dtype=ember.int32)
    """
    _deprecated("lu", "lu_factor")
    _check_lu_input(A, "torch.lu_factor")
    _check_pivoting(A, pivot, "linalg.lu_factor")
    result = LUWithInfoResult(*lu_factor_op(A, pivot=bool(pivot)))
    if out is not None:
        return _write_tuple(result[:len(out)], out, "lu", tuple)
    return result if get_infos else (result.LU, result.pivots)


@tensor_method
@signature("lu_solve(Tensor b, Tensor LU_data, Tensor LU_pivots, *, Tensor? out=None) -> Tensor")
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Deprecated torch.lu_solve: :func:`ember.linalg.lu_solve` with ``b`` first.

    Example::

        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[2., 0.], [0., 4.]]))
        >>> ember.lu_solve(ember.tensor([[2.], [4.]]), LU, pivots)
        tensor([[1.],
                [1.]])
    """
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    return linalg_lu_solve(LU_data, LU_pivots, b, out=out)


# ---------------------------------------------------------------- LDL (Bunch-Kaufman)
#
# LAPACK's sytrf/hetrf and sytrs/hetrs have no CuPy counterpart: the kernels run on NumPy only
# and the public functions bring a CUDA tensor's data to the host and the result back.


def _on_host(op, device, *tensors, **params):
    """Run a NumPy-only ``op`` on host copies of ``tensors``; the results go back to
    ``device`` (differentiably: ``to`` is an op)."""
    if device.type == "cpu" or device is META:
        return op(*tensors, **params)
    results = op(*(t.cpu() for t in tensors), **params)
    if isinstance(results, tuple):
        return tuple(r.to(device) for r in results)
    return results.to(device)  # pragma: no cover - GPU only


def _not_implemented_derivative(name):
    def derivative(ctx, *grads, **params):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return derivative


_BUNCH_KAUFMAN_ALPHA = (1 + math.sqrt(17.0)) / 8  # the growth bound of sytf2's pivot test


def _first_largest_or_nan(x):
    """Index of the first NaN in ``x``, else of its first entry of largest magnitude: the
    search torch's library makes when choosing a Bunch-Kaufman pivot.

    Example::

        >>> _first_largest_or_nan(np.array([3., -4., np.nan]))
        2
    """
    size = np.abs(x)
    nans = np.flatnonzero(np.isnan(size))
    return int(nans[0]) if nans.size else int(np.argmax(size))


def _x86_max(a, b):
    """Fortran's MAX as x86's maxss computes it: a NaN ``a`` gives ``b``."""
    return a if a > b else b


def _bunch_kaufman_pivot(a, k):
    """``(kp, step)`` of sytf2's pivot choice at column ``k`` of the lower triangle: a 1x1
    pivot at ``kp`` (``step`` 1) or a 2x2 one at rows ``k+1, kp`` (``step`` 2); ``kp`` is
    ``None`` where the column is zero."""
    n = a.shape[0]
    absakk, imax, colmax = abs(a[k, k]), k, 0.0
    if k < n - 1:
        imax = k + 1 + _first_largest_or_nan(a[k + 1:, k])
        colmax = abs(a[imax, k])
    if _x86_max(absakk, colmax) == 0:
        return None, 1
    if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax:
        return k, 1
    rowmax = abs(a[imax, k + _first_largest_or_nan(a[imax, k:imax])])
    if imax < n - 1:
        jmax = imax + 1 + _first_largest_or_nan(a[imax + 1:, imax])
        rowmax = _x86_max(rowmax, abs(a[jmax, imax]))
    if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _BUNCH_KAUFMAN_ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _swap_symmetric(a, kk, kp):
    """Exchange rows and columns ``kk < kp`` of the trailing lower triangle from ``kk`` on."""
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    between = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = between
    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]


def _eliminate_1x1(a, k):
    """Divide column ``k`` below the diagonal by the pivot and update the trailing triangle
    as BLAS's syr does: nothing where the pivot's inverse or a column entry is zero (so an
    infinite pivot leaves the rest as it was)."""
    inverse = 1 / a[k, k]
    column = a[k + 1:, k].copy()
    for j in range(column.size):
        if column[j] != 0 and inverse != 0:
            a[k + 1 + j:, k + 1 + j] -= column[j:] * (inverse * column[j])
    a[k + 1:, k] *= inverse


def _eliminate_2x2(a, k):
    """Solve the 2x2 pivot block at ``k, k+1`` against the columns below it and update the
    trailing triangle, column by column as sytf2."""
    d21 = a[k + 1, k]
    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
    d21 = 1 / (d11 * d22 - 1) / d21
    for j in range(k + 2, a.shape[0]):
        wk = d21 * (d11 * a[j, k] - a[j, k + 1])
        wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
        a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
        a[j, k], a[j, k + 1] = wk, wkp1


def _lapack_ldl(matrix):
    """``(ld, pivots, info)`` of a real symmetric matrix as LAPACK's unblocked sytf2 (lower)
    with the pivot searches of torch's library, which it follows on infinities and NaN where
    SciPy's differs: a NaN in a column wins the pivot search, the zero-column test sees a NaN
    diagonal as zero, and an infinite pivot leaves the trailing matrix untouched.

    Example::

        >>> _lapack_ldl(np.full((2, 2), np.nan))[1]
        array([-2, -2], dtype=int32)
    """
    a = np.array(matrix, copy=True)
    n = a.shape[0]
    pivots = np.zeros(n, np.int32)
    info, k = 0, 0
    with np.errstate(all="ignore"):
        while k < n:
            kp, step = _bunch_kaufman_pivot(a, k)
            if kp is None:
                info, kp = info or k + 1, k
            else:
                if kp != k + step - 1:
                    _swap_symmetric(a, k + step - 1, kp)
                    if step == 2:
                        a[[k + 1, kp], k] = a[[kp, k + 1], k]
                if step == 1:
                    _eliminate_1x1(a, k)
                else:
                    _eliminate_2x2(a, k)
            pivots[k:k + step] = kp + 1 if step == 1 else -(kp + 1)
            k += step
    return np.tril(a), pivots, info


def _ldl_meta(a, *, hermitian):
    batch, n = tuple(a.shape[:-2]), a.shape[-1]
    return (a.shape, a.dtype), (batch + (n,), np.dtype(np.int32)), (batch, np.dtype(np.int32))


@defop("linalg_ldl_factor_ex", meta=_ldl_meta, multi_output=True, differentiable_outputs=(0,),
       grad_name="NotImplemented", kind="linalg")
def ldl_factor_op(xp, a, *, hermitian):
    if xp is not np:  # pragma: no cover - _on_host gives this kernel host arrays only
        raise RuntimeError("linalg.ldl_factor_ex: the kernel runs on the host")
    import scipy.linalg

    n = a.shape[-1]
    flat = a.reshape((int(np.prod(a.shape[:-2])), n, n))
    ld = np.zeros_like(flat)
    pivots = np.zeros((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    kind = "hetrf" if hermitian and a.dtype.kind == "c" else "sytrf"
    for index, matrix in enumerate(flat if n else ()):
        if matrix.dtype.kind == "f" and not np.isfinite(matrix).all():
            ld[index], pivots[index], info[index] = _lapack_ldl(matrix)
            continue
        factor, = scipy.linalg.get_lapack_funcs((kind,), (matrix,))
        packed, pivots[index], info[index] = factor(matrix, lower=1)
        ld[index] = np.tril(packed)
    return ld.reshape(a.shape), pivots.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


ldl_factor_op.opt_out("onnx", "ONNX has no matrix decompositions")


ldl_factor_op.defbatch(batching.trailing_dims)


ldl_factor_op.defderivative(_not_implemented_derivative("linalg_ldl_factor_ex"))


def linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """The Bunch-Kaufman factorisation ``A = L D L^T`` (``L D L^H`` with ``hermitian``) of a
    symmetric matrix, read from its lower triangle: ``(LD, pivots, info)`` in LAPACK's compact
    form (a negative pivot marks a 2 x 2 block of D). Not differentiable, as in torch.

    Example::

        >>> ember.linalg.ldl_factor_ex(ember.tensor([[4., 2.], [2., 3.]])).LD
        tensor([[4.0000, 0.0000],
                [0.5000, 2.0000]])
    """
    name = "torch.linalg.ldl_factor_ex"
    _check_tensor(A, "linalg.ldl_factor_ex", "A")
    _check_square_shape(A, name)
    if A._data.dtype in _LOW or not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_short(A)}")
    result = LDLFactorExResult(*_on_host(ldl_factor_op, A._device, A, hermitian=bool(hermitian)))
    if check_errors:
        codes = result.info.cpu()._data.reshape(-1)
        if codes.any():
            index = int(np.flatnonzero(codes)[0])
            code = int(codes[index])
            # torch reports this case as an internal error ("Unknown error code"), a plain
            # RuntimeError, not a LinAlgError; we raise the same type and say what LAPACK found
            raise RuntimeError(f"{name}: {_batch_prefix(index, A._data.ndim > 2)}D[{code},{code}]"
                               " is exactly zero: the factorization succeeded but D is singular.")
    return _write_tuple(result, out, "linalg.ldl_factor_ex", LDLFactorExResult)


def linalg_ldl_factor(A, *, hermitian=False, out=None):
    """:func:`linalg_ldl_factor_ex` without ``info``; raises where D is singular.

    Example::

        >>> ember.linalg.ldl_factor(ember.tensor([[4., 2.], [2., 3.]])).pivots
        tensor([1, 2], dtype=ember.int32)
    """
    ld, pivots, _ = linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return _write_tuple(LDLFactorResult(ld, pivots), out, "linalg.ldl_factor", LDLFactorResult)


@defop("linalg_ldl_solve", meta=_solve_meta, grad_name="NotImplemented", kind="linalg")
def ldl_solve_op(xp, ld, pivots, b, *, hermitian):
    if xp is not np:  # pragma: no cover - _on_host gives this kernel host arrays only
        raise RuntimeError("linalg.ldl_solve: the kernel runs on the host")
    import scipy.linalg

    n, k = ld.shape[-1], b.shape[-1]
    batch = tuple(np.broadcast_shapes(ld.shape[:-2], b.shape[:-2], pivots.shape[:-1]))
    count = int(np.prod(batch))  # (-1 cannot stand for it when a matrix is empty)
    flat_ld = np.broadcast_to(ld, batch + (n, n)).reshape((count, n, n))
    flat_pivots = np.broadcast_to(pivots, batch + (n,)).reshape((count, n))
    flat_b = np.broadcast_to(b, batch + (n, k)).reshape((count, n, k))
    x = np.zeros(flat_b.shape, b.dtype)
    kind = "hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs"
    for index in range(x.shape[0] if n and k else 0):
        solve, = scipy.linalg.get_lapack_funcs((kind,), (flat_ld[index],))
        x[index], _ = solve(flat_ld[index], flat_pivots[index], flat_b[index], lower=1)
    return x.reshape(batch + (n, k))


ldl_solve_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


ldl_solve_op.defbatch(batching.trailing_dims)


ldl_solve_op.defderivative(_not_implemented_derivative("linalg_ldl_solve"))


def linalg_ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """The solution of ``A X = B`` from the factors of :func:`linalg_ldl_factor` (LAPACK
    sytrs/hetrs); batch dims broadcast. Not differentiable, as in torch.

    Example::

        >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[4., 2.], [2., 3.]]))
        >>> ember.linalg.ldl_solve(LD, pivots, ember.tensor([[6.], [5.]]))
        tensor([[1.],
                [1.]])
    """
    name = "torch.linalg.ldl_solve"
    for arg, value in (("LD", LD), ("pivots", pivots), ("B", B)):
        _check_tensor(value, "linalg.ldl_solve", arg)
    _check_square_shape(LD, name)  # torch names it A here
    _check_solve_shapes(LD, B, True, name, "LD")
    if LD._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but got LD with "
                           f"dtype {_short(LD)} and B with dtype {_short(B)} instead")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if pivots._data.dtype.kind not in "iu":  # any integer type, as torch (ldl_factor: int32)
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {_short(pivots)}")
    if pivots._data.dtype != np.int32:
        pivots = pivots.to(dt.int32)
    result = _on_host(ldl_solve_op, LD._device, LD, pivots, B, hermitian=bool(hermitian))
    return write_out(result, out, "linalg.ldl_solve")
