"""GPU memory statistics and limits, as ``torch.cuda.memory_*``, read from CuPy's memory pool.

ember's cuda tensors take their memory from CuPy's default memory pool: "allocated" is what
the pool has handed to live arrays, "reserved" what it holds from the driver (allocated plus
cached blocks). Peaks and allocation counts come from a CuPy memory hook that ember enters the
first time the GPU is looked at through ``ember.cuda`` (``is_available()`` or any function
here), in that thread. Without a GPU the queries answer as torch's CPU build does (0, an empty
dict) and the calls that need a GPU raise. (Written against CuPy's API; not run here.)

Example::

    >>> ember.cuda.memory_allocated()
    0
    >>> ember.cuda.memory_stats()
    OrderedDict()
"""

from __future__ import annotations

import collections
import warnings

from .._device import cupy_module
from ._errors import CudaBindingMissingError, CudaStatsMissingError, require_gpu

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_cached", "max_memory_cached", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached", "memory_stats",
           "memory_summary", "mem_get_info", "empty_cache", "set_per_process_memory_fraction",
           "get_per_process_memory_fraction", "ipc_collect", "CUDAPluggableAllocator", "MemPool",
           "caching_allocator_alloc", "caching_allocator_delete", "caching_allocator_disabled",
           "caching_allocator_enable", "change_current_allocator", "get_allocator_backend",
           "host_memory_stats", "host_memory_stats_as_nested_dict", "list_gpu_processes",
           "memory_snapshot", "memory_stats_as_nested_dict", "reset_accumulated_memory_stats",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats", "use_mem_pool"]

_tracker = None


def _pool():
    """CuPy's default memory pool, or None without a GPU."""
    cupy = cupy_module()
    return cupy.get_default_memory_pool() if cupy is not None else None


class _Counters:
    """torch's counters of one statistic: current, peak, allocated (added up) and freed."""

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, amount):
        self.current += amount
        self.allocated += amount
        self.peak = max(self.peak, self.current)

    def remove(self, amount):
        self.current -= amount
        self.freed += amount


def _make_tracker(cupy):
    """A CuPy memory hook that counts allocations, frees and peaks, entered in this thread."""

    class PeakTracker(cupy.cuda.MemoryHook):
        name = "ember_peak_tracker"

        def __init__(self):
            self.allocated_bytes = _Counters()
            self.allocations = _Counters()
            self.reserved_peak = 0

        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
            self.allocated_bytes.add(mem_size)
            self.allocations.add(1)

        def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
            self.allocated_bytes.remove(mem_size)
            self.allocations.remove(1)

        def alloc_postprocess(self, device_id, mem_size, mem_ptr):
            self.reserved_peak = max(self.reserved_peak, _pool().total_bytes())

    tracker = PeakTracker()
    tracker.__enter__()  # stays entered: every later allocation in this thread is counted
    return tracker


def track():
    """Start counting peaks (once; a no-op without a GPU). Returns the tracker or None."""
    global _tracker
    cupy = cupy_module()
    if _tracker is None and cupy is not None:
        _tracker = _make_tracker(cupy)
    return _tracker


def memory_allocated(device=None):
    """Bytes of GPU memory held by live tensors (0 without a GPU, as torch).

    Example::

        >>> ember.cuda.memory_allocated()
        0
    """
    track()
    pool = _pool()
    return pool.used_bytes() if pool is not None else 0


def memory_reserved(device=None):
    """Bytes of GPU memory CuPy's pool holds, in use or cached (0 without a GPU).

    Example::

        >>> ember.cuda.memory_reserved()
        0
    """
    track()
    pool = _pool()
    return pool.total_bytes() if pool is not None else 0


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since tracking began or the last reset.

    Example::

        >>> ember.cuda.max_memory_allocated()
        0
    """
    tracker = track()
    current = memory_allocated(device)
    return current if tracker is None else max(tracker.allocated_bytes.peak, current)


def max_memory_reserved(device=None):
    """The peak of :func:`memory_reserved` since tracking began or the last reset.

    Example::

        >>> ember.cuda.max_memory_reserved()
        0
    """
    tracker = track()
    current = memory_reserved(device)
    return current if tracker is None else max(tracker.reserved_peak, current)


def memory_cached(device=None):
    """Deprecated name of :func:`memory_reserved` (torch warns FutureWarning).

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.cuda.memory_cached()
        0
    """
    _warn_renamed("memory_cached", "memory_reserved")
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated name of :func:`max_memory_reserved` (torch warns FutureWarning).

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.cuda.max_memory_cached()
        0
    """
    _warn_renamed("max_memory_cached", "max_memory_reserved")
    return max_memory_reserved(device)


def _warn_renamed(old, new):

    warnings.warn(f"`torch.cuda.{old}` has been renamed to `torch.cuda.{new}`", FutureWarning,
                  stacklevel=3)


def reset_peak_memory_stats(device=None):
    """Start the peaks of :func:`memory_stats` over from the current values.

    Example::

        >>> ember.cuda.reset_peak_memory_stats()    # doctest: +SKIP
    """
    require_gpu(CudaBindingMissingError)
    tracker = track()
    tracker.allocated_bytes.peak = tracker.allocated_bytes.current
    tracker.allocations.peak = tracker.allocations.current
    tracker.reserved_peak = _pool().total_bytes()


