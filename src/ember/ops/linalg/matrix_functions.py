"""Matrix functions: ``linalg.matrix_power`` (``matrix_power``) and ``linalg.matrix_exp``
(``matrix_exp``).

Example::

    >>> ember.linalg.matrix_power(ember.eye(2) * 2, 3)
    tensor([[8., 0.],
            [0., 8.]])
"""

from __future__ import annotations

import math

import numpy as np

from .._methods import tensor_method
from .._registry import defop, write_out
from .._signature import signature
from .._util import host_values
from .._vmap_rules import batching
from ._common import _LOW, _check_square, _check_square_shape, _check_tensor, _short
from .products import matmul
from .solvers import linalg_inv

# ================================================================ powers and exponentials


def linalg_matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (negative powers invert first) by repeated squaring.

    Example::

        >>> ember.linalg.matrix_power(ember.tensor([[1., 1.], [0., 1.]]), 3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    _check_tensor(A, "linalg.matrix_power", "A")
    _check_square_shape(A, "linalg.matrix_power")
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n == 0:
        from ..creation import eye

        size = A._data.shape[-1]
        from ..pointwise.comparison import where

        identity = eye(size, dtype=A.dtype, device=A._device)
        # Selecting the identity over A keeps the result connected to A (a zero gradient) and
        # its dtype, whatever A holds (NaN or inf entries too), as torch's overwrite does.
        result = where(identity.new_ones((), dtype=bool), identity, A)
        return write_out(result, out, "linalg.matrix_power")
    if n < 0:
        _check_square(A, "linalg.inv")
        A = linalg_inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is A:
        result = A.clone()
    return write_out(result, out, "linalg.matrix_power")


@tensor_method
@signature("matrix_power(Tensor input, int n) -> Tensor")
def matrix_power(input, n):
    """Same as :func:`ember.linalg.matrix_power`.

    Example::

        >>> ember.matrix_power(ember.eye(2) * 2, 2)
        tensor([[4., 0.],
                [0., 4.]])
    """
    return linalg_matrix_power(input, n)


# The matrix exponential as torch computes it: Taylor polynomials of degree 1, 2, 4, 8, 12
# or 18 evaluated with few products, after Bader, Blanes and Casas (2019), "Computing the
# matrix exponential with an optimized Taylor polynomial approximation" (their coefficients).
# Each degree serves matrices whose 1-norm is at most its theta (for the unit roundoff of
# float32 or float64); larger ones are scaled by 2**-s into degree 18's range and squared s
# times. Batches of more than one matrix all take degree 18, as torch's do.
_TAYLOR_THETAS = {
    "float32": (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00),
    "float64": (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00),
}
_SQRT_177 = 0.1330413469565007072504e+2
_T8_X3 = 2.0 / 3.0
_T8 = {"x1": _T8_X3 * (1.0 + _SQRT_177) / 88.0, "x2": _T8_X3 * (1.0 + _SQRT_177) / 352.0,
       "x4": (-271.0 + 29.0 * _SQRT_177) / (315.0 * _T8_X3),
       "x5": (-11.0 + 11.0 * _SQRT_177) / (1260.0 * _T8_X3),
       "x6": (-99.0 + 11.0 * _SQRT_177) / (5040.0 * _T8_X3),
       "x7": (89.0 - _SQRT_177) / (5040.0 * _T8_X3), "y2": (857.0 - 58.0 * _SQRT_177) / 630.0}
# Rows: the coefficients of I, A, A^2, A^3 (and A^6 for degree 18) in each intermediate.
_T12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052,
         -0.04623946134063071740),
        (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
         0.01108844528519167989),
        (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
         0.00610700528898058230),
        (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
         -0.00675951846863086359))
_T18 = ((0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03,
         -8.92138498045729985177e-04, 0.0),
        (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e+00,
         4.98289622525382669416e-01, -6.37898194594723280150e-04),
        (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05),
        (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05),
        (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02,
         -1.40086798182036094347e-05))


def _combine(rows, powers):
    """Each row of coefficients applied to the list of matrix powers."""
    return [sum(c * p for c, p in zip(row, powers)) for row in rows]


def _taylor_1(a, ident):
    return ident + a


def _taylor_2(a, ident):
    return ident + a + (a @ a) / 2.0


def _taylor_4(a, ident):
    a2 = a @ a
    return ident + a + a2 @ (ident / 2.0 + a / 6.0 + a2 / 24.0)


