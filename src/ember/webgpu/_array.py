"""``WebGPUArray``: an n-dimensional view of a GPU buffer, with NumPy's array interface.

A webgpu tensor's ``_data`` is a ``WebGPUArray``: a storage (one pooled GPU buffer holding
NumPy's bytes for the dtype), a shape, strides and an offset counted in elements. Views
(``reshape`` of contiguous data, ``transpose``, basic indexing, ``as_strided``) share the
storage; ``base`` points at the array that owns it, as NumPy's does, so ember's storage and
view bookkeeping work unchanged. Arithmetic and NumPy calls on it go to the array module
:mod:`ember.webgpu._xp` (also through ``__array_ufunc__``/``__array_function__``).
"""

from __future__ import annotations

import builtins

import numpy as np

from . import _runtime

__all__ = ["WebGPUArray", "Storage"]


class Storage:
    """One GPU buffer and its size in bytes; gives the buffer back to the pool when freed."""

    __slots__ = ("buffer", "nbytes", "runtime", "__weakref__")

    def __init__(self, nbytes):
        self.runtime = _runtime.runtime()
        self.nbytes = nbytes
        self.buffer = self.runtime.allocate(nbytes)

    def __del__(self):
        try:
            self.runtime.release(self.buffer)
        except Exception:  # interpreter shutdown
            pass


def contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class MemoryPointer:
    """A place in an array's storage, in bytes (CuPy's ``MemoryPointer``)."""

    __slots__ = ("owner", "byte_offset")

    def __init__(self, owner, byte_offset):
        self.owner, self.byte_offset = owner, byte_offset

    def __add__(self, nbytes):
        return MemoryPointer(self.owner, self.byte_offset + int(nbytes))


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "writeable", "owndata")

    def __init__(self, array):
        self.c_contiguous = array.is_c_contiguous()
        self.f_contiguous = array.ndim <= 1 and self.c_contiguous
        self.writeable = True
        self.owndata = array.base is None

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "WRITEABLE": True, "OWNDATA": self.owndata}[name.upper()]


