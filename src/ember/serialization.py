"""``ember.save`` and ``ember.load`` in PyTorch's own file format.

A checkpoint is a zip archive (stored, not compressed) that holds:

* ``<name>/data.pkl``: a protocol-2 pickle of the object, in which every tensor is written as
  a call to ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
  hooks)`` and every storage as a *persistent id* ``('storage', torch.<Type>Storage, key,
  location, numel)``;
* ``<name>/data/<key>``: the raw little-endian bytes of each storage, aligned to 64 bytes;
* ``<name>/byteorder``, ``<name>/version`` and a few small records torch writes too.

So ``torch.load`` reads what ember writes and ember reads what torch writes, with no torch
installed. Views that share a storage are saved once and load still sharing it. The older
(pre-1.6) non-zip format is read as well.

Loading uses torch's restricted unpickler by default (``weights_only=True``): a pickle that
names any global outside tensors, storages, dtypes, devices, sizes, plain containers and what
:func:`add_safe_globals` allows is refused with an ``UnpicklingError`` that names the global,
before anything in it runs. A whole pickled model names torch's globals for ember's classes and
functions (``torch.nn.modules.linear.Linear``, ``torch.nn.functional.relu``), and those names
load as ember's objects of the same path.
"""

from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import enum
import functools
import io
import mmap as _mmap
import os
import pickle
import pickletools
import secrets
import shutil
import struct
import sys
import tempfile
import types
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np

from . import _dtype as dt
from ._device import META, canonical, device
from ._tensor import Size, Tensor, layout

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "LoadEndianness",
           "get_default_load_endianness", "set_default_load_endianness", "get_crc32_options",
           "set_crc32_options", "get_default_mmap_options", "set_default_mmap_options",
           "SourceChangeWarning", "DEFAULT_PROTOCOL", "StorageType", "mkdtemp",
           "check_module_version_greater_or_equal", "normalize_storage_type",
           "storage_to_tensor_type", "validate_cuda_device", "validate_hpu_device",
           "register_package", "location_tag", "default_restore_location", "skip_data"]

DEFAULT_PROTOCOL = 2

_ALIGNMENT = 64
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_DTYPE_OF_STORAGE = {name: getattr(dt, dtype) for dtype, name in _STORAGE_NAMES.items()}


# ---------------------------------------------------------------- writing


class _Global:
    """Stands for a torch global (``torch._utils._rebuild_tensor_v2``) in the pickle we write.

    ember never imports torch, so the pickler writes these as GLOBAL opcodes by name.
    """

    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle requires reduce functions to be callable
        raise TypeError(f"{self.module}.{self.name} is a name in a checkpoint, not a function")


class _StorageRef:
    """A storage to be written as a persistent id and a ``data/<key>`` record."""

    __slots__ = ("key", "array", "dtype", "location")

    def __init__(self, key, array, dtype, location):
        self.key, self.array, self.dtype, self.location = key, array, dtype, location


class _TorchPickler(pickle._Pickler):
    """A pickler that writes tensors, sizes, dtypes and devices the way torch does."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}  # id(root array) -> _StorageRef

    def _save_global_name(self, obj):
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_Global] = _save_global_name

    def save_global(self, obj, name=None):
        """Write a class or function by the name torch gives it (``torch.nn.modules.linear.Linear``
        for ember's ``Linear``), so that torch loads what ember saves; others keep their own."""
        torch_name = _torch_name_of(obj, name)
        if torch_name is None:
            super().save_global(obj, name)
            return
        module, qualname = torch_name
        parent, _, attribute = qualname.rpartition(".")
        if parent and self.proto < 4:  # a method: getattr(its class, name), as pickle writes it
            owner = _attribute_path(sys.modules.get(obj.__module__), parent)
            if owner is None:
                super().save_global(obj, name)  # pickle's own error for what it cannot find
            else:
                self.save_reduce(getattr, (owner, attribute), obj=obj)
        else:
            self.save(_global(module, qualname))

    dispatch[types.FunctionType] = save_global

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            storage_type = _global("torch", _STORAGE_NAMES[obj.dtype.name])
            # the root may hold another dtype (a tensor set_ on raw bytes): count in obj.dtype
            count = obj.array.nbytes // obj.dtype.itemsize
            return ("storage", storage_type, obj.key, obj.location, count)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return _global("torch", "Size"), (tuple(obj),)
        if isinstance(obj, device):
            return _global("torch", "device"), (str(obj),)
        if isinstance(obj, layout):
            return _global("torch.serialization", "_get_layout"), (f"torch.{obj.name}",)
        if getattr(obj, "is_sparse", False) is True:  # ember.sparse.SparseCOOTensor
            data = (obj._indices(), obj._values(), Size(obj.shape), obj.is_coalesced())
            return _global("torch._utils", "_rebuild_sparse_tensor"), (obj.layout, data)
        if type(obj).__name__ == "SparseCompressedTensor":  # ember.sparse CSR/CSC
            data = (obj._compressed, obj._plain, obj.values(), Size(obj.shape))
            return _global("torch._utils", "_rebuild_sparse_tensor"), (obj.layout, data)
        if type(obj).__name__ == "NestedTensor":  # ember.nested (strided layout)
            return _global("torch._utils", "_rebuild_nested_tensor"), obj._as_buffer()
        return NotImplemented

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, dt.dtype):  # a dtype is pickled as the global torch.<name>
            x = self.memo.get(id(obj))
            if x is not None:
                self.write(self.get(x[0]))
                return
            self.write(pickle.GLOBAL + f"torch\n{obj.name}\n".encode())
            self.memoize(obj)
            return
        super().save(obj, save_persistent_id)

    def _reduce_tensor(self, t):
        if getattr(type(t), "_saved_as_wrapper_subclass", False):
            return _reduce_wrapper_subclass(t)
        if t._device is META:
            raise RuntimeError("Cannot save a tensor on the meta device: it holds no data")
        root = t._storage_root()
        ref = self.storages.get(id(root))
        if ref is None:
            ref = _StorageRef(str(len(self.storages)), root, t.dtype, _location(t._device))
            self.storages[id(root)] = ref
        if type(t) is not Tensor and type(t).__name__ == "Parameter":
            plain = Tensor._make(t._data, t._device)
            return (_global("torch._utils", "_rebuild_parameter"),
                    (plain, t.requires_grad, collections.OrderedDict()))
        args = (ref, t.storage_offset(), tuple(t.shape), t.stride(), t.requires_grad,
                collections.OrderedDict())
        return _global("torch._utils", "_rebuild_tensor_v2"), args


def _reduce_wrapper_subclass(t):
    """A tensor subclass whose contents are its Python attributes (MaskedTensor's data and
    mask), as torch saves a subclass with a dispatch of its own: an empty wrapper of its
    size, dtype and device, then its attributes (``state``) set on it."""
    cls = type(t)
    cls_name = _global(_torch_path(cls.__module__) or cls.__module__, cls.__qualname__)
    wrapper = (cls_name, t.dtype, tuple(t.shape), t.stride(), t.storage_offset(), t.layout,
               t.device, t.requires_grad)
    return (_global("torch._tensor", "_rebuild_from_type_v2"),
            (_global("torch._utils", "_rebuild_wrapper_subclass"), cls_name, wrapper,
             dict(vars(t))))


class _LegacyPickler(_TorchPickler):
    """The pickler of torch's pre-1.6 format: a storage is the persistent id
    ``('storage', torch.<Type>Storage, key, location, numel, None)`` (no view), and a typed
    storage object itself is written as one (torch pickles a storage as its legacy file)."""

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return super().persistent_id(obj) + (None,)
        if type(obj).__name__ == "TypedStorage" and obj.__module__ == "ember.storage":
            return self.persistent_id(self._storage_ref(obj))
        return None

    def _storage_ref(self, storage):
        if storage.device is META:
            raise RuntimeError("Cannot save a storage on the meta device: it holds no data")
        root = _storage_root_array(storage)
        ref = self.storages.get(id(root))
        if ref is None:
            ref = _StorageRef(str(len(self.storages)), root, storage.dtype,
                              _location(storage.device))
            self.storages[id(root)] = ref
        return ref


_LEGACY_SYS_INFO = {"protocol_version": _LEGACY_PROTOCOL, "little_endian": True,
                    "type_sizes": {"short": 2, "int": 4, "long": 4}}
