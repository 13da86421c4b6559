"""Storages: the flat memory behind tensors (``torch.UntypedStorage``, ``torch.TypedStorage``).

A tensor's memory is the array at the root of its ``.base`` chain (see ``Tensor._storage_root``).
An :class:`UntypedStorage` is a one-dimensional ``uint8`` view of that memory, so reading or
writing a byte through the storage reads or writes the tensor's memory, and a tensor built on a
storage with :meth:`Tensor.set_` is a view of those same bytes. A :class:`TypedStorage` is an
untyped storage seen as elements of one dtype; torch deprecates it, and so does ember (one
``UserWarning`` per process). ``FloatStorage``, ``LongStorage``... are its legacy per-dtype forms.

Unlike torch, the storage of an existing tensor cannot be resized: ember's tensors hold their
array directly, so new memory given to the storage would not reach them. Such storages report
``resizable() == False``; storages made on their own (``UntypedStorage(8)``) resize.

Example::

    >>> t = ember.zeros(2)
    >>> s = t.untyped_storage()
    >>> s.nbytes(), s[3]
    (8, 0)
    >>> s[3] = 63; s[2] = 128     # the bytes of 1.0 in little-endian float32
    >>> t
    tensor([1., 0.])
"""

from __future__ import annotations

import builtins
import io
import numbers
import warnings

import numpy as np

from . import _dtype as dt
from ._device import CPU, META, canonical
from ._tensor import Tensor, _array_address, _contiguous_strides
from .ops._methods import tensor_method as _tensor_method

__all__ = ["UntypedStorage", "TypedStorage", "is_storage"]


# ---------------------------------------------------------------- helpers


def _bytes_of(root):
    """A one-dimensional ``uint8`` view of the memory of array ``root`` (in memory order)."""
    if root.flags.c_contiguous:
        flat = root.reshape(-1)
    elif root.flags.f_contiguous:
        flat = root.T.reshape(-1)
    else:
        raise RuntimeError("untyped_storage(): the tensor's memory is not one dense block")
    return flat.view(np.uint8)


def _host_array(array):
    return array.get() if hasattr(array, "get") else array


def _index(key, size, report_wrapped=False):
    """``key`` as a non-negative index below ``size`` (negative keys count from the end).

    The message names the key as given, or (``report_wrapped``, as torch's untyped storages
    do) after adding ``size`` to a negative one."""
    index = builtins.int(key)
    if index < -size or index >= size:
        shown = index + size if report_wrapped and index < 0 else index
        raise IndexError(f"index {shown} out of range for storage of size {size}")
    return index + size if index < 0 else index


def _slice_bounds(key, size):
    start, stop, step = key.indices(size)
    if step != 1:
        raise RuntimeError(f"Trying to slice with a step of {step}, but only a step of 1 is "
                           f"supported")
    return start, builtins.max(stop, start)


def _python_number(value, dtype):
    """One element as the Python number torch returns for it."""
    if dtype is dt.bool:
        return builtins.bool(value)
    if dtype.is_complex:
        return builtins.complex(value)
    if dtype.is_floating_point:
        return builtins.float(value)
    return builtins.int(value)


def _check_not_meta(device):
    if device is META:
        raise NotImplementedError("Not available for 'meta' device type")


# ---------------------------------------------------------------- UntypedStorage


