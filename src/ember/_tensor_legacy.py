"""Tensor's legacy and storage-level surface: the legacy tensor types (``FloatTensor``, ...),
``Tensor.new``, ``resize_`` / ``resize_as_``, the Python-callable ``apply_`` / ``map_`` /
``map2_``, ``as_subclass``, and the dense side of the sparse conversions (``to_sparse``,
``to_dense``, ``sparse_mask``, which hand over to :mod:`ember.sparse`).

:mod:`ember._tensor` imports this module at its end. Example::

    >>> import ember
    >>> isinstance(ember.ones(2), ember.FloatTensor)
    True
"""

from __future__ import annotations

import builtins
import functools
import operator
import warnings

import numpy as np

from . import _dtype as dt
from ._device import CPU, META, canonical
from ._shared_memory import is_shared
from ._tensor import (
    _FORMAT_RANKS,
    _TYPE_NAMES,
    Size,
    Tensor,
    _strides_in_format,
    contiguous_format,
    memory_format_param,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    tensor,
)
from .ops._methods import tensor_method
from .ops._signature import signature

# ---------------------------------------------------------------- legacy tensor types


class _LegacyTensorType(type):
    """The metaclass of ``ember.FloatTensor`` and its kin (torch's ``tensortype``): calling
    one builds a CPU tensor of its dtype as torch's legacy constructors do, and
    ``isinstance(t, ember.FloatTensor)`` tests a tensor's dtype and device."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._device.type == "cpu" and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        if device is not None and canonical(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device "
                               f"type: {canonical(device).type} was passed")
        return _legacy_new(cls.dtype, args)

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _legacy_new(dtype, args, device=CPU, name=None):
    """torch's legacy constructor rules: ints or a Size are a size (uninitialised memory),
    one sequence is data, one tensor is returned when its dtype matches."""
    if not args:
        args = (0,)
    if len(args) == 1 and isinstance(args[0], Tensor):
        source = args[0]
        if source.dtype is not dtype or source._device != device:
            expected = name or _TYPE_NAMES[dtype.name]
            raise TypeError(f"expected {expected} (got {source.type()})")
        return source.detach()
    if len(args) == 1 and not isinstance(args[0], (builtins.int, Size, np.integer)):
        return tensor(args[0], dtype=dtype, device=device)
    size = tuple(args[0]) if isinstance(args[0], Size) else args
    from .ops.creation import empty

    return empty(*size, dtype=dtype, device=device)


def _legacy_type(dtype):
    name = _TYPE_NAMES[dtype.name].split(".")[1]
    doc = f"""The legacy constructor of CPU {dtype} tensors (``torch.{name}``).

    ``{name}(2, 3)`` is uninitialised memory of that size, ``{name}([1, 2])`` a tensor from
    data; ``isinstance(t, ember.{name})`` is True for CPU {dtype} tensors.

    Example::

        >>> isinstance(ember.{name}([1, 0]), ember.{name})
        True
    """
    return _LegacyTensorType(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False,
                                        "__module__": "ember", "__doc__": doc})


_LEGACY_TYPES = {name: _legacy_type(getattr(dt, name)) for name in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "bool")}
FloatTensor = _LEGACY_TYPES["float32"]
DoubleTensor = _LEGACY_TYPES["float64"]
HalfTensor = _LEGACY_TYPES["float16"]
BFloat16Tensor = _LEGACY_TYPES["bfloat16"]
LongTensor = _LEGACY_TYPES["int64"]
IntTensor = _LEGACY_TYPES["int32"]
ShortTensor = _LEGACY_TYPES["int16"]
CharTensor = _LEGACY_TYPES["int8"]
ByteTensor = _LEGACY_TYPES["uint8"]
BoolTensor = _LEGACY_TYPES["bool"]


# ---------------------------------------------------------------- legacy and storage methods


@tensor_method("new")
def _new(self, *args, device=None):
    """The legacy constructor with this tensor's dtype and device: ``t.new(2, 3)`` is
    uninitialised memory of that size, ``t.new([1, 2])`` a tensor from data, ``t.new()`` an
    empty tensor.

    Example::

        >>> ember.zeros(1, dtype=ember.int32).new([1, 2])
        tensor([1, 2], dtype=ember.int32)
    """
    target = self._device if device is None else canonical(device)
    return _legacy_new(self.dtype, args, target, self.type())


def _check_resizable(self):
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")


@tensor_method("resize_")
def _resize_(self, *sizes, size=None, memory_format=None):
    """Give this tensor a new shape in place, keeping its memory where it is large enough
    (the elements are then the storage's, in row-major order) and allocating new memory
    otherwise (new elements are uninitialised). Unlike torch, other tensors that share the
    old memory do not see new memory. Memory shared with NumPy (``from_numpy``, after
    ``.numpy()``) cannot grow: RuntimeError, as in torch.

    Example::

        >>> ember.arange(6.).resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    _check_resizable(self)
    from .ops._operands import varargs_or_keyword

    sizes = varargs_or_keyword("resize_", sizes, size)
    shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
        else tuple(sizes)
    if any(not isinstance(s, (builtins.int, np.integer)) for s in shape):
        raise TypeError("resize_(): argument 'size' must be tuple of ints")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    fmt = memory_format_param(memory_format, len(shape))
    if shape == self._data.shape and fmt is None:
        return self
    strides = _strides_in_format(shape, memory_format if fmt in _FORMAT_RANKS else
                                 contiguous_format)
    numel = builtins.int(np.prod(shape, dtype=np.int64))
    if self._device is META:
        self._data = np.broadcast_to(np.zeros((), self._data.dtype), shape)
    else:
        self._data = _resized_array(self, shape, strides, numel)
    self._vc[0] += 1
    return self


def _resized_array(self, shape, strides, numel):
    """An array of ``shape``/``strides`` (in elements) on this tensor's storage from its
    offset, or on new memory holding the old storage's elements when that is too small
    (refused, as torch does, for memory shared with NumPy: see ``ember._shared_memory``)."""
    item = self._data.dtype.itemsize
    xp = self._device.xp
    root = self._storage_root()
    offset = self.storage_offset()
    flat = _in_memory_order(root)
    if flat is None or offset + numel > flat.size:
        if offset + numel > root.size and is_shared(self):
            raise RuntimeError("Trying to resize storage that is not resizable")
        old = self._data.reshape(-1) if flat is None else flat
        offset = 0 if flat is None else offset
        flat = xp.empty(offset + numel, self._data.dtype)
        kept = builtins.min(old.size, flat.size)
        flat[:kept] = old[:kept]
        self._base = None  # new memory: no longer a view of anything
    return xp.lib.stride_tricks.as_strided(flat[offset:], shape,
                                           tuple(st * item for st in strides))


def resize_shared_output(out, shape):
    """Give the ``out=`` tensor ``out``, whose memory is shared with NumPy, the contiguous
    ``shape`` on that memory, as torch resizes an output: refused when the memory is too small.

    Example::

        >>> out = ember.from_numpy(np.zeros(4, dtype=np.float32))
        >>> resize_shared_output(out, (2,)); out.shape
        ember.Size([2])
    """
    numel = builtins.int(np.prod(shape, dtype=np.int64))
    strides = _strides_in_format(shape, contiguous_format)
    out._data = _resized_array(out, shape, strides, numel)


def _in_memory_order(root):
    """The elements of array ``root`` as a flat view in the order they lie in memory (the
    storage's order), or None when they are not one dense block."""
    if root.flags.c_contiguous:
        return root.reshape(-1)
    if root.flags.f_contiguous:
        return root.T.reshape(-1)
    return None


@tensor_method("resize_as_")
@signature("resize_as_(Tensor self, Tensor the_template, MemoryFormat? memory_format=None) "
           "-> Tensor")
def _resize_as_(self, the_template, memory_format=None):
    """Resize this tensor in place to the shape of ``the_template`` (see ``resize_``).

    Example::

        >>> ember.arange(6.).resize_as_(ember.zeros(3, 2)).shape
        ember.Size([3, 2])
    """
    return _resize_(self, the_template.shape, memory_format=memory_format)


def _resize_warned(self, sizes):

    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=3)
    # torch multiplies the arguments exactly as given: a single list or tuple is not unpacked,
    # so its "product" is never an element count and the call is refused.
    numel = functools.reduce(operator.mul, sizes, 1)
    if numel != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements "
                           f"in total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, "
                           f"while preserving the number of elements. ")
    return self.contiguous().view(*sizes)


