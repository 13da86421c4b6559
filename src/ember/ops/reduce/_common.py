"""What the reductions share: dim and dtype handling, the reduction meta rule, keepdim
reshapes and the named-result helpers."""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from .._operands import wrap_dim, wrap_dims
from .._registry import write_out

_LOW_PRECISION = dt.LOW_PRECISION


# ---------------------------------------------------------------- shared helpers


def reduced_shape(shape, dims, keepdim):
    """The shape after reducing ``dims`` (already wrapped and sorted)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduce_meta(out_dtype=None):
    def meta(a, *, dims, keepdim, **params):
        dtype = params.get("dtype") or out_dtype or a.dtype
        return reduced_shape(a.shape, dims, keepdim), dtype
    return meta


def _real_meta(a, *, dims, keepdim, **params):
    return reduced_shape(a.shape, dims, keepdim), dt.from_numpy_dtype(a.dtype).to_real()


def _dims(dim, ndim):
    """Wrapped, sorted dims; None or an empty sequence mean all dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return wrap_dims(dim, ndim)


def _one_dim(dim, ndim):
    return wrap_dim(int(dim), ndim) if ndim else 0


def _expand_back(grad, shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims. Reduced leading dims (all of
    them, for a whole reduction) need no unsqueeze first: broadcasting adds them in front,
    so one expand serves (one op instead of one more per dim)."""
    if not keepdim and dims and tuple(dims) != tuple(range(len(dims))):
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


def _keep(t, shape, dims, keepdim):
    """A reduced tensor with its reduced dims restored as size 1 (for broadcasting)."""
    if not keepdim and dims:
        for d in dims:
            t = t.unsqueeze(d)
    return t


def _count(shape, dims):
    return math.prod(shape[d] for d in dims)


def _quiet(xp):
    """Silence NumPy's floating-point warnings (0/0 and friends give NaN/inf as in torch)."""
    return np.errstate(all="ignore") if xp is np else contextlib.nullcontext()


def _compute_dtype(a):
    """float16/bfloat16 accumulate in float32, as torch does."""
    return np.float32 if a.dtype in _LOW_PRECISION else None


def _positions(n, dim, ndim, device):
    """``arange(n)`` shaped to broadcast along ``dim`` of an ``ndim``-dim tensor."""
    from ..creation import arange

    shape = [1] * ndim
    shape[dim] = n
    return arange(n, device=device).reshape(shape)


def _where(condition, a, b):
    from ..pointwise import where

    return where(condition, a, b)


def _isnan(t):
    return t != t


def _select_grad(grad, indices, dim, shape, keepdim):
    """Gradient of a selection of one element per slice along ``dim`` (max(dim), median...)."""
    if len(shape) == 0:
        return grad
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    mask = _positions(shape[dim], dim, len(shape), grad._device) == indices
    return _where(mask, grad, 0.0)


def _scatter_grad(grad, indices, dim, shape):
    """Gradient of a gather along ``dim``: ``grad`` summed into zeros at ``indices``."""
    if len(shape) == 0:
        return grad.reshape(())
    from .. import index

    scatter_add = getattr(index, "scatter_add", None)
    if scatter_add is not None:
        return scatter_add(grad.new_zeros(shape), dim, indices, grad)
    # Fallback until ops.index has scatter_add: compare positions with every index (n x k).
    ndim = len(shape)
    positions = _positions(shape[dim], dim, ndim + 1, grad._device)
    mask = positions == indices.unsqueeze(dim)
    return _where(mask, grad.unsqueeze(dim), 0.0).sum(dim + 1)


def _write_out_tuple(results, out, name):
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors")
    for r, o in zip(results, out):
        write_out(r, o, name)
    return type(results)(*out)


def _check_tensor(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _type_name(d):
    from .._registry import _short_name

    return _short_name(d)


def _no_complex(input, name):
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")


def _reject(input, kernel, kinds="c"):
    """torch's NotImplementedError for a dtype its CPU kernel ``kernel`` lacks."""
    if input._data.dtype.kind in kinds:
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")


def _check_nonempty_dims(input, dims, name):
    shape = input._data.shape
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _unsqueeze_all(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


# ---------------------------------------------------------------- ONNX


def _reduction_onnx(onnx_type):
    """The ONNX form (``Op.defonnx``) of a reduction over ``dims`` that ``onnx_type``
    (``"ReduceSum"``, ...) computes, on the input cast to the result's dtype (a sum of bools
    counts in int64, as torch)."""
    def mapping(ctx, x, dims=None, keepdim=False, dtype=None):
        x = ctx.cast(x, ctx.in_dtype(0), ctx.out_dtype())
        if not ctx.in_dims(0):
            return ctx.op("Identity", x)
        axes = ctx.axes(dims)
        if onnx_type == "ReduceMean" and 0 in [ctx.in_dims(0)[a] for a in axes]:
            # the mean of no elements: torch gives nan (0 / 0), onnxruntime's ReduceMean 0
            total = ctx.reduce("ReduceSum", x, axes, keepdim)
            return ctx.op("Div", total, ctx.scalar(0, ctx.out_dtype()))
        return ctx.reduce(onnx_type, x, axes, keepdim)
    return mapping
