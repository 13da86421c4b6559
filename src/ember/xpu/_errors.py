"""The errors of ``ember.xpu``: ember has no Intel XPU backend, so each call fails with the
exception type torch's CPU build raises there; where that type is AssertionError or
AttributeError the class is also a RuntimeError, as in ``ember.cuda._errors``.

Example::

    >>> issubclass(XpuUnavailableError, AssertionError)
    True
"""

from __future__ import annotations

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


def needs_xpu(name, error=XpuUnavailableError):
    """A function named ``name`` that raises ``error``: the call needs an XPU.

    Example::

        >>> needs_xpu("init").__name__
        'init'
    """
    def function(*args, **kwargs):
        raise error(f"torch.xpu.{name}: {NO_XPU_MESSAGE}")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"torch's ``torch.xpu.{name}``: needs an Intel XPU, so it raises "
                        f"``{error.__name__}`` here (torch's CPU build raises too).")
    return function
