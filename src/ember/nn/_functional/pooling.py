"""nn.functional: pooling (max, average, adaptive, power-average, max-unpooling).

Max and average pooling are :class:`~ember.ops._registry.Op` primitives whose kernels loop
over the *kernel offsets* (a handful) and do whole-tensor strided-slice work per offset, never
over pixels. Max pooling returns torch's flat indices into each input plane (the first maximum
in scan order, the last NaN); its gradient scatters through those indices with a dedicated
backward op whose own derivative is a gather, so double backward works. Average pooling is
the linear map ``window_sum / divisor``; its backward op is the adjoint map and each is the
other's derivative. Adaptive average pooling is separable: one small averaging matrix per
spatial dim applied with ``matmul`` (a reshape-and-mean when the size divides evenly).
Adaptive max pooling gathers every (clamped) window and takes one argmax over it.
"""

from __future__ import annotations

import builtins
import collections.abc
import itertools
import math
import operator

import numpy as np

from ... import _dtype as dt
from ..._device import META
from ..._tensor import Tensor
from ...func import _batching_rules as _batching
from ...ops._registry import Op, _short_name, autocast_policy
from ...ops._signature import signature

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_LOW = dt.LOW_PRECISION
_F32 = np.dtype(np.float32)
_WORDS = {1: "one int", 2: "two ints", 3: "three ints"}


# ---------------------------------------------------------------- argument helpers


def _check_tensor(input, name, arg="input", pos=1):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(input).__name__}")


def _int(value, name, arg, pos=0):
    """``value`` as a Python int, refused as torch's int-list parser does (a float, a str or a
    floating tensor is a TypeError, never truncated); NumPy and 0-dim integer tensors pass.

    Example::

        >>> _int(np.int64(2), "avg_pool3d", "kernel_size")
        2
    """
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, but found element "
                        f"of type {type(value).__name__} at pos {pos}") from None


def _ints(value, n, name, arg, none_ok=False, rule="must either be a single int, or a tuple "
          "of {n}", exact=True):
    """``value`` (an int or a sequence of 1 or ``n`` ints) as an ``n``-tuple of ints
    (``exact=False``: the elements as given, for sizes torch only does Python arithmetic on)."""
    to_int = _int if exact else (lambda v, *_: v)
    if value is None or (none_ok and isinstance(value, (tuple, list)) and len(value) == 0):
        return None
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise RuntimeError(f"{name}: {arg} {rule.format(n=_WORDS[n])}")
        return tuple(to_int(v, name, arg, i) for i, v in enumerate(value))
    return (to_int(value, name, arg),) * n


def _check_dtype(input, name, allow_int=True):
    d = input.dtype
    if d is dt.bool or d.is_complex or (not allow_int and not d.is_floating_point):
        raise NotImplementedError(f'"{name}" not implemented for \'{_short_name(d)}\'')


def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling output length (floor division, the ceil_mode rule on the last window)."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _check_pool_input(input, nd, name):
    """torch's checks for a (C, *spatial) or (N, C, *spatial) pooling input."""
    shape = tuple(input.shape)
    if nd == 1:
        if len(shape) not in (2, 3) or any(n == 0 for n in shape[-2:]):
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional "
                               f"0 dim batch size for input, but got:{list(shape)}")
        return
    low = "3D or 4D" if nd == 2 else "4D or 5D"
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {low} (batch mode) tensor expected for input")
    if any(n == 0 for n in shape[-nd - 1:]):
        raise RuntimeError(f"Expected {low} (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{list(shape)}")


def _letters(nd):
    return ("W",) if nd == 1 else ("H", "W") if nd == 2 else ("T", "H", "W")


