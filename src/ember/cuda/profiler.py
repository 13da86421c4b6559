"""``ember.cuda.profiler``: start and stop collection by the active CUDA profiler (Nsight
Systems, nvprof) around a region, through CuPy's ``cudaProfilerStart``/``Stop``.

Without a GPU, :func:`start` and :func:`stop` raise torch's CPU-build error (an
AssertionError that is also a RuntimeError); :func:`profile` builds a context manager that
raises on entering, as torch's.

Example::

    >>> from ember.cuda.profiler import profile
    >>> region = profile()            # entering it needs a GPU
"""

from __future__ import annotations

import contextlib

from ._errors import require_gpu

__all__ = ["profile", "start", "stop"]


def start():
    """Start collection by the CUDA profiler.

    Example::

        >>> start()                   # doctest: +SKIP
    """
    require_gpu().cuda.profiler.start()


def stop():
    """Stop collection by the CUDA profiler.

    Example::

        >>> stop()                    # doctest: +SKIP
    """
    require_gpu().cuda.profiler.stop()


@contextlib.contextmanager
def profile():
    """Collect profiles inside the block (:func:`start` on entering, :func:`stop` on leaving).

    Example::

        >>> with profile():           # doctest: +SKIP
        ...     pass
    """
    try:
        start()
        yield
    finally:
        stop()
