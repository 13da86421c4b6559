"""Thread settings: ``set_num_threads`` limits the BLAS/OpenMP pools (through threadpoolctl);
the inter-op value is kept for code that asks for it (ember runs ops on the calling thread).

Example::

    >>> ember.set_num_threads(1); ember.get_num_threads()
    1
"""

from __future__ import annotations

import os

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads"]

_num_threads = None
_num_interop_threads = None
_limiter = None


def _check_positive(n, name):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name}(): argument 'int' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def _detected_threads():
    try:
        from threadpoolctl import threadpool_info

        counts = [pool["num_threads"] for pool in threadpool_info()
                  if pool.get("user_api") == "blas"]
    except Exception:  # threadpoolctl missing or unable to inspect: fall back to the CPUs
        counts = []
    if counts:
        return max(counts)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def get_num_threads():
    """The number of threads BLAS and OpenMP kernels use.

    Example::

        >>> ember.get_num_threads() >= 1
        True
    """
    global _num_threads
    if _num_threads is None:
        _num_threads = _detected_threads()
    return _num_threads


def set_num_threads(n):
    """Limit BLAS and OpenMP kernels (NumPy's matmul and friends) to ``n`` threads.

    Example::

        >>> ember.set_num_threads(2)
    """
    global _num_threads, _limiter
    _check_positive(n, "set_num_threads")
    try:
        from threadpoolctl import threadpool_limits

        _limiter = threadpool_limits(limits=n)
    except ImportError:
        _limiter = None
    _num_threads = n


def get_num_interop_threads():
    """The number of inter-op threads (a setting only: ember runs ops on the calling thread).

    Example::

        >>> ember.get_num_interop_threads() >= 1
        True
    """
    global _num_interop_threads
    if _num_interop_threads is None:
        _num_interop_threads = get_num_threads()
    return _num_interop_threads


def set_num_interop_threads(n):
    """Set the inter-op thread count reported by :func:`get_num_interop_threads`.

    Example::

        >>> ember.set_num_interop_threads(1)
    """
    global _num_interop_threads
    _check_positive(n, "set_num_interop_threads")
    _num_interop_threads = n
