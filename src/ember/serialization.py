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
import io
import mmap as _mmap
import os
import pickle
import pickletools
import secrets
import struct
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np

from ._device import META, canonical, device
from ._serialization_options import (  # noqa: F401  (moved to _serialization_options.py; importers use this path)
    LoadEndianness,
    SourceChangeWarning,
    _resolve_weights_only,
    check_module_version_greater_or_equal,
    default_restore_location,
    get_crc32_options,
    get_default_load_endianness,
    get_default_mmap_options,
    location_tag,
    mkdtemp,
    normalize_storage_type,
    register_package,
    set_crc32_options,
    set_default_load_endianness,
    set_default_mmap_options,
    skip_data,
    storage_to_tensor_type,
    validate_cuda_device,
    validate_hpu_device,
)
from ._serialization_unpickler import (  # noqa: F401  (moved to _serialization_unpickler.py; importers use this path)
    _SAFE_GLOBALS,
    StorageType,
    _as_torch_name,
    _BadAllowList,
    _FullUnpickler,
    _get_layout,
    _LoadedStorage,
    _rebuild_from_type_v2,
    _rebuild_nested_tensor,
    _rebuild_parameter,
    _rebuild_sparse_tensor,
    _rebuild_tensor,
    _rebuild_tensor_v2,
    _rebuild_wrapper_subclass,
    _Unpickler,
    _user_allowed_globals,
    _WeightsOnlyUnpickler,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from ._serialization_writer import (  # noqa: F401  (moved to _serialization_writer.py; importers use this path)
    _CHUNK,
    _DTYPE_OF_STORAGE,
    _LEGACY_HEADER,
    _LEGACY_MAGIC,
    _LEGACY_PROTOCOL,
    _ZIP64_LIMIT,
    _ZIP_MAX_ENTRIES,
    DEFAULT_PROTOCOL,
    _ember_path,
    _FdSink,
    _FileSink,
    _fsync_directory,
    _hold,
    _np_dtype,
    _release_in_background,
    _storage_file_bytes,
    _torch_name_of,
    _write_archive,
    _write_legacy,
    _write_record,
    _writeback_starter,
)
from ._tensor import Tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "LoadEndianness",
           "get_default_load_endianness", "set_default_load_endianness", "get_crc32_options",
           "set_crc32_options", "get_default_mmap_options", "set_default_mmap_options",
           "SourceChangeWarning", "DEFAULT_PROTOCOL", "StorageType", "mkdtemp",
           "check_module_version_greater_or_equal", "normalize_storage_type",
           "storage_to_tensor_type", "validate_cuda_device", "validate_hpu_device",
           "register_package", "location_tag", "default_restore_location", "skip_data"]


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


def _file_byteorder(reader, names):
    """The byte order of a checkpoint's storages: its ``byteorder`` record, else the default
    set with :func:`set_default_load_endianness` (little when unset, as torch)."""
    record = reader.prefix + "byteorder"
    if record in names:
        order = reader.read(record).decode()
        if order not in ("little", "big"):
            raise ValueError("Unknown endianness type: " + order)
        return order
    if get_default_load_endianness() is LoadEndianness.BIG:
        return "big"
    if get_default_load_endianness() is LoadEndianness.NATIVE:
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
            mode = "r+" if get_default_mmap_options() == getattr(_mmap, "MAP_SHARED", None) else "c"
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
