"""What the build offers and small global switches of torch's top-level namespace: the
``has_*`` flags, ``is_vulkan_available``, ``get_device_module``, the deterministic debug mode,
the per-device autocast switches torch kept from older releases (cpu, ipu, xla) and the
autocast nesting counter.
"""

from __future__ import annotations

import sys
import warnings

from . import _dtype as dt

__all__ = ["has_lapack", "has_mkl", "has_openmp", "has_spectral", "is_vulkan_available",
           "get_device_module", "get_deterministic_debug_mode", "set_deterministic_debug_mode",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "is_autocast_ipu_enabled",
           "set_autocast_ipu_enabled", "get_autocast_ipu_dtype", "set_autocast_ipu_dtype",
           "is_autocast_xla_enabled", "set_autocast_xla_enabled", "get_autocast_xla_dtype",
           "set_autocast_xla_dtype", "autocast_increment_nesting", "autocast_decrement_nesting",
           "init_num_threads", "thread_safe_generator"]

has_lapack = True  # NumPy/SciPy's LAPACK serves ember.linalg
has_spectral = True  # ember.fft
has_openmp = False  # NumPy's BLAS threads, not OpenMP, run ember's kernels
has_mkl = False


def is_vulkan_available():
    """False: ember has no Vulkan backend (its webgpu device is separate).

    Example::

        >>> ember.is_vulkan_available()
        False
    """
    return False


def get_device_module(device=None):
    """The module for a device type (``ember.cuda`` for ``'cuda'``, ``ember.cpu`` for
    ``'cpu'``); without one, the current accelerator's or ``ember.cpu``.

    Example::

        >>> ember.get_device_module("cpu").__name__
        'ember.cpu'
    """
    from ._device import device as _device_type

    if device is None:
        from . import cuda

        kind = "cuda" if cuda.is_available() else "cpu"
    elif isinstance(device, _device_type):
        kind = device.type
    elif isinstance(device, str):
        kind = _device_type(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    module = sys.modules.get(f"{__package__}.{kind}")
    if module is None:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           f"as 'ember.{kind}'.")
    return module


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def get_deterministic_debug_mode():
    """0 (deterministic algorithms off), 1 (warn) or 2 (error), from
    :func:`ember.use_deterministic_algorithms`.

    Example::

        >>> ember.get_deterministic_debug_mode()
        0
    """
    from ._switches import (
        are_deterministic_algorithms_enabled,
        is_deterministic_algorithms_warn_only_enabled,
    )

    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def set_deterministic_debug_mode(debug_mode):
    """``use_deterministic_algorithms`` by level: ``"default"``/0 off, ``"warn"``/1 warn
    only, ``"error"``/2 on.

    Example::

        >>> ember.set_deterministic_debug_mode("warn"); ember.get_deterministic_debug_mode()
        1
        >>> ember.set_deterministic_debug_mode(0)
    """
    from ._switches import use_deterministic_algorithms

    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    """Deprecated: ``is_autocast_enabled('cpu')``.

    Example::

        >>> ember.is_autocast_cpu_enabled()
        False
    """
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    from .amp.autocast_mode import is_autocast_enabled

    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """Deprecated: ``set_autocast_enabled('cpu', enabled)``.

    Example::

        >>> ember.set_autocast_cpu_enabled(False)
    """
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    from .amp.autocast_mode import set_autocast_enabled

    set_autocast_enabled("cpu", enabled)


# ember runs no IPU or XLA code: their switches are kept (and read back) as torch's are
_OTHER_AUTOCAST = {"ipu": [False, dt.float16], "xla": [False, dt.bfloat16]}


def is_autocast_ipu_enabled():
    """The IPU autocast switch (ember runs nothing on IPUs; the switch is only kept).

    Example::

        >>> ember.is_autocast_ipu_enabled()
        False
    """
    _deprecated("is_autocast_ipu_enabled()", "is_autocast_enabled('ipu')")
    return _OTHER_AUTOCAST["ipu"][0]


def set_autocast_ipu_enabled(enabled):
    """Set the IPU autocast switch (kept only).

    Example::

        >>> ember.set_autocast_ipu_enabled(False)
    """
    _deprecated("set_autocast_ipu_enabled(enabled)", "set_autocast_enabled('ipu', enabled)")
    _OTHER_AUTOCAST["ipu"][0] = bool(enabled)


def get_autocast_ipu_dtype():
    """The IPU autocast dtype (float16 unless set).

    Example::

        >>> ember.get_autocast_ipu_dtype()
        ember.float16
    """
    _deprecated("get_autocast_ipu_dtype()", "get_autocast_dtype('ipu')")
    return _OTHER_AUTOCAST["ipu"][1]


def set_autocast_ipu_dtype(dtype):
    """Set the IPU autocast dtype (kept only).

    Example::

        >>> ember.set_autocast_ipu_dtype(ember.float16)
    """
    _deprecated("set_autocast_ipu_dtype(dtype)", "set_autocast_dtype('ipu', dtype)")
    _OTHER_AUTOCAST["ipu"][1] = dt.to_dtype(dtype)


def is_autocast_xla_enabled():
    """The XLA autocast switch (ember runs nothing on XLA; the switch is only kept).

    Example::

        >>> ember.is_autocast_xla_enabled()
        False
    """
    _deprecated("is_autocast_xla_enabled()", "is_autocast_enabled('xla')")
    return _OTHER_AUTOCAST["xla"][0]


def set_autocast_xla_enabled(enabled):
    """Set the XLA autocast switch (kept only).

    Example::

        >>> ember.set_autocast_xla_enabled(False)
    """
    _deprecated("set_autocast_xla_enabled(enabled)", "set_autocast_enabled('xla', enabled)")
    _OTHER_AUTOCAST["xla"][0] = bool(enabled)


def get_autocast_xla_dtype():
    """The XLA autocast dtype (bfloat16 unless set).

    Example::

        >>> ember.get_autocast_xla_dtype()
        ember.bfloat16
    """
    _deprecated("get_autocast_xla_dtype()", "get_autocast_dtype('xla')")
    return _OTHER_AUTOCAST["xla"][1]


def set_autocast_xla_dtype(dtype):
    """Set the XLA autocast dtype (kept only).

    Example::

        >>> ember.set_autocast_xla_dtype(ember.bfloat16)
    """
    _deprecated("set_autocast_xla_dtype(dtype)", "set_autocast_dtype('xla', dtype)")
    _OTHER_AUTOCAST["xla"][1] = dt.to_dtype(dtype)


_nesting = [0]


def autocast_increment_nesting():
    """Count one more open autocast region; returns the new depth.

    Example::

        >>> ember.autocast_increment_nesting(); ember.autocast_decrement_nesting()
        1
        0
    """
    _nesting[0] += 1
    return _nesting[0]


def autocast_decrement_nesting():
    """Count one fewer open autocast region; returns the new depth."""
    _nesting[0] -= 1
    return _nesting[0]


def init_num_threads():
    """Set up the intra-op thread pool of a new thread: nothing to do in ember (NumPy's
    BLAS manages its own threads).

    Example::

        >>> ember.init_num_threads()
    """


def thread_safe_generator():
    """The generator a DataLoader worker thread should use: None means the default one (as
    torch returns outside such threads).

    Example::

        >>> ember.thread_safe_generator() is None
        True
    """
    return None
