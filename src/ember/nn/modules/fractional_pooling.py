"""nn modules: fractional max pooling (FractionalMaxPool2d, FractionalMaxPool3d)."""

from __future__ import annotations

from .._functional.fractional_pooling import fractional_max_pool2d, fractional_max_pool3d
from .module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _FractionalMaxPoolNd(Module):
    _nd = 0
    _functional = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        nd = self._nd
        self.kernel_size = _tuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output "
                             "size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return self._functional(input, self.kernel_size, self.output_size,
                                      self.output_ratio, self.return_indices,
                                      _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling: ``kernel_size`` windows at pseudo-random strides, giving
    ``output_size`` (or ``output_ratio`` times the input size).

    ``_random_samples`` (a buffer, (N, C, 2)) fixes the windows; without it each call draws
    new ones.

    Example::

        >>> pool = ember.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
        >>> pool(ember.randn(2, 4, 10, 12)).shape
        ember.Size([2, 4, 5, 6])
    """

    _nd = 2
    _functional = staticmethod(fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) input.

    Example::

        >>> ember.nn.FractionalMaxPool3d(2, output_size=3)(ember.randn(1, 2, 6, 6, 6)).shape
        ember.Size([1, 2, 3, 3, 3])
    """

    _nd = 3
    _functional = staticmethod(fractional_max_pool3d)
