"""``ember.multiprocessing.reductions``: how tensors are pickled between processes.

A CPU tensor is moved to shared memory (a memfd) and sent as its descriptor; a CUDA tensor as
a CUDA IPC handle. :func:`init_reductions` registers these reducers with multiprocessing's
``ForkingPickler`` (ember does it on import). torch's reducers for storages, events, nested
and sparse tensors have no counterpart in ember's sharing format: they raise
``NotImplementedError`` naming what to share instead (the tensor itself).

Example::

    >>> from ember.multiprocessing.reductions import reduce_tensor
    >>> rebuild, args = reduce_tensor(ember.ones(2))
    >>> rebuild(*args)
    tensor([1., 1.])
"""

from __future__ import annotations

import os
import threading
import weakref

from . import _reduce_tensor, _register_reducers

__all__ = ["SharedCache", "StorageWeakRef", "fd_id", "init_reductions", "rebuild_cuda_tensor",
           "rebuild_event", "rebuild_meta_tensor", "rebuild_nested_tensor",
           "rebuild_sparse_compressed_tensor", "rebuild_sparse_coo_tensor",
           "rebuild_storage_empty", "rebuild_storage_fd", "rebuild_storage_filename",
           "rebuild_tensor", "rebuild_typed_storage", "rebuild_typed_storage_child",
           "reduce_event", "reduce_nested_tensor", "reduce_sparse_tensor", "reduce_storage",
           "reduce_tensor", "reduce_typed_storage", "reduce_typed_storage_child",
           "shared_cache", "storage_from_cache"]


def reduce_tensor(tensor):
    """``(rebuild, args)`` sending ``tensor`` through shared memory (moving it there first).

    Example::

        >>> reduce_tensor(ember.zeros(1))[0].__name__
        '_rebuild_shared'
    """
    return _reduce_tensor(tensor)


def init_reductions():
    """Register ember's tensor reducers with ``multiprocessing.reduction.ForkingPickler``.

    Example::

        >>> init_reductions()
    """
    _register_reducers()


def rebuild_tensor(cls, storage, metadata):
    """A tensor of type ``cls`` viewing ``storage`` with ``(offset, size, stride,
    requires_grad)`` metadata.

    Example::

        >>> s = ember.arange(4.0).untyped_storage()
        >>> rebuild_tensor(ember.Tensor, s, (0, (2,), (1,), False))  # doctest: +SKIP
    """
    from .. import empty
    offset, size, stride, requires_grad = metadata
    t = empty((0,), dtype=getattr(storage, "dtype", None)).set_(storage, offset, size, stride)
    if requires_grad:
        t.requires_grad_()
    return t if cls is type(t) else cls(t) if callable(cls) else t


def rebuild_meta_tensor(tensor_cls, tensor_size, tensor_stride, tensor_offset, dtype,
                        storage_size_bytes, requires_grad):
    """A ``meta`` tensor (shape and dtype only) of the given size and dtype.

    Example::

        >>> rebuild_meta_tensor(ember.Tensor, (2,), (1,), 0, ember.float32, 8, False).shape
        ember.Size([2])
    """
    from .. import empty_strided
    t = empty_strided(tensor_size, tensor_stride, dtype=dtype, device="meta")
    return t.requires_grad_() if requires_grad else t


class StorageWeakRef:
    """A weak reference to a storage, comparable by the storage's identity.

    Example::

        >>> s = ember.ones(1).untyped_storage()
        >>> StorageWeakRef(s).expired()
        False
    """

    def __init__(self, storage):
        self.cdata = id(storage)
        self._ref = weakref.ref(storage)

    @classmethod
    def from_weakref(cls, cdata):
        instance = cls.__new__(cls)
        instance.cdata, instance._ref = cdata, (lambda: None)
        return instance

    def expired(self):
        return self._ref() is None

    def __hash__(self):
        return self.cdata

    def __eq__(self, other):
        return isinstance(other, StorageWeakRef) and self.cdata == other.cdata


class SharedCache(dict):
    """A thread-safe dict of storages shared with other processes, keyed by handle.

    Example::

        >>> SharedCache().get(("missing",)) is None
        True
    """

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            ref = dict.get(self, key)
            return None if ref is None or ref.expired() else ref

    def __setitem__(self, key, storage_ref):
        with self.lock:
            dict.__setitem__(self, key, storage_ref)

    def free_dead_references(self):
        with self.lock:
            for key in [k for k, ref in self.items() if ref.expired()]:
                del self[key]


shared_cache = SharedCache()


def storage_from_cache(cls, key):
    """The storage cached under ``key`` (None when absent or collected)."""
    ref = shared_cache.get(key)
    return None if ref is None else ref._ref()


def fd_id(fd):
    """An id for the file behind ``fd`` (inode and device), equal across processes.

    Example::

        >>> import tempfile
        >>> with tempfile.TemporaryFile() as f:
        ...     len(fd_id(f.fileno()))
        2
    """
    stat = os.fstat(fd)
    return stat.st_ino, stat.st_dev


def _not_shared(name, instead):
    def function(*args, **kwargs):
        raise NotImplementedError(
            f"torch.multiprocessing.reductions.{name} belongs to torch's storage-level sharing "
            f"format, which ember does not use; {instead}")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch's ``{name}``: raises ``NotImplementedError`` in ember."
    return function


_SHARE_TENSORS = "put the tensors themselves on an ember.multiprocessing queue"
rebuild_cuda_tensor = _not_shared("rebuild_cuda_tensor", _SHARE_TENSORS)
rebuild_event = _not_shared("rebuild_event", "CUDA events cannot be shared between processes")
reduce_event = _not_shared("reduce_event", "CUDA events cannot be shared between processes")
rebuild_nested_tensor = _not_shared("rebuild_nested_tensor", _SHARE_TENSORS)
reduce_nested_tensor = _not_shared("reduce_nested_tensor", _SHARE_TENSORS)
rebuild_sparse_coo_tensor = _not_shared("rebuild_sparse_coo_tensor", _SHARE_TENSORS)
rebuild_sparse_compressed_tensor = _not_shared("rebuild_sparse_compressed_tensor",
                                               _SHARE_TENSORS)
reduce_sparse_tensor = _not_shared("reduce_sparse_tensor", _SHARE_TENSORS)
reduce_storage = _not_shared("reduce_storage", _SHARE_TENSORS)
reduce_typed_storage = _not_shared("reduce_typed_storage", _SHARE_TENSORS)
reduce_typed_storage_child = _not_shared("reduce_typed_storage_child", _SHARE_TENSORS)
rebuild_storage_fd = _not_shared("rebuild_storage_fd", _SHARE_TENSORS)
rebuild_storage_filename = _not_shared("rebuild_storage_filename", _SHARE_TENSORS)
rebuild_storage_empty = _not_shared("rebuild_storage_empty", _SHARE_TENSORS)
rebuild_typed_storage = _not_shared("rebuild_typed_storage", _SHARE_TENSORS)
rebuild_typed_storage_child = _not_shared("rebuild_typed_storage_child", _SHARE_TENSORS)
