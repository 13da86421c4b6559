"""The parts of torch.cuda that need CUDA's own runtime (graphs, allocators, NVML, cuBLAS
handles, ...): ember has them by name, with the behaviour torch's CPU build shows.

Functions that need a GPU raise :class:`~ember.cuda._errors.CudaUnavailableError` (a
RuntimeError and AssertionError, as torch's "not compiled with CUDA"); where torch's CPU
build lacks a binding they raise :class:`~ember.cuda._errors.CudaBindingMissingError`; NVML
queries raise torch's ``ModuleNotFoundError``; the statistics torch reports as empty are empty.

Example::

    >>> from ember.cuda._unavailable import host_memory_stats
    >>> host_memory_stats()
    OrderedDict()
"""

from __future__ import annotations

import collections
import contextlib

from .._device import cupy_module
from ._errors import NO_GPU_MESSAGE, CudaBindingMissingError, CudaUnavailableError, require_gpu
from ._runtime import (  # noqa: F401  (CuPy-backed with a GPU; listed in __all__ below)
    caching_allocator_alloc,
    caching_allocator_delete,
    can_device_access_peer,
    current_blas_handle,
    current_solver_handle,
    get_allocator_backend,
    get_stream_from_external,
    get_sync_debug_mode,
    memory_snapshot,
    set_sync_debug_mode,
)
from .green_contexts import GreenContext

__all__ = ["caching_allocator_alloc", "can_device_access_peer", "current_blas_handle",
           "current_solver_handle", "get_stream_from_external", "get_sync_debug_mode",
           "set_sync_debug_mode", "graph_pool_handle", "make_graphed_callables", "check_error",
           "caching_allocator_delete", "change_current_allocator", "get_allocator_backend",
           "memory_snapshot", "reset_accumulated_memory_stats",
           "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats", "clock_rate",
           "device_memory_used", "memory_usage", "power_draw", "temperature", "utilization",
           "CUDAGraph", "graph", "CUDAPluggableAllocator", "MemPool", "GreenContext",
           "is_current_stream_capturing", "is_tf32_supported", "host_memory_stats",
           "host_memory_stats_as_nested_dict", "memory_stats_as_nested_dict",
           "list_gpu_processes", "caching_allocator_enable", "caching_allocator_disabled",
           "use_mem_pool", "CudaError", "DeferredCudaCallError", "cudaStatus",
           "BFloat16Storage", "BoolStorage", "ByteStorage", "CharStorage", "ComplexDoubleStorage",
           "ComplexFloatStorage", "DoubleStorage", "FloatStorage", "HalfStorage", "IntStorage",
           "LongStorage", "ShortStorage"]

_NVML_MISSING = "nvidia-ml-py does not seem to be installed or it can't be imported."


def _needs_gpu(name, error=CudaUnavailableError):
    def function(*args, **kwargs):
        raise error(f"torch.cuda.{name}: {NO_GPU_MESSAGE}")

    function.__name__ = function.__qualname__ = name.rsplit(".", 1)[-1]
    function.__doc__ = (f"torch's ``torch.cuda.{name}``: needs a CUDA GPU, so it raises "
                        f"``{error.__name__}`` here (torch's CPU build raises too).")
    return function


def _needs_nvml(name):
    def function(device=None):
        raise ModuleNotFoundError(_NVML_MISSING)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"torch's ``torch.cuda.{name}`` reads NVIDIA's management library "
                        "(nvidia-ml-py); without it, torch's ModuleNotFoundError.")
    return function


def _gpu_class(name, base=object):
    def __init__(self, *args, **kwargs):
        raise CudaUnavailableError(f"torch.cuda.{name}: {NO_GPU_MESSAGE}")

    doc = f"torch's ``torch.cuda.{name}``: needs a CUDA GPU; constructing it raises here."
    return type(name.rsplit(".", 1)[-1], (base,), {"__init__": __init__, "__doc__": doc})


graph_pool_handle = _needs_gpu("graph_pool_handle")
make_graphed_callables = _needs_gpu("make_graphed_callables")
check_error = _needs_gpu("check_error", CudaBindingMissingError)
cudart = _needs_gpu("cudart")
change_current_allocator = _needs_gpu("change_current_allocator", CudaBindingMissingError)
reset_accumulated_memory_stats = _needs_gpu("reset_accumulated_memory_stats",
                                            CudaBindingMissingError)
reset_accumulated_host_memory_stats = _needs_gpu("reset_accumulated_host_memory_stats",
                                                 CudaBindingMissingError)
