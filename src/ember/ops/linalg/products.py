"""Matrix products: ``matmul``, ``mm``, ``bmm``, ``mv``, ``dot``, ``vdot``, ``inner``,
``outer``, ``tensordot``, the ``add*`` forms (``addmm``, ``addmv``, ``addr``, ``addbmm``,
``baddbmm``) and ``chain_matmul``.

The five products are one kernel, ``xp.matmul`` (BLAS on the CPU, cuBLAS through CuPy),
registered under torch's names so that ``grad_fn`` reads as in torch.

Example::

    >>> ember.mm(ember.eye(2), ember.ones(2, 2))
    tensor([[1., 1.],
            [1., 1.]])
"""

from __future__ import annotations

import math

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, _trace_state
from ...autograd import forward_ad as _forward_ad
from ...autograd import grad_mode
from ...autograd.forward_ad import add_tangents
from .._methods import inplace_method, tensor_method
from .._operands import operator_method, wrap_dim
from .._precision import in_float32, is_half
from .._registry import Op, autocast_policy, first_order_backward, inplace, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._common import _CPP_NAMES, _LOW, _check_tensor, _shape_str, _short
from ._onednn_gemm import matmul_cpu_kernel, matrix_product

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
    if a._data.ndim == 2 and b._data.ndim == 2 and a._data.dtype in _REAL_FLOATS and \
            not grad_mode.state.enabled and _forward_ad._state.level is None and \
            _trace_state.tracer is None:
        found = iter(_mm_backward_op(grad, a, b, need_a=need_a, need_b=need_b))
        return (next(found) if need_a else None), (next(found) if need_b else None)
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


_REAL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _mm_backward_kernel(xp, g, a, b, *, need_a, need_b):
    """The gradients of a real product of two matrices that its inputs need, in their
    order: g @ b^T and a^T @ g, each one GEMM into a fresh matrix (oneDNN's for float32),
    without the transposed views and separate product ops of the composite derivative."""
    grads = []
    if need_a:
        grads.append(matrix_product(xp, g, b.T))
    if need_b:
        grads.append(matrix_product(xp, a.T, g))
    return tuple(grads)


def _mm_backward_meta(g, a, b, *, need_a, need_b):
    return tuple((t.shape, t.dtype) for t, need in ((a, need_a), (b, need_b)) if need)


_mm_backward_op = Op("mm_backward", _mm_backward_kernel, meta=_mm_backward_meta,
                     save_inputs=False, multi_output=True, kind="linalg",
                     opt_outs=first_order_backward("the matmul ops"))


def _product_op(name, autocast=None):
    op = Op(name, _matmul_kernel, meta=_matmul_meta, kind="linalg", autocast=autocast)
    op.defkernel("cpu", matmul_cpu_kernel(_matmul_kernel))
    op.defderivative(_matmul_derivative)
    op.defjvp(_matmul_jvp)
    op.defonnx("MatMul")
    return op


matmul_op = _product_op("matmul", autocast="lower")
mm_op = _product_op("mm", autocast="lower")
bmm_op = _product_op("bmm", autocast="lower")
mv_op = _product_op("mv", autocast={"cuda": "lower"})
dot_op = _product_op("dot")
_OP_BY_RANK = {(1, 1): dot_op, (2, 1): mv_op, (2, 2): mm_op}
bmm_op.defbatch(batching.matmul)
dot_op.defbatch(batching.matmul)
matmul_op.defbatch(batching.matmul)
mm_op.defbatch(batching.matmul)
mv_op.defbatch(batching.matmul)


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


@tensor_method
@autocast_policy("lower")
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


tensor_method(operator_method(matmul, "__matmul__"), "__matmul__")


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
    from .._operands import broadcast_shapes

    batch = broadcast_shapes(tuple(batch_a), tuple(batch_b))
    _check_same_scalar(a, b)
    k = sa[-1]
    n = sa[-2] if na >= 2 else 1
    bsize = int(np.prod(batch))
    if k != sb[-2]:
        _check_bmm_shapes((bsize, n, k), (bsize, sb[-2], sb[-1]))
    _not_implemented(a, "baddbmm_with_gemm")


@tensor_method
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


