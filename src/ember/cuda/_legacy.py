"""``ember.cuda.FloatTensor`` and kin: torch's legacy constructors of GPU tensors.

Calling one builds a tensor of its dtype on the current GPU; without a GPU it raises torch's
TypeError. ``isinstance(t, ember.cuda.FloatTensor)`` is True for float32 tensors on a GPU.

Example::

    >>> isinstance(ember.zeros(1), ember.cuda.FloatTensor)
    False
"""

from __future__ import annotations

from .. import _dtype as dt
from .._device import cupy_module
from ._errors import NO_GPU_MESSAGE

__all__ = ["LEGACY_CUDA_TYPES"]


class _LegacyCudaTensorType(type):
    """The metaclass of ``ember.cuda.FloatTensor`` and kin."""

    def __instancecheck__(cls, obj):
        from .._tensor import Tensor

        return isinstance(obj, Tensor) and obj.device.type == "cuda" and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        if cupy_module() is None:
            raise TypeError(f"type torch.cuda.{cls.__name__} not available. {NO_GPU_MESSAGE}")
        from .._device import device as make_device
        from .._tensor import _legacy_new
        from . import _index

        target = make_device("cuda", _index(device))
        return _legacy_new(cls.dtype, args, device=target, name=f"torch.cuda.{cls.__name__}")

    def __repr__(cls):
        return f"<class 'ember.cuda.{cls.__name__}'>"


_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
          "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8",
          "BoolTensor": "bool"}


def _legacy_cuda_type(name, dtype_name):
    doc = f"""The legacy constructor of GPU {dtype_name} tensors (``torch.cuda.{name}``).

    Example::

        >>> ember.cuda.{name}([1, 0])     # doctest: +SKIP
    """
    return _LegacyCudaTensorType(name, (), {"dtype": getattr(dt, dtype_name), "is_cuda": True,
                                            "is_sparse": False, "__module__": "ember.cuda",
                                            "__doc__": doc})


LEGACY_CUDA_TYPES = {name: _legacy_cuda_type(name, dtype_name)
                     for name, dtype_name in _NAMES.items()}
