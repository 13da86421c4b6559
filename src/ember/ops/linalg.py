"""Linear algebra: the matmul family, products and contractions, and matrix decompositions.

Products (``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``) are one kernel, ``xp.matmul`` (BLAS on
the CPU, cuBLAS through CuPy), registered under torch's names so that ``grad_fn`` reads as in
torch. Decompositions run ``xp.linalg`` batched; their derivatives are written with ember
operators (matmul, solve, ...) so that higher-order gradients work. The ``ember.linalg``
namespace (``ember/linalg.py``) re-exports the ``linalg_*`` functions defined here.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings

import numpy as np

from .. import _dtype as dt
from .. import return_types as _return_types
from .._device import META
from .._tensor import Tensor
from ..autograd.forward_ad import add_tangents
from ._operands import operator_method, wrap_dim
from ._precision import in_float32, is_half
from ._registry import Op, defop, inplace, write_out
from ._util import host_values, linalg_errors

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "addmv", "addr", "addbmm", "baddbmm", "einsum", "tensordot", "kron", "cross",
           "trace", "diag", "diag_embed", "cdist", "cholesky", "chain_matmul", "det", "logdet",
           "slogdet", "inverse", "pinverse", "matrix_power", "matrix_exp", "cholesky_inverse",
           "cholesky_solve", "svd", "lu", "lu_solve", "lu_unpack", "qr", "triangular_solve",
           "vander", "svd_lowrank", "pca_lowrank"]


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


def _method(name, fn):
    setattr(Tensor, name, fn)


def _np(x):
    """The NumPy dtype an ember dtype stands for (accepts either)."""
    return x.np if isinstance(x, dt.dtype) else np.dtype(x)


def _real_np(d):
    return dt.from_numpy_dtype(np.dtype(d)).to_real().np


def _is_cpu(xp):
    return xp is np


# ================================================================ matmul family


def _matmul_shape(sa, sb):
    """The shape of ``matmul`` of operands shaped ``sa`` and ``sb`` (already checked)."""
    if len(sa) == 1 and len(sb) == 1:
        return ()
    if len(sb) == 1:
        return tuple(sa[:-1])
    if len(sa) == 1:
        return tuple(sb[:-2]) + (sb[-1],)
    batch = np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]))
    return tuple(batch) + (sa[-2], sb[-1])


def _matmul_meta(a, b):
    return _matmul_shape(a.shape, b.shape), a.dtype


def _matmul_kernel(xp, a, b):
    if a.dtype in _LOW:
        return xp.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
    return xp.matmul(a, b)


def _matmul_derivative(ctx, grad):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    if a._data.ndim == 1 and b._data.ndim == 1:
        return (grad * b.conj() if need_a else None), (grad * a.conj() if need_b else None)
    a2 = a.unsqueeze(0) if a._data.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b._data.ndim == 1 else b
    g2 = grad
    if a._data.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b._data.ndim == 1:
        g2 = g2.unsqueeze(-1)
    grad_a = grad_b = None
    if need_a:
        grad_a = matmul_op(g2, b2.mH)
        if a._data.ndim == 1:
            grad_a = grad_a.squeeze(-2)
    if need_b:
        grad_b = matmul_op(a2.mH, g2)
        if b._data.ndim == 1:
            grad_b = grad_b.squeeze(-1)
    return grad_a, grad_b


def _matmul_jvp(p, t, y, **params):
    """The product rule: ``ta @ b + a @ tb``."""
    (a, b), (ta, tb) = p, t
    return add_tangents(None if ta is None else matmul(ta, b),
                        None if tb is None else matmul(a, tb))


def _product_op(name):
    op = Op(name, _matmul_kernel, meta=_matmul_meta, kind="linalg")
    op.defderivative(_matmul_derivative)
    op.defjvp(_matmul_jvp)
    return op


matmul_op = _product_op("matmul")
mm_op = _product_op("mm")
bmm_op = _product_op("bmm")
mv_op = _product_op("mv")
dot_op = _product_op("dot")
_OP_BY_RANK = {(1, 1): dot_op, (2, 1): mv_op, (2, 2): mm_op}


def _not_implemented(a, kernel):
    if a._data.dtype == np.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _check_mm(a, b, name="mm"):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CPP_NAMES[a.dtype.name]} != {_CPP_NAMES[b.dtype.name]}")
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({_shape_str(a._data.shape)} and {_shape_str(b._data.shape)})")
    _not_implemented(a, "addmm_impl_cpu_")


def _check_dot(a, b, name="dot"):
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D "
                           "tensors")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found "
                           f"{_short(a)} and {_short(b)}")
    if a._data.shape[0] != b._data.shape[0]:
        n, m = a._data.shape[0], b._data.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    _not_implemented(a, name)


def _check_mv(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_short(b)}, {_short(a)}, and {_short(b)}")
    if a._data.shape[-1] != b._data.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a._data.shape[0]}), mat "
                           f"({_shape_str(a._data.shape)}), vec ({b._data.shape[0]})")
    _not_implemented(a, "addmv_impl_cpu")


def _check_bmm_shapes(sa, sb):
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")


def _check_same_scalar(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_short(a)} but found {_short(b)}")


def matmul(input, other, *, out=None):
    """Matrix product with torch's rules for 1-D operands and broadcast batch dims.

    1-D x 1-D is a dot product, 2-D x 1-D a matrix-vector product, a 1-D first operand is a
    row vector (its dim is removed from the result), and N-D operands multiply batches of
    matrices with their batch dims broadcast.

    Example::

        >>> ember.matmul(ember.ones(2, 3), ember.ones(3)).shape
        ember.Size([2])
    """
    if out is None and type(input) is Tensor and type(other) is Tensor:
        a, b = input._data, other._data
        if (a.ndim == 2 and b.ndim == 2 and a.dtype is b.dtype and a.shape[1] == b.shape[0]
                and a.dtype.kind in "fc"):
            return mm_op(input, other)  # the hot path: checks done inline
    _check_tensor(input, "matmul")
    _check_tensor(other, "matmul", "other")
    na, nb = input._data.ndim, other._data.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nb}D")
    op = _OP_BY_RANK.get((na, nb))
    if op is mm_op:
        _check_mm(input, other)
    elif op is dot_op:
        _check_dot(input, other)
    elif op is mv_op:
        _check_mv(input, other)
    else:
        _check_matmul_nd(input, other)
        op = matmul_op
    return write_out(op(input, other), out, "matmul")


def _check_matmul_nd(a, b):
    sa, sb = a._data.shape, b._data.shape
    na, nb = len(sa), len(sb)
    if nb == 1:  # N-D x 1-D: a stacked matrix-vector product
        if a._data.dtype != b._data.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_CPP_NAMES[a.dtype.name]} != {_CPP_NAMES[b.dtype.name]}")
        if sa[-1] != sb[0]:
            rows = int(np.prod(sa[:-1]))
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{sa[-1]}), "
                               f"vec ({sb[0]})")
        _not_implemented(a, "addmv_impl_cpu")
        return
    if na == 1 and nb == 2:
        if a._data.dtype != b._data.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_CPP_NAMES[a.dtype.name]} != {_CPP_NAMES[b.dtype.name]}")
        if sa[0] != sb[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{sa[0]} and "
                               f"{_shape_str(sb)})")
        _not_implemented(a, "addmm_impl_cpu_")
        return
    if nb == 2 and na > 2:  # folded into one mm by torch
        if a._data.dtype != b._data.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                               f"{_CPP_NAMES[a.dtype.name]} != {_CPP_NAMES[b.dtype.name]}")
        if sa[-1] != sb[0]:
            rows = int(np.prod(sa[:-1]))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sa[-1]} and "
                               f"{_shape_str(sb)})")
        _not_implemented(a, "addmm_impl_cpu_")
        return
    batch_a = sa[:-2] if na > 2 else ()
    batch_b = sb[:-2]
    from ._operands import broadcast_shapes

    batch = broadcast_shapes(tuple(batch_a), tuple(batch_b))
    _check_same_scalar(a, b)
    k = sa[-1]
    n = sa[-2] if na >= 2 else 1
    bsize = int(np.prod(batch))
    if k != sb[-2]:
        _check_bmm_shapes((bsize, n, k), (bsize, sb[-2], sb[-1]))
    _not_implemented(a, "baddbmm_with_gemm")


def mm(input, mat2, *, out_dtype=None, out=None):
    """The product of two matrices (no broadcasting; see :func:`matmul`). ``out_dtype``
    float32 multiplies float16/bfloat16 matrices into a float32 result.

    Example::

        >>> ember.mm(ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    _check_tensor(input, "mm")
    _check_tensor(mat2, "mm", "mat2")
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm(input, mat2)
    if out_dtype is not None:
        input, mat2 = _inputs_for_out_dtype(input, mat2, out_dtype)
    return write_out(mm_op(input, mat2), out, "mm")


def _inputs_for_out_dtype(input, mat2, out_dtype):
    """The operands cast so that their product has ``out_dtype``, which must be the inputs'
    own dtype, or float32 for float16/bfloat16 inputs (torch's rule)."""
    out_dtype = dt.to_dtype(out_dtype)
    if out_dtype is input.dtype:
        return input, mat2
    if out_dtype is dt.float32 and input.dtype in (dt.float16, dt.bfloat16):
        return input.to(dt.float32), mat2.to(dt.float32)
    raise RuntimeError("out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs")


def bmm(input, mat2, *, out_dtype=None, out=None):
    """Batched matrix product of two 3-D tensors with the same batch size (``out_dtype`` as
    in :func:`mm`).

    Example::

        >>> ember.bmm(ember.ones(5, 2, 3), ember.ones(5, 3, 4)).shape
        ember.Size([5, 2, 4])
    """
    _check_tensor(input, "bmm")
    _check_tensor(mat2, "bmm", "mat2")
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_bmm_shapes(input._data.shape, mat2._data.shape)
    _check_same_scalar(input, mat2)
    _not_implemented(input, "bmm")
    if out_dtype is not None:
        input, mat2 = _inputs_for_out_dtype(input, mat2, out_dtype)
    return write_out(bmm_op(input, mat2), out, "bmm")


def mv(input, vec, *, out=None):
    """Matrix-vector product.

    Example::

        >>> ember.mv(ember.ones(2, 3), ember.ones(3))
        tensor([3., 3.])
    """
    _check_tensor(input, "mv")
    _check_tensor(vec, "mv", "vec")
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input._data.ndim}, "
                           f"{vec._data.ndim}")
    _check_mv(input, vec)
    return write_out(mv_op(input, vec), out, "mv")


