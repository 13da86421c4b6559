"""Making tensors from Python data: :func:`tensor`, :func:`as_tensor`, :func:`from_numpy`,
:func:`from_dlpack`, and the small predicates ``is_tensor`` / ``is_floating_point`` / ``numel``.

Nested lists are read with torch's dtype inference (bool < int64 < default float < complex),
ragged data is refused with torch's message, and arrays that can be shared are shared.
:mod:`ember._tensor` imports this module at its end. Example::

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).dtype
    ember.int64
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._device import CPU, DEFAULT, META, canonical, check_cuda_dtype, device_of_array
from ._shared_memory import mark_shared
from ._tensor import Tensor
from .ops._signature import signature

# ---------------------------------------------------------------- construction


def _infer_array(data, dtype):
    """Turn Python data into a NumPy array with torch's dtype inference."""
    if isinstance(data, Tensor):
        return data._host_array(), dtype or data.dtype
    if isinstance(data, np.ndarray):
        return data, dtype or dt.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return np.asarray(data), dtype or dt.from_numpy_dtype(data.dtype)
    if hasattr(data, "__cuda_array_interface__"):
        return data, dtype or dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple)) and _contains_tensor(data):
        data = _unwrap_tensors(data)
    try:
        array = np.array(data)
    except ValueError:
        raise ValueError(_ragged_message(data)) from None
    if array.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(_first_leaf(data)).__name__}")
    if array.dtype.kind in "US":
        raise TypeError(f"new(): invalid data type '{type(_first_leaf(data)).__name__}'")
    if dtype is not None and dtype.category == dt._INT:
        _check_fits(array, dtype)
    if dtype is None:
        kind = array.dtype.kind
        if kind == "f":
            is_numpy_scalar = isinstance(_first_leaf(data), np.floating)
            dtype = dt.from_numpy_dtype(array.dtype) if is_numpy_scalar else dt.get_default_dtype()
        elif kind == "c":
            dtype = dt.get_default_dtype().to_complex()
        elif kind in "iu":
            dtype = dt.int64 if not isinstance(_first_leaf(data), np.integer) \
                else dt.from_numpy_dtype(array.dtype)
        elif kind == "b":
            dtype = dt.bool
        elif kind in "US":
            raise TypeError(f"new(): invalid data type '{type(_first_leaf(data)).__name__}'")
        else:
            dtype = dt.from_numpy_dtype(array.dtype)
    return array, dtype


def _check_fits(array, dtype):
    """torch refuses Python numbers that an integer ``dtype`` cannot hold (NumPy arrays, by
    contrast, are cast): floats must lie in its range, integers may also wrap into an
    unsigned dtype from down to ``-max`` (``tensor([-1], dtype=uint8)`` holds 255)."""
    if array.dtype.kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    if not array.size or array.dtype.kind not in "iuf":
        return
    info = np.iinfo(dtype.np)
    low = -info.max if info.min == 0 and array.dtype.kind in "iu" else info.min
    if not (low <= array.min() and array.max() <= info.max):  # nan fails both
        raise RuntimeError(f"value cannot be converted to type {dtype.name} without overflow")


def _ragged_message(data, dim=0):
    """Torch's message for nested sequences of unequal lengths."""
    if not isinstance(data, (list, tuple)) or not data:
        return "expected a sequence of equal lengths"
    lengths = [len(d) if isinstance(d, (list, tuple)) else None for d in data]
    first = lengths[0]
    for length in lengths[1:]:
        if length != first:
            shown = "sequence" if length is None else length
            return (f"expected sequence of length {first} at dim {dim + 1} (got {shown})"
                    if first is not None else f"expected a number at dim {dim + 1}")
    return _ragged_message([x for d in data for x in d], dim + 1) if first else \
        "expected a sequence of equal lengths"


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def _contains_tensor(data):
    leaf = _first_leaf(data)
    return isinstance(leaf, Tensor)


def _unwrap_tensors(data):
    if isinstance(data, Tensor):
        return data._host_array()
    return [_unwrap_tensors(d) for d in data]


