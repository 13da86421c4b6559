"""Fractional max pooling (Graham, 2014): max over windows placed at pseudo-random strides.

For each (sample, channel) plane and each spatial dim, one random number ``u`` in [0, 1)
places the ``out`` windows of size ``k`` over the ``size`` input positions: with
``alpha = (size - k) / (out - 1)``, window ``i`` starts at ``int((i + u) * alpha) -
int(u * alpha)``, and the last one at ``size - k``. The arithmetic runs in the input's dtype,
as torch's kernel does, so the same ``_random_samples`` give the same windows.

The windows' flat indices are computed without gradient; the output gathers the input at the
chosen indices, so its gradient (scatter-add into the input) comes from ``gather``'s.
"""

from __future__ import annotations

import math

from ... import _dtype as dt
from ..._tensor import tensor
from ...autograd.grad_mode import no_grad
from ...ops.creation import arange
from ...ops.pointwise import where
from ...ops.random import rand

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _output_size(input, nd, output_size, output_ratio, name):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return _tuple(output_size, nd)
    if isinstance(output_ratio, (tuple, list)) and len(output_ratio) > nd and nd == 2:
        raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of "
                         "Ints.")
    ratio = _tuple(output_ratio, nd)
    return tuple(int(input.size(d - nd) * ratio[d]) for d in range(nd))


def _check_input(input, nd, op_name):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op_name}: Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    first_non_batch = 1 if input.dim() == nd + 2 else 0
    for d in range(first_non_batch, input.dim()):
        if input.size(d) == 0:
            raise RuntimeError(f"{op_name}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {d} "
                               "being empty.")


def _check_samples(samples, batch, channels, nd, input):
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.size(0) < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.size(1) != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.size(2) != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples.size(2)}.")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")


def _check_geometry(spatial, kernel, out, nd, op_name):
    for name, size, k, o in zip(_DIM_NAMES[nd], spatial, kernel, out):
        if o + k - 1 > size:
            raise RuntimeError(f"{op_name}: pool {name} {k} too large relative to input "
                               f"{name} {size}")


def _window_starts(sample, size, k, out):
    """Start of each of the ``out`` windows: shape ``sample.shape + (out,)``, int64.

    ``sample`` holds one random number per plane; the arithmetic stays in its dtype.
    """
    positions = arange(out, dtype=sample.dtype, device=sample.device)
    if out > 1:
        span = tensor(size - k, dtype=sample.dtype, device=sample.device)
        alpha = span / tensor(out - 1, dtype=sample.dtype, device=sample.device)
        u = sample.unsqueeze(-1)
        starts = ((positions + u) * alpha).to(dt.int64) - (u * alpha).to(dt.int64)
    else:
        starts = positions.to(dt.int64).expand(*sample.shape, out)
    last = arange(out, device=sample.device) == out - 1
    return where(last, size - k, starts)


def _window_flat_indices(samples, spatial, kernel, out):
    """Flat (per-plane) input index of every window element: (N, C, *out, prod(kernel)).

    The elements of one window come in row-major order (the last dim fastest), the order in
    which torch's kernel visits them.
    """
    nd = len(spatial)
    # torch's samples list width first for 2-D ((W, H)) and time first for 3-D ((T, H, W)).
    sample_of_dim = [1, 0] if nd == 2 else [0, 1, 2]
    flat = None
    stride = 1
    for d in reversed(range(nd)):
        starts = _window_starts(samples[..., sample_of_dim[d]], spatial[d], kernel[d], out[d])
        index = starts.unsqueeze(-1) + arange(kernel[d], device=samples.device)  # (N,C,o,k)
        # Place this dim's (o, k) axes among the nd output axes and nd window axes.
        shape = [index.size(0), index.size(1)] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], kernel[d]
        term = index.reshape(shape) * stride
        flat = term if flat is None else flat + term
        stride *= spatial[d]
    n, c = flat.shape[:2]
    return flat.reshape(n, c, *out, math.prod(kernel))


def _choose_in_window(candidates):
    """Position of torch's pick in each window: the last NaN if any, else the first maximum."""
    window = candidates.size(-1)
    is_nan = candidates.isnan()
    last_nan = (window - 1) - is_nan.flip(-1).to(dt.uint8).argmax(-1)
    first_max = candidates.argmax(-1)
    return where(is_nan.any(-1), last_nan, first_max)


def _fractional_max_pool(input, nd, kernel_size, output_size, output_ratio, samples, name,
                         op_name):
    kernel = _tuple(kernel_size, nd)
    out = _output_size(input, nd, output_size, output_ratio, name)
    _check_input(input, nd, op_name)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[:2]
    spatial = tuple(x.shape[2:])
    if samples is None:
        samples = rand(n, c, nd, dtype=input.dtype, device=input.device)
    _check_samples(samples, n, c, nd, input)
    _check_geometry(spatial, kernel, out, nd, op_name)
    planes = x.reshape(n, c, math.prod(spatial))  # (-1 is ambiguous for an empty batch)
    with no_grad():
        flat = _window_flat_indices(samples[:n].detach(), spatial, kernel, out)
        candidates = planes.detach().gather(2, flat.reshape(n, c, math.prod(flat.shape[2:]))
                                            ).reshape(flat.shape)
        chosen = _choose_in_window(candidates)
        indices = flat.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
    values = planes.gather(2, indices.reshape(n, c, math.prod(indices.shape[2:]))
                           ).reshape(indices.shape)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2-D fractional max pooling; returns ``(output, indices)`` (flat indices per plane).

    ``output_size`` (or ``output_ratio`` of the input size) sets the output's (H, W);
    ``_random_samples`` (N, C, 2), uniform in [0, 1) and in the input's dtype, fixes the
    window placement (its last dim is (width, height), as torch's).

    Example::

        >>> out, idx = F.fractional_max_pool2d_with_indices(ember.randn(1, 2, 9, 9), 2,
        ...                                                 output_size=4)
        >>> out.shape, idx.dtype
        (ember.Size([1, 2, 4, 4]), ember.int64)
    """
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio,
                                _random_samples, "fractional_max_pool2d",
                                "fractional_max_pool2d()")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-D fractional max pooling over (N, C, H, W) or (C, H, W) input.

    Example::

        >>> F.fractional_max_pool2d(ember.randn(1, 2, 9, 9), 3, output_ratio=0.5).shape
        ember.Size([1, 2, 4, 4])
    """
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3-D fractional max pooling; returns ``(output, indices)`` (flat indices per volume).

    ``_random_samples`` has shape (N, C, 3), ordered (time, height, width).

    Example::

        >>> out, idx = F.fractional_max_pool3d_with_indices(ember.randn(1, 2, 6, 6, 6), 2,
        ...                                                 output_size=3)
        >>> out.shape
        ember.Size([1, 2, 3, 3, 3])
    """
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio,
                                _random_samples, "fractional_max_pool3d",
                                "fractional_max_pool3d_out()")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input.

    Example::

        >>> F.fractional_max_pool3d(ember.randn(1, 2, 6, 6, 6), 2, output_ratio=0.5).shape
        ember.Size([1, 2, 3, 3, 3])
    """
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]