def _check_geometry(input, nd, name, kernel, stride, padding, dilation, ceil_mode,
                    max_pool=True):
    """Validate the pooling geometry as torch does; return the output spatial sizes."""
    letters = _letters(nd)
    if nd == 1 and max_pool:
        checks = (("kernel_size", kernel, "must be greater than zero", lambda v: v > 0),
                  ("stride", stride, "must be greater than zero", lambda v: v > 0),
                  ("padding", padding, "must be non-negative", lambda v: v >= 0),
                  ("dilation", dilation, "must be greater than zero", lambda v: v > 0))
        for arg, values, what, ok in checks:
            if not ok(values[0]):
                raise RuntimeError(f"max_pool1d() {arg} {what}, but got {values[0]}")
        if padding[0] > kernel[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, "
                               f"but got padding={padding[0]} and kernel_size={kernel[0]}")
        _check_pool_input(input, 1, name)
        out = _pool_out(input.shape[-1], kernel[0], stride[0], padding[0], dilation[0],
                        ceil_mode)
        if out < 1:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
        return (out,)
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got " + " ".join(
            f"k{c}: {k}" for c, k in zip(letters, kernel)))
    if any(s < 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got " + " ".join(
            f"d{c}: {s}" for c, s in zip(letters, stride)))
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero, but got " + " ".join(
            f"dilation{c}: {d}" for c, d in zip(letters, dilation)))
    if max_pool:
        _check_pool_input(input, nd, name)
    else:
        _check_avg_input(input, nd, name)
    if any(p < 0 for p in padding):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    if any(p > k // 2 for k, p in zip(kernel, padding)):
        raise RuntimeError("pad should be smaller than or equal to half of kernel size, but "
                           "got " + ", ".join(f"pad{c} = {p}" for c, p in
                                              zip(reversed(letters), reversed(padding)))
                           + ", " + ", ".join(f"k{c} = {k}" for c, k in
                                              zip(reversed(letters), reversed(kernel))))
    spatial = tuple(input.shape[-nd:])
    out = tuple(_pool_out(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))
    if any(o < 1 for o in out):
        planes = input.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (planes,) + spatial))}). "
                           f"Calculated output size: ({'x'.join(map(str, (planes,) + out))}). "
                           "Output size is too small")
    return out


def _check_avg_input(input, nd, name):
    shape = list(input.shape)
    low = "3D or 4D" if nd == 2 else "4D or 5D"
    if nd == 2 and len(shape) < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{-nd - 1})")
    if len(shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {low} (batch mode) tensor expected for input")
    inner = shape[-nd - 1:]
    for i, n in enumerate(inner):
        if n == 0:
            if nd == 2:
                raise RuntimeError(f"Expected {low} (batch mode) tensor with optional 0 dim "
                                   f"batch size for input, but got:{shape}")
            raise RuntimeError(f"avg_pool3d(): Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of {shape} and "
                               f"non-batch dimension {i} has length zero!")


# ---------------------------------------------------------------- window geometry


def _window_slices(offsets, stride, dilation, out):
    """The strided slice of the padded input seen by kernel position ``offsets``."""
    return (slice(None),) + tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                                  for o, s, d, n in zip(offsets, stride, dilation, out))


def _pad_extent(spatial, kernel, stride, padding, dilation, out):
    """Right padding that makes every (ceil_mode) window fit inside the padded input."""
    return tuple(builtins.max(0, (o - 1) * s + d * (k - 1) + 1 - (n + p))
                 for n, k, s, p, d, o in zip(spatial, kernel, stride, padding, dilation, out))


def _padded(xp, x, padding, extra, fill):
    """``x`` (B, *spatial) padded by ``padding`` left and ``padding + extra`` right."""
    if not any(padding) and not any(extra):
        return x
    shape = (x.shape[0],) + tuple(n + 2 * p + e for n, p, e in zip(x.shape[1:], padding, extra))
    out = xp.full(shape, fill, dtype=x.dtype)
    out[(slice(None),) + tuple(slice(p, p + n) for n, p in zip(x.shape[1:], padding))] = x
    return out


def _plane_strides(spatial):
    strides, acc = [], 1
    for n in reversed(spatial):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def _grid_sum(xp, parts):
    """``sum_i parts[i]`` with part ``i`` a 1-D array laid along spatial dim ``i``."""
    nd = len(parts)
    total = 0
    for i, part in enumerate(parts):
        shape = [1] * nd
        shape[i] = -1
        total = total + part.reshape(shape)
    return total


# ---------------------------------------------------------------- max pooling


def _lowest(dtype):
    floating = dtype.kind == "f" or dt.is_bfloat16_array_dtype(dtype)
    return -np.inf if floating else np.iinfo(dtype).min


