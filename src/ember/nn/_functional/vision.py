"""nn.functional: vision ops (pixel/channel shuffle, interpolate/upsample, grid_sample,
affine_grid).

All are composites of ember ops, so autograd (and double backward where the pieces allow)
comes for free. Interpolation is separable: one spatial dim at a time, each output position
reads 1 (nearest), 2 (linear) or 4 (cubic) input positions along that dim through
``index_select`` and mixes them with per-position weights, using torch's source-index
formulas (computed in float32 for float32/half inputs, as torch's ``opmath`` does).
uint8 bilinear/bicubic and ``antialias=True`` follow torch's separable kernels instead: the
last dim first, each output a normalised window of taps (uint8: fixed-point int16 weights,
rounded and saturated after each dim, exactly as torch).
``grid_sample`` gathers the 2^d corners of each sample point (4x4 taps for bicubic) from the
flattened input planes.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor, tensor
from ...ops._registry import _short_name, autocast_policy
from ...ops._signature import signature
from ...ops.pointwise import where
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample",
           "affine_grid"]


def _check_tensor(input, name, arg="input"):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


# ---------------------------------------------------------------- shuffles


@signature("pixel_shuffle(Tensor input, int upscale_factor) -> Tensor")
def pixel_shuffle(input, upscale_factor):
    """Rearrange ``(*, C*r^2, H, W)`` into ``(*, C, H*r, W*r)``.

    Example::

        >>> F.pixel_shuffle(ember.ones(1, 8, 3, 3), 2).shape
        ember.Size([1, 2, 6, 6])
    """
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    lead = tuple(lead)
    n = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(lead + (c // (r * r), h * r, w * r))


@signature("pixel_unshuffle(Tensor input, int downscale_factor) -> Tensor")
def pixel_unshuffle(input, downscale_factor):
    """Rearrange ``(*, C, H*r, W*r)`` into ``(*, C*r^2, H, W)``, the inverse of pixel_shuffle.

    Example::

        >>> F.pixel_unshuffle(ember.ones(1, 2, 6, 6), 2).shape
        ember.Size([1, 8, 3, 3])
    """
    _check_tensor(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    if input.numel() == 0:
        return input.clone()  # torch's CPU kernel returns an empty input's shape unchanged
    lead = tuple(lead)
    n = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(lead + (c * r * r, h // r, w // r))


@signature("channel_shuffle(Tensor input, SymInt groups) -> Tensor")
def channel_shuffle(input, groups):
    """Split the channels (dim 1) into ``groups`` and interleave them.

    Example::

        >>> F.channel_shuffle(ember.arange(4.).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    x = input.reshape((n, g, c // g) + tuple(rest)).transpose(1, 2)
    return x.reshape(tuple(input.shape))


native_channel_shuffle = channel_shuffle


# ---------------------------------------------------------------- interpolate

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_CUBIC_A = -0.75


def _opmath(dtype):
    return np.float64 if dtype is dt.float64 else np.float32


def _area_scale(n, o, align_corners, scale, work):
    """torch's ``area_pixel_compute_scale``: the source step per output position."""
    if align_corners:
        return work((n - 1) / (o - 1)) if o > 1 else work(0)
    if scale is not None and scale > 0:
        return work(1.0 / scale)
    return work(n) / work(o)


def _source_index(o, scale, align_corners, cubic, work):
    dst = np.arange(o, dtype=work)
    if align_corners:
        return scale * dst
    src = scale * (dst + work(0.5)) - work(0.5)
    return src if cubic else np.maximum(src, work(0))


def _nearest_index(n, o, scale, exact, shortcuts):
    if shortcuts and o == n:  # torch's 2-D nearest kernel copies / halves these directly
        return np.arange(o)
    if shortcuts and o == 2 * n:
        return np.arange(o) >> 1
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n) / \
        np.float32(o)
    dst = np.arange(o, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s)
    return np.minimum(src.astype(np.int64), n - 1)


def _cubic_weights(t, work):
    a = work(_CUBIC_A)

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(n, o, mode, align_corners, scale, work, nd):
    """(indices, weights) per tap along one dim: lists of (o,) arrays."""
    if mode in ("nearest", "nearest-exact"):
        exact = mode == "nearest-exact"
        return [_nearest_index(n, o, scale, exact, not exact and nd == 2)], None
    step = _area_scale(n, o, align_corners, scale, work)
    if mode == "bicubic":
        src = _source_index(o, step, align_corners, True, work)
        base = np.floor(src)
        t = (src - base).astype(work)
        base = base.astype(np.int64)
        index = [np.clip(base - 1 + k, 0, n - 1) for k in range(4)]
        return index, _cubic_weights(t, work)
    src = _source_index(o, step, align_corners, False, work)
    lo = np.minimum(np.floor(src).astype(np.int64), n - 1)
    frac = np.clip(src - lo, 0, 1).astype(work)
    hi = lo + (lo < n - 1)
    return [lo, hi], [(work(1) - frac).astype(work), frac]


def _separable_filter(mode, antialias):
    """torch's filter of the separable (antialias / uint8) kernels: the triangle for
    bilinear; for bicubic the cubic convolution with a = -0.5 (Keys) when antialiasing,
    else a = -0.75 (as its other bicubic kernels)."""
    if mode == "bilinear":
        return lambda x: np.maximum(1.0 - np.abs(x), 0.0)
    a = -0.5 if antialias else _CUBIC_A

    def cubic(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return cubic


def _antialias_taps(n, o, mode, align_corners, scale):
    """torch's antialiasing taps along one dim, in float64: (first input index (o,), weights
    (o, K), the largest weight); weights past an output's window are 0.

    Each output reads the input positions whose distance to its centre lies inside the
    filter's support, widened by the factor when downscaling, and normalises their weights
    to sum 1, so edge outputs drop taps rather than repeat the edge pixel."""
    step = float(_area_scale(n, o, align_corners, scale, np.float64))
    wide = step >= 1.0
    support = (2 if mode == "bilinear" else 4) * 0.5 * (step if wide else 1.0)
    invscale = 1.0 / step if wide else 1.0
    window = math.ceil(support) * 2 + 1
    center = step * (np.arange(o, dtype=np.float64) + 0.5)
    first = np.maximum(np.trunc(center - support + 0.5), 0).astype(np.int64)
    last = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), n)
    count = np.clip(last - first, 0, window)
    taps = np.arange(window)
    positions = (taps[None, :] + first[:, None]) - center[:, None] + 0.5
    weights = np.where(taps[None, :] < count[:, None],
                       _separable_filter(mode, True)(positions * invscale), 0.0)
    total = weights.sum(axis=1, keepdims=True)
    weights = np.where(total != 0, weights / np.where(total == 0, 1.0, total), weights)
    return first, weights, float(weights.max(initial=0.0))


def _edge_folded_taps(n, o, mode, align_corners, scale):
    """torch's uint8 taps without antialias, in float64: the 2 (bilinear) or 4 (bicubic)
    taps of its float kernels around the source index, where taps that fall off an edge
    add their weight to the edge pixel's. Returns (first input index, weights (o, K), the
    largest weight seen while adding them up, as torch picks its precision from it)."""
    taps = 2 if mode == "bilinear" else 4
    support = taps // 2
    step = _area_scale(n, o, align_corners, scale, np.float64)
    real = _source_index(o, step, align_corners, taps > 2, np.float64)
    index = np.minimum(np.floor(real).astype(np.int64), n - 1)
    lam = np.clip(real - index, 0.0, 1.0)
    unbound = index - support + 1
    first = np.maximum(unbound, 0)
    count = np.clip(np.minimum(index + support + 1, n) - first, 0, taps)
    weights = np.zeros((o, taps))
    rows, slot, peak = np.arange(o), np.zeros(o, dtype=np.int64), 0.0
    fn = _separable_filter(mode, False)
    for j in range(taps):
        position = unbound + j
        slot = np.where(position <= 0, 0, np.where(position >= n - 1, count - 1, slot))
        weights[rows, slot] += fn((j + 1 - support) - lam)
        peak = max(peak, float(weights[rows, slot].max(initial=0.0)))
        slot = slot + 1
    return first, weights, peak


def _fixed_point(weights, largest):
    """torch's int16 weights of its uint8 kernels: the most fractional bits (the precision)
    that keep ``largest`` below 2**15, each weight rounded half away from zero."""
    precision = 0
    while precision < 22 and int(0.5 + largest * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = weights * (1 << precision)
    return np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5)).astype(np.int64), precision