def _place(array, dtype, device, copy):
    """Put a host or device array on ``device`` with ``dtype``."""
    if device is META:
        return np.broadcast_to(np.zeros((), dtype.np), np.shape(array))
    xp = device.xp
    if device.type == "webgpu":
        return _place_webgpu(xp, array, dtype)
    if device.type == "cuda":
        check_cuda_dtype(dtype)
        with xp.cuda.Device(device.index):
            return xp.array(array, dtype=dtype.np, copy=True) if copy else \
                xp.asarray(array, dtype=dtype.np)
    if isinstance(array, np.ndarray):
        return array.astype(dtype.np, copy=copy)
    return xp.asarray(array.get() if hasattr(array, "get") else array, dtype=dtype.np)


def _place_webgpu(xp, array, dtype):
    """Upload (or copy on the device) ``array`` as ``dtype`` (float64 refused)."""
    from ._device import check_webgpu_dtype

    check_webgpu_dtype(dtype)
    if isinstance(array, xp.ndarray):
        return array.astype(dtype.np)
    return xp.asarray(array.get() if hasattr(array, "get") else array, dtype=dtype.np)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors).

    The dtype is inferred as torch does: Python floats give the default dtype, ints int64,
    bools bool, complex numbers the default complex dtype.

    Example::

        >>> ember.tensor([[1, 2], [3, 4]]).dtype
        ember.int64
    """
    dtype = dt.to_dtype(dtype) if dtype is not None else None
    array, dtype = _infer_array(data, dtype)
    target = canonical(device) if device is not None else (
        data._device if isinstance(data, Tensor) else
        (device_of_array(array) if hasattr(array, "__cuda_array_interface__") else DEFAULT[0]))
    out = Tensor._make(_place(array, dtype, target, copy=True), target)
    if pin_memory:
        from .ops.creation import _pinned

        out = _pinned(out)
    if requires_grad:
        out.requires_grad_()
    return out


def as_tensor(data, dtype=None, device=None):
    """A tensor from ``data`` sharing its memory when dtype and device already match.

    Example::

        >>> a = np.array([1., 2.])
        >>> ember.as_tensor(a)[0] = 5.; a[0]
        5.0
    """
    dtype = dt.to_dtype(dtype) if dtype is not None else None
    device = canonical(device) if device is not None else None
    if isinstance(data, Tensor):
        return data.to(device=device or data._device, dtype=dtype or data.dtype)
    array, dtype = _infer_array(data, dtype)
    target = device or (device_of_array(array) if hasattr(array, "__cuda_array_interface__")
                        else DEFAULT[0])
    placed = _place(array, dtype, target, copy=False)
    out = Tensor._make(placed, target)
    return mark_shared(out) if placed is data else out


def from_numpy(ndarray):
    """A CPU tensor that shares memory with a NumPy array.

    Example::

        >>> a = np.zeros(3, dtype=np.float32)
        >>> t = ember.from_numpy(a); t += 1; a
        array([1., 1., 1.], dtype=float32)
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    dt.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    return mark_shared(Tensor._make(ndarray, CPU))


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that speaks DLPack (NumPy, CuPy, torch, JAX...).

    Example::

        >>> t = ember.from_dlpack(np.arange(3.0))
        >>> t
        tensor([0., 1., 2.], dtype=ember.float64)
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got "
                        f"{type(ext_tensor).__name__}")
    kind, index = ext_tensor.__dlpack_device__()
    if kind == 1:  # kDLCPU
        array = np.from_dlpack(ext_tensor)
        dt.from_numpy_dtype(array.dtype)
        return mark_shared(Tensor._make(array, CPU))
    if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
        from ._device import device, require_cupy

        return mark_shared(Tensor._make(require_cupy().from_dlpack(ext_tensor),
                                        device("cuda", index)))
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {kind}")


def is_tensor(obj):
    """True if ``obj`` is an ember Tensor (or a subclass such as Parameter)."""
    return isinstance(obj, Tensor)


@signature("is_floating_point(Tensor input) -> bool", any_layout=True)
def is_floating_point(input):
    """True if ``input`` has a floating dtype.

    Example::

        >>> ember.is_floating_point(ember.ones(1))
        True
    """
    return input.dtype.is_floating_point


@signature("is_complex(Tensor input) -> bool", any_layout=True)
def is_complex(input):
    """True if ``input`` has a complex dtype.

    Example::

        >>> ember.is_complex(ember.ones(1, dtype=ember.complex64))
        True
    """
    return input.dtype.is_complex


@signature("numel(Tensor input) -> int", any_layout=True)
def numel(input):
    """The number of elements of ``input``.

    Example::

        >>> ember.numel(ember.ones(2, 3))
        6
    """
    return input.numel()