class UntypedStorage:
    """A flat block of bytes on a device: the memory behind tensors.

    ``UntypedStorage(n)`` allocates ``n`` uninitialised bytes, ``UntypedStorage([1, 2])`` holds
    the given byte values (taken modulo 256), ``tensor.untyped_storage()`` is the memory of a
    tensor (writes through it change the tensor).

    Example::

        >>> s = ember.UntypedStorage([1, 2, 300])
        >>> s.tolist(), len(s)
        ([1, 2, 44], 3)
    """

    is_sparse = False

    def __init__(self, *args, device=None):
        device = CPU if device is None else canonical(device)
        if len(args) > 1:
            raise TypeError(f"torch.UntypedStorage(): expected at most 1 argument, got "
                            f"{len(args)}")
        content = args[0] if args else 0
        if isinstance(content, (builtins.int, np.integer)) and not isinstance(content,
                                                                               builtins.bool):
            byte_values = None
            nbytes = builtins.int(content)
        elif isinstance(content, (list, tuple)):
            byte_values = np.array(content, dtype=np.int64).reshape(-1) % 256
            nbytes = byte_values.size
        else:
            raise RuntimeError(f"torch.UntypedStorage(): Expected a sequence type, but got "
                               f"{type(content).__name__}")
        self._setup(_new_bytes(nbytes, device), device, resizable=True, owner=None,
                    meta_nbytes=nbytes)
        if byte_values is not None and device is not META:
            self._bytes[...] = device.xp.asarray(byte_values.astype(np.uint8))

    def _setup(self, byte_array, device, resizable, owner, meta_nbytes=0):
        self._bytes = byte_array          # uint8 array, None on the meta device
        self._meta_nbytes = meta_nbytes   # the size a meta storage pretends to have
        self.device = device
        self._resizable = resizable
        self._owner = owner               # the tensor this is the memory of, if any

    @classmethod
    def _wrap(cls, byte_array, device, resizable=False, owner=None, meta_nbytes=0):
        storage = object.__new__(cls)
        storage._setup(byte_array, device, resizable, owner, meta_nbytes)
        return storage

    @classmethod
    def _of_tensor(cls, tensor):
        """The memory of ``tensor`` (not resizable: see the module docstring)."""
        if tensor._device is META:
            nbytes = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
            return cls._wrap(None, META, meta_nbytes=nbytes)
        return cls._wrap(_bytes_of(tensor._storage_root()), tensor._device, owner=tensor)

    # ------------------------------------------------------------ size and address

    def nbytes(self):
        """The size in bytes.

        Example::

            >>> ember.zeros(3).untyped_storage().nbytes()
            12
        """
        return self._meta_nbytes if self._bytes is None else builtins.int(self._bytes.size)

    def size(self):
        """The size in bytes (an untyped storage's elements are bytes).

        Example::

            >>> ember.UntypedStorage(5).size()
            5
        """
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        """The size of one element: 1 byte.

        Example::

            >>> ember.UntypedStorage(2).element_size()
            1
        """
        return 1

    def data_ptr(self):
        """The address of the first byte (0 on the meta device).

        Example::

            >>> t = ember.zeros(2)
            >>> t.untyped_storage().data_ptr() == t.data_ptr()
            True
        """
        return 0 if self._bytes is None else _array_address(self._bytes)

    @property
    def is_cuda(self):
        """Whether the bytes live on a CUDA device."""
        return self.device.type == "cuda"

    def get_device(self):
        """The CUDA ordinal, or -1 for CPU memory.

        Example::

            >>> ember.UntypedStorage(1).get_device()
            -1
        """
        return (self.device.index or 0) if self.is_cuda else -1

    def type(self):
        """The type name, ``'torch.UntypedStorage'`` (as ``Tensor.type()`` names torch's types).

        Example::

            >>> ember.UntypedStorage(1).type()
            'torch.UntypedStorage'
        """
        return "torch.UntypedStorage"

    def resizable(self):
        """Whether :meth:`resize_` may give this storage new memory.

        Example::

            >>> ember.UntypedStorage(1).resizable(), ember.zeros(1).untyped_storage().resizable()
            (True, False)
        """
        return self._resizable

    # ------------------------------------------------------------ elements

    def __getitem__(self, key):
        _check_not_meta(self.device)
        if isinstance(key, slice):
            start, stop = _slice_bounds(key, self.nbytes())
            return UntypedStorage._wrap(self._bytes[start:stop], self.device, owner=self._owner)
        if not isinstance(key, (builtins.int, np.integer)):
            raise TypeError(f"can't index a torch.UntypedStorage with {type(key).__name__}")
        return builtins.int(self._bytes[_index(key, self.nbytes(), report_wrapped=True)])

    def __setitem__(self, key, value):
        _check_not_meta(self.device)
        if isinstance(key, slice):
            start, stop = _slice_bounds(key, self.nbytes())
            self._bytes[start:stop] = builtins.int(value) % 256
            return
        if not isinstance(key, (builtins.int, np.integer)):
            raise TypeError(f"can't index a torch.UntypedStorage with {type(key).__name__}")
        if not 0 <= key < self.nbytes():  # torch: no negative indices when writing a byte
            raise RuntimeError("out of bounds")
        self._bytes[key] = builtins.int(value) % 256

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        """The bytes as a list of ints in ``[0, 255]``.

        Example::

            >>> ember.tensor([1], dtype=ember.int16).untyped_storage().tolist()
            [1, 0]
        """
        _check_not_meta(self.device)
        return _host_array(self._bytes).tolist()

    def fill_(self, value):
        """Set every byte to ``value`` (modulo 256); returns this storage.

        Example::

            >>> ember.UntypedStorage(2).fill_(7).tolist()
            [7, 7]
        """
        if self._bytes is not None:
            self._bytes[...] = builtins.int(value) % 256
        return self

    def copy_(self, source, non_blocking=None):
        """Copy the bytes of ``source`` (a storage of the same size in bytes) into this one.

        Example::

            >>> ember.UntypedStorage(2).copy_(ember.UntypedStorage([4, 5])).tolist()
            [4, 5]
        """
        source = source._untyped_storage if isinstance(source, TypedStorage) else source
        if not isinstance(source, UntypedStorage):
            raise TypeError(f"copy_(): argument 'src' must be a storage, not "
                            f"{type(source).__name__}")
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {source.nbytes()} bytes")
        if self._bytes is not None and source._bytes is not None:
            self._bytes[...] = self.device.xp.asarray(_host_array(source._bytes)) \
                if source.device != self.device else source._bytes
        return self

    def clone(self):
        """A copy of this storage in new (resizable) memory on the same device.

        Example::

            >>> s = ember.UntypedStorage([1]); c = s.clone(); c[0] = 9
            >>> s[0], c[0]
            (1, 9)
        """
        copied = None if self._bytes is None else self._bytes.copy()
        return UntypedStorage._wrap(copied, self.device, resizable=True,
                                    meta_nbytes=self._meta_nbytes)

    def resize_(self, size):
        """Give this storage ``size`` bytes, keeping the first ones (new bytes are
        uninitialised); only for storages that are :meth:`resizable`.

        Example::

            >>> ember.UntypedStorage([1, 2]).resize_(3).nbytes()
            3
        """
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        size = builtins.int(size)
        if size < 0:
            raise RuntimeError(f"Storage size must be non-negative, but got {size}")
        if self._bytes is None:
            self._meta_nbytes = size
            return self
        resized = _new_bytes(size, self.device)
        kept = builtins.min(size, self.nbytes())
        resized[:kept] = self._bytes[:kept]
        self._bytes = resized
        return self

    # ------------------------------------------------------------ devices and sharing

    def to(self, *, device, non_blocking=False):
        """This storage on ``device`` (itself when it is already there).

        Example::

            >>> s = ember.UntypedStorage(1)
            >>> s.to(device="cpu") is s
            True
        """
        device = canonical(device)
        if device == self.device:
            return self
        moved = None
        if device is not META:
            _check_not_meta(self.device)
            moved = device.xp.asarray(_host_array(self._bytes))
        return UntypedStorage._wrap(moved, device, resizable=True, meta_nbytes=self.nbytes())

    def cpu(self):
        """This storage in CPU memory (itself when it is there already).

        Example::

            >>> s = ember.UntypedStorage(1)
            >>> s.cpu() is s
            True
        """
        return self.to(device=CPU)

    def cuda(self, device=None, non_blocking=False):
        """This storage in CUDA memory."""
        return self.to(device="cuda" if device is None else canonical(device if not isinstance(
            device, builtins.int) else f"cuda:{device}"))

    def is_pinned(self, device="cuda"):
        """Whether the memory is page-locked (ember's storages never are)."""
        return False

    def is_shared(self):
        """Whether the memory is shared between processes (CPU: in a shared mapping).

        Example::

            >>> ember.UntypedStorage(4).share_memory_().is_shared()
            True
        """
        if self.device.type != "cpu":
            return self.is_cuda
        from .multiprocessing import _shared_buffer_of

        return _shared_buffer_of(self._bytes) is not None

    def share_memory_(self):
        """Move the bytes into shared memory (in place); a tensor's storage takes its tensor
        along. Returns this storage."""
        if self.device.type != "cpu" or self.is_shared():
            return self
        from . import multiprocessing as mp

        if self._owner is not None and self._bytes.size == self._owner.untyped_storage().nbytes():
            mp.share_memory_(self._owner)
            self._bytes = _bytes_of(self._owner._storage_root())
            return self
        buffer = mp._new_shared_buffer(self.nbytes())
        shared = np.frombuffer(buffer, dtype=np.uint8)[:self.nbytes()]
        shared[...] = self._bytes
        self._bytes = shared
        return self

    # ------------------------------------------------------------ construction and typing

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count=-1, offset=0, dtype=None):
        """A new storage holding a copy of ``count`` elements of ``dtype`` read from
        ``buffer`` (any object with the buffer protocol) from byte ``offset``, converted from
        ``byte_order`` (``'little'``, ``'big'`` or ``'native'``) to the machine's order.

        Example::

            >>> ember.UntypedStorage.from_buffer(b"\\x01\\x02", dtype=ember.uint8).tolist()
            [1, 2]
        """
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        values = _read_buffer(buffer, byte_order, count, offset, dt.to_dtype(dtype))
        return cls._wrap(np.ascontiguousarray(values).reshape(-1).view(np.uint8).copy(), CPU,
                         resizable=True)

    def untyped(self):
        """This storage (already untyped)."""
        return self

    def _to(self, dtype):
        """A typed storage holding this storage's bytes converted to ``dtype``."""
        _check_not_meta(self.device)
        values = Tensor._make(self._bytes, self.device).to(dtype)
        return TypedStorage._wrap(values.untyped_storage(), dtype)

    def __reduce__(self):
        _check_not_meta(self.device)
        return (_rebuild_untyped, (bytes(_host_array(self._bytes)), str(self.device)))

    def __str__(self):
        info = f"[ember.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]"
        if self.device is META:
            return "...\n" + info
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __repr__ = __str__