def _max_pool_kernel(xp, a, *, nd, kernel, stride, padding, dilation, out):
    """Separable: the running max over the kernel offsets of the last dim, then of each
    earlier dim on that result, carrying the winning offsets along. Taking the first maximum
    of each row, then the first row with the largest maximum, is the first maximum in scan
    order; with NaN winning over everything after it, the last NaN (torch's rules)."""
    lead, spatial = a.shape[:-nd], a.shape[-nd:]
    dtype = a.dtype
    x = a.reshape((-1,) + spatial)
    if dt.is_bfloat16_array_dtype(dtype):
        x = x.astype(_F32)
    floating = x.dtype.kind == "f"
    # the NaN pass only where the input has NaN (one cheap reduction on the CPU; none on CuPy)
    nan_pass = floating and (bool(np.isnan(x.max())) if xp is np and x.size else floating)
    fill = _lowest(x.dtype)
    x = _padded(xp, x, padding, _pad_extent(spatial, kernel, stride, padding, dilation, out),
                fill)
    # the first kernel offset that lies inside the input, per output position along each dim
    firsts = []
    for i, (o, s, p, d) in enumerate(zip(out, stride, padding, dilation)):
        shape = [1] * (nd + 1)
        shape[1 + i] = o
        if p:
            st = xp.arange(o, dtype=np.int64) * s - p
            firsts.append(xp.where(st < 0, (-st + d - 1) // d, 0).reshape(shape))
        else:
            firsts.append(None)
    best, picks = x, []
    for i in reversed(range(nd)):
        best, picks = _max_along(xp, best, picks, 1 + i, kernel[i], stride[i], dilation[i],
                                 out[i], fill, nan_pass, firsts[i:])
    strides = _plane_strides(spatial)
    index = xp.empty(best.shape, dtype=np.int64)
    index[...] = _grid_sum(xp, [(xp.arange(o, dtype=np.int64) * s - p) * w
                                for o, s, p, w in zip(out, stride, padding, strides)])
    step = xp.empty(best.shape, dtype=np.int64)
    for pick, d, w in zip(picks, dilation, strides):
        xp.multiply(pick, d * w, out=step, dtype=np.int64)
        index += step
    # the values read back at the indices: exact (the running maxima may differ from the
    # winner in the sign of a zero)
    flat = index.reshape(index.shape[0], math.prod(out))
    values = xp.take_along_axis(a.reshape(flat.shape[0], math.prod(spatial)), flat, axis=1)
    return values.reshape(lead + out), index.reshape(lead + out)


def _max_along(xp, x, carried, axis, k, s, d, o, fill, nan_pass, firsts):
    """Running max of ``x`` over the ``k`` window offsets along ``axis``: the maxima, and the
    winning offset along ``axis`` followed by the ``carried`` offsets of the later dims read
    at the winning positions (``firsts``: the first valid offset of each of those dims, None
    where every offset is valid). Branch-free updates: a later offset wins where it is larger
    (or NaN), so the winning offset is a running max of ``mask * j``; carried offsets move by
    ``mask * (new - old)`` (exact in wrapping integer arithmetic)."""
    head = (slice(None),) * axis
    contiguous = axis != x.ndim - 1 or s == 1  # else copy each view: SIMD on contiguous data

    def view(arr, j):
        return arr[head + (slice(j * d, j * d + s * (o - 1) + 1, s),)]

    shape = view(x, 0).shape
    small = np.uint8 if k <= 255 else np.int64
    if firsts[0] is None:  # offset 0 is inside the input everywhere: start from it
        best = view(x, 0).copy()
        picks = [xp.zeros(shape, dtype=small)] + [view(c, 0).copy() for c in carried]
        begin = 1
    else:
        best = xp.full(shape, fill, dtype=x.dtype)
        picks = [xp.zeros(shape, dtype=c.dtype) for c in [xp.zeros((), dtype=small)] + carried]
        for pick, f in zip(picks, firsts):
            if f is not None:
                pick[...] = f
        begin = 0
    # work buffers, reused for every offset (fresh large arrays cost page faults)
    mask = xp.empty(shape, dtype=np.bool_)
    step = mask.view(np.uint8)
    won = xp.empty(shape, dtype=small)
    nan = xp.empty(shape, dtype=np.bool_) if nan_pass else None
    copy = None if contiguous else xp.empty(shape, dtype=x.dtype)
    changes = [xp.empty(shape, dtype=c.dtype) for c in carried]
    for j in range(begin, k):
        v = view(x, j)
        if copy is not None:
            xp.copyto(copy, v)
            v = copy
        xp.greater(v, best, out=mask)
        if nan_pass:
            xp.isnan(v, out=nan)
            mask |= nan
        xp.maximum(best, v, out=best)
        xp.multiply(step, small(j), out=won)
        xp.maximum(picks[0], won, out=picks[0])
        for pick, c, change in zip(picks[1:], carried, changes):
            xp.subtract(view(c, j), pick, out=change)
            change *= step
            pick += change
    return best, picks


def _max_pool_meta(a, *, nd, out, **_):
    shape = a.shape[:-nd] + out
    return (shape, a.dtype), (shape, np.dtype(np.int64))


_max_pool_op = Op("max_pool", _max_pool_kernel, meta=_max_pool_meta, save_inputs=False,
                  save_output=True, multi_output=True, differentiable_outputs=(0,),
                  grad_name="MaxPool2DWithIndicesBackward0", kind="nn")


def _ceil_mode(sizes, out, kernel, stride, padding, dilation):
    """1 when the traced output sizes are those of ``ceil_mode=True``."""
    floor = [(n + 2 * p - d * (k - 1) - 1) // s + 1
             for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    return int(list(out) != floor)


@_max_pool_op.defonnx
def _max_pool_onnx(ctx, x, nd, kernel, stride, padding, dilation, out):
    sizes = [ctx.static(s) for s in ctx.in_dims(0)[-nd:]]
    out = [ctx.static(s) for s in out]
    values = ctx.op("MaxPool", x, kernel_shape=list(kernel), strides=list(stride),
                    pads=list(padding) * 2, dilations=list(dilation),
                    ceil_mode=_ceil_mode(sizes, out, kernel, stride, padding, dilation))
    return values, None  # ember's indices (a flat position per window) are not exported


_max_pool_op.defbatch(_batching.trailing_dims)


def _scatter_kernel(xp, g, index, *, nd, shape, unique=False):
    """Sum ``g`` into zeros of ``shape`` at the flat per-plane positions ``index``
    (``unique``: no position repeats in a plane, e.g. disjoint windows: one put)."""
    spatial = shape[-nd:]
    plane = math.prod(spatial)
    planes = math.prod(shape[:-nd])
    dtype = g.dtype
    flat_index = (index.reshape(planes, -1)
                  + xp.arange(planes, dtype=np.int64)[:, None] * plane).reshape(-1)
    values = g.reshape(-1)
    if unique:
        out = xp.zeros(planes * plane, dtype=dtype)
        out[flat_index] = values
        return out.reshape(shape)
    if xp is np:
        work = np.float64 if dtype.kind == "f" or dtype in _LOW else dtype
        if values.dtype.kind == "c":
            real = np.bincount(flat_index, values.real, minlength=planes * plane)
            imag = np.bincount(flat_index, values.imag, minlength=planes * plane)
            return (real + 1j * imag).astype(dtype).reshape(shape)
        out = np.bincount(flat_index, values.astype(work, copy=False),
                          minlength=planes * plane)
        return out.astype(dtype, copy=False).reshape(shape)
    from ...ops._util import scatter_add  # (cupyx's, or the webgpu device's own)

    work = _F32 if dtype in _LOW else dtype
    out = xp.zeros(planes * plane, dtype=work)
    scatter_add(xp, out, flat_index, values.astype(work, copy=False))
    return out.astype(dtype, copy=False).reshape(shape)


_pool_scatter_op = Op("max_pool_backward", _scatter_kernel,
                      meta=lambda g, index, *, nd, shape, **_: (shape, g.dtype),
                      grad_name="MaxPool2DWithIndicesBackwardBackward0", kind="nn")
_pool_scatter_op.opt_out("onnx", "a backward kernel: exported models run inference")
_pool_scatter_op.defbatch(_batching.trailing_dims)


def _pool_gather(x, index, nd):
    """``x`` (B..., *spatial) read at the flat per-plane positions ``index`` (B..., *out)."""
    lead = tuple(x.shape[:-nd])
    flat = x.reshape(lead + (-1,))
    return flat.gather(-1, index.reshape(lead + (-1,))).reshape(tuple(index.shape))


@_max_pool_op.defderivative
def _max_pool_derivative(ctx, grad, grad_index, *, nd, kernel, stride, dilation, **_):
    # disjoint windows (each input position in one window at most): the indices never repeat
    unique = all(s >= (k - 1) * d + 1 for k, s, d in zip(kernel, stride, dilation))
    return (_pool_scatter_op(grad, ctx.output[1], nd=nd, shape=ctx._input_meta[0][0],
                             unique=unique),)


@_pool_scatter_op.defderivative
def _pool_scatter_derivative(ctx, grad, *, nd, shape, **_):
    return _pool_gather(grad, ctx.inputs[1], nd), None


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode, name):
    _check_tensor(input, name)
    if nd == 1 and isinstance(kernel_size, (tuple, list)) and len(kernel_size) != 1:
        raise RuntimeError(f"max_pool1d() kernel_size must be an int, list of ints or tuple of "
                           f"ints of size 1 but got size {len(kernel_size)}")
    kernel = _ints(kernel_size, nd, name, "kernel_size")
    stride = _ints(stride, nd, name, "stride", none_ok=True,
                   rule="must either be omitted, a single int, or a tuple of {n}") or kernel
    padding = _ints(padding, nd, name, "padding")
    dilation = _ints(dilation, nd, name, "dilation")
    out = _check_geometry(input, nd, name, kernel, stride, padding, dilation, ceil_mode)
    _check_dtype(input, name if nd > 1 else "max_pool1d_impl")  # (after the shape, as torch)
    return _max_pool_op(input, nd=nd, kernel=kernel, stride=stride, padding=padding,
                        dilation=dilation, out=out)


@signature("max_pool1d_with_indices(Tensor input, int[1] kernel_size, int[1]? stride=None, "
           "int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, "
           "PyObject return_indices=False) -> (Tensor, Tensor)")
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """1-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.max_pool1d_with_indices(ember.tensor([[1., 3., 2., 0.]]), 2)[1]
        tensor([[1, 2]])
    """
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d")


@signature("max_pool2d_with_indices(Tensor input, int[2] kernel_size, int[2]? stride=None, "
           "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, "
           "PyObject return_indices=False) -> (Tensor, Tensor)")
def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """2-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.max_pool2d_with_indices(ember.ones(1, 2, 2), 2)[1]
        tensor([[[0]]])
    """
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")


@signature("max_pool3d_with_indices(Tensor input, int[3] kernel_size, int[3]? stride=None, "
           "int[3] padding=0, int[3] dilation=1, bool ceil_mode=False, "
           "PyObject return_indices=False) -> (Tensor, Tensor)")
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """3-D max pooling returning ``(values, indices)``.

    Example::

        >>> F.max_pool3d_with_indices(ember.ones(1, 2, 2, 2), 2)[0].shape
        ember.Size([1, 1, 1, 1])
    """
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d")


@signature("max_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, "
           "int[1] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (C, L) or (N, C, L); ``stride`` defaults to ``kernel_size``.

    With ``return_indices`` also returns each maximum's position in its input row.

    Example::

        >>> F.max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[3., 2.]])
    """
    values, indices = _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                                "max_pool1d")
    return (values, indices) if return_indices else values


@signature("max_pool2d(Tensor input, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, "
           "int[2] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (C, H, W) or (N, C, H, W) (padding counts as -inf).

    With ``return_indices`` also returns each maximum's flat position in its input plane.

    Example::

        >>> F.max_pool2d(ember.arange(16.).reshape(1, 4, 4), 2)
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """
    values, indices = _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                                "max_pool2d")
    return (values, indices) if return_indices else values