# the three header pickles as torch and ember write them (protocol 2): read back by comparison
_LEGACY_HEADER = b"".join(pickle.dumps(part, protocol=2)
                          for part in (_LEGACY_MAGIC, _LEGACY_PROTOCOL, _LEGACY_SYS_INFO))
_ONE_KEY = pickle.dumps(["0"], protocol=2)  # the list of keys of a file of one storage


def _write_legacy(obj, f, protocol):
    """torch's pre-1.6 format: three header pickles (magic number, protocol, system info), the
    object's pickle, the list of storage keys, then each storage as its element count (int64)
    and its raw bytes. torch still writes it to pickle a storage (``torch.storage``)."""
    if protocol == 2:
        f.write(_LEGACY_HEADER)
    else:
        for header in (_LEGACY_MAGIC, _LEGACY_PROTOCOL, _LEGACY_SYS_INFO):
            pickle.dump(header, f, protocol=protocol)
    pickler = _LegacyPickler(f, protocol)
    pickler.dump(obj)
    refs = list(pickler.storages.values())
    pickle.dump([ref.key for ref in refs], f, protocol=protocol)
    for ref in refs:
        f.write(struct.pack("<q", ref.array.nbytes // ref.dtype.itemsize))
        f.write(_storage_bytes(ref))


def _storage_file_bytes(storage):
    """A typed storage as the legacy file ``save(storage, f,
    _use_new_zipfile_serialization=False)`` writes (torch pickles a storage as this file).

    The same bytes as :func:`_write_legacy`'s, assembled from cached pieces, so that pickling
    many small tensors stays fast."""
    root = _storage_root_array(storage)
    ref = _StorageRef("0", root, storage.dtype, _location(storage.device))
    count = root.nbytes // storage.dtype.itemsize
    return b"".join((_LEGACY_HEADER, _storage_record(storage.dtype.name, ref.location, count),
                     _ONE_KEY, struct.pack("<q", count), _storage_bytes(ref)))


@functools.lru_cache(maxsize=256)
def _storage_record(dtype_name, location, count):
    """The pickle of a lone storage: its persistent id, key ``"0"``."""
    dtype = getattr(dt, dtype_name)
    shape_only = np.broadcast_to(np.zeros((), _np_dtype(dtype)), (count,))
    buffer = io.BytesIO()
    _LegacyPickler(buffer, 2).dump(_StorageRef("0", shape_only, dtype, location))
    return buffer.getvalue()


def _storage_root_array(storage):
    """The array that owns a storage's memory (the one a tensor on it holds as its root)."""
    root = storage._untyped_storage._bytes
    while isinstance(getattr(root, "base", None), type(root)):
        root = root.base
    return root


_GLOBALS = {}


def _global(module, name):
    key = (module, name)
    if key not in _GLOBALS:
        _GLOBALS[key] = _Global(module, name)
    return _GLOBALS[key]


# ---------------------------------------------------------------- torch's names for ember's objects


def _is_private_path(path):
    """Is ``path`` a module torch has no counterpart of: a private one, or ember's operator
    definitions (``ember.ops``, where ``torch.ops`` is torch's operator registry)?"""
    parts = path.split(".")
    return parts[:2] == ["ember", "ops"] or any(part.startswith("_") for part in parts)


def _torch_path(module):
    """``ember.nn.modules.linear`` -> ``torch.nn.modules.linear``; None for a non-ember module."""
    if module == "ember" or module.startswith("ember."):
        return "torch" + module[len("ember"):]
    return None


def _ember_path(module):
    """``torch.nn.modules.linear`` -> ``ember.nn.modules.linear``; other modules stay."""
    if module == "torch" or module.startswith("torch."):
        return "ember" + module[len("torch"):]
    return module


def _attribute_path(owner, qualname):
    """``owner.a.b`` for ``qualname`` ``"a.b"``, or None (a stub module may raise for any name)."""
    for part in qualname.split("."):
        try:
            owner = getattr(owner, part, None)
        except Exception:  # noqa: BLE001 (e.g. NotImplementedError from a placeholder module)
            return None
    return owner


def _exports(module, qualname, obj):
    """Does ``module`` export ``obj`` under ``qualname``, itself or wrapped (a public function
    that dispatches ``__torch_function__`` around its implementation)?"""
    found = _attribute_path(module, qualname)
    return found is obj or (found is not None and getattr(found, "__wrapped__", None) is obj)


def _shared_prefix(a, b):
    count = 0
    for x, y in zip(a.split("."), b.split(".")):
        if x != y:
            break
        count += 1
    return count


_PUBLIC_HOMES = {}


def _public_home(obj, module, qualname):
    """The public ember module a program names ``obj`` by.

    An object defined in a private module (``ember.nn._functional.activation.relu``) is found
    under the loaded public module that re-exports it and is nearest its definition
    (``ember.nn.functional``): that is the name torch gives its own object.

    Example::

        >>> _public_home(ember.nn.functional.relu, "ember.nn._functional.activation", "relu")
        'ember.nn.functional'
    """
    if not _is_private_path(module):
        return module
    key = (module, qualname)
    if key not in _PUBLIC_HOMES:
        homes = [name for name, mod in list(sys.modules.items())
                 if name.partition(".")[0] == "ember" and not _is_private_path(name)
                 and mod is not None and _exports(mod, qualname, obj)]
        _PUBLIC_HOMES[key] = max(homes, default=module,
                                 key=lambda home: (_shared_prefix(home, module),
                                                   -home.count("."), home))
    return _PUBLIC_HOMES[key]


def _torch_name_of(obj, name=None):
    """``(module, qualname)`` under which torch knows ember's ``obj``; None if it is not ember's.

    Example::

        >>> _torch_name_of(ember.nn.Linear)
        ('torch.nn.modules.linear', 'Linear')
    """
    qualname = name or getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if (qualname is None or "<locals>" in qualname or not isinstance(module, str)
            or _torch_path(module) is None):
        return None  # pickle's own rules apply (a local function cannot be pickled)
    return _torch_path(_public_home(obj, module, qualname)), qualname


def _location(dev):
    if dev.type == "webgpu":
        return "webgpu:0"
    return "cpu" if dev.type == "cpu" else f"cuda:{dev.index or 0}"


def _storage_bytes(ref):
    """The storage's memory, in memory order, as a host buffer (no copy when contiguous)."""
    array = ref.array
    if hasattr(array, "get"):
        array = array.get()
    if dt.is_bfloat16_array_dtype(array.dtype):
        array = array.view(np.uint16)
    if array.flags.c_contiguous:
        flat = array.reshape(-1)
    else:
        flat = array.ravel(order="K")
    return memoryview(np.ascontiguousarray(flat).view(np.uint8))


# The zip writer. Records are stored (not compressed), so a record is a local header, the raw
# bytes, and later a central-directory entry; torch's reader (miniz) and Python's zipfile both
# read this. ember writes it itself, not through ``zipfile``, for three reasons:
# * saving to a path, the CRC-32 of a large record is computed by a helper thread while the main
#   thread writes the same bytes (zlib.crc32 and os.write both release the GIL) and patched into
#   the local header afterwards: the CRC costs (almost) no wall time instead of a quarter of a
#   save (a file object is written front to back only, each CRC computed before its record);
# * tensor bytes go from the array's buffer to os.write with no intermediate copy;
# * when saving to a path, each chunk's writeback to the disk is started right after it is
#   written (sync_file_range), so the final fsync finds little left to do (see ``save``).

_ZIP64_LIMIT = 0xFFFFFFFF      # sizes/offsets at or past this go into zip64 extra fields
_ZIP_MAX_ENTRIES = 0xFFFF      # more records than this need a zip64 end record
_ZIP64_MARK = 0xFFFFFFFF       # what a 4-byte field holds when its value is in a zip64 field
_CHUNK = 8 << 20               # bytes per write (and per CRC step, per writeback kick)
_THREADED_CRC_MIN = 1 << 20    # records smaller than this get their CRC inline
_DOS_DATE = (1 << 5) | 1       # 1980-01-01, 00:00 for every record


class _CrcWorker:
    """A helper thread that folds chunks into a running CRC-32, in submission order."""

    def __init__(self):
        self._executor = None
        self._value = 0
        self._last = None

    def start(self):
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(1, thread_name_prefix="ember-save-crc")
        self._value = 0
        self._last = None

    def _step(self, chunk):
        self._value = zlib.crc32(chunk, self._value)

    def add(self, chunk):
        self._last = self._executor.submit(self._step, chunk)

    def result(self):
        if self._last is not None:
            self._last.result()
        return self._value

    def close(self):
        if self._executor is not None:
            self._executor.shutdown(wait=True)


class _FdSink:
    """Writes to an OS file descriptor; starts each chunk's writeback when asked to."""

    can_patch = hasattr(os, "pwrite")  # not on Windows: CRCs are then computed first

    def __init__(self, fd, writeback):
        self.fd = fd
        self.writeback = writeback

    def write(self, data):
        view = memoryview(data)
        while view.nbytes:
            done = os.write(self.fd, view)
            view = view[done:]

    def flush_range(self, offset, size):
        if self.writeback is not None:
            self.writeback(self.fd, offset, size)

    def patch(self, offset, data):
        os.pwrite(self.fd, data, offset)


class _FileSink:
    """Writes to a binary file-like object, front to back only (it may not be seekable, or be
    a stream such as a gzip file that cannot go back): CRCs are computed before each record."""

    can_patch = False

    def __init__(self, f):
        self.f = f

    def write(self, data):
        view = memoryview(data)
        while view.nbytes:
            done = self.f.write(view)
            if done is None or done >= view.nbytes:  # raw (unbuffered) files may write less
                return
            view = view[done:]

    def flush_range(self, offset, size):
        pass


class _ZipWriter:
    """A minimal writer of stored zip records with 64-byte-aligned data, as torch aligns it."""

    def __init__(self, sink):
        self.sink = sink
        self.offset = 0
        self.entries = []  # (name bytes, flags, crc, size, header offset)
        self.crc = _CrcWorker()

    def _put(self, data):
        self.sink.write(data)
        self.offset += len(data)

    def write_record(self, name, data):
        data = data if isinstance(data, memoryview) else memoryview(data)
        data = data.cast("B") if data.format != "B" or data.ndim != 1 else data
        size = data.nbytes
        raw_name = name.encode("utf-8")
        flags = 0 if name.isascii() else 0x800
        header_offset = self.offset
        zip64 = size >= _ZIP64_LIMIT
        header_len = 30 + len(raw_name) + 4 + (20 if zip64 else 0)
        padding = (-(header_offset + header_len)) % _ALIGNMENT
        extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
        if zip64:
            extra += struct.pack("<HHQQ", 1, 16, size, size)
        threaded = size >= _THREADED_CRC_MIN and self.sink.can_patch
        crc = 0 if threaded else zlib.crc32(data)
        self._put(self._local_header(raw_name, flags, crc, size, extra, zip64))
        if threaded:
            self.crc.start()
        for begin in range(0, size, _CHUNK):
            chunk = data[begin:begin + _CHUNK]
            if threaded:
                self.crc.add(chunk)
            self._put(chunk)
            self.sink.flush_range(self.offset - len(chunk), len(chunk))
        if threaded:
            crc = self.crc.result()
            self.sink.patch(header_offset + 14, struct.pack("<I", crc))
        self.entries.append((raw_name, flags, crc, size, header_offset))

    @staticmethod
    def _local_header(raw_name, flags, crc, size, extra, zip64):
        stored = _ZIP64_MARK if zip64 else size
        return struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if zip64 else 20, flags, 0, 0,
                           _DOS_DATE, crc, stored, stored, len(raw_name),
                           len(extra)) + raw_name + extra

    def finish(self):
        self.crc.close()
        directory = []
        for raw_name, flags, crc, size, header_offset in self.entries:
            big = [size >= _ZIP64_LIMIT] * 2 + [header_offset >= _ZIP64_LIMIT]
            values = (size, size, header_offset)
            extra = b""
            if any(big):
                fields = [v for v, b in zip(values, big) if b]
                extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields)
            stored = [_ZIP64_MARK if b else v for v, b in zip(values, big)]
            version = 45 if any(big) else 20
            directory.append(struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, flags, 0, 0, _DOS_DATE,
                crc, stored[0], stored[1], len(raw_name), len(extra), 0, 0, 0, 0,
                stored[2]) + raw_name + extra)
        directory = b"".join(directory)
        start, count = self.offset, len(self.entries)  # where the directory starts
        tail = b""
        size = len(directory)
        if count > _ZIP_MAX_ENTRIES or start >= _ZIP64_LIMIT or size >= _ZIP64_LIMIT:
            tail = (struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count,
                                size, start)
                    + struct.pack("<IIQI", 0x07064B50, 0, start + size, 1))
            count = 0xFFFF if count > _ZIP_MAX_ENTRIES else count
            size = _ZIP64_MARK if size >= _ZIP64_LIMIT else size
            start = _ZIP64_MARK if start >= _ZIP64_LIMIT else start
        tail += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, size, start, 0)
        self._put(directory + tail)