def _rebuild_untyped(data, device):
    storage = UntypedStorage.from_buffer(data, dtype=dt.uint8)
    return storage.to(device=device)


def _new_bytes(nbytes, device):
    """``nbytes`` uninitialised bytes on ``device`` (None on the meta device)."""
    if nbytes < 0:
        raise RuntimeError(f"Storage size must be non-negative, but got {nbytes}")
    return None if device is META else device.xp.empty(nbytes, dtype=np.uint8)


def _read_buffer(buffer, byte_order, count, offset, dtype):
    """``count`` elements of ``dtype`` from ``buffer`` at byte ``offset``, in native order."""
    if dtype.itemsize > 1 and byte_order is None:
        raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
    if byte_order not in (None, "little", "big", "native"):
        raise ValueError(f"byte_order must be 'native', 'little' or 'big', got {byte_order!r}")
    raw = memoryview(buffer).cast("B")
    available = len(raw) - offset
    if offset < 0 or available < 0:
        raise ValueError(f"offset must be non-negative and no greater than buffer length "
                         f"({len(raw)}) , but got {offset}")
    if count < 0:
        if available % dtype.itemsize:
            raise ValueError(f"buffer size ({available}) must be a multiple of element size "
                             f"({dtype.itemsize})")
        count = available // dtype.itemsize
    elif count * dtype.itemsize > available:
        raise ValueError(f"requested buffer length ({count} * {dtype.itemsize} bytes) after "
                         f"offset ({offset}) must not be greater than actual buffer length "
                         f"({len(raw)})")
    order = {"little": "<", "big": ">"}.get(byte_order, "=")
    stored = dtype.np.newbyteorder(order) if dtype.itemsize > 1 else dtype.np
    values = np.frombuffer(raw, dtype=stored, count=count, offset=offset)
    return values.astype(dtype.np)