@autocast_policy(cpu="fp32")
@signature("max_pool3d(Tensor input, int[3] kernel_size, int[3]? stride=None, int[3] padding=0, "
           "int[3] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (C, D, H, W) or (N, C, D, H, W).

    Example::

        >>> F.max_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2)
        tensor([[[[7.]]]])
    """
    values, indices = _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                                "max_pool3d")
    return (values, indices) if return_indices else values


# ---------------------------------------------------------------- average pooling


def _counts(xp, n, k, s, p, o, count_include_pad):
    """Per-output window sizes along one dim (torch's divisor rule)."""
    start = xp.arange(o, dtype=np.int64) * s - p
    end = xp.minimum(start + k, n + p)
    size = end - start
    if count_include_pad:
        return size
    return xp.minimum(end, n) - xp.maximum(start, 0)


def _divisor(xp, spatial, kernel, stride, padding, out, count_include_pad, divisor_override):
    if divisor_override is not None:
        return None
    parts = [_counts(xp, n, k, s, p, o, count_include_pad)
             for n, k, s, p, o in zip(spatial, kernel, stride, padding, out)]
    total = 1
    for i, part in enumerate(parts):
        shape = [1] * len(parts)
        shape[i] = -1
        total = total * part.reshape(shape)
    return total


def _avg_pool_kernel(xp, a, *, nd, kernel, stride, padding, out, count_include_pad,
                     divisor_override):
    lead, spatial = a.shape[:-nd], a.shape[-nd:]
    dtype = a.dtype
    x = a.reshape((-1,) + spatial)
    work = _F32 if dtype in _LOW else (np.int64 if dtype.kind in "iu" else dtype)
    x = x.astype(work, copy=False)
    ones = (1,) * nd
    x = _padded(xp, x, padding, _pad_extent(spatial, kernel, stride, padding, ones, out), 0)
    total = xp.zeros((x.shape[0],) + out, dtype=work)
    for offsets in itertools.product(*(range(k) for k in kernel)):
        total += x[_window_slices(offsets, stride, ones, out)]
    divisor = _divisor(xp, spatial, kernel, stride, padding, out, count_include_pad,
                       divisor_override)
    divisor = divisor_override if divisor is None else divisor.astype(work)
    if dtype.kind in "iu":
        quotient = xp.abs(total) // xp.abs(divisor)
        total = xp.where((total < 0) != (divisor < 0), -quotient, quotient)
    else:
        total = total / divisor
    return total.astype(dtype, copy=False).reshape(lead + out)


def _avg_pool_backward_kernel(xp, g, *, nd, kernel, stride, padding, out, count_include_pad,
                              divisor_override, shape):
    spatial = shape[-nd:]
    dtype = g.dtype
    work = _F32 if dtype in _LOW else dtype
    g = g.reshape((-1,) + out).astype(work, copy=False)
    divisor = _divisor(xp, spatial, kernel, stride, padding, out, count_include_pad,
                       divisor_override)
    g = g / (divisor_override if divisor is None else divisor.astype(work))
    ones = (1,) * nd
    extra = _pad_extent(spatial, kernel, stride, padding, ones, out)
    padded = xp.zeros((g.shape[0],) + tuple(n + 2 * p + e for n, p, e in
                                            zip(spatial, padding, extra)), dtype=work)
    for offsets in itertools.product(*(range(k) for k in kernel)):
        padded[_window_slices(offsets, stride, ones, out)] += g
    crop = padded[(slice(None),) + tuple(slice(p, p + n) for n, p in zip(spatial, padding))]
    return xp.ascontiguousarray(crop).astype(dtype, copy=False).reshape(shape)


_avg_pool_op = Op("avg_pool", _avg_pool_kernel, save_inputs=False,
                  meta=lambda a, *, nd, out, **_: (a.shape[:-nd] + out, a.dtype),
                  grad_name="AvgPool2DBackward0", kind="nn")
_avg_pool_backward_op = Op("avg_pool_backward", _avg_pool_backward_kernel, save_inputs=False,
                           meta=lambda g, *, shape, **_: (shape, g.dtype),
                           grad_name="AvgPool2DBackwardBackward0", kind="nn")


_avg_pool_backward_op.opt_out("onnx", "a backward kernel: exported models run inference")


@_avg_pool_op.defonnx
def _avg_pool_onnx(ctx, x, nd, kernel, stride, padding, out, count_include_pad,
                   divisor_override=None):
    if divisor_override is not None:
        ctx.fail("avg_pool with divisor_override has no ONNX form")
    sizes = [ctx.static(s) for s in ctx.in_dims(0)[-nd:]]
    out = [ctx.static(s) for s in out]
    return ctx.op("AveragePool", x, kernel_shape=list(kernel), strides=list(stride),
                  pads=list(padding) * 2, count_include_pad=int(count_include_pad),
                  ceil_mode=_ceil_mode(sizes, out, kernel, stride, padding, [1] * nd))


_avg_pool_op.defbatch(_batching.trailing_dims)
_avg_pool_backward_op.defbatch(_batching.trailing_dims)


@_avg_pool_op.defderivative
def _avg_pool_derivative(ctx, grad, **params):
    return (_avg_pool_backward_op(grad, shape=ctx._input_meta[0][0], **params),)


@_avg_pool_backward_op.defderivative
def _avg_pool_backward_derivative(ctx, grad, *, shape, **params):
    return (_avg_pool_op(grad, **params),)


def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, name):
    _check_tensor(input, name)
    if nd == 1:
        if input.dim() not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                               "tensor for argument #1 'self' (while checking arguments for "
                               "avg_pool1d)")
        for arg, value in (("kernel_size", kernel_size), ("stride", stride),
                           ("padding", padding)):
            if isinstance(value, (tuple, list)) and len(value) != 1 and not (
                    arg == "stride" and len(value) == 0):
                raise RuntimeError(f"avg_pool1d() argument '{arg}' should contain one int "
                                   f"(got {len(value)})")
        values = _avg_pool(input.unsqueeze(-2), 2, (1, _ints(kernel_size, 1, name, "")[0]),
                           None if stride is None or stride == () or stride == [] else
                           (1, _ints(stride, 1, name, "")[0]),
                           (0, _ints(padding, 1, name, "")[0]), ceil_mode, count_include_pad,
                           divisor_override, "avg_pool2d")
        return values.squeeze(-2)
    rule = ("must either be a single int, or a tuple of {n}" if nd == 2 else
            "must be a single int, or a tuple of {n}")
    kernel = _ints(kernel_size, nd, name, "kernel_size", rule=rule)
    stride = _ints(stride, nd, name, "stride", none_ok=True,
                   rule="must either be omitted, a single int, or a tuple of {n}") or kernel
    padding = _ints(padding, nd, name, "padding", rule=rule)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    d = input.dtype
    if not (d in (dt.float32, dt.float64, dt.int64) or (nd == 2 and d in (dt.float16,
                                                                             dt.bfloat16))):
        kernel_name = "avg_pool2d" if nd == 2 else "avg_pool3d_out_frame"
        raise NotImplementedError(f'"{kernel_name}" not implemented for \'{_short_name(d)}\'')
    out = _check_geometry(input, nd, name, kernel, stride, padding, (1,) * nd, ceil_mode,
                          max_pool=False)
    return _avg_pool_op(input, nd=nd, kernel=kernel, stride=stride, padding=padding, out=out,
                        count_include_pad=bool(count_include_pad),
                        divisor_override=divisor_override)