def _write_record(zf, name, data):
    zf.write_record(name, data)


def _write_archive(obj, sink, archive_name, protocol, byteorder_record=True):
    buffer = io.BytesIO()
    pickler = _TorchPickler(buffer, protocol)
    pickler.dump(obj)
    zf = _ZipWriter(sink)
    try:
        prefix = f"{archive_name}/"
        _write_record(zf, prefix + "data.pkl", buffer.getbuffer())
        _write_record(zf, prefix + ".format_version", b"1")
        _write_record(zf, prefix + ".storage_alignment", str(_ALIGNMENT).encode())
        if byteorder_record:
            _write_record(zf, prefix + "byteorder", sys.byteorder.encode())
        for ref in pickler.storages.values():
            _write_record(zf, prefix + f"data/{ref.key}", _storage_bytes(ref))
        _write_record(zf, prefix + "version", b"3\n")
        serial = str(secrets.randbits(128)).zfill(40).encode()
        _write_record(zf, prefix + ".data/serialization_id", serial)
    finally:
        zf.crc.close()
    zf.finish()


def _writeback_starter():
    """``sync_file_range(fd, offset, size, SYNC_FILE_RANGE_WRITE)`` where Linux has it."""
    global _WRITEBACK
    if _WRITEBACK is None:
        _WRITEBACK = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                function = libc.sync_file_range
                function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
                function.restype = ctypes.c_int

                def start(fd, offset, size):
                    function(fd, offset, size, 2)  # a hint: failures change nothing

                _WRITEBACK = start
            except (OSError, AttributeError):
                pass
    return _WRITEBACK or None


_WRITEBACK = None


def _hold(path):
    """A descriptor that keeps the checkpoint being replaced alive past the rename, or None.

    Freeing a large file's pages and blocks happens when its last reference goes, in the
    thread that drops it: without this that is the rename (~30 ms for 200 MB, as long as
    torch's truncating open takes). Holding the old file open and closing it in a helper
    thread lets ``save`` return while the kernel frees it.
    """
    if os.name != "posix":  # an open file cannot be replaced on Windows
        return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:  # no old file (or unreadable): nothing to defer
        return None