def dot(input, tensor, *, out=None):
    """The dot product of two 1-D tensors (no conjugation; see :func:`vdot`).

    Example::

        >>> ember.dot(ember.tensor([2., 3.]), ember.tensor([2., 1.]))
        tensor(7.)
    """
    _check_tensor(input, "dot")
    _check_tensor(tensor, "dot", "tensor")
    _check_dot(input, tensor)
    return write_out(dot_op(input, tensor), out, "dot")


def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors, conjugating the first.

    Example::

        >>> ember.vdot(ember.tensor([2., 3.]), ember.tensor([2., 1.]))
        tensor(7.)
    """
    _check_tensor(input, "vdot")
    _check_tensor(other, "vdot", "other")
    _check_dot(input, other, "vdot")
    a = input.conj() if input.dtype.is_complex else input
    return write_out(dot_op(a, other), out, "vdot")


def inner(input, other, *, out=None):
    """Inner product over the last dim of each operand (a product with a scalar for 0-D).

    Example::

        >>> ember.inner(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    _check_tensor(input, "inner")
    _check_tensor(other, "inner", "other")
    if input._data.ndim == 0 or other._data.ndim == 0:
        return write_out(input * other, out, "inner")
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input._data.shape)} and {list(other._data.shape)}")
    return write_out(tensordot(input, other, dims=([-1], [-1])), out, "inner")


def outer(input, vec2, *, out=None):
    """The outer product of two 1-D tensors.

    Example::

        >>> ember.outer(ember.tensor([1., 2.]), ember.tensor([1., 10.]))
        tensor([[ 1., 10.],
                [ 2., 20.]])
    """
    _check_tensor(input, "outer")
    _check_tensor(vec2, "outer", "vec2")
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return write_out(input.unsqueeze(1) * vec2, out, "outer")


ger = outer


def _scaled_sum(input, product, beta, alpha):
    """``beta * input + alpha * product`` with torch's rules (``beta == 0`` ignores input;
    integer results take integer ``alpha``/``beta``)."""
    if not (product.dtype.is_floating_point or product.dtype.is_complex):
        alpha, beta = int(alpha), int(beta)
    expanded = input.expand(product._data.shape)
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # input is ignored, but its dtype still takes part
        dtype = dt.promote_types(input.dtype, product.dtype)
        return product if product.dtype is dtype else product.to(dtype)
    if beta != 1:
        expanded = expanded * beta
    return expanded + product


def _add_product(product, input, a, b, beta, alpha):
    """``beta * input + alpha * product(a, b)``; in half precision computed in float32 and
    rounded once, as torch's CPU kernels do."""
    if is_half(a):
        return in_float32(lambda i, x, y: _scaled_sum(i, product(x, y), beta, alpha),
                          input, a, b)
    return _scaled_sum(input, product(a, b), beta, alpha)


def _same_dtype(input, *others, style):
    if all(o._data.dtype == input._data.dtype for o in others):
        return
    names = [_CPP_NAMES[t.dtype.name] for t in (input, *others)]
    if style == "mm":
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_short(input)} and "
                           f"{_short(others[-1])}")
    if style == "mv":
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_short(input)}, {_short(others[0])}, and {_short(others[1])}")
    raise RuntimeError(f"Input dtypes must be the same, got: input {names[0]}, batch1: "
                       f"{names[1]}, batch2: {names[2]}")


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the result.

    Example::

        >>> ember.addmm(ember.zeros(2), ember.ones(2, 3), ember.ones(3, 2), alpha=2)
        tensor([[6., 6.],
                [6., 6.]])
    """
    _same_dtype(input, mat1, mat2, style="mm")
    return write_out(_add_product(mm, input, mat1, mat2, beta, alpha), out, "addmm")


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``.

    Example::

        >>> ember.addmv(ember.ones(2), ember.ones(2, 3), ember.ones(3))
        tensor([4., 4.])
    """
    _same_dtype(input, mat, vec, style="mv")
    return write_out(_add_product(mv, input, mat, vec, beta, alpha), out, "addmv")


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``.

    Example::

        >>> ember.addr(ember.zeros(2, 2), ember.ones(2), ember.ones(2))
        tensor([[1., 1.],
                [1., 1.]])
    """
    if vec1._data.ndim != 1 or vec2._data.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1._data.ndim}-D"
                           if vec1._data.ndim != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    product = outer(vec1, vec2)
    dtype = dt.promote_types(input.dtype, product.dtype)
    _check_addr_scalar(dtype, beta, "beta")
    _check_addr_scalar(dtype, alpha, "alpha")
    if dtype is dt.bool:  # torch's logical form: (beta and input) or (alpha and product)
        result = product if alpha else product.new_zeros(product.shape)
        if beta:
            result = result.logical_or(input.expand(product._data.shape))
        return write_out(result, out, "addr")
    return write_out(_scaled_sum(input, product, beta, alpha), out, "addr")


def _check_addr_scalar(dtype, scalar, name):
    """addr refuses a bool scalar unless the result is bool, and a float scalar for an
    integer (or bool) result."""
    if isinstance(scalar, Tensor):
        scalar = scalar.item()
    if isinstance(scalar, (bool, np.bool_)) and dtype is not dt.bool:
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if not (dtype.is_floating_point or dtype.is_complex or
            isinstance(scalar, (int, np.integer, bool, np.bool_))):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           "floating point number.")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    Example::

        >>> ember.addbmm(ember.zeros(2, 2), ember.ones(3, 2, 4), ember.ones(3, 4, 2))
        tensor([[12., 12.],
                [12., 12.]])
    """
    _same_dtype(input, batch1, batch2, style="mm")
    if is_half(input) and batch1._data.shape[0]:
        # torch adds one product after another, each step an addmm rounded to half once
        result = input
        for b in range(batch1._data.shape[0]):
            result = _add_product(mm, result, batch1[b], batch2[b], beta if b == 0 else 1,
                                  alpha)
        return write_out(result, out, "addbmm")
    product = bmm(batch1, batch2).sum(0, dtype=batch1.dtype)  # integers stay integers
    return write_out(_scaled_sum(input, product, beta, alpha), out, "addbmm")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``.

    Example::

        >>> ember.baddbmm(ember.zeros(3, 2, 2), ember.ones(3, 2, 4), ember.ones(3, 4, 2)).shape
        ember.Size([3, 2, 2])
    """
    _same_dtype(input, batch1, batch2, style="bmm")
    return write_out(_add_product(bmm, input, batch1, batch2, beta, alpha), out, "baddbmm")


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices, in the cheapest order (see ``linalg.multi_dot``).

    Example::

        >>> ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 4), ember.ones(4, 1)).shape
        ember.Size([2, 1])
    """
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return write_out(matrices[0].clone(), out, "chain_matmul")
    return write_out(_chain(list(matrices)), out, "chain_matmul")


