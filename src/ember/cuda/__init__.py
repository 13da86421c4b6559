"""``ember.cuda``: the GPU device, backed by CuPy.

Without CuPy or a GPU, :func:`is_available` is False and calls that need a GPU raise a clear
RuntimeError.

Example::

    >>> ember.cuda.is_available()
    False
"""

from __future__ import annotations

from .._device import cupy_module, require_cupy

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "manual_seed", "manual_seed_all", "get_device_name", "get_device_capability",
           "get_device_properties", "is_initialized", "init", "is_bf16_supported",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved"]


def is_available():
    """Whether a CUDA GPU can be used (CuPy installed and at least one device seen)."""
    return cupy_module() is not None


def device_count():
    """The number of GPUs CuPy sees (0 without CuPy)."""
    cp = cupy_module()
    return cp.cuda.runtime.getDeviceCount() if cp is not None else 0


def current_device():
    """The index of the current GPU."""
    return require_cupy().cuda.Device().id


def set_device(device):
    """Make ``device`` (an index, 'cuda:N' or a device) the current GPU."""
    require_cupy().cuda.Device(_index(device)).use()


def synchronize(device=None):
    """Wait for all work queued on the GPU (``device``, or the current one) to finish."""
    require_cupy().cuda.Device(_index(device)).synchronize()


def _index(device):
    """The ordinal of ``device`` (an index, 'cuda:N', a device, or None: the current GPU)."""
    cp = require_cupy()
    if device is None:
        return cp.cuda.Device().id
    if isinstance(device, int):
        return device
    from .._device import to_device

    index = to_device(device).index
    return cp.cuda.Device().id if index is None else index


def get_device_properties(device=None):
    """The GPU's properties (CUDA's ``cudaDeviceProp`` fields, as CuPy reports them)."""
    return require_cupy().cuda.runtime.getDeviceProperties(_index(device))


def get_device_name(device=None):
    """The GPU's name."""
    return get_device_properties(device)["name"].decode()


def get_device_capability(device=None):
    """The GPU's compute capability as ``(major, minor)``."""
    props = get_device_properties(device)
    return props["major"], props["minor"]


def is_initialized():
    """Whether a GPU has been set up (CuPy found a device)."""
    return is_available()


def init():
    """Set up CUDA (raises without a GPU, as torch)."""
    require_cupy()


def is_bf16_supported(including_emulation=True):
    """False: ember's cuda tensors live in CuPy arrays, and CuPy has no bfloat16."""
    return False


def empty_cache():
    """Give the cached, unused GPU memory of CuPy's memory pool back (a no-op without GPU)."""
    cp = cupy_module()
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None):
    """Bytes of GPU memory held by tensors (CuPy's pool in use); 0 without a GPU."""
    cp = cupy_module()
    return cp.get_default_memory_pool().used_bytes() if cp is not None else 0


def memory_reserved(device=None):
    """Bytes of GPU memory held by CuPy's pool (in use or cached); 0 without a GPU."""
    cp = cupy_module()
    return cp.get_default_memory_pool().total_bytes() if cp is not None else 0


def max_memory_allocated(device=None):
    """ember keeps no peak statistics: the current :func:`memory_allocated`."""
    return memory_allocated(device)


def max_memory_reserved(device=None):
    """ember keeps no peak statistics: the current :func:`memory_reserved`."""
    return memory_reserved(device)


def manual_seed(seed):
    """Seed the current GPU's generator (silently ignored without a GPU, as torch)."""
    if not is_available():
        return
    from ..ops import random as _random

    _random.cuda_generator(current_device()).manual_seed(seed)


def manual_seed_all(seed):
    """Seed every GPU's generator (a no-op without GPUs)."""
    if not is_available():
        return
    from ..ops import random as _random

    for index in range(device_count()):
        _random.cuda_generator(index).manual_seed(seed)


from . import pinned  # noqa: E402,F401  (attaches Tensor.pin_memory / is_pinned)