def _release_in_background(fd):
    import threading

    threading.Thread(target=os.close, args=(fd,), name="ember-save-release",
                     daemon=True).start()


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # e.g. a platform that cannot open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, modules' state dicts, nested containers) in torch's format.

    ``f`` is a path or a binary file-like object. Saving to a path is atomic and durable: the
    archive is written to a new temporary file beside it, flushed to the disk (fsync) and
    renamed over the old file, and the directory is synced. A failure part-way (an exception,
    a killed process, a power cut) leaves either the old checkpoint or the new one, never a
    half-written one.

    Why fsync, and what it costs: a rename without fsync is atomic against process crashes but
    not against power loss (the rename can reach the disk before the data, leaving an empty or
    partial file where the old checkpoint was). torch writes the file in place with no fsync.
    Measured on a 200 MB state dict (page cache, 2-core machine shared with other jobs):
    writing the bytes ~105 ms, CRC-32 ~45 ms (torch computes CRCs too), a plain final fsync
    ~30-50 ms. ember overlaps them: the CRC runs in a helper thread on the bytes being written,
    and the writeback of each 8 MB chunk is started as soon as it is written (Linux
    ``sync_file_range``), so the disk works while Python writes and the closing fsync finds
    the data mostly on disk (measured 1-10 ms). Freeing the replaced checkpoint (~30 ms for
    200 MB, paid by torch's truncating open too) happens in a helper thread after the rename.
    Interleaved with torch.save: 0.59-0.88x torch's time, both fsyncs included; leaving
    them out saved ~8 ms, too little to give up durability for. Under heavy load
    from other jobs the helper threads have no spare core and both frameworks pay the same
    copy + CRC; single runs then swing with the noise. Saving to a file object writes there
    with no fsync (the caller owns it).

    Example::

        >>> ember.save({"w": ember.ones(2)}, "ckpt.pt")
        >>> ember.load("ckpt.pt")["w"]
        tensor([1., 1.])
    """
    if not _use_new_zipfile_serialization:
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as out:
                _write_legacy(obj, out, pickle_protocol)
        else:
            _write_legacy(obj, f, pickle_protocol)
        return
    if isinstance(f, (str, os.PathLike)):
        path = Path(f)
        archive_name = path.stem or "archive"
        directory = path.parent if str(path.parent) else Path(".")
        tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        # 0o666 less the umask, as a file that open() creates gets (mkstemp would give 0o600)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o666)
        old = None
        try:
            try:
                _write_archive(obj, _FdSink(fd, _writeback_starter()), archive_name,
                               pickle_protocol, not _disable_byteorder_record)
                os.fsync(fd)
            finally:
                os.close(fd)
            old = _hold(path)
            os.replace(tmp, path)
        except BaseException:
            if old is not None:
                os.close(old)
            tmp.unlink(missing_ok=True)
            raise
        _fsync_directory(directory)
        if old is not None:
            _release_in_background(old)
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'write' attribute, got {type(f).__name__}")
    _write_archive(obj, _FileSink(f), "archive", pickle_protocol, not _disable_byteorder_record)


# ---------------------------------------------------------------- safe globals


# torch's allow-list: the entries (a class or function, or a ``(global, "module.name")`` pair)
# kept as an insertion-ordered set
_user_safe_globals = {}

# modules whose globals are refused even when allow-listed, as torch refuses them
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")


def add_safe_globals(safe_globals):
    """Allow ``weights_only`` loading to use these classes or functions too.

    An entry is a class or function, or a ``(global, "module.name")`` pair for one that a
    checkpoint names differently. ember's own classes are matched by the name torch gives
    them (``torch.nn.modules.linear.Linear``), as they are written in a checkpoint.

    Example::

        >>> ember.serialization.add_safe_globals([MyConfig])
    """
    for entry in safe_globals:
        _user_safe_globals[entry] = None


def get_safe_globals():
    """The globals added with :func:`add_safe_globals`."""
    return list(_user_safe_globals)


def clear_safe_globals():
    """Forget every global added with :func:`add_safe_globals`."""
    _user_safe_globals.clear()


class safe_globals:
    """Context manager that allows some globals during the ``with`` block only.

    Leaving the block removes exactly the globals it added, as torch's does.

    Example::

        >>> with ember.serialization.safe_globals([MyConfig]):
        ...     ember.load("ckpt.pt")
    """

    def __init__(self, globals_list):
        self.globals_list = globals_list

    def __enter__(self):
        add_safe_globals(self.globals_list)

    def __exit__(self, *exc):
        for entry in self.globals_list:
            _user_safe_globals.pop(entry, None)


def _checkpoint_name(obj):
    """``module.qualname`` of a class or function as a checkpoint names it (torch's name for
    ember's objects)."""
    module, qualname = _torch_name_of(obj) or (obj.__module__, obj.__qualname__)
    return f"{module}.{qualname}"


def _as_torch_name(full_name):
    """A checkpoint name with ember's package spelled as torch's (older ember files)."""
    module, _, rest = full_name.partition(".")
    return f"torch.{rest}" if module == "ember" else full_name


def _user_allowed_globals():
    """The allow-listed globals by checkpoint name; torch's checks on ``(global, name)`` pairs."""
    allowed = {}
    for entry in _user_safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(entry)}")
            if type(entry[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(entry[1])}")
            allowed[_as_torch_name(entry[1])] = entry[0]
        else:
            allowed[_checkpoint_name(entry)] = entry
    return allowed


def get_unsafe_globals_in_checkpoint(f):
    """The globals a checkpoint names that ``weights_only`` loading would refuse: neither
    allowed by default nor by :func:`add_safe_globals` (read from the pickle, nothing is run).

    Example::

        >>> ember.save(ember.nn.Linear(2, 2), "model.pt")
        >>> ember.serialization.get_unsafe_globals_in_checkpoint("model.pt")
        ['torch.nn.modules.linear.Linear']
    """
    opened = open(f, "rb") if isinstance(f, (str, os.PathLike)) else None  # noqa: SIM115
    fileobj = opened or f
    try:
        if not zipfile.is_zipfile(fileobj):
            raise ValueError("Expected input to be a checkpoint returned by ember.save")
        fileobj.seek(0)
        reader = _ZipReader(fileobj, _source_name(f))
        pickled = reader.read(reader.prefix + "data.pkl")
    finally:
        if opened is not None:
            opened.close()
    allowed = set(_SAFE_GLOBALS) | set(_user_allowed_globals())
    return [name for name in _globals_named_in(pickled) if _as_torch_name(name) not in allowed]


def _globals_named_in(pickled):
    """The ``module.name`` of each GLOBAL in a pickle, with Python 2 names read as Python 3's."""
    names = []
    for opcode, argument, _ in pickletools.genops(pickled):
        if opcode.name == "GLOBAL":
            module, name = argument.split(" ", 1)
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
            if f"{module}.{name}" not in names:
                names.append(f"{module}.{name}")
    return names


# ---------------------------------------------------------------- torch's loading options


class SourceChangeWarning(Warning):
    """torch's warning that a saved module's source changed; ember stores no module source,
    so it never warns it."""


@contextlib.contextmanager
def mkdtemp():
    """A temporary directory for the ``with`` block, removed afterwards (torch's helper).

    Example::

        >>> with ember.serialization.mkdtemp() as path:
        ...     ember.save(ember.ones(2), os.path.join(path, "t.pt"))
    """
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def check_module_version_greater_or_equal(module, req_version_tuple, error_if_malformed=True):
    """Is ``module.__version__`` at least ``req_version_tuple``? A malformed version raises a
    RuntimeError, or with ``error_if_malformed=False`` warns and counts as met (as torch).

    Example::

        >>> ember.serialization.check_module_version_greater_or_equal(np, (1, 0))
        True
    """
    try:
        fields = module.__version__.split(".")
        version = tuple(type(wanted)(fields[i]) for i, wanted in enumerate(req_version_tuple))
        return version >= req_version_tuple
    except Exception as error:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from error
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True


def normalize_storage_type(storage_type):
    """The ember storage class of the same name (``FloatStorage`` -> ``ember.FloatStorage``).

    Example::

        >>> ember.serialization.normalize_storage_type(ember.FloatStorage)
        <class 'ember.FloatStorage'>
    """
    return getattr(sys.modules["ember"], storage_type.__name__)


def storage_to_tensor_type(storage):
    """The legacy tensor type of a legacy storage (``FloatStorage`` -> ``FloatTensor``).

    Example::

        >>> ember.serialization.storage_to_tensor_type(ember.FloatStorage(2))
        <class 'ember.FloatTensor'>
    """
    storage_type = type(storage)
    module = sys.modules[storage_type.__module__]
    return getattr(module, storage_type.__name__.replace("Storage", "Tensor"))


def validate_cuda_device(location):
    """The CUDA device index of a location tag (``"cuda:1"`` -> 1), or torch's RuntimeError
    when no such CUDA device exists.

    Example::

        >>> ember.serialization.validate_cuda_device("cuda:0")  # doctest: +SKIP
        0
    """
    from . import cuda

    index = device(location).index or 0
    if not cuda.is_available():
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but ember.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use ember.load with "
            "map_location=ember.device('cpu') to map your storages to the CPU.")
    count = cuda.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on CUDA device {index} but "
            f"ember.cuda.device_count() is {count}. Please use ember.load with map_location to "
            "map your storages to an existing device.")
    return index


def validate_hpu_device(location):
    """torch's check for an HPU location: ember has no HPU device, so it always refuses.

    Example::

        >>> ember.serialization.validate_hpu_device("hpu:0")  # doctest: +SKIP
        RuntimeError: The HPU device module is not registered. ...
    """
    raise RuntimeError(
        "The HPU device module is not registered. If you are running on a CPU-only machine, "
        "please use ember.load with map_location=ember.device('cpu') to map your storages to "
        "the CPU.")


def _cpu_tag(obj):
    return "cpu" if obj.device.type == "cpu" else None


def _cpu_restore(obj, location):
    return obj.cpu() if location.startswith("cpu") else None


def _cuda_tag(obj):
    return f"cuda:{obj.device.index or 0}" if obj.device.type == "cuda" else None


