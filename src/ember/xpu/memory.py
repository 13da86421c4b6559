"""``ember.xpu.memory``: torch's path of the XPU memory functions (see :mod:`ember.xpu`).

Example::

    >>> from ember.xpu.memory import memory_allocated
    >>> memory_allocated()
    0
"""

from . import (  # noqa: F401  (re-exported under torch's path)
    MemPool,
    XPUPluggableAllocator,
    change_current_allocator,
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
    use_mem_pool,
)

__all__ = ["MemPool", "XPUPluggableAllocator", "change_current_allocator", "empty_cache",
           "get_per_process_memory_fraction", "max_memory_allocated", "max_memory_reserved",
           "mem_get_info", "memory_allocated", "memory_reserved", "memory_snapshot",
           "memory_stats", "memory_stats_as_nested_dict", "reset_accumulated_memory_stats",
           "reset_peak_memory_stats", "set_per_process_memory_fraction", "use_mem_pool"]
