"""The errors of ``ember.xpu``: ember has no Intel XPU backend, so each call fails with the
exception type torch's CPU build raises there; where that type is AssertionError or
AttributeError the class is also a RuntimeError, as in ``ember.cuda._errors``.

Example::

    >>> issubclass(XpuUnavailableError, AssertionError)
    True
"""

from __future__ import annotations

import inspect

__all__ = ["NO_XPU_MESSAGE", "XpuUnavailableError", "XpuBindingMissingError",
           "dummy_class_error", "needs_xpu"]

NO_XPU_MESSAGE = ("ember has no XPU backend: its devices are the CPU (NumPy) and CUDA GPUs "
                  "(CuPy)")


class XpuUnavailableError(RuntimeError, AssertionError):
    """Where torch's CPU build asserts "Torch not compiled with XPU enabled"."""


class XpuBindingMissingError(RuntimeError, AttributeError):
    """Where torch's CPU build lacks the XPU binding (AttributeError)."""


def dummy_class_error(name):
    """torch's RuntimeError for constructing an XPU class its CPU build only declares."""
    return RuntimeError(f"Tried to instantiate dummy base class {name} ({NO_XPU_MESSAGE})")


def needs_xpu(name, parameters="", error=XpuUnavailableError):
    """A function named ``name`` taking ``parameters`` (torch's, as ``"device, peer"``) that
    checks its arguments as Python does, then raises ``error``: the call needs an XPU.

    Example::

        >>> needs_xpu("set_device", "device").__signature__
        <Signature (device)>
    """
    signature = _signature(parameters)

    def function(*args, **kwargs):
        signature.bind(*args, **kwargs)  # a wrong call is a TypeError first, as in torch
        raise error(f"torch.xpu.{name}: {NO_XPU_MESSAGE}")

    function.__signature__ = signature

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"torch's ``torch.xpu.{name}``: needs an Intel XPU, so it raises "
                        f"``{error.__name__}`` here (torch's CPU build raises too).")
    return function


def _signature(parameters):
    """``inspect.Signature`` of a parameter list written as in a ``def`` line."""
    namespace = {}
    exec(f"def template({parameters}): pass", {}, namespace)  # noqa: S102  (fixed text)
    return inspect.signature(namespace["template"])