def _cuda_restore(obj, location):
    if location.startswith("cuda"):
        return obj.cuda(validate_cuda_device(location))
    return None


# (priority, tagger, deserializer), lowest priority first, as torch's registry
_package_registry = [(10, _cpu_tag, _cpu_restore), (20, _cuda_tag, _cuda_restore)]


def register_package(priority, tagger, deserializer):
    """Register how :func:`location_tag` names a storage's device and how
    :func:`default_restore_location` moves a storage to a tagged location.

    ember's own save/load know the devices ember has (cpu, cuda, meta) and do not consult
    registered packages.

    Example::

        >>> ember.serialization.register_package(11, my_tagger, my_deserializer)
    """
    if not callable(tagger):
        raise TypeError(f"tagger must be callable but got {type(tagger)}")
    if not callable(deserializer):
        raise TypeError(f"deserializer must be callable but got {type(deserializer)}")
    _package_registry.append((priority, tagger, deserializer))
    _package_registry.sort(key=lambda entry: entry[0])


def location_tag(storage):
    """The location tag torch writes for a storage or tensor's device (``"cpu"``,
    ``"cuda:0"``).

    Example::

        >>> ember.serialization.location_tag(ember.ones(2))
        'cpu'
    """
    for _, tagger, _ in _package_registry:
        location = tagger(storage)
        if location:
            return location
    raise RuntimeError("don't know how to determine data location of "
                       + sys.modules["ember"].typename(storage))


def default_restore_location(storage, location):
    """``storage`` moved to the device a location tag names.

    Example::

        >>> ember.serialization.default_restore_location(ember.ones(2), "cpu")
        tensor([1., 1.])
    """
    for _, _, restore in _package_registry:
        result = restore(storage, location)
        if result is not None:
            return result
    raise RuntimeError("don't know how to restore data location of "
                       + sys.modules["ember"].typename(storage) + " (tagged with "
                       + location + ")")


class skip_data:
    """torch's context manager that saves and loads storages without their bytes.

    ember does not implement it: to build a model without reading its weights, load with
    ``map_location="meta"`` (shapes and dtypes only).

    Example::

        >>> ember.load("ckpt.pt", map_location="meta")  # doctest: +SKIP
    """

    def __init__(self, materialize_fake_tensors=False):
        raise NotImplementedError(
            "ember.serialization.skip_data (torch.serialization.skip_data) is not available in "
            "ember: load with map_location='meta' to read a checkpoint's shapes without its data")


class LoadEndianness(enum.Enum):
    """The byte order assumed for a checkpoint without a ``byteorder`` record."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_load_endianness = None
_compute_crc32 = True
_mmap_flags = getattr(_mmap, "MAP_PRIVATE", None)


def get_default_load_endianness():
    """The byte order set with :func:`set_default_load_endianness` (None: little, as torch).

    Example::

        >>> ember.serialization.get_default_load_endianness() is None
        True
    """
    return _load_endianness


def set_default_load_endianness(endianness):
    """Assume ``endianness`` (a :class:`LoadEndianness` or None) for checkpoints that carry no
    byte-order record; storages in the other byte order are swapped while loading.

    Example::

        >>> ember.serialization.set_default_load_endianness(LoadEndianness.LITTLE)
    """
    global _load_endianness
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _load_endianness = endianness


def get_crc32_options():
    """Whether :func:`save` is asked to compute each record's CRC-32 (True by default).

    Example::

        >>> ember.serialization.get_crc32_options()
        True
    """
    return _compute_crc32


def set_crc32_options(compute_crc32):
    """Ask :func:`save` to skip CRC-32s, as torch's option does. ember writes them anyway: its
    saves compute them in a helper thread while writing, at almost no cost, and a file with
    CRCs loads everywhere.

    Example::

        >>> ember.serialization.set_crc32_options(False)
    """
    global _compute_crc32
    _compute_crc32 = bool(compute_crc32)


def get_default_mmap_options():
    """The flags ``load(..., mmap=True)`` maps files with (``mmap.MAP_PRIVATE`` by default).

    Example::

        >>> import mmap
        >>> ember.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
        True
    """
    return _mmap_flags


class set_default_mmap_options:
    """Map checkpoints with ``mmap.MAP_PRIVATE`` (writes stay in memory) or ``mmap.MAP_SHARED``
    (writes to a loaded tensor reach the file); as a context manager, only inside the block.

    Example::

        >>> import mmap
        >>> with ember.serialization.set_default_mmap_options(mmap.MAP_SHARED):
        ...     w = ember.load("ckpt.pt", mmap=True)
    """

    def __init__(self, flags):
        global _mmap_flags
        if os.name == "nt":
            raise RuntimeError("Changing the default mmap options is currently not supported "
                               "for Windows")
        if flags not in (_mmap.MAP_PRIVATE, _mmap.MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.previous = _mmap_flags
        _mmap_flags = flags

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        global _mmap_flags
        _mmap_flags = self.previous


# ---------------------------------------------------------------- when to load weights only


_TRUE_VALUES = ("1", "y", "yes", "true")


def _env_flag(name):
    return os.getenv(name, "0").lower() in _TRUE_VALUES


def _resolve_weights_only(weights_only, pickle_module):
    """torch's rule: ``weights_only`` defaults to True unless a ``pickle_module`` is given;
    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` forces True, and ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` forces
    False when the caller did not pass ``weights_only``."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force = _env_flag("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    force_no = _env_flag("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if force_no and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the "
                      "`weights_only` argument was not explicitly passed to `ember.load`, "
                      "forcing weights_only=False.", UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


# ---------------------------------------------------------------- reading


class StorageType:
    """What a ``torch.<Type>Storage`` global in a checkpoint stands for: its dtype.

    Example::

        >>> ember.serialization.StorageType("FloatStorage").dtype
        ember.float32
    """

    def __init__(self, name):
        self._dtype = _DTYPE_OF_STORAGE[name]

    @property
    def dtype(self):
        return self._dtype

    def __str__(self):
        return f"StorageType(dtype={self.dtype})"


class _LoadedStorage:
    """One storage read from the file: a 1-D array on its target device."""

    __slots__ = ("array", "device")

    def __init__(self, array, dev):
        self.array, self.device = array, dev


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    array = storage.array
    size, stride = tuple(size), tuple(stride)
    if storage.device is META:
        data = np.broadcast_to(np.zeros((), array.dtype), size)
    else:
        needed = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
        if storage_offset + needed > array.size:
            raise RuntimeError(f"corrupt checkpoint: a tensor of size {list(size)} at offset "
                               f"{storage_offset} does not fit in its storage of "
                               f"{array.size} elements")
        xp = storage.device.xp
        itemsize = array.dtype.itemsize
        data = xp.lib.stride_tricks.as_strided(array[storage_offset:], size,
                                               tuple(s * itemsize for s in stride))
    t = Tensor._make(data, storage.device)
    if requires_grad:
        t.requires_grad_()
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, *state):
    try:
        from .nn import Parameter
    except ImportError:  # nn not available: a tensor that requires grad is the next best
        return data.requires_grad_(requires_grad) if data.dtype.is_floating_point else data
    return Parameter(data, requires_grad)


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass as torch saves it: ``func(*args)`` seen as ``new_type``, with the
    attributes ``state`` (and a wrapper subclass's ``requires_grad``) set on it."""
    from ._tensor import _rebuild_from_type_v2 as rebuild

    result = rebuild(func, new_type, args, state)
    if func is _rebuild_wrapper_subclass and args[-1] and not result.requires_grad:
        result.requires_grad_()
    return result


def _rebuild_wrapper_subclass(cls, dtype, size, stride, storage_offset, layout, device,
                              requires_grad):
    """The empty instance of a wrapper subclass, whose attributes come next (see
    :func:`_rebuild_from_type_v2`)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise pickle.UnpicklingError(f"_rebuild_wrapper_subclass: {cls!r} is not a Tensor "
                                     "subclass")
    return object.__new__(cls)


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO tensor from torch's pickled ``(indices, values, size, is_coalesced)``, or
    a CSR/CSC one from ``(compressed indices, plain indices, values, size)``."""
    from .sparse import sparse_coo_tensor, sparse_csc_tensor, sparse_csr_tensor

    if layout.name in ("sparse_csr", "sparse_csc"):
        build = sparse_csr_tensor if layout.name == "sparse_csr" else sparse_csc_tensor
        return build(*data)
    if layout.name != "sparse_coo":
        raise RuntimeError(f"ember.load: sparse layout {layout} is not supported")
    indices, values, size, *rest = data
    return sparse_coo_tensor(indices, values, size, is_coalesced=bool(rest and rest[0]))


def _make_device(spec, index=None):
    return device(spec, index) if index is not None else device(spec)


def _make_size(values=()):
    return Size(values)


def _codecs_encode(text, encoding="latin1"):
    import codecs

    return codecs.encode(text, encoding)


def _get_layout(name):
    """The layout named ``torch.<name>`` in a checkpoint."""
    from . import _tensor

    found = getattr(_tensor, name.rpartition(".")[2], None)
    if not isinstance(found, layout):
        raise RuntimeError(f"ember.load: unknown layout {name}")
    return found


def _rebuild_nested_tensor(buffer, sizes, strides, storage_offsets):
    """A nested tensor from its packed buffer and each component's sizes, strides and
    offset (torch's ``_rebuild_nested_tensor``)."""
    from .nested import NestedTensor

    return NestedTensor._from_buffer(buffer, sizes, strides, storage_offsets)


def _base_globals():
    names = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_wrapper_subclass": _rebuild_wrapper_subclass,
        "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
        "torch._utils._rebuild_nested_tensor": _rebuild_nested_tensor,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": _make_size,
        "torch.device": _make_device,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": _rebuild_parameter,
        "_codecs.encode": _codecs_encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
    }
    for d in dt.ALL_DTYPES:
        names[f"torch.{d.name}"] = d
    for storage_name in _DTYPE_OF_STORAGE:
        names[f"torch.{storage_name}"] = StorageType(storage_name)
        names[f"torch.cuda.{storage_name}"] = StorageType(storage_name)
    return names