def _chain(mats):
    """Multiply 2-D ``mats`` in the order that minimises the flop count."""
    n = len(mats)
    if n == 1:
        return mats[0]
    if n == 2:
        return mm(mats[0], mats[1])
    dims = [m._data.shape[0] for m in mats] + [mats[-1]._data.shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def build(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return mm(build(i, k), build(k + 1, j))

    return build(0, n - 1)


def _rmatmul(self, other):
    return matmul(other, self)


def _imatmul(self, other):
    return inplace(matmul, self, other)


# ================================================================ einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@defop("einsum", meta=lambda *arrays, equation, shape: (shape, arrays[0].dtype), kind="linalg")
def einsum_op(xp, *arrays, equation, shape):
    if arrays[0].dtype in _LOW:
        result = xp.einsum(equation, *(a.astype(np.float32) for a in arrays),
                           optimize=len(arrays) > 1)
        return xp.asarray(result).astype(arrays[0].dtype)
    return xp.asarray(xp.einsum(equation, *arrays, optimize=len(arrays) > 1))


@einsum_op.defderivative
def _einsum_derivative(ctx, grad, *, equation, shape):
    inputs = ctx.inputs
    lhs, out = equation.split("->")
    subs = lhs.split(",")
    sizes = {}
    for s, t in zip(subs, inputs):
        sizes.update(zip(s, t._data.shape))
    grads = []
    for i, need in enumerate(ctx.needs_input_grad):
        if not need:
            grads.append(None)
            continue
        others = [t.conj() for j, t in enumerate(inputs) if j != i]
        other_subs = [s for j, s in enumerate(subs) if j != i]
        eq = ",".join([out] + other_subs) + "->" + subs[i]
        grads.append(einsum_op(grad, *others, equation=eq,
                               shape=tuple(sizes[c] for c in subs[i])))
    return tuple(grads)


def _parse_einsum(equation, operands):
    """Split ``equation`` into per-operand subscripts (ellipses expanded) and the output."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, out = equation.split("->")
    else:
        lhs, out = equation, None
    subs = lhs.split(",")
    if len(subs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(subs) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    used = set(c for c in equation if c.isalpha())
    spare = iter(c for c in _LETTERS if c not in used)
    ell_rank = 0
    for s, t in zip(subs, operands):
        for c in s.replace("...", ""):
            if not c.isalpha():
                raise RuntimeError(f"einsum(): invalid subscript given at index "
                                   f"{equation.index(c)} in the equation string, subscripts "
                                   "must be in [a-zA-Z]")
        n_explicit = len(s.replace("...", ""))
        if "..." in s:
            ell_rank = max(ell_rank, t._data.ndim - n_explicit)
        elif n_explicit != t._data.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                               f"({n_explicit}) does not match the number of dimensions "
                               f"({t._data.ndim}) for operand {operands.index(t)} and no "
                               "ellipsis was given")
    ell = "".join(next(spare) for _ in range(ell_rank))
    expanded = []
    for s, t in zip(subs, operands):
        if "..." in s:
            k = t._data.ndim - len(s.replace("...", ""))
            s = s.replace("...", ell[ell_rank - k:] if k else "")
        expanded.append(s)
    if out is None:
        counts = collections.Counter("".join(expanded))
        named = sorted(c for c in counts if counts[c] == 1 and c not in ell)
        out = ell + "".join(named)
    else:
        out = out.replace("...", ell)
    return expanded, out


def einsum(*args):
    """Sum of products over the indices of an Einstein-summation ``equation``.

    Accepts ``einsum("ij,jk->ik", a, b)`` and the operands as one list. Ellipses broadcast.

    Example::

        >>> ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    if len(args) < 2:
        raise RuntimeError("einsum(): must specify the equation string and at least one "
                           "operand, or at least one operand and its subscripts list")
    equation, operands = args[0], args[1:]
    if not isinstance(equation, str):
        return _einsum_sublist(args)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = list(operands)
    subs, out = _parse_einsum(equation, operands)
    dtype = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dtype:
            raise RuntimeError(f"expected scalar type {_short(operands[0])} but found "
                               f"{_short(t)}")
    # Check sizes: a subscript's sizes must agree or be 1 (broadcast).
    sizes = {}
    for i, (s, t) in enumerate(zip(subs, operands)):
        for c, n in zip(s, t._data.shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != seen and n != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which "
                                   f"does not broadcast with previously seen size {seen}")
    for c in out:
        if c not in sizes:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                               "for any input operand")
    # Normalise: no repeated subscript within an operand, no broadcast size-1 dims, and every
    # subscript in the output or in two operands, so the derivative is again such an einsum.
    counts = collections.Counter()
    for i, (s, t) in enumerate(zip(subs, operands)):
        s, t = _einsum_diagonals(s, t)
        keep = [j for j, c in enumerate(s) if not (t._data.shape[j] == 1 and sizes[c] != 1)]
        if len(keep) != len(s):
            drop = [j for j in range(len(s)) if j not in keep]
            for j in reversed(drop):
                t = t.squeeze(j)
            s = "".join(s[j] for j in keep)
        subs[i], operands[i] = s, t
        counts.update(set(s))
    for i, (s, t) in enumerate(zip(subs, operands)):
        lonely = [j for j, c in enumerate(s) if counts[c] == 1 and c not in out]
        if lonely:
            t = t.sum(tuple(lonely))
            s = "".join(c for j, c in enumerate(s) if j not in lonely)
        subs[i], operands[i] = s, t
    present = set("".join(subs))
    missing = [c for c in out if c not in present]  # broadcast size-1 output dims
    core_out = "".join(c for c in out if c in present)
    shape = tuple(sizes[c] for c in core_out)
    if len(operands) == 1 and subs[0] == core_out:
        result = operands[0]
    else:
        result = einsum_op(*operands, equation=",".join(subs) + "->" + core_out, shape=shape)
    if missing:
        for j, c in enumerate(out):
            if c in missing:
                result = result.unsqueeze(j)
    return result


def _einsum_diagonals(s, t):
    """Take diagonals for subscripts repeated within one operand (``'ii'``)."""
    while len(set(s)) != len(s):
        for j, c in enumerate(s):
            k = s.find(c, j + 1)
            if k != -1:
                t = t.diagonal(0, j, k)
                s = s[:j] + s[j + 1:k] + s[k + 1:] + c
                break
    return s, t


def _einsum_sublist(args):
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])``: the sublist form."""
    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = args.pop()
    operands, subs = args[0::2], args[1::2]

    def letters(sub):
        return "".join("..." if x is Ellipsis else _LETTERS[x] for x in sub)

    equation = ",".join(letters(s) for s in subs)
    if out is not None:
        equation += "->" + letters(out)
    return einsum(equation, *operands)


# ================================================================ tensordot, kron, cross


def tensordot(a, b, dims=2, out=None):
    """Contract ``a``'s dims with ``b``'s: the last ``dims`` of ``a`` with the first of ``b``,
    or the two lists given as ``dims=([...], [...])``.

    Example::

        >>> ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5)).shape
        ember.Size([2, 5])
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a._data.ndim or dims > b._data.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        dims_a = list(range(-int(dims), 0))
        dims_b = list(range(int(dims)))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    sa, sb = a._data.shape, b._data.shape
    ca = [wrap_dim(d, len(sa)) for d in dims_a]
    cb = [wrap_dim(d, len(sb)) for d in dims_b]
    for da, db, ia, ib in zip(dims_a, dims_b, ca, cb):
        # A contracted dim of size 1 broadcasts against the other: sum that side over it.
        if sa[ia] != sb[ib] and sa[ia] == 1:
            b = b.sum(ib, keepdim=True, dtype=b.dtype)
        elif sa[ia] != sb[ib] and sb[ib] == 1:
            a = a.sum(ia, keepdim=True, dtype=a.dtype)
        elif sa[ia] != sb[ib]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{sa[ia]} in dim {da} and second has size {sb[ib]} in dim {db}")
    sa, sb = a._data.shape, b._data.shape
    free_a = [d for d in range(len(sa)) if d not in ca]
    free_b = [d for d in range(len(sb)) if d not in cb]
    k = int(np.prod([sa[d] for d in ca], dtype=np.int64))
    left = a.permute(free_a + ca).reshape(-1, k)
    right = b.permute(cb + free_b).reshape(k, -1)
    result = mm(left, right).reshape([sa[d] for d in free_a] + [sb[d] for d in free_b])
    return write_out(result, out, "tensordot")


def kron(input, other, *, out=None):
    """The Kronecker product (dims aligned at the right, the shorter operand padded with 1s).

    Example::

        >>> ember.kron(ember.eye(2), ember.ones(2, 2)).shape
        ember.Size([4, 4])
    """
    na, nb = input._data.ndim, other._data.ndim
    n = max(na, nb)
    a = input.reshape((1,) * (n - na) + tuple(input._data.shape))
    b = other.reshape((1,) * (n - nb) + tuple(other._data.shape))
    sa, sb = a._data.shape, b._data.shape
    a_shape, b_shape = [], []
    for x, y in zip(sa, sb):
        a_shape += [x, 1]
        b_shape += [1, y]
    result = (a.reshape(a_shape) * b.reshape(b_shape)).reshape(
        [x * y for x, y in zip(sa, sb)])
    return write_out(result, out, "kron")


@defop("cross", meta=lambda a, b, *, dim: (np.broadcast_shapes(a.shape, b.shape), a.dtype),
       grad_name="LinalgCrossBackward0", kind="linalg")
def cross_op(xp, a, b, *, dim):
    a, b = xp.broadcast_arrays(a, b)
    a0, a1, a2 = (xp.take(a, i, axis=dim) for i in range(3))
    b0, b1, b2 = (xp.take(b, i, axis=dim) for i in range(3))
    return xp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=dim)


cross_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@cross_op.defderivative
def _cross_derivative(ctx, grad, *, dim):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (cross_op(b.conj(), grad, dim=dim) if need_a else None,
            cross_op(grad, a.conj(), dim=dim) if need_b else None)


def _cross_impl(input, other, dim, name):
    from ._operands import broadcast_shapes

    if input._data.ndim != other._data.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input._data.shape, other._data.shape)
    d = wrap_dim(dim, len(shape))
    if input._data.shape[d] != 3 or other._data.shape[d] != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got "
                           f"{input._data.shape[d]} and {other._data.shape[d]}")
    _check_same_scalar(input, other)
    return cross_op(input, other, dim=d)


def cross(input, other, dim=None, *, out=None):
    """The 3-D cross product along ``dim`` (the first dim of size 3 when omitted).

    Example::

        >>> ember.cross(ember.tensor([1., 0., 0.]), ember.tensor([0., 1., 0.]), dim=0)
        tensor([0., 0., 1.])
    """
    if dim is None:
        from ._operands import broadcast_shapes

        shape = broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return write_out(_cross_impl(input, other, dim, "linalg.cross"), out, "cross")


def linalg_cross(input, other, *, dim=-1, out=None):
    """The 3-D cross product along ``dim`` (default -1), inputs broadcast.

    Example::

        >>> ember.linalg.cross(ember.tensor([1., 0., 0.]), ember.tensor([0., 1., 0.]))
        tensor([0., 0., 1.])
    """
    return write_out(_cross_impl(input, other, dim, "linalg.cross"), out, "linalg.cross")


# ================================================================ trace, diag, diag_embed


def trace(input):
    """The sum of the main diagonal of a 2-D tensor (integers sum as int64).

    Example::

        >>> ember.trace(ember.eye(3))
        tensor(3.)
    """
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{input._data.ndim}")
    _not_implemented(input, "trace")
    return input.diagonal().sum()


def _diag_embed_shape(shape, offset, dim1, dim2):
    n = shape[-1] + abs(offset)
    out = list(shape[:-1])
    lo, hi = sorted((dim1, dim2))
    out.insert(lo, n)
    out.insert(hi, n)
    return tuple(out)


@defop("diag_embed", meta=lambda a, *, offset, dim1, dim2: (
    _diag_embed_shape(a.shape, offset, dim1, dim2), a.dtype), save_inputs=False, kind="linalg")
def diag_embed_op(xp, a, *, offset, dim1, dim2):
    shape = _diag_embed_shape(a.shape, offset, dim1, dim2)
    out = xp.zeros(shape, a.dtype)
    # Put the diagonal dims last to write into them through a strided diagonal view.
    rest = [d for d in range(len(shape)) if d not in (dim1, dim2)]
    view = out.transpose(rest + [dim1, dim2])
    n = a.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    view[..., rows, cols] = a
    return out