def _separable_order(spatial, out):
    """The dims torch's separable kernels resample: the last first, each only if its size
    changes."""
    dims = range(len(out) - 1, -1, -1)
    return [i for i in dims if out[i] != spatial[i]]


def _resample_uint8(input, out, scales, mode, align_corners, antialias):
    """uint8 bilinear/bicubic as torch's integer kernel: one dim at a time, each output the
    fixed-point sum of its taps, rounded and saturated to 0..255 after every dim."""
    spatial = list(input.shape[2:])
    xp = input._device.xp
    data = input._data
    taps = _antialias_taps if antialias else _edge_folded_taps
    for i in _separable_order(spatial, out):
        scale = scales[i] if scales is not None else None
        first, weights, largest = taps(spatial[i], out[i], mode, align_corners, scale)
        fixed, precision = _fixed_point(weights, largest)
        axis = 2 + i
        trailing = (1,) * (data.ndim - axis - 1)
        total = xp.full(data.shape[:axis] + (out[i],) + data.shape[axis + 1:],
                        (1 << precision) >> 1, dtype=np.int64)
        for k in range(fixed.shape[1]):
            index = xp.minimum(xp.asarray(first + k), spatial[i] - 1)
            weight = xp.asarray(fixed[:, k].reshape((-1,) + trailing))
            total += xp.take(data, index, axis=axis).astype(np.int64) * weight
        data = xp.clip(total >> precision, 0, 255).astype(np.uint8)
    if data is input._data:
        return input.clone()
    return Tensor._make(xp.ascontiguousarray(data), input._device)


