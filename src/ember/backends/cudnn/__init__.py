"""``ember.backends.cudnn``: cuDNN's flags, as ``torch.backends.cudnn``.

``enabled``, ``benchmark``, ``deterministic`` and ``allow_tf32`` are kept but have no effect:
ember's convolutions are an im2col GEMM (NumPy on the CPU, CuPy on the GPU), not cuDNN calls.

Example::

    >>> ember.backends.cudnn.deterministic = True
"""

from __future__ import annotations

import contextlib

__all__ = ["enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
           "is_available", "version", "is_acceptable", "flags"]

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


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
    from .. import cuda

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
    """Whether cuDNN would take ``tensor`` (a CUDA float tensor with cuDNN available)."""
    return bool(enabled and tensor.device.type == "cuda" and tensor.is_floating_point()
                and is_available())


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the flags inside a ``with`` block and restore them after.

    Example::

        >>> with ember.backends.cudnn.flags(enabled=False):
        ...     pass
    """
    module = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: module[n] for n in names}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                  deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(old)
