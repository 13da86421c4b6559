"""``ember.nn.modules.channelshuffle``: torch's module path.

ember defines ChannelShuffle next to PixelShuffle; this module re-exports :class:`ChannelShuffle`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.nn.modules.channelshuffle import ChannelShuffle
"""

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]