def reset_max_memory_allocated(device=None):
    """Deprecated: :func:`reset_peak_memory_stats` (torch warns FutureWarning).

    Example::

        >>> ember.cuda.reset_max_memory_allocated()   # doctest: +SKIP
    """
    _warn_renamed_reset("reset_max_memory_allocated")
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated: :func:`reset_peak_memory_stats` (torch warns FutureWarning).

    Example::

        >>> ember.cuda.reset_max_memory_cached()      # doctest: +SKIP
    """
    _warn_renamed_reset("reset_max_memory_cached")
    reset_peak_memory_stats(device)


def _warn_renamed_reset(old):

    warnings.warn(f"torch.cuda.{old} now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=3)


def memory_stats(device=None):
    """torch's memory statistics that CuPy's pool can fill, under torch's key names, sorted
    (an empty OrderedDict without a GPU, as torch's CPU build).

    Keys: ``allocated_bytes.all.{current,peak,allocated,freed}``,
    ``allocation.all.{...}``, ``active_bytes.all.current``, ``reserved_bytes.all.{current,
    peak}``, ``inactive_split_bytes.all.current`` (cached, unused bytes) and
    ``requested_bytes.all.current``.

    Example::

        >>> ember.cuda.memory_stats()
        OrderedDict()
    """
    tracker = track()
    if tracker is None:
        return collections.OrderedDict()
    pool = _pool()
    stats = {"active_bytes.all.current": pool.used_bytes(),
             "requested_bytes.all.current": pool.used_bytes(),
             "reserved_bytes.all.current": pool.total_bytes(),
             "reserved_bytes.all.peak": max(tracker.reserved_peak, pool.total_bytes()),
             "inactive_split_bytes.all.current": pool.free_bytes()}
    for prefix, counters in (("allocated_bytes", tracker.allocated_bytes),
                             ("allocation", tracker.allocations)):
        for field in ("current", "peak", "allocated", "freed"):
            stats[f"{prefix}.all.{field}"] = getattr(counters, field)
    return collections.OrderedDict(sorted(stats.items()))


def _format_bytes(count):
    for unit in ("B  ", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:7.0f} {unit}" if unit == "B  " else f"{count:7.1f} {unit}"
        count /= 1024
    return f"{count} B"


def memory_summary(device=None, abbreviated=False):
    """A readable table of :func:`memory_stats` (KeyError without a GPU, as torch's CPU build).

    Example::

        >>> print(ember.cuda.memory_summary())       # doctest: +SKIP
    """
    stats = memory_stats(device)
    if not stats:
        raise CudaStatsMissingError("memory_summary needs the memory statistics of a GPU: "
                                    "'allocated_bytes.all.current' is missing (no GPU or CuPy)")
    rows = [("Allocated memory", "allocated_bytes", _format_bytes),
            ("GPU reserved memory", "reserved_bytes", _format_bytes),
            ("Allocations", "allocation", str)]
    lines = ["|" + "=" * 75 + "|", "|" + " ember CUDA memory summary ".center(75) + "|",
             "|" + "-" * 75 + "|",
             f"| {'Metric':<24}| {'Cur Usage':>11} | {'Peak Usage':>11} | "
             f"{'Tot Alloc':>9} | {'Tot Freed':>9} |"]
    for title, key, fmt in rows:
        cells = [fmt(stats.get(f"{key}.all.{field}", 0))
                 for field in ("current", "peak", "allocated", "freed")]
        lines.append(f"| {title:<24}| {cells[0]:>11} | {cells[1]:>11} | {cells[2]:>9} | "
                     f"{cells[3]:>9} |")
    lines.append("|" + "=" * 75 + "|")
    return "\n".join(lines) + "\n"


def mem_get_info(device=None):
    """``(free, total)`` bytes of the GPU's memory, as the driver reports them.

    Example::

        >>> free, total = ember.cuda.mem_get_info()   # doctest: +SKIP
    """
    cupy = require_gpu()
    from . import _index

    with cupy.cuda.Device(_index(device)):
        return tuple(cupy.cuda.runtime.memGetInfo())


def empty_cache():
    """Give CuPy's cached, unused GPU blocks back to the driver (a no-op without a GPU).

    Example::

        >>> ember.cuda.empty_cache()
    """
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()


def set_per_process_memory_fraction(fraction, device=None):
    """Cap CuPy's pool on ``device`` at ``fraction`` of the GPU's memory (0 to 1); allocations
    beyond it raise :class:`~ember.cuda.OutOfMemoryError`.

    Example::

        >>> ember.cuda.set_per_process_memory_fraction(0.5)   # doctest: +SKIP
    """
    cupy = require_gpu()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    from . import _index

    with cupy.cuda.Device(_index(device)):
        _pool().set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None):
    """The cap set by :func:`set_per_process_memory_fraction` (1.0 when none is set).

    Example::

        >>> ember.cuda.get_per_process_memory_fraction()   # doctest: +SKIP
        1.0
    """
    cupy = require_gpu()
    from . import _index

    with cupy.cuda.Device(_index(device)):
        limit = _pool().get_limit()
        total = cupy.cuda.runtime.memGetInfo()[1]
    return 1.0 if limit == 0 else limit / total


def ipc_collect():
    """Free GPU memory whose CUDA IPC handles other processes released (CuPy needs no
    collection: this only checks that there is a GPU, as torch).

    Example::

        >>> ember.cuda.ipc_collect()                  # doctest: +SKIP
    """
    require_gpu()


from ._unavailable import (  # noqa: E402  (torch.cuda.memory's allocator and NVML names)
    CUDAPluggableAllocator,
    MemPool,
    caching_allocator_alloc,
    caching_allocator_delete,
    caching_allocator_disabled,
    caching_allocator_enable,
    change_current_allocator,
    get_allocator_backend,
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    list_gpu_processes,
    memory_snapshot,
    memory_stats_as_nested_dict,
    reset_accumulated_host_memory_stats,
    reset_accumulated_memory_stats,
    reset_peak_host_memory_stats,
    use_mem_pool,
)
