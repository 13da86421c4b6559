"""Padding: ``ember.nn.functional.pad`` (constant, reflect, replicate, circular)."""

from __future__ import annotations

import builtins

import numpy as np

from ...autograd.forward_ad import first_linear_jvp
from .._registry import defop
from .._signature import signature
from .._vmap_rules import batching
from ._geometry import _int
from .slicing import _add_at

__all__ = []


# ================================================================ pad (ember.nn.functional.pad)


def _pad_constant_meta(a, *, pad, value):
    return _padded_shape(a.shape, pad), a.dtype


def _padded_shape(shape, pad):
    shape = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        shape[d] += pad[2 * i] + pad[2 * i + 1]
    return tuple(shape)


@defop("constant_pad_nd", meta=_pad_constant_meta, save_inputs=False, kind="shape")
def pad_constant_op(xp, a, *, pad, value):
    out = xp.full(_padded_shape(a.shape, pad), value, dtype=a.dtype)
    src, dst = [slice(None)] * a.ndim, [slice(None)] * a.ndim
    for i in range(len(pad) // 2):
        d = a.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        lo, hi = builtins.max(-left, 0), a.shape[d] - builtins.max(-right, 0)
        if hi <= lo:
            return out
        src[d] = slice(lo, hi)
        start = builtins.max(left, 0)
        dst[d] = slice(start, start + hi - lo)
    out[tuple(dst)] = a[tuple(src)]
    return out


@pad_constant_op.defonnx
def _pad_constant_onnx(ctx, x, pad, value=0):
    ndim = len(ctx.in_dims(0))
    begins, ends = [0] * ndim, [0] * ndim
    for i in range(len(pad) // 2):  # pad lists (begin, end) pairs from the last axis
        begins[ndim - 1 - i], ends[ndim - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return ctx.op("Pad", x, ctx.shape_tensor(begins + ends), ctx.scalar(value, ctx.out_dtype()),
                  mode="constant")


pad_constant_op.defbatch(batching.trailing_dims)


@pad_constant_op.defderivative
def _pad_constant_derivative(ctx, grad, *, pad, value):
    return (pad_constant_op(grad, pad=tuple(-p for p in pad), value=0),)


@pad_constant_op.defjvp
def _pad_constant_jvp(p, t, y, /, **params):
    """Linear in the input once the fill value is 0."""
    if "value" in params:
        params = dict(params, value=0)
    return pad_constant_op(t[0], *p[1:], **params)


def _pad_gather_meta(a, *, indices):
    shape = list(a.shape)
    for d, index in indices:
        shape[d] = len(index)
    return tuple(shape), a.dtype


@defop("pad_gather", meta=_pad_gather_meta, save_inputs=False, grad_name="PadBackward0",
       kind="shape",
       opt_outs={"onnx": "not mapped yet (ONNX's Pad has the reflect and edge modes)"})
def pad_gather_op(xp, a, *, indices):
    for d, index in indices:
        a = xp.take(a, xp.asarray(index, dtype=np.int64), axis=d)
    return a


pad_gather_op.defbatch(batching.pad_gather)


@defop("pad_scatter", meta=lambda g, *, shape, indices: (shape, g.dtype), save_inputs=False,
       grad_name="PadBackwardBackward0", kind="shape",
       opt_outs={"onnx": "a backward kernel: exported models run inference"})
def pad_scatter_op(xp, g, *, shape, indices):
    for d, index in reversed(indices):
        moved = xp.moveaxis(g, d, 0)
        out = xp.zeros((shape[d],) + moved.shape[1:], dtype=g.dtype)
        _add_at(xp, out, xp.asarray(index, dtype=np.int64), moved)
        g = xp.moveaxis(out, 0, d)
    return xp.ascontiguousarray(g)


pad_scatter_op.defbatch(batching.pad_scatter)


@pad_gather_op.defderivative
def _pad_gather_derivative(ctx, grad, *, indices):
    return (pad_scatter_op(grad, shape=ctx._input_meta[0][0], indices=indices),)


pad_gather_op.defjvp(first_linear_jvp(pad_gather_op))


@pad_scatter_op.defderivative
def _pad_scatter_derivative(ctx, grad, *, shape, indices):
    return (pad_gather_op(grad, indices=indices),)


def _pad_index(mode, n, left, right):
    if mode == "circular":
        crop = builtins.max(-left, 0)
        kept = n - crop - builtins.max(-right, 0)
        index = np.arange(-builtins.max(left, 0), kept + builtins.max(right, 0)) % kept + crop
        return tuple(index.tolist())
    index = np.arange(-left, n + right)
    if mode == "reflect":
        index = np.abs(index)
        index = np.where(index >= n, 2 * (n - 1) - index, index)
    else:
        index = np.clip(index, 0, n - 1)
    return tuple(index.tolist())


_PAD_FUNCTIONS = {"reflect": "reflection_pad", "replicate": "replication_pad",
                  "circular": "circular_pad"}


@signature("pad(Tensor input, SymInt[] pad, str mode='constant', float? value=None) -> Tensor")
def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.

    ``mode`` is ``'constant'`` (fill with ``value``, default 0; negative pads crop),
    ``'reflect'`` (mirror without the edge), ``'replicate'`` (repeat the edge) or
    ``'circular'`` (wrap around). The non-constant modes pad 1 to 3 dims of a tensor with one
    or two more dims (batch and channel), as torch.

    Example::

        >>> pad(ember.tensor([[1., 2.]]), (1, 1), mode="replicate")
        tensor([[1., 1., 2., 2.]])
    """
    pad = tuple(_int(p, "pad") for p in pad)
    ndim = input._data.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{ndim}")
    if mode == "constant":
        shape = input._data.shape
        for i in range(len(pad) // 2):
            d = ndim - 1 - i
            new = shape[d] + pad[2 * i] + pad[2 * i + 1]
            if new < 0:
                raise RuntimeError(f"The input size {shape[d]}, plus negative padding "
                                   f"{pad[2 * i]} and {pad[2 * i + 1]} resulted in a negative "
                                   f"output size, which is invalid. Check dimension {d} of your "
                                   "input.")
        fill = 0 if value is None else value
        if input.dtype.is_complex is False and isinstance(fill, complex):
            raise RuntimeError("value cannot be converted to type without overflow")
        return pad_constant_op(input, pad=pad, value=fill)
    if mode not in _PAD_FUNCTIONS:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    k = len(pad) // 2
    if k not in (1, 2, 3) or ndim not in (k + 1, k + 2):
        raise NotImplementedError("Only 2D, 3D, 4D, 5D padding with non-constant padding are "
                                  "supported for now")
    shape = input._data.shape
    indices = []
    for i in range(k):
        d = ndim - 1 - i
        left, right, n = pad[2 * i], pad[2 * i + 1], shape[d]
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at dimension"
                               f" {d} of input {list(shape)}")
        if mode == "circular" and (left > n or right > n or n - builtins.max(-left, 0)
                                   - builtins.max(-right, 0) <= 0):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n == 0 or n + left + right <= 0:
            raise RuntimeError(f"{_PAD_FUNCTIONS[mode]}{k}d(): input tensor of size "
                               f"{list(shape)} or padding ({left}, {right}) gives an empty "
                               "output")
        indices.append((d, _pad_index(mode, n, left, right)))
    return pad_gather_op(input, indices=tuple(indices))
