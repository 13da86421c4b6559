"""Thread settings: ``set_num_threads`` gives its count to ONE thread pool (through
threadpoolctl) and holds every other pool at one thread; the inter-op value is kept for code that
asks for it (ember runs ops on the calling thread).

The pools: oneDNN's OpenMP threads (convolutions, float32 GEMMs, once oneDNN is loaded), NumPy's
OpenBLAS and SciPy's own OpenBLAS. An idle OpenBLAS thread spins for up to ~0.1 s waiting for
the next call, so with two threaded pools the pool doing the work found its threads' cores taken
by the other pool's spinners and waited out whole scheduler ticks (LeNet step on 2 cores: 5.7 ms
at one thread, 44-160 ms at two). With one threaded pool nothing competes.

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
_interop_threads_set = False


def _check_positive(n, name):
    """torch's checks: a Python or NumPy integer (not a bool, not an ``__index__`` object),
    then a positive one; RuntimeError for both."""
    import numpy as np

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
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
    global _num_threads
    _check_positive(n, "set_num_threads")
    _num_threads = int(n)
    apply_thread_limits()


def apply_thread_limits():
    """Give ember's thread count to the one pool that runs its kernels, one thread to the others:
    oneDNN's OpenMP pool once oneDNN is loaded (it then runs the float32 GEMMs too), else NumPy's
    BLAS. Called again whenever a library with a pool loads (oneDNN, SciPy's BLAS).

    Example::

        >>> apply_thread_limits()
    """
    n = get_num_threads()
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return
    openmp_runs_kernels = _onednn_loaded()
    for pool in ThreadpoolController().lib_controllers:
        if pool.user_api == "openmp":
            pool.set_num_threads(n)
        elif openmp_runs_kernels or not _is_numpys(pool.filepath):
            pool.set_num_threads(1)
        else:
            pool.set_num_threads(n)


def _onednn_loaded():
    import sys

    onednn = sys.modules.get("ember.nn._functional._onednn")
    return onednn is not None and onednn._library is not None


def _is_numpys(path):
    """Whether the BLAS library at ``path`` is NumPy's (a wheel's ``numpy.libs``, or the one
    library of a system NumPy's environment, which has no SciPy copy beside it)."""
    return "numpy" in os.path.basename(os.path.dirname(path)) or "scipy" not in path


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
    """Set the inter-op thread count reported by :func:`get_num_interop_threads`, once per
    process: like torch, a second call raises RuntimeError (torch's pool is fixed once made;
    ember has no such pool, so only an earlier call counts, never earlier work).

    Example::

        >>> ember.set_num_interop_threads(1)
    """
    global _num_interop_threads, _interop_threads_set
    _check_positive(n, "set_num_interop_threads")
    if _interop_threads_set:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _num_interop_threads = int(n)
    _interop_threads_set = True
