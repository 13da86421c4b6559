"""``ember.backends.mkldnn``: oneDNN (MKL-DNN) switches, as ``torch.backends.mkldnn``.

ember's CPU kernels are NumPy's: there is no oneDNN tensor layout (``Tensor.to_mkldnn``
raises), so :func:`is_available` is False, where torch's CPU build says True. The flags
(``enabled``, ``deterministic``, the float32 precisions) are kept without effect;
``allow_tf32`` is the deprecated no-op torch 2.13 has (it reads None).

Example::

    >>> ember.backends.mkldnn.enabled
    True
    >>> with ember.backends.mkldnn.flags(enabled=False):
    ...     ember.backends.mkldnn.enabled
    False
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from typing import TYPE_CHECKING  # noqa: F401  (torch's module has the name)

from . import ContextProp, PropModule, _allow_mutation, _FP32Precision, _precision_prop

__all__ = ["is_available", "is_acl_available", "flags", "set_flags", "verbose",
           "VERBOSE_OFF", "VERBOSE_ON", "VERBOSE_ON_CREATION", "MkldnnModule"]

VERBOSE_OFF, VERBOSE_ON, VERBOSE_ON_CREATION = 0, 1, 2

_flags = {"enabled": True, "deterministic": False}


def is_available():
    """Whether oneDNN kernels are built in: never in ember (see the module's docstring).

    Example::

        >>> ember.backends.mkldnn.is_available()
        False
    """
    return False


def is_acl_available():
    """Whether oneDNN with Arm's Compute Library is built in: no (as torch's x86 build).

    Example::

        >>> ember.backends.mkldnn.is_acl_available()
        False
    """
    return False


class verbose:
    """oneDNN's verbose messages inside the block; ember runs no oneDNN kernel, so there
    is nothing to print and the block runs unchanged.

    Example::

        >>> with ember.backends.mkldnn.verbose(ember.backends.mkldnn.VERBOSE_ON):
        ...     pass
    """

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return None if self.level == VERBOSE_OFF else self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


def _get_allow_tf32():
    return None


def _set_allow_tf32(value):
    warnings.warn("torch.backends.mkldnn.allow_tf32 is deprecated and has no effect; set "
                  "torch.backends.mkldnn.fp32_precision instead", UserWarning, stacklevel=3)


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the flags given (None keeps one); returns the previous values, torch's order.

    Example::

        >>> ember.backends.mkldnn.set_flags()
        (True, False, None, 'none')
    """
    from . import _get_fp32_precision, _set_fp32_precision

    previous = (_flags["enabled"], _flags["deterministic"], _get_allow_tf32(),
                _get_fp32_precision("mkldnn", "all"))
    if _enabled is not None:
        _flags["enabled"] = bool(_enabled)
    if _deterministic is not None:
        _flags["deterministic"] = bool(_deterministic)
    if _fp32_precision is not None:
        _set_fp32_precision("mkldnn", "all", _fp32_precision)
    return previous


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """Set the flags inside the block and restore them after.

    Example::

        >>> with ember.backends.mkldnn.flags(deterministic=True):
        ...     ember.backends.mkldnn.deterministic
        True
    """
    with _allow_mutation():
        previous = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*previous)


def _flag_prop(name):
    return ContextProp(lambda: _flags[name], lambda value: _flags.__setitem__(name, bool(value)))


class MkldnnModule(PropModule):
    """``ember.backends.mkldnn``: its flags as properties."""

    def is_available(self):
        """False: see :func:`is_available`."""
        return is_available()

    enabled = _flag_prop("enabled")
    deterministic = _flag_prop("deterministic")
    allow_tf32 = ContextProp(_get_allow_tf32, _set_allow_tf32)
    matmul = _FP32Precision("mkldnn", "matmul")
    conv = _FP32Precision("mkldnn", "conv")
    rnn = _FP32Precision("mkldnn", "rnn")
    fp32_precision = _precision_prop("mkldnn", "all")


sys.modules[__name__] = MkldnnModule(sys.modules[__name__], __name__)