_SAFE_GLOBALS = _base_globals()
_SAFE_IDS = frozenset(id(value) for value in _SAFE_GLOBALS.values())
_MISSING = object()

_RERUN_ADVICE = ("Re-running `ember.load` with `weights_only` set to `False` will likely succeed, "
                 "but it can result in arbitrary code execution. Do it only if you got the file "
                 "from a trusted source.")

_UNSAFE_MESSAGE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "do those steps only if you trust the source of the checkpoint.\n"
    "\t(1) " + _RERUN_ADVICE + "\n"
    "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps "
    "in the following error message.\n"
    "\tWeightsUnpickler error: Unsupported global: GLOBAL {name} was not an allowed global by "
    "default. Please use `ember.serialization.add_safe_globals([{name}])` or the "
    "`ember.serialization.safe_globals([{name}])` context manager to allowlist this global if "
    "you trust this class/function.")


def _display_name(full_name):
    """A global as torch's message shows it: ``builtins.print`` -> ``print``."""
    module, _, name = full_name.partition(".")
    return name if module == "builtins" and name else full_name


class _BadAllowList(Exception):
    """Carries a malformed allow-list entry's error past the handlers for corrupt pickles."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _ember_namespace():
    return sys.modules["ember"]


# torch pickles its built-in functions and Tensor methods as attributes of these torch._C
# classes (``getattr(torch._C._VariableFunctionsClass, "sigmoid")``): ember's own namespaces
_TORCH_C_NAMESPACES = {"_VariableFunctionsClass": _ember_namespace,
                       "_VariableFunctions": _ember_namespace,
                       "TensorBase": lambda: Tensor, "_TensorBase": lambda: Tensor}


class _TorchGlobals:
    """Unpickler part: maps torch's globals to ember's and, with ``weights_only``, refuses any
    global that is neither a tensor's building block nor allow-listed."""

    def __init__(self, file, weights_only, load_storage, source, **pickle_load_args):
        pickle_load_args.setdefault("encoding", "utf-8")
        super().__init__(file, **pickle_load_args)
        self.weights_only = weights_only
        self.load_storage = load_storage
        self.source = source
        self._allowed = None

    def find_class(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # protocol-2 pickles use Python 2 names
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[full]
        if self.weights_only:
            return self._allow_listed(module, full)
        return self._import(module, name)

    def _allow_listed(self, module, full):
        if module in _BLOCKED_MODULES:
            raise pickle.UnpicklingError(
                f"{self.source}: Weights only load failed. {_RERUN_ADVICE}\n\nTrying to load "
                f"unsupported GLOBAL {full} whose module {module} is blocked.")
        found = self._allowed_user_globals().get(_as_torch_name(full), _MISSING)
        if found is _MISSING:
            raise pickle.UnpicklingError(
                f"{self.source}: " + _UNSAFE_MESSAGE.format(name=_display_name(full)))
        return found

    def _allowed_user_globals(self):
        if self._allowed is None:
            try:
                self._allowed = _user_allowed_globals()
            except (ValueError, TypeError) as error:  # a malformed entry: the caller's error
                raise _BadAllowList(error) from None
        return self._allowed

    def _import(self, module, name):
        """The class or function a checkpoint names, torch's modules read as ember's."""
        if module == "torch._C" and name in _TORCH_C_NAMESPACES:
            return _TORCH_C_NAMESPACES[name]()
        ember_module = _ember_path(module)
        try:
            return super().find_class(ember_module, name)
        except (ImportError, AttributeError) as error:
            if ember_module == module:
                raise
            raise type(error)(f"{error} (the checkpoint names {module}.{name}; ember has no "
                              "object at the same path)") from None

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage"
                or not isinstance(pid[1], StorageType)):
            raise pickle.UnpicklingError(f"{self.source}: unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid[:5]
        return self.load_storage(storage_type.dtype, str(key), str(location), int(numel))


class _FullUnpickler(_TorchGlobals, pickle.Unpickler):
    """``weights_only=False``: any pickle, with torch's names read as ember's."""


# The opcodes torch's weights-only unpickler runs (protocol 2 without the unsafe ones); any
# other opcode (FRAME and the short strings of protocol 4, INST, OBJ, ...) is refused, as torch
# refuses it.
_WEIGHTS_ONLY_OPCODES = frozenset(op[0] for op in (
    pickle.PROTO, pickle.STOP, pickle.GLOBAL, pickle.NEWOBJ, pickle.REDUCE, pickle.BUILD,
    pickle.APPEND, pickle.APPENDS, pickle.SETITEM, pickle.SETITEMS, pickle.MARK, pickle.TUPLE,
    pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3, pickle.NONE, pickle.NEWFALSE, pickle.NEWTRUE,
    pickle.EMPTY_TUPLE, pickle.EMPTY_LIST, pickle.EMPTY_DICT, pickle.EMPTY_SET, pickle.BININT,
    pickle.BININT1, pickle.BININT2, pickle.BINFLOAT, pickle.BINUNICODE, pickle.SHORT_BINSTRING,
    pickle.BINPERSID, pickle.BINGET, pickle.LONG_BINGET, pickle.BINPUT, pickle.LONG_BINPUT,
    pickle.LONG1))

_SETITEM_TYPES = (dict, collections.OrderedDict, collections.Counter)


def _refused_opcode(code):
    def refuse(self):
        raise pickle.UnpicklingError(f"{self.source}: Weights only load failed. Unsupported "
                                     f"operand {code}")
    return refuse


class _WeightsOnlyUnpickler(_TorchGlobals, pickle._Unpickler):
    """``weights_only=True``: torch's restricted unpickler.

    Only the allowed globals are found; only they may be called (REDUCE), instantiated
    (NEWOBJ) or given state (BUILD, besides OrderedDicts and tensors); only lists are appended
    to and only dicts get items; opcodes outside :data:`_WEIGHTS_ONLY_OPCODES` are refused.
    """

    dispatch = {code: (load if code in _WEIGHTS_ONLY_OPCODES else _refused_opcode(code))
                for code, load in pickle._Unpickler.dispatch.items()}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._trusted = set(_SAFE_IDS)  # ids of the allowed globals and of the globals found

    def _refuse(self, message):
        raise pickle.UnpicklingError(f"{self.source}: Weights only load failed. {message}")

    def _is_allowed(self, obj):
        """Is ``obj`` an allowed global (torch's test on what REDUCE, NEWOBJ, BUILD use)?"""
        if id(obj) in self._trusted:
            return True
        if self._allowed is None:
            self._allowed_user_globals()
            self._trusted.update(id(value) for value in self._allowed.values())
        return id(obj) in self._trusted

    def load_global(self):
        super().load_global()
        self._trusted.add(id(self.stack[-1]))

    def load_reduce(self):
        func = self.stack[-2]
        if not self._is_allowed(func):
            self._refuse(f"Trying to call reduce for unrecognized function {func}")
        super().load_reduce()

    def load_newobj(self):
        cls = self.stack[-2]
        if not self._is_allowed(cls):
            self._refuse("Can only create new object for nn.Parameter or classes allowlisted "
                         f"via `add_safe_globals` but got {cls}")
        super().load_newobj()

    def load_build(self):
        inst = self.stack[-2]
        kind = type(inst)
        if not (kind is collections.OrderedDict or isinstance(inst, Tensor)
                or self._is_allowed(kind)):
            self._refuse("Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                         f"via `add_safe_globals`, but got {kind}")
        super().load_build()

    def _check_target(self, target, opcode):
        if opcode.startswith("APPEND"):
            if type(target) is not list:
                self._refuse(f"Can only {'append to' if opcode == 'APPEND' else 'extend'} "
                             f"lists, but got {type(target)}")
        elif type(target) not in _SETITEM_TYPES:
            self._refuse(f"Can only {opcode} for dict, collections.OrderedDict, "
                         f"collections.Counter, but got {type(target)}")

    def load_append(self):
        self._check_target(self.stack[-2], "APPEND")
        super().load_append()

    def load_appends(self):
        self._check_target(self.metastack[-1][-1], "APPENDS")
        super().load_appends()

    def load_setitem(self):
        self._check_target(self.stack[-3], "SETITEM")
        super().load_setitem()

    def load_setitems(self):
        self._check_target(self.metastack[-1][-1], "SETITEMS")
        super().load_setitems()

    def load_proto(self):
        super().load_proto()
        if self.proto != 2:
            warnings.warn(f"Detected pickle protocol {self.proto} in the checkpoint, which was "
                          "not the default pickle protocol used by `ember.load` (2). The "
                          "weights_only Unpickler might not support all instructions "
                          "implemented by this protocol.", stacklevel=2)


# the checked loaders replace pickle's own for their opcodes (load_reduce runs REDUCE, ...)
for _opcode in ("GLOBAL", "REDUCE", "NEWOBJ", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS",
                "PROTO"):
    _WeightsOnlyUnpickler.dispatch[getattr(pickle, _opcode)[0]] = getattr(
        _WeightsOnlyUnpickler, "load_" + _opcode.lower())


def _Unpickler(file, weights_only, load_storage, source, **pickle_load_args):
    """The unpickler ``weights_only`` asks for."""
    kind = _WeightsOnlyUnpickler if weights_only else _FullUnpickler
    return kind(file, weights_only, load_storage, source, **pickle_load_args)


def _target_device(location, map_location):
    if map_location is None:
        target = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif callable(map_location):
        return None
    else:
        target = map_location
    target = target if isinstance(target, device) else device(str(target))
    if target.type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but ember.cuda.is_available()"
                " is False. If you are running on a CPU-only machine, please use ember.load "
                "with map_location=ember.device('cpu') to map your storages to the CPU.")
    return canonical(target)


def _place_storage(array, location, map_location):
    """Move a host storage array to the device ``map_location`` asks for."""
    target = _target_device(location, map_location)
    if target is None:  # a callable decides
        host = Tensor._make(array, device("cpu"))
        moved = map_location(host, location)
        if isinstance(moved, Tensor):
            return _LoadedStorage(moved._data, moved._device)
        return _LoadedStorage(array, device("cpu"))
    if target is META:
        return _LoadedStorage(np.broadcast_to(np.zeros((), array.dtype), array.shape), META)
    if target.type == "cuda":
        cupy = target.xp
        with cupy.cuda.Device(target.index):
            return _LoadedStorage(cupy.asarray(array), target)
    if target.type == "webgpu":
        return _LoadedStorage(target.xp.from_host(array), target)
    return _LoadedStorage(array, target)


def _source_name(f):
    if isinstance(f, (str, os.PathLike)):
        return str(f)
    return getattr(f, "name", None) or f"<{type(f).__name__}>"


def _np_dtype(dtype):
    return dtype.np


def _file_byteorder(reader, names):
    """The byte order of a checkpoint's storages: its ``byteorder`` record, else the default
    set with :func:`set_default_load_endianness` (little when unset, as torch)."""
    record = reader.prefix + "byteorder"
    if record in names:
        order = reader.read(record).decode()
        if order not in ("little", "big"):
            raise ValueError("Unknown endianness type: " + order)
        return order
    if _load_endianness is LoadEndianness.BIG:
        return "big"
    if _load_endianness is LoadEndianness.NATIVE:
        return sys.byteorder
    return "little"


def _byteswapped(array):
    """A storage read in the other byte order, in this machine's (each component of a complex
    number on its own)."""
    if array.dtype.itemsize == 1:
        return array
    part = array.dtype.itemsize // 2 if array.dtype.kind == "c" else array.dtype.itemsize
    words = np.ascontiguousarray(array).view(f"u{part}")
    return words.byteswap().view(array.dtype)


class _ZipReader:
    """Reads the records of a torch zip checkpoint, optionally memory-mapping the storages."""

    def __init__(self, fileobj, source, path=None, mmap=False):
        self.source = source
        try:
            self.zip = zipfile.ZipFile(fileobj)
            names = self.zip.namelist()
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
            raise RuntimeError(f"{source}: not a valid checkpoint (corrupt or truncated zip "
                               f"archive: {error})") from None
        pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pickles:
            raise RuntimeError(f"{source}: not a torch checkpoint (no data.pkl record in the "
                               "zip archive)")
        self.prefix = pickles[0][: -len("data.pkl")]
        self.path = path
        self.fileobj = fileobj
        self.mmap = mmap
        self.swap_bytes = _file_byteorder(self, names) != sys.byteorder

    def read(self, name):
        try:
            return self.zip.read(name)
        except KeyError:
            raise RuntimeError(f"{self.source}: record '{name}' is missing from the "
                               "checkpoint") from None
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
            raise RuntimeError(f"{self.source}: record '{name}' is corrupt or truncated "
                               f"({error})") from None

    def storage_array(self, dtype, key, numel, skip_data):
        if skip_data:
            return np.broadcast_to(np.zeros((), _np_dtype(dtype)), (numel,))
        array = self._storage_bytes(dtype, key, numel)
        return _byteswapped(array) if self.swap_bytes else array

    def _storage_bytes(self, dtype, key, numel):
        name = f"{self.prefix}data/{key}"
        np_dtype = _np_dtype(dtype)
        if self.mmap and self.path is not None:
            info = self.zip.getinfo(name)
            offset = self._data_offset(info)
            if info.compress_type != zipfile.ZIP_STORED:
                raise RuntimeError(f"{self.source}: mmap needs uncompressed records")
            mode = "r+" if _mmap_flags == getattr(_mmap, "MAP_SHARED", None) else "c"
            return np.memmap(self.path, dtype=np_dtype, mode=mode, offset=offset, shape=(numel,))
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise RuntimeError(f"{self.source}: record '{name}' is missing from the "
                               "checkpoint") from None
        expected = numel * np_dtype.itemsize
        if info.compress_type != zipfile.ZIP_STORED or info.file_size < expected:
            raw = self.read(name)
            if len(raw) < expected:
                raise RuntimeError(f"{self.source}: storage '{key}' holds {len(raw)} bytes, "
                                   f"expected {expected}")
            return np.frombuffer(bytearray(raw), dtype=np_dtype, count=numel)
        return self._read_stored(info, np_dtype, numel, key)

    def _read_stored(self, info, np_dtype, numel, key):
        """Read an uncompressed record straight into a new array (one copy, no CRC pass)."""
        array = np.empty(numel, dtype=np_dtype)
        f = self.fileobj
        f.seek(info.header_offset)
        header = f.read(30)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"{self.source}: storage '{key}' has a corrupt record header")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        f.seek(info.header_offset + 30 + name_len + extra_len)
        view = memoryview(array.view(np.uint8).reshape(-1)) if numel else memoryview(b"")
        done = f.readinto(view) if numel else 0
        if done != array.nbytes:
            raise RuntimeError(f"{self.source}: storage '{key}' is truncated ({done} of "
                               f"{array.nbytes} bytes)")
        return array

    def _data_offset(self, info):
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            header = f.read(30)
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        return info.header_offset + 30 + name_len + extra_len


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by :func:`save` or by ``torch.save``.

    ``map_location`` (a device, a string, a dict from saved to new locations, or a callable)
    moves storages; ``mmap=True`` maps the file instead of reading it; loading onto ``'meta'``
    reads no data. ``weights_only`` (the default unless a ``pickle_module`` is given) refuses
    pickles that name anything but tensors, plain containers and the globals allowed with
    :func:`add_safe_globals`. torch's environment switches ``TORCH_FORCE_WEIGHTS_ONLY_LOAD``
    and ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD`` (the latter only when ``weights_only`` is not
    given) decide as they do for ``torch.load``. A whole pickled model names torch's classes
    (``torch.nn.modules.linear.Linear``); they load as ember's class of the same path.

    Example::

        >>> state = ember.load("ckpt.pt", map_location="cpu")
    """
    source = _source_name(f)
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                               "specified")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
            pickle_load_args = {k: v for k, v in pickle_load_args.items() if k == "encoding"}
    opened = None
    if isinstance(f, (str, os.PathLike)):
        try:
            opened = open(f, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            raise FileNotFoundError(f"[Errno 2] No such file or directory: '{f}'") from None
        fileobj, path = opened, os.fspath(f)
    else:
        fileobj, path = f, None
        if mmap:
            raise ValueError("f must be a file path in order to use the mmap argument")
    try:
        return _load_from(fileobj, source, path, map_location, weights_only, bool(mmap),
                          pickle_load_args)
    except _BadAllowList as bad:
        raise bad.error from None
    finally:
        if opened is not None:
            opened.close()


def _load_from(fileobj, source, path, map_location, weights_only, mmap, pickle_load_args=None):
    pickle_load_args = pickle_load_args or {}
    start = fileobj.tell() if hasattr(fileobj, "tell") else 0
    head = fileobj.read(4)
    fileobj.seek(start)
    if len(head) == 0:
        raise RuntimeError(f"{source}: the file is empty")
    if head[:2] == b"PK":
        return _load_zip(fileobj, source, path, map_location, weights_only, mmap,
                         pickle_load_args)
    return _load_legacy(fileobj, source, map_location, weights_only, pickle_load_args)


def _skip_data(map_location):
    return (isinstance(map_location, (str, device)) and
            (map_location if isinstance(map_location, device) else device(map_location)) is META)


def _load_zip(fileobj, source, path, map_location, weights_only, mmap, pickle_load_args):
    reader = _ZipReader(fileobj, source, path, mmap)
    skip = _skip_data(map_location)
    cache = {}

    def load_storage(dtype, key, location, numel):
        if key not in cache:
            array = reader.storage_array(dtype, key, numel, skip)
            cache[key] = _place_storage(array, location, map_location)
        return cache[key]

    data = reader.read(reader.prefix + "data.pkl")
    unpickler = _Unpickler(io.BytesIO(data), weights_only, load_storage, source,
                           **pickle_load_args)
    try:
        return unpickler.load()
    except pickle.UnpicklingError:
        raise
    except (EOFError, ValueError, struct.error, IndexError, KeyError) as error:
        raise RuntimeError(f"{source}: corrupt checkpoint pickle ({error})") from None


def _load_legacy(fileobj, source, map_location, weights_only, pickle_load_args):
    """Read the pre-1.6 format: pickled header, the object, storage keys, raw storages."""
    _read_legacy_header(fileobj, source)
    storages = {}  # key -> (dtype, location, numel)

    def load_storage(dtype, key, location, numel):
        storages.setdefault(key, (dtype, location, numel))
        return key

    unpickler = _LegacyUnpickler(fileobj, weights_only, load_storage, source,
                                 **pickle_load_args)
    try:
        result = unpickler.load()
        keys = _storage_keys(fileobj)
    except (EOFError, ValueError, struct.error) as error:
        raise RuntimeError(f"{source}: corrupt legacy checkpoint ({error})") from None
    placed = {}
    for key in keys:
        dtype, location, numel = storages[key]
        np_dtype = _np_dtype(dtype)
        count_bytes = fileobj.read(8)
        count = struct.unpack("<q", count_bytes)[0] if len(count_bytes) == 8 else -1
        raw = np.empty(max(count, 0) * np_dtype.itemsize, np.uint8)  # read straight in
        got = fileobj.readinto(raw) if count == numel else -1
        if got != numel * np_dtype.itemsize:
            raise RuntimeError(f"{source}: storage '{key}' is truncated")
        array = raw.view(np_dtype)
        placed[key] = _place_storage(array, location, map_location)
    return _resolve_deferred(result, placed)


class _DataOnlyUnpickler(pickle.Unpickler):
    """Reads a pickle of plain data (the legacy format's list of storage keys): no globals."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"unexpected global {module}.{name} in a list of keys")


def _storage_keys(fileobj):
    try:
        return _DataOnlyUnpickler(fileobj).load()
    except pickle.UnpicklingError as error:  # a corrupt file, not a refused global
        raise ValueError(str(error)) from None


def _read_legacy_header(fileobj, source):
    """Check the legacy format's header: the usual bytes, or else each of its three pickles."""
    start = fileobj.tell()
    if fileobj.read(len(_LEGACY_HEADER)) == _LEGACY_HEADER:
        return
    fileobj.seek(start)

    def header():
        try:
            return _Unpickler(fileobj, True, None, source).load()
        except (EOFError, pickle.UnpicklingError, ValueError, IndexError) as error:
            raise RuntimeError(f"{source}: not a torch checkpoint (invalid header: "
                               f"{error})") from None

    if header() != _LEGACY_MAGIC:
        raise RuntimeError(f"{source}: not a torch checkpoint (invalid magic number; corrupt "
                           "file?)")
    if header() != _LEGACY_PROTOCOL:
        raise RuntimeError(f"{source}: unsupported legacy protocol version")
    sys_info = header()
    if not isinstance(sys_info, dict) or not sys_info.get("little_endian", True):
        raise RuntimeError(f"{source}: big-endian checkpoints are not supported")


class _Deferred:
    """A legacy tensor or parameter, rebuilt once the storages (after the pickle) are read."""

    def __init__(self, kind, args):
        self.kind, self.args = kind, args


class _LegacyStorages:
    """Unpickler part for the pre-1.6 format: tensors wait for the storages after the pickle."""

    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in ("torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor"):
            return lambda *args: _Deferred("tensor", args)
        if full == "torch._utils._rebuild_parameter":
            return lambda *args: _Deferred("parameter", args)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage"
                or not isinstance(pid[1], StorageType)):
            raise pickle.UnpicklingError(f"{self.source}: unsupported persistent id {pid!r}")
        if len(pid) > 5 and pid[5] is not None:
            raise RuntimeError(f"{self.source}: legacy storage views are not supported")
        key = self.load_storage(pid[1].dtype, str(pid[2]), str(pid[3]), int(pid[4]))
        return _Deferred("storage", (key, pid[1].dtype))