@tensor_method
@signature("bmm(Tensor input, Tensor mat2, *, ScalarType? out_dtype=None, "
           "Tensor? out=None) -> Tensor", overloaded=True)
def bmm(input, mat2, *, out_dtype=None, out=None):
    """Batched matrix product of two 3-D tensors with the same batch size (``out_dtype`` as
    in :func:`mm`).

    Example::

        >>> ember.bmm(ember.ones(5, 2, 3), ember.ones(5, 3, 4)).shape
        ember.Size([5, 2, 4])
    """
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_bmm_shapes(input._data.shape, mat2._data.shape)
    _not_implemented(input, "bmm")  # torch picks the kernel by input's dtype, then compares
    _check_same_scalar(input, mat2)
    if out_dtype is not None:
        input, mat2 = _inputs_for_out_dtype(input, mat2, out_dtype)
    return write_out(bmm_op(input, mat2), out, "bmm")


@tensor_method
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


@tensor_method
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


@tensor_method
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


@tensor_method
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


@tensor_method
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


ger = tensor_method(outer, "ger")


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


@tensor_method
@autocast_policy("lower")
@signature("addmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, "
           "Tensor? out=None) -> Tensor")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the result.

    Example::

        >>> ember.addmm(ember.zeros(2), ember.ones(2, 3), ember.ones(3, 2), alpha=2)
        tensor([[6., 6.],
                [6., 6.]])
    """
    _same_dtype(input, mat1, mat2, style="mm")
    return write_out(_add_product(mm, input, mat1, mat2, beta, alpha), out, "addmm")


tensor_method(inplace_method(addmm), "addmm_")


@tensor_method
@autocast_policy(cuda="lower")
@signature("addmv(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1, "
           "Tensor? out=None) -> Tensor")
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``.

    Example::

        >>> ember.addmv(ember.ones(2), ember.ones(2, 3), ember.ones(3))
        tensor([4., 4.])
    """
    _same_dtype(input, mat, vec, style="mv")
    return write_out(_add_product(mv, input, mat, vec, beta, alpha), out, "addmv")


tensor_method(inplace_method(addmv), "addmv_")


@tensor_method
@autocast_policy(cuda="lower")
@signature("addr(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, "
           "Tensor? out=None) -> Tensor")
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


tensor_method(inplace_method(addr), "addr_")


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


@tensor_method
@autocast_policy("lower")
@signature("addbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
           "Scalar alpha=1, Tensor? out=None) -> Tensor")
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


tensor_method(inplace_method(addbmm), "addbmm_")


@tensor_method
@autocast_policy("lower")
@signature("baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
           "Scalar alpha=1, Tensor? out=None) -> Tensor")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``.

    Example::

        >>> ember.baddbmm(ember.zeros(3, 2, 2), ember.ones(3, 2, 4), ember.ones(3, 4, 2)).shape
        ember.Size([3, 2, 2])
    """
    _same_dtype(input, batch1, batch2, style="bmm")
    return write_out(_add_product(bmm, input, batch1, batch2, beta, alpha), out, "baddbmm")


tensor_method(inplace_method(baddbmm), "baddbmm_")


@autocast_policy(cuda="lower")
@signature("chain_matmul(Tensor[] matrices, *, Tensor? out=None) -> Tensor")
def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices, in the cheapest order (see ``linalg.multi_dot``).

    Example::

        >>> ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 4), ember.ones(4, 1)).shape
        ember.Size([2, 1])
    """
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


tensor_method(operator_method(_rmatmul, "__rmatmul__"), "__rmatmul__")


def _imatmul(self, other):
    return inplace(matmul, self, other)


tensor_method(operator_method(_imatmul, "__imatmul__"), "__imatmul__")


# ================================================================ tensordot


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
    elif not isinstance(dims, (list, tuple)):
        raise RuntimeError(f"tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
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


@tensor_method("tensordot")
def _tensordot_method(self, other, dims=2):
    """``x.tensordot(y, dims)``: :func:`tensordot` with ``x`` first (``dims`` positional, 2 by
    default).

    Example::

        >>> ember.ones(2, 3).tensordot(ember.ones(3, 4), 1).shape
        ember.Size([2, 4])
    """
    return tensordot(self, other, dims)

