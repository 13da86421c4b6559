"""``ember.backends.cuda``: CUDA matmul flags, as ``torch.backends.cuda``.

``matmul.allow_tf32`` is tied to :func:`ember.set_float32_matmul_precision` (True unless the
precision is ``'highest'``), as in torch. The flags are kept but have no effect on CuPy's
cuBLAS calls.

Example::

    >>> ember.backends.cuda.matmul.allow_tf32
    False
"""

from __future__ import annotations

import enum

__all__ = ["matmul", "is_built", "preferred_linalg_library", "preferred_blas_library",
           "cufft_plan_cache", "cuFFTPlanCache", "cuFFTPlanCacheManager",
           "cuFFTPlanCacheAttrContextProp", "blas_workspace_size", "cublas_workspace_size",
           "cublaslt_workspace_size", "preferred_rocm_fa_library"]


class cuBLASModule:
    """The ``matmul`` flags: ``allow_tf32``, ``allow_fp16_reduced_precision_reduction``,
    ``allow_bf16_reduced_precision_reduction``; unknown names raise AttributeError."""

    _flags = {"allow_fp16_reduced_precision_reduction": True,
              "allow_bf16_reduced_precision_reduction": True,
              "allow_fp16_accumulation": False}

    def __getattr__(self, name):
        if name == "fp32_precision":
            from . import _get_fp32_precision

            return _get_fp32_precision("cuda", "matmul")
        if name == "allow_tf32":
            from .. import _switches

            return _switches.get_float32_matmul_precision() != "highest"
        if name in cuBLASModule._flags:
            return cuBLASModule._flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "fp32_precision":
            from . import _set_fp32_precision

            _set_fp32_precision("cuda", "matmul", value)
            return
        if name == "allow_tf32":
            from .. import _switches

            _switches.set_float32_matmul_precision("high" if value else "highest")
            return
        if name in cuBLASModule._flags:
            cuBLASModule._flags[name] = bool(value)
            return
        raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()


class _LinalgBackend(enum.IntEnum):
    """The linear-algebra libraries torch can prefer on CUDA (torch._C's enum)."""

    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.IntEnum):
    """The BLAS libraries torch can prefer on CUDA (torch._C's enum)."""

    Default = 0
    Cublas = 1
    Cublaslt = 2
    Ck = 3


class _ROCmFABackend(enum.IntEnum):
    """ROCm's flash-attention libraries (torch._C's enum)."""

    Default = 0
    AOTriton = 1
    Ck = 2


class _Preference:
    """One "preferred library" switch: accepts a name or an enum member, refuses names it
    does not know and (without a GPU) libraries that need CUDA, with torch's messages."""

    def __init__(self, by_name, start, needs_gpu):
        self.by_name, self.current, self.needs_gpu = by_name, start, needs_gpu

    def __call__(self, backend=None):
        if backend is None:
            return self.current
        if isinstance(backend, str):
            if backend not in self.by_name:
                raise RuntimeError("Unknown input value. Choose from: "
                                   f"{', '.join(self.by_name)}.")
            backend = self.by_name[backend]
        if backend in self.needs_gpu and not _cuda_usable():
            label = self.needs_gpu[backend]
            raise RuntimeError(f"Cannot set preferred backend to {label} if PyTorch has not "
                               f"been compiled with {label}.")
        self.current = backend
        return self.current


def _cuda_usable():
    from .. import cuda

    return cuda.is_available()


_linalg_preference = _Preference(
    {"default": _LinalgBackend.Default, "cusolver": _LinalgBackend.Cusolver,
     "magma": _LinalgBackend.Magma}, _LinalgBackend.Default,
    {_LinalgBackend.Cusolver: "cuSOLVER", _LinalgBackend.Magma: "MAGMA"})
_blas_preference = _Preference(
    {"default": _BlasBackend.Cublas, "cublas": _BlasBackend.Cublas,
     "hipblas": _BlasBackend.Cublas, "cublaslt": _BlasBackend.Cublaslt,
     "hipblaslt": _BlasBackend.Cublaslt, "ck": _BlasBackend.Ck}, _BlasBackend.Cublas,
    {_BlasBackend.Cublaslt: "cuBLASLt"})
