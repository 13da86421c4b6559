"""The Tensor: an ndarray view on a device, plus the fields autograd needs.

A tensor's data is a NumPy (cpu), CuPy (cuda) or zero-stride stand-in (meta) array. Views share
the array's memory and the *version counter* of their base, which in-place operations bump so
that autograd can detect a tensor modified after it was saved for backward.

Operators are not defined here: each lives in ``ember/ops/<family>.py`` and is attached to this
class as a method there, so that every operator has exactly one definition.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import _dtype as dt
from ._device import CPU, META, canonical
from ._shared_memory import mark_shared

__all__ = ["Tensor", "tensor", "as_tensor", "from_numpy", "from_dlpack", "is_tensor",
           "is_floating_point", "is_complex", "numel"]


class _TraceState:
    """``tracer`` is the active ``ember.jit`` tracer while a function is traced, else None: one
    attribute test on the operator hot path (``_registry.run_op``)."""

    __slots__ = ("tracer",)


_trace_state = _TraceState()
_trace_state.tracer = None


def _traced_to_python(tensor, what):
    if _trace_state.tracer is not None:
        _trace_state.tracer.python_value(tensor, what)


class Tensor:
    """A multi-dimensional array with PyTorch's semantics.

    ``ember.Tensor(2, 3)`` makes an uninitialised float tensor of that size and
    ``ember.Tensor([1, 2])`` a float tensor from data, as the legacy ``torch.Tensor`` constructor.

    Example::

        >>> x = ember.tensor([[1., 2.], [3., 4.]])
        >>> x.shape, x.dtype
        (ember.Size([2, 2]), ember.float32)

    This class body holds the data, metadata, autograd fields and conversions. Every other
    method and dunder (``add``, ``__add__``, ``sum``, ``view``, ``uniform_``...) is declared
    next to its operator through :func:`ember.ops._methods.tensor_method`, which installs it
    here and records it: ``ember.ops._methods.METHODS["add"]`` is the function, and its
    ``__module__`` names the file (``ember.ops.pointwise.arithmetic``); ``Tensor.add`` itself is
    ember.overrides' ``__torch_function__`` wrapper around it (``Tensor.add.__wrapped__``).
    """

    # ``_grad_fn`` is the node that produced this tensor; read it through the ``grad_fn``
    # property, which regenerates a view's node when its base changed in place since (see
    # ``autograd/views.py``). ``_gfv`` (views only): the version at which ``_grad_fn`` was
    # made; ``_vmeta`` (views only): how the view was made (``_registry._NO_GRAD_VIEW``...).
    __slots__ = ("_data", "_device", "_rg", "_grad_fn", "_output_nr", "_vc", "_base",
                 "_gfv", "_vmeta",
                 "_grad", "_hooks", "_retains_grad", "_acc", "_post_acc_hooks", "_fw_grad",
                 "__dict__", "__weakref__")
    __array_priority__ = 1000  # make NumPy defer to our reflected operators

    def __new__(cls, *args, device=None):
        if len(args) == 1 and not isinstance(args[0], builtins.int):
            data = args[0]
            if isinstance(data, Tensor):
                return data
            return tensor(data, dtype=dt.float32, device=device)
        size = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        from .ops.creation import empty

        if not args:
            size = (0,)  # torch.Tensor() is an empty 1-D tensor

        return empty(*size, dtype=dt.float32, device=device)

    @staticmethod
    def _make(array, device, base=None):
        """Wrap ``array`` without copying. ``base`` makes the result a view that shares it."""
        t = object.__new__(Tensor)
        t._data = array
        t._device = device
        t._rg = False
        t._grad_fn = None
        t._output_nr = 0
        if base is None:
            t._vc = [0]
            t._base = None
        else:
            t._vc = base._vc
            t._base = base
            t._gfv = base._vc[0]
            t._vmeta = 0
        return t

    # ------------------------------------------------------------ metadata

    @property
    def dtype(self):
        """The element type."""
        return dt.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        """The device the tensor lives on."""
        return self._device

    @property
    def shape(self):
        """The size of each dimension, as an :class:`ember.Size`."""
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or the size of one dimension.

        Example::

            >>> ember.zeros(2, 3).size(-1)
            3
        """
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self):
        """The number of dimensions."""
        return self._data.ndim

    def dim(self):
        """The number of dimensions."""
        return self._data.ndim

    ndimension = dim

    def numel(self):
        """The number of elements.

        Example::

            >>> ember.zeros(2, 3).numel()
            6
        """
        return math.prod(self._data.shape)  # Python ints: np.prod cost about 5 us a call

    nelement = numel

    def element_size(self):
        """The size of one element in bytes."""
        return self._data.dtype.itemsize

    @property
    def itemsize(self):
        return self._data.dtype.itemsize

    @property
    def nbytes(self):
        return self.numel() * self._data.dtype.itemsize

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device.type == "cpu"

    @property
    def is_meta(self):
        return self._device.type == "meta"

    @property
    def is_sparse(self):
        return False

    @property
    def is_quantized(self):
        return False

    @property
    def layout(self):
        """The storage layout: always ``ember.strided``."""
        return strided

    def is_floating_point(self):
        """True for float16, bfloat16, float32 and float64 tensors."""
        return self.dtype.is_floating_point

    def is_complex(self):
        """True for complex tensors."""
        return self.dtype.is_complex

    def is_signed(self):
        """True for signed dtypes (everything but uint8 and bool)."""
        return self.dtype.is_signed

    def get_device(self):
        """The CUDA ordinal, or -1 for a CPU tensor."""
        return self._device.index if self._device.type == "cuda" else -1

    # ------------------------------------------------------------ storage and strides

    def stride(self, dim=None):
        """Strides in elements (not bytes), as torch counts them.

        Example::

            >>> ember.zeros(2, 3).stride()
            (3, 1)
        """
        if self._device is META:
            strides = _contiguous_strides(self._data.shape)
        else:
            item = self._data.dtype.itemsize
            strides = tuple(s // item for s in self._data.strides)
            if self._data.size == 0 and not any(strides):
                # NumPy gives fresh empty arrays zero strides; torch gives contiguous ones
                strides = _contiguous_strides(self._data.shape)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim)]

    def _storage_root(self):
        """The array that owns this tensor's memory (the end of the ``.base`` chain).

        ``as_strided`` puts a small non-array object between a view and its base; step over it.
        """
        kind = type(self._data)
        root = self._data
        while True:
            base = getattr(root, "base", None)
            if isinstance(base, kind):
                root = base
            elif base is not None and isinstance(getattr(base, "base", None), kind):
                root = base.base
            else:
                return root

    def data_ptr(self):
        """The address of the first element."""
        if self._device is META:
            return 0
        if self._device.type == "cuda":
            return self._data.data.ptr
        if self._device.type == "webgpu":  # no host address: the storage's id and offset
            return id(self._data.storage) + self._data.offset * self._data.itemsize
        return self._data.__array_interface__["data"][0]

    def storage_offset(self):
        """The offset of the first element from the start of the storage, in elements.

        Example::

            >>> ember.arange(6)[2:].storage_offset()
            2
        """
        if self._device is META:
            return 0
        if self._device.type == "cuda":
            # CuPy views made from a memory pointer have no ``.base``: count from the start of
            # the allocation the pointer lies in
            memptr = self._data.data
            return (memptr.ptr - memptr.mem.ptr) // self._data.dtype.itemsize
        if self._device.type == "webgpu":
            return self._data.offset
        root = self._storage_root()
        start = _array_address(root)
        return (self.data_ptr() - start) // self._data.dtype.itemsize

    # untyped_storage(), storage(), set_()... are attached in ``ember/storage.py``

    def is_contiguous(self, memory_format=None):
        """Whether the elements lie in row-major order without gaps (or, given
        ``memory_format=ember.channels_last``, in that order).

        Example::

            >>> ember.zeros(2, 3).t().is_contiguous()
            False
        """
        if memory_format is channels_last or memory_format is channels_last_3d:
            return (self._data.ndim == _FORMAT_RANKS[memory_format.name]
                    and has_channels_last_strides(self._data.shape, self.stride()))
        if memory_format is not None and not isinstance(memory_format, _MemoryFormat):
            raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                            f"torch.memory_format, not {type(memory_format).__name__}")
        if self._device is META or self._data.size == 0:
            return True
        expected = 1
        for size, stride in zip(reversed(self._data.shape), reversed(self.stride())):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    @property
    def is_view_(self):
        return self._base is not None

    def _is_view(self):
        """Whether this tensor is a view of another (see ``_base``)."""
        return self._base is not None

    def is_set_to(self, other):
        """True if both tensors view the same memory with the same shape and strides."""
        return (self.data_ptr() == other.data_ptr() and self.shape == other.shape
                and self.stride() == other.stride())

    @property
    def _version(self):
        """How many in-place changes this tensor's memory has seen."""
        return self._vc[0]

    def _bump_version(self):
        self._vc[0] += 1

    # ------------------------------------------------------------ autograd fields

    @property
    def requires_grad(self):
        """Whether operations on this tensor are recorded for autograd (a view also requires
        grad when its base does, as in torch, even one made under ``no_grad``)."""
        return self._rg or (self._base is not None and self._base.requires_grad)

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        """The node that produced this tensor (None for leaves).

        A view whose base (or another view of it) changed in place after the view's node was
        made gets a fresh ``AsStridedBackward0`` node over the base's current history, as in
        torch.
        """
        if self._base is None or self._gfv == self._vc[0]:
            return self._grad_fn
        from .autograd.views import view_grad_fn

        return view_grad_fn(self)

    @grad_fn.setter
    def grad_fn(self, node):
        self._grad_fn = node
        if getattr(self, "_base", None) is not None:
            self._gfv = self._vc[0]

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on a leaf in place and return the tensor.

        Example::

            >>> w = ember.zeros(3).requires_grad_()
            >>> w.requires_grad
            True
        """
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return self
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._rg = builtins.bool(requires_grad)
        return self

    @property
    def is_leaf(self):
        """True for tensors not produced by a recorded operation."""
        return self.grad_fn is None

    @property
    def grad(self):
        """The gradient accumulated by ``backward`` (None until then)."""
        return getattr(self, "_grad", None)

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {value.shape} "
                                   f"vs {self.shape}")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self):
        return getattr(self, "_retains_grad", False)

    @property
    def data(self):
        """A tensor sharing this one's memory, outside autograd and its version tracking
        (in-place changes through ``.data`` are invisible to autograd, as in torch)."""
        return Tensor._make(self._data, self._device)

    @data.setter
    def data(self, value):
        self._data = value._data
        self._device = value._device

    @property
    def output_nr(self):
        return self._output_nr

    def detach(self):
        """A new tensor sharing memory and version counter, cut from the graph.

        Example::

            >>> x = ember.ones(2, requires_grad=True)
            >>> (x * 2).detach().requires_grad
            False
        """
        out = Tensor._make(self._data, self._device)
        out._vc = self._vc  # shared, so autograd still sees in-place changes made through it
        return out

    def detach_(self):
        """Cut this tensor from the graph in place, making it a leaf."""
        if self._base is not None and self._base._rg:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._rg = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the leaves.

        Example::

            >>> x = ember.tensor([1., 2.], requires_grad=True)
            >>> (x * x).sum().backward()
            >>> x.grad
            tensor([2., 4.])
        """
        from .autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` whenever the gradient of this tensor is computed.

        The hook may return a new gradient to use instead. Returns a handle with ``remove()``.
        """
        from .autograd.graph import register_tensor_hook

        return register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` on a leaf after its ``.grad`` has been accumulated."""
        from .autograd.graph import register_post_accumulate_hook

        return register_post_accumulate_hook(self, hook)

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        from .autograd.graph import retain_grad

        retain_grad(self)

    # ------------------------------------------------------------ conversion

    def item(self):
        """The value of a one-element tensor as a Python number.

        Example::

            >>> ember.tensor([2.5]).item()
            2.5
        """
        _traced_to_python(self, "number")
        return self._item()

    def _item(self):
        if self._device is META:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        value = self._data.reshape(()).item() if self._device is CPU else self._data.item()
        if dt.is_bfloat16_array_dtype(self._data.dtype):
            value = builtins.float(value)
        return value

    def tolist(self):
        """The data as (nested) Python lists of numbers.

        Example::

            >>> ember.tensor([[1, 2]]).tolist()
            [[1, 2]]
        """
        _traced_to_python(self, "list")
        if self._device is META:
            raise RuntimeError("Tensor.tolist() cannot be called on meta tensors")
        array = self._host_array()
        if dt.is_bfloat16_array_dtype(array.dtype):
            array = array.astype(np.float32)
        return array.tolist()

    def _host_array(self):
        if self._device.type in ("cuda", "webgpu"):
            return self._data.get()
        return self._data

    def numpy(self, *, force=False):
        """A NumPy array sharing this CPU tensor's memory (also with ``force=True``, which
        allows a tensor that requires grad, and copies a GPU tensor to the host).

        Example::

            >>> ember.tensor([1, 2]).numpy()
            array([1, 2])
        """
        if self._device.type != "cpu":
            if force:
                return self._host_array().copy()
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        # NumPy now holds this memory: like torch, resize_ may no longer grow it
        return mark_shared(self)._data

    def __array__(self, dtype=None, copy=None):
        if self._rg:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._device.type == "cpu":
            mark_shared(self)
        array = self._host_array()
        if dtype is not None:
            array = array.astype(dtype)
        return array

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on tensors, as a tensor (``np.sin(t)``), as torch does.

        Like torch, a bool result becomes uint8.
        """
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return Tensor._make(np.asarray(array), CPU)

    def __dlpack__(self, stream=None, **kwargs):
        return self._data.__dlpack__() if stream is None else self._data.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def to(self, *args, **kwargs):
        """Convert dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(other)``.

        Example::

            >>> ember.tensor([1, 2]).to(ember.float64)
            tensor([1., 2.], dtype=ember.float64)
        """
        device, dtype_, copy = _parse_to(self, *args, **kwargs)
        fmt = kwargs.get("memory_format")
        memory_format_param(fmt, self._data.ndim)
        if (device is None or device == self._device) and (dtype_ is None or dtype_ is self.dtype):
            if fmt is not None and fmt is not preserve_format and (
                    copy or self.stride() != _strides_in_format(self._data.shape, fmt)):
                return self.clone(memory_format=fmt)
            return self.clone() if copy else self
        from .ops.creation import to_copy  # (only here: an import statement costs ~1 us)

        result = to_copy(self, dtype_, device)
        if fmt is not None and fmt is not preserve_format:
            result = result.clone(memory_format=fmt)  # (torch converts and lays out at once)
        return result

    def cpu(self, memory_format=None):
        """This tensor on the CPU (itself if already there and laid out as ``memory_format``
        asks)."""
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """This tensor on a CUDA device (raises a clear error without a GPU)."""
        if isinstance(device, builtins.int):
            device = f"cuda:{device}"
        return self.to(canonical("cuda" if device is None else device),
                       memory_format=memory_format)

    def type(self, dtype=None, non_blocking=False):
        """The type name (``'torch.FloatTensor'``), or a copy converted to ``dtype``."""
        if dtype is None:
            return _TYPE_NAMES[self.dtype.name]
        return self.to(_legacy_type_dtype(dtype))

    def float(self, memory_format=None):
        """Convert to float32 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        """Convert to float64 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        """Convert to float16 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None):
        """Convert to bfloat16 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.bfloat16, memory_format=memory_format)

    def long(self, memory_format=None):
        """Convert to int64 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.int64, memory_format=memory_format)

    def int(self, memory_format=None):
        """Convert to int32 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.int32, memory_format=memory_format)

    def short(self, memory_format=None):
        """Convert to int16 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.int16, memory_format=memory_format)

    def char(self, memory_format=None):
        """Convert to int8 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.int8, memory_format=memory_format)

    def byte(self, memory_format=None):
        """Convert to uint8 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.uint8, memory_format=memory_format)

    def bool(self, memory_format=None):
        """Convert to bool (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.bool, memory_format=memory_format)

    def cfloat(self, memory_format=None):
        """Convert to complex64 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.complex64, memory_format=memory_format)

    def cdouble(self, memory_format=None):
        """Convert to complex128 (laid out in ``memory_format``; by default as this tensor is)."""
        return self.to(dt.complex128, memory_format=memory_format)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A tensor from ``data`` with this tensor's dtype and device by default."""
        return tensor(data, dtype=dtype or self.dtype, device=device or self._device,
                      requires_grad=requires_grad)

    # ------------------------------------------------------------ Python protocol

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        _traced_to_python(self, "boolean")
        return builtins.bool(self._item())

    def __float__(self):
        _traced_to_python(self, "float")
        return builtins.float(self._item())

    def __int__(self):
        _traced_to_python(self, "integer")
        return builtins.int(self._item())

    __long__ = __int__  # Python 2's spellings, which torch.Tensor still has
    __nonzero__ = __bool__

    def __complex__(self):
        return builtins.complex(self.item())

    def __index__(self):
        if self.dtype.category != dt._INT and self.dtype is not dt.bool or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return builtins.int(self.item())

    __hash__ = object.__hash__

    def __delitem__(self, key):
        raise TypeError("Tensor does not support deleting items")

    def __repr__(self, *, tensor_contents=None):
        from ._printing import tensor_repr

        return tensor_repr(self)

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self._data.ndim == 0 and self._device is not META:
            return self.item().__format__(spec)
        return object.__format__(self.__repr__(), spec)

    def __reduce_ex__(self, protocol):
        from ._utils import _reduce_tensor  # torch's reduction (see ember._utils)

        return _reduce_tensor(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = self.detach().clone()
        new._rg = self._rg
        if type(self) is not Tensor:
            new = type(self).__new__(type(self), new, self._rg) if _takes_data(type(self)) \
                else new
        if self.grad is not None:
            new._grad = self.grad.detach().clone()
        memo[id(self)] = new
        return new


def _takes_data(cls):
    return getattr(cls, "_ember_wraps_data", False)


def _rebuild_tensor(array, device, requires_grad):
    t = tensor(array, device=device)
    if requires_grad:
        t.requires_grad_()
    return t


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass, or a tensor with Python attributes, as torch unpickles it:
    ``func(*args)`` seen as ``new_type``, with the attributes ``state`` set on it."""
    from ._utils import _set_obj_state

    result = func(*args)
    if type(result) is not new_type:
        result = result.as_subclass(new_type)
    setstate = getattr(type(result), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        result.__setstate__(state)
        return result
    return _set_obj_state(result, state)


def _array_address(array):
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _wrap_dim(dim, ndim):
    """Turn a possibly negative ``dim`` into an index, with torch's IndexError if out of range."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {dim})")
    return dim % rank


_TYPE_NAMES = {
    "float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
    "float16": "torch.HalfTensor", "bfloat16": "torch.BFloat16Tensor",
    "uint8": "torch.ByteTensor", "int8": "torch.CharTensor", "int16": "torch.ShortTensor",
    "int32": "torch.IntTensor", "int64": "torch.LongTensor", "bool": "torch.BoolTensor",
    "complex64": "torch.ComplexFloatTensor", "complex128": "torch.ComplexDoubleTensor",
}


def _legacy_type_dtype(kind):
    """The dtype ``Tensor.type(kind)`` converts to: ``kind`` is a dtype, a legacy tensor type
    (``ember.DoubleTensor``) or its name (``'torch.DoubleTensor'``); as in torch, a Python type
    or any other string is a ValueError, anything else a TypeError."""
    if isinstance(kind, dt.dtype):
        return kind
    if isinstance(kind, _LegacyTensorType):
        return kind.dtype
    if isinstance(kind, (str, type)):
        name = kind if isinstance(kind, str) else kind.__name__
        by_name = {v: k for k, v in _TYPE_NAMES.items()}
        found = by_name.get(name.replace("ember.", "torch.", 1))
        if found is None:
            raise ValueError(f"invalid type: {name!r}")
        return dt.to_dtype(found)
    raise TypeError("dtype must be a type, str, or dtype object")


def _parse_to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
              memory_format=None):
    flags = []  # positional non_blocking, copy (after the device, dtype or tensor)
    for arg in args:
        if isinstance(arg, builtins.bool):
            flags.append(arg)
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg._device
        elif isinstance(arg, dt.dtype):
            dtype = arg
        elif isinstance(arg, (str, builtins.int)) or type(arg).__name__ == "device":
            device = arg
        elif arg in (builtins.float, builtins.int, builtins.bool, builtins.complex):
            dtype = dt.to_dtype(arg)
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {arg!r}")
    if len(flags) > 1:
        copy = flags[1]
    if device is not None:
        device = canonical(device)
    if dtype is not None:
        dtype = dt.to_dtype(dtype)
    return device, dtype, copy


