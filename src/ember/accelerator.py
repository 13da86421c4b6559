"""``ember.accelerator``: the current accelerator, as ``torch.accelerator``.

The accelerator is CUDA when a GPU is usable; on a CPU-only machine there is none, and every
function that needs one raises torch's ``RuntimeError: Cannot access accelerator device when
none is available.`` (``is_available``, ``device_count`` and ``current_accelerator`` answer).

Example::

    >>> ember.accelerator.current_accelerator() is None
    True
    >>> ember.accelerator.device_count()
    0
"""

from __future__ import annotations

import warnings

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index",
           "get_device_capability", "current_stream", "device_count", "device_index",
           "empty_cache", "empty_host_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "set_device_idx", "set_device_index", "set_stream", "synchronize"]


def _cuda():
    """``ember.cuda`` when a GPU is usable, else torch's no-accelerator error."""
    from . import cuda

    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return cuda


def is_available():
    """Whether an accelerator (a CUDA GPU) can be used.

    Example::

        >>> ember.accelerator.is_available()
        False
    """
    from . import cuda

    return cuda.is_available()


def current_accelerator(check_available=False):
    """``device('cuda')`` with a GPU, else None.

    Example::

        >>> ember.accelerator.current_accelerator() is None
        True
    """
    if is_available():
        from ._device import device

        return device("cuda")
    return None


def device_count():
    """The number of accelerators (GPUs), 0 without one.

    Example::

        >>> ember.accelerator.device_count()
        0
    """
    from . import cuda

    return cuda.device_count()


def current_device_index():
    """The current accelerator's index (raises without one).

    Example::

        >>> ember.accelerator.current_device_index()  # doctest: +SKIP
        0
    """
    return _cuda().current_device()


def current_device_idx():
    """Deprecated spelling of :func:`current_device_index` (warns as torch)."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device):
    """Make ``device`` the current accelerator; a negative index is a no-op, as in torch.

    Example::

        >>> ember.accelerator.set_device_index(-1)
    """
    if isinstance(device, int) and device < 0:
        return
    _cuda().set_device(device)


def set_device_idx(device):
    """Deprecated spelling of :func:`set_device_index` (warns as torch)."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:  # noqa: N801 - torch's name
    """Context manager that makes ``device`` the current accelerator inside the block;
    ``None`` does nothing, as in torch.

    Example::

        >>> with ember.accelerator.device_index(None):
        ...     pass
    """

    def __init__(self, device, /):
        self.index = device
        self.previous = None

    def __enter__(self):
        if self.index is not None:
            self.previous = current_device_index()
            set_device_index(self.index)

    def __exit__(self, *exc):
        if self.previous is not None:
            set_device_index(self.previous)
        return False


def synchronize(device=None):
    """Wait for the accelerator's queued work (raises without an accelerator, as torch).

    Example::

        >>> ember.accelerator.synchronize()  # doctest: +SKIP
    """
    _cuda().synchronize(device)


def get_device_capability(device=None):
    """The accelerator's capability description (raises without one)."""
    major, minor = _cuda().get_device_capability(device)
    return {"major": major, "minor": minor}


def current_stream(device=None):
    """The accelerator's current stream (raises without one)."""
    return _cuda().current_stream(device)


def set_stream(stream):
    """Make ``stream`` the current stream of its device (raises without an accelerator)."""
    from .cuda.streams import Stream

    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream(): argument 'stream' must be Stream, not "
                        f"{type(stream).__name__}")
    _cuda().set_stream(stream)


def empty_cache():
    """Release the caching allocator's unused blocks (raises without an accelerator)."""
    _cuda().empty_cache()


def empty_host_cache():
    """Release cached pinned host memory (raises without an accelerator)."""
    _cuda()


def memory_allocated(device_index=None, /):
    """Bytes held by tensors on the accelerator (raises without one)."""
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None, /):
    """Peak of :func:`memory_allocated` (raises without an accelerator)."""
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None, /):
    """Bytes held by the caching allocator (raises without an accelerator)."""
    return _cuda().memory_reserved(device_index)


def max_memory_reserved(device_index=None, /):
    """Peak of :func:`memory_reserved` (raises without an accelerator)."""
    return _cuda().max_memory_reserved(device_index)


def memory_stats(device_index=None, /):
    """The allocator's statistics as a dict (raises without an accelerator)."""
    return _cuda().memory_stats(device_index)


def reset_peak_memory_stats(device_index=None, /):
    """Reset the peaks of the memory statistics (raises without an accelerator)."""
    _cuda().reset_peak_memory_stats(device_index)


def reset_accumulated_memory_stats(device_index=None, /):
    """Reset the accumulated counters (raises without an accelerator)."""
    _cuda().reset_peak_memory_stats(device_index)


def get_memory_info(device_index=None, /):
    """``(free, total)`` bytes of the accelerator (raises without one)."""
    return _cuda().mem_get_info(device_index)


class Graph:
    """A captured accelerator graph (CUDA graphs); needs an accelerator.

    Example::

        >>> ember.accelerator.Graph()  # doctest: +SKIP
    """

    def __init__(self, *args, **kwargs):
        _cuda()
        raise NotImplementedError("torch.accelerator.Graph (CUDA graph capture) is not "
                                  "supported by ember; run the captured code eagerly")
