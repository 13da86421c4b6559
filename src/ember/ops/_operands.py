"""Turning user arguments into operands: scalars into tensors, torch's promotion and broadcasting.

Every pointwise family calls these, so the promotion and broadcasting rules live here once.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as dt
from .. import overrides as _overrides
from .._device import CPU, META
from .._tensor import Tensor
from .._traceback import hide_internal_frames
from ._registry import run_binary

__all__ = ["broadcast_shapes", "scalar_tensor", "promote_operands", "float_operand",
           "wrap_dim", "wrap_dims", "operator_method"]


def broadcast_shapes(*shapes):
    """The broadcast of ``shapes``, with torch's RuntimeError when they don't match.

    Example::

        >>> ember.broadcast_shapes((2, 1), (3,))
        ember.Size([2, 3])
    """
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i in reversed(range(len(shape))):  # torch reports the last mismatching dim
            size, j = shape[i], offset + i
            if size == result[j] or size == 1:
                continue
            if result[j] == 1:
                result[j] = size
                continue
            raise RuntimeError(f"The size of tensor a ({result[j]}) must match the size of tensor "
                               f"b ({size}) at non-singleton dimension {j}")
    return tuple(result)


def scalar_tensor(value, dtype, device):
    """A 0-dim tensor holding a Python scalar, in ``dtype`` on ``device``."""
    if device is META:
        return Tensor._make(np.broadcast_to(np.zeros((), dtype.np), ()), device)
    if device._xp is np:
        try:
            return Tensor._make(np.asarray(value, dtype=dtype.np), device)
        except OverflowError:  # an int out of the dtype's range wraps, as in torch
            return Tensor._make(np.asarray(value).astype(dtype.np), device)
    cp = device.xp
    with cp.cuda.Device(device.index):  # a fill on the GPU, no host-to-device copy
        try:
            return Tensor._make(cp.full((), np.asarray(value, dtype=dtype.np)[()], dtype.np),
                                device)
        except OverflowError:  # an int out of the dtype's range wraps, as in torch
            return Tensor._make(cp.full((), np.asarray(value).astype(dtype.np)[()], dtype.np),
                                device)


def _is_scalar(x):
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, Tensor)


def _device_of(operands):
    """The device of the computation: the first non-scalar, non-0-dim-CPU tensor's device."""
    device = None
    for x in operands:
        if isinstance(x, Tensor):
            if device is None or (device.type == "cpu" and x._data.ndim > 0):
                device = x._device
            if x._data.ndim > 0 and x._device.type != "cpu":
                return x._device
    return device


def promote_operands(*operands, dtype=None):
    """Turn ``operands`` (tensors and Python scalars) into tensors of one dtype on one device.

    The dtype is torch's :func:`result_type` unless ``dtype`` is given. Returns the tensors
    and the dtype. 0-dim CPU tensors may join a CUDA computation, as in torch.
    """
    if dtype is None:
        dtype = dt.result_type(*operands)
    device = _device_of(operands)
    tensors = []
    for x in operands:
        if isinstance(x, Tensor):
            if x._device is not device and x._data.ndim == 0 and x._device.type == "cpu":
                x = x.to(device)
            if x._data.dtype != dtype.np:
                x = x.to(dtype)
        elif _is_scalar(x):
            x = scalar_tensor(x, dtype, device)
        else:
            raise TypeError(f"expected Tensor or number as operand, but got "
                            f"{type(x).__name__}")
        tensors.append(x)
    return tensors, dtype


_FLOAT_KINDS = frozenset("fV")  # NumPy kinds of float16/32/64 and bfloat16 (ml_dtypes: 'V')


def _weak_scalar_fast(t, value):
    """``value`` as a 0-dim tensor of ``t``'s dtype when torch's promotion keeps that dtype.

    Covers the common cases (float tensor with int/float, int tensor with int); None otherwise.
    """
    kind = t._data.dtype.kind
    vtype = type(value)
    if (vtype is float or vtype is int) and kind in _FLOAT_KINDS or vtype is int and kind in "iu":
        if kind in "iu" and not _fits(value, t._data.dtype):
            return None
        device = t._device
        if device._xp is np:
            return Tensor._make(np.asarray(value, dtype=t._data.dtype), device)
        return scalar_tensor(value, dt.from_numpy_dtype(t._data.dtype), device)
    return None


def _fits(value, np_dtype):
    info = np.iinfo(np_dtype)
    return info.min <= value <= info.max


def binary_operands(a, b, dtype=None):
    """Two operands ready for a pointwise kernel (fast paths when they already match)."""
    if dtype is None:
        ta, tb = type(a), type(b)
        if ta is Tensor and tb is Tensor:
            if a._data.dtype is b._data.dtype and a._device is b._device:
                if a._data.shape != b._data.shape:
                    broadcast_shapes(a._data.shape, b._data.shape)
                return a, b
        elif ta is Tensor and (tb is float or tb is int):
            scalar = _weak_scalar_fast(a, b)
            if scalar is not None:
                return a, scalar
        elif tb is Tensor and (ta is float or ta is int):
            scalar = _weak_scalar_fast(b, a)
            if scalar is not None:
                return scalar, b
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("expected at least one Tensor operand")
    for x in (a, b):
        if not isinstance(x, _OPERAND_TYPES):  # e.g. an ember.fx Proxy: its reflected op runs
            raise TypeError(f"unsupported operand type {type(x).__name__}")
    a, b = _from_numpy_operand(a), _from_numpy_operand(b)
    (a, b), _ = promote_operands(a, b, dtype=dtype)
    if a._data.shape != b._data.shape:
        broadcast_shapes(a._data.shape, b._data.shape)
    return a, b