def _taylor_8(a, ident):
    c = _T8
    a2 = a @ a
    a4 = a2 @ (c["x1"] * a + c["x2"] * a2)
    a8 = (_T8_X3 * a2 + a4) @ (c["x4"] * ident + c["x5"] * a + c["x6"] * a2 + c["x7"] * a4)
    return ident + a + c["y2"] * a2 + a8


def _taylor_12(a, ident):
    a2 = a @ a
    b0, b1, b2, b3 = _combine(_T12, [ident, a, a2, a @ a2])
    a6 = b2 + b3 @ b3
    return b0 + (b1 + a6) @ a6


def _taylor_18(a, ident):
    a2 = a @ a
    a3 = a @ a2
    b0, b1, b2, b3, b4 = _combine(_T18, [ident, a, a2, a3, a3 @ a3])
    a9 = b0 @ b4 + b3
    return b1 + (b2 + a9) @ a9


_TAYLOR = (_taylor_1, _taylor_2, _taylor_4, _taylor_8, _taylor_12)


def _expm_kernel(xp, a):
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    if n == 1:
        return xp.exp(a)
    work = (a.astype(np.float32) if a.dtype in _LOW else a).reshape(-1, n, n)
    thetas = _TAYLOR_THETAS["float32" if work.real.dtype == np.float32 else "float64"]
    norms = xp.abs(work).sum(-2).max(-1)
    ident = xp.eye(n, dtype=work.dtype)
    if work.shape[0] == 1:  # one matrix: the lowest degree its norm allows (one sync)
        norm = float(host_values(xp, norms[0])[0])
        degree = next((i for i, theta in enumerate(thetas[:-1]) if norm <= theta), None)
        if degree is not None and norm < thetas[-2]:
            return _TAYLOR[degree](work, ident).reshape(a.shape).astype(a.dtype, copy=False)
    result = _scaled_taylor_18(xp, work, norms, thetas[-1], ident)
    return result.reshape(a.shape).astype(a.dtype, copy=False)


def _scaled_taylor_18(xp, work, norms, theta, ident):
    """Degree 18 on each matrix scaled by 2**-s into its range, then squared s times (nan
    for a matrix holding inf or nan)."""
    scale = xp.maximum(xp.ceil(xp.log2(norms / theta)), 0)
    finite = xp.isfinite(scale)
    scale = xp.where(finite, scale, 0)
    result = _taylor_18(work / (2.0 ** scale)[:, None, None], ident)
    result = xp.where(finite[:, None, None], result, math.nan)
    squarings = (scale if xp is np else scale.get()).astype(np.int64)  # one sync
    for k in range(int(max(squarings, default=0))):
        pending = squarings > k
        if pending.all():
            result = result @ result
        else:
            picked = xp.flatnonzero(xp.asarray(pending))
            result[picked] = result[picked] @ result[picked]
    return result


@defop("linalg_matrix_exp", meta=lambda a: (a.shape, a.dtype), grad_name="LinalgMatrixExpBackward0",
       kind="linalg")
def matrix_exp_op(xp, a):
    if xp is np:
        with np.errstate(over="ignore", invalid="ignore"):
            return _expm_kernel(xp, a)
    return _expm_kernel(xp, a)


matrix_exp_op.opt_out("onnx", "ONNX has no matrix exponential")


matrix_exp_op.defbatch(batching.trailing_dims)


@matrix_exp_op.defderivative
def _matrix_exp_derivative(ctx, grad):
    # The Fréchet derivative of exp at A^H applied to grad is the top-right block of
    # exp([[A^H, G], [0, A^H]]).
    (a,) = ctx.inputs
    from ..creation import zeros_like
    from ..shape import cat

    ah = a.mH
    top = cat([ah, grad], -1)
    bottom = cat([zeros_like(ah), ah], -1)
    big = matrix_exp_op(cat([top, bottom], -2))
    n = a._data.shape[-1]
    return (big[..., :n, n:],)


def linalg_matrix_exp(A):
    """The matrix exponential of a square matrix (or a batch).

    Example::

        >>> ember.linalg.matrix_exp(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_tensor(A, "linalg.matrix_exp", "A")
    _check_square_shape(A, "linalg.matrix_exp")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {_short(A)}")
    return matrix_exp_op(A)


@tensor_method
def matrix_exp(A):
    """Same as :func:`ember.linalg.matrix_exp`.

    Example::

        >>> ember.matrix_exp(ember.zeros(1, 1))
        tensor([[1.]])
    """
    return linalg_matrix_exp(A)