class _LegacyFullUnpickler(_LegacyStorages, _FullUnpickler):
    pass


class _LegacyWeightsOnlyUnpickler(_LegacyStorages, _WeightsOnlyUnpickler):
    pass


def _LegacyUnpickler(file, weights_only, load_storage, source, **pickle_load_args):
    """The legacy-format unpickler ``weights_only`` asks for."""
    kind = _LegacyWeightsOnlyUnpickler if weights_only else _LegacyFullUnpickler
    return kind(file, weights_only, load_storage, source, **pickle_load_args)


def _typed_storage(loaded, dtype):
    """An ember ``TypedStorage`` on the memory of storage ``loaded`` (read from a file)."""
    from .storage import TypedStorage, UntypedStorage

    if loaded.device is META:
        untyped = UntypedStorage._wrap(None, META, meta_nbytes=loaded.array.nbytes)
    else:
        untyped = UntypedStorage._wrap(loaded.array.view(np.uint8), loaded.device)
    return TypedStorage._wrap(untyped, dtype)


def _resolve_deferred(obj, placed):
    """Replace deferred tensors (inside containers) by real ones now that storages are read."""
    if isinstance(obj, _Deferred):
        if obj.kind == "storage":  # a storage object itself (torch pickles storages so)
            return _typed_storage(placed[obj.args[0]], obj.args[1])
        if obj.kind == "tensor":
            storage, *rest = obj.args
            return _rebuild_tensor_v2(placed[storage.args[0]], *rest)
        data, *rest = obj.args
        return _rebuild_parameter(_resolve_deferred(data, placed), *rest)
    if isinstance(obj, dict):
        for k in list(obj):
            obj[k] = _resolve_deferred(obj[k], placed)
        return obj
    if isinstance(obj, list):
        return [_resolve_deferred(v, placed) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_resolve_deferred(v, placed) for v in obj)
    return obj