@diag_embed_op.defderivative
def _diag_embed_derivative(ctx, grad, *, offset, dim1, dim2):
    return (grad.diagonal(offset, dim1, dim2),)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Batches of matrices whose ``offset`` diagonal (in dims ``dim1``, ``dim2``) holds the
    last dim of ``input``.

    Example::

        >>> ember.diag_embed(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    ndim = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diag_embed_op(input, offset=int(offset), dim1=d1, dim2=d2)


def diag(input, diagonal=0, *, out=None):
    """A square matrix with a 1-D ``input`` on its ``diagonal``, or the ``diagonal`` of a 2-D
    ``input`` as a new 1-D tensor.

    Example::

        >>> ember.diag(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    if input._data.ndim == 1:
        result = diag_embed(input, diagonal, 0, 1)
    elif input._data.ndim == 2:
        result = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input._data.ndim}D")
    return write_out(result, out, "diag")


# ================================================================ cdist


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise ``p``-norm distances between the rows of ``x1`` and of ``x2`` (batched).

    Example::

        >>> ember.cdist(ember.zeros(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist", None):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1._data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: "
                           f"{x1._data.ndim}D")
    if x2._data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: "
                           f"{x2._data.ndim}D")
    if x1._data.shape[-1] != x2._data.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1._data.shape[-1]} X2: {x2._data.shape[-1]}")
    for label, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {label} got: "
                               f"{_short(x)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _vector_norm(diff, float(p), (diff._data.ndim - 1,), False)


# ================================================================ norms


def _vector_norm(x, ord, dims, keepdim):
    from .reduce import norm_op

    return norm_op(x, p=float(ord), dims=tuple(dims), keepdim=keepdim)


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None).

    Example::

        >>> ember.linalg.vector_norm(ember.tensor([3., 4.]))
        tensor(5.)
    """
    _check_tensor(x, "linalg.vector_norm", "x")
    if dtype is not None:
        x = x.to(dt.to_dtype(dtype))
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_short(x)}")
    if isinstance(ord, str) or isinstance(ord, complex):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    ndim = x._data.ndim
    if dim is None:
        dims = tuple(range(ndim))
    else:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        dims = tuple(sorted(wrap_dim(int(d), ndim) for d in dims)) if ndim else ()
    ord = float(ord)
    if ord < 0 or ord == math.inf:
        reduced = [x._data.shape[d] for d in dims] if dims else list(x._data.shape)
        if any(s == 0 for s in reduced) or (x._data.size == 0 and not dims):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord:g} norm on an empty "
                               "tensor because the operation does not have an identity")
    return write_out(_vector_norm(x, ord, dims, keepdim), out, "linalg.vector_norm")


def _matrix_dims(A, dim, name):
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {list(dim)}")
    d0, d1 = wrap_dim(dim[0], A._data.ndim), wrap_dim(dim[1], A._data.ndim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """A matrix norm over the two dims ``dim``: ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``,
    ``-1``, ``2`` or ``-2``.

    Example::

        >>> ember.linalg.matrix_norm(ember.eye(3))
        tensor(1.7321)
    """
    _check_tensor(A, "linalg.matrix_norm", "A")
    if dtype is not None:
        A = A.to(dt.to_dtype(dtype))
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_short(A)}")
    d0, d1 = _matrix_dims(A, tuple(dim), "linalg.matrix_norm")
    if isinstance(ord, str):
        if ord == "fro":
            return write_out(_vector_norm(A, 2, tuple(sorted((d0, d1))), keepdim), out,
                             "linalg.matrix_norm")
        if ord == "nuc":
            from .reduce import nuclear_norm_op

            return write_out(nuclear_norm_op(A, dims=(d0, d1), keepdim=keepdim), out,
                             "linalg.matrix_norm")
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord not in (1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord:g} not supported.")
    if ord in (2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        s = linalg_svdvals(moved)
        if ord == 2 and s._data.shape[-1] == 0:  # no singular values: 0, as torch
            result = s.sum(-1)
        else:
            result = s.amax(-1) if ord == 2 else s.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                result = result.unsqueeze(d)
        return write_out(result, out, "linalg.matrix_norm")
    if abs(ord) == math.inf:
        d0, d1 = d1, d0
    inner = A.abs().sum(d0, keepdim=True)
    if ord > 0 and inner._data.shape[d1] == 0:  # the largest of no column sums: 0, as torch
        result = inner.sum(d1, keepdim=True)
    else:
        result = inner.amax(d1, keepdim=True) if ord > 0 else inner.amin(d1, keepdim=True)
    if not keepdim:
        result = result.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return write_out(result, out, "linalg.matrix_norm")


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """A vector or matrix norm: matrix norms for 2 dims (or 2-D input with ``ord`` set),
    vector norms otherwise.

    Example::

        >>> ember.linalg.norm(ember.tensor([3., 4.]))
        tensor(5.)
    """
    _check_tensor(A, "linalg.norm", "A")
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None
                                              and A._data.ndim == 2):
        return linalg_matrix_norm(A, "fro" if ord is None else ord, dim if dim else (-2, -1),
                                  keepdim, dtype=dtype, out=out)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A._data.ndim}D." if dim is None else
                           f"linalg.vector_norm: ord must be a number, got {ord}")
    if dim is None and ord is not None and A._data.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A._data.ndim}D.")
    return linalg_vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


# ================================================================ square-matrix checks


_LOW_KERNELS = {"linalg.det": "lu_cpu", "linalg.slogdet": "lu_cpu", "linalg.solve": "lu_cpu",
                "logdet": "lu_cpu", "linalg.qr": "geqrf_cpu", "linalg.cholesky": "cholesky_cpu",
                "cholesky": "cholesky_cpu", "linalg.svd": "linalg_svd_cpu",
                "linalg.eigh": "linalg_eigh_cpu", "linalg.eigvalsh": "linalg_eigh_cpu",
                "linalg.eig": "linalg_eig_cpu", "linalg.eigvals": "linalg_eig_cpu"}


def _check_float(A, name):
    if A._data.dtype in _LOW:
        if name in ("linalg.inv", "linalg.inv_ex"):
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_short(A)}")
        raise NotImplementedError(f'"{_LOW_KERNELS.get(name, name)}" not implemented for '
                                  f"'{_short(A)}'")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        if name in ("linalg.eigh", "linalg.eigvalsh"):
            raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{_short(A)}'")
        if name in ("linalg.eig", "linalg.eigvals"):
            raise RuntimeError(f"Unknown Complex ScalarType for {_short(A)}")
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_short(A)}")


def _check_square(A, name, arg="A"):
    _check_tensor(A, name, arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} matrices")
    _check_float(A, name)


def _check_matrix(A, name, arg="A"):
    _check_tensor(A, name, arg)
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    _check_float(A, name)


def _batch_prefix(index, batched):
    return f"(Batch element {index}): " if batched else ""


def _singular_error(xp, a, name):
    """torch's LinAlgError for an exactly singular matrix: which batch and which pivot."""
    host = a if xp is np else xp.asnumpy(a)
    flat = host.reshape((-1,) + host.shape[-2:])
    import scipy.linalg

    for index, matrix in enumerate(flat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu, _ = scipy.linalg.lu_factor(matrix, check_finite=False)
        zeros = np.nonzero(np.diagonal(lu) == 0)[0]
        if zeros.size:
            raise LinAlgError(f"{name}: {_batch_prefix(index, host.ndim > 2)}The diagonal "
                              f"element {zeros[0] + 1} is zero, the inversion could not be "
                              "completed because the input matrix is singular.")
    raise LinAlgError(f"{name}: The inversion could not be completed because the input matrix "
                      "is singular.")


def _compute(xp, a):
    """Half-precision inputs compute in float32 (LAPACK has no half)."""
    return a.astype(np.float32) if a.dtype in _LOW else a


# ================================================================ inverse


@defop("linalg_inv", meta=lambda a: (a.shape, a.dtype), save_inputs=False, save_output=True,
       grad_name="LinalgInvExBackward0", kind="linalg")
def inv_op(xp, a):
    if a.size == 0:
        return xp.empty(a.shape, a.dtype)
    try:
        with linalg_errors(xp):
            result = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        _singular_error(xp, a, "linalg.inv")
    return result.astype(a.dtype, copy=False)


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
              save_inputs=False, save_output=True, grad_name="LinalgInvExBackward0", kind="linalg")


inv_h_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@inv_h_op.defderivative
def _inv_h_derivative(ctx, grad):
    # Y = A^{-H}: dY = -Y dA^H Y, so grad_A = -Y G^H Y
    y = ctx.output
    return (-matmul_op(y, matmul_op(grad.mH, y)),)


