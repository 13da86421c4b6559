"""``ember.backends.xnnpack``: the XNNPACK mobile kernels (not built into ember, nor into
torch's x86 CPU build: ``enabled`` is False).

Example::

    >>> ember.backends.xnnpack.enabled
    False
"""

from __future__ import annotations

import sys
import types

__all__ = ["XNNPACKEngine"]


class _EnabledProp:
    def __get__(self, obj, objtype):
        return False

    def __set__(self, obj, value):
        raise RuntimeError("Assignment not supported")


class XNNPACKEngine(types.ModuleType):
    """``ember.backends.xnnpack``: ``enabled`` (read-only, False)."""

    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)

    enabled = _EnabledProp()


sys.modules[__name__] = XNNPACKEngine(sys.modules[__name__], __name__)