_rocm_fa_preference = _Preference(
    {"default": _ROCmFABackend.Default, "aotriton": _ROCmFABackend.AOTriton,
     "ck": _ROCmFABackend.Ck}, _ROCmFABackend.Default, {})


def is_built():
    """Whether ember can use CUDA at all: CuPy is installed (torch: built with CUDA).

    Example::

        >>> isinstance(ember.backends.cuda.is_built(), bool)
        True
    """
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


def preferred_linalg_library(backend=None):
    """The preferred CUDA linear-algebra library (``'default'``, ``'cusolver'``, ``'magma'``
    or a ``_LinalgBackend``); returns the current one. ember always uses CuPy's cuSOLVER;
    without a GPU, only ``'default'`` can be chosen, as on torch's CPU build.

    Example::

        >>> ember.backends.cuda.preferred_linalg_library()
        <_LinalgBackend.Default: 0>
    """
    return _linalg_preference(backend)


def preferred_blas_library(backend=None):
    """The preferred CUDA BLAS library (``'cublas'``, ``'cublaslt'``, ``'ck'``, ...); returns
    the current one. ember always uses CuPy's cuBLAS.

    Example::

        >>> ember.backends.cuda.preferred_blas_library()
        <_BlasBackend.Cublas: 1>
    """
    return _blas_preference(backend)


def preferred_rocm_fa_library(backend=None):
    """The preferred ROCm flash-attention library (``'default'``, ``'aotriton'``, ``'ck'``);
    recorded only: ember has no ROCm kernels.

    Example::

        >>> ember.backends.cuda.preferred_rocm_fa_library()
        <_ROCmFABackend.Default: 0>
    """
    return _rocm_fa_preference(backend)


from ._sdp import *  # noqa: E402,F403  (the attention backend switches)
from ._sdp import __all__ as _sdp_names  # noqa: E402

__all__ += _sdp_names


class cuFFTPlanCacheAttrContextProp:
    """A property of :class:`cuFFTPlanCache` read and written through getter/setter functions
    taking the device index."""

    def __init__(self, getter, setter):
        self.getter, self.setter = getter, setter

    def __get__(self, obj, objtype):
        return self.getter(obj.device_index)

    def __set__(self, obj, val):
        if isinstance(self.setter, str):
            raise RuntimeError(self.setter)
        self.setter(obj.device_index, val)


_fft_max_size = {}


class cuFFTPlanCache:
    """The cuFFT plan cache of one device: ``size`` (plans cached: ember caches none),
    ``max_size`` (settable) and ``clear()``.

    Example::

        >>> cufft_plan_cache[0].size
        0
    """

    def __init__(self, device_index):
        self.device_index = device_index

    size = cuFFTPlanCacheAttrContextProp(
        lambda index: 0, ".size is a read-only property showing the number of plans currently "
        "in the cache. To change the cache capacity, set cufft_plan_cache.max_size.")
    max_size = cuFFTPlanCacheAttrContextProp(
        lambda index: _fft_max_size.get(index, 4096),
        lambda index, value: _fft_max_size.__setitem__(index, int(value)))

    def clear(self):
        """Drop the cached plans (there are none)."""


class cuFFTPlanCacheManager:
    """``cufft_plan_cache[device]``: the plan cache of each CUDA device.

    Example::

        >>> cufft_plan_cache[0].max_size
        4096
    """

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        index = device if isinstance(device, int) else getattr(device, "index", 0) or 0
        while len(self.caches) <= index:
            self.caches.append(cuFFTPlanCache(len(self.caches)))
        return self.caches[index]


cufft_plan_cache = cuFFTPlanCacheManager()


def _workspace(name):
    from ..cuda._errors import NO_GPU_MESSAGE, CudaBindingMissingError

    def query(size=None, backend=None):
        raise CudaBindingMissingError(f"torch.backends.cuda.{name}: {NO_GPU_MESSAGE}")

    query.__name__ = query.__qualname__ = name
    query.__doc__ = f"cuBLAS's workspace size (torch's ``{name}``): needs a CUDA GPU."
    return query


blas_workspace_size = _workspace("blas_workspace_size")
cublas_workspace_size = _workspace("cublas_workspace_size")
cublaslt_workspace_size = _workspace("cublaslt_workspace_size")