# ---------------------------------------------------------------- TypedStorage

_WARNED = {"typed_storage": False}


def _warn_typed_storage_removal(stacklevel=3):
    """Torch's deprecation warning for typed storages, once per process."""
    if _WARNED["typed_storage"]:
        return
    _WARNED["typed_storage"] = True
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage directly, "
                  "use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=stacklevel)


# torch's names for dtypes in storage and set_ messages: the ScalarType name and the C++ type
_SCALAR_NAMES = {
    "float32": ("Float", "float"), "float64": ("Double", "double"),
    "float16": ("Half", "c10::Half"), "bfloat16": ("BFloat16", "c10::BFloat16"),
    "int64": ("Long", "long int"), "int32": ("Int", "int"), "int16": ("Short", "short int"),
    "int8": ("Char", "signed char"), "uint8": ("Byte", "unsigned char"),
    "bool": ("Bool", "bool"), "complex64": ("ComplexFloat", "c10::complex<float>"),
    "complex128": ("ComplexDouble", "c10::complex<double>"),
}


class TypedStorage:
    """An untyped storage seen as elements of one dtype (deprecated, as in torch).

    ``TypedStorage(n, dtype=...)``, ``TypedStorage([1, 2], dtype=...)`` or
    ``TypedStorage(wrap_storage=untyped, dtype=...)``; ``tensor.storage()`` is a tensor's
    memory seen with its dtype.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> t = ember.zeros(3)
        >>> t.storage()[1] = 5.
        >>> t
        tensor([0., 5., 0.])
    """

    is_sparse = False
    dtype = None  # the legacy classes (FloatStorage...) fix it

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None):
        _warn_typed_storage_removal()
        fixed = type(self).dtype
        if fixed is not None and dtype is not None:
            raise RuntimeError("__new__ got an unexpected keyword argument 'dtype'")
        dtype = dt.to_dtype(fixed or dtype or dt.get_default_dtype())
        device = CPU if device is None else canonical(device)
        if wrap_storage is not None:
            if args:
                raise RuntimeError("No positional arguments should be given when using "
                                   "'wrap_storage'")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"expected 'wrap_storage' to be an UntypedStorage, but got "
                                f"{type(wrap_storage).__name__}")
            self._setup(wrap_storage, dtype)
            return
        content = args[0] if args else 0
        if len(args) > 1:
            raise RuntimeError(f"Too many positional arguments: expected at most 1, got "
                               f"{len(args)}")
        if isinstance(content, (builtins.int, np.integer)) and not isinstance(content,
                                                                               builtins.bool):
            self._setup(UntypedStorage(builtins.int(content) * dtype.itemsize, device=device),
                        dtype)
        elif isinstance(content, (list, tuple)):
            values = Tensor._make(np.asarray(content, dtype=dtype.np).reshape(-1), CPU)
            self._setup(values.to(device).untyped_storage(), dtype)
        else:
            raise TypeError(f"{type(self).__name__}(): Expected a sequence type or a size, "
                            f"but got {type(content).__name__}")

    def _setup(self, untyped, dtype):
        self._untyped_storage = untyped
        self.dtype = dtype

    @classmethod
    def _wrap(cls, untyped, dtype):
        """The typed view of ``untyped`` with no deprecation warning (ember's own use)."""
        storage = object.__new__(TypedStorage)
        storage._setup(untyped, dtype)
        return storage

    # ------------------------------------------------------------ size and address

    @property
    def device(self):
        """The device of the memory."""
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        """Whether the memory is on a CUDA device."""
        return self._untyped_storage.is_cuda

    def get_device(self):
        """The CUDA ordinal, or -1 for CPU memory."""
        return self._untyped_storage.get_device()

    def element_size(self):
        """The size of one element in bytes.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.DoubleStorage(2).element_size()
            8
        """
        return self.dtype.itemsize

    def nbytes(self):
        """The size in bytes.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.zeros(3).storage().nbytes()
            12
        """
        return self._untyped_storage.nbytes()

    def size(self):
        """The number of elements.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.zeros(3).storage().size()
            3
        """
        return self.nbytes() // self.dtype.itemsize

    def __len__(self):
        return self.size()

    def data_ptr(self):
        """The address of the first element."""
        return self._untyped_storage.data_ptr()

    def _data_ptr(self):
        return self.data_ptr()

    def untyped(self):
        """The untyped storage (the same memory, as bytes).

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.zeros(3).storage().untyped().nbytes()
            12
        """
        return self._untyped_storage

    def resizable(self):
        """Whether :meth:`resize_` may give this storage new memory."""
        return self._untyped_storage.resizable()

    def type(self, dtype=None, non_blocking=False):
        """The legacy type name, e.g. ``'torch.FloatStorage'``; with ``dtype``, a converted
        copy.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.zeros(1).storage().type()
            'torch.FloatStorage'
        """
        if dtype is None:
            return f"torch.{_LEGACY_BY_DTYPE[self.dtype.name].__name__}"
        if isinstance(dtype, _LegacyStorageMeta):
            return self._to(dtype.dtype)
        return self._to(dt.to_dtype(dtype))

    def pickle_storage_type(self):
        """The legacy class name used when pickling, e.g. ``'FloatStorage'``."""
        return _LEGACY_BY_DTYPE[self.dtype.name].__name__

    # ------------------------------------------------------------ elements

    def _elements(self):
        """The memory as a one-dimensional array of this storage's dtype."""
        _check_not_meta(self.device)
        raw = self._untyped_storage._bytes
        return raw[:self.size() * self.dtype.itemsize].view(self.dtype.np)

    def __getitem__(self, key):
        if isinstance(key, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if not isinstance(key, (builtins.int, np.integer)):
            raise RuntimeError(f"can't index a {type(self).__name__} with "
                               f"{type(key).__name__}")
        elements = self._elements()
        return _python_number(_host_array(elements[_index(key, self.size())]), self.dtype)

    def __setitem__(self, key, value):
        if isinstance(value, Tensor):
            value = value.item()
        if not isinstance(value, (numbers.Number, np.generic)):
            raise TypeError(f"can't assign a {type(value).__name__} to a "
                            f"torch.{_SCALAR_NAMES[self.dtype.name][0]}Tensor")
        elements = self._elements()
        if isinstance(key, slice):
            elements[key] = value
        elif isinstance(key, (builtins.int, np.integer)):
            if not -self.size() <= key < self.size():
                raise IndexError(f"index {key} is out of bounds for dimension 0 with size "
                                 f"{self.size()}")
            elements[key] = value
        else:
            raise RuntimeError(f"can't index a {type(self).__name__} with "
                               f"{type(key).__name__}")

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        """The elements as a list of Python numbers.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.tensor([1, 2]).storage().tolist()
            [1, 2]
        """
        return [_python_number(v, self.dtype) for v in _host_array(self._elements()).tolist()]

    def fill_(self, value):
        """Set every element to ``value``; returns this storage.

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.FloatStorage(2).fill_(1.5).tolist()
            [1.5, 1.5]
        """
        if self.device is not META:
            self._elements()[...] = value
        return self

    def copy_(self, source, non_blocking=None):
        """Copy the bytes of ``source`` (a storage of the same size in bytes) into this one."""
        self._untyped_storage.copy_(source, non_blocking)
        return self

    def clone(self):
        """A copy in new memory on the same device."""
        return TypedStorage._wrap(self._untyped_storage.clone(), self.dtype)

    def resize_(self, size):
        """Give this storage ``size`` elements (only when :meth:`resizable`)."""
        self._untyped_storage.resize_(builtins.int(size) * self.dtype.itemsize)

    def to(self, *, device, non_blocking=False):
        """This storage on ``device``."""
        return TypedStorage._wrap(self._untyped_storage.to(device=device), self.dtype)

    def cpu(self):
        """This storage in CPU memory (itself when it is there already)."""
        return self if self.device.type == "cpu" else self.to(device=CPU)

    def cuda(self, device=None, non_blocking=False):
        """This storage in CUDA memory."""
        return TypedStorage._wrap(self._untyped_storage.cuda(device), self.dtype)

    def is_pinned(self, device="cuda"):
        """Whether the memory is page-locked (never, in ember)."""
        return False

    def is_shared(self):
        """Whether the memory is shared between processes."""
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        """Move the memory into shared memory (in place); returns this storage."""
        self._untyped_storage.share_memory_()
        return self

    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count=-1, offset=0, dtype=None,
                    device=None):
        """A new storage holding a copy of elements read from ``buffer`` (see
        :meth:`UntypedStorage.from_buffer`).

        Example::

            >>> import warnings; warnings.simplefilter("ignore")
            >>> ember.FloatStorage.from_buffer(b"\\x00\\x00\\x80\\x3f", "little").tolist()
            [1.0]
        """
        _warn_typed_storage_removal()
        dtype = dt.to_dtype(cls.dtype or dtype or dt.get_default_dtype())
        untyped = UntypedStorage.from_buffer(buffer, byte_order, count, offset, dtype)
        if device is not None:
            untyped = untyped.to(device=device)
        return TypedStorage._wrap(untyped, dtype)

    def _to(self, dtype):
        values = Tensor._make(self._elements(), self.device).to(dtype)
        return TypedStorage._wrap(values.clone().untyped_storage(), dtype)

    def __reduce__(self):
        # as torch: the storage's legacy-format file, read back by ``_load_from_bytes``
        return (_load_from_bytes, (_legacy_file_bytes(self),))

    def __str__(self):
        info = (f"[ember.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of "
                f"size {self.size()}]")
        if self.device is META:
            return "...\n" + info
        return " " + "\n ".join(str(v) for v in self.tolist()) + "\n" + info

    __repr__ = __str__


