"""``ember.backends.quantized``: the quantized engine.

ember has no quantized kernels, so its only engine is ``"none"`` (torch's CPU build offers
``x86``, ``fbgemm``, ``onednn``, ``qnnpack``); choosing an engine ember lacks raises torch's
RuntimeError.

Example::

    >>> ember.backends.quantized.engine
    'none'
"""

from __future__ import annotations

import sys
import types

__all__ = ["QuantizedEngine"]

_ENGINES = ("none", "fbgemm", "qnnpack", "onednn", "x86")
_SUPPORTED = ("none",)
_state = {"engine": "none"}


class _EngineProp:
    def __get__(self, obj, objtype):
        return _state["engine"]

    def __set__(self, obj, value):
        name = "none" if value in ("", None) else value
        if name not in _ENGINES:
            raise RuntimeError(f"{value} is not a valid value for quantized engine")
        if name not in _SUPPORTED:
            raise RuntimeError(f"quantized engine {name.upper()} is not supported")
        _state["engine"] = name


class _SupportedEnginesProp:
    def __get__(self, obj, objtype):
        return list(_SUPPORTED)

    def __set__(self, obj, value):
        raise RuntimeError("Assignment not supported")


class QuantizedEngine(types.ModuleType):
    """``ember.backends.quantized``: ``engine`` (settable) and ``supported_engines``."""

    def __init__(self, m, name):
        super().__init__(name)
        self.m = m

    def __getattr__(self, attr):
        return self.m.__getattribute__(attr)

    engine = _EngineProp()
    supported_engines = _SupportedEnginesProp()


sys.modules[__name__] = QuantizedEngine(sys.modules[__name__], __name__)