reset_peak_host_memory_stats = _needs_gpu("reset_peak_host_memory_stats",
                                          CudaBindingMissingError)

clock_rate = _needs_nvml("clock_rate")
device_memory_used = _needs_nvml("device_memory_used")
memory_usage = _needs_nvml("memory_usage")
power_draw = _needs_nvml("power_draw")
temperature = _needs_nvml("temperature")
utilization = _needs_nvml("utilization")

CUDAGraph = _gpu_class("CUDAGraph")
graph = _gpu_class("graph")
CUDAPluggableAllocator = _gpu_class("CUDAPluggableAllocator")
MemPool = _gpu_class("MemPool")

has_half = True
has_magma = False
default_generators: tuple = ()


def is_current_stream_capturing():
    """Whether the current CUDA stream is capturing a graph: needs a GPU (raises here)."""
    raise CudaUnavailableError(f"torch.cuda.is_current_stream_capturing: {NO_GPU_MESSAGE}")


def is_tf32_supported():
    """Whether TF32 matmuls are available: False without a CUDA GPU (torch's answer too).

    Example::

        >>> is_tf32_supported()
        False
    """
    return False


def host_memory_stats():
    """Pinned host memory statistics: none recorded (torch's CPU build: empty).

    Example::

        >>> len(host_memory_stats())
        0
    """
    return collections.OrderedDict()


def host_memory_stats_as_nested_dict():
    """:func:`host_memory_stats` as a nested dict: empty.

    Example::

        >>> host_memory_stats_as_nested_dict()
        {}
    """
    return {}


def memory_stats_as_nested_dict(device=None):
    """The CUDA caching allocator's statistics as a nested dict: empty without a GPU.

    Example::

        >>> memory_stats_as_nested_dict()
        {}
    """
    return {}


def list_gpu_processes(device=None):
    """torch's summary of GPU processes (from NVML); without it, torch's message.

    Example::

        >>> list_gpu_processes()
        'pynvml module not found, please install nvidia-ml-py'
    """
    return "pynvml module not found, please install nvidia-ml-py"


_caching = {"enabled": True}


def caching_allocator_enable(value=True):
    """Enable or disable the caching allocator: with a GPU, CuPy's memory pool serves (or no
    longer serves) ember's allocations; without one there is nothing to change (as torch).

    Example::

        >>> caching_allocator_enable(True)
    """
    cupy = cupy_module()
    if cupy is None:
        return
    # None: CuPy's plain cudaMalloc allocator, without pooling
    cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc if value else None)
    _caching["enabled"] = bool(value)


@contextlib.contextmanager
def caching_allocator_disabled():
    """Run the block with the caching allocator disabled; it needs a GPU to ask whether the
    allocator is on (without one, entering raises torch's AttributeError type).

    Example::

        >>> with caching_allocator_disabled():  # doctest: +SKIP
        ...     pass
    """
    require_gpu(CudaBindingMissingError)
    previous = _caching["enabled"]
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(previous)


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    """Allocate from ``pool`` inside the block: needs a GPU (entering raises here)."""
    raise CudaUnavailableError(f"torch.cuda.use_mem_pool: {NO_GPU_MESSAGE}")
    yield  # unreachable; makes this a generator, as a context manager must be


class CudaError(RuntimeError):
    """A CUDA runtime error with its ``cudaError_t`` code (torch's class).

    Example::

        >>> CudaError(2).code
        2
    """

    def __init__(self, code):
        self.code = code
        super().__init__(f"CUDA error code {code}")


class DeferredCudaCallError(Exception):
    """A CUDA call queued before initialisation failed (torch's class)."""


class cudaStatus:  # noqa: N801  (torch's name)
    """The two ``cudaError_t`` codes torch names."""

    SUCCESS: int = 0
    ERROR_NOT_READY: int = 34


def _storage_class(name):
    return _gpu_class(name)


BFloat16Storage = _storage_class("BFloat16Storage")
BoolStorage = _storage_class("BoolStorage")
ByteStorage = _storage_class("ByteStorage")
CharStorage = _storage_class("CharStorage")
ComplexDoubleStorage = _storage_class("ComplexDoubleStorage")
ComplexFloatStorage = _storage_class("ComplexFloatStorage")
DoubleStorage = _storage_class("DoubleStorage")
FloatStorage = _storage_class("FloatStorage")
HalfStorage = _storage_class("HalfStorage")
IntStorage = _storage_class("IntStorage")
LongStorage = _storage_class("LongStorage")
ShortStorage = _storage_class("ShortStorage")
