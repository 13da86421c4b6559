"""NVTX ranges and marks for profilers (Nsight Systems), as ``torch.cuda.nvtx``, through
``cupy.cuda.nvtx``. Without a GPU and CuPy they raise RuntimeError, as torch's CPU build; with
a CuPy built without NVTX they do nothing.

Example::

    >>> with ember.cuda.nvtx.range("forward"):   # doctest: +SKIP
    ...     y = model(x)
"""

from __future__ import annotations

import contextlib

from .._device import cupy_module

__all__ = ["range_push", "range_pop", "range", "mark", "range_start", "range_end"]

_NO_NVTX = ("NVTX functions not installed: ember.cuda.nvtx needs CuPy and a GPU "
            "(pip install 'ember[cuda]').")
_depth = 0


def _nvtx():
    """CuPy's nvtx module, None when CuPy was built without it; raises without CuPy."""
    cupy = cupy_module()
    if cupy is None:
        raise RuntimeError(_NO_NVTX)
    nvtx = getattr(cupy.cuda, "nvtx", None)
    return nvtx if nvtx is not None and getattr(nvtx, "available", True) else None


def range_push(msg):
    """Open a nested range named ``msg``; returns its zero-based depth.

    Example::

        >>> ember.cuda.nvtx.range_push("step")      # doctest: +SKIP
        0
    """
    global _depth
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePush(msg)
    _depth += 1
    return _depth - 1


def range_pop():
    """Close the innermost range; returns its zero-based depth.

    Example::

        >>> ember.cuda.nvtx.range_pop()             # doctest: +SKIP
        0
    """
    global _depth
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePop()
    _depth = max(_depth - 1, 0)
    return _depth


def mark(msg):
    """An instantaneous marker named ``msg``.

    Example::

        >>> ember.cuda.nvtx.mark("checkpoint")      # doctest: +SKIP
    """
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.Mark(msg)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """A range around a ``with`` block; ``msg`` is formatted with ``args``/``kwargs``.

    Example::

        >>> with ember.cuda.nvtx.range("layer {}", 3):   # doctest: +SKIP
        ...     pass
    """
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()


def range_start(msg):
    """Start a range that may end on another thread; returns its id (needs NVTX, like
    :func:`range_push`).

    Example::

        >>> rid = ember.cuda.nvtx.range_start("load")   # doctest: +SKIP
    """
    nvtx = _nvtx()
    if nvtx is None:
        return 0
    return nvtx.RangePush(msg) if not hasattr(nvtx, "RangeStart") else nvtx.RangeStart(msg)


def range_end(range_id):
    """End the range ``range_id`` started by :func:`range_start`.

    Example::

        >>> ember.cuda.nvtx.range_end(rid)   # doctest: +SKIP
    """
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePop() if not hasattr(nvtx, "RangeEnd") else nvtx.RangeEnd(range_id)
