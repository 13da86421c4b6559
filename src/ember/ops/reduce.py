"""Reductions and scans: sum, mean, ... over ``dim`` (an int, a tuple or all) with ``keepdim``.

The shared meta rule :func:`reduced_shape` and argument handling live at the top; each
reduction is then an op with its kernel and derivative.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._operands import wrap_dims
from ._registry import defop, write_out

__all__ = ["sum", "mean", "sum_to_size"]


def reduced_shape(shape, dims, keepdim):
    """The shape after reducing ``dims`` (already wrapped and sorted)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _reduce_meta(out_dtype=None):
    def meta(a, *, dims, keepdim, **params):
        return reduced_shape(a.shape, dims, keepdim), params.get("dtype") or out_dtype or a.dtype
    return meta


def _expand_back(grad, shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims."""
    if not keepdim and dims:
        for d in dims:
            grad = grad.unsqueeze(d)
    return grad.expand(shape)


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dt.to_dtype(dtype)
    if input._data.dtype.kind in "biu":
        return dt.int64
    return None


# ---------------------------------------------------------------- sum


@defop("sum", meta=_reduce_meta(), save_inputs=False)
def sum_op(xp, a, *, dims, keepdim, dtype=None):
    return xp.sum(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


@sum_op.defderivative
def _sum_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    return (_expand_back(grad, ctx._input_meta[0][0], dims, keepdim),)


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum over ``dim`` (all dims by default); integers and bools sum as int64.

    Example::

        >>> ember.sum(ember.tensor([[1, 2], [3, 4]]), dim=0)
        tensor([4, 6])
    """
    dims = wrap_dims(dim, input._data.ndim) if dim is not None and dim != () else \
        tuple(range(input._data.ndim))
    return write_out(sum_op(input, dims=dims, keepdim=keepdim,
                            dtype=_sum_dtype(input, dtype)), out, "sum")


def sum_to_size(input, *size):
    """Sum ``input`` down to a shape it was broadcast from.

    Example::

        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = input._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    if not dims:
        return input
    result = sum_op(input, dims=dims, keepdim=True, dtype=None)
    return result.reshape(size) if lead else result


# ---------------------------------------------------------------- mean


@defop("mean", meta=_reduce_meta(), save_inputs=False)
def mean_op(xp, a, *, dims, keepdim, dtype=None):
    return xp.mean(a, axis=dims, keepdims=keepdim, dtype=dtype.np if dtype else None)


@mean_op.defderivative
def _mean_derivative(ctx, grad, *, dims, keepdim, dtype=None):
    shape = ctx._input_meta[0][0]
    count = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    return (_expand_back(grad, shape, dims, keepdim) / count,)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean over ``dim`` (all dims by default); needs a floating or complex input.

    Example::

        >>> ember.mean(ember.tensor([[1., 2.], [3., 4.]]), dim=1)
        tensor([1.5000, 3.5000])
    """
    dtype = dt.to_dtype(dtype) if dtype is not None else None
    target = dtype or input.dtype
    if not (target.is_floating_point or target.is_complex):
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {target.name.capitalize()}")
    dims = wrap_dims(dim, input._data.ndim) if dim is not None and dim != () else \
        tuple(range(input._data.ndim))
    return write_out(mean_op(input, dims=dims, keepdim=keepdim, dtype=dtype), out, "mean")


for _name in ("sum", "mean", "sum_to_size"):
    setattr(Tensor, _name, globals()[_name])
