"""Devices and the array module (``xp``) each one computes with.

``cpu`` tensors hold NumPy arrays, ``cuda`` tensors CuPy arrays, and ``meta`` tensors hold a
zero-stride NumPy stand-in that carries only a shape and a dtype (no memory).
"""

from __future__ import annotations

import numpy as np

__all__ = ["device"]

_cupy = None
_cupy_checked = False


def cupy_module():
    """CuPy if it is installed and sees a GPU, else None (checked once)."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                _cupy = cupy
        except Exception:  # no CuPy, no driver or no GPU: CUDA is simply unavailable
            _cupy = None
    return _cupy


def require_cupy():
    cp = cupy_module()
    if cp is None:
        raise RuntimeError(
            "Found no NVIDIA driver or no CuPy on your system: ember's cuda device needs a GPU "
            "and CuPy (pip install 'ember[cuda]').")
    return cp


def check_cuda_dtype(dtype):
    """Refuse dtypes CuPy cannot hold (bfloat16) with a TypeError that says so."""
    if getattr(dtype, "name", None) == "bfloat16":
        raise TypeError("ember: bfloat16 is not supported on cuda tensors (CuPy has no bfloat16 "
                        "dtype); use float16 or float32 there, or keep the tensor on the cpu")


# torch's device types: all make device objects; tensors live on cpu, cuda and meta only
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
# the error for an unknown type lists torch's types (its exact message); ember adds webgpu
_ACCEPTED_TYPES = _DEVICE_TYPES + ("webgpu",)


class device:
    """A place where a tensor lives: ``device('cpu')``, ``device('cuda', 0)``, ``'cuda:1'``.

    Example::

        >>> ember.device("cuda:1")
        device(type='cuda', index=1)
    """

    __slots__ = ("type", "index", "_xp")
    _cache: dict = {}

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            return type
        if isinstance(type, int) and index is None:
            type, index = "cuda", type
        key = (type, index)
        cached = cls._cache.get(key)
        if cached is not None:
            return cached
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: {type!r}")
        kind, _, idx = type.partition(":")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if kind not in _ACCEPTED_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                               f"of device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)
        # the dispatcher's fast path: numpy for cpu; None for meta and cuda (cuda kernels run
        # inside the tensor's device context, see ops._registry.run_op)
        object.__setattr__(self, "_xp", np if kind == "cpu" else
                           _webgpu_xp() if kind == "webgpu" else None)
        cls._cache[key] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """``with ember.device("meta"):`` makes factories (and so new modules' parameters) use
        this device inside the block, as torch's device context does."""
        _ENTERED.append(DEFAULT[0])
        DEFAULT[0] = canonical(self)
        return self

    def __exit__(self, *exc_info):
        DEFAULT[0] = _ENTERED.pop()

    @property
    def xp(self):
        """The array module that computes on this device (numpy or cupy)."""
        if self.type == "cuda":
            return require_cupy()
        if self.type == "webgpu":
            return _webgpu_xp()
        return np


def _webgpu_xp():
    """The webgpu device's array module (WGSL kernels, CPU fallback); importing it needs no
    wgpu, using it does."""
    from .webgpu import _xp

    return _xp


def check_webgpu_dtype(dtype):
    """Refuse float64 and complex128 on webgpu (WGSL has no f64), as torch's MPS device does,
    in the words of its error for each."""
    if getattr(dtype, "name", None) == "float64":
        raise TypeError("Cannot convert a WebGPU tensor to float64 dtype as WebGPU does not "
                        "support float64 (WGSL has no f64). Please use float32 instead.")
    if getattr(dtype, "itemsize", 0) == 16:
        raise TypeError(f"Trying to convert ComplexDouble ({getattr(dtype, 'name', dtype)}) "
                        f"to the WebGPU backend but it does not have support for that dtype "
                        f"(WGSL has no f64). Please use complex64 instead.")


CPU = device("cpu")
META = device("meta")
DEFAULT = [CPU]  # where factories put tensors given no device (ember.set_default_device)
_ENTERED = []  # the defaults that the active ``with device(...)`` blocks replaced


def to_device(d):
    """Accept a device, a string or a CUDA ordinal; None means cpu."""
    if d is None:
        return CPU
    if isinstance(d, device):
        return d
    return device(d)


def canonical(d):
    """The device a tensor actually lands on: ``cuda`` becomes ``cuda:<current>``; ``cpu:0``
    (any index) is ``cpu`` and ``meta:0`` is ``meta``, as torch's tensors report them.

    >>> canonical("cpu:0")
    device(type='cpu')
    """
    d = to_device(d)
    if d.type == "cpu":
        return CPU
    if d.type == "meta":
        return META
    if d.type == "webgpu":
        return _canonical_webgpu(d)
    if d.type not in ("cuda", "cpu", "meta"):
        _refuse_device_type(d.type)
    if d.type == "cuda":
        cp = require_cupy()
        index = cp.cuda.Device().id if d.index is None else d.index
        if index >= cp.cuda.runtime.getDeviceCount():
            raise RuntimeError(f"CUDA error: invalid device ordinal {index}")
        return device("cuda", index)
    return d


def _canonical_webgpu(d):
    """``webgpu`` is ``webgpu:0`` (one adapter); a clear error without wgpu or an adapter."""
    from .webgpu import _runtime

    found = _runtime.probe()
    if found.adapter is None:
        raise RuntimeError(f"webgpu is not available: {found.reason}. "
                           f"{_runtime._INSTALL_HINT}")
    if d.index not in (None, 0):
        raise RuntimeError(f"webgpu error: invalid device ordinal {d.index} (one adapter)")
    return device("webgpu", 0)


def _refuse_device_type(kind):
    """torch's error for a device type its build lacks (ember has cpu, cuda and meta)."""
    if kind in ("xpu", "mtia"):
        raise AssertionError(f"Torch not compiled with {kind.upper()} enabled (ember's devices "
                             f"are cpu, cuda and meta)")
    raise RuntimeError(f"PyTorch is not linked with support for {kind} devices (ember's "
                       f"devices are cpu, cuda and meta)")


def device_of_array(array):
    """The device an ndarray lives on."""
    if isinstance(array, np.ndarray):
        return CPU
    if array.device == "webgpu":
        return device("webgpu", 0)
    return device("cuda", array.device.id)