class Size(tuple):
    """The shape of a tensor: a tuple of ints that prints as ``ember.Size([2, 3])``.

    Example::

        >>> ember.Size([2, 3]).numel()
        6
    """

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        result = tuple.__getitem__(self, key)
        return Size(result) if isinstance(key, slice) else result

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


# ---------------------------------------------------------------- layouts and memory formats


class _NamedConstant:
    """A constant known by its module-level name (``ember.strided``): printed and pickled as
    that name, so it stays a singleton."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


class layout(_NamedConstant):
    """How a tensor's elements are stored, as ``torch.layout``. ember has one: ``strided``
    (dense memory addressed through strides); ``Tensor.layout`` is it.

    Example::

        >>> ember.zeros(2).layout is ember.strided
        True
    """

    __slots__ = ()


strided = layout("strided")
sparse_coo = layout("sparse_coo")  # the layout of ember.sparse.SparseCOOTensor
sparse_csr = layout("sparse_csr")  # ember.sparse.SparseCompressedTensor, compressed rows
sparse_csc = layout("sparse_csc")  # ember.sparse.SparseCompressedTensor, compressed columns


class memory_format(_NamedConstant):
    """The order in which a dense tensor's dims lie in memory, as ``torch.memory_format``:
    ``contiguous_format`` (row-major), ``channels_last`` (NCHW tensors laid out as NHWC),
    ``channels_last_3d`` (NCDHW as NDHWC) and ``preserve_format`` (keep the input's order).

    Example::

        >>> ember.zeros(2, 3, 4, 5).contiguous(memory_format=ember.channels_last).stride()
        (60, 1, 15, 3)
    """

    __slots__ = ()


_MemoryFormat = memory_format  # for code where a parameter shadows the class's name
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the name an op's parameters carry (plain strings keep saved jit graphs JSON)
_FORMAT_PARAMS = {contiguous_format: "contiguous", channels_last: "channels_last",
                  channels_last_3d: "channels_last_3d", preserve_format: None}
_FORMAT_RANKS = {"channels_last": 4, "channels_last_3d": 5}


def memory_format_param(fmt, ndim, default=None):
    """The op parameter for a ``memory_format=`` argument (``None``: ``default``), checked
    against the tensor's rank as torch checks it."""
    if fmt is None:
        return default
    if not isinstance(fmt, memory_format):
        raise TypeError(f"argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    name = _FORMAT_PARAMS[fmt]
    rank = _FORMAT_RANKS.get(name)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return name


def channels_last_order(ndim):
    """The dim order in memory of a channels-last tensor (outermost first): N, spatial..., C."""
    return (0, *range(2, ndim), 1)


def _strides_in_format(shape, fmt):
    """The strides of a fresh tensor of ``shape`` laid out in memory format ``fmt``."""
    if fmt is contiguous_format:
        return _contiguous_strides(shape)
    order = channels_last_order(len(shape))
    in_memory = _contiguous_strides([shape[d] for d in order])
    strides = [0] * len(shape)
    for d, stride in zip(order, in_memory):
        strides[d] = stride
    return tuple(strides)


def has_channels_last_strides(shape, strides):
    """Whether ``shape``/``strides`` are channels-last contiguous (torch's rule: dims of size
    1 may have any stride)."""
    if len(shape) not in (4, 5):
        return False
    expected = 1
    for d in reversed(channels_last_order(len(shape))):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


# the construction functions and the legacy surface, defined after everything here, which
# they import
from ._tensor_construct import (  # noqa: E402,F401  (moved to _tensor_construct.py; importers use this path)
    _place,
    as_tensor,
    from_dlpack,
    from_numpy,
    is_complex,
    is_floating_point,
    is_tensor,
    numel,
    tensor,
)
from ._tensor_legacy import (  # noqa: E402,F401  (moved to _tensor_legacy.py; importers use this path)
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    _legacy_new,
    _LegacyTensorType,
    _new,
    _resize,
    _to_dense,
)