@tensor_method("resize")
def _resize(self, *sizes):
    """The deprecated out-of-place resize: a reshaped alias when the number of elements stays
    (torch's rule), an error otherwise.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.arange(4).resize(2, 2).shape
        ember.Size([2, 2])
    """
    return _resize_warned(self, sizes)


@tensor_method("resize_as")
def _resize_as(self, tensor):
    """The deprecated out-of-place ``resize_as``.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.arange(4).resize_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return _resize_warned(self, tuple(tensor.shape))


def _python_elementwise(self, name, fn, *others):
    """Write ``fn(self[i], other[i]...)`` (Python numbers) into every element of this CPU
    tensor; ``others`` broadcast to its shape."""
    if self._device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self._rg:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")
    arrays = [np.broadcast_to(o._data, self._data.shape) for o in others]
    ufunc = np.frompyfunc(lambda *values: fn(*(v.item() if hasattr(v, "item") else v
                                               for v in values)), 1 + len(arrays), 1)
    if self._data.size:
        from .ops._registry import check_writable

        values = ufunc(self._data, *arrays)
        check_writable(self)
        self._data[...] = np.asarray(values).astype(self._data.dtype)
        self._vc[0] += 1
    return self


@tensor_method("apply_")
def _apply_(self, callable):
    """Replace every element ``x`` of this CPU tensor by ``callable(x)`` (a Python function
    on numbers; slow, for debugging).

    Example::

        >>> ember.tensor([1., 2.]).apply_(lambda x: x * 10)
        tensor([10., 20.])
    """
    return _python_elementwise(self, "apply_", callable)


@tensor_method("map_")
def _map_(self, tensor, callable):
    """Replace every element ``x`` of this CPU tensor by ``callable(x, y)``, ``y`` the
    matching element of ``tensor`` (broadcast).

    Example::

        >>> ember.tensor([1., 2.]).map_(ember.tensor([3., 4.]), lambda x, y: x * y)
        tensor([3., 8.])
    """
    return _python_elementwise(self, "map_", callable, tensor)


@tensor_method("map2_")
def _map2_(self, x, y, callable):
    """Replace every element ``a`` of this CPU tensor by ``callable(a, b, c)``, ``b`` and
    ``c`` the matching elements of ``x`` and ``y``.

    Example::

        >>> ember.ones(2).map2_(ember.ones(2), ember.ones(2), lambda a, b, c: a + b + c)
        tensor([3., 3.])
    """
    return _python_elementwise(self, "map2_", callable, x, y)


@tensor_method("as_subclass")
def _as_subclass(self, cls):
    """This tensor as an instance of the Tensor subclass ``cls``: the same memory and the
    same place in the autograd graph.

    Example::

        >>> class Mine(ember.Tensor): pass
        >>> type(ember.ones(2).as_subclass(Mine)).__name__
        'Mine'
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                        f"{cls!r}")
    from .ops.shape import _alias

    alias = _alias(self)  # AliasBackward0 in the graph, as torch's
    alias.__class__ = cls
    return alias


