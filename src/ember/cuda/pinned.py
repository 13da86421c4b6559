"""Page-locked ("pinned") host memory, as ``Tensor.pin_memory()`` and ``pin_memory=True`` give.

A pinned CPU tensor is an ordinary NumPy array whose buffer CuPy allocated with
``cudaHostAlloc``: the GPU can copy from it by DMA, so host-to-device copies are faster and can
overlap with compute. Pinning needs a GPU; without one torch raises, and so does ember.

Example::

    >>> t = ember.zeros(3)
    >>> t.is_pinned()
    False
    >>> t.pin_memory().is_pinned()     # with a GPU and CuPy
    True
"""

from __future__ import annotations

import numpy as np

from .._device import cupy_module
from ..ops._methods import tensor_method

__all__ = ["pinned_empty", "is_pinned_array", "check_pinning_available"]

_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def check_pinning_available(message=_NO_ACCELERATOR):
    """The CuPy module, or a RuntimeError (torch's message) when no GPU can pin memory."""
    cupy = cupy_module()
    if cupy is None:
        raise RuntimeError(message)
    return cupy


def pinned_empty(shape, np_dtype):
    """An uninitialised NumPy array of ``shape`` and ``np_dtype`` in page-locked memory."""
    cupy = check_pinning_available()
    np_dtype = np.dtype(np_dtype)
    count = int(np.prod(shape, dtype=np.int64))
    memory = cupy.cuda.alloc_pinned_memory(max(count * np_dtype.itemsize, 1))
    flat = np.frombuffer(memory, np_dtype, count)
    return flat.reshape(shape)


def is_pinned_array(array):
    """Whether ``array`` (a NumPy array) lives in memory CuPy pinned."""
    cupy = cupy_module()
    if cupy is None or not isinstance(array, np.ndarray):
        return False
    pinned_type = cupy.cuda.PinnedMemoryPointer
    base = array
    while base is not None:
        if isinstance(base, pinned_type):
            return True
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return False


def _pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked memory (itself if already pinned).

    Needs a GPU (raises RuntimeError without one, as torch does).

    Example::

        >>> ember.zeros(2).pin_memory().is_pinned()   # with a GPU
        True
    """
    if self._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    check_pinning_available()
    if is_pinned_array(self._data):
        return self
    from .._tensor import Tensor

    pinned = pinned_empty(self._data.shape, self._data.dtype)
    pinned[...] = self._data
    return Tensor._make(pinned, self._device)


def _is_pinned(self, device=None):
    """Whether this tensor's memory is page-locked (always False without a GPU).

    Example::

        >>> ember.zeros(2).is_pinned()
        False
    """
    return self._device.type == "cpu" and is_pinned_array(self._data)


def _attach():
    tensor_method(_pin_memory, "pin_memory")
    tensor_method(_is_pinned, "is_pinned")


_attach()