def _rebuild_typed(untyped, dtype):
    return TypedStorage._wrap(untyped, dtype)


def _legacy_file_bytes(storage):
    """``storage`` saved in torch's pre-1.6 (non-zip) format, as bytes."""
    from .serialization import _storage_file_bytes

    _check_not_meta(storage.device)
    return _storage_file_bytes(storage)


def _load_from_bytes(b):
    """What torch's ``storage._load_from_bytes`` is: load the legacy-format file ``b``
    (``weights_only=False``, as a plain pickle trusts its source anyway).

    Example::

        >>> import pickle, warnings; warnings.simplefilter("ignore")
        >>> pickle.loads(pickle.dumps(ember.arange(3.).storage())).tolist()
        [0.0, 1.0, 2.0]
    """
    from .serialization import load

    return load(io.BytesIO(b), weights_only=False)


def _conversion(dtype_name):
    def convert(self):
        return self._to(getattr(dt, dtype_name))

    convert.__name__ = dtype_name
    convert.__doc__ = f"A copy of the elements converted to ``{dtype_name}``."
    return convert


_CONVERSIONS = {"float": "float32", "double": "float64", "half": "float16",
                "bfloat16": "bfloat16", "long": "int64", "int": "int32", "short": "int16",
                "char": "int8", "byte": "uint8", "bool": "bool",
                "complex_float": "complex64", "complex_double": "complex128"}

