"""What the linear-algebra families share: ``LinAlgError``, the named results, dtype names for
messages, and the argument checks of square-matrix functions (float dtype, square shape, a batch
index in errors, singular-matrix errors).
"""

from __future__ import annotations

import warnings

import numpy as np

from ... import _dtype as dt
from ... import return_types as _return_types
from ..._tensor import Tensor


class LinAlgError(RuntimeError):
    """Raised when a matrix is singular or not positive-definite (``torch.linalg.LinAlgError``).

    Example::

        >>> try:
        ...     ember.linalg.inv(ember.zeros(2, 2))
        ... except ember.linalg.LinAlgError as e:
        ...     print("singular")
        singular
    """


LinAlgError.__module__ = "ember.linalg"


SlogdetResult = _return_types.linalg_slogdet
InvExResult = _return_types.linalg_inv_ex
SolveExResult = _return_types.linalg_solve_ex
CholeskyExResult = _return_types.linalg_cholesky_ex
QRResult = _return_types.linalg_qr
SVDResult = _return_types.linalg_svd
EigResult = _return_types.linalg_eig
EighResult = _return_types.linalg_eigh
LstsqResult = _return_types.linalg_lstsq
PlainSlogdet = _return_types.slogdet


# ================================================================ helpers

_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
          "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_LOW = dt.LOW_PRECISION


def _short(t):
    return _SHORT[t.dtype.name]


def _check_tensor(x, name, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _shape_str(shape):
    return "x".join(str(s) for s in shape)


def _np(x):
    """The NumPy dtype an ember dtype stands for (accepts either)."""
    return x.np if isinstance(x, dt.dtype) else np.dtype(x)


def _real_np(d):
    return dt.from_numpy_dtype(np.dtype(d)).to_real().np


def _is_cpu(xp):
    return xp is np


# ================================================================ square-matrix checks


_LOW_KERNELS = {"linalg.det": "lu_cpu", "linalg.slogdet": "lu_cpu", "linalg.solve": "lu_cpu",
                "logdet": "lu_cpu", "linalg.qr": "geqrf_cpu", "linalg.cholesky": "cholesky_cpu",
                "cholesky": "cholesky_cpu", "linalg.svd": "linalg_svd_cpu",
                "linalg.eigh": "linalg_eigh_cpu", "linalg.eigvalsh": "linalg_eigh_cpu",
                "linalg.eig": "linalg_eig_cpu", "linalg.eigvals": "linalg_eig_cpu"}


# ops whose integer or bool input torch refuses as a missing kernel (NotImplementedError naming
# it) rather than with the RuntimeError of linalg's floating-point check
_INTEGER_KERNELS = {"cholesky": "cholesky_cpu", "cholesky_inverse": "cholesky_inverse_out_cpu",
                    "cholesky_solve": "cholesky_solve_cpu",
                    "torch.linalg.householder_product": "orgqr_cpu"}


def _check_float(A, name):
    if A._data.dtype in _LOW:
        if name in ("linalg.inv", "linalg.inv_ex"):
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_short(A)}")
        kernel = _LOW_KERNELS.get(name) or _INTEGER_KERNELS.get(name, name)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_short(A)}\'')
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        if name in _INTEGER_KERNELS:
            raise dt.no_kernel_for(_INTEGER_KERNELS[name], A.dtype)
        if name in ("linalg.eigh", "linalg.eigvalsh"):
            raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{_short(A)}'")
        if name in ("linalg.eig", "linalg.eigvals"):
            raise RuntimeError(f"Unknown Complex ScalarType for {_short(A)}")
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_short(A)}")


def _check_square_shape(A, name, arg="A"):
    """torch's errors for ``A`` that is not a (batch of) square matrices, named ``arg``."""
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} matrices")


def _check_square(A, name, arg="A"):
    _check_tensor(A, name, arg)
    _check_square_shape(A, name, arg)
    _check_float(A, name)


def _check_matrix(A, name, arg="A"):
    _check_tensor(A, name, arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    _check_float(A, name)


def _batch_prefix(index, batched):
    return f"(Batch element {index}): " if batched else ""


def _zero_pivot(matrix):
    """LAPACK's info for the LU factorisation of one NumPy ``matrix``: the 1-based index of
    the first exactly zero pivot, or 0 (the matrix is invertible).

    Example::

        >>> _zero_pivot(np.array([[1., 2.], [2., 4.]]))
        2
    """
    import scipy.linalg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lu, _ = scipy.linalg.lu_factor(matrix, check_finite=False)
    zeros = np.nonzero(np.diagonal(lu) == 0)[0]
    return int(zeros[0]) + 1 if zeros.size else 0


def _singular_error(xp, a, name):
    """torch's LinAlgError for an exactly singular matrix: which batch and which pivot."""
    host = a if xp is np else xp.asnumpy(a)
    flat = host.reshape((-1,) + host.shape[-2:])
    for index, matrix in enumerate(flat):
        pivot = _zero_pivot(matrix)
        if pivot:
            raise LinAlgError(f"{name}: {_batch_prefix(index, host.ndim > 2)}The diagonal "
                              f"element {pivot} is zero, the inversion could not be "
                              "completed because the input matrix is singular.")
    raise LinAlgError(f"{name}: The inversion could not be completed because the input matrix "
                      "is singular.")


def _compute(xp, a):
    """Half-precision inputs compute in float32 (LAPACK has no half)."""
    return a.astype(np.float32) if a.dtype in _LOW else a