def linalg_inv(A, *, out=None):
    """The inverse of a square matrix (or a batch); raises :class:`LinAlgError` if singular.

    Example::

        >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _check_square(A, "linalg.inv")
    return write_out(inv_op(A), out, "linalg.inv")


def inverse(input, *, out=None):
    """Same as :func:`ember.linalg.inv`.

    Example::

        >>> ember.inverse(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return linalg_inv(input, out=out)


def linalg_inv_ex(A, *, check_errors=False, out=None):
    """The inverse and an ``info`` tensor (0 where the inversion succeeded).

    Example::

        >>> ember.linalg.inv_ex(ember.eye(2)).info
        tensor(0, dtype=ember.int32)
    """
    _check_square(A, "linalg.inv_ex")
    batch = A._data.shape[:-2]
    from .creation import zeros

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
    import scipy.linalg

    host = A.detach().cpu()._data
    flat = host.reshape((-1,) + host.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    result = np.empty_like(flat)
    for index, matrix in enumerate(flat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu, _ = scipy.linalg.lu_factor(matrix, check_finite=False)
        zeros = np.nonzero(np.diagonal(lu) == 0)[0]
        if zeros.size:
            info[index] = zeros[0] + 1
            result[index] = np.nan
        else:
            result[index] = np.linalg.inv(matrix)
    from .._tensor import tensor

    out = tensor(result.reshape(host.shape), device=A._device)
    return out, tensor(info.reshape(host.shape[:-2]), device=A._device)


# ================================================================ determinants


@defop("linalg_det", meta=lambda a: (a.shape[:-2], a.dtype), grad_name="LinalgDetBackward0",
       save_output=True, kind="linalg")
def det_op(xp, a):
    return xp.asarray(xp.linalg.det(a)).astype(a.dtype, copy=False)


@det_op.defderivative
def _det_derivative(ctx, grad):
    (a,) = ctx.inputs
    # d det(A) = tr(adj(A) dA): grad_A = grad * adj(A)^H, which stays finite (and nonzero for
    # rank n-1) at singular matrices. As torch: where det is not negligible, adj(A) =
    # det(A) A^{-1}; elsewhere, from the SVD A = U S Vh, adj(A)^H = conj(det U det Vh)
    # U diag(prod_{j != i} s_j) Vh. Both are written with ember ops (double backward).
    singular = _singular_mask(a, ctx.output)
    if singular is None or not singular.any():
        return (_det_grad_invertible(a, ctx.output, grad),)
    if singular.all():
        return (_det_grad_singular(a, grad),)
    from .index import index_select
    from .shape import cat

    n = a._data.shape[-1]
    flat_a = a.reshape(-1, n, n)
    flat_d, flat_g = ctx.output.reshape(-1), grad.expand(ctx.output.shape).reshape(-1)
    bad = np.flatnonzero(singular)
    good = np.flatnonzero(~singular)
    picks = [_index_on(i, a) for i in (good, bad)]
    parts = [_det_grad_invertible(index_select(flat_a, 0, picks[0]),
                                  index_select(flat_d, 0, picks[0]),
                                  index_select(flat_g, 0, picks[0])),
             _det_grad_singular(index_select(flat_a, 0, picks[1]),
                                index_select(flat_g, 0, picks[1]))]
    order = np.argsort(np.concatenate([good, bad]), kind="stable")
    back = _index_on(order, a)
    return (index_select(cat(parts, 0), 0, back).reshape(a.shape),)


def _index_on(indices, like):
    from .._tensor import tensor

    return tensor(np.asarray(indices, np.int64), device=like._device)


def _singular_mask(a, det):
    """Which matrices of the (flattened) batch torch treats as singular in det's backward:
    ``|det| <= eps * ||A||_2``; ``None`` on the meta device or for empty matrices."""
    if a._device is META or a._data.shape[-1] == 0 or a._data.size == 0:
        return None
    xp = a._device.xp
    data = a._data
    if data.dtype in _LOW:
        data = data.astype(np.float32)
    n = data.shape[-1]
    flat = data.reshape(-1, n, n)
    finite = xp.isfinite(flat).all(axis=(-2, -1))
    # non-finite matrices take the inverse formula (NaN/inf as torch); SVD would not converge
    norm2 = xp.linalg.norm(xp.where(finite[:, None, None], flat, 0), ord=2, axis=(-2, -1))
    eps = np.finfo(_real_np(data.dtype)).eps
    mask = ~(xp.abs(det._data.reshape(-1)) > eps * norm2) & finite  # zero matrix: singular
    return mask if xp is np else xp.asnumpy(mask)


def _det_grad_invertible(a, det, grad):
    scale = (grad * det.conj()).unsqueeze(-1).unsqueeze(-1)
    return scale * inv_h_op(a)


def _det_grad_singular(a, grad):
    from .reduce import _exclusive_cumprod

    u, s, vh = svd_op(a, full_matrices=True)
    alpha = (det_op(u) * det_op(vh)).conj()
    others = _exclusive_cumprod(s, -1 % s.ndim, False) * _exclusive_cumprod(s, -1 % s.ndim,
                                                                              True)
    weights = (grad * alpha).unsqueeze(-1) * others.to(a.dtype)
    return matmul_op(u * weights.unsqueeze(-2), vh)


def linalg_det(A, *, out=None):
    """The determinant of a square matrix (or a batch).

    Example::

        >>> ember.linalg.det(ember.tensor([[2., 1.], [1., 3.]]))
        tensor(5.)
    """
    _check_square(A, "linalg.det")
    return write_out(det_op(A), out, "linalg.det")


def det(input):
    """Same as :func:`ember.linalg.det`.

    Example::

        >>> ember.det(ember.eye(3))
        tensor(1.)
    """
    return linalg_det(input)


def _slogdet_meta(a):
    return ((a.shape[:-2], a.dtype), (a.shape[:-2], _real_np(a.dtype)))


@defop("linalg_slogdet", meta=_slogdet_meta, multi_output=True, differentiable_outputs=(1,),
       grad_name="LinalgSlogdetBackward0", kind="linalg")
def slogdet_op(xp, a):
    sign, logabs = xp.linalg.slogdet(a)
    return (xp.asarray(sign).astype(a.dtype, copy=False),
            xp.asarray(logabs).astype(_real_np(a.dtype), copy=False))


@slogdet_op.defderivative
def _slogdet_derivative(ctx, grad_sign, grad_logabs):
    (a,) = ctx.inputs
    # d log|det A| = Re tr(A^{-1} dA): grad_A = grad * A^{-H}
    g = grad_logabs.unsqueeze(-1).unsqueeze(-1)
    if a.dtype.is_complex:
        g = g.to(a.dtype)
    # singular A: the LU solve divides by a zero pivot, giving inf/NaN as torch's does
    return (g * inv_h_op(a),)


def linalg_slogdet(A, *, out=None):
    """The sign (or phase) and the log of the absolute value of the determinant.

    Example::

        >>> ember.linalg.slogdet(ember.tensor([[-2., 0.], [0., 1.]]))
        ember.return_types.linalg_slogdet(
        sign=tensor(-1.),
        logabsdet=tensor(0.6931))
    """
    _check_square(A, "linalg.slogdet")
    sign, logabs = slogdet_op(A)
    if out is not None:
        write_out(sign, out[0], "linalg.slogdet")
        write_out(logabs, out[1], "linalg.slogdet")
        return SlogdetResult(*out)
    return SlogdetResult(sign, logabs)


def slogdet(input):
    """Same as :func:`ember.linalg.slogdet`, as a ``slogdet`` named tuple.

    Example::

        >>> ember.slogdet(ember.eye(2)).logabsdet
        tensor(0.)
    """
    return PlainSlogdet(*linalg_slogdet(input))


def logdet(input):
    """The log of the determinant (NaN where it is negative, -inf where zero).

    Example::

        >>> ember.logdet(ember.tensor([[2., 0.], [0., 3.]]))
        tensor(1.7918)
    """
    _check_square(input, "logdet")
    sign, logabs = slogdet_op(input)
    if input.dtype.is_complex:
        return logabs + sign.log()
    from .pointwise import where

    return where(sign < 0, float("nan"), logabs)


# ================================================================ solve


def _solve_is_vector(A, B):
    """Whether ``B`` is a (batch of) vector(s) for ``A``: torch's rule for linalg.solve."""
    return B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1
                                 and B._data.shape == A._data.shape[:-1])


def _solve_meta(a, b):
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return tuple(batch) + b.shape[-2:], a.dtype


@defop("linalg_solve", meta=_solve_meta, save_output=True, grad_name="LinalgSolveExBackward0",
       kind="linalg")
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


@solve_op.defderivative
def _solve_derivative(ctx, grad):
    a, _ = ctx.inputs
    x = ctx.output
    grad_b = solve_op(a.mH, grad)
    grad_a = -matmul_op(grad_b, x.mH) if ctx.needs_input_grad[0] else None
    return grad_a, grad_b if ctx.needs_input_grad[1] else None


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
    from ._operands import broadcast_shapes

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
    from .creation import zeros

    result = linalg_solve(A, B, left=left)
    info = zeros(A._data.shape[:-2], dtype=dt.int32, device=A._device)
    return SolveExResult(result, info)


# ================================================================ cholesky


@defop("linalg_cholesky", meta=lambda a: (a.shape, a.dtype), save_inputs=False,
       save_output=True, grad_name="LinalgCholeskyExBackward0", kind="linalg")
def cholesky_op(xp, a):
    if a.size == 0:
        return xp.empty(a.shape, a.dtype)
    try:
        with linalg_errors(xp):
            return xp.linalg.cholesky(a).astype(a.dtype, copy=False)
    except np.linalg.LinAlgError:
        _not_pd_error(xp, a, "linalg.cholesky")


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
        scipy.linalg.cholesky(matrix, lower=True, check_finite=False)
    except np.linalg.LinAlgError as e:
        digits = "".join(itertools.takewhile(str.isdigit, str(e).strip()))
        return int(digits) if digits else 1
    return 0


@cholesky_op.defderivative
def _cholesky_derivative(ctx, grad):
    L = ctx.output
    phi = matmul_op(L.mH, grad).tril()
    phi = 0.5 * (phi + phi.tril(-1).mH)
    inv_l = linalg_inv(L)
    return (matmul_op(inv_l.mH, matmul_op(phi, inv_l)),)


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


def cholesky(input, upper=False, *, out=None):
    """Same as :func:`ember.linalg.cholesky` (``upper`` positional, as torch.cholesky).

    Example::

        >>> ember.cholesky(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_square(input, "cholesky")
    result = cholesky_op(input.mH).mH if upper else cholesky_op(input)
    return write_out(result, out, "cholesky")


def linalg_cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """The Cholesky factor and an ``info`` tensor (the order of the first failing minor, or
    0).

    Example::

        >>> ember.linalg.cholesky_ex(ember.eye(2)).info
        tensor(0, dtype=ember.int32)
    """
    from .creation import zeros

    try:
        L = linalg_cholesky(A, upper=upper)
        info = zeros(A._data.shape[:-2], dtype=dt.int32, device=A._device)
    except LinAlgError:
        if check_errors:
            raise
        host = A.detach().cpu()._data
        flat = host.reshape((-1,) + host.shape[-2:])
        codes = np.array([_first_bad_minor(m if not upper else m.conj().T) for m in flat],
                         np.int32)
        factors = np.zeros_like(flat)
        for i, m in enumerate(flat):
            src = m.conj().T if upper else m
            if codes[i] == 0:
                factors[i] = np.linalg.cholesky(src)
            else:
                factors[i] = np.nan
            if upper:
                factors[i] = factors[i].conj().T
        from .._tensor import tensor

        L = tensor(factors.reshape(host.shape), device=A._device)
        info = tensor(codes.reshape(host.shape[:-2]), device=A._device)
    return CholeskyExResult(L, info)


def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of ``A`` from its Cholesky factor (``input`` = L, or U with ``upper``).

    Example::

        >>> ember.cholesky_inverse(ember.tensor([[2., 0.], [0., 1.]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    a = matmul(input.mH, input) if upper else matmul(input, input.mH)
    return write_out(linalg_inv(a), out, "cholesky_inverse")


def cholesky_solve(B, L, upper=False, *, out=None):
    """The solution of ``A X = B`` given the Cholesky factor of ``A``.

    Example::

        >>> ember.cholesky_solve(ember.ones(2, 1), ember.eye(2))
        tensor([[1.],
                [1.]])
    """
    a = matmul(L.mH, L) if upper else matmul(L, L.mH)
    return write_out(linalg_solve(a, B), out, "cholesky_solve")


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
       grad_name="LinalgQrBackward0", kind="linalg")
def qr_op(xp, a, *, mode):
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
        from .shape import cat

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
       grad_name="LinalgEighBackward0", kind="linalg")
def eigh_op(xp, a, *, UPLO):
    if a.size == 0:
        return xp.zeros(a.shape[:-1], _real_np(a.dtype)), xp.zeros(a.shape, a.dtype)
    w, v = xp.linalg.eigh(a, UPLO=UPLO)
    return w.astype(_real_np(a.dtype), copy=False), v.astype(a.dtype, copy=False)


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
        from .creation import eye
        n = lam._data.shape[-1]
        e = e + eye(n, dtype=e.dtype, device=e._device)
        off = skew / e.to(v.dtype)
        off = off - diag_embed(off.diagonal(0, -2, -1))
        inner = off + diag_embed(grad_l.to(v.dtype))
    return (matmul_op(v, matmul_op(inner, v.mH)),)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


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
       grad_name="LinalgEigBackward0", kind="linalg")
def eig_op(xp, a):
    c = dt.from_numpy_dtype(a.dtype).to_complex().np
    if a.size == 0:
        return xp.zeros(a.shape[:-1], c), xp.zeros(a.shape, c)
    w, v = _host_linalg(xp, "eig", a)
    # LAPACK normalises each eigenvector to norm 1 with a real largest component; torch does
    # the same, so values agree up to LAPACK's own choices.
    return w.astype(c, copy=False), v.astype(c, copy=False)


eig_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@eig_op.defderivative
def _eig_derivative(ctx, grad_l, grad_v):
    lam, v = ctx.output
    vhgv = matmul_op(v.mH, grad_v)
    diag_re = vhgv.diagonal(0, -2, -1).real.to(v.dtype)
    vhgv = vhgv - matmul_op(v.mH, v * diag_re.unsqueeze(-2))
    e = (lam.unsqueeze(-2) - lam.unsqueeze(-1)).conj()
    from .creation import eye
    n = lam._data.shape[-1]
    e = e + eye(n, dtype=e.dtype, device=e._device)
    inner = vhgv / e
    inner = inner - diag_embed(inner.diagonal(0, -2, -1)) + diag_embed(grad_l)
    return (solve_op(v.mH, matmul_op(inner, v.mH)),)


def _eig_jvp(p, t, y):
    """The tangents of ``A = V diag(L) V^-1``: with ``dP = V^-1 dA V``, ``dL = diag(dP)``
    and ``dV = V (dP / (L_j - L_i), zero diagonal)`` less ``V Re(diag(V^H dV))``, which keeps
    each eigenvector's unit norm (torch's convention)."""
    from .creation import eye

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
       grad_name="LinalgSvdBackward0", kind="linalg")
def svd_op(xp, a, *, full_matrices):
    if a.size == 0:
        (su, _), (ss, sd), (sv, _) = _svd_meta(a, full_matrices=full_matrices)
        u = xp.zeros(su, a.dtype)
        vh = xp.zeros(sv, a.dtype)
        if full_matrices:
            u[...] = xp.eye(su[-1], dtype=a.dtype)
            vh[...] = xp.eye(sv[-1], dtype=a.dtype)
        return u, xp.zeros(ss, sd), vh
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return (u.astype(a.dtype, copy=False), s.astype(_real_np(a.dtype), copy=False),
            vh.astype(a.dtype, copy=False))


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
    from .creation import eye

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


def linalg_svdvals(A, *, driver=None, out=None):
    """The singular values, descending.

    Example::

        >>> ember.linalg.svdvals(ember.tensor([[3., 0.], [0., 4.]]))
        tensor([4., 3.])
    """
    _check_matrix(A, "linalg.svd")
    return write_out(svd_op(A, full_matrices=False)[1], out, "linalg.svdvals")


def svd(input, some=True, compute_uv=True, *, out=None):
    """The SVD as torch.svd: ``(U, S, V)`` with V (not Vh), reduced when ``some``.

    Example::

        >>> ember.svd(ember.eye(2)).S
        tensor([1., 1.])
    """
    u, s, vh = linalg_svd(input, full_matrices=not some)
    result = _named_tuple_svd(u, s, vh.mH)
    if not compute_uv:
        from .creation import zeros_like

        result = _named_tuple_svd(zeros_like(u), s, zeros_like(vh.mH))
    return result


_TorchSVD = _return_types.svd


def _named_tuple_svd(u, s, v):
    return _TorchSVD(u, s, v)


# ================================================================ pinv, rank, lstsq


def _tolerance(s, atol, rtol, A, hermitian=False):
    """torch's cutoff: max(atol, rtol * largest singular value)."""
    smax = s.amax(-1, keepdim=True) if s._data.shape[-1] else s.sum(-1, keepdim=True)
    if rtol is None:
        eps = np.finfo(_real_np(A._data.dtype)).eps
        default = eps * max(A._data.shape[-2:])
        if isinstance(atol, Tensor):  # per matrix: no relative cutoff where atol > 0
            from .pointwise import where

            rtol = where(atol > 0, atol * 0, atol * 0 + default)
        else:
            rtol = 0.0 if (atol is not None and atol > 0) else default
    tol = smax * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)  # one per matrix
    if atol is not None:
        from .pointwise import maximum

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


