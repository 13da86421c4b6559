"""``ember.multiprocessing``: Python's multiprocessing, with tensors shared, not copied.

A tensor sent to another process (on a ``Queue``, through a ``Pipe``, or as a ``Process``
argument) is moved into shared memory first and arrives as a view of the same memory: no copy
of its data is pickled. The memory is an anonymous ``memfd`` passed as a file descriptor, so
nothing is left in ``/dev/shm`` and it is released when the last process lets go.
``model.share_memory()`` shares every parameter, which is how Hogwild training works.

``ember.multiprocessing.Queue`` sends each item as one packet with its tensors' descriptors
attached (see ``_queue``): an item arrives whole even after its sender has exited or been
killed, and a process killed mid-transfer cannot leave half an item behind. Python's queues and
pipes (``get_context(...).Queue()``, ``SimpleQueue``, ``Pipe``) fetch the descriptor from the
sending process when the receiver unpickles the tensor; if that process has exited by then, the
receiver gets a ``RuntimeError`` saying so.
CUDA tensors travel as CUDA IPC memory handles (see ``_cuda_ipc``): the receiver maps the same
device memory, and the sender must keep the tensor alive while receivers use it.

Example::

    >>> import ember.multiprocessing as mp
    >>> q = mp.Queue()
    >>> t = ember.zeros(3)
    >>> q.put(t)            # t now lives in shared memory; the receiver sees the same data
"""

from __future__ import annotations

import importlib
import mmap
import multiprocessing
import os
import weakref
from multiprocessing import *  # noqa: F403  (a drop-in replacement)
from multiprocessing import reduction

import numpy as np

from .. import _dtype as dt
from .._device import CPU
from .._tensor import Tensor
from ..ops._methods import tensor_method as _tensor_method
from . import _channel
from ._cuda_ipc import reduce_cuda_tensor, share_cuda_
from ._queue import Queue  # noqa: F401  (replaces multiprocessing.Queue)

__all__ = list(multiprocessing.__all__) + ["set_sharing_strategy", "get_sharing_strategy",
                                           "get_all_sharing_strategies", "spawn",
                                           "ProcessContext", "ProcessRaisedException",
                                           "ProcessExitedException"]

_SHARING_STRATEGIES = {"file_descriptor"}
_sharing_strategy = "file_descriptor"

# mmap object -> file descriptor of its memfd (closed when the mapping is collected)
_SHARED_FDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def set_sharing_strategy(new_strategy):
    """Choose how tensors are shared; ember uses ``'file_descriptor'`` (memfd)."""
    global _sharing_strategy
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"unsupported sharing strategy {new_strategy!r}; ember supports "
                         f"{sorted(_SHARING_STRATEGIES)}")
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current sharing strategy."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The sharing strategies this platform supports."""
    return set(_SHARING_STRATEGIES)


# ---------------------------------------------------------------- shared storages


def _new_shared_buffer(nbytes):
    """An anonymous shared mapping of ``nbytes`` and the fd that names it."""
    fd = os.memfd_create("ember-tensor", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(nbytes, 1))
        buffer = mmap.mmap(fd, max(nbytes, 1))
    except BaseException:
        os.close(fd)
        raise
    _remember(buffer, fd)
    return buffer


def _remember(buffer, fd):
    _SHARED_FDS[buffer] = fd
    weakref.finalize(buffer, os.close, fd)


def _shared_buffer_of(array):
    """The shared mmap behind ``array``, or None."""
    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base if base in _SHARED_FDS else None
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    return None


@_tensor_method
def is_shared(tensor):
    """Whether ``tensor``'s memory is in shared memory."""
    if tensor._device.type != "cpu":
        return tensor._device.type == "cuda"
    return _shared_buffer_of(tensor._data) is not None


@_tensor_method
def share_memory_(tensor):
    """Move ``tensor``'s storage into shared memory (in place; the view geometry is kept).

    A view's base moves with it, so the two keep sharing memory; other views of the same
    storage keep the old memory (ember has no storage object to redirect them through).
    """
    if tensor._device.type == "cuda":
        return share_cuda_(tensor)
    if tensor._device.type != "cpu" or is_shared(tensor):
        return tensor
    root = tensor._storage_root()
    offset = _address(tensor._data) - _address(root) if tensor._data.size else 0
    if tensor._base is not None:
        share_memory_(tensor._base)
        buffer = _shared_buffer_of(tensor._base._data)
    else:
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            raise RuntimeError("share_memory_: the tensor's storage is not dense")
        buffer = _new_shared_buffer(root.nbytes)
        np.ndarray(root.shape, root.dtype, buffer=buffer, strides=root.strides)[...] = root
    flat = np.frombuffer(buffer, dtype=np.uint8)
    tensor._data = np.lib.stride_tricks.as_strided(
        flat[offset:offset + max(root.nbytes - offset, 0)].view(root.dtype),
        tensor._data.shape, tensor._data.strides)
    return tensor


