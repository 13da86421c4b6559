"""nn modules: PixelShuffle, PixelUnshuffle, ChannelShuffle."""

from __future__ import annotations

from .._functional import vision as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """Rearrange (*, C*r*r, H, W) into (*, C, H*r, W*r).

    Example::

        >>> ember.nn.PixelShuffle(2)(ember.ones(1, 8, 3, 3)).shape
        ember.Size([1, 2, 6, 6])
    """

    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Rearrange (*, C, H*r, W*r) into (*, C*r*r, H, W) (the inverse of PixelShuffle).

    Example::

        >>> ember.nn.PixelUnshuffle(2)(ember.ones(1, 2, 6, 6)).shape
        ember.Size([1, 8, 3, 3])
    """

    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Split the channels into ``groups`` groups and interleave them.

    Example::

        >>> ember.nn.ChannelShuffle(2)(ember.arange(4.).reshape(1, 4, 1, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    __constants__ = ["groups"]

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
