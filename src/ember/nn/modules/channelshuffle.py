"""``ember.nn.modules.channelshuffle``: torch's module path.

ember defines ChannelShuffle next to PixelShuffle; this module re-exports :class:`ChannelShuffle`
under torch's path, so torch's imports work unchanged.

Example::

    >>> from ember.nn.modules.channelshuffle import ChannelShuffle
"""

from .pixelshuffle import ChannelShuffle

__all__ = ["ChannelShuffle"]

# torch defines these classes in this module: their __module__ names it, so that a pickled
# model names torch's path for them (ember.save writes torch.<path>)
for _cls in (ChannelShuffle,):
    _cls.__module__ = __name__
