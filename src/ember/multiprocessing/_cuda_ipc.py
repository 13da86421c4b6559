"""Sharing CUDA tensors between processes through CUDA IPC memory handles (via CuPy).

A CUDA tensor sent to another process is not copied: its storage is moved (once) into a device
allocation of its own, whose ``cudaIpcGetMemHandle`` handle is pickled; the receiver opens the
handle (``cudaIpcOpenMemHandle``) and wraps the same device memory in a CuPy array. As in torch,
the sending process must keep the tensor alive for as long as receivers use it; a receiver closes
its mapping when its last array of it is collected.

A process that receives its own handle back (a Queue read in the same process) gets the original
memory, since CUDA refuses to open a handle in the process that made it.
"""

from __future__ import annotations

import os
import weakref

from .._device import device as _device_type
from .._device import require_cupy

__all__ = ["share_cuda_", "reduce_cuda_tensor"]

# handle bytes -> the dedicated allocation it names, for receivers in the exporting process
_EXPORTED: dict = {}
# CuPy memory object (ours or opened) -> its IPC handle bytes, to re-send without re-exporting
_HANDLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _exported(array):
    """Whether ``array``'s memory is an exported allocation of its own (not a pool chunk)."""
    return array.data.mem in _HANDLES


def share_cuda_(tensor):
    """Move a CUDA tensor's data into an allocation of its own that can be exported (in place).

    A view moves with its base, so the two keep sharing memory.
    """
    cupy = require_cupy()
    if _exported(tensor._data):
        return tensor
    if tensor._base is None:
        _move_to_exportable(tensor, cupy)
        return tensor
    base, view = tensor._base, tensor._data
    offset = view.data.ptr - base._data.data.ptr if view.size else 0
    share_cuda_(base)
    memory = base._data.data.mem
    start = base._data.data.ptr - memory.ptr + offset
    tensor._data = cupy.ndarray(view.shape, view.dtype, cupy.cuda.MemoryPointer(memory, start),
                                view.strides)
    return tensor


def _move_to_exportable(tensor, cupy):
    array = tensor._data
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise RuntimeError("share_memory_: the CUDA tensor's storage is not dense")
    with cupy.cuda.Device(tensor._device.index):
        memory = cupy.cuda.Memory(max(array.nbytes, 1))
        owned = cupy.ndarray(array.shape, array.dtype, cupy.cuda.MemoryPointer(memory, 0),
                             array.strides)
        owned[...] = array
        handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(memory.ptr))
    _HANDLES[memory] = handle
    _EXPORTED[handle] = weakref.ref(memory, lambda _, key=handle: _EXPORTED.pop(key, None))
    tensor._data = owned


class _OpenedHandle:
    """Device memory another process exported, opened in this one; closed when collected."""

    def __init__(self, cupy, handle, device_index):
        self.cupy, self.device_index = cupy, device_index
        with cupy.cuda.Device(device_index):
            self.ptr = cupy.cuda.runtime.ipcOpenMemHandle(
                handle, cupy.cuda.runtime.cudaIpcMemLazyEnablePeerAccess)
        weakref.finalize(self, _close, cupy, self.ptr, device_index)


def _close(cupy, ptr, device_index):
    with cupy.cuda.Device(device_index):
        cupy.cuda.runtime.ipcCloseMemHandle(ptr)


def _rebuild_cuda(handle, nbytes, device_index, pid, dtype_name, offset, shape, strides,
                  requires_grad, kind):
    from .. import _dtype as dt
    from .._tensor import Tensor

    cupy = require_cupy()
    memory = None
    if pid == os.getpid():
        memory = _EXPORTED.get(handle, lambda: None)()
    if memory is None:
        opened = _OpenedHandle(cupy, handle, device_index)
        memory = cupy.cuda.UnownedMemory(opened.ptr, nbytes, opened, device_index)
        _HANDLES[memory] = handle
    pointer = cupy.cuda.MemoryPointer(memory, offset)
    array = cupy.ndarray(shape, getattr(dt, dtype_name).np, pointer, strides)
    t = Tensor._make(array, _device_type("cuda", device_index))
    if kind == "Parameter":
        from ..nn import Parameter

        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_()
    return t


def reduce_cuda_tensor(tensor):
    """The pickle reduction of a CUDA tensor: its IPC handle and view geometry."""
    share_cuda_(tensor)
    array = tensor._data
    memory = array.data.mem
    offset = array.data.ptr - memory.ptr
    return (_rebuild_cuda,
            (_HANDLES[memory], memory.size, tensor._device.index, os.getpid(),
             tensor.dtype.name, offset, array.shape, array.strides, tensor.requires_grad,
             type(tensor).__name__))
