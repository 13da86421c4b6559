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
           "manual_seed", "manual_seed_all", "get_device_name"]


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
    from .._device import to_device

    index = device if isinstance(device, int) else to_device(device).index or 0
    require_cupy().cuda.Device(index).use()


def synchronize(device=None):
    """Wait for all work queued on the GPU to finish."""
    require_cupy().cuda.Device().synchronize()


def get_device_name(device=None):
    """The GPU's name."""
    cp = require_cupy()
    index = 0 if device is None else (device if isinstance(device, int) else device.index or 0)
    return cp.cuda.runtime.getDeviceProperties(index)["name"].decode()


def manual_seed(seed):
    """Seed the current GPU's generator."""
    from ..ops import random as _random

    _random.cuda_generator(current_device()).manual_seed(seed)


def manual_seed_all(seed):
    """Seed every GPU's generator (a no-op without GPUs)."""
    if not is_available():
        return
    from ..ops import random as _random

    for index in range(device_count()):
        _random.cuda_generator(index).manual_seed(seed)