def _from_numpy_operand(x):
    """A NumPy scalar operand as a 0-dim CPU tensor of its dtype, as torch converts them.

    (NumPy arrays are not converted: the operator returns ``NotImplemented`` and NumPy computes
    the result, which ``Tensor.__array_wrap__`` turns back into a tensor, as in torch.)
    """
    if isinstance(x, np.generic) and not isinstance(x, (float, int, complex)):
        return Tensor._make(np.asarray(x, dtype=dt.from_numpy_dtype(x.dtype).np), CPU)
    return x


_OPERAND_TYPES = (Tensor, numbers.Number, np.generic)


def operator_method(fn, name, arrays_as_tensors=False, op=None, reflected=False):
    """``fn`` as the dunder ``name``: an operand of a foreign type gives ``NotImplemented``.

    Python then tries the other operand's reflected method and, failing that, raises its own
    TypeError ("unsupported operand type(s) for +: 'Tensor' and 'list'"); ``t == None`` is
    False; with a NumPy array NumPy computes the result (``Tensor.__array_wrap__`` makes it a
    tensor again), except for ``==`` (``arrays_as_tensors``), which takes the array as a
    tensor; all as in torch.

    ``op``: the primitive that ``fn`` runs on a floating tensor and an operand that needs no
    promotion (``reflected``: ``fn(other, self)``); the dunder then runs it directly, skipping
    ``fn``'s argument handling, which would change nothing.
    """
    def foreign_operand(self, other):
        if isinstance(other, _OPERAND_TYPES):
            raise  # the TypeError the caller is handling
        if arrays_as_tensors and isinstance(other, np.ndarray):
            return fn(self, Tensor._make(np.array(other), CPU))
        return NotImplemented

    def body(self, other):
        try:
            return fn(self, other)
        except TypeError:
            return foreign_operand(self, other)

    plain, modes, tensor = _overrides._PLAIN, _overrides._modes, Tensor

    def method(self, other):
        try:  # free until an error: then ember's frames leave its traceback (_traceback.py)
            # torch's __torch_function__ check, inline: a frame here would cost the hot path
            if modes or (type(other) is not tensor and type(other) not in plain) or (
                    type(self) is not tensor and type(self) not in plain):
                try:
                    return _overrides._dispatch(method.__torch_function_public__, body,
                                                (self, other), {})
                except _overrides._Declined:  # Python tries the reflected operator, as torch
                    return NotImplemented
            if op is not None and self._data.dtype.kind == "f":
                # operands that need no promotion: a tensor of the same dtype and device, or a
                # Python int/float (a weak scalar: the tensor's dtype wins), on the CPU
                kind = type(other)
                if kind is float or kind is int:
                    if self._device._xp is np:
                        scalar = Tensor._make(np.asarray(other, self._data.dtype), self._device)
                        return (run_binary(op, scalar, self) if reflected
                                else run_binary(op, self, scalar))
                elif isinstance(other, tensor) and other._device is self._device and \
                        other._data.dtype is self._data.dtype:
                    theirs, ours = other._data.shape, self._data.shape
                    if theirs != ours and theirs and ours:  # (0-dim broadcasts to anything)
                        broadcast_shapes(ours, theirs)  # torch's error when they don't match
                    return run_binary(op, other, self) if reflected else run_binary(op, self, other)
            try:
                return fn(self, other)
            except TypeError:
                return foreign_operand(self, other)
        except Exception as error:
            hide_internal_frames(error)
            raise

    method.__name__ = body.__name__ = name
    method.__qualname__ = body.__qualname__ = f"Tensor.{name}"
    method.__doc__ = body.__doc__ = fn.__doc__
    method.__torch_function_implementation__ = body
    method.__torch_function_public__ = method  # ember.overrides maps a + b to Tensor.add
    return method


def float_operand(x):
    """Integer and bool tensors become the default float dtype (for exp, log, sin, ...)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"expected Tensor as element 0 in argument 0, but got {type(x).__name__}")
    kind = x._data.dtype.kind
    if kind in "biu":
        return x.to(dt.get_default_dtype())
    return x


def wrap_dim(dim, ndim):
    """A dim in ``[0, ndim)`` from a possibly negative one, with torch's IndexError."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {dim})")
    return dim % rank


def wrap_dims(dims, ndim):
    """A sorted tuple of distinct dims from an int, a sequence or None (all dims)."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    result = tuple(wrap_dim(int(d), ndim) for d in dims)
    if len(set(result)) != len(result):
        raise RuntimeError(f"dim {result[0]} appears multiple times in the list of dims")
    return tuple(sorted(result)) if ndim else ()


def broadcast_meta(out_dtype=None):
    """Meta rule for pointwise ops: broadcast shape, the inputs' dtype (or ``out_dtype``)."""
    def meta(*arrays, **params):
        shape = broadcast_shapes(*(a.shape for a in arrays))
        return shape, out_dtype or arrays[0].dtype
    return meta


def varargs_or_keyword(name, positional, keyword, argument="size"):
    """The sizes (or dims) a varargs parameter received: positionally as ``f(2, 3)`` or
    ``f((2, 3))``, or by keyword as ``f(size=(2, 3))``, which torch accepts too; giving both,
    or a keyword that is not a tuple or list, raises torch's TypeError.

    Example::

        >>> varargs_or_keyword("zeros", (), (2, 3))
        ((2, 3),)
        >>> varargs_or_keyword("zeros", (2, 3), None)
        (2, 3)
    """
    if keyword is None:
        return positional
    if positional:
        raise TypeError(f"{name}() got multiple values for argument '{argument}'")
    if not isinstance(keyword, (tuple, list)):
        raise TypeError(f"{name}(): argument '{argument}' must be tuple of ints, not "
                        f"{type(keyword).__name__}")
    return (keyword,)
