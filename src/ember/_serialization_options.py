"""torch's loading options, for :func:`ember.serialization.load`.

Where storages go (``register_package``, ``location_tag``, ``default_restore_location``),
``skip_data``, the byte order, CRC and mmap defaults, and when ``weights_only`` is on (the
argument, ``TORCH_FORCE_WEIGHTS_ONLY_LOAD`` and friends). Example::

    >>> import ember
    >>> ember.serialization.get_default_load_endianness() is None
    True
"""

from __future__ import annotations

import contextlib
import enum
import mmap as _mmap
import os
import shutil
import sys
import tempfile
import warnings

from ._device import device

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