pinv_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    from ..autograd import forward_ad
    from ..autograd.grad_mode import no_grad, state

    differentiable = (A.requires_grad and state.enabled) or forward_ad.is_dual(A)
    if not differentiable:
        return write_out(_pinv_value(A, atol, rtol, hermitian), out, "linalg.pinv")
    with no_grad():
        value = _pinv_value(A.detach(), atol, rtol, hermitian)
    return write_out(pinv_op(A, value), out, "linalg.pinv")


def _pinv_value(A, atol, rtol, hermitian):
    """The pseudo-inverse through the eigendecomposition (``hermitian``: of the lower
    triangle, as torch) or the SVD, singular values below the cutoff counted as zero."""
    from .pointwise import where

    if hermitian:
        w, v = linalg_eigh(A)
        tol = _tolerance(w.abs(), atol, rtol, A)
        w_inv = where(w.abs() > tol, 1 / where(w.abs() > tol, w, w * 0 + 1), w * 0)
        return matmul(v * w_inv.to(A.dtype).unsqueeze(-2), v.mH)
    u, s, vh = linalg_svd(A, full_matrices=False)
    tol = _tolerance(s, atol, rtol, A)
    s_inv = where(s > tol, 1 / where(s > tol, s, s * 0 + 1), s * 0)
    return matmul(vh.mH * s_inv.to(A.dtype).unsqueeze(-2), u.mH)


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse (``rcond`` relative cutoff), as torch.pinverse.

    Example::

        >>> ember.pinverse(ember.eye(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    return linalg_pinv(input, rtol=rcond)


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
    from ..autograd.grad_mode import no_grad

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
              differentiable_outputs=(0,), grad_name="LinalgLstsqBackward0", kind="linalg")


lstsq_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    from .creation import zeros

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


# ================================================================ powers and exponentials


def linalg_matrix_power(A, n, *, out=None):
    """``A`` to the integer power ``n`` (negative powers invert first) by repeated squaring.

    Example::

        >>> ember.linalg.matrix_power(ember.tensor([[1., 1.], [0., 1.]]), 3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    _check_tensor(A, "linalg.matrix_power", "A")
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {A._data.shape[-2]} by {A._data.shape[-1]} matrices")
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    n = int(n)
    if n == 0:
        from .creation import eye

        size = A._data.shape[-1]
        # A * 0 keeps the result connected to A (a zero gradient), as in torch.
        result = A * 0 + eye(size, dtype=A.dtype, device=A._device)
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


matrix_exp_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@matrix_exp_op.defderivative
def _matrix_exp_derivative(ctx, grad):
    # The Fréchet derivative of exp at A^H applied to grad is the top-right block of
    # exp([[A^H, G], [0, A^H]]).
    (a,) = ctx.inputs
    from .creation import zeros_like
    from .shape import cat

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
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they "
                           f"are {A._data.shape[-2]} by {A._data.shape[-1]} matrices")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {_short(A)}")
    return matrix_exp_op(A)


def matrix_exp(A):
    """Same as :func:`ember.linalg.matrix_exp`.

    Example::

        >>> ember.matrix_exp(ember.zeros(1, 1))
        tensor([[1.]])
    """
    return linalg_matrix_exp(A)


# ================================================================ vecdot, multi_dot, householder


def linalg_vecdot(x, y, *, dim=-1, out=None):
    """``sum(conj(x) * y, dim)``, broadcast.

    Example::

        >>> ember.linalg.vecdot(ember.tensor([1., 2.]), ember.tensor([3., 4.]))
        tensor(11.)
    """
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_short(x)} and y of type {_short(y)} instead")
    a = x.conj() if x.dtype.is_complex else x
    return write_out((a * y).sum(dim), out, "linalg.vecdot")


def linalg_multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order; the first and last may be
    1-D.

    Example::

        >>> ember.linalg.multi_dot([ember.ones(3), ember.ones(3, 4), ember.ones(4)])
        tensor(12.)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_1d = tensors[0]._data.ndim == 1
    last_1d = tensors[-1]._data.ndim == 1
    mats = list(tensors)
    if first_1d:
        mats[0] = mats[0].unsqueeze(0)
    if last_1d:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i, m in enumerate(mats):
        if m._data.ndim != 2:
            where_ = "first" if i == 0 else "last" if i == len(mats) - 1 else None
            if where_:
                raise RuntimeError(f"multi_dot(): the {where_} tensor must be 1D or 2D but got "
                                   f"{tensors[i]._data.ndim}D")
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got "
                               f"{tensors[i]._data.ndim}D")
        if m._data.dtype != mats[0]._data.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {mats[0].dtype} and tensor {i} "
                               f"{m.dtype}".replace("ember.", "torch."))
    for i in range(len(mats) - 1):
        if mats[i]._data.shape[1] != mats[i + 1]._data.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(mats[i]._data.shape)} and "
                               f"{list(mats[i + 1]._data.shape)} cannot be multiplied")
    result = _chain(mats)
    if first_1d:
        result = result.squeeze(0)
    if last_1d:
        result = result.squeeze(-1)
    return write_out(result, out, "linalg.multi_dot")


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
    _check_float(A, "torch.linalg.householder_product")
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
    from .creation import eye

    ident = eye(m, dtype=A.dtype, device=A._device)
    strict = A.tril(-1) + ident[:, :n]  # columns v_i: 1 on the diagonal, zero above
    q = ident[:, :n].expand(A._data.shape[:-2] + (m, n))
    for i in reversed(range(k)):
        v = strict[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        q = q - matmul(v * t, matmul(v.mH, q))
    return write_out(q, out, "linalg.householder_product")


# ================================================================ methods and dunders


for _name in ("matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
              "addmv", "addr", "addbmm", "baddbmm", "kron", "cross", "trace", "diag",
              "diag_embed", "cholesky", "det", "logdet", "slogdet", "inverse", "pinverse",
              "matrix_power", "matrix_exp", "cholesky_inverse", "cholesky_solve"):
    _method(_name, globals()[_name])
for _name in ("addmm", "addmv", "addr", "addbmm", "baddbmm"):
    _method(_name + "_", (lambda fn: lambda self, *a, **k: inplace(fn, self, *a, **k))(
        globals()[_name]))
Tensor.tensordot = lambda self, other, dims=2: tensordot(self, other, dims)
Tensor.svd = svd
Tensor.__matmul__ = operator_method(matmul, "__matmul__")
Tensor.__rmatmul__ = operator_method(_rmatmul, "__rmatmul__")
Tensor.__imatmul__ = operator_method(_imatmul, "__imatmul__")
del _name


def diagonal_(A, *, offset=0, dim1=-2, dim2=-1):
    """``torch.linalg.diagonal``: the diagonal of the last two dims by default (a view).

    Example::

        >>> ember.linalg.diagonal(ember.eye(2))
        tensor([1., 1.])
    """
    return A.diagonal(offset, dim1, dim2)


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
PlainQRResult = _return_types.qr


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
            getrf, = scipy.linalg.get_lapack_funcs(("getrf",), (matrix,))
            lu[index], pivots[index], info[index] = getrf(matrix)
        pivots += 1  # SciPy's getrf gives 0-based pivots; LAPACK's (and torch's) are 1-based
        return lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (k,)), \
            info.reshape(a.shape[:-2])
    import cupyx.scipy.linalg  # pragma: no cover - GPU only

    for index in range(flat.shape[0]):  # pragma: no cover - GPU only
        lu[index], piv = cupyx.scipy.linalg.lu_factor(flat[index], check_finite=False)
        pivots[index] = piv + 1
    return lu.reshape(a.shape), pivots.reshape(a.shape[:-2] + (k,)), \
        _first_zero_pivot(xp, lu).reshape(a.shape[:-2])  # pragma: no cover - GPU only


lu_factor_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    from .shape import cat

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
    from .creation import eye

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


_permutation_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


_permutation_op.opt_out("derivative", "an index result has no gradient")


def _permutation(pivots, rows):
    return _permutation_op(pivots, rows=rows)


def _inverse_permutation(perm):
    return perm.argsort(-1)


def _permute_rows(x, perm):
    """``x[..., perm, :]`` with the batch dims of ``x`` and ``perm`` broadcast."""
    from ._operands import broadcast_shapes

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
        from .creation import empty

        P = empty(0, dtype=A.dtype, device=A._device)
    return _write_tuple(LUResult(P, lower, upper), out, "linalg.lu", LUResult)


def _permutation_matrix(perm, dtype):
    """``P`` with ``P[perm[j], j] = 1``, so that ``A = P (A[perm])``."""
    from .creation import arange

    rows = perm._data.shape[-1]
    ids = arange(rows, device=perm._device).unsqueeze(-1)
    return (ids == perm.unsqueeze(-2)).to(dtype)


def _check_pivots(LU, pivots, name, message):
    if pivots._data.dtype != np.int32:
        raise RuntimeError(message)
    m = LU._data.shape[-2]
    if pivots._data.size and bool(((pivots < 1) | (pivots > m)).any()):
        raise RuntimeError(f"pivots passed to {name} must be between 1 and LU.size(-2) "
                           "inclusive.Did you properly pass the result of lu_factor?")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` from the packed factors of :func:`ember.linalg.lu_factor`; a part not
    asked for (``unpack_data``/``unpack_pivots`` False) comes back empty.

    Example::

        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[0., 1.], [2., 3.]]))
        >>> ember.lu_unpack(LU, pivots).U
        tensor([[2., 3.],
                [0., 1.]])
    """
    _check_tensor(LU_data, "lu_unpack", "LU_data")
    if LU_data._data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(LU_data._data.shape)} instead")
    _check_pivots(LU_data, LU_pivots, "lu_unpack",
                  "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                  "torch.int32 dtype.\nNote: this function is intended to be used with the "
                  "output produced by torch.linalg.lu_factor")
    from .creation import empty

    nothing = empty(0, dtype=LU_data.dtype, device=LU_data._device)
    lower, upper = _unpack_factors(LU_data) if unpack_data else (nothing, nothing)
    P = nothing
    if unpack_pivots:
        P = _permutation_matrix(_permutation(LU_pivots, LU_data._data.shape[-2]), LU_data.dtype)
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
    from ._operands import broadcast_shapes

    broadcast_shapes(A._data.shape[:-2], B._data.shape[:-2])


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
    if LU._data.ndim < 2:
        raise RuntimeError(f"torch.{name}: The input tensor A must have at least 2 dimensions.")
    if LU._data.shape[-1] != LU._data.shape[-2]:
        raise RuntimeError(f"torch.{name}: A must be batches of square matrices, but they are "
                           f"{LU._data.shape[-2]} by {LU._data.shape[-1]} matrices")
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
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} matrices")
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
    from ._operands import broadcast_shapes

    batch = tuple(broadcast_shapes(b._data.shape[:-2], A._data.shape[:-2]))
    coefficient = A.mT if transpose else A
    solution = solve_triangular_op(coefficient, b, upper=bool(upper) != bool(transpose),
                                   unitriangular=bool(unitriangular))
    result = TriangularSolveResult(solution, A.expand(batch + A._data.shape[-2:]).clone())
    return _write_tuple(result, out, "triangular_solve", TriangularSolveResult)


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
        factor, = scipy.linalg.get_lapack_funcs((kind,), (matrix,))
        packed, pivots[index], info[index] = factor(matrix, lower=1)
        ld[index] = np.tril(packed)
    return ld.reshape(a.shape), pivots.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