for _method, _dtype_name in _CONVERSIONS.items():
    setattr(UntypedStorage, _method, _conversion(_dtype_name))
    setattr(TypedStorage, _method, _conversion(_dtype_name))


# ---------------------------------------------------------------- legacy storage classes


class _LegacyStorageMeta(type):
    """The metaclass of ``FloatStorage``...: a typed storage of the class's dtype on the CPU
    counts as an instance (``isinstance(t.storage(), ember.FloatStorage)``)."""

    def __instancecheck__(cls, instance):
        if type(instance) is TypedStorage:
            return instance.dtype is cls.dtype and instance.device.type == "cpu"
        return type.__instancecheck__(cls, instance)


_LEGACY_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}

_LEGACY_BY_DTYPE = {
    name: _LegacyStorageMeta(legacy, (TypedStorage,), {
        "dtype": getattr(dt, name), "__module__": "ember",
        "__doc__": f"The legacy CPU storage of {name} elements (``torch.{legacy}``)."})
    for name, legacy in _LEGACY_NAMES.items()
}

FloatStorage = _LEGACY_BY_DTYPE["float32"]
DoubleStorage = _LEGACY_BY_DTYPE["float64"]
HalfStorage = _LEGACY_BY_DTYPE["float16"]
BFloat16Storage = _LEGACY_BY_DTYPE["bfloat16"]
LongStorage = _LEGACY_BY_DTYPE["int64"]
IntStorage = _LEGACY_BY_DTYPE["int32"]
ShortStorage = _LEGACY_BY_DTYPE["int16"]
CharStorage = _LEGACY_BY_DTYPE["int8"]
ByteStorage = _LEGACY_BY_DTYPE["uint8"]
BoolStorage = _LEGACY_BY_DTYPE["bool"]
ComplexFloatStorage = _LEGACY_BY_DTYPE["complex64"]
ComplexDoubleStorage = _LEGACY_BY_DTYPE["complex128"]