@signature("avg_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, "
           "bool ceil_mode=False, bool count_include_pad=True) -> Tensor")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over (C, L) or (N, C, L); ``stride`` defaults to ``kernel_size``.

    Example::

        >>> F.avg_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[2., 1.]])
    """
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None, "avg_pool1d")


@signature("avg_pool2d(Tensor input, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, "
           "bool ceil_mode=False, bool count_include_pad=True, "
           "int? divisor_override=None) -> Tensor")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over (C, H, W) or (N, C, H, W).

    ``count_include_pad`` counts zero padding in the divisor; ``divisor_override`` replaces it.

    Example::

        >>> F.avg_pool2d(ember.arange(16.).reshape(1, 4, 4), 2)
        tensor([[[ 2.5000,  4.5000],
                 [10.5000, 12.5000]]])
    """
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool2d")


@autocast_policy(cpu="fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over (C, D, H, W) or (N, C, D, H, W).

    Example::

        >>> F.avg_pool3d(ember.arange(8.).reshape(1, 2, 2, 2), 2)
        tensor([[[[3.5000]]]])
    """
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool3d")


# ---------------------------------------------------------------- power-average pooling


def _lp_pool(input, nd, norm_type, kernel_size, stride, ceil_mode, name):
    """Power-average pooling in torch's order of checks: the 2-d and 3-d forms first unpack a
    sequence ``kernel_size`` into ``nd`` sizes (a ValueError for another length), then raise
    ``input`` to ``norm_type``, then the average pooling parses the sizes."""
    if nd > 1 and isinstance(kernel_size, collections.abc.Iterable):
        count = len(list(kernel_size))
        if count != nd:
            raise ValueError(f"too many values to unpack (expected {nd})" if count > nd else
                             f"not enough values to unpack (expected {nd}, got {count})")
    _check_tensor(input, name)
    powered = input.pow(norm_type)
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    if stride is not None:
        out = pool(powered, kernel_size, stride, 0, ceil_mode)
    else:
        out = pool(powered, kernel_size, padding=0, ceil_mode=ceil_mode)
    kernel = _ints(kernel_size, nd, name, "kernel_size")
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


@signature("lp_pool1d(Tensor input, PyObject norm_type, PyObject kernel_size, int[1]? stride=None, "
           "bool ceil_mode=False) -> Tensor")
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x^p)^(1/p)``.

    Example::

        >>> F.lp_pool1d(ember.tensor([[3., 4.]]), 2, 2)
        tensor([[5.]])
    """
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode, "lp_pool1d")