def _address(array):
    return array.__array_interface__["data"][0]


def _rebuild_shared(dup_fd, nbytes, dtype_name, offset, shape, strides, requires_grad, kind):
    fd = _receive_fd(dup_fd)
    buffer = mmap.mmap(fd, max(nbytes, 1))
    _remember(buffer, fd)
    dtype = getattr(dt, dtype_name)
    flat = np.frombuffer(buffer, dtype=np.uint8)
    array = np.lib.stride_tricks.as_strided(flat[offset:].view(dtype.np), shape, strides)
    t = Tensor._make(array, CPU)
    if kind == "Parameter":
        from ..nn import Parameter

        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_()
    return t


def _receive_fd(handle):
    """The descriptor behind ``handle``: attached to the message (``ember.multiprocessing.Queue``,
    DataLoader workers) or fetched from the sending process (Python's queues and pipes), which
    fails once that process has exited."""
    try:
        return handle.detach()
    except (OSError, EOFError) as error:
        raise RuntimeError(
            "could not receive a shared tensor: the process that sent it exited (or closed "
            "its end) before the tensor's shared memory was received. Keep the sender alive "
            "until its tensors are received, or send through ember.multiprocessing.Queue, "
            f"whose items carry their memory with them ({type(error).__name__}: {error})"
        ) from error


def _reduce_tensor(tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if tensor._device.type == "cuda":
        return reduce_cuda_tensor(tensor)
    if tensor._device.type != "cpu":
        raise RuntimeError(f"cannot share a tensor on the '{tensor._device.type}' device "
                           f"between processes")
    share_memory_(tensor)
    buffer = _shared_buffer_of(tensor._data)
    offset = _address(tensor._data) - _address(np.frombuffer(buffer, dtype=np.uint8)) \
        if tensor._data.size else 0
    return (_rebuild_shared,
            (_channel.fd_handle(_SHARED_FDS[buffer]), len(buffer), tensor.dtype.name, offset,
             tensor._data.shape, tensor._data.strides, tensor.requires_grad,
             type(tensor).__name__))


def _register_reducers():
    reduction.ForkingPickler.register(Tensor, _reduce_tensor)
    try:
        from ..nn.parameter import Parameter
    except ImportError:  # nn not importable (partial install): plain tensors still work
        return
    reduction.ForkingPickler.register(Parameter, _reduce_tensor)


_register_reducers()


# ---------------------------------------------------------------- spawn


class ProcessException(Exception):
    """Base of the failures of processes started by :func:`spawn` (torch's class)."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process started by :func:`spawn` raised; the message holds its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A process started by :func:`spawn` exited with a non-zero code or a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _spawn_entry(fn, index, args, error_queue):
    import traceback

    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    """The processes started by :func:`spawn`; ``join()`` waits and re-raises failures."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all have finished, raising on the first failure."""
        for index, (process, queue) in enumerate(zip(self.processes, self.error_queues)):
            process.join(timeout)
            if process.exitcode is None:
                return False
            if process.exitcode != 0:
                for other in self.processes:
                    if other.is_alive():
                        other.terminate()
                if not queue.empty():
                    raise ProcessRaisedException(
                        f"\n\n-- Process {index} terminated with the following error:\n"
                        f"{queue.get()}", index, process.pid)
                code = process.exitcode
                signal_name = None
                if code < 0:
                    import signal

                    signal_name = signal.Signals(-code).name
                    raise ProcessExitedException(
                        f"process {index} terminated with signal {signal_name}", index,
                        process.pid, code, signal_name)
                raise ProcessExitedException(
                    f"process {index} terminated with exit code {code}", index, process.pid,
                    code)
        return True


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; join them unless ``join=False``.

    Example::

        >>> ember.multiprocessing.spawn(train, args=(model,), nprocs=2)
    """
    context = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for index in range(nprocs):
        queue = context.SimpleQueue()
        process = context.Process(target=_spawn_entry, args=(fn, index, args, queue),
                                  daemon=daemon)
        process.start()
        processes.append(process)
        queues.append(queue)
    result = ProcessContext(processes, queues)
    if not join:
        return result
    while not result.join():
        pass
    return None


# torch's submodule paths (spawn, pool, queue, reductions). Importing a submodule binds its
# name on this package, so the ``spawn`` function is bound again afterwards, as in torch.
_spawn_function = spawn
for _submodule in ("pool", "queue", "reductions", "spawn"):
    importlib.import_module(f"{__name__}.{_submodule}")
spawn = _spawn_function  # noqa: F811

# torch defines these in torch.multiprocessing.spawn and its Queue in .queue: their pickled
# names and tracebacks show those modules, which hand them out from here
for _cls in (ProcessContext, ProcessException, ProcessRaisedException, ProcessExitedException):
    _cls.__module__ = f"{__name__}.spawn"
Queue.__module__ = f"{__name__}.queue"