__all__ += list(_LEGACY_NAMES.values())


def is_storage(obj):
    """Whether ``obj`` is a storage (untyped or typed).

    Example::

        >>> ember.is_storage(ember.zeros(1).untyped_storage()), ember.is_storage(ember.zeros(1))
        (True, False)
    """
    return isinstance(obj, (UntypedStorage, TypedStorage))


# ---------------------------------------------------------------- Tensor methods


@_tensor_method("untyped_storage")
def _untyped_storage(self):
    """The memory behind this tensor, as bytes (writes through it change the tensor).

    Example::

        >>> ember.zeros(2, 3).untyped_storage().nbytes()
        24
    """
    return UntypedStorage._of_tensor(self)


@_tensor_method
def _typed_storage(self):
    """The memory behind this tensor seen with its dtype, without the deprecation warning."""
    return TypedStorage._wrap(UntypedStorage._of_tensor(self), self.dtype)


@_tensor_method("storage")
def _storage(self):
    """The memory behind this tensor as a :class:`TypedStorage` of its dtype (deprecated, as in
    torch: warns once).

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.arange(3.)[1:].storage().tolist()
        [0.0, 1.0, 2.0]
    """
    _warn_typed_storage_removal()
    return _typed_storage(self)


@_tensor_method("storage_type")
def _storage_type(self):
    """The legacy storage class of this tensor's dtype.

    Example::

        >>> ember.zeros(1).storage_type()
        <class 'ember.FloatStorage'>
    """
    return _LEGACY_BY_DTYPE[self.dtype.name]