ldl_factor_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} matrices")
    if A._data.dtype in _LOW or not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_short(A)}")
    result = LDLFactorExResult(*_on_host(ldl_factor_op, A._device, A, hermitian=bool(hermitian)))
    if check_errors:
        codes = result.info.cpu()._data.reshape(-1)
        if codes.any():
            index = int(np.flatnonzero(codes)[0])
            code = int(codes[index])
            # torch reports this case as an internal error ("Unknown error code"); we say what
            # LAPACK found
            raise LinAlgError(f"{name}: {_batch_prefix(index, A._data.ndim > 2)}D[{code},{code}]"
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


ldl_solve_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


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
    if LD._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    if LD._data.shape[-1] != LD._data.shape[-2]:
        raise RuntimeError(f"{name}: LD must be batches of square matrices, but they are "
                           f"{LD._data.shape[-2]} by {LD._data.shape[-1]} matrices")
    _check_solve_shapes(LD, B, True, name, "LD")
    if LD._data.dtype != B._data.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but got LD with "
                           f"dtype {_short(LD)} and B with dtype {_short(B)} instead")
    if pivots._data.dtype != np.int32:
        raise RuntimeError(f"{name}: Expected pivots to be integers. Got {_short(pivots)}")
    result = _on_host(ldl_solve_op, LD._device, LD, pivots, B, hermitian=bool(hermitian))
    return write_out(result, out, "linalg.ldl_solve")


# ================================================================ cond, tensorinv, tensorsolve


_COND_NORMS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def _ord_text(p):
    if isinstance(p, float) and math.isinf(p):
        return "inf" if p > 0 else "-inf"
    if isinstance(p, float) and p.is_integer():
        return str(int(p))
    return str(p)


def linalg_cond(A, p=None, *, out=None):
    """The condition number of ``A`` in the norm ``p``: the ratio of the extreme singular
    values for ``p`` in (None, 2, -2), else ``norm(A, p) * norm(inv(A), p)`` (square ``A``;
    inf where ``A`` is singular). Real-valued.

    Example::

        >>> ember.linalg.cond(ember.tensor([[1., 0.], [0., 4.]]))
        tensor(4.)
    """
    _check_tensor(A, "linalg.cond", "A")
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        if A._data.ndim < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        s = linalg_svdvals(A)
        if s._data.shape[-1] == 0:
            return write_out(s.sum(-1), out, "linalg.cond")
        ratio = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
        return write_out(ratio, out, "linalg.cond")
    name = f"linalg.cond(ord={_ord_text(p)})"
    if not isinstance(p, str) and p not in _COND_NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {_ord_text(p)}")
    if A._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._data.shape[-2]} by {A._data.shape[-1]} matrices")
    _check_float(A, "linalg.inv")
    if A._data.size == 0:
        real = dt.from_numpy_dtype(_real_np(A._data.dtype))
        from .creation import zeros

        return write_out(zeros(A._data.shape[:-2], dtype=real, device=A._device), out,
                         "linalg.cond")
    if p == "nuc":  # from the singular values: sum(s) * sum(1 / s), as torch
        s = linalg_svdvals(A)
        return write_out(s.sum(-1) * (1 / s).sum(-1), out, "linalg.cond")
    inverse_, info = linalg_inv_ex(A)
    from .pointwise import where

    singular = info > 0
    # singular matrices get inf; their NaN inverse must not reach the norm (nor its SVD)
    inverse_ = where(singular.unsqueeze(-1).unsqueeze(-1), 0.0, inverse_)
    product = linalg_matrix_norm(A, p) * linalg_matrix_norm(inverse_, p)
    return write_out(where(singular, math.inf, product), out, "linalg.cond")


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


# ================================================================ Vandermonde matrices


def _powers(x, count):
    """``x ** 0, ..., x ** (count - 1)`` along a new last dim, as running products (ints and
    bools become int64, as torch's cumprod)."""
    from .creation import ones_like
    from .reduce import cumprod
    from .shape import cat

    column = x.unsqueeze(-1)
    factors = cat([ones_like(column), column.expand(x._data.shape + (count - 1,))], -1)
    return cumprod(factors, -1)


