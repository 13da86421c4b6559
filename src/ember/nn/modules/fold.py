"""nn modules: Fold and Unfold (col2im / im2col), thin wrappers of ``F.fold``/``F.unfold``."""

from __future__ import annotations

from .._functional import conv as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum sliding local blocks ``(N, C * prod(kernel_size), L)`` into a ``(N, C, *output_size)``
    tensor.

    Example::

        >>> ember.nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(ember.randn(1, 12, 12)).shape
        ember.Size([1, 3, 4, 5])
    """

    __constants__ = ["output_size", "kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding local blocks: (N, C, H, W) -> ``(N, C * prod(kernel_size), L)``.

    Example::

        >>> ember.nn.Unfold(kernel_size=(2, 3))(ember.randn(2, 5, 3, 4)).shape
        ember.Size([2, 30, 4])
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