@signature("lp_pool2d(PyObject input, PyObject norm_type, PyObject kernel_size, "
           "int[2]? stride=None, bool ceil_mode=False) -> Tensor")
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling.

    Example::

        >>> F.lp_pool2d(ember.ones(1, 2, 2), 1, 2)
        tensor([[[4.]]])
    """
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode, "lp_pool2d")


@signature("lp_pool3d(PyObject input, PyObject norm_type, PyObject kernel_size, "
           "int[3]? stride=None, bool ceil_mode=False) -> Tensor")
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling.

    Example::

        >>> F.lp_pool3d(ember.ones(1, 2, 2, 2), 1, 2)
        tensor([[[[8.]]]])
    """
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode, "lp_pool3d")


# ---------------------------------------------------------------- max unpooling


def _unpool_output_size(input, kernel, stride, padding, output_size, name):
    """The unpooled spatial sizes: ``output_size`` checked against the default, the one that
    ``kernel``/``stride``/``padding`` give; either must be ints (a float kernel is refused only
    where it makes the size a float, as in torch)."""
    nd = len(kernel)
    spatial = tuple(input.shape[-nd:])
    default = [(spatial[d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        return tuple(_int(o, name, "output_size", d) for d, o in enumerate(default))
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{low} and {high})")
    return tuple(_int(o, name, "output_size", d) for d, o in enumerate(output_size))


def _max_unpool(input, indices, nd, kernel_size, stride, padding, output_size, name):
    _check_tensor(input, name)
    _check_tensor(indices, name, "indices", 2)
    # torch's Python computes the output size from these; only max_unpool3d's kernel takes
    # stride and padding as typed int lists
    kernel = _ints(kernel_size, nd, name, "kernel_size", exact=False)
    stride = _ints(stride, nd, name, "stride", none_ok=True, exact=nd == 3) or kernel
    padding = _ints(padding, nd, name, "padding", exact=nd == 3)
    if nd == 1 and output_size is not None:
        output_size = tuple(output_size)
        if len(output_size) == 1 or len(output_size) == 3:
            output_size = output_size[-1:]
    out = _unpool_output_size(input, kernel, stride, padding, output_size, name)
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{_short_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d "
                           f"Tensor, but got a tensor with {input.dim()} dimensions.")
    _check_dtype(input, "max_unpool3d" if nd == 3 else "max_unpool2d", allow_int=False)
    lead = tuple(input.shape[:-nd])
    plane = math.prod(out)
    if input._device is not META and indices.numel():
        bad = (indices < 0).logical_or(indices >= plane)
        if bool(bad.any()):
            first = int(indices.reshape(-1)[bad.reshape(-1)][0])
            raise RuntimeError(f"Found an invalid max index: {first} (output volumes are of "
                               f"size {'x'.join(map(str, out))})")
    from ...ops.creation import zeros

    flat = zeros(lead + (plane,), dtype=input.dtype, device=input.device)
    flat = flat.scatter(-1, indices.reshape(lead + (-1,)), input.reshape(lead + (-1,)))
    return flat.reshape(lead + out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool1d`: values placed at ``indices``, zeros elsewhere.

    Example::

        >>> F.max_unpool1d(ember.tensor([[3.]]), ember.tensor([[1]]), 2)
        tensor([[0., 3.]])
    """
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d`.

    Example::

        >>> F.max_unpool2d(ember.tensor([[[3.]]]), ember.tensor([[[3]]]), 2)
        tensor([[[0., 0.],
                 [0., 3.]]])
    """
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d`.

    Example::

        >>> F.max_unpool3d(ember.ones(1, 1, 1, 1), ember.tensor([[[[7]]]]), 2).shape
        ember.Size([1, 2, 2, 2])
    """
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size,
                       "max_unpool3d")


# defined after everything here, which it imports
from .adaptive_pooling import (  # noqa: E402,F401  (moved to adaptive_pooling.py; importers use this path)
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
)