def _resample_antialiased(x, out, scales, mode, align_corners, work):
    """Float bilinear/bicubic with antialias=True, as torch's separable kernel (ember ops,
    so it is differentiable)."""
    spatial = list(x.shape[2:])
    for i in _separable_order(spatial, out):
        scale = scales[i] if scales is not None else None
        first, weights, _ = _antialias_taps(spatial[i], out[i], mode, align_corners, scale)
        index = [np.minimum(first + k, spatial[i] - 1) for k in range(weights.shape[1])]
        x = _resample_dim(x, 2 + i, index, [w.astype(work) for w in weights.T], x.device)
    return x


def _resample_dim(x, d, index, weights, device):
    """Mix ``x`` along dim ``d``: ``sum_k x[index_k] * weights_k``."""
    if weights is None:
        return x.index_select(d, tensor(index[0], device=device))
    trailing = (1,) * (x.dim() - d - 1)
    total = None
    for idx, w in zip(index, weights):
        term = x.index_select(d, tensor(idx, device=device)) * tensor(
            w.reshape((-1,) + trailing), dtype=x.dtype, device=device)
        total = term if total is None else total + term
    return total


def _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode):
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(isinstance(s, numbers.Integral) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] "
                                f"or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * nd
        scales = None
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != nd:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, "
                    "C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * nd
        out = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out is None:
        recompute_scale_factor = True
    spatial = list(input.shape[2:])
    if recompute_scale_factor:
        out = [math.floor(n * s) for n, s in zip(spatial, scales)]
        scales = None
    if out is None:
        out = [math.floor(float(n) * s) for n, s in zip(spatial, scales)]
    return out, scales


