"""Inverses and linear solves: ``linalg.inv`` (and ``inv_ex``, ``inverse``), ``linalg.solve``
(and ``solve_ex``), ``cholesky_solve``, ``cholesky_inverse``, ``linalg.tensorinv`` and
``linalg.tensorsolve``.

Example::

    >>> ember.linalg.solve(ember.eye(2) * 2, ember.ones(2))
    tensor([0.5000, 0.5000])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from .._methods import tensor_method
from .._registry import Op, autocast_policy, defop, write_out
from .._signature import signature
from .._util import linalg_errors
from .._vmap_rules import batching
from ._common import (
    InvExResult,
    LinAlgError,
    SolveExResult,
    _check_float,
    _check_square,
    _check_tensor,
    _compute,
    _shape_str,
    _short,
    _singular_error,
    _zero_pivot,
)
from .products import matmul, matmul_op

# ================================================================ inverse


@defop("linalg_inv", meta=lambda a: (a.shape, a.dtype), save_inputs=False, save_output=True,
       grad_name="LinalgInvExBackward0", kind="linalg", autocast={"cpu": "fp32"})
def inv_op(xp, a):
    if a.size == 0:
        return xp.empty(a.shape, a.dtype)
    try:
        with linalg_errors(xp):
            result = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        _singular_error(xp, a, "linalg.inv")
    return result.astype(a.dtype, copy=False)


inv_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


inv_op.defbatch(batching.trailing_dims)


@inv_op.defderivative
def _inv_derivative(ctx, grad):
    inv = ctx.output.mH
    return (-matmul_op(inv, matmul_op(grad, inv)),)


def _inv_h_kernel(xp, a):
    """``A^{-H}`` by LU without the singularity check, solving ``A^H X = I`` with the LU
    factors as torch's backward formulas do: a zero pivot gives the same inf/NaN entries."""
    if a.size == 0:
        return xp.empty(a.shape, a.dtype)
    work = _compute(xp, a)
    if xp is not np:  # CuPy: NaN, no error
        return xp.linalg.inv(work).conj().swapaxes(-1, -2).astype(a.dtype)
    try:
        result = np.linalg.inv(work).conj().swapaxes(-1, -2)
    except np.linalg.LinAlgError:
        import scipy.linalg

        flat = work.reshape((-1,) + work.shape[-2:])
        result = np.empty_like(flat)
        eye = np.eye(flat.shape[-1], dtype=flat.dtype)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for index, matrix in enumerate(flat):
                lu = scipy.linalg.lu_factor(matrix, check_finite=False)
                result[index] = scipy.linalg.lu_solve(lu, eye, trans=2, check_finite=False)
        result = result.reshape(work.shape)
    return np.ascontiguousarray(result).astype(a.dtype, copy=False)


inv_h_op = Op("linalg_inv_h", _inv_h_kernel, meta=lambda a: (a.shape, a.dtype),
              save_inputs=False, save_output=True, grad_name="LinalgInvExBackward0", kind="linalg",
              autocast={"cpu": "fp32"})


inv_h_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


inv_h_op.defbatch(batching.trailing_dims)


@inv_h_op.defderivative
def _inv_h_derivative(ctx, grad):
    # Y = A^{-H}: dY = -Y dA^H Y, so grad_A = -Y G^H Y
    y = ctx.output
    return (-matmul_op(y, matmul_op(grad.mH, y)),)


