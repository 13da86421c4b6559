"""nn modules: Conv1d/2d/3d and ConvTranspose1d/2d/3d.

Constructor signatures, attributes, parameter names/shapes, initialisation and ``repr`` are
torch's; ``forward`` calls :mod:`ember.nn.functional`'s conv functions (``padding_mode`` other
than ``'zeros'`` pads with ``F.pad`` first).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ...ops.creation import empty
from ...ops.shape import pad as _pad
from .. import init
from .._functional import conv as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value, n):
    if isinstance(value, Iterable) and not isinstance(value, str):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    """Shared constructor and ``repr`` of the convolution modules."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]
    _k = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        k = len(kernel_size)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            reversed_pad = [0, 0] * k
            if padding == "same":
                for d, kk, i in zip(dilation, kernel_size, range(k - 1, -1, -1)):
                    total = d * (kk - 1)
                    reversed_pad[2 * i] = total // 2
                    reversed_pad[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = reversed_pad
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(padding)
                                                          for _ in range(2))
        if transposed:
            shape = (in_channels, out_channels // groups) + tuple(kernel_size)
        else:
            shape = (out_channels, in_channels // groups) + tuple(kernel_size)
        self.weight = Parameter(empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw weight (Kaiming uniform, ``a=sqrt(5)``) and bias (uniform in
        ``+-1/sqrt(fan_in)``), as torch."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _function = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        k = self._k
        padding = padding if isinstance(padding, str) else _ntuple(padding, k)
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, k), _ntuple(stride, k),
                         padding, _ntuple(dilation, k), False, _ntuple(0, k), groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return type(self)._function(_pad(input, self._reversed_padding_repeated_twice,
                                             mode=self.padding_mode),
                                        weight, bias, self.stride, 0, self.dilation, self.groups)
        return type(self)._function(input, weight, bias, self.stride, self.padding,
                                    self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L) inputs.

    Example::

        >>> ember.nn.Conv1d(16, 33, 3, stride=2)(ember.randn(20, 16, 50)).shape
        ember.Size([20, 33, 24])
    """

    _k = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) inputs.

    Example::

        >>> ember.nn.Conv2d(1, 6, 5)(ember.randn(64, 1, 28, 28)).shape
        ember.Size([64, 6, 24, 24])
    """

    _k = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) inputs.

    Example::

        >>> ember.nn.Conv3d(2, 4, 3)(ember.randn(1, 2, 5, 5, 5)).shape
        ember.Size([1, 4, 3, 3, 3])
    """

    _k = 3
    _function = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _function = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        k = self._k
        padding = padding if isinstance(padding, str) else _ntuple(padding, k)
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, k), _ntuple(stride, k),
                         padding, _ntuple(dilation, k), True, _ntuple(output_padding, k),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims, dilation=None):
        if output_size is None:
            return _ntuple(self.output_padding, num_spatial_dims)
        non_spatial = 2 if input.dim() == num_spatial_dims + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + num_spatial_dims:
            output_size = output_size[non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{non_spatial + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        dilation = dilation if dilation is not None else (1,) * num_spatial_dims
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            size = ((input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d]
                    + dilation[d] * (kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + stride[d] - 1)
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{list(input.shape)[2:]})")
        return tuple(int(s) - lo for s, lo in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._k, self.dilation)
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding,
                                    output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L) inputs.

    Example::

        >>> ember.nn.ConvTranspose1d(16, 33, 3, stride=2)(ember.randn(20, 16, 50)).shape
        ember.Size([20, 33, 101])
    """

    _k = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution over (N, C_in, H, W) or (C_in, H, W) inputs; ``forward``
    takes an optional ``output_size`` that picks the output padding.

    Example::

        >>> ember.nn.ConvTranspose2d(16, 33, 3, stride=2)(ember.randn(2, 16, 5, 5)).shape
        ember.Size([2, 33, 11, 11])
    """

    _k = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution over (N, C_in, D, H, W) or (C_in, D, H, W) inputs.

    Example::

        >>> ember.nn.ConvTranspose3d(2, 4, 3)(ember.randn(1, 2, 3, 3, 3)).shape
        ember.Size([1, 4, 5, 5, 5])
    """

    _k = 3
    _function = staticmethod(F.conv_transpose3d)


_LAZY_VARIANTS = ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
                  "LazyConvTranspose2d", "LazyConvTranspose3d")


def __getattr__(name):
    # torch's lazy variants are importable from this module too; ember defines them in
    # lazy.py, which imports this module, so they are fetched on first use
    if name in _LAZY_VARIANTS:
        from . import lazy
        return getattr(lazy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
