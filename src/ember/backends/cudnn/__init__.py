"""``ember.backends.cudnn``: cuDNN's flags, as ``torch.backends.cudnn``.

``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` and the float32 precisions are
kept but have no effect: ember's convolutions are an im2col GEMM (NumPy on the CPU, CuPy on
the GPU), not cuDNN calls. Without a GPU, :func:`version` is None and :func:`is_available`
False, as on torch's CPU build.

Example::

    >>> ember.backends.cudnn.deterministic = True
    >>> ember.backends.cudnn.version() is None
    True
"""

from __future__ import annotations

import contextlib
import sys

from ... import _dtype
from .. import ContextProp, PropModule, _allow_mutation, _FP32Precision, _precision_prop

__all__ = ["is_available", "version", "is_acceptable", "flags", "set_flags", "CudnnModule",
           "CUDNN_TENSOR_DTYPES"]

CUDNN_TENSOR_DTYPES = {_dtype.float16, _dtype.float32, _dtype.float64}

_flags = {"enabled": True, "benchmark": False, "benchmark_limit": 10, "deterministic": False,
          "allow_tf32": True, "depthwise_kernel": "auto"}


def _cudnn():
    try:
        from cupy.cuda import cudnn as module  # noqa: PLC0415
    except Exception:  # noqa: BLE001  (no CuPy, or CuPy without cuDNN)
        return None
    return module


def is_available():
    """Whether cuDNN can be used (a GPU, CuPy and its cuDNN bindings); False on a CPU box.

    Example::

        >>> ember.backends.cudnn.is_available()
        False
    """
    from ... import cuda

    return cuda.is_available() and _cudnn() is not None


def version():
    """cuDNN's version as an int (e.g. 90100), or None when it is not available.

    Example::

        >>> ember.backends.cudnn.version() is None
        True
    """
    if not is_available():
        return None
    return int(_cudnn().getVersion())


def is_acceptable(tensor):
    """Whether cuDNN would take ``tensor`` (enabled, a CUDA tensor of a cuDNN dtype).

    Example::

        >>> ember.backends.cudnn.is_acceptable(ember.ones(1))
        False
    """
    return bool(_flags["enabled"] and tensor.device.type == "cuda"
                and tensor.dtype in CUDNN_TENSOR_DTYPES and is_available())


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (None keeps one); returns the previous values, torch's order.

    Example::

        >>> previous = ember.backends.cudnn.set_flags(_benchmark=True)
        >>> _ = ember.backends.cudnn.set_flags(*previous)
    """
    from .. import _get_fp32_precision, _set_fp32_precision

    previous = (_flags["enabled"], _flags["benchmark"], _benchmark_limit_value(),
                _flags["deterministic"], _flags["allow_tf32"],
                _get_fp32_precision("cuda", "all"), _flags["depthwise_kernel"])
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark),
                        ("benchmark_limit", _benchmark_limit),
                        ("deterministic", _deterministic), ("allow_tf32", _allow_tf32),
                        ("depthwise_kernel", _depthwise_kernel)):
        if value is not None:
            _flags[name] = value
    if _fp32_precision is not None:
        _set_fp32_precision("cuda", "all", _fp32_precision)
    return previous


def _benchmark_limit_value():
    """torch reports no benchmark limit (None) where cuDNN is not there to ask."""
    return _flags["benchmark_limit"] if is_available() else None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none", depthwise_kernel="auto"):
    """Set the flags inside a ``with`` block and restore them after.

    Example::

        >>> with ember.backends.cudnn.flags(enabled=False):
        ...     ember.backends.cudnn.enabled
        False
    """
    with _allow_mutation():
        previous = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                             fp32_precision, depthwise_kernel)
    try:
        yield
    finally:
        with _allow_mutation():
            set_flags(*previous)


def _flag_prop(name):
    def setter(value):
        _flags[name] = value

    return ContextProp(lambda: _flags[name], setter)


class CudnnModule(PropModule):
    """``ember.backends.cudnn``: its flags as properties (see the module's docstring)."""

    enabled = _flag_prop("enabled")
    deterministic = _flag_prop("deterministic")
    benchmark = _flag_prop("benchmark")
    allow_tf32 = _flag_prop("allow_tf32")
    depthwise_kernel = _flag_prop("depthwise_kernel")
    benchmark_limit = ContextProp(_benchmark_limit_value,
                                  lambda value: _flags.__setitem__("benchmark_limit", value))
    fp32_precision = _precision_prop("cuda", "all")
    conv = _FP32Precision("cuda", "conv")
    rnn = _FP32Precision("cuda", "rnn")


sys.modules[__name__] = CudnnModule(sys.modules[__name__], __name__)
