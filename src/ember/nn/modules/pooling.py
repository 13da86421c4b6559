"""nn modules: pooling layers (max, average, adaptive, power-average, max-unpooling).

Each module stores torch's attributes (so ``repr`` matches) and calls its functional form in
:mod:`ember.nn._functional.pooling`.
"""

from __future__ import annotations

from .._functional import pooling as F
from .fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _ntuple(value, n):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices",
                     "ceil_mode"]

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                        ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over (C, L) or (N, C, L) inputs.

    Example::

        >>> ember.nn.MaxPool1d(2)(ember.tensor([[1., 3., 2., 0.]]))
        tensor([[3., 2.]])
    """

    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over (C, H, W) or (N, C, H, W) inputs.

    Example::

        >>> ember.nn.MaxPool2d(2)(ember.ones(1, 3, 4, 4)).shape
        ember.Size([1, 3, 2, 2])
    """

    _fn = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over (C, D, H, W) or (N, C, D, H, W) inputs.

    Example::

        >>> ember.nn.MaxPool3d(2)(ember.ones(1, 2, 4, 4, 4)).shape
        ember.Size([1, 2, 2, 2, 2])
    """

    _fn = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """1-D average pooling over (C, L) or (N, C, L) inputs.

    Example::

        >>> ember.nn.AvgPool1d(2)(ember.tensor([[1., 3., 2., 0.]]))
        tensor([[2., 1.]])
    """

    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over (C, H, W) or (N, C, H, W) inputs.

    Example::

        >>> ember.nn.AvgPool2d(2)(ember.ones(1, 3, 4, 4)).shape
        ember.Size([1, 3, 2, 2])
    """

    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over (C, D, H, W) or (N, C, D, H, W) inputs.

    Example::

        >>> ember.nn.AvgPool3d(2)(ember.ones(1, 2, 4, 4, 4)).shape
        ember.Size([1, 2, 2, 2, 2])
    """

    _fn = staticmethod(F.avg_pool3d)


class _AdaptiveAvgPoolNd(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return self._fn(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length.

    Example::

        >>> ember.nn.AdaptiveAvgPool1d(2)(ember.ones(3, 5)).shape
        ember.Size([3, 2])
    """

    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (H, W) output size.

    Example::

        >>> ember.nn.AdaptiveAvgPool2d((2, 3))(ember.ones(1, 3, 7, 7)).shape
        ember.Size([1, 3, 2, 3])
    """

    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed (D, H, W) output size.

    Example::

        >>> ember.nn.AdaptiveAvgPool3d(1)(ember.ones(1, 2, 4, 4, 4)).shape
        ember.Size([1, 2, 1, 1, 1])
    """

    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length.

    Example::

        >>> ember.nn.AdaptiveMaxPool1d(2)(ember.ones(3, 5)).shape
        ember.Size([3, 2])
    """

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (H, W) output size.

    Example::

        >>> ember.nn.AdaptiveMaxPool2d(2)(ember.ones(1, 3, 7, 7)).shape
        ember.Size([1, 3, 2, 2])
    """

    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed (D, H, W) output size.

    Example::

        >>> ember.nn.AdaptiveMaxPool3d(1)(ember.ones(1, 2, 4, 4, 4)).shape
        ember.Size([1, 2, 1, 1, 1])
    """

    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")

    def forward(self, input):
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                        self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling: ``(sum over the window of x^p)^(1/p)``.

    Example::

        >>> ember.nn.LPPool1d(2, 2)(ember.tensor([[3., 4.]]))
        tensor([[5.]])
    """

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling.

    Example::

        >>> ember.nn.LPPool2d(1, 2)(ember.ones(1, 2, 2))
        tensor([[[4.]]])
    """

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling.

    Example::

        >>> ember.nn.LPPool3d(1, 2)(ember.ones(1, 2, 2, 2))
        tensor([[[[8.]]]])
    """

    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding,
                        output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool1d` (non-maxima become zero).

    Example::

        >>> ember.nn.MaxUnpool1d(2)(ember.tensor([[3.]]), ember.tensor([[1]]))
        tensor([[0., 3.]])
    """

    _nd = 1
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool2d`.

    Example::

        >>> ember.nn.MaxUnpool2d(2)(ember.ones(1, 1, 1), ember.tensor([[[3]]])).shape
        ember.Size([1, 2, 2])
    """

    _nd = 2
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of :class:`MaxPool3d`.

    Example::

        >>> ember.nn.MaxUnpool3d(2)(ember.ones(1, 1, 1, 1), ember.tensor([[[[7]]]])).shape
        ember.Size([1, 2, 2, 2])
    """

    _nd = 3
    _fn = staticmethod(F.max_unpool3d)

# torch defines these classes in this module: their __module__ names it, so that a pickled
# model names torch's path for them (ember.save writes torch.<path>)
for _cls in (FractionalMaxPool2d, FractionalMaxPool3d):
    _cls.__module__ = __name__