@autocast_policy(cuda="fp32")
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize ``(N, C, *spatial)`` to ``size`` or by ``scale_factor``.

    ``mode``: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear'/'bicubic' (4-D),
    'trilinear' (5-D) or 'area' (adaptive average pooling). ``align_corners`` (linear
    modes) maps the corner pixel centres onto each other.

    Example::

        >>> F.interpolate(ember.tensor([[[1., 2.]]]), scale_factor=2, mode="linear")
        tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])
    """
    _check_tensor(input, "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    ndim = input.dim()
    expected = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
    if mode not in _MODES or ndim not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    out, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor, mode)
    if antialias:
        if not (mode in ("bilinear", "bicubic") and ndim == 4):
            raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                             "modes and requires a 4-D tensor as input")
    if mode in expected and expected[mode] != ndim:
        needs = {3: "3D", 4: "4D", 5: "5D"}[expected[mode]]
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {needs} input")
    spatial = list(input.shape[2:])
    if any(n <= 0 for n in spatial) or any(o <= 0 for o in out):
        letters = ("W",) if len(out) == 1 else ("H", "W") if len(out) == 2 else ("D", "H", "W")
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{c}: {n}" for c, n in zip(letters, spatial)) + ") and output ("
            + ", ".join(f"{c}: {o}" for c, o in zip(letters, out)) + ")")
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[ndim - 3]
        return pool(input, out)
    return _resample(input, out, scales, mode, align_corners, antialias)


def _resample(input, out, scales, mode, align_corners, antialias):
    """``input`` resampled to the spatial size ``out`` (``scales``: the factors torch's
    kernels map coordinates with, when given); what interpolate and the ATen upsample
    operators (``ember.ops.aten._upsample_bilinear2d_aa``...) share."""
    spatial = list(input.shape[2:])
    ndim = input.dim()
    d = input.dtype
    nearest = mode in ("nearest", "nearest-exact")
    if d is dt.uint8 and mode in ("bilinear", "bicubic"):
        return _resample_uint8(input, out, scales, mode, align_corners, antialias)
    if not d.is_floating_point and not (d is dt.uint8 and nearest):
        kernel = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}
        name = kernel.get(mode, f"upsample_{mode}") + f"{ndim - 2}d"
        raise NotImplementedError(f'"{name}" not implemented for \'{_short_name(d)}\'')
    work = _opmath(d)
    x = input
    low = d in (dt.float16, dt.bfloat16) and not nearest
    if low:
        x = x.float()
    if antialias:
        x = _resample_antialiased(x, out, scales, mode, align_corners, work)
        return x.to(d) if low else x if x is not input else input.clone()
    for i, o in enumerate(out):
        n = spatial[i]
        scale = scales[i] if scales is not None else None
        index, weights = _taps(n, o, mode, align_corners, scale, work, len(out))
        if weights is None and np.array_equal(index[0], np.arange(n)):
            continue
        x = _resample_dim(x, 2 + i, index, weights, input.device)
    if x is input:
        x = input.clone()
    return x.to(d) if low else x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate`.

    Example::

        >>> F.upsample(ember.ones(1, 1, 2), scale_factor=2).shape
        ember.Size([1, 1, 4])
    """
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``.

    Example::

        >>> F.upsample_nearest(ember.ones(1, 1, 2), scale_factor=2).shape
        ember.Size([1, 1, 4])
    """
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``.

    Example::

        >>> F.upsample_bilinear(ember.ones(1, 1, 2, 2), scale_factor=2).shape
        ember.Size([1, 1, 4, 4])
    """
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- grid_sample / affine_grid

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return c * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (c - low).abs()
    extra = c.fmod(span)
    flips = (c / span).floor()
    return where(flips.fmod(2) == 0, extra + low, span - extra + low)


