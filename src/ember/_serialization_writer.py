"""Writing checkpoints in torch's format, for :func:`ember.serialization.save`.

The pickler that writes each tensor as torch's ``_rebuild_tensor_v2`` call and each storage as a
persistent id, torch's module paths for ember's classes and functions, the legacy (pre-1.6)
writer, and the zip writer (stored records, a CRC thread, writeback as each chunk lands).
Example::

    >>> import ember
    >>> ember.save({"w": ember.ones(2)}, "ckpt.pt")  # runs through _write_archive here
"""

from __future__ import annotations

import collections
import functools
import io
import os
import pickle
import secrets
import struct
import sys
import types
import zlib

import numpy as np

from . import _dtype as dt
from ._device import META, device
from ._tensor import Size, Tensor, layout, strided

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
            if obj.layout is not strided:  # ember.sparse COO, CSR, CSC (Tensor subclasses)
                return (_global("torch._utils", "_rebuild_sparse_tensor"),
                        (obj.layout, obj._rebuild_args()))
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return _global("torch", "Size"), (tuple(obj),)
        if isinstance(obj, device):
            return _global("torch", "device"), (str(obj),)
        if isinstance(obj, layout):
            return _global("torch.serialization", "_get_layout"), (f"torch.{obj.name}",)
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



def _np_dtype(dtype):
    return dtype.np