_SET_SIGNATURES = (
    " * ()\n"
    " * (torch.Storage source)\n"
    " * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = "
    "None)\n"
    " * (Tensor source)\n"
    " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n")


def _set_type_error(args):
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(f"set_() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_SET_SIGNATURES}")


@_tensor_method("set_")
def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make this tensor look at the memory of ``source`` (a storage or a tensor) with the
    given ``storage_offset`` (in elements), ``size`` and ``stride``; with a tensor and nothing
    else, its geometry; with no source, empty memory.

    Example::

        >>> base = ember.arange(6.)
        >>> t = ember.zeros(1).set_(base.untyped_storage(), 2, (2, 2))
        >>> t
        tensor([[2., 3.],
                [4., 5.]])
        >>> t[0, 0] = 9.; base[2]
        tensor(9.)
    """
    _check_set_allowed(self)
    if source is None:
        self._data = self._device.xp.empty(0, self._data.dtype) if self._device is not META \
            else np.broadcast_to(np.zeros((), self._data.dtype), (0,))
    elif isinstance(source, Tensor):
        _check_same_type(self, source.dtype, "tensor")
        if size is None and storage_offset == 0 and stride is None:
            self._data = source._data if source._device is META else source._data.view()
            self._device = source._device
        else:
            _set_geometry(self, source.untyped_storage(), storage_offset, size, stride)
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        if isinstance(source, TypedStorage):
            _check_same_type(self, source.dtype, "storage")
            source = source._untyped_storage
        _set_geometry(self, source, storage_offset, size, stride)
    else:
        raise _set_type_error((source,))
    self._base = None  # now a tensor of its own on that memory, as torch's set_ makes it
    self._vc[0] += 1
    return self


def _check_set_allowed(self):
    if self._rg and self._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if self._rg:
        raise RuntimeError("set_(): not supported on a tensor that is part of an autograd "
                           "graph (detach() it first)")


def _check_same_type(self, source_dtype, kind):
    if source_dtype is self.dtype:
        return
    own = _SCALAR_NAMES[self.dtype.name][1]
    if kind == "storage":
        raise RuntimeError(f"Expected a Storage of type {own} or an UntypedStorage, but got "
                           f"type {_SCALAR_NAMES[source_dtype.name][0]} for argument 1 "
                           f"'storage'")
    raise RuntimeError(f"Could not set tensor of type {_SCALAR_NAMES[source_dtype.name][1]} "
                       f"to a tensor of type {own}")


def _set_geometry(self, storage, storage_offset, size, stride):
    """Point this tensor at ``storage`` with the given geometry (checked against its size)."""
    item = self._data.dtype.itemsize
    if not isinstance(storage_offset, (builtins.int, np.integer)):
        raise _set_type_error((storage, storage_offset, size, stride))
    offset = builtins.int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    shape = (storage.nbytes() // item - offset,) if size is None else \
        tuple(builtins.int(s) for s in size)
    strides = _contiguous_strides(shape) if stride is None else \
        tuple(builtins.int(s) for s in stride)
    if len(shape) != len(strides):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: "
                           f"{list(shape)}")
    needed = (offset + builtins.sum((n - 1) * s for n, s in zip(shape, strides)) + 1) * item \
        if all(shape) else 0
    if needed > storage.nbytes():
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage "
                           f"offset {offset}, and itemsize {item} requiring a storage size of "
                           f"{needed} are out of bounds for storage of size {storage.nbytes()}")
    self._device = storage.device
    if storage.device is META:
        self._data = np.broadcast_to(np.zeros((), self._data.dtype), shape)
        return
    xp = storage.device.xp
    elements = storage._bytes[:storage.nbytes() // item * item].view(self._data.dtype)
    self._data = xp.lib.stride_tricks.as_strided(elements[offset:], shape,
                                                 tuple(s * item for s in strides))