def _unnormalize(c, size, align_corners):
    """A normalised grid coordinate in [-1, 1] as a pixel coordinate (no padding yet)."""
    if align_corners:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def _pad_coordinate(c, size, padding_mode, align_corners, nan_to=0):
    """A pixel coordinate moved inside the input as ``padding_mode`` says ('zeros' leaves it);
    a NaN (from a NaN grid point, or an infinite one reflected) lands on ``nan_to``."""
    if padding_mode == "border":
        c = _clip(c, size, nan_to)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = _clip(c, size, nan_to)
    return c


def _clip(c, size, nan_to):
    return where(c.isnan(), c.new_full((), nan_to), c.clamp(0, size - 1))


def _source_coordinate(c, size, padding_mode, align_corners, nan_to):
    """A normalised grid coordinate in [-1, 1] as a (padded) pixel coordinate."""
    return _pad_coordinate(_unnormalize(c, size, align_corners), size, padding_mode,
                           align_corners, nan_to)


_GRID_SAMPLER_KERNELS = {2: "grid_sampler_2d_cpu_kernel_impl", 3: "grid_sampler3d_cpu"}


@autocast_policy("fp32")
@signature("grid_sample(Tensor input, Tensor grid, str mode='bilinear', "
           "str padding_mode='zeros', bool? align_corners=None) -> Tensor")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` ``(N, C, *spatial)`` at the normalised points of ``grid``
    ``(N, *out, nd)``, ``grid[..., 0]`` being x (the last dim).

    ``mode``: 'bilinear', 'nearest' or 'bicubic' (4-D input only); ``padding_mode``: 'zeros',
    'border', 'reflection'.

    Example::

        >>> F.grid_sample(ember.ones(1, 1, 2, 2), ember.zeros(1, 1, 1, 2),
        ...               align_corners=False)
        tensor([[[[1.]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    in_shape, grid_shape = list(input.shape), list(grid.shape)
    if in_shape[0] != grid_shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {in_shape} and grid with sizes "
                           f"{grid_shape}")
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {in_shape} and grid with "
                           f"sizes {grid_shape}")
    nd = input.dim() - 2
    if grid_shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {grid_shape}")
    for i, n in enumerate(in_shape[2:]):
        if n <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {in_shape} with dimension "
                               f"{i + 2} being empty")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:  # (the shapes first, then the dtypes, as torch)
        raise dt.no_kernel_for(_GRID_SAMPLER_KERNELS[nd], input.dtype)
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {_short_name(input.dtype)} but found "
                           f"{_short_name(grid.dtype)}")
    n, c = in_shape[:2]
    spatial = in_shape[2:]
    out = grid_shape[1:-1]
    points = math.prod(out)
    g = grid.reshape(n, points, nd)
    if mode == "bicubic":
        # the padding applies to each of the 4x4 taps, not to the sample point: torch's rule
        coords = [_unnormalize(g[..., 1 - j], spatial[j], align_corners) for j in range(2)]
    else:
        # torch's 2-D kernel clips a NaN coordinate to 0, its 3-D one to the far edge
        coords = [_source_coordinate(g[..., nd - 1 - j], spatial[j], padding_mode,
                                     align_corners, 0 if nd == 2 else spatial[j] - 1)
                  for j in range(nd)]  # coords[j] runs along spatial dim j
    strides = [math.prod(spatial[j + 1:]) for j in range(nd)]
    planes = input.reshape(n, c, math.prod(spatial))

    def read(positions, valid):
        flat = None
        for j, p in enumerate(positions):  # (a NaN position is not valid: read anything)
            term = p.nan_to_num(0.0).clamp(0, spatial[j] - 1).long() * strides[j]
            flat = term if flat is None else flat + term
        values = planes.gather(2, flat.unsqueeze(1).expand(n, c, points))
        return where(valid.unsqueeze(1), values, values.new_zeros(()))

    def inside(positions):
        valid = None
        for j, p in enumerate(positions):
            ok = (p >= 0).logical_and(p <= spatial[j] - 1)
            valid = ok if valid is None else valid.logical_and(ok)
        return valid

    if mode == "nearest":
        positions = [cj.detach().round() for cj in coords]
        result = read(positions, inside(positions))
    elif mode == "bicubic":
        result = _bicubic_sum(coords, spatial, padding_mode, align_corners, read, inside)
    else:
        lows = [cj.detach().floor() for cj in coords]
        result = None
        for corner in itertools.product((0, 1), repeat=nd):
            positions = [lo + bit for lo, bit in zip(lows, corner)]
            weight = None
            for cj, lo, bit in zip(coords, lows, corner):
                w = cj - lo if bit else lo + 1 - cj
                weight = w if weight is None else weight * w
            valid = inside(positions)
            if nd == 3:  # torch's 3-D kernel skips a corner outside the input; its 2-D one
                weight = where(valid, weight, weight.new_zeros(()))  # multiplies zero by
            term = read(positions, valid) * weight.unsqueeze(1)  # the weight: NaN stays
            result = term if result is None else result + term
    return result.reshape([n, c] + out)


def _bicubic_sum(coords, spatial, padding_mode, align_corners, read, inside):
    """Torch's bicubic grid sampling: the 4x4 pixels around each point, weighted by cubic
    convolution (A = -0.75) of the point's fractional offsets; each tap pixel is padded on
    its own (so a point near the border still mixes 16 distinct reads)."""
    lows = [cj.detach().floor() for cj in coords]
    weights = [_cubic_weights(cj - lo, float) for cj, lo in zip(coords, lows)]
    result = None
    for taps in itertools.product(range(4), repeat=2):
        positions = [_pad_coordinate(lo + (k - 1), size, padding_mode, align_corners)
                     for lo, k, size in zip(lows, taps, spatial)]
        valid = inside(positions)
        weight = weights[0][taps[0]] * weights[1][taps[1]]
        term = read(positions, valid) * weight.unsqueeze(1)
        result = term if result is None else result + term
    return result


def _base_coords(steps, align_corners, dtype, device):
    from ...ops.creation import linspace

    if steps <= 1:
        return tensor(np.zeros(steps), dtype=dtype, device=device)
    values = linspace(-1, 1, steps, dtype=dtype, device=device)
    if not align_corners:
        values = values * (steps - 1) / steps
    return values


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)), for :func:`grid_sample`.

    Example::

        >>> F.affine_grid(ember.tensor([[[1., 0., 0.], [0., 1., 0.]]]), (1, 1, 2, 2),
        ...               align_corners=True)[0, 0]
        tensor([[-1., -1.],
                [ 1., -1.]])
    """
    _check_tensor(theta, "affine_grid", "theta")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given = size
    size = list(size)
    shape = tuple(theta.shape)
    if len(size) == 4:
        if theta.dim() != 3 or shape[-2] != 2 or shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or shape[-2] != 3 or shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size "
                                  f"{given}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    nd = len(spatial)
    n = size[0]
    if shape[0] != n:
        raise RuntimeError(f"Expected size[0] ({n}) to match theta's batch size ({shape[0]})")
    from ...ops.creation import ones
    from ...ops.shape import stack

    axes = [_base_coords(s, align_corners, theta.dtype, theta.device) for s in spatial]
    # base[..., k] = coordinate along spatial dim nd-1-k (x first), then a column of ones
    columns = []
    for k in range(nd):
        j = nd - 1 - k
        view = [1] * nd
        view[j] = spatial[j]
        columns.append(axes[j].reshape(view).expand(*spatial))
    columns.append(ones(spatial, dtype=theta.dtype, device=theta.device))
    base = stack(columns, -1).reshape(1, math.prod(spatial), nd + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape([n] + spatial + [nd])
