"""Norms and determinants: ``linalg.vector_norm``, ``linalg.matrix_norm``, ``linalg.norm``,
``frobenius_norm``, ``cdist``, ``det``/``linalg.det``, ``slogdet``, ``logdet`` and
``linalg.cond``.

Example::

    >>> ember.linalg.det(ember.eye(2) * 2)
    tensor(4.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as dt
from ..._device import META
from .._methods import tensor_method
from .._operands import wrap_dim
from .._registry import autocast_policy, defop, write_out
from .._signature import signature
from .._vmap_rules import batching
from ._common import (
    _LOW,
    PlainSlogdet,
    SlogdetResult,
    _check_float,
    _check_square,
    _check_tensor,
    _real_np,
    _short,
)
from .decompositions import linalg_svdvals, svd_op
from .products import matmul_op
from .solvers import inv_h_op, linalg_inv_ex

# ================================================================ cdist


@autocast_policy("fp32")
@signature("cdist(Tensor x1, Tensor x2, float p=2., PyObject compute_mode=None) -> Tensor")
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
    _refuse_forward_ad(x1, x2, p, compute_mode)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:  # torch's kernel counts min(ceil(|d|), 1), so NaN stays NaN (vector_norm: 1)
        return diff.abs().ceil().clamp_max(1).sum(-1)
    if p == math.inf:
        return cdist_max_norm_op(diff)
    return _vector_norm(diff, float(p), (diff._data.ndim - 1,), False)


def _refuse_forward_ad(x1, x2, p, compute_mode):
    """torch's NotImplementedError when ``x1`` or ``x2`` carries a forward-mode tangent: its
    ``cdist`` kernels (``_euclidean_dist`` for large Euclidean inputs, ``_cdist_forward``
    otherwise) have a backward formula but no forward-mode one, for every ``p``."""
    from ...autograd import forward_ad

    if forward_ad._state.level is None or not (forward_ad.is_dual(x1) or forward_ad.is_dual(x2)):
        return
    rows = max(x1._data.shape[-2], x2._data.shape[-2])
    euclidean = p == 2 and x1._data.size and x2._data.size and (
        compute_mode == "use_mm_for_euclid_dist"
        or (compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and rows > 25))
    kernel = "_euclidean_dist" if euclidean else "_cdist_forward"
    raise NotImplementedError(f"Trying to use forward AD with {kernel} that does not support "
                              "it because it has not been implemented yet.")


@defop("cdist_max_norm", meta=lambda diff: (diff.shape[:-1], diff.dtype), save_output=True,
       grad_name="CdistBackward0", kind="linalg")
def cdist_max_norm_op(xp, diff):
    """The largest ``|diff|`` over the last dim, as torch's ``cdist(p=inf)`` kernel keeps its
    running maximum from 0: a NaN difference never wins (``max(0, NaN)`` is 0 there), and
    no columns give 0."""
    if diff.shape[-1] == 0:
        return xp.zeros(diff.shape[:-1], diff.dtype)
    magnitude = xp.abs(diff)
    magnitude = xp.where(xp.isnan(magnitude), 0, magnitude)
    return xp.amax(magnitude, axis=-1).astype(diff.dtype, copy=False)


cdist_max_norm_op.defbatch(batching.trailing_dims)


@cdist_max_norm_op.defonnx
def _cdist_max_norm_onnx(ctx, diff):
    magnitude = ctx.op("Abs", diff)
    zero = ctx.scalar(0, ctx.out_dtype())
    finite_or_inf = ctx.op("Where", ctx.op("IsNaN", magnitude), zero, magnitude)
    return ctx.reduce("ReduceMax", finite_or_inf, [len(ctx.in_dims(0)) - 1], False)


@cdist_max_norm_op.defderivative
def _cdist_max_norm_derivative(ctx, grad):
    (diff,) = ctx.inputs
    # torch's cdist backward: every difference at the maximum takes the whole gradient (ties
    # are not shared, unlike vector_norm's), and a NaN or infinite one makes it NaN
    gap = (diff.abs() - ctx.output.unsqueeze(-1)).abs().ceil()
    return (diff.sign() * (1 - gap.clamp_max(1)) * grad.unsqueeze(-1),)


# ================================================================ norms


def _vector_norm(x, ord, dims, keepdim):
    from ..reduce import norm_op

    return norm_op(x, p=float(ord), dims=tuple(dims), keepdim=keepdim)


@autocast_policy(cuda="fp32")
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


@autocast_policy(cuda="fp32")
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
            from ..reduce import nuclear_norm_op

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


# ================================================================ determinants


@defop("linalg_det", meta=lambda a: (a.shape[:-2], a.dtype), grad_name="LinalgDetBackward0",
       save_output=True, kind="linalg")
def det_op(xp, a):
    return xp.asarray(xp.linalg.det(a)).astype(a.dtype, copy=False)


det_op.opt_out("onnx", "not mapped yet (ONNX's Det computes it)")


det_op.defbatch(batching.trailing_dims)


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
    from ..index import index_select
    from ..shape import cat

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
    from ..._tensor import tensor

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
    from ..reduce import _exclusive_cumprod

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


@tensor_method
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


slogdet_op.opt_out("onnx", "ONNX has no log-determinant (Det alone overflows)")


slogdet_op.defbatch(batching.trailing_dims)


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


@tensor_method
def slogdet(input):
    """Same as :func:`ember.linalg.slogdet`, as a ``slogdet`` named tuple.

    Example::

        >>> ember.slogdet(ember.eye(2)).logabsdet
        tensor(0.)
    """
    return PlainSlogdet(*linalg_slogdet(input))


@tensor_method
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
    from ..pointwise import where

    return where(sign < 0, float("nan"), logabs)


# ================================================================ cond


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
        from ..creation import zeros

        return write_out(zeros(A._data.shape[:-2], dtype=real, device=A._device), out,
                         "linalg.cond")
    if p == "nuc":  # from the singular values: sum(s) * sum(1 / s), as torch
        s = linalg_svdvals(A)
        return write_out(s.sum(-1) * (1 / s).sum(-1), out, "linalg.cond")
    inverse_, info = linalg_inv_ex(A)
    from ..pointwise import where

    singular = info > 0
    # singular matrices get inf; their NaN inverse must not reach the norm (nor its SVD)
    inverse_ = where(singular.unsqueeze(-1).unsqueeze(-1), 0.0, inverse_)
    product = linalg_matrix_norm(A, p) * linalg_matrix_norm(inverse_, p)
    return write_out(where(singular, math.inf, product), out, "linalg.cond")


# ---------------------------------------------------------------- torch.frobenius_norm


@signature("frobenius_norm(Tensor input, int[1] dim, bool keepdim=False, *, "
           "Tensor? out=None) -> Tensor")
def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """Deprecated (kept by torch for the JIT): ``linalg.vector_norm(input, 2, dim, keepdim)``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.frobenius_norm(ember.tensor([[3., 4.]]), dim=(1,))
        tensor([5.])
    """
    from ... import linalg

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    return linalg.vector_norm(input, 2.0, dim, keepdim, out=out)
