"""``ember.xpu.streams``: XPU streams and events, which need an XPU (constructing one raises
torch's RuntimeError, as on torch's CPU build).

Example::

    >>> from ember.xpu.streams import Stream
"""

from __future__ import annotations

from ._errors import NO_XPU_MESSAGE, dummy_class_error

__all__ = ["Stream", "Event"]


class Stream:
    """An XPU stream: needs an XPU (constructing it raises)."""

    def __init__(self, device=None, priority=0, **kwargs):
        if device is not None:  # torch selects the device first, which fails first
            raise NotImplementedError(f"torch.xpu.Stream: {NO_XPU_MESSAGE}")
        raise dummy_class_error("Stream")


class Event:
    """An XPU event: needs an XPU (constructing it raises)."""

    def __init__(self, enable_timing=False):
        raise dummy_class_error("Event")