# ---------------------------------------------------------------- sparse hooks (ember.sparse)


@tensor_method("to_sparse")
def _to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """This tensor as a sparse COO tensor of its nonzero elements (the leading ``sparse_dim``
    dims sparse, the rest dense), or as CSR/CSC with ``layout=``.

    Example::

        >>> ember.tensor([0., 2.]).to_sparse()._values()
        tensor([2.])
    """
    if layout in (sparse_csr, sparse_csc):
        from .sparse._compressed import dense_to_compressed

        return dense_to_compressed(self, layout)
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported by ember")
    from .sparse._ops import dense_to_sparse

    return dense_to_sparse(self, sparse_dim)


@tensor_method("to_sparse_csr")
def _to_sparse_csr(self, dense_dim=None):
    """This 2-D tensor in compressed sparse row (CSR) form.

    Example::

        >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
    """
    return _to_sparse(self, layout=sparse_csr)


@tensor_method("to_sparse_csc")
def _to_sparse_csc(self, dense_dim=None):
    """This 2-D tensor in compressed sparse column (CSC) form.

    Example::

        >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse_csc().ccol_indices()
        tensor([0, 1, 2])
    """
    return _to_sparse(self, layout=sparse_csc)


@tensor_method("sparse_mask")
@signature("sparse_mask(Tensor self, Tensor mask) -> Tensor", any_layout=True)
def _sparse_mask(self, mask):
    """This dense tensor's elements at the specified positions of the sparse COO ``mask``,
    as a sparse tensor with ``mask``'s pattern.

    Example::

        >>> mask = ember.sparse_coo_tensor([[1]], [1.], (3,))
        >>> ember.tensor([4., 5., 6.]).sparse_mask(mask)._values()
        tensor([5.])
    """
    from .sparse._ops import sparse_mask

    return sparse_mask(self, mask)


@tensor_method("to_sparse_coo")
def _to_sparse_coo(self):
    """``to_sparse()`` with every dim sparse.

    Example::

        >>> ember.tensor([0., 2.]).to_sparse_coo()._indices()
        tensor([[1]])
    """
    return _to_sparse(self)


@tensor_method("to_dense")
def _to_dense(self, dtype=None, *, masked_grad=None):
    """A dense tensor is its own dense form (cast to ``dtype`` if given).

    Example::

        >>> x = ember.ones(2)
        >>> x.to_dense() is x
        True
    """
    return self if dtype is None else self.to(dtype)


tensor_method(property(lambda self: False, doc="False: a dense tensor is not CSR."),
              "is_sparse_csr")