@autocast_policy(cpu="fp32")
def linalg_inv(A, *, out=None):
    """The inverse of a square matrix (or a batch); raises :class:`LinAlgError` if singular.

    Example::

        >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _check_square(A, "linalg.inv")
    return write_out(inv_op(A), out, "linalg.inv")


@tensor_method
@autocast_policy(cpu="fp32")
def inverse(input, *, out=None):
    """Same as :func:`ember.linalg.inv`.

    Example::

        >>> ember.inverse(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return linalg_inv(input, out=out)


@autocast_policy(cpu="fp32")
def linalg_inv_ex(A, *, check_errors=False, out=None):
    """The inverse and an ``info`` tensor (0 where the inversion succeeded).

    Example::

        >>> ember.linalg.inv_ex(ember.eye(2)).info
        tensor(0, dtype=ember.int32)
    """
    _check_square(A, "linalg.inv_ex")
    batch = A._data.shape[:-2]
    from ..creation import zeros

    try:
        inverse_ = inv_op(A)
        info = zeros(batch, dtype=dt.int32, device=A._device)
    except LinAlgError:
        if check_errors:
            raise
        inverse_, info = _inverse_with_info(A)
    result = InvExResult(inverse_, info)
    if out is not None:
        write_out(result[0], out[0], "linalg.inv_ex")
        write_out(result[1], out[1], "linalg.inv_ex")
        return InvExResult(*out)
    return result


def _inverse_with_info(A):
    """The inverse where it exists, and LAPACK's info (first zero pivot, 1-based) elsewhere."""
    host = A.detach().cpu()._data
    flat = host.reshape((-1,) + host.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    result = np.empty_like(flat)
    for index, matrix in enumerate(flat):
        info[index] = _zero_pivot(matrix)
        if info[index]:
            result[index] = np.nan
        else:
            result[index] = np.linalg.inv(matrix)
    from ..._tensor import tensor

    out = tensor(result.reshape(host.shape), device=A._device)
    return out, tensor(info.reshape(host.shape[:-2]), device=A._device)


# ================================================================ solve


def _solve_is_vector(A, B):
    """Whether ``B`` is a (batch of) vector(s) for ``A``: torch's rule for linalg.solve."""
    return B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1
                                 and B._data.shape == A._data.shape[:-1])


def _solve_meta(a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return tuple(batch) + b.shape[-2:], a.dtype


@defop("linalg_solve", meta=_solve_meta, save_output=True, grad_name="LinalgSolveExBackward0",
       kind="linalg", autocast={"cpu": "fp32"})
def solve_op(xp, a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, tuple(batch) + a.shape[-2:])
    b = xp.broadcast_to(b, tuple(batch) + b.shape[-2:])
    if a.size == 0 or b.size == 0:
        return xp.zeros(tuple(batch) + b.shape[-2:], a.dtype)
    try:
        with linalg_errors(xp):
            return xp.linalg.solve(a, b).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None


solve_op.opt_out("onnx", "ONNX has no linear solver or matrix inverse")


solve_op.defbatch(batching.broadcast_matrices)


@solve_op.defderivative
def _solve_derivative(ctx, grad):
    a, _ = ctx.inputs
    x = ctx.output
    grad_b = solve_op(a.mH, grad)
    grad_a = -matmul_op(grad_b, x.mH) if ctx.needs_input_grad[0] else None
    return grad_a, grad_b if ctx.needs_input_grad[1] else None


@autocast_policy(cpu="fp32")
def linalg_solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``); ``B`` may be a
    (batch of) vector(s). Batch dims broadcast.

    Example::

        >>> ember.linalg.solve(ember.tensor([[2., 0.], [0., 4.]]), ember.tensor([2., 4.]))
        tensor([1., 1.])
    """
    _check_square(A, "linalg.solve")
    _check_tensor(B, "linalg.solve", "B")
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {_short(A)} and B of type {_short(B)} instead")
    if not left:
        if _solve_is_vector(A, B):
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                               f"XA = B ({_shape_str(A._data.shape)} and "
                               f"{_shape_str(B.unsqueeze(-1)._data.shape)})")
        # X A = B  <=>  A^T X^T = B^T
        return write_out(linalg_solve(A.mT, B.mT).mT, out, "linalg.solve")
    vector = _solve_is_vector(A, B)
    b = B.unsqueeze(-1) if vector else B
    if b._data.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    n = A._data.shape[-1]
    if b._data.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({_shape_str(A._data.shape)} and "
                           f"{_shape_str(b._data.shape)})")
    from .._operands import broadcast_shapes

    broadcast_shapes(A._data.shape[:-2], b._data.shape[:-2])
    result = solve_op(A, b)
    if vector:
        result = result.squeeze(-1)
    return write_out(result, out, "linalg.solve")


def linalg_solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """:func:`linalg_solve` with an ``info`` tensor (0 on success).

    Example::

        >>> ember.linalg.solve_ex(ember.eye(2), ember.ones(2)).info
        tensor(0, dtype=ember.int32)
    """
    from ..creation import zeros

    result = linalg_solve(A, B, left=left)
    info = zeros(A._data.shape[:-2], dtype=dt.int32, device=A._device)
    return SolveExResult(result, info)


# ================================================================ with a Cholesky factor


@tensor_method
@signature("cholesky_inverse(Tensor input, bool upper=False, *, Tensor? out=None) -> Tensor")
@autocast_policy(cpu="fp32")
def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of ``A`` from its Cholesky factor (``input`` = L, or U with ``upper``).

    Example::

        >>> ember.cholesky_inverse(ember.tensor([[2., 0.], [0., 1.]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    _check_float(input, "cholesky_inverse")
    # as torch (LAPACK's potri), only the factor's own triangle is read
    factor = input.triu() if upper else input.tril()
    a = matmul(factor.mH, factor) if upper else matmul(factor, factor.mH)
    return write_out(linalg_inv(a), out, "cholesky_inverse")


@tensor_method
@signature("cholesky_solve(Tensor B, Tensor L, bool upper=False, *, Tensor? out=None) -> Tensor")
@autocast_policy(cpu="fp32")
def cholesky_solve(B, L, upper=False, *, out=None):
    """The solution of ``A X = B`` given the Cholesky factor of ``A``.

    Example::

        >>> ember.cholesky_solve(ember.ones(2, 1), ember.eye(2))
        tensor([[1.],
                [1.]])
    """
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_short(B)} and A of type {_short(L)} instead.")
    _check_float(B, "cholesky_solve")
    a = matmul(L.mH, L) if upper else matmul(L, L.mH)
    return write_out(linalg_solve(a, B), out, "cholesky_solve")


# ================================================================ tensorinv, tensorsolve


def _prod(shape):
    return math.prod(int(s) for s in shape)


def linalg_tensorinv(A, ind=2, *, out=None):
    """The inverse of ``A`` seen as a matrix from its first ``ind`` dims to the rest:
    ``tensordot(tensorinv(A, ind), A, ind)`` is the identity; the result has shape
    ``A.shape[ind:] + A.shape[:ind]``.

    Example::

        >>> ember.linalg.tensorinv(ember.eye(4).reshape(4, 2, 2), ind=1).shape
        ember.Size([2, 2, 4])
    """
    _check_tensor(A, "linalg.tensorinv", "A")
    if not isinstance(ind, (int, np.integer)) or isinstance(ind, bool):
        raise TypeError(f"linalg_tensorinv(): argument 'ind' must be int, not "
                        f"{type(ind).__name__}")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = A._data.shape[:ind], A._data.shape[ind:]
    if _prod(front) != _prod(back):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_prod(back)} != {_prod(front)}")
    try:
        inverse_ = linalg_inv(A.reshape(_prod(front), _prod(back)))
    except LinAlgError as error:  # torch names the step: 'inv', not 'linalg.inv'
        raise LinAlgError(str(error).replace("linalg.inv:", "inv:", 1)) from None
    return write_out(inverse_.reshape(tuple(back) + tuple(front)), out, "linalg.tensorinv")


def linalg_tensorsolve(A, B, dims=None, *, out=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims`` first moves those dims of
    ``A`` to the end. ``X`` has shape ``A.shape[B.ndim:]``.

    Example::

        >>> A = ember.eye(6).reshape(2, 3, 6)
        >>> ember.linalg.tensorsolve(A, ember.ones(2, 3)).shape
        ember.Size([6])
    """
    _check_tensor(A, "linalg.tensorsolve", "A")
    _check_tensor(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        A = A.movedim(dims, list(range(A._data.ndim - len(dims), A._data.ndim)))
    result_shape = A._data.shape[B._data.ndim:]
    if _prod(result_shape) != B._data.size:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {_prod(result_shape)}"
                           f" != {B._data.size}")
    square = A.reshape(B._data.size, _prod(result_shape))
    result = linalg_solve(square, B.reshape(-1)).reshape(tuple(result_shape))
    return write_out(result, out, "linalg.tensorsolve")