def linalg_vander(x, *, N=None):
    """The Vandermonde matrix of the last dim of ``x``: ``x ** 0, ..., x ** (N - 1)`` along a
    new last dim (``N`` defaults to ``x.shape[-1]``, and must be greater than 1).

    Example::

        >>> ember.linalg.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [1, 2, 4],
                [1, 3, 9]])
    """
    _check_tensor(x, "linalg.vander", "x")
    if x._data.ndim < 1:
        if N is None:
            raise RuntimeError("N must be greater than 1.")
        x = x.reshape(1)  # a 0-dim x is one point, as in torch
    if x.dtype in (dt.bool, dt.float16, dt.bfloat16):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {_short(x)}")
    count = x._data.shape[-1] if N is None else int(N)
    if count <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _powers(x, count)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D ``x``: columns ``x ** (N - 1), ..., x ** 0`` (the
    other way round with ``increasing``).

    Example::

        >>> ember.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    _check_tensor(x, "vander", "x")
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    count = x._data.shape[0] if N is None else int(N)
    if count < 0:
        raise RuntimeError("N must be non-negative.")
    if count == 0:
        from .creation import empty

        dtype = dt.int64 if x.dtype.category <= dt._INT else x.dtype
        return empty((x._data.shape[0], 0), dtype=dtype, device=x._device)
    result = _powers(x, count)
    return result if increasing else result.flip(-1)


# ================================================================ randomised low-rank SVD


def _approximate_basis(A, q, niter, M=None):
    """An orthonormal ``Q`` (m x q) whose range approximates that of ``A - M``: a random
    projection refined by ``niter`` power iterations (Halko et al. 2009, algorithm 4.4)."""
    from .random import randn

    dtype = A.dtype if (A.dtype.is_floating_point or A.dtype.is_complex) else dt.float32

    def times(left, right, left_shift=None):
        product = matmul(left, right)
        return product if left_shift is None else product - matmul(left_shift, right)

    projection = randn(A._data.shape[-1], q, dtype=dtype, device=A._device)
    Q = linalg_qr(times(A, projection, M)).Q
    for _ in range(niter):
        Q = linalg_qr(times(A.mH, Q, None if M is None else M.mH)).Q
        Q = linalg_qr(times(A, Q, M)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """An approximate rank-``q`` SVD ``(U, S, V)`` of ``A - M`` by random projection (Halko et
    al. 2009, algorithm 5.1), with ``niter`` subspace iterations; exact when the rank of
    ``A - M`` is at most ``q``.

    Example::

        >>> A = ember.ones(5, 1) @ ember.ones(1, 4)
        >>> U, S, V = ember.svd_lowrank(A, q=1)
        >>> round(float(S[0]), 4)
        4.4721
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A._data.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    tall = m >= n
    if not tall:  # work on A^H, which is tall
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mH, A)
    if M is not None:
        B = B - matmul(Q.mH, M)
    U, S, Vh = linalg_svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mH
    return (U, S, V) if tall else (V, S, U)


def pca_lowrank(A, q=None, center=True, niter=2):
    """Principal components of ``A`` by :func:`svd_lowrank` of the centred matrix (column
    means removed when ``center``): ``(U, S, V)``; ``q`` defaults to ``min(6, m, n)``.

    Example::

        >>> U, S, V = ember.pca_lowrank(ember.tensor([[1., 2.], [3., 4.], [5., 6.]]), q=1)
        >>> round(float(S[0]), 4)
        4.0
    """
    m, n = A._data.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A, q, niter=niter)


for _name in ("lu", "lu_solve", "qr", "triangular_solve"):
    _method(_name, globals()[_name])
del _name


# ================================================================ geqrf, orgqr, ormqr, lobpcg
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
        factor, = scipy.linalg.get_lapack_funcs(("geqrf",), (matrix,))
        packed[index], tau[index], _, _ = factor(matrix)
    return packed.reshape(a.shape), tau.reshape(a.shape[:-2] + (min(m, n),))


geqrf_op.opt_out("batch", "no batched rule yet: vmap runs it element by element")


@geqrf_op.defderivative
def _geqrf_derivative(ctx, *grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


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
    from .creation import eye

    return input.tril(-1) + eye(m, n, dtype=input.dtype, device=input._device)


def _apply_reflector(c, v, t, left):
    """``H c`` (``left``) or ``c H`` with ``H = I - t v v^H``; ``v`` is a column, ``t`` a
    ``(..., 1, 1)`` scale."""
    if left:
        return c - matmul(v * t, matmul(v.mH, c))
    return c - matmul(matmul(c, v) * t, v.mH)


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
                                  scales[..., i:i + 1].unsqueeze(-1), left)
    return write_out(result, out, "ormqr")


def _b_orthonormal_basis(S, BS, eps):
    """An orthonormal (in the ``B`` inner product) basis of ``S``'s columns, dropping directions
    that ``S`` barely spans: the symmetric orthogonalisation ``S V diag(1/sqrt(w))`` of the Gram
    matrix's eigenpairs ``(w, V)`` above ``eps`` times the largest."""
    gram = matmul(S.mT, BS)
    w, v = linalg_eigh((gram + gram.mT) / 2)
    keep = (w > eps * w.max()).nonzero().reshape(-1)
    v = v.index_select(-1, keep) * w.index_select(-1, keep).rsqrt()
    return matmul(S, v)


def _lobpcg_single(A, B, X, iK, k, niter, tol, largest):
    """One matrix's LOBPCG iterations: Rayleigh-Ritz on [X, preconditioned residual, previous
    step] until ``k`` residuals are below ``tol`` relative to ``|A| + |E| |B|``."""
    apply_b = (lambda M: M) if B is None else (lambda M: matmul(B, M))
    eps = float(np.finfo(X._data.dtype).eps) * 10
    a_norm = linalg_matrix_norm(A, 2)
    b_norm = 1.0 if B is None else linalg_matrix_norm(B, 2)
    n = X._data.shape[-1]
    X = _b_orthonormal_basis(X, apply_b(X), eps)
    previous = None
    for _ in range(niter + 1):
        projected = matmul(X.mT, matmul(A, X))
        E, C = linalg_eigh((projected + projected.mT) / 2)
        order = E.argsort(descending=largest)[:n]
        E, X = E.index_select(0, order), matmul(X, C.index_select(-1, order))
        residual = matmul(A, X) - apply_b(X) * E
        error = residual.norm(dim=0) / (X.norm(dim=0) * (a_norm + E.abs() * b_norm))
        if int((error[:k] < tol).sum()) == k:
            break
        search = residual if iK is None else matmul(iK, residual)
        parts = [X, search] if previous is None else [X, search, previous]
        basis = _b_orthonormal_basis(_cat(parts, -1), apply_b(_cat(parts, -1)), eps)
        projected = matmul(basis.mT, matmul(A, basis))
        theta, Z = linalg_eigh((projected + projected.mT) / 2)
        order = theta.argsort(descending=largest)[:n]
        X_new = matmul(basis, Z.index_select(-1, order))
        previous = X_new - matmul(X, matmul(X.mT, apply_b(X_new)))
        X = _b_orthonormal_basis(X_new, apply_b(X_new), eps)
    return E[:k], X[:, :k]


def _cat(tensors, dim):
    from .shape import cat

    return cat(tensors, dim)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenpairs of the symmetric generalised problem
    ``A x = lambda B x`` by LOBPCG (``B`` positive definite, identity when None).

    ``X`` is the initial block (random when None, as torch), ``iK`` a preconditioner, ``tol``
    the relative residual at which an eigenpair has converged. Eigenpairs equal ``eigh``'s to
    within ``tol``; the iterates are ember's own (torch's robust ``ortho`` method keeps other
    bookkeeping). Not differentiable yet: call it on detached tensors.

    Example::

        >>> A = ember.diag(ember.arange(1., 11., dtype=ember.float64))
        >>> E, X = ember.lobpcg(A, k=2)
        >>> E.round()
        tensor([10.,  9.], dtype=ember.float64)
    """
    if A._data.shape[-2] != A._data.shape[-1]:
        raise AssertionError(f"A must be square, got shape {_size_repr(A)}")
    if B is not None and B._data.shape != A._data.shape:
        raise AssertionError(f"A and B must have same shape, got {_size_repr(A)} vs "
                             f"{_size_repr(B)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"LOBPCG method '{method}' is not supported by ember (ortho, basic)")
    if A.requires_grad or (B is not None and B.requires_grad):
        raise NotImplementedError("ember's lobpcg is not differentiable yet: call it on "
                                  "A.detach() (and B.detach())")
    if tol is None:
        tol = {"float32": 1.2e-07, "float64": 2.23e-16}[A.dtype.name] ** 0.5
    m = A._data.shape[-1]
    k = (1 if X is None else X._data.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X._data.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    batch = A._data.shape[:-2]
    from .random import randn

    flat_a = A.reshape((-1, m, m))
    flat_b = None if B is None else B.reshape((-1, m, m))
    flat_x = None if X is None else X.reshape((-1,) + X._data.shape[-2:])
    values, vectors = [], []
    for index in range(flat_a._data.shape[0]):
        start = (randn(m, n, dtype=A.dtype, device=A._device) if flat_x is None
                 else flat_x[index])
        if tuple(start._data.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {_size_repr(start)}, expected "
                                 f"{(m, n)}")
        E, U = _lobpcg_single(flat_a[index], None if flat_b is None else flat_b[index], start,
                              iK, k, niter, tol, largest)
        values.append(E)
        vectors.append(U)
    from .shape import stack

    return (stack(values).reshape(batch + (k,)), stack(vectors).reshape(batch + (m, k)))


def _size_repr(t):
    return f"torch.Size({list(t._data.shape)})"


for _name in ("geqrf", "orgqr", "ormqr"):
    _method(_name, globals()[_name])
__all__ += ["geqrf", "orgqr", "ormqr", "lobpcg"]
del _name


# ---------------------------------------------------------------- torch.frobenius_norm


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """Deprecated (kept by torch for the JIT): ``linalg.vector_norm(input, 2, dim, keepdim)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.frobenius_norm(ember.tensor([[3., 4.]]), dim=(1,))
        tensor([5.])
    """
    from .. import linalg

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    return linalg.vector_norm(input, 2.0, dim, keepdim, out=out)


__all__ += ["frobenius_norm"]
