"""torch's unpicklers and allow-list, for :func:`ember.serialization.load`.

The full unpickler maps torch's global names (``torch._utils._rebuild_tensor_v2``,
``torch.nn.modules.linear.Linear``) to ember's objects; the weights-only unpickler runs only
torch's safe opcodes and refuses any global outside tensors, storages, dtypes, devices, sizes,
plain containers and what :func:`add_safe_globals` allows, naming it, before anything runs.
Example::

    >>> import ember
    >>> ember.serialization.add_safe_globals([dict])
    >>> dict in ember.serialization.get_safe_globals()
    True
"""

from __future__ import annotations

import _compat_pickle
import collections
import pickle
import sys
import warnings

import numpy as np

from . import _dtype as dt
from ._device import META, device
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
from ._serialization_writer import (
    _DTYPE_OF_STORAGE,
    _ember_path,
    _torch_name_of,
)
from ._tensor import Size, Tensor, layout

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