class WebGPUArray:
    """An array on the webgpu device (see the module docstring).

    Example::

        >>> a = ember.ones(2, 3, device="webgpu")._data
        >>> a.T.shape, a.T.base is a
        ((3, 2), True)
    """

    __slots__ = ("storage", "shape", "estrides", "offset", "dtype", "base")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        """CuPy's constructor: a new array, or (``memptr``) a view of an array's memory."""
        dtype = np.dtype(dtype)
        if memptr is None:
            count = 1
            for n in shape:
                count *= int(n)
            self._set(Storage(count * dtype.itemsize), shape, dtype, None, 0, None)
            return
        item = dtype.itemsize
        estrides = None if strides is None else [s // item for s in strides]
        owner = memptr.owner
        self._set(owner.storage, shape, dtype, estrides, memptr.byte_offset // item,
                  owner if owner.base is None else owner.base)

    @classmethod
    def make(cls, storage, shape, dtype, estrides=None, offset=0, base=None):
        """An array over ``storage`` (a view when ``base`` is the array owning it)."""
        self = object.__new__(cls)
        self._set(storage, shape, dtype, estrides, offset, base)
        return self

    def _set(self, storage, shape, dtype, estrides, offset, base):
        self.storage = storage
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.estrides = contiguous_strides(self.shape) if estrides is None else tuple(
            int(s) for s in estrides)
        self.offset = int(offset)
        self.base = base

    @property
    def data(self):
        """CuPy's memory pointer: this array's first element (``+ bytes`` moves it)."""
        return MemoryPointer(self, self.offset * self.dtype.itemsize)

    # ------------------------------------------------------------ NumPy's attributes

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        count = 1
        for n in self.shape:
            count *= n
        return count

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):
        """Byte strides, as NumPy's (ember divides them by the item size)."""
        return tuple(s * self.dtype.itemsize for s in self.estrides)

    @property
    def flags(self):
        return _Flags(self)

    @property
    def T(self):
        return self.transpose()

    @property
    def device(self):
        return "webgpu"

    @property
    def real(self):
        """Itself for real dtypes (complex ones run on the CPU and come back as a copy)."""
        if self.dtype.kind != "c":
            return self
        from . import _xp

        return _xp.fallback(np.real, "real")(self)

    @property
    def imag(self):
        from . import _xp

        if self.dtype.kind != "c":
            return _xp.zeros(self.shape, self.dtype)
        return _xp.fallback(np.imag, "imag")(self)

    def is_c_contiguous(self):
        return all(s == c for n, s, c in zip(self.shape, self.estrides,
                                             contiguous_strides(self.shape)) if n != 1)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return f"WebGPUArray({self.get()!r})"

    # ------------------------------------------------------------ views

    def view_of(self, shape, estrides, offset):
        """A view of the same storage."""
        return WebGPUArray.make(self.storage, shape, self.dtype, estrides, offset,
                                self if self.base is None else self.base)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes or axes == (None,):
            axes = tuple(reversed(range(self.ndim)))
        axes = [a % self.ndim if self.ndim else a for a in axes]
        return self.view_of([self.shape[a] for a in axes], [self.estrides[a] for a in axes],
                            self.offset)

    def view(self, dtype=None, type=None):
        """The same bytes as another dtype (NumPy's ``view``): same-size dtypes, or a
        contiguous last dim that the new size divides."""
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self.view_of(self.shape, self.estrides, self.offset)
        dtype = np.dtype(dtype)
        old, new = self.dtype.itemsize, dtype.itemsize
        base = self if self.base is None else self.base
        if old == new:
            return WebGPUArray.make(self.storage, self.shape, dtype, self.estrides, self.offset,
                                    base)
        if not self.ndim or self.estrides[-1] != 1 or (self.shape[-1] * old) % new or \
                (self.offset * old) % new or builtins.any(s * old % new for s in self.estrides):
            raise ValueError("To change to a dtype of a different size, the last axis must be "
                             "contiguous")
        shape = self.shape[:-1] + (self.shape[-1] * old // new,)
        estrides = tuple(s * old // new for s in self.estrides[:-1]) + (1,)
        return WebGPUArray.make(self.storage, shape, dtype, estrides, self.offset * old // new,
                                base)

    def swapaxes(self, a, b):
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return self.transpose(axes)

    def reshape(self, *shape, order="C"):
        from . import _xp

        return _xp.reshape(self, shape[0] if len(shape) == 1 else shape)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def flatten(self, order="C"):
        return self.reshape(-1).copy()

    def squeeze(self, axis=None):
        from . import _xp

        return _xp.squeeze(self, axis)

    def __getitem__(self, index):
        from . import _xp

        return _xp.getitem(self, index)

    def __setitem__(self, index, value):
        from . import _xp

        _xp.setitem(self, index, value)

    # ------------------------------------------------------------ copies and transfers

    def get(self):
        """A NumPy copy of this array (downloads the buffer)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        storage = self.storage
        raw = storage.runtime.download(storage.buffer, storage.nbytes)
        whole = np.frombuffer(raw, self.dtype, storage.nbytes // self.dtype.itemsize)
        view = np.lib.stride_tricks.as_strided(whole[self.offset:], self.shape, self.strides)
        return np.array(view)

    def __array__(self, dtype=None, copy=None):
        from . import _xp

        _xp.note_fallback("numpy.asarray")
        host = self.get()
        return host if dtype is None else host.astype(dtype)

    def copy(self, order="C"):
        from . import _xp

        return _xp.ascontiguous_copy(self)

    def astype(self, dtype, copy=True, casting="unsafe"):
        from . import _xp

        return _xp.astype(self, dtype, copy)

    def item(self, *index):
        return self.get().item(*index)

    def tolist(self):
        return self.get().tolist()

    def fill(self, value):
        from . import _xp

        _xp.copyto(self, value)

    def __bool__(self):
        return bool(self.get())

    def __float__(self):
        return float(self.get())

    def __int__(self):
        return int(self.get())

    def __index__(self):
        return int(self.get())

    # ------------------------------------------------------------ NumPy protocols

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from . import _xp

        if method == "__call__":
            return getattr(_xp, ufunc.__name__)(*inputs, **kwargs)
        return _xp.fallback(getattr(ufunc, method), f"{ufunc.__name__}.{method}")(
            *inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from . import _xp

        return _xp.lookup(func)(*args, **kwargs)


def _method(name):
    def method(self, *args, **kwargs):
        from . import _xp

        return getattr(_xp, name)(self, *args, **kwargs)
    method.__name__ = name
    return method


for _name in ("sum", "mean", "max", "min", "argmax", "argmin", "prod", "all", "any", "cumsum",
              "var", "std", "clip", "round", "nonzero", "conj", "dot", "repeat", "take",
              "cumprod", "argsort", "sort", "searchsorted", "diagonal", "trace", "choose"):
    setattr(WebGPUArray, _name, _method(_name))


def _operator(name, swap=False):
    def operator(self, other):
        from . import _xp

        fn = getattr(_xp, name)
        return fn(other, self) if swap else fn(self, other)
    return operator


for _dunder, _fn in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                     ("mod", "remainder"), ("pow", "power"), ("matmul", "matmul"),
                     ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                     ("lshift", "left_shift"), ("rshift", "right_shift")):
    setattr(WebGPUArray, f"__{_dunder}__", _operator(_fn))
    setattr(WebGPUArray, f"__r{_dunder}__", _operator(_fn, swap=True))
for _dunder, _fn in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                     ("ge", "greater_equal"), ("eq", "equal"), ("ne", "not_equal")):
    setattr(WebGPUArray, f"__{_dunder}__", _operator(_fn))
WebGPUArray.__neg__ = lambda self: __import__("ember.webgpu._xp").webgpu._xp.negative(self)
WebGPUArray.__abs__ = lambda self: __import__("ember.webgpu._xp").webgpu._xp.absolute(self)
WebGPUArray.__invert__ = lambda self: __import__("ember.webgpu._xp").webgpu._xp.invert(self)
WebGPUArray.__pos__ = lambda self: self
WebGPUArray.__hash__ = None
