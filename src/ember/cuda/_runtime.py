"""torch.cuda's runtime queries that CuPy can answer: peer access, the cuBLAS and cuSOLVER
handles, streams made elsewhere, the sync debug mode and raw allocations from the caching
allocator (CuPy's memory pool).

Without a GPU each raises torch's CPU-build error (an AssertionError, or AttributeError where
torch lacks the binding, that is also a RuntimeError). The GPU paths are written against
CuPy's API and have not been run on a GPU yet.

Example::

    >>> from ember.cuda._runtime import get_sync_debug_mode
    >>> get_sync_debug_mode()            # doctest: +SKIP
    0
"""

from __future__ import annotations

from ._errors import CudaBindingMissingError, require_gpu

__all__ = ["can_device_access_peer", "current_blas_handle", "current_solver_handle",
           "get_stream_from_external", "get_sync_debug_mode", "set_sync_debug_mode",
           "caching_allocator_alloc", "caching_allocator_delete", "memory_snapshot",
           "get_allocator_backend"]

_SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}
_sync_debug = {"mode": 0}
_raw_allocations = {}  # pointer -> CuPy MemoryPointer, kept alive until deleted


def _device_index(cupy, device):
    if device is None:
        return cupy.cuda.Device().id
    if isinstance(device, int):
        return device
    from .._device import to_device

    index = to_device(device).index
    return cupy.cuda.Device().id if index is None else index


def can_device_access_peer(device, peer_device):
    """Whether GPU ``device`` can read and write GPU ``peer_device``'s memory directly.

    Example::

        >>> ember.cuda.can_device_access_peer(0, 1)       # doctest: +SKIP
        True
    """
    cupy = require_gpu()
    first, second = _device_index(cupy, device), _device_index(cupy, peer_device)
    count = cupy.cuda.runtime.getDeviceCount()
    if not (0 <= first < count and 0 <= second < count):
        raise AssertionError("Invalid device id")
    return bool(cupy.cuda.runtime.deviceCanAccessPeer(first, second))


def current_blas_handle():
    """The current GPU's cuBLAS handle (a pointer as an int), CuPy's.

    Example::

        >>> handle = ember.cuda.current_blas_handle()     # doctest: +SKIP
    """
    return int(require_gpu().cuda.device.get_cublas_handle())


def current_solver_handle():
    """The current GPU's cuSOLVER dense handle (a pointer as an int), CuPy's.

    Example::

        >>> handle = ember.cuda.current_solver_handle()   # doctest: +SKIP
    """
    return int(require_gpu().cuda.device.get_cusolver_handle())


def get_stream_from_external(data_ptr, device=None):
    """An :class:`ember.cuda.ExternalStream` for a ``cudaStream_t`` made elsewhere.

    Example::

        >>> s = ember.cuda.get_stream_from_external(ptr)  # doctest: +SKIP
    """
    require_gpu()
    from .streams import ExternalStream

    return ExternalStream(data_ptr, device)


def get_sync_debug_mode():
    """The sync debug mode: 0 (default), 1 (warn) or 2 (error).

    Example::

        >>> ember.cuda.get_sync_debug_mode()              # doctest: +SKIP
        0
    """
    require_gpu()
    return _sync_debug["mode"]


def set_sync_debug_mode(debug_mode):
    """Set the sync debug mode (``"default"``/0, ``"warn"``/1, ``"error"``/2). ember records
    it; its GPU-to-host copies do not yet warn or raise under it.

    Example::

        >>> ember.cuda.set_sync_debug_mode("warn")        # doctest: +SKIP
    """
    require_gpu()
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               "`warn`, `error`")
        debug_mode = _SYNC_DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of 0, 1, 2")
    _sync_debug["mode"] = int(debug_mode)


def caching_allocator_alloc(size, device=None, stream=None):
    """``size`` bytes from the caching allocator (CuPy's memory pool) on ``device``; returns
    the pointer as an int, valid until :func:`caching_allocator_delete`.

    Example::

        >>> ptr = ember.cuda.caching_allocator_alloc(1024)  # doctest: +SKIP
        >>> ember.cuda.caching_allocator_delete(ptr)        # doctest: +SKIP
    """
    cupy = require_gpu()
    if not isinstance(size, int):
        raise TypeError("Invalid type for size argument, must be an int")
    with cupy.cuda.Device(_device_index(cupy, device)):
        memory = cupy.get_default_memory_pool().malloc(size)
    _raw_allocations[int(memory.ptr)] = memory
    return int(memory.ptr)


def caching_allocator_delete(mem_ptr):
    """Give memory from :func:`caching_allocator_alloc` back to the pool.

    Example::

        >>> ember.cuda.caching_allocator_delete(ptr)        # doctest: +SKIP
    """
    require_gpu(CudaBindingMissingError)
    if _raw_allocations.pop(int(mem_ptr), None) is None:
        raise RuntimeError("invalid device pointer: not allocated by caching_allocator_alloc")


def memory_snapshot(mempool_id=None, include_traces=True):
    """The caching allocator's segments, as torch lists them: CuPy's pool does not list its
    blocks, so the list is empty.

    Example::

        >>> ember.cuda.memory_snapshot()                    # doctest: +SKIP
        []
    """
    require_gpu(CudaBindingMissingError)
    return []


def get_allocator_backend():
    """The caching allocator's backend: ``"native"`` (CuPy's memory pool plays the part of
    torch's own caching allocator).

    Example::

        >>> ember.cuda.get_allocator_backend()             # doctest: +SKIP
        'native'
    """
    require_gpu(CudaBindingMissingError)
    return "native"
