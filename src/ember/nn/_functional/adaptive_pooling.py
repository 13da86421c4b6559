"""nn.functional: adaptive pooling (average and max, 1-3 spatial dims): output sizes fixed,
windows derived from them as torch does (start ``floor(i * n / o)``, end ``ceil((i + 1) * n /
o)``).

Adaptive average pooling is separable: one small averaging matrix per spatial dim applied with
``matmul`` (a reshape-and-mean when the size divides evenly). Adaptive max pooling gathers
every (clamped) window and takes one argmax over it.

Example::

    >>> import ember
    >>> ember.nn.functional.adaptive_avg_pool1d(ember.tensor([[1., 2., 3., 4.]]), 2)
    tensor([[1.5000, 3.5000]])
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import tensor
from ...func import _batching_rules as _batching
from ...ops._registry import Op, _short_name, autocast_policy
from ...ops._signature import signature
from ...ops.pointwise import where
from .pooling import (
    _F32,
    _check_tensor,
    _int,
    _plane_strides,
    _pool_scatter_op,
)

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d"]


def _adaptive_bounds(xp, n, o):
    """Start and end (exclusive) of each adaptive window along one dim."""
    i = xp.arange(o, dtype=np.int64)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_width(n, o):
    """The widest adaptive window along one dim (on the host: no device array involved)."""
    return builtins.max((-((-(i + 1) * n) // o) - (i * n) // o for i in range(o)), default=1)


def _adaptive_sizes(input, nd, output_size, name):
    spatial = tuple(input.shape[-nd:])
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            if nd == 1:
                raise RuntimeError(f"{name}() argument 'output_size' should contain one int "
                                   f"(got {len(output_size)})")
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
        sizes = tuple(spatial[i] if o is None else _int(o, name, "output_size", i)
                      for i, o in enumerate(output_size))
    else:
        sizes = (_int(output_size, name, "output_size"),) * nd
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, sizes))}}}")
    return sizes


def _check_adaptive_input(input, nd, name, max_pool):
    shape = list(input.shape)
    if len(shape) not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {len(shape)}-dimensional "
                               f"tensor for argument #1 'self' (while checking arguments for "
                               f"{name})")
        sep = ": " if max_pool and nd == 3 else " "
        low = "3D or 4D" if nd == 2 else "4D or 5D"
        raise RuntimeError(f"{name}(): Expected {low} tensor, but got{sep}{shape}")
    if nd == 1 and not max_pool:  # torch runs the 2-D kernel on (..., 1, L)
        name, nd, shape = "adaptive_avg_pool2d", 2, shape[:-1] + [1] + shape[-1:]
    first = len(shape) - nd if (nd == 2 and not max_pool) else 1
    for d in range(first, len(shape)):
        if shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shape} with dimension {d} "
                               "being empty")


def _window_table(n, o):
    """Clamped input positions (o, width) of each adaptive window along one dim, and a mask
    of the real (unclamped) ones."""
    start, end = _adaptive_bounds(np, n, o)
    raw = start[:, None] + np.arange(_adaptive_width(n, o))[None, :]
    return np.minimum(raw, end[:, None] - 1), raw < end[:, None], end - start


def _check_output_size_fits(input, nd, output_size):
    """torch's 2-d and 3-d adaptive pools (Python functions) first match a sequence
    ``output_size`` against the input's trailing dims: ``len()`` of it (a TypeError for None),
    then a ValueError unless the input has more dims than it has sizes."""
    if nd == 1 or isinstance(output_size, int):
        return
    if input.dim() <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _adaptive_avg(input, nd, output_size, name):
    _check_tensor(input, name)
    _check_output_size_fits(input, nd, output_size)
    _check_adaptive_input(input, nd, name, False)
    sizes = _adaptive_sizes(input, nd, output_size, name)
    x = input
    ndim = input.dim()
    to_one = all(o == 1 for o in sizes)
    if to_one and (input._device is not META or not input.dtype.is_floating_point):
        # torch takes the mean for a 1x1 output first, so that decides which dtypes pass
        return x.mean(dim=tuple(range(ndim - nd, ndim)), keepdim=True)
    if not input.dtype.is_floating_point:
        out_shape = tuple(input.shape[:ndim - nd]) + tuple(sizes)
        if nd < 3 and math.prod(out_shape) == 0:
            # torch's 2-d kernel returns an empty output before choosing a dtype's loop
            return input.new_empty(out_shape)
        inner = "adaptive_avg_pool2d" if nd == 1 else name
        raise NotImplementedError(f'"{inner}" not implemented for '
                                  f"'{_short_name(input.dtype)}'")
    for i, o in enumerate(sizes):
        d = ndim - nd + i
        n = x.shape[d]
        if o == n:
            continue
        if o and n % o == 0:
            shape = tuple(x.shape[:d]) + (o, n // o) + tuple(x.shape[d + 1:])
            x = x.reshape(shape).mean(d + 1)
            continue
        table, mask, counts = _window_table(n, o)
        trailing = (1,) * (ndim - d - 1)
        windows = x.index_select(d, tensor(table.reshape(-1), device=x.device))
        windows = windows.reshape(tuple(x.shape[:d]) + table.shape + tuple(x.shape[d + 1:]))
        if not mask.all():
            keep = tensor(mask.reshape(table.shape + trailing), device=x.device)
            windows = where(keep, windows, windows.new_zeros(()))
        x = windows.sum(d + 1) / tensor(counts.reshape((o,) + trailing), dtype=x.dtype,
                                        device=x.device)
    return x


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length (windows ``[floor(iL/o), ceil((i+1)L/o))``).

    Example::

        >>> F.adaptive_avg_pool1d(ember.tensor([[1., 2., 3.]]), 2)
        tensor([[1.5000, 2.5000]])
    """
    return _adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (H, W) output (``None`` keeps that input size).

    Example::

        >>> F.adaptive_avg_pool2d(ember.ones(3, 5, 7), (2, None)).shape
        ember.Size([3, 2, 7])
    """
    return _adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d")


@autocast_policy(cpu="fp32")
def adaptive_avg_pool3d(input, output_size):
    """Average pooling to a fixed (D, H, W) output.

    Example::

        >>> F.adaptive_avg_pool3d(ember.ones(1, 4, 4, 4), 1).shape
        ember.Size([1, 1, 1, 1])
    """
    return _adaptive_avg(input, 3, output_size, "adaptive_avg_pool3d")


def _adaptive_max_kernel(xp, a, *, nd, out):
    lead, spatial = a.shape[:-nd], a.shape[-nd:]
    dtype = a.dtype
    x = a.reshape((-1,) + spatial)
    if dt.is_bfloat16_array_dtype(dtype):
        x = x.astype(_F32)
    tables, widths = [], []
    for n, o in zip(spatial, out):
        start, end = _adaptive_bounds(xp, n, o)
        width = _adaptive_width(n, o)
        table = xp.minimum(start[:, None] + xp.arange(width, dtype=np.int64)[None, :],
                           end[:, None] - 1)
        tables.append(table)
        widths.append(width)
    windows = x
    for i, table in enumerate(tables):  # axis 1 + 2i becomes (o_i, width_i)
        windows = xp.take(windows, table.reshape(-1), axis=1 + 2 * i)
        shape = windows.shape
        windows = windows.reshape(shape[:1 + 2 * i] + table.shape + shape[2 + 2 * i:])
    order = (0,) + tuple(1 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))
    windows = windows.transpose(order).reshape((x.shape[0],) + out + (math.prod(widths),))
    k = windows.shape[-1]
    if windows.size == 0:
        pick = xp.zeros(windows.shape[:-1], dtype=np.int64)
    else:
        pick = xp.argmax(windows, axis=-1)
        if windows.dtype.kind == "f":
            nan = xp.isnan(windows)
            if nan.any() if xp is np else True:  # skip the NaN pass on the CPU (no sync)
                last_nan = k - 1 - xp.argmax(nan[..., ::-1], axis=-1)
                pick = xp.where(nan.any(axis=-1), last_nan, pick)
    values = xp.take_along_axis(windows, pick[..., None], axis=-1)[..., 0]
    # kernel position -> input coordinate per dim -> flat index in the plane
    strides = _plane_strides(spatial)
    index = 0
    rest = pick
    for i in reversed(range(nd)):
        kpos = rest % widths[i]
        rest = rest // widths[i]
        coords = _table_lookup(xp, tables[i], i, nd, kpos)
        index = index + coords * strides[i]
    index = xp.asarray(index, dtype=np.int64)
    return values.astype(dtype, copy=False).reshape(lead + out), index.reshape(lead + out)


def _table_lookup(xp, table, i, nd, kpos):
    """``table[o_i, kpos]`` with ``o_i`` the output position along spatial dim ``i``."""
    shape = [1] * (nd + 1)
    shape[1 + i] = -1
    rows = xp.arange(table.shape[0]).reshape(shape)
    return table[rows, kpos]


_adaptive_max_op = Op("adaptive_max_pool", _adaptive_max_kernel, save_inputs=False,
                      save_output=True, multi_output=True, differentiable_outputs=(0,),
                      meta=lambda a, *, nd, out: ((a.shape[:-nd] + out, a.dtype),
                                                  (a.shape[:-nd] + out, np.dtype(np.int64))),
                      grad_name="AdaptiveMaxPool2DBackward0", kind="nn")


@_adaptive_max_op.defonnx
def _adaptive_max_pool_onnx(ctx, x, nd, out):
    unbatched = len(ctx.in_dims(0)) == nd + 1  # ONNX's pools want a batch axis: add one
    if all(o == 1 for o in out):
        pooled = ctx.op("GlobalMaxPool", ctx.unsqueeze(x, [0]) if unbatched else x)
        return (ctx.squeeze(pooled, [0]) if unbatched else pooled), None
    sizes = ctx.in_dims(0)[-nd:]
    if any(ctx.is_dynamic(s) or s % o for s, o in zip(sizes, out)):
        ctx.fail("adaptive_max_pool exports only to output size 1, or to sizes that divide "
                 "static input sizes")
    kernel = [s // o for s, o in zip(sizes, out)]
    pooled = ctx.op("MaxPool", ctx.unsqueeze(x, [0]) if unbatched else x, kernel_shape=kernel,
                    strides=kernel)
    return (ctx.squeeze(pooled, [0]) if unbatched else pooled), None


_adaptive_max_op.defbatch(_batching.trailing_dims)


@_adaptive_max_op.defderivative
def _adaptive_max_derivative(ctx, grad, grad_index, *, nd, out):
    return (_pool_scatter_op(grad, ctx.output[1], nd=nd, shape=ctx._input_meta[0][0]),)


def _adaptive_max(input, nd, output_size, name):
    _check_tensor(input, name)
    _check_output_size_fits(input, nd, output_size)
    _check_adaptive_input(input, nd, name, True)
    sizes = _adaptive_sizes(input, nd, output_size, name)
    if not input.dtype.is_floating_point:
        inner = "adaptive_max_pool2d" if nd == 1 else name
        raise NotImplementedError(f'"{inner}" not implemented for '
                                  f"'{_short_name(input.dtype)}'")
    return _adaptive_max_op(input, nd=nd, out=sizes)


@signature("adaptive_max_pool1d_with_indices(Tensor input, int[1] output_size, "
           "bool return_indices=False) -> (Tensor, Tensor)")
def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """Adaptive 1-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.adaptive_max_pool1d_with_indices(ember.tensor([[1., 3., 2.]]), 1)[1]
        tensor([[1]])
    """
    return _adaptive_max(input, 1, output_size, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.adaptive_max_pool2d_with_indices(ember.ones(1, 2, 2), 1)[1]
        tensor([[[0]]])
    """
    return _adaptive_max(input, 2, output_size, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """Adaptive 3-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.adaptive_max_pool3d_with_indices(ember.ones(1, 2, 2, 2), 1)[0].shape
        ember.Size([1, 1, 1, 1])
    """
    return _adaptive_max(input, 3, output_size, "adaptive_max_pool3d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length.

    Example::

        >>> F.adaptive_max_pool1d(ember.tensor([[1., 3., 2.]]), 2)
        tensor([[3., 3.]])
    """
    values, indices = _adaptive_max(input, 1, output_size, "adaptive_max_pool1d")
    return (values, indices) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed (H, W) output (``None`` keeps that input size).

    Example::

        >>> F.adaptive_max_pool2d(ember.ones(3, 5, 7), 2).shape
        ember.Size([3, 2, 2])
    """
    values, indices = _adaptive_max(input, 2, output_size, "adaptive_max_pool2d")
    return (values, indices) if return_indices else values


@autocast_policy(cpu="fp32")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling to a fixed (D, H, W) output.

    Example::

        >>> F.adaptive_max_pool3d(ember.ones(1, 4, 4, 4), 2).shape
        ember.Size([1, 2, 2, 2])
    """
    values, indices = _adaptive_max(input, 3, output_size, "adaptive_max_pool3d")
    return (values, indices) if return_indices else values
